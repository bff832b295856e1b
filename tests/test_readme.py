"""The README is executable: its shell blocks run top to bottom, as a newcomer would paste them, in an empty folder.

Every ```bash block is read in order. A line is one command (a trailing backslash continues it); what follows
an unquoted `#` is prose. Three kinds of step are not run here, and the README says so on the line:
- `pip install ...`: this test runs inside the environment those lines make;
- `python -m pytest ...`: the suite this test belongs to;
- a command whose comment holds `[gpu]`: it needs an NVIDIA GPU, or a file that only a GPU run writes.
Every other command must exit 0, and together they may write only under `out/` (so a clone stays clean).
"""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
SKIPPED = ("pip install", "python -m pytest")
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


@pytest.mark.slow
def test_the_readme_runs_top_to_bottom_in_an_empty_folder(tmp_path):
    steps = commands(README.read_text())
    assert any(s.startswith("megasim simulate") for s in steps)
    bindir = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": bindir + os.pathsep + os.environ.get("PATH", ""), "MPLBACKEND": "Agg"}
    for step in steps:
        done = subprocess.run(["bash", "-c", step], cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=300)
        assert done.returncode == 0, f"{step}\n{done.stderr[-2000:]}"
    assert {p.name for p in tmp_path.iterdir()} <= WRITES_ONLY
