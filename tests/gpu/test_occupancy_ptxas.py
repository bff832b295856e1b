"""The occupancy the simulator uses is the occupancy of the CUDA build (CPU only; skipped without nvcc).

For every partition the search space can produce (the default value lists
over the base partitions of scenarios/partitions/h200.toml, legal points on
the paper layers) plus the partitions `simulate` uses, one build is compiled
with `nvcc -cubin --resource-usage`. ptxas's registers and static shared
memory per kernel, put through the plan's blocks-per-SM arithmetic, must
give the blocks per SM the plan gives, for the megakernel and each non-fused
kernel, on the H200 and the V100 spec (CUDA 13 no longer targets sm_70, so
the V100 check uses the sm_90 figures). Shared memory must match exactly.

ptxas's figures are a function of the generated source and the compiler, so
they are kept in `ptxas_usage.json` beside this file, keyed by a hash of the
source and the nvcc release: a build whose key is there is not compiled again,
except a fixed sample (one build per thread count and the first partition
`simulate` uses), compiled every run and held to the stored figures, so a stale
or hand-edited entry fails. A changed kernel or another nvcc misses the store
and is compiled. That keeps the check whole and cuts its minute of two-core
CI to seconds.

`python tests/gpu/test_occupancy_ptxas.py --write` rewrites the plan's
register table and the store from fresh compiles.
"""
from __future__ import annotations

import hashlib
import itertools
import json
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from megasim.app.catalog import layer_names, load_gpu, load_layer, load_network, network_names, partition_for
from megasim.app.search.space import build_space, reject_reason
from megasim.contract.problem import Layer, Op, Partition, WinogradVariant
from megasim.contract.resources import (DEFAULT_FLAVOR, REGISTER_TABLE, Flavor, StageResources, blocks_per_sm, megakernel_resources,
                                        stage_resources)
from megasim.gpu.backend import KERNEL_DIR, KernelConfig, kernel_source

NVCC = shutil.which("nvcc")
PAPER_LAYERS = 13
KERNELS = ("megakernel", "filter_transform", "input_transform", "gemm", "output_transform")
CUDA_NAMES = {"filter": "filter_transform", "input": "input_transform", "output": "output_transform"}
VARIANT = WinogradVariant(4)
VARIANTS = (2, 4, 6)
RAW = Path(__file__).parents[2] / "scenarios" / "calibrations" / "raw"
STORE = Path(__file__).with_name("ptxas_usage.json")


Build = tuple  # (Partition, Flavor): what the register table keys a build by


def builds() -> dict[Build, tuple]:
    """Each build the search space (every variant), `simulate`, the committed corpora and the networks use,
    with the first (layer, variant) that makes it."""
    h200 = load_gpu("h200")
    out = {}

    def add(layer, variant, part):
        out.setdefault((part, Flavor.of(layer, variant, part)), (layer, variant))

    for name in layer_names()[:PAPER_LAYERS]:
        layer = load_layer(name)
        for gpu in ("h200", "v100"):
            add(layer, VARIANT, partition_for(layer, gpu))
        space = build_space("paper", partition_for(layer, "h200"))
        params = [p for p in space.searched if p.kind == "partition"]
        for m in VARIANTS:
            for combo in itertools.product(*(p.values for p in params)):
                point = {**dict(zip((p.name for p in params), combo)), "m": 1, "variant": m, "mode": "static"}
                if reject_reason(space, point, layer, h200) is None:
                    add(layer, WinogradVariant(m), space.split(point)[0])
    for corpus in sorted(RAW.glob("*_corpus.jsonl")):
        for line in corpus.read_text().splitlines():
            for run in json.loads(line)["runs"]:
                add(Layer(**run["layer"]), WinogradVariant(run["variant"]), Partition(**run["partition"]))
    for net in network_names():
        for layer, _ in load_network(net):
            for m in VARIANTS:
                add(layer, WinogradVariant(m), partition_for(layer, "h200"))
    return out


def source_of(build: Build, made_by: tuple) -> str:
    layer, variant = made_by
    return kernel_source(KernelConfig(layer, variant, build[0]))


def nvcc_release() -> str:
    out = subprocess.run([NVCC, "--version"], capture_output=True, text=True).stdout
    return out.strip().splitlines()[-2] if out.strip() else "?"


def store_key(source: str, release: str) -> str:
    return hashlib.sha256((release + "\0" + source).encode()).hexdigest()[:20]


