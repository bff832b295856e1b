"""Where the engine's CPU time goes, from a py-spy sample of repeated fused runs (sampling, so the small
functions are not inflated the way cProfile inflates them).

    pip install py-spy
    py-spy record -r 1000 -f raw -o /tmp/engine.spy -- \\
        python docs/results/engine_speed/where_time_goes.py --run VGG-1 --reps 8
    python docs/results/engine_speed/where_time_goes.py --report /tmp/engine.spy

`--report` prints each function's share of the samples taken inside `run_kernels` (its own time, not its
callees'), then the share of each file.
"""
from __future__ import annotations

import argparse
import collections
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

FRAME = re.compile(r"(?P<fn>.*) \((?P<file>[^:]*):(?P<line>\d+)\)")


def run(layer: str, reps: int) -> None:
    from engine_speed import problem
    from megasim.engine import fused_kernels, run_kernels
    graph, mapping, gpu = problem(layer, None)
    kernels = fused_kernels(graph, mapping)
    for _ in range(reps):
        run_kernels(graph, kernels, gpu)


def report(path: str, top: int = 20) -> None:
    own, files, total = collections.Counter(), collections.Counter(), 0
    for line in Path(path).read_text().splitlines():
        stack, count = line.rsplit(" ", 1)
        frames = stack.split(";")
        if not any("run_kernels" in f for f in frames):
            continue
        total += int(count)
        m = FRAME.match(frames[-1])
        fn, file = (m["fn"], Path(m["file"]).name) if m else (frames[-1], "?")
        package = "simpy/" if "simpy" in (m["file"] if m else "") else ""
        own[f"{package}{file}: {fn}"] += int(count)
        files[f"{package}{file}"] += int(count)
    print(f"{total} samples inside run_kernels")
    for name, n in own.most_common(top):
        print(f"{n / total:6.1%}  {name}")
    print("by file:")
    for name, n in files.most_common():
        print(f"{n / total:6.1%}  {name}")


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--run", metavar="LAYER", help="run the fused LAYER on the calibrated h200 (under py-spy)")
    p.add_argument("--reps", type=int, default=8)
    p.add_argument("--report", metavar="RAW", help="summarise a py-spy raw file")
    args = p.parse_args(argv)
    if args.run:
        run(args.run, args.reps)
    if args.report:
        report(args.report)


if __name__ == "__main__":
    main()
