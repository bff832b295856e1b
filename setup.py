"""Optional compilation of the engine's hot modules with Cython (pure Python mode).

`sim/engine/{clock,psqueue,weighted_psqueue,neighbours,l2,core}.py` (`megasim.engine.compiled.HOT`) are plain
Python; each has a `.pxd` beside it that gives Cython the C types of its classes' fields and hot locals
(`megasim.engine.compiled` says more). Where Cython and a C compiler are present (`pip install -e .` brings
Cython through `[build-system] requires`), the six are compiled to extension modules, which Python imports instead of the `.py` files; where they are not, or the build fails, or
`MEGASIM_PURE_PYTHON=1` is set, the package installs as pure Python and runs the same source. Predictions are
bit for bit the same either way: IEEE double arithmetic in the same order, no fast-math, no floating-point
contraction.
"""
from __future__ import annotations

import glob
import importlib.util
import os
import sys

from setuptools import setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
ENGINE = os.path.join(HERE, "sim", "engine")
DIRECTIVES = {"language_level": 3, "annotation_typing": False}
CFLAGS = ["-O1", "-g0", "-ffp-contract=off", "-fno-fast-math"]  # -O1 -g0: half the compile time of -O2 -g, as fast


def _compiled():
    """`sim/engine/compiled.py` by path (the package's dependencies need not be installed to build it)."""
    spec = importlib.util.spec_from_file_location("_megasim_compiled", os.path.join(ENGINE, "compiled.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _pure(why) -> None:
    """No extensions: remove any an earlier build left in the source tree, so the `.py` files are imported."""
    for path in glob.glob(os.path.join(ENGINE, "*.so")) + glob.glob(os.path.join(ENGINE, "*.pyd")):
        os.remove(path)
    stamp = os.path.join(ENGINE, _compiled().STAMP)
    if os.path.exists(stamp):
        os.remove(stamp)
    print(f"megasim: engine not compiled ({why}); it runs as pure Python", file=sys.stderr)


class OptionalBuildExt(build_ext):
    """A failed compile leaves the engine pure Python instead of failing the install; a build in the source
    tree (`pip install -e .`) stamps the sources it compiled. Compiles the modules in parallel."""

    def finalize_options(self):
        super().finalize_options()
        if not self.parallel:
            self.parallel = os.cpu_count() or 1

    def run(self):
        try:
            super().run()
        except Exception as exc:  # noqa: BLE001 - any failure means: no extension, pure Python
            _pure(exc)
            return
        if self.extensions and (self.inplace or getattr(self, "editable_mode", False)):
            compiled = _compiled()
            with open(os.path.join(ENGINE, compiled.STAMP), "w") as f:
                f.write(compiled.source_digest() + "\n")

    def copy_extensions_to_source(self):
        try:
            super().copy_extensions_to_source()
        except Exception as exc:  # noqa: BLE001
            _pure(exc)


def _include_dir() -> str:
    """A folder where `megasim` is `sim/`, so Cython finds `megasim.engine.core`'s declarations (`core.pxd`)
    under the name the extension is imported by: the folder names differ (pyproject's package-dir)."""
    inc = os.path.join(HERE, "build", "cython-include")
    link = os.path.join(inc, "megasim")
    if not os.path.islink(link):
        os.makedirs(inc, exist_ok=True)
        os.symlink(os.path.join(HERE, "sim"), link)
    return inc


def extensions() -> list:
    if os.environ.get("MEGASIM_PURE_PYTHON"):
        _pure("MEGASIM_PURE_PYTHON is set")
        return []
    try:
        from Cython.Build import cythonize
        from setuptools import Extension
        exts = [Extension(f"megasim.engine.{m}", [f"sim/engine/{m}.py"], extra_compile_args=CFLAGS)
                for m in _compiled().HOT]
        return cythonize(exts, compiler_directives=DIRECTIVES, include_path=[_include_dir()], quiet=True)
    except Exception as exc:  # noqa: BLE001 - no Cython, or it could not translate the modules
        _pure(exc)
        return []


setup(ext_modules=extensions(), cmdclass={"build_ext": OptionalBuildExt})
