"""The engine's optional compiled build (`megasim.engine.compiled`): the pure-Python fallback gives the same
answer bit for bit, and an edit to a hot module is never shadowed by a stale extension."""
import cProfile
import json
import os
import pstats
import shutil
import subprocess
import sys

import pytest

import megasim.engine
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


@pytest.mark.skipif(not megasim.engine.COMPILED, reason="the engine runs as pure Python in this install")
@pytest.mark.parametrize("gpu_name", ["h200", "h100"])
def test_a_calibrated_profile_runs_no_per_block_python_but_the_dispatch_policy(gpu_name):
    """A model form the calibrated profiles use, left as a Python class beside the compiled engine, costs every
    block a Python call: the weighted issue queue and the GEMM-neighbour stretch did, which halved the engine's
    speed on the committed profiles (docs/performance.md). Only the dispatch policy (a strategy, one file each)
    is still Python per block."""
    from megasim.app.calibrate.profile import gpu_for_simulation
    from megasim.app.catalog import partition_for, resolve_layer
    from megasim.contract.graph import build_graph
    from megasim.contract.mapping import make
    from megasim.contract.problem import WinogradVariant
    from megasim.engine import fused_kernels, nonfused_kernels, run_kernels

    gpu, _ = gpu_for_simulation(gpu_name)
    spec = resolve_layer("ResNet-2", None)
    graph = build_graph(spec, WinogradVariant(), partition_for(spec, gpu.name))
    engine_dir = os.path.dirname(megasim.engine.__file__)
    for kernels in (fused_kernels(graph, make(graph, "paper")), nonfused_kernels(graph)):
        profiler = cProfile.Profile()
        profiler.runcall(run_kernels, graph, kernels, gpu)
        stats = pstats.Stats(profiler).stats
        per_block = sorted(f"{os.path.relpath(file, engine_dir)}:{name}" for (file, _, name), (_, calls, *_) in stats.items()
                           if file.startswith(engine_dir) and calls >= graph.num_tasks / 2)
        assert all(f.startswith("dispatch" + os.sep) for f in per_block), per_block
