"""Input paths that are not regular files, empty values, options given twice, flags missing the flag they work
with, and output paths that loop: each one line on stderr, exit code 2, within the alarm, nothing left behind.

One case is one line of `CASES`: an id, the command (`{tmp}` is the test's folder), and a phrase the message
must hold; `''` stands for an empty argument. The folder holds `fifo`, `fifo.toml` and `fifo.journal` (FIFOs,
made with os.mkfifo: reading one waits for a writer, so a case that reads it would hang without the alarm),
`maps/conv2_x.json` (a FIFO where `--mappings` looks for a network layer's mapping file), `loop` and
`loop.png` (links to themselves), `a` and `b` (links to each other). Every case that could write names an
output under `{tmp}/out`; afterwards the folder must be exactly as it was. The CLI runs in-process.
"""
import os
import stat

import pytest

from megasim.app.catalog import SCENARIOS
from megasim.app.cli import main

from ..conftest import CALIBRATION_RAW
from .conftest import assert_refused

SMALL = "simulate --shape 2,32,20,20,32 --trace {tmp}/out/t.json"
SEARCH = "search --shape 2,32,20,20,64 --quiet --jobs 1 --budget 1 --out {tmp}/out/s"
PROFILE = str(SCENARIOS / "calibrations" / "h200.toml")
RUNS = str(CALIBRATION_RAW / "h200_runs.json")

