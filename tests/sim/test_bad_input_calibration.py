"""Bad raw calibration files and flags: each one line on stderr, exit code 2, before any fitting or simulating.

One case is one line of `CASES`: an id, the command (`{tmp}` is the test's folder), the files to write there
first, and a phrase the message must hold. `{tmp}/raw` starts as the committed H200 raw folder (links to its
files), so a case names only the file it spoils. Every command names its outputs under `{tmp}/out`, which must
not exist afterwards; an alarm turns a hang, or a refusal that came only after the work, into a failure.
"""
import io
import json

import numpy as np
import pytest

from megasim.app.cli import main

from ..conftest import CALIBRATION_RAW, REPO
from .conftest import assert_refused

PROFILE = (REPO / "scenarios" / "calibrations" / "h200.toml").read_text()
RUNS = json.loads((CALIBRATION_RAW / "h200_runs.json").read_text())
TRACE = json.loads((CALIBRATION_RAW / "h200_trace_resnet2.json").read_text())
MICRO = json.loads((CALIBRATION_RAW / "h200_micro.json").read_text())
CORPUS = (CALIBRATION_RAW / "h200_corpus.jsonl").read_text().splitlines()
GRAPH_TIMES = (CALIBRATION_RAW / "h200_kernel_graph_times.jsonl").read_text().splitlines()
TENSOR = json.loads((CALIBRATION_RAW / "h200_tensor_core.json").read_text())
LINE = json.loads(CORPUS[0])

CAL = "calibrate --gpu h200 --from-raw --raw {tmp}/raw --out {tmp}/out/p.toml"
VAL = "validate --profile {tmp}/p.toml --measurements {tmp}/raw/h200_runs.json --out {tmp}/out --json"
SIM = "simulate --profile {tmp}/p.toml --shape 2,32,20,20,32 --trace {tmp}/out/t.json"


def changed(doc: dict, path: tuple, value) -> dict:
    """A deep copy of `doc` with the value at `path` (keys and indices) set, or removed when `value` is DROP."""
    doc = json.loads(json.dumps(doc))
    *head, last = path
    where = doc
    for key in head:
        where = where[key]
    if value is DROP:
        del where[last]
    else:
        where[last] = value
    return doc


DROP = object()


class Link:
    """A file of the table written as a symbolic link to `to` (itself: a loop)."""

    def __init__(self, to: str):
        self.to = to


def corpus(*path, value, line: int = 0) -> str:
    """The corpus file with one value of its `line`th line changed."""
    lines = list(CORPUS)
    lines[line] = json.dumps(changed(json.loads(lines[line]), path, value))
    return "\n".join(lines) + "\n"


def trace(*path, value) -> str:
    return json.dumps(changed(TRACE, path, value))


def micro(*path, value) -> str:
    return json.dumps(changed(MICRO, path, value))


def runs(*path, value) -> str:
    return json.dumps(changed(RUNS, path, value))


def tensor(*path, value) -> str:
    return json.dumps(changed(TENSOR, path, value))


def sample(**change) -> bytes:
    """A one-case trace sample of a small layer; `change` replaces fields of its only launch or its meta."""
    n = 4
    meta = {"c": {"layer": {"n": 2, "c": 32, "h": 20, "w": 20, "k": 32, "name": "small"}, "variant": 4,
                  "partition": {"tiles_per_group": 8}, "strategy": "paper", "params": {}, "mode": "static",
                  "launches": ["fused"]}}
    fields = {"task": np.arange(n), "op": np.zeros(n, int), "sm": np.arange(n), "start_us": np.ones(n, int),
              "ready_us": np.ones(n, int), "end_us": np.ones(n, int)}
    meta["c"].update(change.pop("meta", {}))
    fields.update(change)
    buf = io.BytesIO()
    np.savez(buf, __meta__=np.frombuffer(json.dumps(meta).encode(), np.uint8),
             **{f"c/fused/{k}": np.asarray(v) for k, v in fields.items()})
    return buf.getvalue()


