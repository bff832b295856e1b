"""The occupancy the simulator uses is the occupancy of the kernels that run (CPU only).

For every build the plan holds (the partition value lists a search may open, `SEARCHABLE_PARTITIONS`,
over the base partitions of scenarios/partitions/h200.toml in F(2), F(4) and F(6): legal fused points with
the generic GEMM body on the paper layers; every run of the committed corpora; every network layer),
`docs/results/occupancy_device/measure.py` compiled the kernels as CuPy does (NVRTC, sm_90) on a device
and read each kernel's registers, static shared memory and the driver's blocks per SM. The committed
measurements are keyed by a hash of the compiler and the generated source, so a kernel change misses them
and fails here until they are measured again. Against them: the plan's registers and shared memory are the
build's, and the plan's blocks-per-SM arithmetic gives the driver's count on the H200 spec (the H100 it was
read on has the same SM) for the megakernel and each non-fused kernel. tests/gpu/test_occupancy_device.py
recompiles a sample on the device and holds the measurements to it.

`python tests/sim/test_occupancy_plan.py --write` rewrites the plan's register table from the measurements.
"""
from __future__ import annotations

import hashlib
import itertools
import json
import sys
from pathlib import Path

import pytest

from megasim.app.catalog import layer_names, load_gpu, load_layer, load_network, network_names, partition_for
from megasim.app.search.space import build_space, reject_reason
from megasim.contract.problem import Layer, Op, Partition, WinogradVariant
from megasim.contract.resources import (DEFAULT_FLAVOR, REGISTER_TABLE, Flavor, StageResources, blocks_per_sm,
                                        megakernel_resources, partition_key, stage_resources, warp_partition)
from megasim.gpu.backend import KernelConfig, kernel_source

PAPER_LAYERS = 13
KERNELS = ("megakernel", "filter_transform", "input_transform", "gemm", "output_transform")
VARIANT = WinogradVariant(4)
VARIANTS = (2, 4, 6)
REPO = Path(__file__).parents[2]
RAW = REPO / "scenarios" / "calibrations" / "raw"
MEASURED = REPO / "docs" / "results" / "occupancy_device" / "device_usage.json"
WARP_MEASURED = MEASURED.with_name("h200_warp_usage.json")

Build = tuple  # (Partition, Flavor): what the register table keys a build by
# The partition values `megasim search --space FIELD=...` has been run over (the search's default lists until
# the partition stopped being searched by default; the base partition's own value is added per layer). The
# search may still open them, so their generic builds stay in the plan and measured.
SEARCHABLE_PARTITIONS = {"tiles_per_group": (32, 64, 128), "gemm_k_per_task": (32, 64, 128),
                         "gemm_mats_per_task": (1, 2, 4), "threads": (128, 256)}


def builds() -> dict[Build, tuple]:
    """Each build a search that opens the partition (every variant), `simulate`, the committed corpora and the
    networks use, with the first (layer, variant) that makes it."""
    h200 = load_gpu("h200")
    out = {}

    def add(layer, variant, part):
        out.setdefault((part, Flavor.of(layer, variant, part)), (layer, variant))

    for name in layer_names()[:PAPER_LAYERS]:
        layer = load_layer(name)
        for gpu in ("h200", "v100"):
            add(layer, VARIANT, partition_for(layer, gpu))
        base = partition_for(layer, "h200")
        space = build_space("paper", base, {f: tuple(sorted({*values, getattr(base, f)}))
                                            for f, values in SEARCHABLE_PARTITIONS.items()})
        params = [p for p in space.searched if p.kind == "partition"]
        for m in VARIANTS:
            for combo in itertools.product(*(p.values for p in params)):
                point = {**dict(zip((p.name for p in params), combo)), "m": 1, "launch": "fused", "variant": m,
                         "mode": "static", "gemm": "generic"}
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


def store_key(source: str, compiler: str) -> str:
    return hashlib.sha256((compiler + "\0" + source).encode()).hexdigest()[:20]


