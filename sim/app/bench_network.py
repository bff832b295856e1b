"""`megasim bench --network NAME`: each distinct layer of a network timed on this machine's GPU.

The same plan, rows, totals, table and plot as `megasim simulate --network`
(megasim.app.network); only the per-layer run differs: `bench_layer` times
the layer's mapping fused (in its file's scheduling mode, else static) and the
four non-fused kernels replayed as a CUDA graph, the non-fused path the
calibration compares with. Variants, warp bodies and cuDNN are left out:
they are `megasim bench --layer`'s job, and would multiply a network's time.
"""
from __future__ import annotations

import json
import sys
from argparse import Namespace
from pathlib import Path

from megasim.app.network_spec import NetworkLayer, load_network_spec
from megasim.app.network import LayerTimes, plan, report, run_rows
from megasim.app.network_report import format_network
from megasim.app.network_sim import refuse_single_layer_flags
from megasim.contract.errors import MegasimError
from megasim.contract.scheduling import MODES


def fused_key(mode: str) -> str:
    """bench's timing key of the requested variant's fused run in `mode`."""
    return "fused" if mode == MODES[0] else f"fused-{mode}"


def times_from_bench(entry: dict, mode: str) -> LayerTimes:
    """One `bench_layer` entry as a network row: fused in `mode`, non-fused graph-replayed."""
    key = fused_key(mode)
    fused, nonfused = entry["timings"].get(key, {}), entry["timings"].get("nonfused-graph", {})
    if fused.get("median_us") is None or nonfused.get("median_us") is None:
        why = fused.get("error") or nonfused.get("error") or "not timed"
        raise MegasimError(f"{entry['layer']['name']}: no {key} / nonfused-graph timing ({why})")
    check = entry["checks"].get(key, {})
    return LayerTimes(float(fused["median_us"]), float(nonfused["median_us"]),
                      {"variant": entry["variant"], "mode": mode, "strategy": entry["mapping"]["strategy"],
                       "params": entry["mapping"]["params"], "rel_err": check.get("rel_err"),
                       "nan_count": check.get("nan_count"), "nonfused_launched_us": entry["timings"].get(
                           "nonfused", {}).get("median_us"), "floors_us": entry["floors_us"]})


def _mode_of(path: Path | None) -> str:
    if path is None:
        return MODES[0]
    from megasim.contract.mapping.io import mode_of, read_mapping_file
    return mode_of(read_mapping_file(path), str(path))


def off_rows(doc: dict) -> list[str]:
    """Layers whose fused output failed its check (NaN, or error above its variant's tolerance)."""
    from megasim.app.bench_best import TOLERANCE
    return [r["name"] for r in doc["layers"]
            if r.get("nan_count") or not (r.get("rel_err") is not None and r["rel_err"] <= TOLERANCE[r["variant"]])]


def bench_network(args) -> int:
    """Entry point of `megasim bench --network`. Needs CuPy and a GPU, like every bench."""
    refuse_single_layer_flags(args)
    net = load_network_spec(args.network)
    jobs = plan(net, args.mappings)
    from megasim.app import bench
    cp = bench.require_cupy()
    header = {**bench.measurement_header(), "gpu": bench.scenario_gpu(args), "measured": True,
              "reps": max(20, int(getattr(args, "reps", 0) or 20)), "copy_bandwidth_bytes_per_s": bench.copy_bandwidth(cp)}

    def measure(entry: NetworkLayer, path: Path | None) -> LayerTimes:
        layer_args = Namespace(**{**vars(args), "mapping": str(path) if path else None})
        done = bench.bench_layer(entry.layer, layer_args, header["copy_bandwidth_bytes_per_s"], baselines=False,
                           raw_blockidx=False, space=False)
        cp.get_default_memory_pool().free_all_blocks()
        return times_from_bench(done, _mode_of(path))

    doc = report(net, run_rows(jobs, measure), header)
    if getattr(args, "out", None):
        from megasim.io.writing import write_then_rename
        with write_then_rename(args.out) as tmp:
            tmp.write_text(json.dumps(doc, indent=1, default=str))
    title = f"{net.name} on {header.get('device', header['gpu'])} (measured), batch {net.layers[0].layer.n}"
    if getattr(args, "plot", None):
        from megasim.app.network_plot import plot_network
        plot_network(doc, args.plot, title)
    print(json.dumps(doc, default=str) if args.json else format_network(doc, title))
    for name in off_rows(doc):
        print(f"megasim: warning: {name}: the fused output failed its accuracy check (see rel_err, nan_count)",
              file=sys.stderr)
    return 0