CASES = [
    # input paths: FIFOs, folders, devices and loops are refused before a byte is read
    ("fifo-mapping", "simulate --mapping {tmp}/fifo --trace {tmp}/out/t.json", "fifo: is a FIFO, not a regular file"),
    ("fifo-gpu-spec", SMALL + " --gpu {tmp}/fifo.toml", "fifo.toml: is a FIFO"),
    ("fifo-compare", "compare {tmp}/fifo --plot {tmp}/out/o.png", "fifo: is a FIFO"),
    ("fifo-replay-trace", SMALL + " --policy replay --replay-trace {tmp}/fifo", "fifo: is a FIFO"),
    ("fifo-profile", SMALL + " --profile {tmp}/fifo", "--profile {tmp}/fifo"),
    ("fifo-measurements", f"validate --profile {PROFILE} --measurements {{tmp}}/fifo --out {{tmp}}/out", "fifo"),
    ("fifo-validate-profile", f"validate --profile {{tmp}}/fifo --measurements {RUNS} --out {{tmp}}/out", "fifo"),
    ("fifo-in-mappings-dir", "simulate --network resnet50 --mappings {tmp}/maps --plot {tmp}/out/p.png",
     "maps/conv2_x.json: is a FIFO"),
    ("fifo-search-storage", SEARCH + " --storage {tmp}/fifo.journal", "fifo.journal: is a FIFO"),
    ("fifo-search-sqlite", SEARCH + " --storage sqlite:///{tmp}/fifo", "fifo: is a FIFO"),
    ("fifo-trace-sample", "calibrate --from-raw --trace-sample {tmp}/fifo --out {tmp}/out/p.toml", "{tmp}/fifo"),
    ("folder-mapping", "simulate --mapping {tmp}/maps --trace {tmp}/out/t.json", "maps: is a folder, not a file"),
    ("folder-gpu-spec", SMALL + " --gpu {tmp}/maps.toml", "maps.toml: is a folder, not a file"),
    ("folder-compare", "compare {tmp}/maps", "maps: is a folder, not a file"),
    ("device-mapping", "simulate --mapping /dev/zero --trace {tmp}/out/t.json", "/dev/zero: is a character device"),
    ("device-compare", "compare /dev/zero", "/dev/zero: is a character device"),
    ("loop-mapping", "simulate --mapping {tmp}/loop --trace {tmp}/out/t.json", "loop: cannot read"),
    # empty values, refused by the parser for every string flag of every command
    ("empty-layer", SMALL.replace("--shape 2,32,20,20,32", "--layer="), "argument --layer: empty value"),
    ("empty-shape", "simulate --shape= --trace {tmp}/out/t.json", "argument --shape: empty value"),
    ("empty-strategy", SMALL + " --strategy=", "argument --strategy: empty value"),
    ("empty-network", "simulate --network= --plot {tmp}/out/p.png", "argument --network: empty value"),
    ("empty-trace", "simulate --shape 2,32,20,20,32 --trace=", "argument --trace: empty value"),
    ("empty-plot", SMALL + " --plot=", "argument --plot: empty value"),
    ("empty-gpu", SMALL + " --gpu=", "argument --gpu: empty value"),
    ("empty-policy", SMALL + " --policy=", "argument --policy: empty value"),
    ("empty-partition", SMALL + " --partition=", "argument --partition: empty value"),
    ("empty-mapping", SMALL + " --mapping=", "argument --mapping: empty value"),
    ("empty-opt", SMALL + " --opt=", "argument --opt: empty value"),
    ("empty-profile", SMALL + " --profile=", "argument --profile: empty value"),
    ("search-empty-strategy", SEARCH + " --strategy=", "argument --strategy: empty value"),
    ("search-empty-storage", SEARCH + " --storage=", "argument --storage: empty value"),
    ("search-empty-space", SEARCH + " --space=", "argument --space: empty value"),
    ("bench-empty-out", "bench --out=", "argument --out: empty value"),
    ("bench-empty-layer", "bench --layer= --out {tmp}/out/b.json", "argument --layer: empty value"),
    ("compare-empty-trace", "compare '' --plot {tmp}/out/o.png", "argument measured: empty value"),
    ("compare-empty-plot", "compare {tmp}/fifo --plot=", "argument --plot: empty value"),
    ("calibrate-empty-raw", "calibrate --from-raw --raw= --out {tmp}/out/p.toml", "argument --raw: empty value"),
    ("calibrate-empty-out", "calibrate --from-raw --out=", "argument --out: empty value"),
    ("validate-empty-measurements", f"validate --profile {PROFILE} --measurements= --out {{tmp}}/out",
     "argument --measurements: empty value"),
    ("validate-empty-report", "validate --gpu h200 --out {tmp}/out --report=", "argument --report: empty value"),
    # one option given twice: only one of the values could be used
    ("dig-flag-and-opt", SMALL + " --dig 64 --opt dig=128", "--dig 64 and --opt dig=128 give one option twice"),
    ("opt-twice", SMALL + " --opt dig=1 --opt dig=2", "--opt dig given twice"),
    ("flag-twice", SMALL + " --dig 64 --dig 128", "argument --dig: given twice (64, then 128)"),
    ("layer-twice", "simulate --layer ResNet-1 --layer ResNet-2 --trace {tmp}/out/t.json", "--layer: given twice"),
    ("partition-key-twice", SMALL + " --partition threads=128,threads=256", "threads given twice"),
    ("space-key-twice", SEARCH + " --space dig=0 --space dig=0,512", "--space dig given twice (0, then 0,512)"),
    ("replay-trace-and-opt", SMALL + " --policy replay --replay-trace {tmp}/fifo --opt trace={tmp}/fifo",
     "--replay-trace and --opt trace=... both name"),
    # a flag without the flag its help says it works with would be ignored
    ("mappings-without-network", SMALL + " --mappings {tmp}/maps", "--mappings works only with --network"),
    ("bench-mappings-without-network", "bench --mappings {tmp}/maps --out {tmp}/out/b.json",
     "--mappings works only with --network"),
    ("bench-plot-without-network", "bench --plot {tmp}/out/p.png", "--plot works only with --network"),
    ("bench-precision-with-network", "bench --precision fp32 --network resnet50 --out {tmp}/out/b.json",
     "--precision picks the precisions of a layer's decision space"),
    ("search-reps-without-validate-top", SEARCH + " --reps 5", "--reps works only with --validate-top"),
    ("calibrate-budget-without-measuring", "calibrate --from-raw --budget-s 5 --out {tmp}/out/p.toml",
     "--budget-s is for measuring a whole calibration; --from-raw measures nothing"),
    ("calibrate-scheduler-from-raw", "calibrate --from-raw --scheduler local --out {tmp}/out/p.toml",
     "--scheduler is for measuring a whole calibration; --from-raw measures nothing"),
    ("calibrate-scheduler-with-corpus", "calibrate --corpus 3 --scheduler local", "--corpus measures on one GPU"),
    ("calibrate-scheduler-address", "calibrate --scheduler tcp://h:1 --out {tmp}/out/p.toml", "local or local:N"),
    ("calibrate-scheduler-zero", "calibrate --scheduler local:0 --out {tmp}/out/p.toml", "worker count >= 1"),
    ("calibrate-from-raw-no-spec", "calibrate --gpu rtx9090 --from-raw --raw {tmp} --out {tmp}/out/p.toml",
     "no spec of rtx9090"),
    ("calibrate-gpu-not-a-name", "calibrate --gpu h2/00 --out {tmp}/out/p.toml", "names a GPU"),
    ("calibrate-trace-sample-with-jobs", "calibrate --from-raw --sharing jobs --trace-sample {tmp}/fifo "
     "--out {tmp}/out/p.toml", "--trace-sample works only with --sharing resident"),
    # output paths whose links loop
    ("trace-symlink-loop", "simulate --shape 2,32,20,20,32 --trace {tmp}/loop", "loop: cannot write: its symlinks"),
    ("trace-under-a-loop", "simulate --shape 2,32,20,20,32 --trace {tmp}/loop/t.json", "its symlinks form a loop"),
    ("trace-two-link-loop", "simulate --shape 2,32,20,20,32 --trace {tmp}/a", "a: cannot write: its symlinks"),
    ("plot-symlink-loop", SMALL + " --plot {tmp}/loop.png", "loop.png: cannot write: its symlinks"),
    ("validate-out-loop", "validate --gpu h200 --out {tmp}/loop", "loop: cannot write: its symlinks"),
    # counts this machine cannot run, budgets that measure nothing, values no build takes (2026-12-08)
    ("jobs-beyond-cores", SEARCH.replace("--jobs 1", "--jobs 100000"), "more worker processes than this machine"),
    ("local-beyond-cores", SEARCH.replace("--jobs 1 ", "") + " --scheduler local:500", "more workers than this"),
    ("local-and-other-jobs", SEARCH + " --scheduler local:2", "give one of them"),
    ("validate-jobs-beyond-cores", f"validate --profile {PROFILE} --measurements {RUNS} --jobs 100000 --out {{tmp}}/out",
     "more worker processes"),
    ("calibrate-negative-budget", "calibrate --gpu h200 --budget-s -1 --raw {tmp}/out/raw --out {tmp}/out/p.toml",
     "--budget-s wants a positive number"),
    ("corpus-and-no-corpus", f"validate --profile {PROFILE} --measurements {RUNS} --corpus --no-corpus --out {{tmp}}/out",
     "given twice"),
    ("space-m-zero", SEARCH + " --space m=0", "--space m=0: paper mapping: m must be an integer >= 1"),
    ("space-m-negative", SEARCH + " --space m=-1", "--space m=-1"),
    ("space-threads-odd", SEARCH + " --space threads=33", "threads must be a multiple of 32"),
    ("storage-in-memory", SEARCH + " --storage sqlite://", "keeps the study in memory"),
    ("all-builds-network", "simulate --network resnet34 --all-builds", "--all-builds ranks one layer's builds"),
    ("all-builds-no-3xtf32-build", "simulate --layer DenseNet --all-builds --precision 3xtf32 --json",
     "DenseNet has no 3xtf32 build"),
    ("all-builds-3xtf32-without-law", "simulate --gpu v100 --all-builds --precision 3xtf32",
     "needs a gemm_precision law"),
    ("report-is-the-out-folder", f"validate --profile {PROFILE} --measurements {RUNS} --out {{tmp}}/out/v "
     "--report {tmp}/out/v", "names the folder --out writes into"),
    ("partition-huge-value", "simulate --partition tiles_per_group=" + "9" * 100000, "far beyond any partition"),
]


