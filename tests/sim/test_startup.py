"""Start-up: what `megasim simulate --help` and the default `megasim simulate` load (not how long they take:
the machines tests run on are shared; docs/results/engine_speed/startup.py measures the time)."""
import json
import subprocess
import sys

from megasim.app.catalog import SCENARIOS

HEAVY = ("matplotlib", "rich", "optuna", "dask", "distributed", "cupy", "torch", "megasim.gpu.backend")
VALIDATION = ("pydantic", "pydantic_core")


def modules_after(code: str) -> set[str]:
    """The modules a fresh interpreter holds after running `code`."""
    code += "\nimport json, sys\nprint(json.dumps(sorted(sys.modules)), file=sys.stderr)"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    return set(json.loads(run.stderr.strip().splitlines()[-1]))


def loaded(argv: list[str]) -> set[str]:
    """The modules a fresh interpreter holds after `megasim *argv`."""
    return modules_after(f"from megasim.app.cli import main\ntry:\n    main({argv!r})\nexcept SystemExit:\n    pass")


def roots(mods: set[str]) -> set[str]:
    return {m.split(".")[0] for m in mods}


def test_help_loads_no_numerics():
    mods = loaded(["simulate", "--help"])
    assert "megasim.contract.mapping.paper" in mods  # the strategy flags are there
    assert not roots(mods) & {"numpy", "simpy", *VALIDATION} | (mods & set(HEAVY))


def test_default_simulate_loads_only_what_it_uses():
    """pydantic neither: the committed spec and profile are plainly valid (`megasim.io.accept`)."""
    mods = loaded(["simulate", "--json"])
    assert {"numpy", "simpy", "megasim.engine.core", "megasim.io.accept"} <= mods
    assert not mods & set(HEAVY), "import these where they are used"
    assert not roots(mods) & set(VALIDATION)
    assert "numpy.ma" not in mods


def test_the_spec_and_the_engine_import_no_validation_library():
    assert not roots(modules_after("import megasim.contract.spec, megasim.engine.simulate")) & set(VALIDATION)


def test_a_bad_file_is_worded_by_pydantic(tmp_path):
    spec = tmp_path / "g.toml"
    spec.write_text((SCENARIOS / "gpus" / "h200.toml").read_text().replace("sm_count = 132", "sm_count = 0"))
    assert "pydantic" in loaded(["simulate", "--gpu", str(spec)])


def blas_threads_after(argv: list[str], **env: str) -> str | None:
    """OPENBLAS_NUM_THREADS after `megasim *argv` started with `env` (simulate imports NumPy after setting it)."""
    import os
    from megasim.app.cli import BLAS_THREAD_VARIABLES
    clean = {k: v for k, v in os.environ.items() if k not in BLAS_THREAD_VARIABLES}
    code = ("import os, sys\nfrom megasim.app.cli import main\nmain(sys.argv[1:])\n"
            "print(os.environ.get('OPENBLAS_NUM_THREADS'), file=sys.stderr)")
    run = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, timeout=120,
                         env={**clean, **env})
    return run.stderr.strip().splitlines()[-1]


def test_simulate_starts_numpy_with_one_blas_thread_unless_told_otherwise():
    assert blas_threads_after(["simulate", "--json"]) == "1"
    assert blas_threads_after(["simulate", "--json"], OPENBLAS_NUM_THREADS="2") == "2"
    assert blas_threads_after(["simulate", "--json"], OMP_NUM_THREADS="4") == "None"
    assert blas_threads_after(["gpus"]) == "None"  # not a simulator command
