"""A search that cannot give a result: one line on stderr, exit code 2, and nothing left in --out.

One case is one line of `CASES`: an id, the search's own flags (`{tmp}` is the test's folder), the files
to write there first, and a phrase the message must hold. Every search runs on a tiny pinned space
into an --out that exists already and must be left empty: no table, no journal, no `.search.lock`
(a folder the run creates is removed; `test_search_store.py` checks that). The CLI runs in-process
under an alarm; the Dask cases also run in a real process, where its shutdown noise would show.
"""
import os
import subprocess
import sys

import pytest

from megasim.app.cli import main
from megasim.app.search import lock, objective
from megasim.app.search.lock import LOCK_NAME, FolderLock
from megasim.contract.errors import MegasimError
from .conftest import assert_refused

pytest.importorskip("optuna")

SHAPE = ["--shape", "2,32,20,20,64"]
FLAGS = ["--quiet", "--jobs", "1", "--launch", "fused", "--variant", "4", "--mode", "static", "--gemm", "generic",
         "--space", "dig=0,64", "--space", "dgo=0",
         "--space", "m=1,2", "--space", "tiles_per_group=64", "--space", "gemm_k_per_task=64",
         "--space", "gemm_mats_per_task=2", "--space", "threads=256"]

CASES = [
    # nothing simulated: the shape `simulate` refuses is refused here too, with its reason
    ("every-point-too-big", "--shape 64,65536,28,28,65536", {}, "the search space has no legal point"),
    ("every-point-too-slow", "--shape 4096,128,112,112,128", {}, "no legal point (4 points; e.g. layer 4096x128"),
    # Dask addresses
    ("scheduler-no-port", "--scheduler bogus", {}, "--scheduler 'bogus': missing port number"),
    ("scheduler-host-no-port", "--scheduler tcp://bogus", {}, "missing port number"),
    ("scheduler-unknown-scheme", "--scheduler bogus://x:1", {}, "unknown address scheme 'bogus'"),
    ("scheduler-tls-unconfigured", "--scheduler tls://127.0.0.1:9", {},
     "cannot connect to the Dask scheduler at tls://127.0.0.1:9: TLS expects"),
    # storages refused once the folders are locked
    ("storage-unknown-dialect", "--storage bogus://x", {}, "storage bogus://x: Can't load plugin"),
    ("storage-journal-under-a-file", "--storage {tmp}/f/s.journal", {"f": "x"}, "is a file, not a folder"),
    ("storage-sqlite-under-a-file", "--storage sqlite:///{tmp}/f/s.db", {"f": "x"}, "is a file, not a folder"),
    ("storage-not-a-journal", "--storage {tmp}/j.journal", {"j.journal": '{"a": 1}\n'}, "not an Optuna journal"),
    ("storage-not-sqlite", "--storage sqlite:///{tmp}/g.db", {"g.db": "not a database\n" * 300},
     "file is not a database"),
    ("storage-no-suffix", "--storage {tmp}/s.txt", {}, "expected an Optuna RDB URL"),
]


def search(tmp_path, flags: str) -> list[str]:
    argv = flags.format(tmp=tmp_path).split()
    argv += [] if "--budget" in argv else ["--budget", "3"]
    return ["search", *([] if "--shape" in argv else SHAPE), *FLAGS, "--out", str(tmp_path / "out"), *argv]


def refused(capsys, rc, phrase) -> str:
    err = capsys.readouterr().err
    assert_refused(rc, err, phrase)
    return err


def left(tmp_path) -> list[str]:
    """What is in the test's folder, the (existing) --out's contents under out/."""
    return sorted([p.name for p in tmp_path.iterdir()] + [f"out/{p.name}" for p in (tmp_path / "out").iterdir()])


@pytest.mark.parametrize("flags, files, phrase", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_search_without_a_result_is_one_line_exit_2_and_leaves_nothing(tmp_path, capsys, alarm, flags, files,
                                                                         phrase):
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "out").mkdir()
    refused(capsys, main(search(tmp_path, flags)), phrase)
    assert left(tmp_path) == sorted([*files, "out"])


@pytest.mark.parametrize("storage, made", [("", ["out"]), ("--storage sqlite:///{tmp}/s.db", ["out"]),
                                           ("--method grid --storage {tmp}/s.journal", ["out"])],
                         ids=["journal-in-out", "sqlite", "grid-journal-beside"])
def test_a_search_whose_every_evaluation_fails_writes_nothing(tmp_path, capsys, monkeypatch, alarm, storage, made):
    """The first failure's message is the reason; no table, no best.json, no store this run made, no lock."""
    def fails(problem, partition, options):
        raise MegasimError(f"no good: dig={options['dig']} m={options['m']}")
    monkeypatch.setattr(objective, "evaluate", fails)
    (tmp_path / "out").mkdir()
    err = refused(capsys, main(search(tmp_path, storage)), "evaluations simulated (")
    assert "the first failure: no good: dig=" in err and "MegasimError" not in err
    assert left(tmp_path) == made


def test_a_failing_search_keeps_a_store_it_did_not_make(tmp_path, capsys, monkeypatch, alarm):
    """A resumed study's file stays (its finished trials are someone's work); only what this run made goes."""
    assert main(search(tmp_path, "--budget 2")) == 0
    capsys.readouterr()
    journal = (tmp_path / "out" / "study.journal").read_bytes()
    monkeypatch.setattr(objective, "evaluate", lambda *a: 1 / 0)
    other = [("m=1" if a == "m=1,2" else a) for a in search(tmp_path, "--budget 2")]  # another space, another study
    refused(capsys, main(other), "the first failure: ZeroDivisionError: division by zero")
    assert (tmp_path / "out" / "study.journal").read_bytes().startswith(journal)


@pytest.mark.parametrize("scheduler, phrase", [("bogus", "missing port number"),
                                               ("tls://127.0.0.1:9", "cannot connect to the Dask scheduler")],
                         ids=["no-port", "tls-unconfigured"])
def test_a_bad_scheduler_is_one_line_in_a_real_process(tmp_path, scheduler, phrase):
    """Dask's client finalizer once waited 6 s and printed a traceback as Python exited; nothing after the line."""
    done = subprocess.run([sys.executable, "-m", "megasim.app.cli", "search", *SHAPE, *FLAGS, "--scheduler", scheduler,
                           "--out", str(tmp_path / "out")], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and phrase in done.stderr, done.stderr
    assert not (tmp_path / "out").exists()


def test_a_lock_file_removed_under_a_waiting_search_is_not_shared(tmp_path, monkeypatch):
    """A refused search removes its lock while holding it; one that opened the file just before finds it
    gone once locked, and locks a new one at the path, which is what the next search will open."""
    first = FolderLock(tmp_path, "first").acquire()
    stale = os.open(tmp_path / LOCK_NAME, os.O_RDWR)
    first.release(remove=True)
    assert not (tmp_path / LOCK_NAME).exists()
    real_open, opened = os.open, []

    def open_first_the_stale(path, *args):
        opened.append(path)
        return stale if len(opened) == 1 else real_open(path, *args)
    monkeypatch.setattr(lock.os, "open", open_first_the_stale)
    second = FolderLock(tmp_path, "second").acquire()
    monkeypatch.undo()
    try:
        assert len(opened) == 2
        assert os.path.samestat(os.fstat(second._fd), os.stat(tmp_path / LOCK_NAME))
    finally:
        second.release()
    assert (tmp_path / LOCK_NAME).exists()  # a finished search leaves its lock file, as before
