# One GPU's calibration end to end on the device: measure raw, fit (16 workers), validate (16 workers).
set -e
GPU=$1
bash .ci/gpu --collect-only -q >/dev/null 2>&1 || true
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
python3 - "$GPU" <<'PY'
import sys, time
from megasim.app.calibrate.measure import calibrate_measure
from megasim.app.calibrate.run import fit_profile, validate_profile
gpu = sys.argv[1]
t = time.time()
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
mkdir -p $OUT/raw $OUT/docs
cp scenarios/calibrations/raw/${GPU}_* $OUT/raw/
cp scenarios/calibrations/${GPU}.toml $OUT/
cp -r docs/calibration*.md docs/results/calibration docs/figures $OUT/docs/ 2>/dev/null || true
