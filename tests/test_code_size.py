"""Small modules with one job: no module over 400 lines, no function over 60 (docs/architecture.md).

Counted on the package; tests and the study scripts kept as they were run (docs/results) are exempt.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SOURCES = sorted(p for folder in ("sim", "gpu") for p in (REPO / folder).rglob("*.py"))
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60


def _functions(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(REPO)))
def test_module_and_function_sizes(path):
    text = path.read_text()
    lines = len(text.splitlines())
    assert lines <= MAX_MODULE_LINES, f"{lines} lines"
    long = [f"{f.name} ({f.end_lineno - f.lineno + 1} lines)" for f in _functions(ast.parse(text))
            if f.end_lineno - f.lineno + 1 > MAX_FUNCTION_LINES]
    assert not long, ", ".join(long)
