"""Cut the small subset of the sweep that CI recomputes the search claim from (tests/fixtures/).

Per layer it keeps the simulator's top-5 over the whole grid, the measured best
and the measured worst, each with the prediction made when it was cut. Those
rows hold everything the claim in docs/search.md needs: the simulator's pick,
the fastest measured point and the runs to get within 3% of it.

    python docs/results/search_sweep_h200/cut_subset.py
"""
from __future__ import annotations

import json
from pathlib import Path

from evaluation import point_key, predict, tables

HERE = Path(__file__).resolve().parent
OUT = HERE.parents[2] / "tests" / "fixtures" / "search_sweep_h200_subset.json"


def main() -> None:
    sweep = json.loads((HERE / "search_sweep_h200.json").read_text())
    measured, predicted = tables(sweep), predict(sweep, sweep["header"]["gpu"], jobs=2)
    keep = set()
    for layer, times in measured.items():
        by_measured = sorted(times, key=lambda k: (times[k], k))
        by_predicted = sorted(times, key=lambda k: (predicted[layer][k], k))
        keep |= {(layer, k) for k in by_predicted[:5] + [by_measured[0], by_measured[-1]]}
    rows = [{**r, "predicted_fused_us": predicted[r["layer"]][point_key(r["point"])]} for r in sweep["rows"]
            if (r["layer"], point_key(r["point"])) in keep]
    OUT.write_text(json.dumps({"header": {**sweep["header"], "cut_by": "docs/results/search_sweep_h200/cut_subset.py"},
                               "rows": rows}, indent=1) + "\n")
    print(f"wrote {OUT} ({len(rows)} rows)")


if __name__ == "__main__":
    main()