def ptxas(source: str) -> dict[str, tuple[int, int]]:
    """{kernel: (registers, static smem bytes)} of one build, from ptxas's resource usage."""
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "kernel.cu"
        src.write_text(source)
        res = subprocess.run([NVCC, "-arch=sm_90", "-cubin", "--resource-usage", "-std=c++17", f"-I{KERNEL_DIR}",
                              str(src), "-o", str(Path(tmp) / "kernel.cubin")], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    out = {}
    for block in (res.stdout + res.stderr).split("Compiling entry function")[1:]:
        name = re.match(r" '(?:ms_)?(\w+?)(?:_kernel)?'", block).group(1)
        name = CUDA_NAMES.get(name, name)
        smem = re.search(r"(\d+) bytes smem", block)
        out[name] = (int(re.search(r"Used (\d+) registers", block).group(1)), int(smem.group(1)) if smem else 0)
    assert set(out) == set(KERNELS), out
    return out


def compile_many(sources: list[str]) -> list[dict]:
    with ThreadPoolExecutor(2) as pool:
        return list(pool.map(ptxas, sources))


def sample(todo: dict[Build, tuple]) -> list[Build]:
    """Builds compiled every run whatever the store holds: the first of each thread count and of each flavor,
    in build order."""
    firsts = {}
    for build in todo:
        firsts.setdefault(build[0].threads, build)
        firsts.setdefault(build[1], build)
    return list(dict.fromkeys(firsts.values()))


def stored() -> dict:
    return json.loads(STORE.read_text())["builds"] if STORE.exists() else {}


def usage_of_all() -> tuple[dict[Build, dict], list[str]]:
    """ptxas's figures for every build (stored, or compiled where missing), and every disagreement between a
    sampled build's fresh compile and its stored figures."""
    todo = builds()
    release = nvcc_release()
    keys = {build: store_key(source_of(build, made_by), release) for build, made_by in todo.items()}
    store = stored()
    fresh_parts = [p for p in todo if keys[p] not in store or p in set(sample(todo))]
    fresh = dict(zip(fresh_parts, compile_many([source_of(p, todo[p]) for p in fresh_parts])))
    stale = [f"{p}: stored {store[keys[p]]}, ptxas {fresh[p]}" for p in fresh
             if keys[p] in store and {k: tuple(v) for k, v in store[keys[p]].items()} != fresh[p]]
    usage = {p: fresh.get(p) or {k: tuple(v) for k, v in store[keys[p]].items()} for p in todo}
    return usage, stale


def planned(build: Build, kernel: str) -> StageResources:
    part, flavor = build
    if kernel == "megakernel":
        return megakernel_resources(part, flavor=flavor)
    return stage_resources(part, Op[kernel.upper()], flavor=flavor)


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")
def test_plan_occupancy_is_the_cuda_builds():
    gpus = [load_gpu("h200"), load_gpu("v100")]
    usage_by_build, stale = usage_of_all()
    assert not stale, "ptxas_usage.json disagrees with a fresh compile; rewrite it with --write:\n" + "\n".join(stale)
    wrong = []
    for build, usage in usage_by_build.items():
        part = build[0]
        for kernel, (regs, smem) in usage.items():
            plan = planned(build, kernel)
            built = StageResources(part.threads, regs, smem)
            if plan.smem_bytes != smem:
                wrong.append(f"{kernel} {build}: plan smem {plan.smem_bytes} B, ptxas {smem} B")
            for gpu in gpus:
                if plan.smem_bytes > gpu.max_smem_per_block_bytes:
                    continue
                want, got = blocks_per_sm(gpu, built), blocks_per_sm(gpu, plan)
                if want != got:
                    wrong.append(f"{kernel} {build} on {gpu.name}: plan {got} blocks/SM ({plan.regs_per_thread} "
                                 f"regs), build {want} ({regs} regs)")
    assert not wrong, "\n".join(wrong)


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")
def test_a_wrong_stored_figure_is_caught_by_the_sampled_compile(tmp_path, monkeypatch):
    todo = builds()
    first = sample(todo)[0]
    key = store_key(source_of(first, todo[first]), nvcc_release())
    doc = json.loads(STORE.read_text())
    doc["builds"][key]["megakernel"][0] += 8
    monkeypatch.setattr(sys.modules[__name__], "STORE", tmp_path / "ptxas_usage.json")
    monkeypatch.setattr(sys.modules[__name__], "sample", lambda todo: [first])
    (tmp_path / "ptxas_usage.json").write_text(json.dumps(doc))
    _, stale = usage_of_all()
    assert len(stale) == 1 and str(first) in stale[0]


def table_row(build: Build, made_by: tuple, usage: dict) -> dict:
    """One row of the register table; a flavor other than F(4) with vector loads names itself."""
    part, flavor = build
    row = {"partition": part.to_dict(), "layer": made_by[0].name}
    if flavor != DEFAULT_FLAVOR:
        row.update(variant=flavor.m, vector_loads=[flavor.vector_c, flavor.vector_k])
    row["registers"] = {k: v[0] for k, v in usage.items()}
    return row


def write_table() -> None:
    todo = builds()
    release = nvcc_release()
    sources = [source_of(build, made_by) for build, made_by in todo.items()]
    usages = compile_many(sources)
    rows = [table_row(build, made_by, usage) for (build, made_by), usage in zip(todo.items(), usages)]
    doc = {"source": "ptxas --resource-usage, nvcc -arch=sm_90, default k step; one build per partition and "
                     "flavor (variant, vector loads of C and K: F(4) with both where not named), compiled for "
                     "`layer`", "builds": rows}
    REGISTER_TABLE.write_text(json.dumps(doc, indent=1) + "\n")
    store = {store_key(src, release): dict(sorted(u.items())) for src, u in zip(sources, usages)}
    STORE.write_text(json.dumps({"nvcc": release, "about": "ptxas (registers, static smem bytes) per kernel, keyed "
                                 "by sha256(nvcc release + generated source)[:20]; test_occupancy_ptxas.py",
                                 "builds": dict(sorted(store.items()))}, indent=0) + "\n")


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    write_table()