def measured() -> tuple[str, dict]:
    doc = json.loads(MEASURED.read_text())
    return doc["compiler"], doc["builds"]


def usage_by_build() -> tuple[dict[Build, dict], list[Build]]:
    """Each build's measured {kernel: [registers, smem, driver blocks/SM]}, and the builds not measured."""
    compiler, store = measured()
    found, missing = {}, []
    for build, made_by in builds().items():
        entry = store.get(store_key(source_of(build, made_by), compiler))
        if entry is None:
            missing.append(build)
        else:
            found[build] = entry["usage"]
    return found, missing


def planned(build: Build, kernel: str) -> StageResources:
    part, flavor = build
    if kernel == "megakernel":
        return megakernel_resources(part, flavor=flavor)
    return stage_resources(part, Op[kernel.upper()], flavor=flavor)


def test_every_build_was_measured_from_the_kernels_in_this_checkout():
    _, missing = usage_by_build()
    assert not missing, (f"{len(missing)} builds have no device measurement (kernel sources changed?): run "
                         f"docs/results/occupancy_device/measure.py on a device, then this file with --write; "
                         f"first: {missing[0]}")


def test_plan_is_the_measured_build_and_its_occupancy_the_drivers():
    h200, v100 = load_gpu("h200"), load_gpu("v100")
    wrong = []
    for build, usage in usage_by_build()[0].items():
        for kernel, (regs, smem, driver) in usage.items():
            plan = planned(build, kernel)
            if (plan.regs_per_thread, plan.smem_bytes) != (regs, smem):
                wrong.append(f"{kernel} {build}: plan {plan.regs_per_thread} regs {plan.smem_bytes} B, "
                             f"build {regs} regs {smem} B")
            if blocks_per_sm(h200, plan) != driver:
                wrong.append(f"{kernel} {build}: plan {blocks_per_sm(h200, plan)} blocks/SM, driver {driver}")
            if plan.smem_bytes <= v100.max_smem_per_block_bytes:
                blocks_per_sm(v100, plan)
    assert not wrong, "\n".join(wrong[:20])


def test_the_h200_spec_has_the_sm_the_measurements_were_read_on():
    h100, h200 = load_gpu("h100"), load_gpu("h200")
    fields = ("regs_per_sm", "max_threads_per_sm", "max_blocks_per_sm", "smem_per_sm_bytes")
    assert [getattr(h100, f) for f in fields] == [getattr(h200, f) for f in fields]
    assert json.loads(MEASURED.read_text())["device"].startswith(("NVIDIA H100", "NVIDIA H200"))


def table_row(build: Build, made_by: tuple, usage: dict) -> dict:
    """One row of the register table; a flavor other than F(4) with vector loads names itself."""
    part, flavor = build
    row = {"partition": part.to_dict(), "layer": made_by[0].name}
    if flavor != DEFAULT_FLAVOR:
        row.update(variant=flavor.m, vector_loads=[flavor.vector_c, flavor.vector_k])
    row["registers"] = {k: usage[k][0] for k in KERNELS}
    return row


def warp_rows() -> list[dict]:
    """The warp-tiled GEMM builds of the paper layers in each precision, read on the H200
    (docs/results/occupancy_device/warp_registers.py), as table rows that name their body (and their precision
    where it is not FP32)."""
    first, rows, shaped = {}, [], []
    for r in json.loads(WARP_MEASURED.read_text())["builds"]:
        if r["gemm"] != "warp":
            continue
        key = partition_key(Partition(**r["partition"]), warp_flavor(r))
        row = {"partition": r["partition"], "layer": r["layer"], "variant": r["variant"],
               "vector_loads": [True, True], "gemm": "warp",
               **({"precision": r["precision"]} if r["precision"] != "fp32" else {}),
               "registers": {k: r["usage"][k][0] for k in KERNELS}}
        if key not in first:  # the first layer of a key speaks for every layer of it ...
            first[key] = r
            rows.append(row)
        elif occupancy(r) != occupancy(first[key]):  # ... but one whose occupancy differs has its own row
            shaped.append({**row, "shape": r["shape"]})
    return rows + shaped


