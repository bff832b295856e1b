#!/usr/bin/env bash
# The device call (kind nvidia-h200, carry .whl; a second argument, h100, for an H100): megasim laid out as installed, then launch.py under Nsight Compute.
#     bash docs/results/ncu_fused/ncu_writes.sh OUT [GPU]     (copy OUT's files to <gpu>/writes/)
set -uo pipefail
source .ci/device_site.sh || exit 1
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv | tee "$1/nvidia_smi.txt"
ncu --clock-control none -k regex:ms_ --csv --metrics \
  gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_sectors_srcunit_tex_op_write.sum \
  python3 docs/results/ncu_fused/launch.py "$1" "${2:-h200}" > "$1/ncu.csv" 2> "$1/ncu.err"
echo "ncu exit $?"; tail -3 "$1/ncu.err"; grep -c '"ms_' "$1/ncu.csv"