def inverted(text: str, key: str) -> str:
    head, rest = text.split(f"\n{key} = [", 1)
    pair, tail = rest.split("]", 1)
    low, high = pair.split(", ")
    return f"{head}\n{key} = [{high}, {low}]{tail}"


HELDOUT_NONE = json.dumps({**RUNS, "runs": [r for r in RUNS["runs"] if r["split"] == "train"]})
RECORD_KEYS = ["block", "task", "op", "sm", "dispatch_us", "start_us", "ready_us", "end_us"]

CASES = [
    # <gpu>_corpus.jsonl, read by calibrate (and by validate, checked before its simulations)
    ("corpus-not-json", CAL, {"raw/h200_corpus.jsonl": "garbage{\n"}, "line 1: not JSON"),
    ("corpus-torn-line", CAL, {"raw/h200_corpus.jsonl": CORPUS[0] + "\n" + CORPUS[1][:40] + "\n"}, "line 2: not JSON"),
    ("corpus-empty", CAL, {"raw/h200_corpus.jsonl": ""}, "h200_corpus.jsonl: empty"),
    ("corpus-blank-lines", CAL, {"raw/h200_corpus.jsonl": "\n\n"}, "h200_corpus.jsonl: empty"),
    ("corpus-line-a-list", CAL, {"raw/h200_corpus.jsonl": "[1, 2]\n"}, "line 1: not a corpus shape"),
    ("corpus-no-runs", CAL, {"raw/h200_corpus.jsonl": corpus("runs", value=DROP)}, "line 1: runs is missing"),
    ("corpus-runs-str", CAL, {"raw/h200_corpus.jsonl": corpus("runs", value="x")}, "line 1: runs should be a valid list"),
    ("corpus-split-other", CAL, {"raw/h200_corpus.jsonl": corpus("split", value="test")}, "line 1: split"),
    ("corpus-split-mismatch", CAL, {"raw/h200_corpus.jsonl": corpus("runs", 0, "split", value="heldout")},
     "a shape is fitted or held out whole"),
    ("corpus-time-nan", CAL, {"raw/h200_corpus.jsonl": corpus("runs", 0, "fused_us", value=float("nan"))},
     "line 1: runs[0].fused_us should be a finite number"),
    ("corpus-time-inf", CAL, {"raw/h200_corpus.jsonl": corpus("runs", 1, "nonfused_us", value=float("inf"))},
     "runs[1].nonfused_us"),
    ("corpus-time-neg", CAL, {"raw/h200_corpus.jsonl": corpus("runs", 0, "fused_us", value=-3.0)},
     "runs[0].fused_us should be greater than 0"),
    ("corpus-time-str", CAL, {"raw/h200_corpus.jsonl": corpus("runs", 0, "fused_us", value="fast")}, "fused_us"),
    ("corpus-no-layer", CAL, {"raw/h200_corpus.jsonl": corpus("runs", 0, "layer", value=DROP)},
     "runs[0].layer is missing"),
    ("corpus-strategy", CAL, {"raw/h200_corpus.jsonl": corpus("runs", 0, "strategy", value="best")},
     "line 1: runs[0]: unknown mapping strategy"),
    ("corpus-late-line", CAL, {"raw/h200_corpus.jsonl": corpus("runs", 0, "fused_us", value=None, line=149)},
     "line 150: runs[0].fused_us"),
    # <gpu>_trace_resnet2.json
    ("trace-records-str", CAL, {"raw/h200_trace_resnet2.json": trace("records", value="x")},
     "records should be a valid list"),
    ("trace-records-empty", CAL, {"raw/h200_trace_resnet2.json": trace("records", value=[])}, "records has 0 items"),
    ("trace-no-records", CAL, {"raw/h200_trace_resnet2.json": trace("records", value=DROP)},
     "not a calibration raw trace"),
    ("trace-no-layer", CAL, {"raw/h200_trace_resnet2.json": trace("layer", value=DROP)}, "no layer"),
    ("trace-record-no-end", CAL, {"raw/h200_trace_resnet2.json": trace("records", 0, "end_us", value=DROP)},
     "records[0].end_us is missing"),
    ("trace-record-nan", CAL, {"raw/h200_trace_resnet2.json": trace("records", 3, "ready_us", value=float("nan"))},
     "records[3].ready_us"),
    ("trace-record-neg", CAL, {"raw/h200_trace_resnet2.json": trace("records", 3, "start_us", value=-1.0)},
     "records[3].start_us"),
    ("trace-record-sm-str", CAL, {"raw/h200_trace_resnet2.json": trace("records", 0, "sm", value="x")},
     "records[0].sm"),
    ("trace-record-order", CAL, {"raw/h200_trace_resnet2.json": trace("records", 5, "end_us", value=0.0)},
     "has ready_us"),
    ("trace-task-twice", CAL, {"raw/h200_trace_resnet2.json": trace("records", 1, "task", value=0)},
     "ran more than once"),
    ("trace-not-json", CAL, {"raw/h200_trace_resnet2.json": "{"}, "malformed JSON"),
    ("trace-empty-file", CAL, {"raw/h200_trace_resnet2.json": ""}, "malformed JSON"),
    # <gpu>_micro.json
    ("micro-no-data", CAL, {"raw/h200_micro.json": "{}"}, "holds no micro-benchmark figures"),
    ("micro-a-list", CAL, {"raw/h200_micro.json": "[]"}, "holds no micro-benchmark figures"),
    ("micro-header-only", CAL, {"raw/h200_micro.json": json.dumps({"header": MICRO["header"]})}, "fp32 is missing"),
    ("micro-no-clock", CAL, {"raw/h200_micro.json": micro("fp32", "clock_mhz", value=DROP)},
     "fp32.clock_mhz is missing"),
    ("micro-clock-nan", CAL, {"raw/h200_micro.json": micro("fp32", "clock_mhz", value=float("nan"))},
     "fp32.clock_mhz should be a finite number"),
    ("micro-clock-zero", CAL, {"raw/h200_micro.json": micro("fp32", "clock_mhz", value=0)}, "fp32.clock_mhz"),
    ("micro-dram-str", CAL, {"raw/h200_micro.json": micro("dram", "read_gbps", value="4.5T")}, "dram.read_gbps"),
    ("micro-lead-sms-neg", CAL, {"raw/h200_micro.json": micro("dispatch_summary", "first_wave_lead_sms", value=[-1])},
     "dispatch_summary.first_wave_lead_sms[0]"),
    ("micro-not-json", CAL, {"raw/h200_micro.json": "nan nan"}, "malformed JSON"),
    # <gpu>_runs.json
    ("runs-empty-file", CAL, {"raw/h200_runs.json": ""}, "malformed JSON"),
    ("runs-time-nan", CAL, {"raw/h200_runs.json": runs("runs", 2, "fused_us", value=float("nan"))},
     "runs[2].fused_us should be a finite number"),
    ("runs-time-neg", CAL, {"raw/h200_runs.json": runs("runs", 2, "nonfused_us", value=-1)}, "runs[2].nonfused_us"),
    # <gpu>_kernel_graph_times.jsonl
    ("graph-times-empty", CAL, {"raw/h200_kernel_graph_times.jsonl": ""}, "kernel_graph_times.jsonl: empty"),
    ("graph-times-not-json", CAL, {"raw/h200_kernel_graph_times.jsonl": "{\n"}, "line 1: not JSON"),
    ("graph-times-neg", CAL, {"raw/h200_kernel_graph_times.jsonl": json.dumps(
        changed(json.loads(GRAPH_TIMES[0]), ("graph_kernels_us", 0), -2.0)) + "\n"}, "graph_kernels_us[0]"),
    # <gpu>_tensor_core.json (stage 5)
    ("tensor-not-json", CAL, {"raw/h200_tensor_core.json": "{"}, "malformed JSON"),
    ("tensor-no-rows", CAL, {"raw/h200_tensor_core.json": tensor("rows", value=[])}, "not a 3xTF32 measurement"),
    ("tensor-no-3xtf32", CAL, {"raw/h200_tensor_core.json": tensor("rows", 2, "3xtf32", value=DROP)},
     "rows[2]: 3xtf32 is missing"),
    ("tensor-time-neg", CAL, {"raw/h200_tensor_core.json": tensor("rows", 0, "3xtf32", "fused_us", value=-1.0)},
     "rows[0]: 3xtf32.fused_us should be greater than 0"),
    ("tensor-not-warp-tiled", CAL, {"raw/h200_tensor_core.json": tensor("rows", 0, "partition", "threads", value=256)},
     "rows[0]: ResNet-1: the warp-tiled GEMM body does not tile"),
    ("tensor-all-train", CAL, {"raw/h200_tensor_core.json": tensor("rows", value=TENSOR["rows"][:2])},
     "every row is a training row"),
    # <gpu>_trace_sample.npz and its summary
    ("sample-not-npz", CAL, {"raw/h200_trace_sample.npz": "text"}, "not a packed trace sample"),
    ("sample-nan", CAL, {"raw/h200_trace_sample.npz": sample(end_us=[1.0, float("nan"), 1.0, 1.0])}, "not a finite"),
    ("sample-truncated", CAL, {"raw/h200_trace_sample.npz": (CALIBRATION_RAW / "h200_trace_sample.npz").read_bytes()[
        :100000]}, "not a packed trace sample"),
    ("tensor-link-loop", CAL, {"raw/h200_tensor_core.json": Link("h200_tensor_core.json")}, "symbolic links"),
    ("builds-link-broken", CAL, {"raw/h200_builds.json": Link("nowhere.json")}, "h200_builds.json"),
    ("sample-end-negative", CAL, {"raw/h200_trace_sample.npz": sample(end_us=[1, 1, -1, 1])}, "end_us out of range"),
    ("sample-op-9", CAL, {"raw/h200_trace_sample.npz": sample(op=[0, 9, 0, 0])}, "op out of range"),
    ("sample-ragged", CAL, {"raw/h200_trace_sample.npz": sample(sm=[0, 1])}, "equally long"),
    ("sample-no-layer", CAL, {"raw/h200_trace_sample.npz": sample(meta={"layer": "ResNet-2"})}, "case 'c': layer"),
    ("sample-strategy", CAL, {"raw/h200_trace_sample.npz": sample(meta={"strategy": "best"})},
     "unknown mapping strategy"),
    ("sample-times-empty", VAL, {"p.toml": PROFILE, "raw/h200_trace_sample_summary.json": "[]"}, "has 0 items"),
    ("sample-times-nan", VAL, {"p.toml": PROFILE, "raw/h200_trace_sample_summary.json": json.dumps(
        [{"case": "ResNet-1", "fused_untraced_us": float("nan")}])}, "[0].fused_untraced_us"),
    # validate reads the same files, and refuses before simulating
    ("validate-no-heldout", VAL, {"p.toml": PROFILE, "raw/h200_runs.json": HELDOUT_NONE},
     'no run has split "heldout"'),
    ("validate-corpus-not-json", VAL, {"p.toml": PROFILE, "raw/h200_corpus.jsonl": "garbage{\n"}, "line 1: not JSON"),
    ("validate-micro-no-data", VAL, {"p.toml": PROFILE, "raw/h200_micro.json": "{}"}, "holds no micro-benchmark"),
    ("validate-trace-records-str", VAL, {"p.toml": PROFILE, "raw/h200_trace_resnet2.json": trace("records", value="x")},
     "records should be a valid list"),
    ("validate-sample-not-npz", VAL, {"p.toml": PROFILE, "raw/h200_trace_sample.npz": "text"},
     "not a packed trace sample"),
    # profiles: an inverted interval
    ("profile-fused-interval-inverted", SIM, {"p.toml": inverted(PROFILE, "fused_ratio")},
     "[uncertainty] fused_ratio = [1.029"),
    ("profile-margin-interval-inverted", VAL, {"p.toml": inverted(PROFILE, "margin_error")},
     "margin_error = [0.0809"),
    # flags the command would ignore
    ("jobs-sharing-trace-sample", CAL + " --sharing jobs --trace-sample {tmp}/raw/h200_trace_sample.npz", {},
     "--trace-sample works only with --sharing resident"),
    ("corpus-and-from-raw", "calibrate --gpu h200 --corpus 3 --from-raw --raw {tmp}/raw", {}, "drop --from-raw"),
    ("corpus-and-out", "calibrate --gpu h200 --corpus 3 --raw {tmp}/raw --out {tmp}/out/p.toml", {}, "drop --out"),
]


