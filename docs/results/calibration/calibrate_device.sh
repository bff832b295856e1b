# One GPU's calibration on the device: measure raw (unless "fit"), fit (16 workers), validate (16 workers).
#     bash docs/results/calibration/calibrate_device.sh h200 [fit]
set -e
GPU=$1
MEASURE=${2:-measure}  # "fit": refit from the raw files in the checkout, measuring nothing
bash .ci/gpu --collect-only -q >/dev/null 2>&1 || true
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
python3 - "$GPU" "$MEASURE" <<'PY'
import sys, time
from megasim.app.calibrate.measure import calibrate_measure
from megasim.app.calibrate.run import fit_profile, validate_profile
gpu = sys.argv[1]
t = time.time()
if sys.argv[2] != "fit":
    calibrate_measure(gpu, "scenarios/calibrations/raw", 20)
print(f"[measure] {time.time() - t:.0f} s", flush=True)
t = time.time()
fit_profile(gpu, "scenarios/calibrations/raw", f"scenarios/calibrations/{gpu}.toml", jobs=16)
print(f"[fit] {time.time() - t:.0f} s", flush=True)
t = time.time()
report = "docs/calibration.md" if gpu == "h200" else f"docs/calibration-{gpu}.md"
validate_profile(f"scenarios/calibrations/{gpu}.toml", f"scenarios/calibrations/raw/{gpu}_runs.json", "docs", 16,
                 report=report)
print(f"[validate] {time.time() - t:.0f} s", flush=True)
PY
# What comes back, as one archive (the device returns few files): the raw files, the profile, the report,
# its predictions and its two figures.
report=docs/calibration.md; [ "$GPU" = h200 ] || report=docs/calibration-$GPU.md
tar czf $OUT/calibration_$GPU.tgz scenarios/calibrations/raw/${GPU}_* scenarios/calibrations/${GPU}.toml \
    docs/results/calibration/calibration_predictions_${GPU}.json docs/figures/calibration_*_${GPU}.png $report
