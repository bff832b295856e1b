"""cuDNN and torch on the paper's 13 layers: every algorithm's time and error against float64.

The study behind `baselines_h200.json` (see README.md here). Each layer gets
fresh random data; every legacy cuDNN algorithm in NCHW and NHWC, and torch in
both memory formats, is timed by `megasim.gpu.baselines.run_baselines` and its
output scored against a float64 cuDNN reference. Needs a GPU with CuPy.
"""
from __future__ import annotations

import argparse
import json
import math
import sys

import cupy as cp

from megasim.app.catalog import layer_names, load_layer
from megasim.contract.errors import MegasimError
from megasim.contract.problem import Layer
from megasim.gpu.baselines import device_header, fastest, reference_fp64, rel_l2_error, run_baselines


_SHORT = {"IMPLICIT_GEMM": "IG", "IMPLICIT_PRECOMP_GEMM": "IPG", "GEMM": "GEMM", "DIRECT": "DIR",
          "FFT": "FFT", "FFT_TILING": "FFTT", "WINOGRAD": "WIN", "WINOGRAD_NONFUSED": "WNF"}


def paper_layers(batch: int = 64) -> list[Layer]:
    """The paper's 13 layers from scenarios/layers (the one table), at this batch."""
    layers = (load_layer(n) for n in layer_names())
    return [Layer(n=batch, c=lay.c, h=lay.h, w=lay.w, k=lay.k, name=lay.name) for lay in layers]


def measure_layer(layer: Layer, reps: int, seed: int) -> dict:
    """run_baselines on fresh random data, each output scored against the float64 cuDNN reference."""
    rng = cp.random.RandomState(seed)
    x = rng.standard_normal((layer.n, layer.h, layer.w, layer.c), dtype=cp.float32)
    w = rng.standard_normal((layer.k, 3, 3, layer.c), dtype=cp.float32)
    results = run_baselines(layer, x, w, reps=reps, seed=seed + 1)
    ref = reference_fp64(layer, x, w)
    for r in results:
        out = r.pop("output")
        r["rel_err_vs_fp64"] = None
        if out is not None:
            r["nan_count"] = int(cp.isnan(out).sum())
            err = rel_l2_error(out, ref)
            r["rel_err_vs_fp64"] = err if math.isfinite(err) else None
    del ref
    cp.get_default_memory_pool().free_all_blocks()
    return {"layer": {"name": layer.name, "n": layer.n, "c": layer.c, "h": layer.h, "w": layer.w,
                      "k": layer.k, "direct_flops": layer.direct_flops},
            "results": results}


def _cell(results: list[dict], name: str) -> str:
    r = next((r for r in results if r["name"] == name), None)
    return f"{r['median_us']:.0f}" if r and r["supported"] else "-"


def format_table(layers: list[dict]) -> str:
    """One row a layer: each NCHW algorithm's median (us), the NHWC and torch bests, the winner."""
    cols = list(_SHORT.values())
    head = f"{'layer':<10}" + "".join(f"{c:>8}" for c in cols) + \
        f"{'nhwc-best':>22}{'torch':>8}{'t-nhwc':>8}   fastest (us, TFLOP/s eff.)  max-err"
    lines = [head]
    for entry in layers:
        rs, lay = entry["results"], entry["layer"]
        row = f"{lay['name']:<10}" + "".join(f"{_cell(rs, 'cudnn:' + a):>8}" for a in _SHORT)
        nb = fastest(rs, "cudnn-nhwc:")
        row += f"{(_SHORT[nb['name'].split(':')[1]] + ' ' + format(nb['median_us'], '.0f')) if nb else '-':>22}"
        row += f"{_cell(rs, 'torch'):>8}{_cell(rs, 'torch-nhwc'):>8}"
        best = fastest(rs)
        if best:
            row += f"   {best['name']} {best['median_us']:.0f} {lay['direct_flops'] / best['median_us'] / 1e6:.1f}"
        errs = [r["rel_err_vs_fp64"] for r in rs if r.get("rel_err_vs_fp64") is not None]
        row += f"  {max(errs):.1e}" if errs else ""
        lines.append(row)
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python docs/results/baselines_h200/measure_baselines.py",
                                description=__doc__.split("\n")[0])
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--layers", default="all", help="'all' or comma-separated paper layer names")
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--commit", default=None, help="git commit to record (default: git rev-parse HEAD)")
    p.add_argument("--out", default=None, help="write the full results JSON here")
    args = p.parse_args(argv)
    try:
        layers = paper_layers(args.batch)
        if args.layers != "all":
            wanted = args.layers.split(",")
            unknown = set(wanted) - {lay.name for lay in layers}
            if unknown:
                raise MegasimError(f"unknown layer(s) {sorted(unknown)}; known: {[lay.name for lay in layers]}")
            layers = [lay for lay in layers if lay.name in wanted]
        doc = {"header": {**device_header(args.commit), "reps": args.reps, "seed": args.seed,
                          "math": "CUDNN_FMA_MATH (strict FP32); torch allow_tf32 off, cudnn.benchmark on",
                          "layouts": "cudnn:* NCHW/KCRS; cudnn-nhwc:* NHWC/KRSC; torch NCHW contiguous; "
                                     "torch-nhwc channels_last",
                          "reference": "float64 cuDNN IMPLICIT_GEMM, NCHW"},
               "layers": []}
        for i, layer in enumerate(layers):
            entry = measure_layer(layer, args.reps, args.seed + 10 * i)
            doc["layers"].append(entry)
            best = fastest(entry["results"])
            print(f"{layer.name}: fastest {best['name'] if best else '-'} "
                  f"{best['median_us'] if best else float('nan'):.1f} us", flush=True)
        if args.out:
            with open(args.out, "w") as f:
                json.dump(doc, f, indent=1)
        print(format_table(doc["layers"]))
    except MegasimError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
