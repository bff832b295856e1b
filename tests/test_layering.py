"""The one-way layering, checked as the user's machine will see it.

`lint-imports` (import-linter) reads the contracts in pyproject.toml. It walks packages on disk, and
our folders are mapped onto import names by `package-dir` (sim/ -> megasim, gpu/ -> megasim.gpu), so
the check runs on a copy laid out as the wheel installs it, built from that same mapping.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())


def installed_layout(dest: Path) -> Path:
    """Copy each package-dir folder to where its import name puts it; returns the import root."""
    for name, folder in sorted(PYPROJECT["tool"]["setuptools"]["package-dir"].items()):
        shutil.copytree(REPO / folder, dest.joinpath(*name.split(".")),
                        ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def test_import_linter_contracts_are_kept(tmp_path):
    lint = shutil.which("lint-imports")
    if lint is None:
        pytest.skip("import-linter is not installed (pip install -e '.[test]')")
    root = installed_layout(tmp_path / "site")
    done = subprocess.run([lint, "--config", str(REPO / "pyproject.toml"), "--no-cache"], cwd=root,
                          env={**os.environ, "PYTHONPATH": str(root)}, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "BROKEN" not in done.stdout


def test_every_package_folder_is_declared():
    """An undeclared subpackage would be missing from a non-editable install, and an undeclared folder of package
    data costs a setuptools warning of thirty lines at every install: both are declared, and nothing else."""
    declared = set(PYPROJECT["tool"]["setuptools"]["packages"])
    data = PYPROJECT["tool"]["setuptools"]["package-data"]
    found = set()
    for name, folder in PYPROJECT["tool"]["setuptools"]["package-dir"].items():
        for init in (REPO / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(REPO / folder).parts
            found.add(".".join((name, *rel)))
        for sub in (REPO / folder).rglob("*"):
            if sub.is_dir() and sub.name != "__pycache__" and not (sub / "__init__.py").exists() and any(
                    f.is_file() for f in sub.iterdir()):
                found.add(".".join((name, *sub.relative_to(REPO / folder).parts)))
    assert found == declared
    assert all(pkg in declared for pkg in data)


@pytest.mark.parametrize("module", ["megasim.gpu", "megasim.gpu.backend", "megasim.gpu.emulator",
                                    "megasim.gpu.megakernel", "megasim.gpu.nonfused", "megasim.gpu.baselines"])
def test_gpu_side_loads_neither_simpy_nor_the_engine(module):
    code = (f"import sys, importlib; importlib.import_module({module!r}); "
            "bad = sorted(m for m in sys.modules if m == 'simpy' or m.startswith(('simpy.', 'megasim.engine', "
            "'megasim.app'))); print(','.join(bad))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ""


def test_contract_loads_no_executor():
    code = ("import sys, megasim.contract.graph, megasim.contract.mapping; "
            "print(','.join(sorted(m for m in sys.modules if m.split('.')[0] in ('simpy', 'cupy', 'torch') "
            "or m.startswith(('megasim.engine', 'megasim.gpu', 'megasim.app')))))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ""


def _build_flags() -> list[str]:
    """Build with what is installed when it suffices (machines without a package index), else isolated."""
    from importlib.metadata import PackageNotFoundError, version
    try:
        setuptools_ok = int(version("setuptools").split(".")[0]) >= 68
        version("wheel")
    except PackageNotFoundError:
        return []
    return ["--no-build-isolation"] if setuptools_ok else []


@pytest.mark.slow
def test_wheel_carries_scenarios_and_kernel_sources(tmp_path):
    """`pip install .` must work without the source tree: data and .cu/.cuh sources ship inside.

    Built from a copy, so setuptools' build/ and egg-info never land in the checkout.
    """
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md", "sim", "gpu", "scenarios"):
        copy = shutil.copytree if (REPO / name).is_dir() else shutil.copy
        copy(REPO / name, src / name, **({"ignore": shutil.ignore_patterns("__pycache__")} if copy is shutil.copytree else {}))
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", *_build_flags(), "-w",
                           str(tmp_path), str(src)], capture_output=True, text=True, timeout=300)
    if done.returncode != 0 and "No matching distribution found for setuptools" in done.stderr:
        pytest.skip("no package index here and no local setuptools>=68 with wheel to build with")
    assert done.returncode == 0, done.stderr[-2000:]
    names = zipfile.ZipFile(next(tmp_path.glob("megasim-*.whl"))).namelist()
    for must in ("megasim/app/cli.py", "megasim/gpu/kernels/megakernel.cu", "megasim/gpu/kernels/winograd.cuh",
                 "megasim/scenarios/gpus/h200.toml", "megasim/scenarios/layers/resnet-2.toml",
                 "megasim/scenarios/partitions/h200.toml", "megasim/scenarios/calibrations/h200.toml",
                 "megasim/contract/kernel_registers.json"):
        assert must in names
    assert not any(n.split("/")[0] in ("sim", "gpu", "scenarios") for n in names)
