"""The engine's optional compiled build (`megasim.engine.compiled`): the pure-Python fallback gives the same
answer bit for bit, and an edit to a hot module is never shadowed by a stale extension."""
import json
import os
import shutil
import subprocess
import sys

from megasim.engine import compiled

PROBE = ("import json, megasim.engine as e; from megasim.app.cli import main; import contextlib, io; buf = io.StringIO()\n"
         "with contextlib.redirect_stdout(buf): main(['simulate', '--json'])\n"
         "d = json.loads(buf.getvalue()); print(json.dumps([e.COMPILED, d['fused_us'].hex(), d['nonfused_us'].hex()]))")


def _probe(**env):
    out = subprocess.run([sys.executable, "-c", PROBE], env={**os.environ, **env}, capture_output=True, text=True,
                         check=True).stdout
    return json.loads(out.splitlines()[-1])


def test_the_pure_python_fallback_gives_the_same_floats():
    built, *answer = _probe()
    pure, *fallback = _probe(MEGASIM_PURE_PYTHON="1")
    assert pure is False
    assert fallback == answer


def test_an_edit_to_a_hot_module_changes_its_checksum(tmp_path):
    for name in compiled.HOT:
        for suffix in (".py", ".pxd"):
            src = compiled.HERE / (name + suffix)
            if src.exists():
                shutil.copy(src, tmp_path / src.name)
    before = compiled.source_digest(tmp_path)
    assert before == compiled.source_digest(compiled.HERE)
    path = tmp_path / "psqueue.py"
    path.write_text(path.read_text() + "\n# edited\n")
    assert compiled.source_digest(tmp_path) != before
