"""GEMM v2 study: the Winograd GEMM stage alone, current kernel vs v2 variants vs cuBLAS (README.md here).

usage (device, after `bash .ci/gpu --collect-only -q >/dev/null 2>&1; export PYTHONPATH=/tmp/site`):
    python3 docs/results/gemm_v2_h200/gemm_study.py run OUT.json [LAYERS]     # build, check, time; table last
    python3 docs/results/gemm_v2_h200/gemm_study.py ncu LAYER VARIANT          # launch one kernel 4x for ncu
    python3 docs/results/gemm_v2_h200/gemm_study.py local [LAYERS]            # here: nvcc -Xptxas -v + SASS mix
    python3 docs/results/gemm_v2_h200/gemm_study.py summary OUT.json           # the table again
GEMM_SET=run1|run2|run3 (default run3) picks the variant list of each device run.

M[e][tile][k] = sum_c V[e][tile][c] * U[e][c][k], e over the 36 points of F(4x4), N = 64; random V, U of the
layer's real sizes; M poisoned with NaN before each checked run; every v2 output must equal the current
kernel's bit for bit; max relative error vs a float64 product (cupy float64 matmul of the upcast inputs).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import traceback
from pathlib import Path

os.environ["CUPY_TF32"] = "0"  # CuPy's float32 matmul must not take the TF32 path
HERE = Path(__file__).resolve().parent

from megasim.app.catalog import load_layer, partition_for  # noqa: E402
from megasim.contract.graph import Geometry  # noqa: E402
from megasim.contract.problem import Partition, WinogradVariant  # noqa: E402
from megasim.gpu.backend import COMPILE_OPTIONS, KERNEL_DIR, KernelConfig, config_header  # noqa: E402

LAYERS = ["ResNet-2", "ResNet-3", "ResNet-4", "VGG-2"]
VAR = WinogradVariant(4)


def part(layer, t=None, k=None, nt=None):
    base = partition_for(layer, "h200")
    d = base.to_dict()
    if t: d["tiles_per_group"] = t
    if k: d["gemm_k_per_task"] = k
    if nt: d["threads"] = nt
    return Partition.from_dict(d)


# (name, partition overrides (tiles, k, threads) or None = the h200.toml partition, v2 macros or None = current)
def variants_run1(layer):
    """The first device run's set (run1/): VT vs ring, tile shapes, occupancy caps."""
    L = layer.name
    out = [("cur", None, None)]
    vt16 = {"V2_VT": 1, "V2_BK": 16}
    ring = {"V2_VT": 0, "V2_BK": 16, "V2_STAGES": 3}
    if L == "ResNet-2":
        out += [("cur_t128k128n256", (128, 128, 256), None),
                ("v2vt_t64k128n128", (64, 128, 128), vt16),
                ("v2vt_t64k128n128_bk32", (64, 128, 128), {"V2_VT": 1, "V2_BK": 32}),
                ("v2vt_t64k128n128_mb4", (64, 128, 128), {**vt16, "V2_MIN_BLOCKS": 4}),
                ("v2ring_t64k128n128", (64, 128, 128), ring),
                ("v2vt_t128k128n256", (128, 128, 256), {**vt16, "V2_MIN_BLOCKS": 2}),
                ("v2vt_t64k64n64", (64, 64, 64), {**vt16, "V2_MIN_BLOCKS": 6}),
                ("v2vt_t64k64n64_mb7", (64, 64, 64), {**vt16, "V2_MIN_BLOCKS": 7}),
                ("v2vt_t32k128n64", (32, 128, 64), {**vt16, "V2_MIN_BLOCKS": 6}),
                ("v2vt_t64k128n128_occ2", (64, 128, 128), {**vt16, "_OCC": 2})]
    elif L == "ResNet-3":
        out += [("cur_t64k128n128", (64, 128, 128), None),
                ("v2vt_t64k128n128", (64, 128, 128), vt16),
                ("v2vt_t64k128n128_bk32", (64, 128, 128), {"V2_VT": 1, "V2_BK": 32}),
                ("v2ring_t64k128n128", (64, 128, 128), ring),
                ("v2vt_t64k64n64", (64, 64, 64), {**vt16, "V2_MIN_BLOCKS": 6}),
                ("v2vt84_t64k64n128", (64, 64, 128), {**vt16, "V2_TN": 4}),
                ("v2vt_t128k128n256", (128, 128, 256), {**vt16, "V2_MIN_BLOCKS": 2})]
    elif L == "ResNet-4":
        out += [("cur_t64k64n128", (64, 64, 128), None),
                ("v2vt_t64k128n128", (64, 128, 128), vt16),
                ("v2vt_t64k128n128_bk32", (64, 128, 128), {"V2_VT": 1, "V2_BK": 32}),
                ("v2vt_t64k64n64", (64, 64, 64), {**vt16, "V2_MIN_BLOCKS": 6}),
                ("v2vt_t64k64n64_bk32", (64, 64, 64), {"V2_VT": 1, "V2_BK": 32, "V2_MIN_BLOCKS": 6}),
                ("v2vt84_t64k64n128", (64, 64, 128), {**vt16, "V2_TN": 4}),
                ("v2vt84_t64k64n128_bk32", (64, 64, 128), {"V2_VT": 1, "V2_BK": 32, "V2_TN": 4}),
                ("v2vt_t32k128n64", (32, 128, 64), {**vt16, "V2_MIN_BLOCKS": 6}),
                ("cur_t64k64n128_occ3", (64, 64, 128), {"_CUR": 1, "_OCC": 3}),
                ("v2vt84_t64k64n128_occ3", (64, 64, 128), {**vt16, "V2_TN": 4, "_OCC": 3}),
                ("v2vt84_t64k64n128_bk32_occ3", (64, 64, 128), {"V2_VT": 1, "V2_BK": 32, "V2_TN": 4, "_OCC": 3})]
    elif L == "VGG-2":
        out += [("v2vt_t64k128n128", (64, 128, 128), vt16),
                ("v2vt_t64k128n128_bk32", (64, 128, 128), {"V2_VT": 1, "V2_BK": 32}),
                ("v2vt_t128k128n256", (128, 128, 256), {**vt16, "V2_MIN_BLOCKS": 2})]
    return out


