"""What each label and symbol of `megasim simulate`'s output means: the `simulate --help` epilog, and the
block docs/model.md ("Reading simulate's output") repeats word for word.

Plain text with no imports, so that `--help` and every command's start-up stay as light as they were.
tests/sim/test_says_what_it_used.py reads the labels off a real run and checks each one is here.
"""

SIMULATE_GLOSSARY = """\
reading the output (docs/model.md, "Reading simulate's output"):
  first line         the layer and its shape (N C H W K: batch, input channels, height, width, output
                     channels), F(m x m,3x3) the Winograd variant, the GPU, the mapping strategy
                     {its options}, and the dispatch policy
  tasks:             how the partition cuts the layer into thread-block tasks:
    N_F                filter-transform tasks, ceil(K / filter_k_per_task)
    N_G                task groups, ceil(tiles / tiles_per_group)
    S_I                input-transform tasks per group, ceil(C / input_channels_per_task)
    S_G                GEMM tasks per group, ceil(alpha^2 / gemm_mats_per_task) * ceil(K / gemm_k_per_task)
    S_O                output-transform tasks per group, ceil(K / output_channels_per_task)
    blocks             N_F + N_G * (S_I + S_G + S_O), the megakernel's thread blocks; GFLOP their Winograd work
  partition:         the partition used, as --partition takes it: tiles_per_group, input_channels_per_task,
                     gemm_mats_per_task (Winograd points per GEMM task), gemm_k_per_task,
                     output_channels_per_task, filter_k_per_task (the task sizes above) and threads per block
  partition from:    where it came from: a row of scenarios/partitions/<gpu>.toml (found by the layer's
                     name, never by its shape: --shape of a named layer gets the table's [default]), the
                     table's [default] or [default_small_k] (K < 64), Partition() defaults (no table),
                     then any --partition overrides; or the --mapping file's own partition
  builds:            the two builds simulated, every axis named: launch (fused, non-fused), Winograd variant,
                     scheduling mode (fused only), GEMM body (generic, warp) and precision (fp32: FFMA;
                     3xtf32: three TF32 tensor-core products per FP32 product)
  time (us)          predicted time of the launch, or of the four launches with their gaps
  DRAM (MB)          bytes read from and written to DRAM
  L2 hit             share of L2 requests that hit
  spin (us, summed)  time blocks held an SM slot waiting for their parents, summed over blocks
  fused megakernel   one launch running all four stages in the mapping's order
  non-fused (4 kernels)  filter, input, GEMM and output transforms as four launches, one after another
  non-fused kernels (filter + input + GEMM + output)  each of the four launches' time
  speedup fused / non-fused  non-fused time over fused time: above 1, fusion wins
  infusible tasks    tasks with no task of the other kind (memory- or compute-bound) within the resident
                     window, plus every filter transform (paper section 5.2)
  floors             FP32: the Winograd FLOPs at peak FP32; DRAM: input, filters and output moved once at
                     DRAM bandwidth; no run beats either
  simulated in       the simulator's own wall time
  90% intervals (held-out residuals)  with a profile's [uncertainty]: the range its held-out errors put
                     around each time and around the fusion margin (non-fused over fused, minus 1); "fused
                     wins" or "non-fused wins" only when that whole range is on one side of 0
  model:             the spec file and calibration profile used: --gpu NAME reads scenarios/gpus/NAME.toml
                     and scenarios/calibrations/NAME.toml when there is one; --gpu PATH.toml reads that file
                     and no profile unless --profile is given; --profile replaces the committed profile;
                     --uncalibrated uses none. WARNING: the profile predicts no build of a precision (its
                     picks are then FP32 only), or was fitted before a law calibration now fits (stale)
"""
