"""Every folder of docs/results says how to regenerate it, and that command still starts on today's code.

A folder's README names its commands as indented code lines (`python[3] docs/results/<folder>/x.py ...`,
`bash docs/results/<folder>/x.sh ...` or `megasim ...`). For each one: the files it names exist; a Python script
compiles, and one that takes `--help` (argparse, no device import) answers it; a shell script passes `bash -n`
and every Python script it runs compiles; a `megasim` command parses with the CLI's own parser. Device scripts
are not run: compiling is as far as a CPU can check them. Kept fast: nothing here simulates.
"""
import os
import py_compile
import re
import shlex
import subprocess
import sys

import pytest

from megasim.app.cli import build_parser

from .conftest import REPO, STUDIES

FOLDERS = sorted(p.name for p in STUDIES.iterdir() if p.is_dir())
COMMAND = re.compile(r"^ {4}((?:python3?|bash|megasim) .*)$")
SCRIPT = re.compile(r"docs/results/[\w./-]+\.(?:py|sh)")
PLACEHOLDERS = {"$OUT": "OUT", "<gpu>": "h200", "<layers…>": "ResNet-2", "[fit]": "", "[h100]": "", "[GPU]": ""}
DEVICE_IMPORTS = ("import cupy", "import torch", "require_cupy")


def commands(folder: str) -> list[str]:
    """The README's command lines, without their trailing comments, placeholders filled."""
    found = []
    for line in (STUDIES / folder / "README.md").read_text().splitlines():
        m = COMMAND.match(line)
        if m:
            cmd = m.group(1).split("  #")[0].strip()
            for key, value in PLACEHOLDERS.items():
                cmd = cmd.replace(key, value)
            found.append(cmd)
    return found


def compiles(path, tmp_path) -> None:
    py_compile.compile(str(path), cfile=str(tmp_path / (path.name + "c")), doraise=True)


@pytest.mark.parametrize("folder", FOLDERS)
def test_the_readme_names_a_command(folder):
    assert (STUDIES / folder / "README.md").is_file(), f"docs/results/{folder} has no README.md"
    assert commands(folder), f"docs/results/{folder}/README.md names no command (an indented `python`, `bash` " \
                             "or `megasim` line)"


def test_the_index_lists_every_folder():
    index = (STUDIES / "README.md").read_text()
    assert [f for f in FOLDERS if f"]({f}/" not in index] == []


@pytest.mark.parametrize("folder", FOLDERS)
def test_every_script_compiles(folder, tmp_path):
    for script in sorted((STUDIES / folder).rglob("*.py")):
        compiles(script, tmp_path)


@pytest.mark.parametrize("folder", FOLDERS)
def test_every_command_starts(folder, tmp_path):
    for cmd in commands(folder):
        argv = shlex.split(cmd.split(" > ")[0].split(" | ")[0])
        scripts = [REPO / s for s in SCRIPT.findall(cmd)]
        assert all(s.is_file() for s in scripts), f"{cmd}: names a file that does not exist"
        if argv[0] == "megasim":
            build_parser().parse_args(argv[1:])
        elif argv[0] == "bash":
            subprocess.run(["bash", "-n", str(REPO / argv[1])], check=True)
            for inner in SCRIPT.findall((REPO / argv[1]).read_text()):
                if inner.endswith(".py"):
                    assert (REPO / inner).is_file(), f"{argv[1]} runs {inner}, which does not exist"
                    compiles(REPO / inner, tmp_path)
        else:
            script = REPO / argv[1]
            compiles(script, tmp_path)
            source = script.read_text()
            if "argparse" in source and not any(s in source for s in DEVICE_IMPORTS):
                run = subprocess.run([sys.executable, str(script), "--help"], cwd=REPO, capture_output=True,
                                     text=True, timeout=120, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
                assert run.returncode == 0, f"{cmd} --help: {run.stderr[-500:]}"
