#!/usr/bin/env bash
# megasim.torch on a device machine, in one call under the device's 600 s limit: every schedule and kernel made in
# parallel, the torch GPU tests, the host time per call, the builds' GPU time, and the five networks' eager (settled)
# and CUDA-graph benchmark. host_parts.py is a third call when a call's host time needs taking apart.
#     bash docs/results/torch_h200/run.sh OUT
# torch.compile is a second call: python3 docs/results/torch_h200/bench.py OUT --compile --batches 16 (then 1,64).
# Schedules come from $MEGASIM_TORCH_CACHE (default: a fresh folder, so every shape is searched on the device;
# point it at a folder of searched schedules, carried, to skip that).
set -x
OUT=${1:?usage: run.sh OUT}
cd "$(dirname "$0")/../../.."
mkdir -p "$OUT"
source .ci/device_site.sh || exit 1
export CUPY_CACHE_DIR=${CUPY_CACHE_DIR:-/tmp/cupy_cache} MEGASIM_TORCH_CACHE=${MEGASIM_TORCH_CACHE:-/tmp/megasim_torch}
python3 -c "import torch, cupy; print('torch', torch.__version__, 'cupy', cupy.__version__, torch.cuda.get_device_name())" \
    >"$OUT/env.txt" 2>&1

timeout 200 python3 docs/results/torch_h200/bench.py "$OUT" --prepare-only --workers 15 >"$OUT/prepare.log" 2>&1
echo "prepare rc=$? at ${SECONDS}s" >>"$OUT/steps.txt"
timeout 120 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_torch.py tests/gpu/test_torch_builds.py -rs \
    >"$OUT/pytest.log" 2>&1
echo "pytest rc=$? at ${SECONDS}s" >>"$OUT/steps.txt"
timeout 60 python3 docs/results/torch_h200/host_time.py "$OUT" >"$OUT/host_time.log" 2>&1
echo "host_time rc=$? at ${SECONDS}s" >>"$OUT/steps.txt"
timeout 90 python3 docs/results/torch_h200/measure_builds.py "$OUT" --cache "$MEGASIM_TORCH_CACHE" >"$OUT/measure_builds.log" 2>&1
echo "measure_builds rc=$? at ${SECONDS}s" >>"$OUT/steps.txt"
timeout 240 python3 docs/results/torch_h200/bench.py "$OUT" --no-layers --settle --reps 20 >"$OUT/bench.log" 2>&1
echo "bench rc=$? at ${SECONDS}s" >>"$OUT/steps.txt"

set +x
cat "$OUT/env.txt" "$OUT/steps.txt"
tail -2 "$OUT/pytest.log"
cat "$OUT/host_time.md" "$OUT/measure_builds.log" "$OUT/torch_bench.md" 2>/dev/null
