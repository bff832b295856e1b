#!/usr/bin/env bash
# On a device machine, from the repository root: `megasim calibrate --gpu h100` from out/h100/raw (empty at first):
# it measures what the folder lacks within BUDGET_S, and once nothing is left, fits and validates (--jobs 14).
# The folder travels back as $OUT/h100_raw.tgz, also when the call stops at its limit: each part keeps what it
# finished, and the same call again (with the folder carried) continues. MEASURE_ONLY=1 measures the same parts
# and leaves the fit to `megasim calibrate --gpu h100 --from-raw --raw out/h100/raw` on any CPU.
#     LIMIT=560 bash docs/results/calibrate_h100/run.sh BUDGET_S   # measuring budget; LIMIT: the whole command's
set -uo pipefail
cd "$(dirname "$0")/../../.."
source .ci/device_site.sh || exit 1
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "device: $name"
case "$name" in *H100*) ;; *) echo "not an H100: $name"; exit 3 ;; esac
mkdir -p out/h100/raw
budget=${1:-480}
start=$(date +%s)
if [ "${MEASURE_ONLY:-0}" = 1 ]; then  # the same parts, no fit: the fit then runs where the folder lands
    timeout "${LIMIT:-560}" python3 -m megasim.app.calibrate.measure --gpu h100 --out out/h100/raw \
        --budget-s "$budget" 2>&1 | tee -a out/h100/calibrate.log
else
    timeout "${LIMIT:-560}" python3 -m megasim.app.cli calibrate --gpu h100 --raw out/h100/raw \
        --out out/h100/h100.toml --jobs 14 --budget-s "$budget" 2>&1 | tee -a out/h100/calibrate.log
fi
echo "call: $(( $(date +%s) - start )) s"
tar czf "$OUT/h100_raw.tgz" -C out h100
ls -la out/h100/raw
