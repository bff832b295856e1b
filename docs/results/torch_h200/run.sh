#!/usr/bin/env bash
# megasim.torch on a device machine: every schedule and kernel made in parallel, the GPU tests, the network
# benchmark; everything ends up in OUT/torch_h200.tar.gz (re-packed after each step, so a run cut short still
# returns what it finished).
#     bash docs/results/torch_h200/run.sh OUT
# The device's python has torch, CuPy and pytest; .ci/gpu installs the carried wheels (.whl/: simpy, optuna)
# and lays the package out in /tmp/site. The whole run stays under BUDGET seconds (the device's 600 s limit).
set -x
OUT=${1:?usage: run.sh OUT}
BUDGET=${BUDGET:-570}
cd "$(dirname "$0")/../../.."
mkdir -p "$OUT"
WORK=$(mktemp -d)
export CUPY_CACHE_DIR=${CUPY_CACHE_DIR:-/tmp/cupy_cache} MEGASIM_TORCH_CACHE=${MEGASIM_TORCH_CACHE:-/tmp/megasim_torch}
export PYTHONUNBUFFERED=1

pack() {  # the tarball, and the few files worth reading without unpacking it
    tar czf "$OUT/torch_h200.tar.gz.tmp" -C "$WORK" . && mv "$OUT/torch_h200.tar.gz.tmp" "$OUT/torch_h200.tar.gz"
    for f in steps.txt pytest.log torch_bench.md trace/compare_fused.png trace/compare_nonfused.png; do
        [ -f "$WORK/$f" ] && cp "$WORK/$f" "$OUT/$(basename "$f")"
    done
    return 0
}
left() { local cap=$1; local rest=$((BUDGET - SECONDS - 15)); [ "$rest" -lt "$cap" ] && cap=$rest; [ "$cap" -lt 10 ] && cap=10; echo "$cap"; }

timeout 120 bash .ci/gpu --collect-only -q >"$WORK/setup.log" 2>&1
export PYTHONPATH=/tmp/site
python3 -c "import torch, cupy, megasim.torch; print('torch', torch.__version__, 'cupy', cupy.__version__, torch.cuda.get_device_name())" \
    >"$WORK/env.txt" 2>&1
nvidia-smi >>"$WORK/env.txt" 2>&1
pack

# 0. beside step 1: the measured timelines of ResNet-2 (megasim bench --trace's file) and megasim compare on them
timeout 300 python3 docs/results/torch_h200/trace_resnet2.py "$WORK/trace" >"$WORK/trace.log" 2>&1 &
TRACE_PID=$!

# 1. every schedule (simulator searches) and kernel (CuPy compiles) of both networks at every batch, in parallel
timeout "$(left 270)" python3 docs/results/torch_h200/bench.py "$WORK" --prepare-only >"$WORK/prepare.log" 2>&1
echo "prepare rc=$? at ${SECONDS}s" >>"$WORK/steps.txt"
pack

# 2. the GPU tests (batch 1: their schedules and kernels were made in step 1)
timeout "$(left 170)" python3 -m pytest -q -p no:cacheprovider tests/gpu/test_torch.py tests/gpu/test_torch_builds.py tests/gpu/test_measured_trace.py -rs \
    >"$WORK/pytest.log" 2>&1
echo "pytest rc=$? at ${SECONDS}s" >>"$WORK/steps.txt"
pack

wait "$TRACE_PID"
echo "trace rc=$? at ${SECONDS}s" >>"$WORK/steps.txt"
pack

# 3. the benchmark, warm (nothing else on the GPU now)
timeout "$(left 200)" python3 docs/results/torch_h200/bench.py "$WORK" >"$WORK/bench.log" 2>&1
echo "bench rc=$? at ${SECONDS}s" >>"$WORK/steps.txt"
cp -r "$MEGASIM_TORCH_CACHE" "$WORK/schedules" 2>/dev/null
pack

set +x
echo "===== summary ====="
cat "$WORK/env.txt" | head -1
cat "$WORK/steps.txt"
tail -3 "$WORK/prepare.log"
grep -E "passed|failed|error" "$WORK/pytest.log" | tail -5
grep -A8 "task  blocks" "$WORK/trace/compare_fused.txt" 2>/dev/null || tail -5 "$WORK/trace.log"
cat "$WORK/torch_bench.md" 2>/dev/null || tail -20 "$WORK/bench.log"
