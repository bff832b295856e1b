"""A calibration's parts spread over a host's identical GPUs: one Dask worker per GPU, each measuring whole parts.

The parts write different raw files, so they need no merging: a worker takes a group of parts, makes its GPU
the current device and runs `calibrate_measure` on that group, and each part resumes as it does on one GPU. The
groups are balanced by each part's device time on the H200 (2026-11-28, docs/results/calibrate_from_nothing),
longest first, the microbenchmarks on the first GPU; by those figures two H200s would measure in about 220 s what
one measures in 410 s (not yet run on a host with two). The GPUs must be identical, since one GPU's microbenchmarks stand for all of them: a host that mixes
models is refused before anything is measured.
"""
from __future__ import annotations

from megasim.contract.errors import MegasimError

# seconds each part took on one H200, 2026-11-28: hardware with its task microbenchmarks, then each collector;
# builds (both precisions since), tensor_core and corpus_builds are estimates until a run times them: 444 builds
# at the FP32 builds' rate, 36 rows at the 20 s the 12 F(4) rows took (docs/results/tensor_core), 12 shapes' builds
SECONDS = {"hardware": 40.0, "runs": 40.0, "trace_sample": 150.0, "kernel_graph": 15.0, "builds": 240.0,
           "tensor_core": 90.0, "corpus": 60.0, "corpus_builds": 200.0}


def plan(parts, devices: int) -> list[list[str]]:
    """The parts in `devices` groups, the longest first onto the least loaded (hardware on the first GPU, alone
    at its start, so that no other part's kernels share the host while it measures); empty groups dropped."""
    groups, load = [[] for _ in range(devices)], [0.0] * devices
    ordered = sorted((p for p in parts if p != "hardware"), key=lambda p: -SECONDS.get(p, 60.0))
    if "hardware" in parts:
        groups[0].append("hardware")
        load[0] += SECONDS["hardware"]
    for part in ordered:
        i = min(range(devices), key=lambda d: (load[d], d))
        groups[i].append(part)
        load[i] += SECONDS.get(part, 60.0)
    return [g for g in groups if g]


def measure_group(device: int, gpu: str, out_dir: str, reps: int, parts: list[str], budget_s: float,
                  corpus: int) -> dict:
    """On a worker: make GPU `device` current and measure `parts` there (tasks with hardware)."""
    from megasim.app.calibrate.measure import calibrate_measure
    from megasim.gpu.backend import require_cupy
    require_cupy().cuda.Device(device).use()
    group = tuple(parts) + (("tasks",) if "hardware" in parts else ())
    return calibrate_measure(gpu, out_dir, reps, parts=group, budget_s=budget_s, corpus=corpus,
                             log=lambda line: print(f"[gpu {device}] {line}", flush=True))


def identical_gpus() -> int:
    """How many GPUs this host has, refusing a host whose GPUs are not all the same model."""
    from megasim.gpu.backend import require_cupy
    cp = require_cupy()
    names = [cp.cuda.runtime.getDeviceProperties(i)["name"].decode() for i in range(cp.cuda.runtime.getDeviceCount())]
    if len(set(names)) > 1:
        raise MegasimError(f"--scheduler local spreads a calibration over identical GPUs; this host has "
                           f"{', '.join(names)}: make one model visible (CUDA_VISIBLE_DEVICES)")
    return len(names)


def measure_spread(gpu: str, out_dir: str, reps: int, parts, budget_s: float, corpus: int, executor,
                   devices: int) -> dict:
    """Every part of `parts`, the groups of `plan` running at once, one per GPU on `executor`'s workers;
    {part: "done" | "left"} as `calibrate_measure` gives it."""
    futures = [executor.submit_to(i, measure_group, i, gpu, out_dir, reps, group, budget_s, corpus)
               for i, group in enumerate(plan([p for p in parts if p != "tasks"], devices))]
    status = {}
    for future in futures:
        status.update(future.result())
    return status


__all__ = ["SECONDS", "plan", "measure_group", "identical_gpus", "measure_spread"]
