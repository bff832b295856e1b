"""Small modules with one job: no module over 400 lines, no function over 60 (docs/architecture.md).

Counted on the package; tests and the study scripts kept as they were run (docs/results) are exempt. One
test over every source file, which names every offender at once.
"""
from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60


def _functions(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node


def offenders(path: Path) -> list[str]:
    """What is too long in one source file: the module, and each function over the limit."""
    text, name = path.read_text(), path.relative_to(REPO)
    lines = len(text.splitlines())
    found = [f"{name}: {lines} lines"] if lines > MAX_MODULE_LINES else []
    return found + [f"{name}: {f.name} ({f.end_lineno - f.lineno + 1} lines)" for f in _functions(ast.parse(text))
                    if f.end_lineno - f.lineno + 1 > MAX_FUNCTION_LINES]


def test_module_and_function_sizes():
    sources = sorted(p for folder in ("sim", "gpu") for p in (REPO / folder).rglob("*.py"))
    assert sources, "no sources found under sim/ and gpu/"
    found = [line for path in sources for line in offenders(path)]
    assert not found, "over the size limits:\n" + "\n".join(found)

