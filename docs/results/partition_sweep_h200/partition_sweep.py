"""Time the fused kernel of every paper layer under each candidate partition, on the GPU at hand.

The hand sweep behind the first H200 partition table (`h200_partition_sweep.json`
here; the table now lives in scenarios/partitions/h200.toml). Each run is
`megasim bench`'s method (`megasim.app.bench.bench_layer`) without the
baselines or the raw-blockIdx build. Needs a GPU with CuPy.

    python docs/results/partition_sweep_h200/partition_sweep.py --out h200_partition_sweep.json
"""
from __future__ import annotations

import argparse
import json

from megasim.app.bench import bench_layer, copy_bandwidth
from megasim.app.catalog import partition_for
from megasim.app.catalog import layer_names, load_layer
from megasim.contract.errors import MegasimError
from megasim.contract.problem import Partition
from megasim.contract.resources import GEMM_K_STEP
from megasim.gpu.backend import device_info, git_commit, require_cupy


def _p(t, cpi, epg, kpg, kpo, kpf=8, threads=128) -> Partition:
    return Partition(tiles_per_group=t, input_channels_per_task=cpi, gemm_mats_per_task=epg,
                     gemm_k_per_task=kpg, output_channels_per_task=kpo, filter_k_per_task=kpf, threads=threads)


SWEEP = [_p(64, 32, 1, 128, 32), _p(64, 32, 1, 64, 32), _p(128, 32, 1, 64, 32), _p(128, 32, 1, 128, 32, threads=256)]
SWEEP_SMALL_K = [_p(64, 32, 1, 48, 48, threads=96), _p(128, 32, 1, 48, 48, threads=96)]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python docs/results/partition_sweep_h200/partition_sweep.py")
    p.add_argument("--layer", default="all", help="'all' or one paper layer name")
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--out", default=None)
    p.add_argument("--k-step", type=int, default=GEMM_K_STEP, help=f"GEMM channels per step (default {GEMM_K_STEP})")
    p.add_argument("--tuned", action="store_true", help="only each layer's tuned partition")
    args = p.parse_args(argv)
    cp = require_cupy()
    bw = copy_bandwidth(cp)
    rows = []
    names = layer_names() if args.layer == "all" else [args.layer]
    for layer in map(load_layer, names):
        for part in ([partition_for(layer, "h200")] if args.tuned else SWEEP if layer.k >= 64 else SWEEP_SMALL_K):
            try:
                e = bench_layer(layer, args, bw, partition=part, baselines=False, raw_blockidx=False, variants=False,
                                k_step=args.k_step)
            except MegasimError as err:
                print(f"{layer.name} {part}: {err}", flush=True)
                continue
            t = e["timings"]
            rows.append({"layer": layer.name, "partition": part.to_dict(), "fused_us": t["fused"]["median_us"],
                         "nonfused_graph_us": t["nonfused-graph"]["median_us"],
                         "rel_err": e["checks"]["fused"]["rel_err"], "bitwise": e["fused_equals_nonfused_bitwise"]})
            r = rows[-1]
            print(f"{layer.name:10} bk={args.k_step:2} t={part.tiles_per_group:3} e={part.gemm_mats_per_task} "
                  f"kpg={part.gemm_k_per_task:3} nt={part.threads}  fused {r['fused_us']:9.1f}  "
                  f"nf-graph {r['nonfused_graph_us']:9.1f}  err {r['rel_err']:.1e} bit {r['bitwise']}", flush=True)
            cp.get_default_memory_pool().free_all_blocks()
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"header": {**device_info(), "git_commit": git_commit()}, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
