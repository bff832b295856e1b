"""ResNet-18 and VGG-16, converted by megasim.torch, against torch fp32 (TF32 off): end-to-end forward time.

    python docs/results/torch_h200/bench.py OUT [--batches 1,16,64] [--reps 20] [--workers N] [--prepare-only]

Per network and batch (224 x 224 images, random weights, eval mode, no_grad):

- end to end: the torch network (cudnn.benchmark on, TF32 off) and the converted one, each with NCHW
  input and with the network and input in channels_last; and the channels_last forward captured into a
  CUDA graph and replayed, which takes Python's per-layer launch cost out (it matters at batch 1);
- the eligible layers alone (the 3x3 stride-1 convolutions the megakernel runs, summed over the
  network's occurrences): torch's convolution (with bias), and megasim's Conv2d call with NCHW and with
  channels_last input; with NCHW, that call includes transposing x to NHWC and y back, whose cost
  alone is reported too (the same two copies, timed by themselves);
- the relative L2 error of the converted network's output against torch's.

Timing: CUDA events around each call, 3 warm-up calls, the median of `reps`. Each shape's schedule is
the default `Schedules()`: the disk cache, else a simulator search of 16 evaluations (every build of
F(2x2) and F(4x4): fused in each mode or non-fused, each GEMM body), and torch's convolution where its
one-time measured time beats the chosen build's prediction; `--prepare-only` makes every schedule and
compiles every kernel in parallel (`megasim.torch.prepare`) and stops, so a later run times warm. Writes
OUT/torch_bench.json and OUT/torch_bench.md.
"""
import argparse
import copy
import importlib.util
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

import megasim.torch as mtorch
from megasim.app.torch import plans

HERE = Path(__file__).resolve().parent
IMAGE = 224
WARMUP = 3


def _models():
    spec = importlib.util.spec_from_file_location("torch_h200_models", HERE / "models.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def median_ms(fn, reps: int) -> float:
    for _ in range(WARMUP):
        fn()
    torch.cuda.synchronize()
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(reps)]
    for start, end in events:
        start.record()
        fn()
        end.record()
    torch.cuda.synchronize()
    return float(np.median([s.elapsed_time(e) for s, e in events]))


def rel(a, b) -> float:
    return ((a.double() - b.double()).norm() / b.double().norm()).item()


def build(models, batches):
    """Per network: the torch reference, its channels_last copy, and both converted; the inputs per batch."""
    torch.manual_seed(0)
    nets = {}
    for name, make in models.NETWORKS.items():
        ref = make().cuda().eval()
        ref_cl = copy.deepcopy(ref).to(memory_format=torch.channels_last)
        conv, conv_cl = copy.deepcopy(ref), copy.deepcopy(ref_cl)
        report = mtorch.convert(conv)
        mtorch.convert(conv_cl)
        nets[name] = {"torch": ref, "torch-cl": ref_cl, "megasim": conv, "megasim-cl": conv_cl, "report": report}
    inputs = {b: torch.randn(b, 3, IMAGE, IMAGE, device="cuda") for b in batches}
    return nets, inputs


def eligible_calls(net, x) -> list[tuple]:
    """(name, megasim layer, its input) of every megasim layer call in one forward of `net`."""
    calls, hooks = [], []
    for name, m in net.named_modules():
        if isinstance(m, mtorch.Conv2d):
            hooks.append(m.register_forward_pre_hook(lambda mod, args, n=name: calls.append((n, mod, args[0]))))
    try:
        net(x)
    finally:
        for h in hooks:
            h.remove()
    return calls


def layer_times(calls, reps: int) -> dict:
    """Summed over the calls: torch's convolution and megasim's (NCHW, channels_last), and the two
    layout copies an NCHW call makes."""
    sums = {"torch": 0.0, "torch-cl": 0.0, "megasim": 0.0, "megasim-cl": 0.0, "layout": 0.0}
    rows = []
    for name, layer, x in calls:
        x_cl = x.contiguous(memory_format=torch.channels_last)
        w_cl = layer.weight.contiguous(memory_format=torch.channels_last)
        n, _, h, w = x.shape
        y_nhwc = torch.empty(n, h, w, layer.out_channels, device="cuda")
        row = {"layer": name, "input": list(x.shape), "k": layer.out_channels,
               "torch": median_ms(lambda: F.conv2d(x, layer.weight, layer.bias, padding=1), reps),
               "torch-cl": median_ms(lambda: F.conv2d(x_cl, w_cl, layer.bias, padding=1), reps),
               "megasim": median_ms(lambda: layer(x), reps),
               "megasim-cl": median_ms(lambda: layer(x_cl), reps),
               "layout": median_ms(lambda: x.permute(0, 2, 3, 1).contiguous(), reps)
               + median_ms(lambda: y_nhwc.permute(0, 3, 1, 2).contiguous(), reps)}
        rows.append(row)
        for key in sums:
            sums[key] += row[key]
    return {"sum_ms": sums, "layers": rows}


