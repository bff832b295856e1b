"""Session 16: the non-fused transform kernels of `device/cases.json` simulated alone under a profile: the bytes
the model reads from DRAM (L2 misses), writes, and its time, beside Nsight Compute's DRAM counters and time
(`device/ncu_transforms.csv`, cold caches).  Usage: python model_bytes.py [PROFILE]
"""
import csv
import io
import json
import sys
from pathlib import Path

import numpy as np

from megasim.app.calibrate.profile import load_profile
from megasim.app.catalog import load_gpu, partition_for
from megasim.contract.graph import build_graph
from megasim.contract.interpreter import RunConfig
from megasim.contract.problem import OP_NAMES, Op, WinogradVariant
from megasim.engine.interpreter import SimpyInterpreter

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "write_traffic_h200"))
from launch import layer_of  # noqa: E402

here = Path(__file__).parent / "device"
spec = load_profile(sys.argv[1] if len(sys.argv) > 1 else "scenarios/calibrations/h200.toml").apply(load_gpu("h200"))
text = (here / "ncu_transforms.csv").read_text()
measured: dict = {}
for r in csv.DictReader(io.StringIO(text[text.index('"ID"'):])):
    measured.setdefault(int(r["ID"]), {})[r["Metric Name"]] = float(r["Metric Value"].replace(",", ""))
cases = json.loads((here / "cases.json").read_text())
print("| case | kernel | measured us | model us | DRAM read MB, measured / model | written MB, measured / model (to DRAM) |")
print("|---|---|---|---|---|---|")
ids = iter(sorted(measured))
for c in cases:
    layer, m = layer_of(c["case"])
    graph = build_graph(layer, WinogradVariant(m), partition_for(layer, "h200"))
    for op in (Op.INPUT_TRANSFORM, Op.OUTPUT_TRANSFORM):
        k = measured[next(ids)]
        ex = SimpyInterpreter(spec).run(graph, None, RunConfig(launch=OP_NAMES[op]))
        dram = float(np.sum(ex.native.block_dram_bytes))
        written = c["written_bytes"][OP_NAMES[op]]
        print(f"| {c['case']} | {OP_NAMES[op].split('_')[0]} | {k['gpu__time_duration.sum'] / 1e3:.1f} | {ex.time_us:.1f} | "
              f"{k['dram__bytes_read.sum'] / 1e6:.1f} / {(dram - written) / 1e6:.1f} | "
              f"{k['dram__bytes_write.sum'] / 1e6:.1f} / {written / 1e6:.1f} |")
