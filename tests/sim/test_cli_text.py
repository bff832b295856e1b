"""What the CLI prints and draws: whole lines when piped, the files it wrote, one figure for one time, --version,
figure formats by extension, a quiet end when the reader closes the pipe, heatmaps that fit their text."""
import json
import os
import subprocess
import sys

import matplotlib
import pytest

from megasim.app.cli import main

SMALL = ["--shape", "2,32,20,20,32"]


def run(capsys, *argv):
    rc = main(list(argv))
    out, err = capsys.readouterr()
    assert rc == 0, err
    return out, err


def test_piped_output_keeps_each_line_whole(capsys):
    out, _ = run(capsys, "simulate", *SMALL)
    lines = out.splitlines()
    assert any(line.startswith("speedup fused / non-fused:") and line.rstrip().endswith(" s)") for line in lines)
    assert any(line.endswith("dispatch in_order_round_robin") and line.startswith("2x32x20x20->32") for line in lines)


def test_json_model_is_the_note_alone_and_the_table_says_model(capsys):
    doc = json.loads(run(capsys, "simulate", *SMALL, "--json")[0])
    assert not doc["model"].startswith("model:") and doc["model"].startswith(("calibrated profile", "datasheet spec"))
    assert f"model: {doc['model']}" in run(capsys, "simulate", *SMALL)[0]


def test_simulate_says_which_files_it_wrote(tmp_path, capsys):
    trace, plot = tmp_path / "t.json", tmp_path / "t.png"
    out, _ = run(capsys, "simulate", *SMALL, "--trace", str(trace), "--plot", str(plot))
    assert f"wrote {trace}" in out and f"wrote {plot}" in out
    out, err = run(capsys, "simulate", *SMALL, "--trace", str(trace), "--json")
    assert json.loads(out) and f"wrote {trace}" in err


@pytest.mark.parametrize("suffix, magic", [(".png", b"\x89PNG"), (".pdf", b"%PDF"), (".svg", b"<?xml")])
def test_plot_format_follows_the_extension(tmp_path, capsys, suffix, magic):
    path = tmp_path / f"t{suffix.upper() if suffix == '.pdf' else suffix}"
    run(capsys, "simulate", *SMALL, "--plot", str(path))
    assert path.read_bytes()[:len(magic)] == magic


def test_the_plot_title_gives_the_tables_time(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(matplotlib.rcParams, "svg.fonttype", "none")  # text stays text in the SVG
    path = tmp_path / "t.svg"
    doc = json.loads(run(capsys, "simulate", *SMALL, "--json", "--plot", str(path))[0])
    assert f"megakernel {doc['fused_us']:.1f} µs" in path.read_text()


def test_version(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0 and capsys.readouterr().out.startswith("megasim ")


def test_a_closed_pipe_ends_quietly():
    """`megasim layers | head -0`: the reader is gone before the first write."""
    proc = subprocess.Popen([sys.executable, "-c", "import sys; from megasim.app.cli import main; sys.exit(main())",
                             "layers"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ})
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 141 and err == ""


def test_heatmaps_of_a_two_by_two_space_fit_their_text(tmp_path, monkeypatch):
    """Every title, label and tick inside the figure (a 2x2 space used to clip them)."""
    from megasim.app.search import heatmaps
    from megasim.app.search.space import build_space
    from megasim.contract.problem import Partition
    space = build_space("paper", Partition(), {"dig": (0, 64), "dgo": (0,), "m": (1, 2)})
    table = [{"status": "ok", "dig": d, "m": m, "dgo": 0, "fused_us": 30.0 + d / 64 + m} for d in (0, 64) for m in (1, 2)]
    seen = []
    monkeypatch.setattr(heatmaps, "save_figure", lambda fig, path, dpi: seen.append(fig))
    heatmaps.plot_pair(table, space, "dig", "m", "D_IG (blocks)", tmp_path / "h.png",
                       "ResNet-2 on h200: predicted megakernel time over (D_IG, M), cf. paper Fig. 9\nbest, 4 evaluations")
    fig = seen[0]
    fig.canvas.draw()
    box = fig.bbox
    renderer = fig.canvas.get_renderer()
    texts = [t for ax in fig.axes for t in (ax.title, ax.xaxis.label, ax.yaxis.label, *ax.get_xticklabels(),
                                             *ax.get_yticklabels()) if t.get_text()]
    assert len(texts) >= 6
    for t in texts:
        ext = t.get_window_extent(renderer)
        assert box.x0 - 1 <= ext.x0 and ext.x1 <= box.x1 + 1 and box.y0 - 1 <= ext.y0 and ext.y1 <= box.y1 + 1, t.get_text()
