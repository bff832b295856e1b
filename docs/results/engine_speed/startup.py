"""Start-up cost of `megasim`: process CPU seconds before any simulating starts.

    python docs/results/engine_speed/startup.py [--runs 15]

Each figure is the median (and the minimum), over --runs fresh processes, of the child's user +
system CPU seconds (the operating system's accounting, from os.wait4), so another process on the machine
slows it less than it would a wall clock. The rows:

- `python -c pass`: the interpreter and its site-packages hooks (the floor nothing can go under);
- `import numpy`: the numerical library `simulate` needs (leaving through `os._exit`, as below);
- `megasim simulate --help`;
- `simulate, up to simulate()`: `megasim simulate` (ResNet-2, H200 profile) run until the engine's
  `simulate()` is called: interpreter, imports, argument parsing, scenario and profile loading,
  graph and mapping; the child then exits without simulating;
- `simulate's imports`: a process that only imports the megasim modules the previous row had
  loaded when `simulate()` was called (and, through them, everything else it had loaded); like the
  previous row it leaves through `os._exit`, so neither counts the interpreter's teardown (10-30 ms
  with NumPy loaded); the last row does;
- `megasim simulate`: the whole default command, simulation and printing included;
- `simulate, up to simulate(), beyond the interpreter start`: the second row's child, counting only its
  CPU from the probe's first line (after the interpreter and its site hooks started) to `simulate()`: what
  the default ResNet-2 run imports and prepares, which is what the start-up target is about.

`--probe` is the entry point of the child that stops at `simulate()`.
Rows marked "one BLAS thread" run with OPENBLAS_NUM_THREADS=1 in their environment.
"""
from __future__ import annotations

import os
import sys
import time

PROBE_EXIT = 17


def probe() -> None:
    """`megasim simulate` until the engine is called; print the process CPU seconds then and when this function
    began (after the interpreter's own start), and the loaded megasim modules; exit."""
    began = time.process_time()
    from megasim.app.cli import main, single_blas_thread
    single_blas_thread()  # what main() does for `simulate`, before the import below loads NumPy
    import megasim.engine.simulate as engine

    def stop(*args, **kwargs):
        cpu = time.process_time()
        names = sorted(m for m in sys.modules if m.startswith("megasim"))
        print(f"{cpu:.4f} {began:.4f} " + " ".join(names), flush=True)
        os._exit(PROBE_EXIT)
    engine.simulate = stop
    main(["simulate"])


def child_cpu(argv: list[str], env: dict) -> tuple[float, str]:
    import subprocess
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    out = proc.stdout.read().decode()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.stdout.close()
    return usage.ru_utime + usage.ru_stime, out


def cpu_figures(argv: list[str], runs: int, env: dict) -> tuple[float, float]:
    """(median, min) CPU seconds of `runs` runs after one warm-up (which also writes the bytecode cache)."""
    import statistics
    child_cpu(argv, env)
    times = [child_cpu(argv, env)[0] for _ in range(runs)]
    return statistics.median(times), min(times)


def in_process(argv: list[str], runs: int, env: dict) -> tuple[float, float]:
    """(median, min) of the probe's own CPU seconds from its start to `simulate()`: imports (NumPy and SimPy
    among them), argument parsing, scenario, profile, graph and mapping, without the interpreter's start."""
    import statistics
    child_cpu(argv, env)
    times = []
    for _ in range(runs):
        stop, began = map(float, child_cpu(argv, env)[1].split()[:2])
        times.append(stop - began)
    return statistics.median(times), min(times)


def main() -> None:
    if sys.argv[1:] == ["--probe"]:
        return probe()
    import argparse
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    py, me = sys.executable, os.path.abspath(__file__)
    megasim = [py, "-c", "import sys; from megasim.app.cli import main; sys.exit(main())"]
    from megasim.app.cli import BLAS_THREAD_VARIABLES
    env = {k: v for k, v in os.environ.items() if k not in BLAS_THREAD_VARIABLES}  # as a user would start it
    _, loaded = child_cpu([py, me, "--probe"], env)
    modules = loaded.split()[2:]
    one = {**env, "OPENBLAS_NUM_THREADS": "1"}
    rows = [("python -c pass", [py, "-c", "pass"], env),
            ("import numpy", [py, "-c", "import os, numpy; os._exit(0)"], env),
            ("import numpy (one BLAS thread)", [py, "-c", "import os, numpy; os._exit(0)"], one),
            ("import numpy, simpy (one BLAS thread)", [py, "-c", "import os, numpy, simpy; os._exit(0)"], one),
            ("megasim simulate --help", megasim + ["simulate", "--help"], env),
            ("simulate, up to simulate()", [py, me, "--probe"], env),
            (f"simulate's imports ({len(modules)} megasim modules, one BLAS thread)",
             [py, "-c", "import os, " + ", ".join(modules) + "; os._exit(0)"], one),
            ("megasim simulate", megasim + ["simulate"], env)]
    cache = "off" if env.get("PYTHONDONTWRITEBYTECODE") else "on"
    print(f"CPU seconds over {args.runs} runs; bytecode cache {cache}; {os.cpu_count()} CPUs, "
          f"load {os.getloadavg()[0]:.1f}")
    print(f"{'':62s} {'median':>7} {'min':>7}")
    for label, argv, row_env in rows:
        print(f"{label:62s} {'%7.3f %7.3f' % cpu_figures(argv, args.runs, row_env)}")
    print(f"{'simulate, up to simulate(), beyond the interpreter start':62s} "
          f"{'%7.3f %7.3f' % in_process([py, me, '--probe'], args.runs, env)}")


if __name__ == "__main__":
    main()
