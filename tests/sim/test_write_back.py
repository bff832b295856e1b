"""`GPUSpec.write_back`: whether a block waits for the DRAM traffic of its own stores ("blocking", every committed
profile), leaves it to the DRAM queue and ends without it ("detached"), or leaves it dirty in L2 ("absorbed");
session 11's studies (docs/calibration-analysis.md, findings 5 and 7)."""
import dataclasses

import numpy as np

from megasim.app.calibrate.profile import load_profile, profile_path
from megasim.app.catalog import load_gpu, load_layer, partition_for
from megasim.contract.graph import build_graph
from megasim.contract.interpreter import RunConfig
from megasim.contract.mapping import make
from megasim.contract.problem import Op, WinogradVariant
from megasim.engine.interpreter import SimpyInterpreter


def _runs(layer_name: str):
    layer = load_layer(layer_name)
    graph = build_graph(layer, WinogradVariant(4), partition_for(layer))
    spec = load_profile(profile_path("h200")).apply(load_gpu("h200"))
    assert spec.write_back == "blocking"
    return {mode: SimpyInterpreter(dataclasses.replace(spec, write_back=mode)).run(graph, make(graph, "paper"),
                                                                                   RunConfig())
            for mode in ("blocking", "detached")}


def test_a_detached_write_back_frees_the_filter_transforms_and_keeps_the_dram_traffic():
    """VGG-1's filter transforms write four times what they read: detached, their work (ready to end) halves or
    more, as the per-block traces have it; every task type still writes the same bytes (its misses move with
    the timing), and the kernel ends no later."""
    runs = _runs("VGG-1")
    work = {mode: (r.records["end_us"] - r.records["ready_us"])[r.records["op"] == Op.FILTER_TRANSFORM]
            for mode, r in runs.items()}
    assert np.median(work["detached"]) < 0.5 * np.median(work["blocking"])
    writes = {mode: {op: v["write_bytes"] for op, v in r.native.l2_stats.items() if isinstance(v, dict)}
              for mode, r in runs.items()}
    assert writes["detached"] == writes["blocking"] and sum(writes["blocking"].values()) > 0
    assert runs["detached"].time_us <= runs["blocking"].time_us


def test_the_write_back_still_takes_its_share_of_dram():
    """Detached traffic is not free: with the DRAM made 20 times slower the detached run slows too, where a
    run that dropped the writes would slow only by its reads."""
    layer = load_layer("ResNet-2")
    graph = build_graph(layer, WinogradVariant(4), partition_for(layer))
    spec = dataclasses.replace(load_profile(profile_path("h200")).apply(load_gpu("h200")), write_back="detached")
    slow = dataclasses.replace(spec, dram_gbps=spec.dram_gbps / 20)
    fast_run, slow_run = (SimpyInterpreter(s).run(graph, make(graph, "paper"), RunConfig()) for s in (spec, slow))
    total = float(slow_run.native.block_dram_bytes.sum())
    seconds = total / (slow.dram_gbps * 1e9 * slow.dram_efficiency)
    assert slow_run.time_us > fast_run.time_us and slow_run.time_us >= 0.9 * seconds * 1e6


def test_an_absorbing_l2_with_no_budget_is_blocking_and_with_room_frees_small_kernels():
    """`write_back = "absorbed"`: with no dirty budget every store pays its write-back, the same run as "blocking"
    bit for bit; with L2's room, a small layer's non-fused kernels (their outputs a few MB, which Nsight Compute
    shows are never written back before the kernel ends) run faster, and the DRAM moves only the misses."""
    layer = load_layer("ResNet-2")
    graph = build_graph(layer, WinogradVariant(4), partition_for(layer))
    spec = load_profile(profile_path("h200")).apply(load_gpu("h200"))
    run = lambda s: SimpyInterpreter(s).run(graph, None, RunConfig(launch="nonfused"))  # noqa: E731
    blocking = run(spec)
    none = run(dataclasses.replace(spec, write_back="absorbed", dirty_l2_fraction=0.0))
    room = run(dataclasses.replace(spec, write_back="absorbed", dirty_l2_fraction=1.0))
    assert none.time_us == blocking.time_us and np.array_equal(none.records, blocking.records)
    assert room.time_us < blocking.time_us
