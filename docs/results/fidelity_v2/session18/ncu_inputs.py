"""Nsight Compute on the device's input kernels (device/ncu/: ncu_inputs.sh, launch_inputs.py): per launch its time,
the DRAM and L2 bytes against the task graph's, the units' busy shares and the warps' main stalls.

    python ncu_inputs.py
"""
import csv
import io
import json
from pathlib import Path

HERE = Path(__file__).parent / "device" / "ncu"
SCALE = {"byte": 1e-6, "Kbyte": 1e-3, "Mbyte": 1.0, "Gbyte": 1e3, "ns": 1e-3, "us": 1.0, "ms": 1e3}
text = (HERE / "ncu_inputs.csv").read_text()
rows = list(csv.DictReader(io.StringIO(text[text.index('"ID"'):])))
launches = {}
for r in rows:
    value = float(r["Metric Value"].replace(",", "")) * SCALE.get(r["Metric Unit"], 1.0)
    launches.setdefault(int(r["ID"]), {})[r["Metric Name"]] = value
cases = json.loads((HERE / "cases.json").read_text())
stall = "smsp__average_warps_issue_stalled_{}_per_issue_active.ratio"
print("case | k | us | graph read / written MB | DRAM read / written MB | L2 MB | DRAM % | L2 % | L1 % | issue % "
      "| LSU % | sectors per load / store | stalls per issue: long scoreboard, lg throttle, drain, not selected")
for c, (_, m) in zip(cases, sorted(launches.items())):
    req = lambda op: m[f"l1tex__t_sectors_pipe_lsu_mem_global_op_{op}.sum"] / max(1.0, m[f"l1tex__t_requests_pipe_lsu_mem_global_op_{op}.sum"])  # noqa: E731
    print(f"{c['case'][:24]:24s} | {c['k']:2d} | {m['gpu__time_duration.sum']:6.1f} | "
          f"{c['read_bytes'] / 1e6:6.1f} / {c['written_bytes'] / 1e6:6.1f} | "
          f"{m['dram__bytes_read.sum']:6.1f} / {m['dram__bytes_write.sum']:6.1f} | {m['lts__t_bytes.sum']:7.1f} | "
          f"{m['dram__throughput.avg.pct_of_peak_sustained_elapsed']:3.0f} | {m['lts__throughput.avg.pct_of_peak_sustained_elapsed']:3.0f} | "
          f"{m['l1tex__throughput.avg.pct_of_peak_sustained_elapsed']:3.0f} | {m['smsp__issue_active.avg.pct_of_peak_sustained_active']:3.0f} | "
          f"{m['sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active']:3.0f} | {req('ld'):4.1f} / {req('st'):4.1f} | "
          + ", ".join(f"{m[stall.format(s)]:5.2f}" for s in ("long_scoreboard", "lg_throttle", "drain", "not_selected")))
