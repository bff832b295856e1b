"""The decision space: a *build* is everything that decides how a convolution runs, declared once.

A build is the launch (the fused megakernel or the four non-fused kernels), the Winograd variant, the
megakernel's scheduling mode (fused only), the GEMM task's body (`resources.GEMM_BODIES`: the generic
body, or the warp-tiled one where its tiling fits), the partition and the mapping. The simulator, `search`,
`bench`, `megasim.torch` and the mapping file read the axes from here, so a new axis value (a GEMM body, a
mode, a precision) is one declaration that every consumer picks up.

`Build.partition` None means "the layer's own": its row of the GPU's partition table, which a warp build
widens to the GEMM study's 128 output channels per task where that tiles (`resources.warp_partition`), the
shape `bench` times the warp body on. `discrete_builds` lists the builds of one layer at its own
partition and default mapping, every axis but the partition and mapping swept: the set the simulator ranks
for its pick, and, with the 3xTF32 twins of its warp builds, the set `bench` measures.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from megasim.contract.errors import MegasimError
from megasim.contract.modes import MODES, check_mode
from megasim.contract.problem import VARIANTS, Layer, Partition
from megasim.contract.resources import (GEMM_BODIES, PRECISIONS, check_kernel_build, check_precision,
                                       check_precision_body, check_warp_tiled, gemm_warp_tiled, warp_partition)

LAUNCHES = ("fused", "nonfused")
AXES = {"launch": LAUNCHES, "variant": VARIANTS, "mode": MODES, "gemm": GEMM_BODIES, "precision": PRECISIONS}


@dataclass(frozen=True)
class Build:
    """One way to run a layer. `mode` is the megakernel's and is "static" for a non-fused build. `precision` is
    the GEMM's arithmetic (`resources.PRECISIONS`): "3xtf32" runs on the warp body's tiling. `search` sweeps it
    where the model has a `gemm_precision` law; `bench` measures it; `discrete_builds` lists it only when asked
    (`simulate --all-builds` asks where the model predicts it; megasim.torch never does)."""

    launch: str = "fused"
    variant: int = 4
    mode: str = "static"
    gemm: str = "generic"
    partition: Partition | None = None
    precision: str = "fp32"

    def __post_init__(self):
        for axis, values in AXES.items():
            if getattr(self, axis) not in values:
                raise MegasimError(f"unknown {axis} {getattr(self, axis)!r}; known: "
                                   f"{', '.join(map(str, values))}")
        check_mode(self.mode)
        check_precision_body(self.gemm, self.precision)
        if self.launch == "nonfused" and self.mode != "static":
            raise MegasimError(f"a non-fused build has no scheduling mode (got {self.mode!r}): each of its four "
                               "kernels launches one block per task")

    @property
    def label(self) -> str:
        """Short and unique among one layer's builds: 'fused F4 persistent warp', 'nonfused F6 generic'."""
        mode = f" {self.mode}" if self.launch == "fused" else ""
        precision = f" {self.precision}" if self.precision != "fp32" else ""
        return f"{self.launch} F{self.variant}{mode} {self.gemm}{precision}"

    def to_dict(self) -> dict:
        """Every axis, FP32 included, so a reader's schema does not depend on the values; the partition
        where one is set."""
        out = {"launch": self.launch, "variant": self.variant, "mode": self.mode, "gemm": self.gemm,
               "precision": self.precision}
        if self.partition is not None:
            out["partition"] = self.partition.to_dict()
        return out


def build_partition(layer: Layer, build: Build, own: Partition) -> Partition:
    """The partition `build` runs on, given the layer's own: its explicit one, else `own`, widened for a warp
    build. A warp build whose partition the warp tiling does not fit is refused, as the kernels refuse it."""
    part = build.partition if build.partition is not None else (
        warp_partition(layer, own) if build.gemm == "warp" else own)
    if build.gemm == "warp":
        check_warp_tiled(layer, part)
    check_precision(part, build.gemm, build.precision)
    return part


def gemm_bodies_for(layer: Layer, own: Partition) -> tuple[str, ...]:
    """The GEMM bodies a layer can build at its own partition: the generic body always, the warp body where
    its widened partition tiles."""
    return tuple(g for g in GEMM_BODIES if g == "generic" or gemm_warp_tiled(layer, warp_partition(layer, own)))


def discrete_builds(layer: Layer, own: Partition, precisions: tuple[str, ...] = ("fp32",)) -> list[Build]:
    """Every build of `layer` at its own partition: each launch, variant, (fused) mode and GEMM body, at each of
    `precisions` (a precision other than FP32 only where the contract allows it there: `at_precision`), each
    build's FP32 form first. FP32 alone by default: the simulator predicts another precision only with a
    `gemm_precision` law."""
    out = []
    for gemm in gemm_bodies_for(layer, own):
        for variant in VARIANTS:
            fused = [Build("fused", variant, mode, gemm) for mode in MODES]
            for b in fused + [Build("nonfused", variant, "static", gemm)]:
                twins = [at_precision(layer, own, b, p) for p in precisions if p != "fp32"]
                out += ([b] if "fp32" in precisions else []) + [t for t in twins if t is not None]
    return out


def at_precision(layer: Layer, own: Partition, build: Build, precision: str) -> Build | None:
    """`build` at `precision`, or None where the contract refuses that precision on its body or partition
    (`check_kernel_build`): a twin the kernels cannot compile is no build of the space."""
    try:
        twin = replace(build, precision=precision)
        check_kernel_build(layer, build_partition(layer, twin, own), twin.gemm, precision=precision)
    except MegasimError:
        return None
    return twin


def simulated_builds(variant: int, mode: str, gemm: str, partition: Partition, precision: str = "fp32") -> dict:
    """The two builds one `megasim simulate` run predicts, fused in `mode` and non-fused, as dicts."""
    return {launch: Build(launch, variant, mode if launch == "fused" else "static", gemm, partition,
                          precision).to_dict() for launch in LAUNCHES}


def with_partition(build: Build, layer: Layer, own: Partition) -> Build:
    """`build` with the partition it runs on written out (what a mapping file records)."""
    return replace(build, partition=build_partition(layer, build, own))


__all__ = ["AXES", "LAUNCHES", "Build", "at_precision", "build_partition", "discrete_builds", "gemm_bodies_for",
           "simulated_builds", "with_partition"]
