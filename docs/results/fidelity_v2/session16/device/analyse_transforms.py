"""Session 16: the non-fused transform kernels under Nsight Compute (ncu_transforms.csv, cases.json), one row per
kernel: time, DRAM bytes and rate, L2 bytes and hit rate, achieved occupancy, sectors per global request, issue
activity, and the largest stalls per issued instruction.  Usage: python analyse_transforms.py [FOLDER]
"""
import csv
import io
import json
import sys
from pathlib import Path

here = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).parent)
text = (here / "ncu_transforms.csv").read_text()
rows = list(csv.DictReader(io.StringIO(text[text.index('"ID"'):])))
cases = json.loads((here / "cases.json").read_text())
kernels: dict = {}
for r in rows:
    kernels.setdefault(int(r["ID"]), {"name": r["Kernel Name"], "grid": r["Grid Size"]})[r["Metric Name"]] = \
        float(r["Metric Value"].replace(",", ""))
order = [(c["case"], op) for c in cases for op in ("input", "output")]
print("| case | kernel | blocks | us | DRAM MB read / written | DRAM TB/s (% peak) | L2 MB, hit % | occupancy % "
      "| sectors / request ld, st | issue active % | stalls per issue: long scoreboard, lg throttle, wait, other |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for (case, op), (_, k) in zip(order, sorted(kernels.items())):
    assert k["name"] == f"ms_{op}_kernel", (k["name"], op)
    us = k["gpu__time_duration.sum"] / 1e3
    rd, wr = k["dram__bytes_read.sum"] / 1e6, k["dram__bytes_write.sum"] / 1e6
    stall = {s: k[f"smsp__average_warps_issue_stalled_{s}_per_issue_active.ratio"]
             for s in ("long_scoreboard", "lg_throttle", "wait", "short_scoreboard", "math_pipe_throttle",
                       "mio_throttle", "drain", "no_instruction", "not_selected")}
    other = sum(v for s, v in stall.items() if s not in ("long_scoreboard", "lg_throttle", "wait"))
    ld = k["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"] / max(k["l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"], 1)
    st = k["l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"] / max(k["l1tex__t_requests_pipe_lsu_mem_global_op_st.sum"], 1)
    print(f"| {case} | {op} | {k['grid'].strip('()').split(',')[0]} | {us:.1f} | {rd:.1f} / {wr:.1f} | "
          f"{(rd + wr) / us:.2f} ({k['dram__throughput.avg.pct_of_peak_sustained_elapsed']:.0f}) | "
          f"{k['lts__t_bytes.sum'] / 1e6:.0f}, {k['lts__t_sector_hit_rate.pct']:.0f} | "
          f"{k['sm__warps_active.avg.pct_of_peak_sustained_active']:.0f} | {ld:.1f}, {st:.1f} | "
          f"{k['smsp__issue_active.avg.pct_of_peak_sustained_active']:.1f} | "
          f"{stall['long_scoreboard']:.1f}, {stall['lg_throttle']:.1f}, {stall['wait']:.1f}, {other:.1f} |")
