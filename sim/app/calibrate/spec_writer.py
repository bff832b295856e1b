"""A GPU spec written from the device itself: what the runtime reports and what the microbenchmarks measure.

A GPU megasim has no `scenarios/gpus/<name>.toml` for gets one in the same format, every figure's source
written beside it. The CUDA runtime reports the SMs, the resident limits, the register file, the shared
memory and the L2 (`cudaDeviceProp`); `<gpu>_micro.json` (`megasim.gpu.microbench`) measures the clock under
load, the FP32 rate, the DRAM and L2 bandwidths, the atomic and poll round trips, the launch gaps and the
block dispatcher. What neither gives is a declared default with its reason, the same for every GPU: the
DRAM latency (the model's DRAM jobs are bandwidth-bound at these sizes), the per-SM path to L2 and the GPC
stride of the dispatch order. The [model] table is the uncalibrated default a fit starts from.
"""
from __future__ import annotations

import math
from pathlib import Path
from types import SimpleNamespace

from megasim.app.calibrate.fit import hardware_overrides
from megasim.contract.errors import MegasimError
from megasim.io.files import read_json
from megasim.io.writing import write_then_rename

# cudaDeviceProp field -> [hardware] field
REPORTED = {"multiProcessorCount": "sm_count", "maxThreadsPerMultiProcessor": "max_threads_per_sm",
            "maxBlocksPerMultiProcessor": "max_blocks_per_sm", "regsPerMultiprocessor": "regs_per_sm",
            "sharedMemPerMultiprocessor": "smem_per_sm_bytes", "sharedMemPerBlockOptin": "max_smem_per_block_bytes",
            "l2CacheSize": "l2_bytes"}
DECLARED = {"dram_latency_cycles": (800, "not measured: the model's DRAM jobs are bandwidth-bound at these sizes; "
                                         "about 400 ns, as public microbenchmarks of HBM GPUs report"),
            "sm_bytes_per_cycle": (64.0, "not measured: 64 B per cycle between an SM and the L2, the figure of "
                                         "every NVIDIA SM since Volta"),
            "sms_per_gpc": (16, "not measured: the stride of the dispatch order past the lead SMs, 16 on Hopper")}
MODEL = {"dram_efficiency": 1.0, "l2_efficiency": 1.0, "l2_usable_fraction": 0.3, "task_overhead_cycles": 1500,
         "block_work_cv": 0.0,
         "compute_efficiency": {"filter_transform": 0.3, "input_transform": 0.3, "gemm": 0.6, "output_transform": 0.3}}


def spec_tables(micro: dict, origin: str = "the microbenchmark file") -> dict:
    """The spec file's tables ([hardware], [model], [sources]) from a `<gpu>_micro.json` document: the
    `cudaDeviceProp` figures its header keeps, and its measurements."""
    header = micro.get("header", {})
    props = header.get("device_properties", {})
    missing = [k for k in REPORTED if k not in props]
    if missing:
        raise MegasimError(f"{origin}: its header lacks the device's reported properties ({', '.join(missing)}); "
                           "measure it again with this megasim: megasim calibrate --gpu NAME --spec-only")
    gone = [k for k in ("fp32", "dram", "l2", "atomics", "launch", "dispatch_summary") if not micro.get(k)]
    if gone:
        raise MegasimError(f"{origin}: no {', '.join(gone)} measurement(s); measure the hardware part again")
    device, when = str(header.get("device", "unknown GPU")), header.get("date_utc", "")[:10]
    runtime, measured = f"reported by the CUDA runtime on {device}, {when}", f"measured on {device}, {when}"
    hw, sources = {"full_name": device}, {"full_name": runtime}
    for prop, field in REPORTED.items():
        hw[field], sources[field] = int(props[prop]), f"{runtime} (cudaDeviceProp.{prop})"
    fp32, dram, atomics = micro["fp32"], micro["dram"], micro["atomics"]
    lanes = 2 ** round(math.log2(fp32["flop_per_cycle_per_sm"] / 2))
    dram_gbps = round(max(dram["read_gbps"], dram["copy_gbps"]), 1)
    # stage 1's reading of the microbenchmarks, the one rule for which figure each of them gives
    read, _ = hardware_overrides(micro, SimpleNamespace(clock_mhz=float(fp32["clock_mhz"]), dram_gbps=dram_gbps,
                                                        l2_bytes=hw["l2_bytes"]))
    read.update({"fp32_flops_per_cycle_per_sm": 2 * lanes, "dram_gbps": dram_gbps,
                 "l2_latency_cycles": int(round(atomics["poll_round_trip_cycles"]["volatile"]))})
    how = {"clock_mhz": "the SM clock under the FP32 microbenchmark's load",
           "fp32_flops_per_cycle_per_sm": f"{fp32['flop_per_cycle_per_sm']:.1f} FLOP per cycle per SM of FFMA, "
                                          f"read as {lanes} FP32 lanes",
           "dram_gbps": "the faster of a streaming read and a copy", "l2_gbps": "the L2 plateau of a working-set sweep",
           "l2_latency_cycles": "a volatile load's round trip", "atomic_latency_cycles": "a global atomic's round trip",
           "spin_poll_cycles": "one turn of the dependency-wait loop",
           "tb_dispatch_latency_cycles": "from a freed slot to the next block",
           "tb_dispatch_interval_cycles": "the dispatcher's steady rate",
           "first_wave_lead_sms": "the SMs the first blocks land on",
           "launch_overhead_us": "an in-graph kernel boundary less the dispatch latency",
           "first_launch_us": "a plain launch's gap"}
    unread = sorted(set(how) - set(read))
    if unread:
        raise MegasimError(f"{origin}: its measurements give no {', '.join(unread)}; measure the hardware part again")
    measures = {field: (read[field], text) for field, text in how.items()}
    for field, (value, how) in measures.items():
        hw[field], sources[field] = value, f"{measured}: {how}"
    for field, (value, why) in DECLARED.items():
        hw[field], sources[field] = value, why
    return {"hardware": hw, "model": dict(MODEL), "sources": sources}


def spec_text(name: str, tables: dict) -> str:
    """The spec file: a comment line, then its tables, in `scenarios/gpus/` form."""
    from megasim.app.calibrate.profile import toml_value
    lines = [f"# {tables['hardware']['full_name']} ({name}): written by megasim calibrate from the device."]
    for section in ("hardware", "model", "sources"):
        lines += [f"[{section}]", *(f"{k} = {toml_value(v)}" for k, v in tables[section].items()), ""]
    return "\n".join(lines)


def write_spec(name: str, micro_path, out) -> Path:
    """Write `name`'s spec, measured by `micro_path`, to `out`; refused before anything is written if the raw
    file lacks what it needs."""
    text = spec_text(name, spec_tables(read_json(micro_path), str(micro_path)))
    with write_then_rename(out) as tmp:
        tmp.write_text(text)
    return Path(out)


__all__ = ["spec_tables", "spec_text", "write_spec", "REPORTED", "DECLARED"]
