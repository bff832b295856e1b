"""`megasim simulate --precision`: a 3xTF32 build is predicted where the model has a `gemm_precision` law, on the
warp body's tiling, and refused in one line otherwise."""
import json

import pytest

from megasim.app.calibrate.profile import profile_path
from megasim.app.cli import main
from megasim.contract.build import Build
from megasim.contract.errors import MegasimError

LAYER = ["--shape", "4,128,28,28,128", "--json"]
LAWS = 'laws = ["resident_sharing", "gemm_neighbour_stretch", "first_wave_stagger", "gemm_body_laws", "queue_pop"]'


def profile_with_the_law(tmp_path):
    """The committed H200 profile plus the tensor-core law at its fitted constants (fitted_law.json)."""
    text = profile_path("h200").read_text()
    assert LAWS in text
    path = tmp_path / "h200_tc.toml"
    path.write_text(text.replace(LAWS, LAWS[:-1] + ', "tensor_core_gemm"]\n'
                                 "tensor_core_gemm = { efficiency_ratio = 0.67, fused_efficiency_ratio = 0.52 }"))
    return path


def run(capsys, *args):
    rc = main(["simulate", *LAYER, *args])
    out, err = capsys.readouterr()
    return rc, out, err


def test_3xtf32_is_predicted_with_the_law_and_only_the_gemm_changes(tmp_path, capsys):
    prof = str(profile_with_the_law(tmp_path))
    rc, out, err = run(capsys, "--gemm", "warp", "--profile", prof)
    assert rc == 0, err
    fp32 = json.loads(out)
    rc, out, err = run(capsys, "--gemm", "warp", "--precision", "3xtf32", "--profile", prof)
    assert rc == 0, err
    tc = json.loads(out)
    assert tc["precision"] == "3xtf32" and fp32["precision"] == "fp32"
    assert tc["builds"]["nonfused"]["precision"] == "3xtf32" and "precision" not in fp32["builds"]["nonfused"]
    filt, inp, gemm, outp = tc["nonfused_kernels_us"]
    assert (filt, inp, outp) == pytest.approx([fp32["nonfused_kernels_us"][i] for i in (0, 1, 3)])
    assert gemm != pytest.approx(fp32["nonfused_kernels_us"][2])


@pytest.mark.parametrize("args, said", [
    (["--gemm", "warp", "--precision", "3xtf32"], "needs a gemm_precision law"),
    (["--precision", "3xtf32"], "runs on the warp GEMM body's tiling"),
    (["--precision", "3xtf32", "--all-builds"], "--all-builds run FP32 builds"),
])
def test_3xtf32_that_cannot_be_predicted_is_refused_in_one_line(capsys, args, said):
    rc, out, err = run(capsys, *args)
    assert rc == 2 and said in err and len(err.strip().splitlines()) == 1 and not out


def test_a_build_names_its_precision_only_when_it_is_not_fp32():
    assert Build().label == "fused F4 static generic" and "precision" not in Build().to_dict()
    tc = Build("nonfused", 4, "static", "warp", precision="3xtf32")
    assert tc.label == "nonfused F4 warp 3xtf32" and tc.to_dict()["precision"] == "3xtf32"
    with pytest.raises(MegasimError, match="warp GEMM body's tiling"):
        Build(precision="3xtf32")
    with pytest.raises(MegasimError, match="unknown precision 'tf32'"):
        Build(gemm="warp", precision="tf32")


SEARCH = ["search", "--shape", "4,128,28,28,128", "--quiet", "--jobs", "1", "--method", "random"]


def test_a_search_opens_the_precision_only_where_the_model_predicts_it(tmp_path, capsys):
    """Without the law a pin to 3xtf32 is refused in one line; with it, the pinned search's best.json names the
    precision, and `simulate --mapping` reads it back."""
    pytest.importorskip("optuna")
    rc = main([*SEARCH, "--budget", "1", "--precision", "3xtf32", "--gemm", "warp", "--out", str(tmp_path / "a")])
    err = capsys.readouterr().err
    assert rc == 2 and "needs a model with a gemm_precision law" in err and len(err.strip().splitlines()) == 1
    prof = str(profile_with_the_law(tmp_path))
    out = tmp_path / "b"
    rc = main([*SEARCH, "--budget", "2", "--precision", "3xtf32", "--gemm", "warp", "--launch", "nonfused",
               "--profile", prof, "--out", str(out)])
    assert rc == 0, capsys.readouterr().err
    best = json.loads((out / "best.json").read_text())
    assert best["precision"] == "3xtf32" and best["gemm"] == "warp"
    capsys.readouterr()
    rc = main(["simulate", "--mapping", str(out / "best.json"), "--profile", prof, "--json"])
    doc, err = capsys.readouterr()
    assert rc == 0, err
    assert json.loads(doc)["precision"] == "3xtf32"


def test_an_unpinned_search_with_the_law_searches_both_precisions(tmp_path):
    from megasim.app.calibrate.profile import simulation_model
    from megasim.app.catalog import resolve_layer
    from megasim.app.cli import build_parser
    from megasim.app.search.command import prepare
    args = build_parser().parse_args([*SEARCH, "--profile", str(profile_with_the_law(tmp_path))])
    gpu, _, intervals = simulation_model(args.gpu, args.uncalibrated, args.profile)
    _, space = prepare(resolve_layer(None, args.shape), args, gpu, intervals)
    assert dict((p.name, p.values) for p in space.searched)["precision"] == ("fp32", "3xtf32")
    args = build_parser().parse_args(SEARCH)
    gpu, _, intervals = simulation_model(args.gpu, args.uncalibrated, None)
    _, space = prepare(resolve_layer(None, args.shape), args, gpu, intervals)
    assert "precision" not in {p.name for p in space.searched}
