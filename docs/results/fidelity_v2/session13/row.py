"""One line per study run: python docs/results/fidelity_v2/session13/row.py OUTDIR... (v.json and calibration.md)."""
import json, re, sys
from pathlib import Path
for out in map(Path, sys.argv[1:]):
    s = json.loads((out / "v.json").read_text())["summary"]
    md = (out / "calibration.md").read_text()
    get = lambda pat: (re.search(pat, md) or [None, "?"])[1]  # noqa: E731
    cf, cn = get(r"fused MAPE \| ([\d.]+%)"), get(r"non-fused MAPE \| ([\d.]+%)")
    cw, cm = get(r"exceeds 3% \| (\d+ of \d+)"), get(r"measured \| (\d+ of \d+)")
    big = {k: round(v * 100, 1) for k, v in s["regret"].items() if v > 0.02}
    sp = s["spearman"].values(); wrong = [k for k, v in s["winner"].items() if not v["right"]]
    print(f"{out.name}: paper {s['mape']['heldout']['fused']:.2%}/{s['mape']['heldout']['nonfused']:.2%} "
          f"winners {13 - len(wrong)} sp>=.8 {sum(v >= 0.8 for v in sp)} >=.9 {sum(v >= 0.9 for v in sp)} "
          f"regret {max(s['regret'].values()):.1%} | corpus {cf}/{cn} winners {cw} margins {cm} | replay {s['replay']['within_target']} | wrong {wrong} "
          f"regret>2%: {big}")
