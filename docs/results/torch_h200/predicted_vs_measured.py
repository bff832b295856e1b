"""Each distinct eligible shape of the torch benchmark: the simulator's predicted time for the schedule it picked
beside the measured time of megasim's Conv2d (channels_last, so no layout copy), median over the layers of that shape.

    python docs/results/torch_h200/predicted_vs_measured.py [results/torch_bench.json]

The prediction is the search's best on the calibrated H200 profile; the measurement includes the per-call
Python and launch cost of an eager Conv2d call, which the model does not (a CUDA graph removes it: see the
README), so at batch 1 the gap is that cost, not the kernel.
"""
import json
import re
import statistics
import sys
from pathlib import Path

path = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).with_name("results") / "torch_bench.json")
doc = json.loads(path.read_text())
rows = {}
for run in doc["results"]:
    for layer in run["eligible"]["layers"]:
        n, c, h, w = layer["input"]
        key = f"{n}x{c}x{h}x{w}x{layer['k']}"
        rows.setdefault((run["network"], key), []).append(layer["megasim-cl"] * 1e3)
print("| network | N x C x H x W x K | schedule | predicted (us) | measured, median of layers (us) | measured / predicted |")
print("|---|---|---|---|---|---|")
for (net, key), times in sorted(rows.items(), key=lambda kv: (kv[0][0], int(kv[0][1].split("x")[0]), kv[0][1])):
    text = doc["schedules"][key]
    found = re.search(r"predicted ([\d.]+) us", text)
    measured = statistics.median(times)
    if not found:
        print(f"| {net} | {key} | {text.split(' (')[0]} (no search: {text.split('(', 1)[1].rstrip(')')}) | - | {measured:.1f} | - |")
        continue
    predicted = float(found.group(1))
    schedule = text.split(", predicted")[0]
    print(f"| {net} | {key} | {schedule} | {predicted:.1f} | {measured:.1f} | {measured / predicted:.2f} |")
