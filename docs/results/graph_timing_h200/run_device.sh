set -u
OUT=$1
source .ci/device_site.sh || exit 1
export CUPY_CACHE_DIR=/tmp/cupy_cache
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv | tee $OUT/nvsmi.txt
timeout 60 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_kernels.py -k "graphed or bitwise" 2>&1 | tail -3 | tee $OUT/pytest.txt
timeout 260 python3 docs/results/graph_timing_h200/measure.py $OUT/kgt h200 15 200 2>&1 | tee $OUT/kgt.log | grep -v "^\[[0-9]" | tail -5
echo "kgt at ${SECONDS}s"
timeout $((560 - SECONDS)) python3 docs/results/search_sweep_h200/hardware_sweep.py --layer ResNet-3 --layer VGG-2 --layer YOLOv3-2 --layer DenseNet --layer YOLOv3-4 --layer VGG-3 --out $OUT/search_sweep_h200_more.json --reps 20 > $OUT/sweep.log 2>&1
echo "sweep rc=$? at ${SECONDS}s; rows: $(grep -c fused $OUT/sweep.log)"
tail -3 $OUT/sweep.log