def variants_run2(layer):
    L = layer.name
    out = [("cur", None, None)]
    vt16 = {"V2_VT": 1, "V2_BK": 16}
    ring = {"V2_VT": 0, "V2_BK": 16, "V2_STAGES": 3}
    pf = {**ring, "V2_PF": 1}
    ring32 = {"V2_VT": 0, "V2_BK": 32, "V2_STAGES": 2, "V2_DYN": 1}
    ring_s4 = {**ring, "V2_STAGES": 4, "V2_DYN": 1}
    if L == "ResNet-2":
        out += [("v2vt_t64k128n128", (64, 128, 128), vt16),
                ("v2vt_t32k128n64", (32, 128, 64), {**vt16, "V2_MIN_BLOCKS": 6}),
                ("v2ring_t64k128n128", (64, 128, 128), ring),
                ("v2ringpf_t64k128n128", (64, 128, 128), pf),
                ("v2ring32_t64k128n128", (64, 128, 128), ring32),
                ("v2ringpf32_t64k128n128", (64, 128, 128), {**ring32, "V2_PF": 1}),
                ("v2ring_s4_t64k128n128", (64, 128, 128), ring_s4),
                ("v2ring_t64k128n128_mb4", (64, 128, 128), {**ring, "V2_MIN_BLOCKS": 4}),
                ("v2ring_t32k128n64", (32, 128, 64), {**ring, "V2_MIN_BLOCKS": 6}),
                ("v2ringpf_t32k128n64", (32, 128, 64), {**pf, "V2_MIN_BLOCKS": 6})]
    elif L == "ResNet-3":
        out += [("cur_t64k128n128", (64, 128, 128), None),
                ("v2vt_t64k128n128", (64, 128, 128), vt16),
                ("v2ring_t64k128n128", (64, 128, 128), ring),
                ("v2ringpf_t64k128n128", (64, 128, 128), pf),
                ("v2ring32_t64k128n128", (64, 128, 128), ring32),
                ("v2ringpf32_t64k128n128", (64, 128, 128), {**ring32, "V2_PF": 1}),
                ("v2ring_s4_t64k128n128", (64, 128, 128), ring_s4),
                ("v2ring_t64k128n128_mb4", (64, 128, 128), {**ring, "V2_MIN_BLOCKS": 4})]
    elif L == "ResNet-4":
        out += [("v2vt_t64k128n128_bk32", (64, 128, 128), {"V2_VT": 1, "V2_BK": 32}),
                ("v2vt_t32k128n64", (32, 128, 64), {**vt16, "V2_MIN_BLOCKS": 6}),
                ("v2ring_t64k128n128", (64, 128, 128), ring),
                ("v2ringpf_t64k128n128", (64, 128, 128), pf),
                ("v2ring32_t64k128n128", (64, 128, 128), ring32),
                ("v2ring_t32k128n64", (32, 128, 64), {**ring, "V2_MIN_BLOCKS": 6}),
                ("v2ringpf_t32k128n64", (32, 128, 64), {**pf, "V2_MIN_BLOCKS": 6}),
                ("v2ring84_t32k64n64_occ6", (32, 64, 64), {**ring, "V2_TN": 4, "V2_MIN_BLOCKS": 6, "_OCC": 6}),
                ("v2ring84_t32k64n64_mb9", (32, 64, 64), {**ring, "V2_TN": 4, "V2_MIN_BLOCKS": 9}),
                ("v2ringpf84_t32k64n64_occ6", (32, 64, 64), {**pf, "V2_TN": 4, "V2_MIN_BLOCKS": 6, "_OCC": 6}),
                ("v2ring84_t64k64n128_occ3", (64, 64, 128), {**ring, "V2_TN": 4, "_OCC": 3})]
    elif L == "VGG-2":
        out += [("v2vt_t64k128n128_bk32", (64, 128, 128), {"V2_VT": 1, "V2_BK": 32}),
                ("v2ring_t64k128n128", (64, 128, 128), ring),
                ("v2ringpf_t64k128n128", (64, 128, 128), pf),
                ("v2ring32_t64k128n128", (64, 128, 128), ring32),
                ("v2ringpf32_t64k128n128", (64, 128, 128), {**ring32, "V2_PF": 1})]
    return out


