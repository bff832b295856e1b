#!/usr/bin/env bash
# The whole device experiment in one call (README.md): packages, the timing study, ncu on ResNet-2.
# usage on the device: bash docs/results/gemm_v2_h200/run_device.sh   (writes under $OUT)
set -uo pipefail
cd "$(dirname "$0")/../../.."
bash .ci/gpu --collect-only -q >/dev/null 2>&1
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
S=docs/results/gemm_v2_h200/gemm_study.py
OUT=${OUT:-/tmp/gemm_v2_out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit,temperature.gpu --format=csv > "$OUT/nvidia_smi.txt" 2>&1
python3 $S run "$OUT/gemm_study.json" "${LAYERS:-ResNet-2,ResNet-3,ResNet-4,VGG-2}" 2>&1 | tee "$OUT/study_log.txt"
BEST=$(python3 $S best "$OUT/gemm_study.json" ResNet-2)
SECT="--section SpeedOfLight --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis --section LaunchStats --section Occupancy --section InstructionStats --section ComputeWorkloadAnalysis"
MET=l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active,smsp__inst_executed_pipe_fma.sum,smsp__inst_executed.sum,sm__cycles_elapsed.avg.per_second,smsp__inst_executed_op_shared_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum
for r in barrier short_scoreboard long_scoreboard mio_throttle math_pipe_throttle not_selected selected wait dispatch_stall no_instruction lg_throttle branch_resolving drain misc; do
  MET=$MET,smsp__warp_issue_stalled_${r}_per_warp_active.pct
done
N=0
for K in ${NCU_CUR-cur} $BEST ${NCU_EXTRA:-}; do
  N=$((N + 1)); F="$OUT/ncu_ResNet-2_$N.txt"
  timeout 150 ncu --clock-control none --kernel-name regex:ms_gemm --launch-skip 2 --launch-count 1 $SECT --metrics $MET \
    python3 $S ncu ResNet-2 "$K" > "$F" 2>&1
  if grep -q "==ERROR==" "$F"; then  # a metric name this ncu does not know: sections with their details instead
    timeout 150 ncu --clock-control none --kernel-name regex:ms_gemm --launch-skip 2 --launch-count 1 $SECT --print-details all \
      python3 $S ncu ResNet-2 "$K" >> "$F" 2>&1
  fi
  echo "ncu $K -> $(basename $F)"; grep -E "Duration|pipe_fma|inst_executed|Issue Slots Busy|stalled|Registers Per|Achieved Occupancy|SM Frequency|No Eligible|ERROR" "$F" | head -40
done
python3 $S summary "$OUT/gemm_study.json"
