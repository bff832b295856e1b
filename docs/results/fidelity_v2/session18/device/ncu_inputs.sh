#!/usr/bin/env bash
# The device call (kind nvidia-h200, carry .whl): launch_inputs.py's input kernels under Nsight Compute, caches
# flushed before each profiled launch (ncu's default), clocks as the driver sets them.   Usage: ncu_inputs.sh OUT
set -uo pipefail
source .ci/device_site.sh || exit 1
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed
M=$M,lts__t_bytes.sum,lts__throughput.avg.pct_of_peak_sustained_elapsed,l1tex__throughput.avg.pct_of_peak_sustained_elapsed
M=$M,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum
M=$M,l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum,l1tex__t_requests_pipe_lsu_mem_global_op_st.sum
M=$M,sm__throughput.avg.pct_of_peak_sustained_elapsed,smsp__issue_active.avg.pct_of_peak_sustained_active
M=$M,sm__warps_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active
M=$M,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio
M=$M,smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio
M=$M,smsp__average_warps_issue_stalled_drain_per_issue_active.ratio
M=$M,smsp__average_warps_issue_stalled_wait_per_issue_active.ratio
M=$M,smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio
M=$M,smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio
ncu --clock-control none -k regex:'ms_input_kernel' --csv --metrics "$M" \
  python3 docs/results/fidelity_v2/session18/device/launch_inputs.py "$1" > "$1/ncu_inputs.csv" 2> "$1/ncu_inputs.err"
echo "ncu exit $?"; tail -3 "$1/ncu_inputs.err"; grep -c '"ms_' "$1/ncu_inputs.csv"