@pytest.fixture
def place(tmp_path):
    for name in ("fifo", "fifo.toml", "fifo.journal"):
        os.mkfifo(tmp_path / name)
    (tmp_path / "maps").mkdir()
    (tmp_path / "maps.toml").mkdir()
    os.mkfifo(tmp_path / "maps" / "conv2_x.json")
    os.symlink("loop", tmp_path / "loop")
    os.symlink("loop.png", tmp_path / "loop.png")
    os.symlink("b", tmp_path / "a")
    os.symlink("a", tmp_path / "b")
    return tmp_path


def _argv(text: str, tmp) -> list[str]:
    return ["" if a == "''" else a for a in text.format(tmp=tmp).split()]


def _tree(root) -> list:
    """Every path under `root` with its kind, links not followed (a loop cannot be)."""
    found = []
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = os.path.join(folder, name)
            found.append((os.path.relpath(path, root), stat.S_IFMT(os.lstat(path).st_mode)))
    return sorted(found)


@pytest.mark.parametrize("argv, phrase", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_flag_is_one_line_exit_2_and_leaves_nothing(place, capsys, alarm, argv, phrase):
    before = _tree(place)
    rc = main(_argv(argv, place))
    out, err = capsys.readouterr()
    assert_refused(rc, err, phrase.format(tmp=place))
    assert _tree(place) == before


@pytest.mark.parametrize("argv", [
    SMALL + " --dig 64 --opt dgo=128",
    SMALL + " --opt dig=64 --opt dgo=128",
    SMALL + " --partition input_channels_per_task=16,filter_k_per_task=8",
], ids=["flag-and-other-opt", "two-opts", "two-partition-keys"])
def test_different_options_together_still_run(tmp_path, capsys, alarm, argv):
    """The twice-given refusals are about one name; different names side by side are as before."""
    rc = main(argv.format(tmp=tmp_path).split())
    assert rc == 0, capsys.readouterr().err
    assert (tmp_path / "out" / "t.json").exists()


def test_a_mapping_file_in_the_mappings_folder_is_still_read(place, capsys, alarm):
    """A regular file where --mappings looks is used; only what is not a regular file is refused."""
    from megasim.app.network import mapping_file
    from megasim.app.network_spec import load_network_spec
    entry = load_network_spec("resnet50").layers[1]
    (place / "maps" / f"{entry.name}.json").write_text("{}")
    assert mapping_file(place / "maps", entry) == place / "maps" / f"{entry.name}.json"
    entry_without = load_network_spec("resnet50").layers[2]
    assert mapping_file(place / "maps", entry_without) is None
