"""Start-up: what `megasim simulate --help` and the default `megasim simulate` load (not how long they take:
the machines tests run on are shared; docs/results/startup/startup.py measures the time)."""
import json
import subprocess
import sys

HEAVY = ("matplotlib", "rich", "optuna", "dask", "distributed", "cupy", "torch", "megasim.gpu.backend")


def loaded(argv: list[str]) -> set[str]:
    """The modules a fresh interpreter holds after `megasim *argv`."""
    code = ("import json, sys\nfrom megasim.app.cli import main\ntry:\n    main(sys.argv[1:])\n"
            "except SystemExit:\n    pass\nprint(json.dumps(sorted(sys.modules)), file=sys.stderr)")
    run = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, timeout=120)
    return set(json.loads(run.stderr.strip().splitlines()[-1]))


def test_help_loads_no_numerics():
    mods = loaded(["simulate", "--help"])
    assert "megasim.contract.mapping.paper" in mods  # the strategy flags are there
    assert not {m for m in mods if m.split(".")[0] in ("numpy", "simpy")} | (mods & set(HEAVY))


def test_default_simulate_loads_only_what_it_uses():
    mods = loaded(["simulate", "--json"])
    assert {"numpy", "simpy", "megasim.engine.core"} <= mods
    assert not mods & set(HEAVY), "import these where they are used"
    assert "numpy.ma" not in mods
