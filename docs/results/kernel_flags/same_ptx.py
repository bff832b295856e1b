"""Do the calibrated builds compile to the same code after the kernel source gained its NCHW and self-reset flags?

    python docs/results/kernel_flags/same_ptx.py OLD_KERNEL_DIR OUT [--jobs 16] [--preprocess]

For every build the committed calibration measured (the runs and the decision-space builds of both GPUs'
raw folders: layer, variant, partition, mode, GEMM body), the translation unit `gpu.backend.kernel_source`
makes is compiled to PTX for sm_90 with nvcc, once against the kernel sources in OLD_KERNEL_DIR (the build
the profiles were re-validated on) and once against today's, with the options CuPy compiles them with.
Identical PTX means the flags changed no timed code: the profiles describe the new build as they did the
old. `--preprocess` compares the C preprocessor's output instead (cpp, on any machine): identical text
compiles to identical code. Writes OUT/same_ptx.json (or same_source.json) and prints the counts.

OLD_KERNEL_DIR is `git show <commit>:gpu/kernels/<file>` of each kernel file, written to a folder.
"""
import argparse
import json
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from megasim.contract.graph import build_graph
from megasim.contract.problem import Layer, Partition, WinogradVariant
from megasim.gpu.backend import COMPILE_OPTIONS, KERNEL_DIR, KernelConfig, config_header, kernel_build_hash

RAW = Path(__file__).resolve().parents[3] / "scenarios" / "calibrations" / "raw"


def configs() -> list[KernelConfig]:
    found = {}
    for gpu in ("h200", "h100"):
        for name, key in ((f"{gpu}_runs.json", "runs"), (f"{gpu}_builds.json", "builds")):
            path = RAW / name
            if not path.exists():
                continue
            for r in json.loads(path.read_text())[key]:
                layer = Layer(**{f: r["layer"][f] for f in "nchwk"}, name="x")
                graph = build_graph(layer, WinogradVariant(int(r["variant"])), Partition.from_dict(r["partition"]))
                cfg = KernelConfig.of(graph, mode=r.get("mode", "static"), gemm=r.get("gemm", "generic"))
                found.setdefault(cfg.shape_key(), cfg)
    return list(found.values())


def ptx(source: str, include: Path) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        cu, out = Path(tmp) / "k.cu", Path(tmp) / "k.ptx"
        cu.write_text(source)
        subprocess.run(["nvcc", "-ptx", "-arch=sm_90", *COMPILE_OPTIONS, f"-I{include}", str(cu), "-o", str(out)],
                       check=True, capture_output=True)
        return "\n".join(line for line in out.read_text().splitlines() if not line.startswith("//"))


def preprocessed(source: str, include: Path) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        cu = Path(tmp) / "k.cu"
        cu.write_text(source)
        out = subprocess.run(["cpp", "-P", "-x", "c++", f"-I{include}", str(cu)], check=True, capture_output=True,
                             text=True).stdout
        return "\n".join(line for line in out.splitlines() if line.strip())


def compare(cfg: KernelConfig, old: Path, make=ptx) -> dict:
    header = config_header(cfg)
    assert "MS_NCHW" not in header and "MS_SELF_RESET" not in header
    names = ("nonfused.cu", "megakernel.cu")
    a = make(header + "".join((old / n).read_text() for n in names), old)
    b = make(header + "".join((KERNEL_DIR / n).read_text() for n in names), KERNEL_DIR)
    lay = cfg.layer
    return {"layer": [lay.n, lay.c, lay.h, lay.w, lay.k], "m": cfg.variant.m, "partition": cfg.partition.to_dict(),
            "mode": cfg.mode, "gemm": cfg.gemm, "same": a == b, "chars": len(b)}


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("old", type=Path)
    p.add_argument("out", type=Path)
    p.add_argument("--jobs", type=int, default=16)
    p.add_argument("--preprocess", action="store_true")
    args = p.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    todo = configs()
    make, what = (preprocessed, "preprocess to identical text") if args.preprocess else (ptx, "compile to identical PTX")
    with ThreadPoolExecutor(args.jobs) as pool:
        rows = list(pool.map(lambda c: compare(c, args.old, make), todo))
    same = sum(r["same"] for r in rows)
    doc = {"new_build": kernel_build_hash(), "old_build": kernel_build_hash(args.old), "builds": len(rows),
           "identical": same, "compared": what, "rows": rows}
    name = "same_source.json" if args.preprocess else "same_ptx.json"
    (args.out / name).write_text(json.dumps(doc, indent=1))
    print(f"{same} of {len(rows)} calibrated builds {what} (build {doc['old_build']} -> {doc['new_build']})")
    return 0 if same == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
