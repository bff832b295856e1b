"""The simulator's prediction for a 3xTF32 GEMM on the 13 paper layers, written before any such kernel exists.

    python docs/results/tensor_core/predict.py docs/results/tensor_core      # any machine, about a minute

For each paper layer at batch 64, each Winograd variant F(2x2), F(4x4), F(6x6), fused (static, the paper's
mapping) and non-fused, with the warp GEMM body where it tiles the layer (else the generic one): the calibrated
H200 profile's prediction with FP32 FFMA products, and with 3xTF32 products (the same profile plus the
`tensor_core_gemm` law, its constants measured by `mma_rate.py`, its efficiency ratio the declared 1); and the
ceiling a warpgroup body would have, the law at the datasheet's dense TF32 rate (494.7 TFLOP/s: 2048 FLOP per
cycle per SM at 1830 MHz, `wgmma_us`). Also the GEMM stage alone (the non-fused GEMM kernel). Writes
OUT/predicted_3xtf32.json and OUT/predicted_3xtf32.md.

The committed outputs were written at 9622c5a, when the simulator still predicted a 3xTF32 GEMM on the generic
body's tiling (DenseNet's rows). No such body exists, and the simulator now refuses it as the kernels do, so a
re-run leaves those rows FP32-only; every other row is unchanged.
"""
import json
import sys
from pathlib import Path

from megasim.app.calibrate.profile import simulation_model
from megasim.app.catalog import layer_names, load_layer, partition_for
from megasim.contract.graph import build_graph
from megasim.contract.interpreter import RunConfig
from megasim.contract.mapping import make
from megasim.contract.problem import WinogradVariant
from megasim.contract.resources import check_kernel_build, gemm_warp_tiled, warp_partition
from megasim.contract.errors import MegasimError
from megasim.engine.interpreter import SimpyInterpreter
from dataclasses import replace


def main() -> int:
    out = Path(sys.argv[1])
    gpu, note, _ = simulation_model("h200")
    fp32 = [x.name for x in gpu.model.laws if x.name != "tensor_core_gemm"]  # the profile's fitted law left out
    gpu = replace(gpu, model=gpu.model.with_laws(fp32, {}))
    law_names = fp32 + ["tensor_core_gemm"]
    tc = replace(gpu, model=gpu.model.with_laws(law_names, {}))
    wg = replace(gpu, model=gpu.model.with_laws(law_names, {"tensor_core_gemm": {
        "tf32_flop_per_cycle_per_sm": 2048.0, "tensor_clock_ratio": round(1830 / 1979.49, 4)}}))
    rows = []
    for name in layer_names()[:13]:
        layer = load_layer(name)
        base = partition_for(layer, "h200")
        for m in (2, 4, 6):
            variant = WinogradVariant(m)
            wide = warp_partition(layer, base)
            gemm, part = ("warp", wide) if gemm_warp_tiled(layer, wide) else ("generic", base)
            try:
                check_kernel_build(layer, part, gemm)
            except MegasimError:
                continue
            graph = build_graph(layer, variant, part)
            mapping = make(graph, "paper")
            row = {"layer": name, "variant": m, "gemm": gemm}
            for label, precision, model in (("fp32", "fp32", gpu), ("3xtf32", "3xtf32", tc), ("wgmma", "3xtf32", wg)):
                if precision != "fp32" and gemm != "warp":
                    continue  # no 3xTF32 body off the warp tiling: the simulator refuses it as the kernels do
                sim = SimpyInterpreter(model, gemm=gemm, precision=precision)
                row[f"fused_{label}_us"] = sim.run(graph, mapping, RunConfig("fused")).time_us
                row[f"nonfused_{label}_us"] = sim.run(graph, None, RunConfig("nonfused")).time_us
                row[f"gemm_{label}_us"] = sim.run(graph, None, RunConfig("gemm")).time_us
            rows.append(row)
            print(name, m, {k: round(v, 1) for k, v in row.items() if k.endswith("_us")}, flush=True)
    laws = {label: vars(m.model.law("gemm_precision")) for label, m in (("3xtf32", tc), ("wgmma", wg))}
    doc = {"model": note, "laws": laws, "rows": rows}
    out.mkdir(parents=True, exist_ok=True)
    (out / "predicted_3xtf32.json").write_text(json.dumps(doc, indent=1))
    lines = ["| layer | F | GEMM body | fused FP32 / 3xTF32 / wgmma us | non-fused FP32 / 3xTF32 / wgmma us | "
             "GEMM kernel FP32 / 3xTF32 / wgmma us | fused / non-fused, 3xTF32 |", "|---|---|---|---|---|---|---|"]

    def three(r, kind):
        return " / ".join(f"{r[f'{kind}_{label}_us']:.0f}" if f"{kind}_{label}_us" in r else "-"
                          for label in ("fp32", "3xtf32", "wgmma"))

    for r in rows:
        lines.append(f"| {r['layer']} | {r['variant']} | {r['gemm']} | {three(r, 'fused')} | {three(r, 'nonfused')} | "
                     f"{three(r, 'gemm')} | "
                     + (f"{r['fused_3xtf32_us'] / r['nonfused_3xtf32_us']:.2f} |" if "fused_3xtf32_us" in r else "- |"))
    (out / "predicted_3xtf32.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
