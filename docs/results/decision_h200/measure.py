"""Measure the committed candidates (candidates.py, corpus_candidates.py) on this GPU: the simulator's picks
beside every discrete build.

    python docs/results/decision_h200/measure.py compile CANDIDATES WORKERS
    python docs/results/decision_h200/measure.py time CANDIDATES OUT [LAYER...]

`compile` fills CuPy's kernel cache with every candidate's build in WORKERS processes (set CUPY_CACHE_DIR to
keep it between calls); `time` times each layer's candidates with `bench_build.time_builds` (bench's method:
CUDA events, median of 20 calls, inputs rotated past twice the L2, float64 reference) and cuDNN's and torch's
algorithms (`gpu.baselines`) on the same machine, one JSON per layer in OUT, written as each layer ends.
"""
import json
import sys
from pathlib import Path

from megasim.app.bench_build import Candidate, Prepared, precompile, time_builds
from megasim.contract.build import Build
from megasim.contract.problem import Layer, Partition


def load(path, names=()):
    doc = json.loads(Path(path).read_text())
    for entry in doc["layers"]:
        if names and entry["layer"] not in names:
            continue
        layer = Layer(*entry["shape"], name=entry["layer"])
        cands = [Candidate(Build(c["launch"], c["variant"], c["mode"], c["gemm"], Partition(**c["partition"])),
                           c["strategy"], tuple(sorted(c["options"].items())), c["predicted_us"], c["label"])
                 for c in entry["candidates"]]
        yield layer, cands


if __name__ == "__main__":
    if sys.argv[1] == "compile":
        jobs = [(layer, c.build) for layer, cands in load(sys.argv[2]) for c in cands]
        errors = precompile(jobs, int(sys.argv[3]))
        print(f"[compile] {len(jobs)} builds, {len(errors)} refused: {errors[:3]}")
        sys.exit(0)
    from megasim.gpu.backend import measurement_header
    out = Path(sys.argv[3])
    out.mkdir(parents=True, exist_ok=True)
    for layer, cands in load(sys.argv[2], sys.argv[4:]):
        prepared = Prepared.of(layer)
        rows = time_builds(layer, cands, 20, prepared=prepared)
        base_rows, fastest = prepared.baselines(layer, 20)
        for r in base_rows:
            r.pop("output", None)
        (out / f"measured_{layer.name}.json").write_text(json.dumps(
            {"header": measurement_header(), "layer": layer.name, "builds": rows, "baselines": base_rows,
             "fastest_baseline": fastest}, indent=1, default=str))
        ok = [r for r in rows if r.get("accurate")]
        best = min(ok, key=lambda r: r["measured_us"])
        print(f"{layer.name:10} pick {rows[0]['label'][:40]:40} {rows[0].get('measured_us') or 0:8.1f} "
              f"best {best['label'][:32]:32} {best['measured_us']:8.1f} cudnn {fastest and fastest['median_us']:8.1f}",
              flush=True)
