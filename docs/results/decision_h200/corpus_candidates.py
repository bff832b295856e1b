"""Predict before measuring, on shapes the model never saw: every build of held-out corpus shapes.

    python docs/results/decision_h200/corpus_candidates.py [COUNT] > docs/results/decision_h200/corpus_candidates.json

The held-out generated corpus shapes (`scenarios/calibrations/raw/h200_corpus.jsonl`, split "heldout": no fit
read them) whose fused F(4) build took at least 100 us on the H200 (below that, launch overheads dominate) and
whose megakernel has at most 60,000 tasks (the simulation's cost), first COUNT (default 16) in file order. Each
gets every discrete build at the H200 partition table's default partition, ranked by `simulate --all-builds`
(`pick.rank_builds`), with its prediction: the simulator's pick is the first. `measure.py` times them.
"""
import json
import sys
from pathlib import Path

from megasim.app.catalog import partition_for
from megasim.app.pick import rank_builds
from megasim.contract.graph import Geometry
from megasim.contract.mapping import make
from megasim.contract.problem import Layer, WinogradVariant

CORPUS = Path("scenarios/calibrations/raw/h200_corpus.jsonl")


def shapes(count: int):
    for line in CORPUS.read_text().splitlines():
        row = json.loads(line)
        run = row["runs"][0]
        if row["split"] != "heldout" or run["fused_us"] < 100:
            continue
        layer = Layer(**{k: run["layer"][k] for k in "nchwk"}, name=row["shape"].rsplit("-f", 1)[0])
        part = partition_for(layer, "h200")
        if Geometry.of(layer, WinogradVariant(4), part).num_tasks > 60_000:
            continue
        yield layer, part
        count -= 1
        if count == 0:
            return


if __name__ == "__main__":
    from candidates import predictions_of  # this folder's script, on sys.path when run as a script
    count, gpu, _, header = predictions_of(__doc__, "count", 16, "held-out shapes")
    layers = []
    for layer, part in shapes(count):
        ranked = rank_builds(layer, part, gpu, lambda g: make(g, "paper"), "in_order_round_robin")
        layers.append({"layer": layer.name, "shape": [layer.n, layer.c, layer.h, layer.w, layer.k], "top": 0,
                       "candidates": [{**r.build.to_dict(), "strategy": "paper", "options": {} if
                                       r.build.launch == "nonfused" else {"dig": 512, "dgo": 512, "m": 4},
                                       "predicted_us": r.time_us, "label": r.build.label} for r in ranked]})
        print(f"{layer.name}: {len(ranked)} builds, pick {ranked[0].build.label}", file=sys.stderr, flush=True)
    print(json.dumps({**header, "split": "heldout corpus", "layers": layers}, indent=1))
