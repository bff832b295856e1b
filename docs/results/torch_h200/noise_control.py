"""How far apart two identical networks time at batch 1: the noise floor under bench.py's eager ratios.

    python docs/results/torch_h200/noise_control.py OUT [--networks resnet50] [--repeats 3] [--reps 50]

Per network at batch 1 (NCHW): torch's network, a deep copy of it (the same modules, other objects), and the
converted network settled on the input (`megasim.torch.settle`), timed as bench.py times them (CUDA events
around each call, the three taking turns call by call, the median of `reps`), `repeats` times over. The copy's
ratio to the original is what timing alone moves; the converted network's ratio is then read against it.
Writes OUT/noise_control.json and prints a table.
"""
import argparse
import copy
import importlib.util
import json
import sys
from pathlib import Path

import torch

import megasim.torch as mtorch

HERE = Path(__file__).resolve().parent


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"torch_h200_{name}", HERE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("out", type=Path)
    p.add_argument("--networks", default="resnet50")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--reps", type=int, default=50)
    args = p.parse_args()
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    models, bench = _load("models"), _load("bench")
    rows = []
    with torch.no_grad():
        for name in args.networks.split(","):
            torch.manual_seed(0)
            ref = {**models.NETWORKS, **models.MORE_NETWORKS}[name]().cuda().eval()
            twin, ours = copy.deepcopy(ref), copy.deepcopy(ref)
            mtorch.convert(ours)
            x = torch.randn(1, 3, bench.SIDES[name], bench.SIDES[name], device="cuda")
            mtorch.prepare(ours, x)
            settled = mtorch.settle(ours, x)
            for r in range(args.repeats):
                t = bench.paired_ms({"torch": lambda: ref(x), "torch copy": lambda: twin(x),
                                     "megasim": lambda: ours(x)}, args.reps)
                rows.append({"network": name, "repeat": r, "ms": t, "settled": settled,
                             "copy / torch": t["torch copy"] / t["torch"], "megasim / torch": t["megasim"] / t["torch"]})
                print(f"{name} #{r}: torch {t['torch']:.3f} ms, copy {rows[-1]['copy / torch']:.3f}, megasim "
                      f"{rows[-1]['megasim / torch']:.3f} (settle kept {settled['kept']})", flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "noise_control.json").write_text(json.dumps({"rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
