"""The simulator's GPU time for the builds megasim.torch runs, written before they are measured.

    python docs/results/torch_h200/predict_builds.py OUT [--cache out/torch_cache] [--batch 1]

For every cached schedule (`Schedules(cache_dir=...)`, the H200's) of the given batch: the build as the search
predicted it (a fused build with its reset copy, a non-fused build with its filter transform) and as
megasim.torch now runs it eagerly: a fused build that resets its own control words (one launch gap fewer,
`SimpyInterpreter(self_reset=True)`), a non-fused build given the layer's kept filter transform (three
kernels, `transform_filters=False`). Writes OUT/predicted_builds.json and prints a table.
"""
import argparse
import json
import sys
from pathlib import Path

from megasim.app.calibrate.profile import simulation_model
from megasim.app.torch.schedules import Schedule
from megasim.contract.interpreter import RunConfig
from megasim.engine.interpreter import SimpyInterpreter


def predict(schedule: Schedule, gpu, **options) -> float:
    graph = schedule.graph()
    mapping = schedule.mapping(graph) if schedule.launch == "fused" else None
    run = SimpyInterpreter(gpu, gemm=schedule.gemm, **options).run(
        graph, mapping, RunConfig(launch=schedule.launch, mode=schedule.mode))
    return run.time_us


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("out", type=Path)
    p.add_argument("--cache", type=Path, default=Path("out/torch_cache"))
    p.add_argument("--batch", type=int, default=1)
    args = p.parse_args()
    gpu, note, _ = simulation_model("h200")
    rows = []
    for path in sorted((args.cache / "h200").glob("*.json")):
        s = Schedule.from_doc(json.loads(path.read_text()), str(path))
        if s.shape[0] != args.batch:
            continue
        searched = predict(s, gpu)
        eager = predict(s, gpu, **({"self_reset": True} if s.launch == "fused" else {"transform_filters": False}))
        rows.append({"shape": list(s.shape), "build": s.describe().split(" paper")[0], "searched_us": searched,
                     "torch_eager_us": eager})
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "predicted_builds.json").write_text(json.dumps({"model": note, "rows": rows}, indent=1))
    print(f"model: {note}\n\n| shape | build | as searched us | as megasim.torch runs it us |\n|---|---|---|---|")
    for r in rows:
        print(f"| {'x'.join(map(str, r['shape']))} | {r['build']} | {r['searched_us']:.1f} | {r['torch_eager_us']:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
