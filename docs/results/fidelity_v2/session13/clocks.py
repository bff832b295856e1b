"""The SM clock and board power while the megakernel runs back to back, against the non-fused input kernel alone
and the non-fused GEMM kernel alone (ResNet-1 under D_IG = 128; nvidia-smi sampled every 20 ms).

    python3 docs/results/fidelity_v2/session13/clocks.py OUT_DIR      (on an H200)
"""
import json
import subprocess
import sys
import time
from pathlib import Path

import cupy as cp
import numpy as np

from megasim.app.calibrate.trace_law import graph_of, load_sample
from megasim.contract.mapping import make
from megasim.gpu.megakernel import FusedConv, Workspace
from megasim.gpu.nonfused import NonFusedConv


def sampled(run, seconds=3.0):
    smi = subprocess.Popen(["nvidia-smi", "--query-gpu=clocks.sm,power.draw", "--format=csv,noheader,nounits",
                            "-lms", "20"], stdout=subprocess.PIPE, text=True)
    end = time.time() + seconds
    launches = 0
    while time.time() < end:
        for _ in range(20):
            run()
        launches += 20
        cp.cuda.Device().synchronize()
    smi.terminate()
    rows = [list(map(float, line.split(","))) for line in smi.communicate()[0].splitlines() if "," in line]
    a = np.array(rows[len(rows) // 4:])
    return {"sm_mhz_median": float(np.median(a[:, 0])), "sm_mhz_min": float(a[:, 0].min()),
            "power_w_median": float(np.median(a[:, 1])), "samples": len(a), "launches": launches}


def main(out: Path):
    out.mkdir(parents=True, exist_ok=True)
    meta, _ = load_sample("scenarios/calibrations/raw/h200_trace_sample.npz")
    g = graph_of(meta["ResNet-1-dig128"])
    rng = np.random.default_rng(0)
    x = cp.asarray(rng.standard_normal(g.layer.n * g.layer.h * g.layer.w * g.layer.c, dtype=np.float32))
    w = cp.asarray(rng.standard_normal(g.layer.k * g.layer.c * 9, dtype=np.float32))
    y = cp.zeros(g.layer.n * g.layer.k * g.layer.h * g.layer.w, dtype=cp.float32)
    ws = Workspace(g)
    fused = FusedConv(g, make(g, "paper", dig=128, dgo=512, m=4), workspace=ws)
    nonfused = NonFusedConv(g, workspace=ws)
    geo, nt = g.geometry, (g.partition.threads,)
    inputs = lambda: nonfused.module.function("ms_input_kernel")((geo.n_g * geo.s_i,), nt, (x, ws.V))  # noqa: E731
    gemms = lambda: nonfused.module.function("ms_gemm_kernel")((geo.n_g * geo.s_g,), nt, (ws.U, ws.V, ws.M))  # noqa: E731
    res = {"idle": sampled(lambda: None, 1.0)}
    for name, fn in (("megakernel", lambda: fused.launch(x, w, y)), ("input_kernel", inputs), ("gemm_kernel", gemms),
                     ("megakernel_again", lambda: fused.launch(x, w, y))):
        res[name] = sampled(fn)
        print(name, res[name], flush=True)
    (out / "clocks.json").write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
