#!/usr/bin/env bash
# megasim bench --network on a device machine, beside megasim simulate --network of the same networks.
#     bash docs/results/bench_h200/networks/run.sh OUT [NETWORK...]       (default: resnet34 resnet50 vgg16)
# Carried wheels (.whl/) go to /tmp/site as .ci/device_site.sh lays them out. Each network's bench is time-boxed so the
# call stays under the device's 600 s; what finished is in OUT.
OUT=${1:?usage: run.sh OUT [NETWORK...]}; shift
NETS=${*:-resnet34 resnet50 vgg16}
cd "$(dirname "$0")/../../../.."
source .ci/device_site.sh || exit 1
export CUPY_CACHE_DIR=/tmp/cupy_cache
mkdir -p "$OUT"
for net in $NETS; do
    python3 -m megasim.app.cli simulate --network "$net" --gpu h200 --json > "$OUT/simulate_$net.json" 2> "$OUT/simulate_$net.err"
    timeout 170 python3 -m megasim.app.cli bench --network "$net" --gpu h200 --out "$OUT/bench_$net.json" \
        --plot "$OUT/bench_$net.png" > "$OUT/bench_$net.txt" 2>&1
    echo "$net bench rc=$? at ${SECONDS}s" | tee -a "$OUT/steps.txt"
done
for net in $NETS; do echo "== $net"; tail -12 "$OUT/bench_$net.txt"; done
