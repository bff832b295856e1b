"""Pack the device's measured traces (gzipped Perfetto files) into one compact NumPy archive.

    python docs/results/trace_sample/pack.py DIR_WITH_TRACES OUT.npz

Per case and launch (fused, nonfused): each block's task, SM, op, and its start, ready and end in ticks of
%globaltimer's 32 ns (every measured time is a multiple of it), in block order, stored as differences
(start from the previous block's start, ready from start, end from ready) so they compress, and the
problem (layer, variant, partition, mapping, mode) as JSON, so the traces cost a few MB in git instead
of 25. `megasim.app.calibrate.trace_law.load_sample` reads it back.
"""
import gzip
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

from megasim.app.calibrate.trace_law import FIELDS, TICK_US
from megasim.app.measured_trace import read_measured



def main(src: Path, out: Path) -> int:
    arrays, meta = {}, {}
    for f in sorted(src.glob("*.json.gz")):
        case = f.name[:-len(".json.gz")]
        with tempfile.NamedTemporaryFile(suffix=".json") as tmp:
            tmp.write(gzip.decompress(f.read_bytes()))
            tmp.flush()
            info, launches = read_measured(tmp.name)
        meta[case] = {k: v for k, v in info.items() if k != "order"}
        for launch, rec in launches.items():
            assert (np.asarray(rec["block"]) == np.arange(len(rec))).all()
            ticks = {f: np.round(np.asarray(rec[f], dtype=np.float64) / TICK_US).astype(np.int64)
                     for f in ("start_us", "ready_us", "end_us")}
            deltas = {"start_us": np.diff(ticks["start_us"], prepend=0), "ready_us": ticks["ready_us"] - ticks["start_us"],
                      "end_us": ticks["end_us"] - ticks["ready_us"]}
            for field in FIELDS:
                values = deltas[field] if field in deltas else np.asarray(rec[field])
                arrays[f"{case}/{launch}/{field}"] = values.astype(np.int32)
    arrays["__meta__"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    np.savez_compressed(out, **arrays)
    print(f"{len(meta)} cases -> {out} ({out.stat().st_size / 1e6:.1f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), Path(sys.argv[2])))
