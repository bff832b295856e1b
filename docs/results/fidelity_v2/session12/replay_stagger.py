"""python replay_stagger.py PROFILE STAGGER [GAMMA HELD]: the replay target (H200 sample) under a profile, with
first_wave_stagger and optionally aged.py's sharing. Since session 17 the stagger is per task type and leaves the
megakernel alone, so STAGGER (given to the GEMM) no longer reaches the replayed launches: session 12's figures came
from the float form that staggered every launch's first wave."""
import sys, dataclasses
sys.path.insert(0,'docs/results/fidelity_v2/session12')
from megasim.app.calibrate.replay_check import replay_rows, replay_summary, sample_paths
from megasim.app.calibrate.profile import load_profile
from megasim.app.catalog import load_gpu
prof, s = sys.argv[1], float(sys.argv[2])
if len(sys.argv) > 3:
    import aged; aged.install(float(sys.argv[3]), float(sys.argv[4]))
spec = load_profile(prof).apply(load_gpu('h200'))
spec = dataclasses.replace(spec, first_wave_stagger={'gemm': s}) if s else spec
rows = replay_rows(spec, *sample_paths('scenarios/calibrations/raw', 'h200'), dispatches={"replay": ("replay", {})})
print(prof, 'stagger', s, sys.argv[3:], replay_summary(rows))