def variants_run3(layer):
    """The third run's set (run3/): register double buffering of VT, FFMA order, against run 2's best."""
    L = layer.name
    out = [("cur", None, None)]
    ring = {"V2_VT": 0, "V2_BK": 16, "V2_STAGES": 3}
    pf = {**ring, "V2_PF": 1}
    vtpf = {"V2_VT": 1, "V2_BK": 16, "V2_PF": 1}
    if L in ("ResNet-2", "ResNet-3", "VGG-2"):
        out += [("v2ringpf_t64k128n128", (64, 128, 128), pf),
                ("v2ringpf_snake_t64k128n128", (64, 128, 128), {**pf, "V2_ORDER": 1}),
                ("v2ringpf_qmaj_t64k128n128", (64, 128, 128), {**pf, "V2_ORDER": 2}),
                ("v2vtpf_t64k128n128", (64, 128, 128), vtpf),
                ("v2vtpf_snake_t64k128n128", (64, 128, 128), {**vtpf, "V2_ORDER": 1}),
                ("v2vtpf_qmaj_t64k128n128", (64, 128, 128), {**vtpf, "V2_ORDER": 2})]
    if L == "ResNet-2":
        out += [("v2ringpf_t32k128n64", (32, 128, 64), {**pf, "V2_MIN_BLOCKS": 6}),
                ("v2ringpf_snake_t32k128n64", (32, 128, 64), {**pf, "V2_ORDER": 1, "V2_MIN_BLOCKS": 6}),
                ("v2vtpf_t32k128n64", (32, 128, 64), {**vtpf, "V2_MIN_BLOCKS": 6}),
                ("v2vtpf_snake_t32k128n64", (32, 128, 64), {**vtpf, "V2_ORDER": 1, "V2_MIN_BLOCKS": 6})]
    elif L == "ResNet-4":
        out += [("v2ringpf_t32k128n64", (32, 128, 64), {**pf, "V2_MIN_BLOCKS": 6}),
                ("v2ringpf_snake_t32k128n64", (32, 128, 64), {**pf, "V2_ORDER": 1, "V2_MIN_BLOCKS": 6}),
                ("v2vtpf_t32k128n64", (32, 128, 64), {**vtpf, "V2_MIN_BLOCKS": 6}),
                ("v2vtpf_snake_t32k128n64", (32, 128, 64), {**vtpf, "V2_ORDER": 1, "V2_MIN_BLOCKS": 6}),
                ("v2ring84_t32k64n64_occ6", (32, 64, 64), {**ring, "V2_TN": 4, "V2_MIN_BLOCKS": 6, "_OCC": 6}),
                ("v2ringpf84_snake_t32k64n64_occ6", (32, 64, 64), {**pf, "V2_TN": 4, "V2_ORDER": 1, "V2_MIN_BLOCKS": 6, "_OCC": 6}),
                ("v2vtpf84_t32k64n64_occ6", (32, 64, 64), {**vtpf, "V2_TN": 4, "V2_MIN_BLOCKS": 6, "_OCC": 6})]
    return out


