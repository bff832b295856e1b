"""GPU time of the builds megasim.torch runs eagerly, beside the build as searched: the measurement that
`predict_builds.py` predicted (results/predicted_builds.json, written first).

    python docs/results/torch_h200/measure_builds.py OUT [--cache out/torch_cache] [--shapes 1x64x56x56x64,...]

Per cached H200 schedule of the given shapes (default: ResNet-18's and VGG-16's 3x3 stride-1 shapes at batch 1):
the build as searched (a fused build with its reset copy; a non-fused build with its filter transform), the
build as megasim.torch runs it (fused: resetting its own control words; non-fused: three kernels, given U), and
that build reading and writing NCHW. CUDA events around each call, the median of `reps` calls rotating over
input sets past the L2, as `bench` times (`gpu.timing`). Writes OUT/measured_builds.json and prints a table.
"""
import argparse
import json
import sys
from concurrent.futures import ProcessPoolExecutor
import multiprocessing
from pathlib import Path

SHAPES = ("1x64x56x56x64", "1x128x28x28x128", "1x256x14x14x256", "1x512x7x7x512", "1x64x224x224x64",
          "1x128x112x112x128", "1x256x56x56x256", "1x512x28x28x512")


def _compile(doc) -> None:
    from megasim.app.torch.plans import compile_build
    from megasim.app.torch.schedules import Schedule
    from megasim.gpu.megakernel import fused_module
    s = Schedule.from_doc(doc)
    for layout in ("nhwc", "nchw"):
        compile_build(s, layout)
    if s.launch == "fused":
        fused_module(s.graph(), s.mode, gemm=s.gemm)


def measure(doc, reps: int) -> dict:
    import cupy as cp
    from megasim.app.torch.plans import Build, make_conv
    from megasim.app.torch.schedules import Schedule
    from megasim.gpu.launch import DriverLaunch
    from megasim.gpu.megakernel import FusedConv
    from megasim.gpu.timing import rotation_inputs, time_launches
    s = Schedule.from_doc(doc)
    xs, ws, ys = rotation_inputs(cp, s.layer, 5)
    n = len(xs)
    stream = cp.cuda.get_current_stream()
    if s.launch == "fused":
        graph = s.graph()
        searched = DriverLaunch(FusedConv(graph, s.mapping(graph), mode=s.mode, gemm=s.gemm).steps())
    else:
        searched = None
    row = {"shape": list(s.shape), "build": s.describe().split(" paper")[0]}
    builds = {layout: Build(make_conv(s, layout)) for layout in ("nhwc", "nchw")}
    us = []
    if builds["nhwc"].filters is not None:
        us = [cp.empty(builds["nhwc"].u_floats, dtype=cp.float32) for _ in range(n)]
        for i in range(n):
            builds["nhwc"].transform_filters(ws[i].data.ptr, us[i].data.ptr, stream.ptr)

    def call(b, i, given):
        b.launch(xs[i].data.ptr, ws[i].data.ptr, ys[i].data.ptr, stream.ptr, us[i].data.ptr if given else 0)

    if searched is not None:
        row["searched_us"] = time_launches(cp, lambda i: searched.launch(xs[i].data.ptr, ws[i].data.ptr,
                                                                         ys[i].data.ptr, stream.ptr), n, reps)["median_us"]
    else:
        row["searched_us"] = time_launches(cp, lambda i: call(builds["nhwc"], i, False), n, reps)["median_us"]
    given = bool(us)
    row["torch_eager_us"] = time_launches(cp, lambda i: call(builds["nhwc"], i, given), n, reps)["median_us"]
    row["torch_eager_nchw_us"] = time_launches(cp, lambda i: call(builds["nchw"], i, given), n, reps)["median_us"]
    for b in builds.values():
        if b.filters is None:
            stream.synchronize()
            b.conv.check()
    return row


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("out", type=Path)
    p.add_argument("--cache", type=Path, default=Path("out/torch_cache"))
    p.add_argument("--shapes", default=",".join(SHAPES))
    p.add_argument("--reps", type=int, default=50)
    args = p.parse_args()
    docs = [json.loads((args.cache / "h200" / f"{name}.json").read_text()) for name in args.shapes.split(",")]
    with ProcessPoolExecutor(min(len(docs), 15), mp_context=multiprocessing.get_context("spawn")) as pool:
        list(pool.map(_compile, docs))
    rows = [measure(d, args.reps) for d in docs]
    predicted = {tuple(r["shape"]): r for r in json.loads(
        (Path(__file__).parent / "results" / "predicted_builds.json").read_text())["rows"]}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "measured_builds.json").write_text(json.dumps({"rows": rows}, indent=1))
    print("| shape | build | searched: predicted / measured us | as torch runs it: predicted / measured us | NCHW "
          "measured us |\n|---|---|---|---|---|")
    for r in rows:
        pr = predicted.get(tuple(r["shape"]), {})
        print(f"| {'x'.join(map(str, r['shape']))} | {r['build']} | {pr.get('searched_us', float('nan')):.1f} / "
              f"{r['searched_us']:.1f} | {pr.get('torch_eager_us', float('nan')):.1f} / {r['torch_eager_us']:.1f} | "
              f"{r['torch_eager_nchw_us']:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
