# `megasim bench` on the paper layers, one layer per process and file, after a parallel precompile.
#     bash docs/results/bench_h200/run.sh OUT LAYER...
set -u
OUT=$1; shift
bash .ci/gpu --collect-only -q >/dev/null 2>&1 || true
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 CUPY_CACHE_DIR=${CUPY_CACHE_DIR:-/tmp/cupy_cache}
python3 docs/results/bench_h200/precompile.py 14 "$@" 2>&1 | tail -1
for layer in "$@"; do
    python3 -m megasim.app.cli bench --layer "$layer" --reps 20 --out "$OUT/bench_$layer.json" 2>&1 | tail -1
done
