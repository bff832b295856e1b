"""How megasim writes a file: through symlinks, with the umask's mode, naming the user's path, all or nothing."""
import json
import os
import stat

import pytest

from megasim.app.cli import main
from megasim.contract.errors import MegasimError
from megasim.io.writing import all_or_nothing, check_writable, write_then_rename

SMALL = ["--shape", "2,32,20,20,32"]


def test_a_symlink_is_written_through_to_its_target(tmp_path, capsys):
    (tmp_path / "data").mkdir()
    target = tmp_path / "data" / "trace.json"
    target.write_text("old")
    link = tmp_path / "t.json"
    link.symlink_to(target)
    assert main(["simulate", *SMALL, "--trace", str(link)]) == 0
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert json.loads(target.read_text())["traceEvents"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data", "t.json"]
    assert [p.name for p in (tmp_path / "data").iterdir()] == ["trace.json"]


@pytest.mark.parametrize("mask", [0o022, 0o027, 0o002])
def test_new_files_get_the_umasks_mode(tmp_path, mask):
    old = os.umask(mask)
    try:
        with write_then_rename(tmp_path / "a" / "x.json") as tmp:
            tmp.write_text("{}")
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "a" / "x.json").st_mode) == 0o666 & ~mask


def test_an_existing_file_keeps_its_mode(tmp_path):
    path = tmp_path / "x.json"
    path.write_text("old")
    path.chmod(0o640)
    with write_then_rename(path) as tmp:
        tmp.write_text("new")
    assert path.read_text() == "new" and stat.S_IMODE(path.stat().st_mode) == 0o640


def test_a_failed_write_names_the_users_path_not_the_temporary_one(tmp_path):
    path = tmp_path / "x.json"
    with pytest.raises(MegasimError) as info:
        with write_then_rename(path):
            raise OSError(28, "No space left on device", str(tmp_path / ".x.json.abc123.json"))
    assert str(info.value) == f"{path}: cannot write: No space left on device"
    assert list(tmp_path.iterdir()) == []


def test_all_or_nothing_renames_at_the_end_or_removes_everything(tmp_path):
    with all_or_nothing():
        with write_then_rename(tmp_path / "a.json") as tmp:
            tmp.write_text("a")
        assert not (tmp_path / "a.json").exists()
    assert (tmp_path / "a.json").read_text() == "a"
    with pytest.raises(MegasimError):
        with all_or_nothing():
            with write_then_rename(tmp_path / "new" / "deeper" / "b.json") as tmp:
                tmp.write_text("b")
            raise MegasimError("later output failed")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json"]


@pytest.mark.parametrize("make, fragment", [
    (lambda p: p.write_text(""), "is a file, not a folder"),
    (lambda p: p.mkdir(), None),
], ids=["under-a-file", "under-a-folder"])
def test_check_writable_creates_nothing(tmp_path, make, fragment):
    make(tmp_path / "x")
    before = sorted(tmp_path.rglob("*"))
    if fragment:
        with pytest.raises(MegasimError, match=fragment):
            check_writable(tmp_path / "x" / "y" / "z.json")
    else:
        check_writable(tmp_path / "x" / "y" / "z.json")
        check_writable(tmp_path / "x" / "y", folder=True)
    assert sorted(tmp_path.rglob("*")) == before