def graph_ms(net, x, reps: int):
    """The forward captured once into a CUDA graph and replayed: the GPU time without Python's launch cost."""
    static = x.clone()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    try:
        with torch.cuda.stream(side):
            for _ in range(WARMUP):
                net(static)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            net(static)
        ms = median_ms(graph.replay, reps)
    except RuntimeError as exc:
        return {"error": str(exc).splitlines()[0]}
    del graph
    torch.cuda.empty_cache()
    return ms


def bench_one(net: dict, x, reps: int) -> dict:
    x_cl = x.contiguous(memory_format=torch.channels_last)
    inputs = {"torch": x, "torch-cl": x_cl, "megasim": x, "megasim-cl": x_cl}
    end_to_end = {key: median_ms(lambda: net[key](inputs[key]), reps) for key in inputs}
    graphs = {key: graph_ms(net[key], inputs[key], reps) for key in ("torch-cl", "megasim-cl")}
    want = net["torch"](x)
    errors = {key: rel(net[key](inputs[key]), want) for key in ("megasim", "megasim-cl")}
    return {"end_to_end_ms": end_to_end, "cuda_graph_ms": graphs, "rel_err": errors,
            "eligible": layer_times(eligible_calls(net["megasim"], x), reps)}


def schedules_used() -> dict:
    return {"x".join(map(str, p.schedule.shape)): p.schedule.describe() for p in plans.built()}


def markdown(doc: dict) -> str:
    head = ["| network | batch | torch NCHW | torch CL | megasim NCHW | megasim CL | megasim / torch, best layout of "
            "each | CUDA graph: torch CL | megasim CL | eligible: torch NCHW | torch CL | megasim NCHW | megasim CL | "
            "layout copies | rel. error |", "|" + "---|" * 15]
    for r in doc["results"]:
        e, s, g = r["end_to_end_ms"], r["eligible"]["sum_ms"], r["cuda_graph_ms"]
        ratio = min(e["megasim"], e["megasim-cl"]) / min(e["torch"], e["torch-cl"])
        graphs = " | ".join(f"{v:.2f}" if isinstance(v, float) else "failed" for v in (g["torch-cl"], g["megasim-cl"]))
        head.append(f"| {r['network']} | {r['batch']} | {e['torch']:.2f} | {e['torch-cl']:.2f} | {e['megasim']:.2f} | "
                    f"{e['megasim-cl']:.2f} | {ratio:.2f} | {graphs} | {s['torch']:.2f} | {s['torch-cl']:.2f} | "
                    f"{s['megasim']:.2f} | {s['megasim-cl']:.2f} | {s['layout']:.2f} | {r['rel_err']['megasim']:.1e} |")
    return "\n".join(head) + "\n\nTimes in ms (median of CUDA-event-timed calls); CL = channels_last; CUDA graph = " \
        "the channels_last forward captured once and replayed (no Python launch cost); eligible = the 13 3x3 " \
        "stride-1 convolutions, each called alone, summed; layout copies = NCHW->NHWC of x plus NHWC->NCHW of y, " \
        "summed.\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out")
    p.add_argument("--batches", default="1,16,64")
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--workers", type=int)
    p.add_argument("--prepare-only", action="store_true")
    args = p.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    batches = [int(b) for b in args.batches.split(",")]
    models = _models()
    t0 = time.perf_counter()
    with torch.no_grad():
        nets, inputs = build(models, batches)
        everything = models.Each(*(n["megasim"] for n in nets.values()))
        prepared = mtorch.prepare(everything, *inputs.values(), workers=args.workers)
        print(f"[prepare] {len(prepared['shapes'])} shapes, failed {prepared['failed']}, {prepared['seconds']}",
              flush=True)
        if args.prepare_only:
            (out / "torch_prepare.json").write_text(json.dumps(prepared, indent=1))
            return 0
        results = []
        for name, net in nets.items():
            for b, x in inputs.items():
                results.append({"network": name, "batch": b, **bench_one(net, x, args.reps)})
                e = results[-1]["end_to_end_ms"]
                print(f"[bench] {name} batch {b}: " + ", ".join(f"{k} {v:.2f} ms" for k, v in e.items()), flush=True)
    doc = {"header": header(), "prepare": prepared, "schedules": schedules_used(), "results": results,
           "converted": {n: net["report"].to_dict() for n, net in nets.items()}, "seconds": time.perf_counter() - t0}
    (out / "torch_bench.json").write_text(json.dumps(doc, indent=1))
    (out / "torch_bench.md").write_text(markdown(doc))
    print(markdown(doc))
    return 0


def header() -> dict:
    from megasim.gpu.backend import measurement_header
    return {**measurement_header(), "torch": torch.__version__, "cudnn": torch.backends.cudnn.version(),
            "tf32": False, "cudnn_benchmark": True, "image": IMAGE, "warmup": WARMUP}


if __name__ == "__main__":
    sys.exit(main())
