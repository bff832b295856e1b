"""A calibration corpus of generated convolution shapes (fidelity issue, item 1).

The 13 paper layers are all batch 64 with square, mostly power-of-two images and channels, so a model fitted
on them only extrapolates to batch 1, C = 3, ragged or non-square images and C != K. The generator draws
shapes across those axes from a fixed seed, so the corpus is the same on every machine. Each shape is train
or held-out by a hash of its name, never by run, so no held-out shape is ever fitted.

A shape is kept only if the kernels can build it on the GPU's partition table (`config_header` decides, as
for search) and its work is bounded (at most `MAX_GFLOP` of Winograd FLOPs and `MAX_MB` of tensors), so
that measuring it costs milliseconds.
"""
from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np

from megasim.contract.errors import MegasimError
from megasim.contract.problem import FLOAT_BYTES, VARIANTS, Layer, WinogradVariant

SEED = 20261123
BATCHES = (1, 2, 4, 8, 16, 32, 64, 128, 256)
CHANNELS = (3, 16, 24, 32, 48, 64, 96, 100, 128, 160, 192, 256, 320, 384, 512, 640, 768, 1024)
SIDES = (7, 9, 13, 14, 17, 28, 30, 31, 56, 57, 64, 100, 112, 127, 128, 200, 224, 256)
MAX_GFLOP = 40.0
MAX_MB = 1536.0
HELDOUT_PERCENT = 30


@dataclass(frozen=True)
class CorpusShape:
    layer: Layer
    variant: int
    split: str  # "train" or "heldout", from the shape's name


def split_of(name: str) -> str:
    return "heldout" if zlib.crc32(name.encode()) % 100 < HELDOUT_PERCENT else "train"


def _within_budget(layer: Layer, m: int) -> bool:
    tiles = layer.n * -(-layer.h // m) * -(-layer.w // m)
    a2 = (m + 2) ** 2
    gflop = 2.0 * a2 * tiles * layer.c * layer.k / 1e9
    mb = FLOAT_BYTES * (layer.n * layer.h * layer.w * (layer.c + layer.k) + a2 * (tiles * (layer.c + layer.k)
                                                                                   + layer.c * layer.k)) / 1e6
    return gflop <= MAX_GFLOP and mb <= MAX_MB


def buildable(layer: Layer, m: int, gpu: str) -> bool:
    from megasim.app.catalog import partition_for
    from megasim.gpu.backend import KernelConfig, config_header
    try:
        config_header(KernelConfig(layer, WinogradVariant(m), partition_for(layer, gpu)))
    except MegasimError:
        return False
    return True


def generate(count: int = 150, gpu: str = "h200", seed: int = SEED) -> list[CorpusShape]:
    """`count` distinct buildable shapes within budget, drawn in a fixed order from `seed`."""
    rng = np.random.default_rng(seed)
    out, seen = [], set()
    for _ in range(100 * count):
        if len(out) == count:
            break
        n, c, k = int(rng.choice(BATCHES)), int(rng.choice(CHANNELS)), int(rng.choice(CHANNELS))
        h = int(rng.choice(SIDES))
        w = h if rng.random() < 0.5 else int(rng.choice(SIDES))
        m = int(rng.choice(VARIANTS, p=(0.2, 0.5, 0.3)))
        name = f"gen-n{n}c{c}h{h}w{w}k{k}-f{m}"
        if name in seen or not _within_budget(Layer(n, c, h, w, k), m):
            continue
        seen.add(name)
        layer = Layer(n, c, h, w, k, name)
        if buildable(layer, m, gpu):
            out.append(CorpusShape(layer, m, split_of(name)))
    return out
