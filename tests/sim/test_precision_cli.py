"""`megasim simulate --precision`: a 3xTF32 build is predicted where the model has a `gemm_precision` law (the
committed H200 profile has one, fitted by calibration; the H100's and the datasheet specs have none), on the
warp body's tiling, and refused in one line otherwise."""
import json

import pytest

from megasim.app.cli import main
from megasim.contract.build import Build
from megasim.contract.errors import MegasimError

LAYER = ["--shape", "4,128,28,28,128", "--json"]


def run(capsys, *args):
    rc = main(["simulate", *LAYER, *args])
    out, err = capsys.readouterr()
    return rc, out, err


def test_3xtf32_is_predicted_with_the_law_and_only_the_gemm_changes(capsys):
    rc, out, err = run(capsys, "--gemm", "warp")
    assert rc == 0, err
    fp32 = json.loads(out)
    rc, out, err = run(capsys, "--gemm", "warp", "--precision", "3xtf32")
    assert rc == 0, err
    tc = json.loads(out)
    assert tc["precision"] == "3xtf32" and fp32["precision"] == "fp32"
    assert tc["builds"]["nonfused"]["precision"] == "3xtf32" and fp32["builds"]["nonfused"]["precision"] == "fp32"
    filt, inp, gemm, outp = tc["nonfused_kernels_us"]
    assert (filt, inp, outp) == pytest.approx([fp32["nonfused_kernels_us"][i] for i in (0, 1, 3)])
    assert gemm != pytest.approx(fp32["nonfused_kernels_us"][2])


@pytest.mark.parametrize("args, said", [
    (["--gemm", "warp", "--precision", "3xtf32", "--gpu", "h100"], "needs a gemm_precision law"),
    (["--gemm", "warp", "--precision", "3xtf32", "--uncalibrated"], "needs a gemm_precision law"),
    (["--precision", "3xtf32"], "runs on the warp GEMM body's tiling"),
    (["--precision", "3xtf32", "--all-builds", "--gpu", "h100"], "needs a gemm_precision law"),
])
def test_3xtf32_that_cannot_be_predicted_is_refused_in_one_line(capsys, args, said):
    rc, out, err = run(capsys, *args)
    assert rc == 2 and said in err and len(err.strip().splitlines()) == 1 and not out


def test_a_build_names_its_precision_in_its_dict_always_and_in_its_label_when_it_is_not_fp32():
    """The dict (every --json output) has one schema whatever the values; the short label stays short."""
    assert Build().label == "fused F4 static generic" and Build().to_dict()["precision"] == "fp32"
    tc = Build("nonfused", 4, "static", "warp", precision="3xtf32")
    assert tc.label == "nonfused F4 warp 3xtf32" and tc.to_dict()["precision"] == "3xtf32"
    with pytest.raises(MegasimError, match="warp GEMM body's tiling"):
        Build(precision="3xtf32")
    with pytest.raises(MegasimError, match="unknown precision 'tf32'"):
        Build(gemm="warp", precision="tf32")


SEARCH = ["search", "--shape", "4,128,28,28,128", "--quiet", "--jobs", "1", "--method", "random"]


def test_a_search_opens_the_precision_only_where_the_model_predicts_it(tmp_path, capsys):
    """Without the law (the H100's profile) a pin to 3xtf32 is refused in one line; with it (the H200's), the
    pinned search's best.json names the precision, and `simulate --mapping` reads it back."""
    pytest.importorskip("optuna")
    rc = main([*SEARCH, "--budget", "1", "--precision", "3xtf32", "--gemm", "warp", "--gpu", "h100",
               "--out", str(tmp_path / "a")])
    err = capsys.readouterr().err
    assert rc == 2 and "needs a model with a gemm_precision law" in err and len(err.strip().splitlines()) == 1
    out = tmp_path / "b"
    rc = main([*SEARCH, "--budget", "2", "--precision", "3xtf32", "--gemm", "warp", "--launch", "nonfused",
               "--out", str(out)])
    assert rc == 0, capsys.readouterr().err
    best = json.loads((out / "best.json").read_text())
    assert best["precision"] == "3xtf32" and best["gemm"] == "warp"
    capsys.readouterr()
    rc = main(["simulate", "--mapping", str(out / "best.json"), "--json"])
    doc, err = capsys.readouterr()
    assert rc == 0, err
    assert json.loads(doc)["precision"] == "3xtf32"
    from megasim.app.torch.schedules import from_mapping_file
    with pytest.raises(MegasimError, match="megasim.torch runs FP32 builds"):
        from_mapping_file(out / "best.json", "h200")


def test_an_unpinned_search_with_the_law_searches_both_precisions():
    """The H200's search opens the axis by default, `--precision fp32` closes it, and the H100's (no law) never
    has it."""
    from megasim.app.calibrate.profile import simulation_model
    from megasim.app.catalog import resolve_layer
    from megasim.app.cli import build_parser
    from megasim.app.search.command import prepare

    def searched(*flags):
        args = build_parser().parse_args([*SEARCH, *flags])
        gpu, _, intervals = simulation_model(args.gpu, args.uncalibrated, args.profile)
        _, space = prepare(resolve_layer(None, args.shape), args, gpu, intervals)
        return dict((p.name, p.values) for p in space.searched)

    assert searched()["precision"] == ("fp32", "3xtf32")
    assert "precision" not in searched("--precision", "fp32")
    assert "precision" not in searched("--gpu", "h100")


def test_megasim_torch_searches_fp32_only_under_a_profile_with_the_law(monkeypatch):
    """The H200's profile has the law, yet megasim.torch's schedule search never opens the precision axis: its
    schedules carry no precision, and its kernels run FP32."""
    from megasim.app.calibrate.profile import simulation_model
    from megasim.app.torch.schedules import search_schedule
    assert simulation_model("h200")[0].model.law("gemm_precision") is not None
    seen = []

    class Seen(Exception):
        pass

    def capture(problem, space, config):
        seen.append(({p.name for p in space.searched}, problem.precision))
        raise Seen

    monkeypatch.setattr("megasim.app.search.runner.run_search", capture)
    with pytest.raises(Seen):
        search_schedule((4, 128, 28, 28, 128), "h200", budget=2)
    (searched, precision), = seen
    assert "precision" not in searched and {"launch", "gemm"} <= searched and precision == "fp32"


def test_all_builds_ranks_the_precisions_the_model_predicts_or_the_one_pinned(capsys):
    def labels(*args):
        rc, out, err = run(capsys, "--all-builds", *args)
        assert rc == 0, err
        return [b["label"] for b in json.loads(out)["builds"]]
    both, fp32, tensor = labels(), labels("--precision", "fp32"), labels("--precision", "3xtf32")
    assert set(both) == set(fp32) | set(tensor) and not set(fp32) & set(tensor)
    assert all(lab.endswith(" warp 3xtf32") for lab in tensor) and not any("3xtf32" in lab for lab in fp32)
    assert "3xtf32" not in " ".join(labels("--gpu", "h100"))
