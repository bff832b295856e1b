"""The README is executable: its shell blocks run top to bottom, as a newcomer would paste them, in an empty folder.

Every ```bash block is read in order. A line is one command (a trailing backslash continues it); what follows
an unquoted `#` is prose. Three kinds of step are not run here, and the README says so on the line:
- `pip install -e ...`: this test runs inside the environment those lines make (a `pip install NAME` from the
  package index runs, as it does from any folder);
- `python -m pytest ...`: the suite this test belongs to;
- a command whose comment holds `[gpu]`: it needs an NVIDIA GPU, or a file that only a GPU run writes.
Every other command must exit 0, and together they may write only under `out/` (so a clone stays clean).
The README's `calibrate --from-raw` line is also the end-to-end check of calibration: the profile it writes
must be the committed one.
"""
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
SKIPPED = ("pip install -e", "python -m pytest")
WRITES_ONLY = {"out"}


def split_comment(line: str) -> tuple[str, str]:
    """(command, comment): the comment starts at the first `#` outside quotes that begins a word, as in bash."""
    quote = None
    for i, ch in enumerate(line):
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].strip(), line[i + 1:]
    return line.strip(), ""


def commands(text: str) -> list[str]:
    """The README's shell commands in order, comments dropped, continuation lines joined, skipped steps left out."""
    found = []
    for block in re.findall(r"^```bash\n(.*?)^```", text, flags=re.S | re.M):
        for line in re.sub(r"\s*\\\n\s*", " ", block).splitlines():
            command, comment = split_comment(line)
            if not command or "[gpu]" in comment:
                continue
            steps = [s.strip() for s in command.split("&&") if not s.strip().startswith(SKIPPED)]
            if steps:
                found.append(" && ".join(steps))
    return found


def test_the_parser_reads_the_conventions():
    text = ("```bash\npip install -e . && megasim simulate   # run it\nmegasim bench --out b.json   # [gpu] measures\n"
            "megasim search --layer ResNet-2 \\\n    --out 'out/a b'   # two lines\n```\n```python\nimport x\n```\n")
    assert commands(text) == ["megasim simulate", "megasim search --layer ResNet-2 --out 'out/a b'"]


def test_the_readmes_commands_parse_and_search_writes_what_simulate_reads():
    """Every megasim command parses (the GPU ones too), and the mapping files simulate reads are ones search wrote."""
    from megasim.app.cli import build_parser
    text = README.read_text().replace("# [gpu]", "#")
    argvs = [shlex.split(step)[1:] for line in commands(text) for step in line.split(" && ")
             if step.startswith("megasim ")]
    assert len(argvs) > 15
    parsed = [build_parser().parse_args(argv) for argv in argvs if not {"--version", "--help"} & set(argv)]
    searched = {f"{a.out}/best.json" for a in parsed if a.command == "search" and a.out}
    read = {a.mapping for a in parsed if a.command == "simulate" and a.mapping}
    assert read and read <= searched


# The README's steps in three chains that share no files, each run in order in its own empty folder, so that the
# two long ones (the refit and the validation) run beside the rest on another worker instead of after it.
CHAINS = {"refit": lambda step: "calibrate" in step and "--from-raw" in step or "out/calibrate/" in step,
          "validate": lambda step: step.startswith("megasim validate")}


def chain_of(step: str) -> str:
    return next((name for name, holds in CHAINS.items() if holds(step)), "the rest")


def test_every_step_is_in_one_chain_and_the_chains_share_no_files():
    """A step of one chain never reads what a step of another writes: their paths under out/ differ in their
    first folder (or file)."""
    steps = commands(README.read_text())
    chains = {name: [s for s in steps if chain_of(s) == name] for name in (*CHAINS, "the rest")}
    assert all(chains.values()) and sum(map(len, chains.values())) == len(steps)
    tops = {name: {p.split("/")[1] for p in re.findall(r"\bout/[\w.-]+", " ".join(c))} for name, c in chains.items()}
    for name, mine in tops.items():
        assert not mine & set().union(*(t for n, t in tops.items() if n != name)), name


@pytest.mark.slow
@pytest.mark.parametrize("chain", [*CHAINS, "the rest"])
def test_the_readme_runs_top_to_bottom_in_an_empty_folder(tmp_path, chain):
    steps = [s for s in commands(README.read_text()) if chain_of(s) == chain]
    assert steps and (chain != "the rest" or any(s.startswith("megasim simulate") for s in steps))
    bindir = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": bindir + os.pathsep + os.environ.get("PATH", ""), "MPLBACKEND": "Agg"}
    for step in steps:
        done = subprocess.run(["bash", "-c", step], cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=1800)  # a hang guard, far above the refit's 2.5-5 min on a loaded CI machine
        assert done.returncode == 0, f"{step}\n{done.stderr[-2000:]}"
    assert {p.name for p in tmp_path.iterdir()} <= WRITES_ONLY
    if chain == "refit":
        refit = tmp_path / "out" / "calibrate" / "h200.toml"
        assert refit.is_file(), "the README refits the H200 profile from the committed raw files"
        _is_the_committed_profile(refit)


def _is_the_committed_profile(path) -> None:
    """Every stage fitted again on the CPU from the committed raw files gives the committed profile: each [hardware],
    [model] and [fit] value. Left out: the provenance (its date) and [uncertainty], which `validate` records."""
    from megasim.app.calibrate.profile import load_profile, profile_path
    fresh, committed = load_profile(path), load_profile(profile_path("h200"))
    for section in ("hardware", "model", "fit"):
        assert getattr(fresh, section) == getattr(committed, section), section


def test_the_caption_quotes_what_simulate_and_the_h200_give(capsys):
    """The figure's caption is a command's output, not a memory: the default prediction, and the measured run."""
    from megasim.app.catalog import SCENARIOS
    from megasim.app.cli import main
    found = re.search(r"it predicts ([\d.]+) us for the fused\s+megakernel; the H200 took ([\d.]+) us", README.read_text())
    assert found, "the caption's two figures"
    assert main(["simulate", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    runs = json.loads((SCENARIOS / "calibrations" / "raw" / "h200_runs.json").read_text())["runs"]
    measured = next(r["fused_us"] for r in runs if r["layer"]["name"] == doc["layer"]
                    and r["strategy"] == doc["strategy"] and r["params"] == doc["params"] and r["variant"] == 4)
    assert (found[1], found[2]) == (f"{doc['fused_us']:.1f}", f"{measured:.1f}")
