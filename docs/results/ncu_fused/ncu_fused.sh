#!/usr/bin/env bash
# The device call (kind nvidia-h200, carry .whl): launch_fused.py's megakernels under Nsight Compute, caches
# flushed before each profiled launch (ncu's default), clocks as the driver sets them.
# Usage: ncu_fused.sh OUT [GPU]   (GPU: whose tuned partitions, h200 by default; h100 on an H100)
set -uo pipefail
source .ci/device_site.sh || exit 1
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv | tee "$1/nvidia_smi.txt"
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed
M=$M,lts__t_bytes.sum,lts__t_sector_hit_rate.pct,lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum
M=$M,lts__t_sectors_srcunit_tex_op_read_lookup_miss.sum,sm__warps_active.avg.pct_of_peak_sustained_active
M=$M,sm__throughput.avg.pct_of_peak_sustained_elapsed,smsp__issue_active.avg.pct_of_peak_sustained_active
ncu --clock-control none -k regex:'ms_megakernel' --csv --metrics "$M" \
  python3 docs/results/ncu_fused/launch_fused.py "$1" "${2:-h200}" > "$1/ncu_fused.csv" 2> "$1/ncu_fused.err"
echo "ncu exit $?"; tail -3 "$1/ncu_fused.err"; grep -c '"ms_' "$1/ncu_fused.csv"
