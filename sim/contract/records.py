"""Per-thread-block records: the one shape both executors report.

The simulator fills every field. The GPU's trace mode fills the same fields
from `%smid` and `%globaltimer` (dispatch = start there: the hardware does not
say when it chose the SM). One plotting and comparison path serves both.
Times are microseconds from the start of the run.
"""
from __future__ import annotations

import numpy as np

TB_RECORD = np.dtype([
    ("block", np.int64),        # logical block index (the ticket order)
    ("task", np.int64),         # task id in the TaskGraph
    ("op", np.int8),            # sim.problem.Op
    ("sm", np.int32),           # SM the block ran on
    ("dispatch_us", np.float64),  # handed to the SM
    ("start_us", np.float64),   # has its ticket and task; polls its first counter
    ("ready_us", np.float64),   # dependencies satisfied; work begins
    ("end_us", np.float64),     # work done and counter signalled
])


def empty_records(n: int) -> np.ndarray:
    rec = np.zeros(n, dtype=TB_RECORD)
    rec["sm"] = -1
    return rec


def records_from_dicts(rows: list[dict]) -> np.ndarray:
    """A TB_RECORD array from JSON rows (how measured traces are stored)."""
    rec = empty_records(len(rows))
    for name in TB_RECORD.names:
        rec[name] = [r[name] for r in rows]
    return rec


def load_trace(path) -> np.ndarray:
    """Records of a trace file: {"records": [{block, task, op, sm, ...}, ...], ...}, sorted by block."""
    from megasim.contract.errors import MegasimError
    from megasim.io.files import read_json
    doc = read_json(path)
    try:
        rec = records_from_dicts(doc["records"])
    except (ValueError, KeyError, TypeError, OverflowError) as exc:
        raise MegasimError(f"{path}: not a trace file with TB records ({exc})") from None
    return rec[np.argsort(rec["block"], kind="stable")]


def spin_us(rec: np.ndarray) -> np.ndarray:
    return rec["ready_us"] - rec["start_us"]
