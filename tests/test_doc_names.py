"""Docs name only what the package has: every law a doc calls a law is registered, and every megasim command in
a doc's code (a ```bash block or an indented line) parses with today's flags, axes and values."""
import re
import shlex
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")), *sorted((REPO / "docs/results").glob("*/README.md"))]
LAW = re.compile(r"`([a-z][a-z0-9_]+)` law|law `([a-z][a-z0-9_]+)`")


def code_commands(text: str) -> list[str]:
    """The `megasim ...` commands of a doc's ```bash blocks and indented lines, comments dropped and continued
    lines joined."""
    text = re.sub(r"\s*\\\n\s*", " ", text)
    lines = [line for block in re.findall(r"^```bash\n(.*?)^```", text, flags=re.S | re.M) for line in block.splitlines()]
    lines += re.findall(r"^ {4}(megasim .*)$", text, flags=re.M)
    out = []
    for line in lines:
        for step in line.split("#", 1)[0].split("&&"):
            step = step.strip()
            if step.startswith("megasim ") and not re.search(r"[<>]|\.\.\.|\bNAME\b|\bMYGPU\b", step):
                out.append(step)
    return out


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(REPO)))
def test_a_doc_names_only_registered_laws(doc):
    from megasim.engine.laws import MODEL_LAWS
    named = {a or b for a, b in LAW.findall(doc.read_text())}
    assert sorted(named - set(MODEL_LAWS.names())) == []


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(REPO)))
def test_every_command_a_doc_shows_parses(doc):
    from megasim.app.cli import build_parser
    from megasim.contract.errors import MegasimError
    bad = []
    for command in code_commands(doc.read_text()):
        argv = shlex.split(command)[1:]
        if {"--help", "--version"} & set(argv):
            continue
        try:
            build_parser().parse_args(argv)
        except (SystemExit, MegasimError) as exc:
            bad.append(f"{command}: {exc}")
    assert bad == []