def variants(layer):
    return {"run1": variants_run1, "run2": variants_run2, "run3": variants_run3}[os.environ.get("GEMM_SET", "run3")](layer)


def v2_smem_bytes(p, macros):
    """GemmV2::SMEM_FLOATS * 4 (gemm_v2.cuh) for a partition and the V2_* macros."""
    bm, bn, bk = p.tiles_per_group, p.gemm_k_per_task, macros.get("V2_BK", 16)
    vt = macros.get("V2_VT", 1)
    ns = 2 if vt else macros.get("V2_STAGES", 3)
    vstage = bk * bm if vt else bm * (bk + 4)
    return 4 * ns * (vstage + bk * bn)


def build_source(layer, ov, macros):
    p = part(layer, *ov) if ov else part(layer)
    cfg = KernelConfig(layer, VAR, p)
    head = config_header(cfg)
    if macros is None or macros.get("_CUR"):
        return p, head + (KERNEL_DIR / "nonfused.cu").read_text(), "ms_gemm_kernel"
    defs = "".join(f"#define {k} {v}\n" for k, v in macros.items() if not k.startswith("_"))
    return p, head + defs + (HERE / "gemm_v2.cuh").read_text(), "ms_gemm_v2_kernel"


def options():
    return COMPILE_OPTIONS + (f"-I{KERNEL_DIR}",)


# ----------------------------------------------------------------------------------------------- local
def local(names):
    """nvcc here: registers, spills, shared memory and the SASS instruction mix of every build."""
    import re
    cuobj = os.environ.get("CUOBJDUMP", "cuobjdump")
    tmp = Path(os.environ.get("TMPDIR", "/tmp")) / "gemm_v2_local"
    tmp.mkdir(exist_ok=True)
    for L in names:
        layer = load_layer(L)
        for name, ov, macros in variants(layer):
            try:
                p, src, fn = build_source(layer, ov, macros)
            except Exception as e:  # noqa: BLE001
                print(f"{L:9} {name:26} SOURCE ERROR {e}")
                continue
            cu = tmp / f"{L}_{name}.cu"
            cu.write_text(src)
            cub = cu.with_suffix(".cubin")
            r = subprocess.run(["nvcc", "-arch=sm_90", *options(), "-cubin", "-Xptxas", "-v", "-o", str(cub), str(cu)],
                               capture_output=True, text=True)
            log = r.stderr
            if r.returncode:
                print(f"{L:9} {name:26} COMPILE ERROR\n{log[-3000:]}")
                continue
            m = re.search(rf"Function properties for {fn}\n\s+(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads\n"
                          rf"ptxas info\s+: Used (\d+) registers[^\n]*?(?:(\d+) bytes smem)?[^\n]*\n", log)
            regs = m.group(4) if m else "?"
            sm = re.search(rf"Compiling entry function '{fn}'.*?(\d+) bytes smem", log, re.S)
            sass = subprocess.run([cuobj, "-sass", "-fun", fn, str(cub)], capture_output=True, text=True).stdout
            ops = re.findall(r"/\*[0-9a-f]{4,5}\*/\s+(?:@!?U?P[T0-9]\s+)?([A-Z][A-Z0-9_.]*)", sass)
            cnt = {k: sum(1 for o in ops if o.startswith(k)) for k in ("FFMA", "LDS", "LDG", "STS", "BAR", "LDGSTS", "STG")}
            print(f"{L:9} {name:26} t{p.tiles_per_group}k{p.gemm_k_per_task}n{p.threads} regs {regs:>3} "
                  f"stack/spill {m.group(1) if m else '?'}/{m.group(2) if m else '?'} smem {sm.group(1) if sm else 0} | "
                  f"SASS {len(ops)} instr: " + " ".join(f"{k} {v}" for k, v in cnt.items()), flush=True)


