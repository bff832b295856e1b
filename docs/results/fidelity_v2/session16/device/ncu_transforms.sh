#!/usr/bin/env bash
# The device call (kind nvidia-h200, carry .whl): each case's non-fused input and output kernels under Nsight Compute.
set -uo pipefail
source .ci/device_site.sh || exit 1
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv | tee "$1/nvidia_smi.txt"
STALL=smsp__average_warps_issue_stalled
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed
M=$M,lts__t_bytes.sum,lts__t_sector_hit_rate.pct,sm__warps_active.avg.pct_of_peak_sustained_active,sm__cycles_active.avg
M=$M,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum
M=$M,l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum,l1tex__t_requests_pipe_lsu_mem_global_op_st.sum
M=$M,smsp__inst_executed.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed,smsp__issue_active.avg.pct_of_peak_sustained_active
for s in long_scoreboard lg_throttle wait short_scoreboard math_pipe_throttle mio_throttle drain no_instruction not_selected selected; do
    M=$M,${STALL}_${s}_per_issue_active.ratio
done
ncu --clock-control none -k regex:'ms_(input|output)_kernel' --csv --metrics "$M" \
  python3 docs/results/fidelity_v2/session16/device/launch_transforms.py "$1" > "$1/ncu_transforms.csv" 2> "$1/ncu_transforms.err"
echo "ncu exit $?"; tail -3 "$1/ncu_transforms.err"; grep -c '"ms_' "$1/ncu_transforms.csv"
