"""The search's store: one-line errors for bad storage, one search per --out, honest counts after a stop."""
import json
import os
import subprocess
import sys
import time

import pytest

from megasim.app.cli import main
from megasim.app.search import objective
from megasim.app.search.lock import LOCK_NAME, FolderLock

optuna = pytest.importorskip("optuna")

SHAPE = ["--shape", "2,32,20,20,64", "--quiet", "--jobs", "1"]
SPACE = ["--launch", "fused", "--variant", "4", "--mode", "static", "--gemm", "generic", "--space", "dig=0,64",
         "--space", "dgo=0", "--space", "m=1,2", "--space", "tiles_per_group=64", "--space", "gemm_k_per_task=64",
         "--space", "gemm_mats_per_task=2", "--space", "threads=256"]


def run(capsys, *argv):
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def one_line_error(rc, err, message):
    assert rc == 2, err
    assert err.startswith("megasim: error: ") and err.count("\n") == 1 and "Traceback" not in err, err
    assert message in err, err


def real_sqlite_study(path):
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    optuna.create_study(study_name="x", storage=f"sqlite:///{path}").optimize(lambda t: t.suggest_int("a", 0, 3),
                                                                            n_trials=3)


def make_bad(tmp_path, kind):
    """The storage a case names: garbage, a truncated database, a journal of something else."""
    if kind == "garbage":
        (tmp_path / "g.db").write_bytes(os.urandom(4096))
        return f"sqlite:///{tmp_path / 'g.db'}"
    if kind == "truncated":
        real_sqlite_study(tmp_path / "whole.db")
        (tmp_path / "t.db").write_bytes((tmp_path / "whole.db").read_bytes()[:20000])
        return f"sqlite:///{tmp_path / 't.db'}"
    if kind == "not-a-journal":
        (tmp_path / "j.journal").write_text('{"a": 1}\n{"b": 2}\n')
        return str(tmp_path / "j.journal")
    if kind == "under-a-file":
        (tmp_path / "f").write_text("x")
        return f"sqlite:///{tmp_path / 'f' / 'study.db'}"
    return kind


# (storage or flags, message): every one refused with one line, exit 2, and no --out left behind.
BAD = [
    (["--storage", "notaurl"], "expected an Optuna RDB URL"),
    (["--storage", "garbage"], "file is not a database"),
    (["--storage", "truncated"], "malformed"),
    (["--storage", "not-a-journal"], "not an Optuna journal"),
    (["--storage", "under-a-file"], "is a file, not a folder"),  # the message every output path gets
    (["--storage", "mysql://u@127.0.0.1:9/db"], "storage mysql://"),
    (["--scheduler", "local:0"], "worker count"),
    (["--scheduler", "local:two"], "worker count"),
    (["--jobs", "0"], "--jobs"),
    (["--network", "resnet50", "--layer", "ResNet-2"], "not both"),
    (["--network", "nosuchnet"], "unknown network"),
]


@pytest.mark.parametrize("extra, message", BAD, ids=[" ".join(b[0])[:40] for b in BAD])
def test_bad_storage_and_flags_are_one_line_and_leave_nothing(tmp_path, capsys, extra, message):
    if extra[0] == "--storage":
        extra = ["--storage", make_bad(tmp_path, extra[1])]
    out = tmp_path / "new" / "out"
    argv = ["search", *SPACE, "--out", out, *extra]
    argv[1:1] = [] if "--network" in extra else SHAPE
    rc, _, err = run(capsys, *argv)
    one_line_error(rc, err, message)
    assert not (tmp_path / "new").exists()


def test_an_unwritable_out_is_one_line(tmp_path, capsys):
    (tmp_path / "f").write_text("x")
    rc, _, err = run(capsys, "search", *SHAPE, *SPACE, "--out", tmp_path / "f" / "out")
    one_line_error(rc, err, "is a file, not a folder")


HOLD = """
import sys, time
from megasim.app.search.lock import FolderLock
with FolderLock(sys.argv[1], "test"):
    print("held", flush=True)
    sys.stdin.read()
"""


def test_a_held_lock_refuses_and_leaves_the_store_alone(tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    # POSIX record locks belong to a process: the holder must be another one.
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(out)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True)
    try:
        assert holder.stdout.readline() == "held\n"
        rc, _, err = run(capsys, "search", *SHAPE, *SPACE, "--out", out)
    finally:
        holder.communicate("", timeout=30)
    one_line_error(rc, err, f"pid {holder.pid}")
    assert sorted(p.name for p in out.iterdir()) == [LOCK_NAME]


