"""Per-block traces of small corpus shapes (session 15): the trace sample's cases run 67 us and longer, and the
company law fitted on them errs most on launches under 200 us.

    python docs/results/fidelity_v2/session15/device/small_traces.py OUT   # on the device, after .ci/device_site.sh

`docs/results/trace_sample/run_device.py` with its cases replaced: 14 *training* corpus shapes (never held-out
ones; nothing is fitted on them here either) of 19-76 us fused, F(2), F(4) and F(6), static, under the paper's
default mapping. Traces come back as tar files beside `summary.json`; `../../../trace_sample/pack.py` packs them.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "trace_sample"))
import run_device  # noqa: E402

SMALL = ["gen-n8c3h7w7k96-f2", "gen-n2c96h7w7k192-f2", "gen-n16c24h13w13k96-f2", "gen-n1c256h64w13k96-f2",
         "gen-n16c32h31w64k16-f2", "gen-n2c3h13w28k96-f4", "gen-n2c24h31w31k16-f4", "gen-n2c320h14w14k24-f4",
         "gen-n2c48h28w28k192-f4", "gen-n4c320h9w9k48-f4", "gen-n64c24h14w14k48-f4", "gen-n1c100h9w9k160-f6",
         "gen-n8c16h9w112k24-f6", "gen-n8c48h17w30k192-f6"]


def cases():
    from megasim.app.calibrate.corpus import generate
    shapes = {s.layer.name: s for s in generate(150, "h200")}
    for name in SMALL:
        assert shapes[name].split == "train", name
        yield name, shapes[name].layer, shapes[name].variant, {}, "static"


if __name__ == "__main__":
    run_device.cases = cases
    sys.exit(run_device.main(Path(sys.argv[1])))
