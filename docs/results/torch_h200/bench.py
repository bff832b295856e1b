"""Five networks converted by megasim.torch, against torch fp32 (TF32 off): end-to-end forward time.

    python docs/results/torch_h200/bench.py OUT [--networks resnet18,...] [--batches 1,16,64] [--reps 20]
        [--workers N] [--prepare-only] [--compile] [--no-layers] [--settle]

ResNet-18, ResNet-34, ResNet-50 and VGG-16 on 224 x 224 images, the small UNet on 256 x 256 (`models.py`),
random weights, eval mode, no_grad. Per network and batch:

- end to end: the torch network (cudnn.benchmark on, TF32 off) and the converted one, each with NCHW
  input and with the network and input in channels_last; and the channels_last forward captured into a
  CUDA graph and replayed, which takes Python's per-layer launch cost out (it matters at batch 1);
- the eligible layers alone (the 3x3 stride-1 convolutions the megakernel runs, summed over the
  network's occurrences): torch's convolution (with bias), and megasim's Conv2d call with NCHW and with
  channels_last input; with NCHW, that call includes transposing x to NHWC and y back, whose cost
  alone is reported too (the same two copies, timed by themselves); `--no-layers` skips them;
- the relative L2 error of the converted network's output against torch's.

With `--compile`, instead: `torch.compile` of torch's network (both layouts) and of the converted one
(channels_last), end to end (OUT/torch_compile.json, .md).

Timing: CUDA events around each call, 3 warm-up calls, the median of `reps`; the four end-to-end variants
take turns call by call, each call waited for, so the host's slow spells fall on all of them. The first call
of each layer races its build against torch's convolution as eager calls (`megasim.app.torch.eager`), and
an eager call then runs the winner; with `--settle`, `megasim.torch.settle` then keeps those choices for the
network and input only if the whole forward is faster with them than with torch's convolutions. Each shape's
schedule is
the default `Schedules()`: the disk cache, else a simulator search of 16 evaluations (every build of
F(2x2) and F(4x4): fused in each mode or non-fused, each GEMM body), and torch's convolution where its
one-time measured time beats the chosen build's prediction; `--prepare-only` makes every schedule and
compiles every kernel in parallel (`megasim.torch.prepare`) and stops, so a later run times warm. Writes
OUT/torch_bench.json and OUT/torch_bench.md, rewritten after each row.
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
SIDES = {"resnet18": 224, "resnet34": 224, "resnet50": 224, "vgg16": 224, "unet": 256}  # input image side
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


def paired_ms(fns: dict, reps: int) -> dict:
    """`median_ms` of every function in `fns`, their calls interleaved rep by rep, so a slow spell of the host
    (batch 1 is host-bound) falls on all of them alike."""
    for fn in fns.values():
        for _ in range(WARMUP):
            fn()
    torch.cuda.synchronize()
    times = {key: [] for key in fns}
    for _ in range(reps):
        for key, fn in fns.items():
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            times[key].append(start.elapsed_time(end))
    return {key: float(np.median(v)) for key, v in times.items()}


def rel(a, b) -> float:
    return ((a.double() - b.double()).norm() / b.double().norm()).item()


def build(models, names, batches):
    """Per network: the torch reference, its channels_last copy, and both converted; the inputs per (image
    side, batch)."""
    torch.manual_seed(0)
    nets = {}
    for name in names:
        make = {**models.NETWORKS, **models.MORE_NETWORKS}[name]
        ref = make().cuda().eval()
        ref_cl = copy.deepcopy(ref).to(memory_format=torch.channels_last)
        conv, conv_cl = copy.deepcopy(ref), copy.deepcopy(ref_cl)
        report = mtorch.convert(conv)
        mtorch.convert(conv_cl)
        nets[name] = {"torch": ref, "torch-cl": ref_cl, "megasim": conv, "megasim-cl": conv_cl, "report": report}
    inputs = {(side, b): torch.randn(b, 3, side, side, device="cuda") for side in {SIDES[n] for n in names}
              for b in batches}
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


def bench_one(net: dict, x, reps: int, layers: bool = True, settle: bool = False) -> dict:
    x_cl = x.contiguous(memory_format=torch.channels_last)
    inputs = {"torch": x, "torch-cl": x_cl, "megasim": x, "megasim-cl": x_cl}
    settled = {key: mtorch.settle(net[key], inputs[key]) for key in ("megasim", "megasim-cl")} if settle else {}
    end_to_end = paired_ms({key: (lambda k=key: net[k](inputs[k])) for key in inputs}, reps)
    graphs = {key: graph_ms(net[key], inputs[key], reps) for key in ("torch-cl", "megasim-cl")}
    want = net["torch"](x)
    errors = {key: rel(net[key](inputs[key]), want) for key in ("megasim", "megasim-cl")}
    return {"end_to_end_ms": end_to_end, "cuda_graph_ms": graphs, "rel_err": errors, "settled": settled,
            "eligible": layer_times(eligible_calls(net["megasim"], x), reps) if layers else None}


def schedules_used() -> dict:
    return {"x".join(map(str, p.schedule.shape)): p.schedule.describe() for p in plans.built()}


def _ms(v) -> str:
    return f"{v:.2f}" if isinstance(v, float) else "failed"


def _kept(row: dict) -> str:
    settled = row.get("settled") or {}
    return " / ".join(settled[k]["kept"] if k in settled else "-" for k in ("megasim", "megasim-cl"))


def markdown(doc: dict) -> str:
    head = ["| network | batch | torch NCHW | torch CL | megasim NCHW | megasim CL | megasim / torch, best layout of "
            "each | CUDA graph: torch CL | megasim CL | megasim / torch | eligible layers: torch, best layout | "
            "megasim CL | rel. error | settle kept, NCHW / CL |", "|" + "---|" * 14]
    for r in doc["results"]:
        e, s, g = r["end_to_end_ms"], r["eligible"], r["cuda_graph_ms"]
        ratio = min(e["megasim"], e["megasim-cl"]) / min(e["torch"], e["torch-cl"])
        both = all(isinstance(g[k], float) for k in ("torch-cl", "megasim-cl"))
        graph_ratio = f"{g['megasim-cl'] / g['torch-cl']:.2f}" if both else "-"
        layers = (f"{min(s['sum_ms']['torch'], s['sum_ms']['torch-cl']):.2f} | {s['sum_ms']['megasim-cl']:.2f}"
                  if s else "- | -")
        head.append(f"| {r['network']} | {r['batch']} | {e['torch']:.2f} | {e['torch-cl']:.2f} | {e['megasim']:.2f} | "
                    f"{e['megasim-cl']:.2f} | {ratio:.2f} | {_ms(g['torch-cl'])} | {_ms(g['megasim-cl'])} | "
                    f"{graph_ratio} | {layers} | {r['rel_err']['megasim']:.1e} | {_kept(r)} |")
    return "\n".join(head) + "\n\nTimes in ms (median of CUDA-event-timed calls); CL = channels_last; CUDA graph = " \
        "the channels_last forward captured once and replayed (no Python launch cost); eligible layers = the " \
        "3x3 stride-1 convolutions, each called alone, summed.\n"


def compiled_ms(net: dict, x, reps: int) -> dict:
    """End-to-end time of `torch.compile` (inductor, default mode) of torch's network in both layouts and of
    megasim's in channels_last; the compile itself is not timed."""
    x_cl = x.contiguous(memory_format=torch.channels_last)
    out = {}
    for key, inp in (("torch", x), ("torch-cl", x_cl), ("megasim-cl", x_cl)):
        try:
            fn = torch.compile(net[key])
            start = time.perf_counter()
            fn(inp)
            torch.cuda.synchronize()
            out[key] = median_ms(lambda: fn(inp), reps)
            out[key + " compile_s"] = round(time.perf_counter() - start, 1)
        except Exception as exc:  # a failed compile is a result to report, not a reason to stop
            out[key] = {"error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"}
    torch._dynamo.reset()
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out")
    p.add_argument("--networks", default="resnet18,resnet34,resnet50,vgg16,unet")
    p.add_argument("--batches", default="1,16,64")
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--workers", type=int)
    p.add_argument("--prepare-only", action="store_true")
    p.add_argument("--compile", action="store_true", help="time torch.compile of each network instead")
    p.add_argument("--no-layers", action="store_true", help="skip the eligible layers' own timings")
    p.add_argument("--settle", action="store_true", help="settle each converted network on its input first")
    args = p.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    batches = [int(b) for b in args.batches.split(",")]
    names = args.networks.split(",")
    models = _models()
    t0 = time.perf_counter()
    with torch.no_grad():
        nets, inputs = build(models, names, batches)
        prepared = {"shapes": {}, "failed": {}, "seconds": {}}
        for key, fmt in (("megasim", torch.contiguous_format), ("megasim-cl", torch.channels_last)):
            everything = models.Each(*(n[key] for n in nets.values()), sides=[SIDES[n] for n in names])
            made = mtorch.prepare(everything, *(x.contiguous(memory_format=fmt) for x in inputs.values()),
                                  workers=args.workers)  # each layout's builds: NCHW, then NHWC
            for field in prepared:
                prepared[field].update({f"{key} {k}" if field == "seconds" else k: v for k, v in made[field].items()})
        print(f"[prepare] {len(prepared['shapes'])} shapes, failed {prepared['failed']}, {prepared['seconds']}",
              flush=True)
        if args.prepare_only:
            (out / "torch_prepare.json").write_text(json.dumps(prepared, indent=1))
            return 0
        results = []
        stem = "torch_compile" if args.compile else "torch_bench"
        for name, net in nets.items():
            for b in batches:
                x = inputs[(SIDES[name], b)]
                if args.compile:
                    row = {"network": name, "batch": b, "compiled_ms": compiled_ms(net, x, args.reps)}
                else:
                    row = {"network": name, "batch": b, **bench_one(net, x, args.reps, not args.no_layers, args.settle)}
                results.append(row)
                print(f"[bench] {name} batch {b}: {json.dumps(row.get('compiled_ms') or row['end_to_end_ms'])}",
                      flush=True)
                doc = {"header": header(), "prepare": prepared, "schedules": schedules_used(), "results": results,
                       "converted": {n: nets[n]["report"].to_dict() for n in nets},
                       "seconds": time.perf_counter() - t0}
                (out / f"{stem}.json").write_text(json.dumps(doc, indent=1))  # a run cut short keeps its rows
    text = compile_markdown(doc) if args.compile else markdown(doc)
    (out / f"{stem}.md").write_text(text)
    print(text)
    return 0


def compile_markdown(doc: dict) -> str:
    head = ["| network | batch | torch NCHW | torch CL | megasim CL | megasim / torch, best of torch's layouts |",
            "|---|---|---|---|---|---|"]
    for r in doc["results"]:
        c = r["compiled_ms"]
        cell = [f"{c[k]:.2f}" if isinstance(c.get(k), float) else "failed" for k in ("torch", "torch-cl", "megasim-cl")]
        theirs = [c[k] for k in ("torch", "torch-cl") if isinstance(c.get(k), float)]
        ratio = f"{c['megasim-cl'] / min(theirs):.2f}" if theirs and isinstance(c.get("megasim-cl"), float) else "-"
        head.append(f"| {r['network']} | {r['batch']} | " + " | ".join(cell) + f" | {ratio} |")
    return "\n".join(head) + "\n\nTimes in ms: `torch.compile` (inductor, default mode), CUDA events, median.\n"


def header() -> dict:
    from megasim.gpu.backend import measurement_header
    return {**measurement_header(), "torch": torch.__version__, "cudnn": torch.backends.cudnn.version(),
            "tf32": False, "cudnn_benchmark": True, "image": SIDES, "warmup": WARMUP}


if __name__ == "__main__":
    sys.exit(main())