def _journal_study(out):
    from optuna.storages.journal import JournalFileBackend, JournalStorage
    storage = JournalStorage(JournalFileBackend(str(out / "study.journal")))
    (name,) = optuna.get_all_study_names(storage)
    return optuna.load_study(study_name=name, storage=storage)


def test_after_a_stop_the_summary_counts_what_the_store_holds(tmp_path, capsys, monkeypatch):
    out = tmp_path / "out"
    real, calls = objective.evaluate, []

    def stopped(*args):
        calls.append(args)
        if len(calls) == 2:  # the reference, then Ctrl-C in the first simulated trial
            raise KeyboardInterrupt
        return real(*args)

    monkeypatch.setattr(objective, "evaluate", stopped)
    rc, text, err = run(capsys, "search", *SHAPE, *SPACE, "--method", "grid", "--out", out)
    assert rc == 130 and "1 interrupted" in text and "interrupted:" in err
    monkeypatch.setattr(objective, "evaluate", real)
    rc, text, _ = run(capsys, "search", *SHAPE, *SPACE, "--method", "grid", "--out", out)
    assert rc == 0 and "4 evaluations" in text and "0 failed; 1 interrupted" in text
    states = [t.state.name for t in _journal_study(out).get_trials()]
    assert states.count("FAIL") == 1 and len(states) == 5  # the grid's 4 points and the interrupted one
    table = json.loads((out / "evaluations.json").read_text())["evaluations"]
    assert [r["status"] for r in table].count("interrupted") == 1


def test_each_trial_is_one_write_and_a_torn_journal_resumes(tmp_path, capsys):
    out = tmp_path / "out"
    rc, _, _ = run(capsys, "search", *SHAPE, *SPACE, "--method", "random", "--budget", "3", "--out", out)
    journal = out / "study.journal"
    lines = journal.read_text().splitlines()
    trials = [json.loads(line) for line in lines if json.loads(line)["op_code"] == 4]  # CREATE_TRIAL
    assert rc == 0 and len(trials) == 3
    assert len(lines) <= len(trials) + 6  # the study, its attributes (reference, non-fused), one line per trial
    assert all(t["state"] in (1, 2) and t["user_attrs"] for t in trials)  # written finished, with their numbers
    journal.write_bytes(journal.read_bytes()[:-25])  # a crash in the middle of the last append
    rc, text, _ = run(capsys, "search", *SHAPE, *SPACE, "--method", "random", "--budget", "4", "--out", out)
    assert rc == 0 and "4 evaluations" in text
    assert len(_journal_study(out).get_trials()) == 4


def test_an_abandoned_running_trial_is_marked_and_its_point_evaluated_again(tmp_path, capsys):
    out = tmp_path / "out"
    rc, _, _ = run(capsys, "search", *SHAPE, *SPACE, "--method", "grid", "--budget", "2", "--out", out)
    study = _journal_study(out)
    done = [(t.params["dig"], t.params["m"]) for t in study.get_trials()]
    left = next({"dig": d, "m": m} for d in (0, 64) for m in (1, 2) if (d, m) not in done)
    study.enqueue_trial(left)
    trial = study.ask()  # a search that died with this point in flight
    assert {n: trial.suggest_categorical(n, v) for n, v in (("dig", [0, 64]), ("m", [1, 2]))} == left
    rc, text, _ = run(capsys, "search", *SHAPE, *SPACE, "--method", "grid", "--out", out)
    assert rc == 0 and "1 interrupted" in text
    trials = _journal_study(out).get_trials()
    assert trials[2].state.name == "FAIL"
    assert any(t.params == left and t.state.name == "COMPLETE" for t in trials[3:])


def test_search_without_optuna_is_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "optuna", None)
    rc, _, err = run(capsys, "search", *SHAPE, "--out", tmp_path / "out")
    one_line_error(rc, err, "pip install")
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_two_searches_on_one_out_one_refuses_and_the_other_finishes(tmp_path):
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "megasim.app.cli", "search", "--layer", "ResNet-2", "--variant", "4", "--mode",
           "static", "--method", "random", "--quiet", "--jobs", "1", "--out", str(out)]
    first = subprocess.Popen([*cmd, "--budget", "12"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while f'"pid": {first.pid}' not in ((out / LOCK_NAME).read_text() if (out / LOCK_NAME).exists() else ""):
        assert first.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    second = subprocess.run([*cmd, "--budget", "5"], capture_output=True, text=True, timeout=120)
    assert first.poll() is None, "the first search finished before the second tried the lock"
    one_line_error(second.returncode, second.stderr, "is in use by another megasim search")
    stdout, stderr = first.communicate(timeout=120)
    assert first.returncode == 0, stderr
    assert "12 evaluations" in stdout
    assert len(json.loads((out / "evaluations.json").read_text())["evaluations"]) == 12