def _raw_folder(tmp_path, files: dict) -> None:
    """{tmp}/raw as links to the committed H200 raw files, then `files` written over them. The runs file is a
    copy: `validate` looks for the other files beside it, and would find them through a link's target."""
    raw = tmp_path / "raw"
    raw.mkdir()
    for path in CALIBRATION_RAW.glob("h200_*"):
        (raw / path.name).symlink_to(path)
    (raw / "h200_runs.json").unlink()
    (raw / "h200_runs.json").write_bytes((CALIBRATION_RAW / "h200_runs.json").read_bytes())
    for name, content in files.items():
        target = tmp_path / name
        target.unlink(missing_ok=True)
        if isinstance(content, Link):
            target.symlink_to(content.to)
        else:
            target.write_bytes(content if isinstance(content, bytes) else content.encode())



@pytest.mark.parametrize("argv, files, phrase", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_raw_file_is_one_line_exit_2_before_any_work(tmp_path, capsys, alarm, argv, files, phrase):
    _raw_folder(tmp_path, files)
    before = sorted(p.name for p in tmp_path.rglob("*"))
    rc = main(argv.format(tmp=tmp_path).split())
    out, err = capsys.readouterr()
    assert_refused(rc, err, phrase)
    assert sorted(p.name for p in tmp_path.rglob("*")) == before and not (tmp_path / "out").exists()


def test_the_committed_raw_files_the_cases_spoil_load():
    """Each case is one edit away from these, so it fails for its edit."""
    from megasim.app.calibrate.raw import load_corpus, load_micro, load_raw_trace, load_sample_times
    from megasim.app.calibrate.replay_check import load_replay_inputs
    from megasim.app.calibrate.trace_law import load_sample
    for gpu in ("h200", "h100"):
        assert len(load_corpus(CALIBRATION_RAW / f"{gpu}_corpus.jsonl")) == 150
        assert load_micro(CALIBRATION_RAW / f"{gpu}_micro.json")["fp32"]["clock_mhz"] > 1000
        assert len(load_raw_trace(CALIBRATION_RAW / f"{gpu}_trace_resnet2.json", 132)["records"]) == 2172
        assert load_sample_times(CALIBRATION_RAW / f"{gpu}_trace_sample_summary.json")
        assert load_replay_inputs(CALIBRATION_RAW, gpu) is not None
    assert load_sample(io.BytesIO(sample()))[0]["c"]["strategy"] == "paper"
    from megasim.app.calibrate.tensor_law import load_tensor_core
    assert len(load_tensor_core(CALIBRATION_RAW / "h200_tensor_core.json")) == 36  # 12 layers, F(2), F(4), F(6)