# ----------------------------------------------------------------------------------------------- device
def _compile_one(args):
    L, name = args
    import cupy as cp
    layer = load_layer(L)
    ov, macros = {n: (o, m) for n, o, m in variants(layer)}[name]
    try:
        _, src, fn = build_source(layer, ov, macros)
        mod = cp.RawModule(code=src, options=options())
        mod.compile()
        return None
    except Exception as e:  # noqa: BLE001
        return f"{L} {name}: {type(e).__name__}: {str(e)[-2000:]}"


def get_kernel(layer, name):
    import cupy as cp
    ov, macros = {n: (o, m) for n, o, m in variants(layer)}[name]
    p, src, fn = build_source(layer, ov, macros)
    mod = cp.RawModule(code=src, options=options())
    k = mod.get_function(fn)
    geo = Geometry.of(layer, VAR, p)
    dyn = 0
    occ = (macros or {}).get("_OCC")
    if (macros or {}).get("V2_DYN"):  # the ring itself in dynamic shared memory
        dyn = v2_smem_bytes(p, macros)
        k.max_dynamic_shared_size_bytes = dyn
    elif occ:  # cap the blocks per SM at occ with unused dynamic shared memory (228 KiB per SM, 1 KiB per block reserved)
        dyn = (228 * 1024) // occ - 1024 - int(k.shared_size_bytes) - 256
        k.max_dynamic_shared_size_bytes = dyn
    return p, geo, k, dyn


