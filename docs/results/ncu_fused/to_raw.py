"""A device call's output (GPU/ncu_fused.csv, GPU/cases.json) as scenarios/calibrations/raw/<gpu>_fused_dram.json.

    python docs/results/ncu_fused/to_raw.py GPU        # h200 or h100

Each case was launched twice under Nsight Compute; the second launch's counters are kept (ncu flushes the caches
before each, so both are cold)."""
import csv
import io
import json
import sys
from pathlib import Path

gpu = sys.argv[1]
here = Path(__file__).parent / gpu
text = (here / "ncu_fused.csv").read_text()
measured: dict = {}
for r in csv.DictReader(io.StringIO(text[text.index('"ID"'):])):
    measured.setdefault(int(r["ID"]), {})[r["Metric Name"]] = float(r["Metric Value"].replace(",", ""))
ids = sorted(measured)
rows = []
for i, c in enumerate(json.loads((here / "cases.json").read_text())):
    k = measured[ids[2 * i + 1]]
    hit, miss = (k[f"lts__t_sectors_srcunit_tex_op_read_lookup_{s}.sum"] for s in ("hit", "miss"))
    rows.append({"layer": c["case"], "variant": 4, "strategy": "paper", "params": c["params"],
                 "duration_us": k["gpu__time_duration.sum"] / 1e3, "dram_read_bytes": k["dram__bytes_read.sum"],
                 "dram_write_bytes": k["dram__bytes_write.sum"], "l2_read_hit_rate": round(hit / (hit + miss), 4)})
header = {"device": (here / "nvidia_smi.txt").read_text().splitlines()[1].split(",")[0],
          "tool": "ncu --clock-control none, caches flushed before each launch (its default)", "date": "2026-11-27",
          "made_by": f"docs/results/ncu_fused/ncu_fused.sh OUT {gpu}, then to_raw.py {gpu}"}
out = Path(f"scenarios/calibrations/raw/{gpu}_fused_dram.json")
out.write_text(json.dumps({"header": header, "cases": rows}, indent=1) + "\n")
print(f"wrote {out}: {len(rows)} cases")