def occupancy(r: dict) -> dict:
    """A measured build's blocks per SM in the kernels that hold its GEMM body. (The transform kernels'
    registers move between layers of one partition too, for the generic body as much as the warp one; the
    table keeps one layer's for them.)"""
    return {k: r["usage"][k][2] for k in ("megakernel", "gemm")}


def warp_flavor(r: dict) -> Flavor:
    return Flavor(r["variant"], True, True, r["gemm"], r["precision"], tuple(r["shape"]))


def test_a_warp_build_plans_its_own_measured_registers_and_the_drivers_occupancy():
    """The warp body's kernels mostly take the generic body's registers, but not always: ResNet-1's F(4)
    megakernel takes 138 where the generic one takes 117, three blocks an SM and not four. Registers also
    differ between layers of one partition (their sizes are compiled in): YOLOv3-1's takes 122, four blocks,
    so the table holds a row for its shape. Each table row's registers are checked on the layer it was read
    on, and every layer's occupancy of the kernels that hold the GEMM body."""
    h200 = load_gpu("h200")
    wrong, differs = [], 0
    made_by = {(json.dumps(r["partition"], sort_keys=True), r["variant"], r.get("precision", "fp32"),
                tuple(r.get("shape", ()))): r["layer"] for r in warp_rows()}
    for r in json.loads(WARP_MEASURED.read_text())["builds"]:
        if r["gemm"] != "warp":
            continue
        flavor = warp_flavor(r)
        key = json.dumps(r["partition"], sort_keys=True), r["variant"], r["precision"]
        own = made_by.get((*key, tuple(r["shape"])), made_by[(*key, ())]) == r["layer"]
        for kernel, (regs, smem, driver) in r["usage"].items():
            if not own and kernel not in occupancy(r):
                continue
            plan = planned((Partition(**r["partition"]), flavor), kernel)
            if (plan.regs_per_thread if own else regs, plan.smem_bytes, blocks_per_sm(h200, plan)) != (regs, smem, driver):
                wrong.append(f"{r['layer']} F{r['variant']} {r['gemm']} {kernel}: plan {plan}, build {regs} regs "
                             f"{smem} B {driver} blocks/SM")
            generic = planned((Partition(**r["partition"]), Flavor(r["variant"])), kernel)
            differs += generic.regs_per_thread != regs
    assert not wrong, "\n".join(wrong[:20])
    assert differs > 0


def test_a_3xtf32_build_plans_its_own_registers_not_its_ffma_twins():
    """The 3xTF32 body holds its split operands and tensor-core partial sums besides the FFMA accumulators:
    YOLOv3-1's F(4) warp megakernel takes 148 registers where its FFMA twin takes 122, three blocks an SM and
    not four, which made its fused 3xTF32 build slower than the FFMA one on the H200."""
    h200 = load_gpu("h200")
    layer = load_layer("YOLOv3-1")
    part = warp_partition(layer, partition_for(layer, "h200"))
    blocks = {p: blocks_per_sm(h200, megakernel_resources(part, flavor=Flavor.of(layer, WinogradVariant(4), part,
                                                                                   "warp", p)))
              for p in ("fp32", "3xtf32")}
    assert blocks == {"fp32": 4, "3xtf32": 3}


def write_table() -> None:
    todo = builds()
    found, missing = usage_by_build()
    if missing:
        raise SystemExit(f"{len(missing)} builds are not measured; measure them on a device first")
    compiler, _ = measured()
    rows = [table_row(build, made_by, found[build]) for build, made_by in todo.items()] + warp_rows()
    doc = {"source": f"registers as CuPy compiles the kernels ({compiler}, sm_90, default k step), read on a "
                     "device (docs/results/occupancy_device); one build per partition and flavor (variant, "
                     "vector loads of C and K: F(4) with both where not named; the GEMM body where it is not the "
                     "generic one), compiled for `layer`",
           "builds": rows}
    REGISTER_TABLE.write_text(json.dumps(doc, indent=1) + "\n")


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    write_table()
