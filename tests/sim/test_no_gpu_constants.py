"""No per-GPU constant in the package: a model constant is measured or fitted during calibration, or a declared
default of its law that is the same for every GPU. A literal keyed by, or compared with, a GPU's short name
(those of scenarios/gpus) is what a per-GPU constant looks like in code; the package holds none."""
import ast
from pathlib import Path

from ..conftest import REPO

GPUS = {p.stem for p in (REPO / "scenarios" / "gpus").glob("*.toml")}


def per_gpu_literals(path: Path) -> list[str]:
    where = path.relative_to(REPO) if path.is_relative_to(REPO) else path
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Dict):
            keys = [k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)]
            found += [f"{where}:{node.lineno}: a table keyed by {k!r}" for k in keys
                      if k.lower() in GPUS]
        elif isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            names = [s.value for s in sides if isinstance(s, ast.Constant) and isinstance(s.value, str)]
            found += [f"{where}:{node.lineno}: a comparison with {n!r}" for n in names
                      if n.lower() in GPUS]
    return found


def test_the_gpus_are_known():
    assert {"h100", "h200"} <= GPUS


def test_the_package_holds_no_per_gpu_constant():
    sources = sorted((REPO / "sim").rglob("*.py")) + sorted((REPO / "gpu").rglob("*.py"))
    found = [hit for path in sources for hit in per_gpu_literals(path)]
    assert not found, "per-GPU constants in code:\n" + "\n".join(found)


def test_the_check_sees_one(tmp_path):
    planted = tmp_path / "planted.py"
    planted.write_text('STRETCH = {"h100": 0.4}\nif name == "H200":\n    pass\n')
    assert len(per_gpu_literals(planted)) == 2
