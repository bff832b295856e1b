"""Predict before measuring: the search's picks and every discrete build of each paper layer, on the H200 model.

    python docs/results/decision_h200/candidates.py [BUDGET] > docs/results/decision_h200/candidates.json

For each of the 13 paper layers, `megasim search` runs over the whole decision space (default budget 200,
TPE, seed 0) and `search --validate-top 3` would measure its three best builds beside the layer's 24-odd
discrete builds (`search.hardware.candidates`). This writes exactly that list, with each build's
prediction (the search's counted one, `search.objective`), so the predictions are committed before
`measure.py` times them on the GPU.
"""
import argparse
import json
import subprocess
from argparse import Namespace

from megasim.app.calibrate.profile import simulation_model
from megasim.app.catalog import layer_names, load_layer
from megasim.app.search import outputs
from megasim.app.search.command import prepare
from megasim.app.search.hardware import candidates
from megasim.app.search.runner import SearchConfig, run_search

ARGS = Namespace(strategy="paper", partition=None, space=None, launch=None, variant=None, mode=None, gemm=None)


def layer_candidates(name: str, gpu, intervals, budget: int, top: int = 3) -> dict:
    layer = load_layer(name)
    problem, space = prepare(layer, ARGS, gpu, intervals)
    result = run_search(problem, space, SearchConfig(budget=budget, jobs=2, progress=False))
    best = outputs.distinct_best(outputs.rows(result, space), space, top)
    cands = candidates(problem, space, best)
    return {"layer": layer.name, "shape": [layer.n, layer.c, layer.h, layer.w, layer.k], "top": top,
            "candidates": [{**c.build.to_dict(), "strategy": c.strategy, "options": dict(c.options),
                            "predicted_us": c.predicted_us, "label": c.label} for c in cands]}


def predictions_of(doc: str, count_name: str, default: int, help_text: str):
    """(the command line's count, the H200 model, its intervals, the file's header: model and commit) of a
    candidates script: both predict under the committed profile and say at which commit."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument(count_name, type=int, nargs="?", default=default, help=help_text)
    count = getattr(parser.parse_args(), count_name)
    gpu, note, intervals = simulation_model("h200")
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    return count, gpu, intervals, {"model": note, "commit": commit}


if __name__ == "__main__":
    budget, gpu, intervals, header = predictions_of(__doc__, "budget", 200, "TPE evaluations per layer")
    layers = [layer_candidates(n, gpu, intervals, budget) for n in layer_names()[:13]]
    print(json.dumps({**header, "budget": budget, "method": "tpe, seed 0", "layers": layers}, indent=1))
