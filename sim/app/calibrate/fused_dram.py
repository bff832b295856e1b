"""The megakernel's DRAM reads as Nsight Compute counts them, and the usable L2 they fix.

How much of the L2 keeps data for reuse cannot be read off fused times: stage 3's error on the H200's training
runs is 0.0927 with the usable fraction at 1.0 and 0.0928 at 0.3. The DRAM counters can tell. Ten cold megakernel
launches on the H200 (`<gpu>_fused_dram.json`, made by docs/results/ncu_fused/) read 1.1-4x what the model
reads with the whole L2 usable, and with 0.3 of it usable the model's reads come within 5% of the counters on six
of the ten (median |log error| 0.05, against 0.52 at 1.0). A streaming sweep finds the whole L2
(`<gpu>_micro.json`'s knee); a megakernel keeps about 0.3 of it (docs/model.md, "L2", for the likely reasons).
The H100 (50 MB) reads best at 0.3 too, if less closely (median |log error| 0.12, against 0.63 at 1.0).
Both GPUs read the same fraction, so it is the law's declared default for every GPU, `USABLE_L2_FRACTION`
(scanned by docs/results/ncu_fused/scan_usable.py); `calibrate` pins it, so stage 3 no longer fits the usable L2.
"""
from __future__ import annotations

import numpy as np

from megasim.io.files import read_json

USABLE_L2_FRACTION = 0.3


def load_fused_dram(path) -> list[dict]:
    """The cases of a `<gpu>_fused_dram.json`: each a paper layer under the paper's mapping, with the DRAM
    bytes Nsight Compute counted for one cold launch."""
    return read_json(path)["cases"]


def model_reads(spec, case: dict) -> tuple[float, float]:
    """(bytes the model reads from DRAM, its time in us) in one cold launch of the case's megakernel: its blocks'
    L2 misses (`block_dram_bytes` less the bytes they write, which the model sends to DRAM as they are stored)."""
    from megasim.app.catalog import load_layer, partition_for
    from megasim.contract.graph import build_graph
    from megasim.contract.interpreter import RunConfig
    from megasim.contract.mapping import make
    from megasim.contract.problem import WinogradVariant
    from megasim.engine.interpreter import SimpyInterpreter
    layer = load_layer(case["layer"])
    graph = build_graph(layer, WinogradVariant(case["variant"]), partition_for(layer, spec.name))
    run = SimpyInterpreter(spec).run(graph, make(graph, case["strategy"], **case["params"]), RunConfig(mode="static"))
    return float(np.sum(run.native.block_dram_bytes)) - float(graph.bytes_per_task()[1].sum()), run.time_us


def read_errors(spec, cases: list[dict]) -> np.ndarray:
    """log(model / measured) DRAM reads of each case."""
    return np.array([np.log(model_reads(spec, c)[0] / c["dram_read_bytes"]) for c in cases])