def timeit(launch, nsets, reps, warm=5):
    import cupy as cp
    s = cp.cuda.get_current_stream()
    for i in range(warm):
        launch(i % nsets)
    ev = [(cp.cuda.Event(), cp.cuda.Event()) for _ in range(reps)]
    for i, (a, b) in enumerate(ev):
        a.record(s)
        launch((warm + i) % nsets)
        b.record(s)
    ev[-1][1].synchronize()
    ts = sorted(cp.cuda.get_elapsed_time(a, b) * 1e3 for a, b in ev)
    return {"median_us": ts[len(ts) // 2], "min_us": ts[0], "max_us": ts[-1], "reps": reps}


def shapes(layer):
    th, tw = VAR.tiles(layer)
    return 36, layer.n * th * tw, layer.c, layer.k


def run(out_path, names):
    import cupy as cp
    import numpy as np
    from megasim.gpu.backend import measurement_header
    t_start = time.time()
    jobs = [(L, n) for L in names for n, _, _ in variants(load_layer(L))]
    import multiprocessing as mp
    with mp.get_context("spawn").Pool(min(16, len(jobs))) as pool:
        errs = [e for e in pool.map(_compile_one, jobs) if e]
    print(f"precompiled {len(jobs)} builds in {time.time() - t_start:.0f}s; failures: {len(errs)}", flush=True)
    for e in errs:
        print("  BUILD FAILED:", e, flush=True)
    try:
        import torch
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        try:
            torch.backends.cuda.matmul.fp32_precision = "ieee"
        except Exception:  # noqa: BLE001
            pass
    except ImportError:
        torch = None
    head = measurement_header()
    head["cupy_tf32_env"] = os.environ.get("CUPY_TF32")
    head["torch"] = getattr(torch, "__version__", None)
    rows = []
    for L in names:
        layer = load_layer(L)
        a2, T, C, K = shapes(layer)
        flops = 2.0 * a2 * T * C * K
        set_bytes = 4 * a2 * (T * C + C * K + T * K)
        nsets = max(2, min(4, int(np.ceil(3 * 60e6 / set_bytes))))
        reps = 20 if T * C > 2e6 else 30
        rng = cp.random.default_rng(1234)
        Vs = [rng.standard_normal((a2, T, C), dtype=cp.float32) for _ in range(nsets)]
        Us = [rng.standard_normal((a2, C, K), dtype=cp.float32) for _ in range(nsets)]
        Ms = [cp.empty((a2, T, K), dtype=cp.float32) for _ in range(nsets)]
        ref = cp.matmul(Vs[0].astype(cp.float64), Us[0].astype(cp.float64))
        refmax = float(cp.abs(ref).max())
        print(f"== {L}: T={T} C={C} K={K}, {flops / 1e9:.2f} GFLOP, set {set_bytes / 1e6:.0f} MB x {nsets}, "
              f"reps {reps}", flush=True)

        def err_of(out):
            d = out.astype(cp.float64) - ref
            return {"max_rel_err": float(cp.abs(d).max()) / refmax,
                    "norm_rel_err": float(cp.linalg.norm(d.ravel()) / cp.linalg.norm(ref.ravel())),
                    "nan": int(cp.isnan(out).sum())}

        cur_outs = None
        # cuBLAS through CuPy (strided batched SGEMM, no TF32)
        try:
            out = cp.matmul(Vs[0], Us[0])
            r = {"layer": L, "kernel": "cublas_cupy", **err_of(out), "bitwise_vs_cur": None,
                 **timeit(lambda i: cp.matmul(Vs[i], Us[i], out=Ms[i]), nsets, reps)}
            r["bitwise_vs_cur_note"] = "not expected"
            del out
        except Exception as e:  # noqa: BLE001
            traceback.print_exc()
            r = {"layer": L, "kernel": "cublas_cupy", "error": repr(e), "median_us": float("nan"), "nan": 0,
                 "max_rel_err": float("nan"), "bitwise_vs_cur": None}
        rows.append(r)
        tV = tU = tM = None
        if torch is not None:
          try:
            tV = [torch.from_dlpack(v) for v in Vs]
            tU = [torch.from_dlpack(u) for u in Us]
            tM = [torch.from_dlpack(m) for m in Ms]
            o = torch.bmm(tV[0], tU[0])
            torch.cuda.synchronize()
            e = err_of(cp.from_dlpack(o))
            del o
            s = torch.cuda.current_stream()
            for i in range(5):
                torch.bmm(tV[i % nsets], tU[i % nsets], out=tM[i % nsets])
            evs = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(reps)]
            for i, (a, b) in enumerate(evs):
                a.record(s)
                torch.bmm(tV[(5 + i) % nsets], tU[(5 + i) % nsets], out=tM[(5 + i) % nsets])
                b.record(s)
            torch.cuda.synchronize()
            ts = sorted(a.elapsed_time(b) * 1e3 for a, b in evs)
            rows.append({"layer": L, "kernel": "torch_bmm", **e, "bitwise_vs_cur": None,
                         "median_us": ts[len(ts) // 2], "min_us": ts[0], "max_us": ts[-1], "reps": reps})
          except Exception:  # noqa: BLE001
            traceback.print_exc()
        for name, ov, macros in variants(layer):
            r = {"layer": L, "kernel": name, "macros": macros}
            try:
                p, geo, k, dyn = get_kernel(layer, name)
                r["dyn_smem"] = dyn
                r["partition"] = {"tiles_per_group": p.tiles_per_group, "gemm_k_per_task": p.gemm_k_per_task,
                                  "threads": p.threads, "gemm_mats_per_task": p.gemm_mats_per_task}
                grid, block = (geo.n_g * geo.s_g,), (p.threads,)
                r["blocks"] = grid[0]
                r["regs"] = int(k.num_regs)
                r["smem_static"] = int(k.shared_size_bytes)
                try:
                    r["max_blocks_per_sm"] = int(cp.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(k.ptr, p.threads, dyn))
                except Exception:  # noqa: BLE001
                    r["max_blocks_per_sm"] = None
                outs = []
                for i in range(2):  # fresh NaN poison each time; sets 0 and 1 (different random inputs)
                    Ms[i].fill(cp.nan)
                    k(grid, block, (Us[i], Vs[i], Ms[i]), shared_mem=dyn)
                    cp.cuda.get_current_stream().synchronize()
                    outs.append(Ms[i].copy())
                r.update(err_of(outs[0]))
                r["nan"] += int(cp.isnan(outs[1]).sum())
                if name == "cur":
                    cur_outs = outs
                    r["bitwise_vs_cur"] = True
                elif cur_outs is not None:
                    r["mismatches_vs_cur"] = int((outs[0] != cur_outs[0]).sum()) + int((outs[1] != cur_outs[1]).sum())
                    r["bitwise_vs_cur"] = r["mismatches_vs_cur"] == 0
                del outs
                r.update(timeit(lambda i: k(grid, block, (Us[i], Vs[i], Ms[i]), shared_mem=dyn), nsets, reps))
                r["median2_us"] = timeit(lambda i: k(grid, block, (Us[i], Vs[i], Ms[i]), shared_mem=dyn), nsets, reps)["median_us"]
            except Exception as e:  # noqa: BLE001
                r["error"] = f"{type(e).__name__}: {str(e)[-1500:]}"
            rows.append(r)
        cub = next(x for x in rows if x["layer"] == L and x["kernel"] == "cublas_cupy")["median_us"]
        for x in rows:
            if x["layer"] == L and "median_us" in x:
                x["tflops"] = flops / x["median_us"] / 1e6
                x["speed_vs_cublas"] = cub / x["median_us"]
                x["gflop"] = flops / 1e9
            if x["layer"] == L:
                print(f"  {x['kernel']:26} " + (f"{x['median_us']:8.1f} us {x['tflops']:5.1f} TF x{x['speed_vs_cublas']:.2f} "
                      f"err {x['max_rel_err']:.1e} nan {x['nan']} bit {x['bitwise_vs_cur']} regs {x.get('regs')} "
                      f"blk/SM {x.get('max_blocks_per_sm')} grid {x.get('blocks')} 2nd {x.get('median2_us', 0):.1f}"
                      if "median_us" in x else f"ERROR {x.get('error', '')[:300]}"), flush=True)
        del Vs, Us, Ms, ref, cur_outs
        tV = tU = tM = None
        cp.get_default_memory_pool().free_all_blocks()
    best = {}
    for x in rows:
        ok = "median_us" in x and x["nan"] == 0 and x["kernel"].startswith("v2") and x["bitwise_vs_cur"]
        if ok and (x["layer"] not in best or x["median_us"] < best[x["layer"]]["median_us"]):
            best[x["layer"]] = x
    data = {"header": head, "rows": rows, "best_v2": {k: v["kernel"] for k, v in best.items()},
            "wall_s": time.time() - t_start}
    with open(out_path, "w") as f:
        json.dump(data, f, indent=1)
    print_table(data)


def print_table(data):
    head, rows = data["header"], data["rows"]
    print(f"\n== table ({head['device']}, driver {head.get('driver')}, {head['date_utc']}); "
          f"TF = 2*36*T*C*K / median; 'vs cuBLAS' = cuBLAS(CuPy) time / this time")
    print(f"{'layer':9} {'kernel':26} {'us':>8} {'TF/s':>6} {'vs cuBLAS':>9} {'bitwise':>7} {'max rel err':>11} {'regs':>4} {'grid':>6}")
    for x in rows:
        if "median_us" in x:
            print(f"{x['layer']:9} {x['kernel']:26} {x['median_us']:8.1f} {x['tflops']:6.1f} {x['speed_vs_cublas']:9.2f} "
                  f"{str(x['bitwise_vs_cur']):>7} {x['max_rel_err']:11.1e} {str(x.get('regs', '')):>4} {str(x.get('blocks', '')):>6}")
        else:
            print(f"{x['layer']:9} {x['kernel']:26} ERROR {x.get('error', '')[:200]}")
    print("best v2 per layer:", data["best_v2"])


def ncu_driver(L, name):
    """Launch one kernel 4 times on random data (ncu profiles the third)."""
    import cupy as cp
    layer = load_layer(L)
    a2, T, C, K = shapes(layer)
    p, geo, k, dyn = get_kernel(layer, name)
    rng = cp.random.default_rng(7)
    V = rng.standard_normal((a2, T, C), dtype=cp.float32)
    U = rng.standard_normal((a2, C, K), dtype=cp.float32)
    M = cp.empty((a2, T, K), dtype=cp.float32)
    for _ in range(4):
        k((geo.n_g * geo.s_g,), (p.threads,), (U, V, M), shared_mem=dyn)
    cp.cuda.get_current_stream().synchronize()
    print(f"ncu driver: {L} {name} grid {geo.n_g * geo.s_g} block {p.threads} regs {k.num_regs}")


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "run":
        run(sys.argv[2], sys.argv[3].split(",") if len(sys.argv) > 3 else LAYERS)
    elif mode == "ncu":
        ncu_driver(sys.argv[2], sys.argv[3])
    elif mode == "best":  # print the best v2 variant of a layer from a run's JSON
        print(json.load(open(sys.argv[2]))["best_v2"].get(sys.argv[3], "v2vt_t64k128n128"))
    elif mode == "summary":
        print_table(json.load(open(sys.argv[2])))
    elif mode == "local":
        local(sys.argv[2].split(",") if len(sys.argv) > 2 else LAYERS)
