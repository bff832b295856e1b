"""Summary row of validate outputs: python row.py DIR..."""
import json, re, sys
for d in sys.argv[1:]:
    v = json.load(open(f"{d}/v.json")); s = v["summary"]
    sp = s["spearman"].values()
    win = sum(w["right"] for w in s["winner"].values())
    md = open(f"{d}/calibration.md").read()
    corp = re.search(r"## Held-out corpus shapes.*?(?=\n## )", md, re.S).group(0)
    mape = re.findall(r"\| (?:fused|non-fused) MAPE \| ([^|]+)\|", corp)
    sl = re.search(r"Fused MAPE by slice: (.*)", corp).group(1)
    winr = re.search(r"winner right where the measured margin exceeds 3% \| (\d+ of \d+)", corp).group(1)
    marg = re.search(r"predicted margin within 3 points of measured \| (\d+ of \d+)", corp).group(1)
    print(f"{d}: paper heldout {v['heldout_mape_fused']:.2%}/{v['heldout_mape_nonfused']:.2%} winners {win} "
          f"sp>=.8 {sum(x>=0.8 for x in sp)} sp>=.9 {sum(x>=0.9 for x in sp)} worst regret {max(s['regret'].values()):.1%} "
          f"| corpus {' '.join(m.strip() for m in mape)} winners {winr} margins {marg} [{sl}]")
