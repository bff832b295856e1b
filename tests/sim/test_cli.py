"""The `megasim` command: the JSON contract, artefacts, and one-line errors with exit code 2."""
import json
from pathlib import Path

import pytest

from megasim.app.cli import main
from megasim.contract.graph import build_graph
from megasim.contract.mapping import MAPPINGS, make
from megasim.contract.options import declared
from megasim.engine.dispatch import DISPATCH_POLICIES
from megasim.contract.mapping.io import save_mapping
from megasim.contract.problem import Layer
from megasim.app.catalog import partition_for

SMALL = ["--shape", "2,32,20,20,32"]
KEYS = {"layer", "gpu", "strategy", "fused_us", "nonfused_us", "speedup", "num_tbs", "infusible",
        "l2_hit_rate", "dram_bytes", "spin_us", "sim_seconds", "fused_sim_cpu_s", "nonfused_sim_cpu_s",
        "fused_tbs_per_cpu_s"}


def run(capsys, *argv):
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def test_simulate_json_has_the_contract_keys(capsys):
    rc, out, _ = run(capsys, "simulate", *SMALL, "--json", "--gpu", "v100")
    doc = json.loads(out)
    assert rc == 0 and KEYS <= set(doc)
    assert doc["speedup"] == pytest.approx(doc["nonfused_us"] / doc["fused_us"])
    assert doc["fused_sim_cpu_s"] > 0 and doc["nonfused_sim_cpu_s"] > 0
    assert doc["fused_tbs_per_cpu_s"] == pytest.approx(doc["num_tbs"] / doc["fused_sim_cpu_s"])


def test_simulate_default_prints_a_table(capsys):
    rc, out, _ = run(capsys, "simulate", *SMALL)
    assert rc == 0 and "fused megakernel" in out and "speedup" in out


def test_simulate_under_another_profile_says_so_and_predicts_with_it(capsys):
    study = Path(__file__).parents[1] / "fixtures" / "resident_study" / "profiles" / "h200_resident_law.toml"
    rc, out, _ = run(capsys, "simulate", *SMALL, "--json", "--profile", str(study))
    doc = json.loads(out)
    assert rc == 0 and "h200_resident_law.toml" in doc["model"]
    rc, out, _ = run(capsys, "simulate", *SMALL, "--json")
    assert rc == 0 and json.loads(out)["fused_us"] != doc["fused_us"]


@pytest.mark.parametrize("argv, message", [(["--profile", "/no/such.toml"], "no such file"),
                                           (["--profile", "x.toml", "--uncalibrated"], "not allowed with")])
def test_a_bad_profile_choice_is_one_line(capsys, argv, message):
    rc, _, err = run(capsys, "simulate", *SMALL, *argv)
    assert rc == 2 and message in err and len(err.strip().splitlines()) == 1


def test_trace_and_plot_are_written(tmp_path, capsys):
    trace, plot = tmp_path / "t.json", tmp_path / "p.png"
    rc, _, _ = run(capsys, "simulate", *SMALL, "--trace", str(trace), "--plot", str(plot))
    assert rc == 0
    assert json.loads(trace.read_text())["traceEvents"]
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_mapping_file_round_trip(tmp_path, capsys):
    layer = Layer(2, 32, 20, 20, 32, name="custom")
    graph = build_graph(layer)
    path = save_mapping(tmp_path / "best.json", graph, make(graph, "paper", dig=3, dgo=5, m=2))
    rc, out, _ = run(capsys, "simulate", "--mapping", str(path), "--json")
    assert rc == 0 and json.loads(out)["params"] == {"dig": 3, "dgo": 5, "m": 2}


@pytest.mark.parametrize("argv, message", [
    (["simulate", "--layer", "ResNet-99"], "unknown layer"),
    (["simulate", "--gpu", "p100"], "unknown GPU"),
    (["simulate", "--shape", "2,0,8,8,8"], "positive"),
    (["simulate", "--shape", "2,x,8,8,8"], "five integers"),
    (["simulate", "--variant", "3"], "m=3"),
    (["simulate", "--strategy", "best"], "unknown mapping strategy"),
    (["simulate", "--strategy", "sequential", "--dig", "4"], "unknown option"),
    (["simulate", "--partition", "tiles=4"], "unknown field"),
    (["simulate", "--partition", "tiles_per_group=0"], "positive"),
    (["simulate", "--policy", "lifo"], "unknown dispatch policy"),
    (["simulate", "--opt", "d_ig=4"], "takes dig, dgo, m"),
    (["simulate", "--opt", "dig"], "name=value"),
    (["simulate", "--opt", "dig=many"], "wants int"),
    (["simulate", "--policy", "first_free", "--opt", "trace=t.json"], "'first_free' takes none"),
    (["simulate", "--bogus"], "unrecognized arguments"),
])
def test_bad_input_is_one_line_and_exit_2(capsys, argv, message):
    rc, out, err = run(capsys, *argv)
    assert rc == 2
    assert message in err and len(err.strip().splitlines()) == 1


def test_malformed_files_are_one_line_errors(tmp_path, capsys):
    bad_gpu = tmp_path / "g.toml"
    bad_gpu.write_text("[hardware\n")
    bad_map = tmp_path / "m.json"
    bad_map.write_text("{not json")
    for argv in (["simulate", "--gpu", str(bad_gpu)], ["simulate", "--mapping", str(bad_map)]):
        rc, _, err = run(capsys, *argv)
        assert rc == 2 and len(err.strip().splitlines()) == 1


def test_illegal_mapping_file_is_rejected(tmp_path, capsys):
    layer = Layer(2, 32, 20, 20, 32, name="custom")
    graph = build_graph(layer)
    mapping = make(graph, "sequential")
    mapping.order[[0, -1]] = mapping.order[[-1, 0]]
    path = save_mapping(tmp_path / "bad.json", graph, mapping)
    rc, _, err = run(capsys, "simulate", "--mapping", str(path))
    assert rc == 2 and "illegal mapping" in err


def test_mapping_for_another_layer_is_refused(tmp_path, capsys):
    graph = build_graph(Layer(2, 32, 20, 20, 32))
    path = save_mapping(tmp_path / "m.json", graph, make(graph, "sequential"))
    rc, _, err = run(capsys, "simulate", "--mapping", str(path), "--layer", "ResNet-1")
    assert rc == 2 and "--layer ResNet-1 (64,64,56,56,64) conflicts with" in err


def test_unwritable_trace_path_fails_cleanly(tmp_path, capsys):
    (tmp_path / "file").write_text("")
    rc, _, err = run(capsys, "simulate", *SMALL, "--trace", str(tmp_path / "file" / "t.json"))
    assert rc == 2 and len(err.strip().splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]


def test_replay_policy_places_blocks_on_the_traced_sms(tmp_path, capsys):
    layer = Layer(2, 32, 20, 20, 32)
    graph = build_graph(layer, partition=partition_for(layer, "h200"))
    rows = [{"block": i, "task": i, "op": int(graph.op[i]), "sm": i % 3, "dispatch_us": 0.0, "start_us": 0.0,
             "ready_us": 0.0, "end_us": 1.0} for i in range(graph.num_tasks)]
    path = tmp_path / "trace.json"
    path.write_text(json.dumps({"records": rows}))
    out = tmp_path / "t.json"
    rc, _, _ = run(capsys, "simulate", *SMALL, "--policy", "replay", "--replay-trace", str(path), "--trace", str(out))
    assert rc == 0
    sms = {e["args"]["sm"] for e in json.loads(out.read_text())["traceEvents"] if e.get("cat") == "block"}
    assert sms == {0, 1, 2}
    rc, _, err = run(capsys, "simulate", *SMALL, "--policy", "replay", "--opt", f"trace={path}", "--json")
    assert rc == 0
    rc, _, err = run(capsys, "simulate", *SMALL, "--policy", "replay")
    assert rc == 2 and "--replay-trace" in err and "--opt trace=" in err


def test_replay_when_full_any_takes_a_free_sm_instead_of_waiting_for_the_traced_one(tmp_path, capsys):
    """Every block traced on SM 0: waiting for it runs the kernel on one SM; `when_full=any` spreads the
    blocks that find SM 0 full over the others, and finishes sooner. A value it does not know is one line."""
    layer = Layer(2, 32, 20, 20, 32)
    graph = build_graph(layer, partition=partition_for(layer, "h200"))
    rows = [{"block": i, "task": i, "op": int(graph.op[i]), "sm": 0, "dispatch_us": 0.0, "start_us": 0.0,
             "ready_us": 0.0, "end_us": 1.0} for i in range(graph.num_tasks)]
    path = tmp_path / "trace.json"
    path.write_text(json.dumps({"records": rows}))
    runs = {}
    for when in ("wait", "any"):
        out = tmp_path / f"{when}.json"
        rc, stdout, _ = run(capsys, "simulate", *SMALL, "--policy", "replay", "--opt", f"trace={path}",
                            "--opt", f"when_full={when}", "--trace", str(out), "--json")
        assert rc == 0
        sms = {e["args"]["sm"] for e in json.loads(out.read_text())["traceEvents"] if e.get("cat") == "block"}
        runs[when] = (sms, json.loads(stdout)["fused_us"])
    assert runs["wait"][0] == {0} and len(runs["any"][0]) > 1 and 0 in runs["any"][0]
    assert runs["any"][1] < runs["wait"][1]
    rc, _, err = run(capsys, "simulate", *SMALL, "--policy", "replay", "--opt", f"trace={path}", "--opt", "when_full=soon")
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "when_full" in err


DECLARED = [(name, o) for name in MAPPINGS.names() for o in declared(MAPPINGS.get(name).options)]


@pytest.mark.parametrize("strategy, option", DECLARED, ids=[f"{s}-{o.name}" for s, o in DECLARED])
def test_every_strategy_option_is_a_flag_and_an_opt(capsys, strategy, option):
    value = option.search[-1] if option.search else option.default
    by_flag = run(capsys, "simulate", *SMALL, "--strategy", strategy, f"--{option.name}", str(value), "--json")
    by_opt = run(capsys, "simulate", *SMALL, "--strategy", strategy, "--opt", f"{option.name}={value}", "--json")
    assert by_flag[0] == by_opt[0] == 0
    assert json.loads(by_flag[1])["params"][option.name] == json.loads(by_opt[1])["params"][option.name] == value
    assert json.loads(by_flag[1])["fused_us"] == json.loads(by_opt[1])["fused_us"]


@pytest.mark.parametrize("registry", [MAPPINGS, DISPATCH_POLICIES], ids=["strategies", "policies"])
def test_mappings_lists_every_entry_with_its_options_help(capsys, registry):
    rc, out, _ = run(capsys, "mappings")
    assert rc == 0
    for name in registry.names():
        assert f"  {name} " in out
        for o in declared(registry.get(name).options):
            assert f"{o.name}={o.default!r}: {o.help}" in out


def test_sigterm_ends_a_run_and_its_workers_as_ctrl_c_does_and_leaves_no_output(tmp_path):
    """`timeout` and CI signal the process alone: its worker processes are ended too (a pool would otherwise wait
    for them for ever), it exits 143, and the outputs it had not finished are not left behind."""
    import signal
    import subprocess
    import sys
    import time
    out = tmp_path / "v"
    proc = subprocess.Popen([sys.executable, "-m", "megasim.app.cli", "validate", "--gpu", "h200", "--jobs", "2",
                             "--out", str(out)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    time.sleep(4)  # about when the pool starts; any moment must end the same way
    proc.send_signal(signal.SIGTERM)
    try:
        rc = proc.wait(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise AssertionError("SIGTERM did not end the run") from None
    assert rc == 128 + signal.SIGTERM, proc.stderr.read()[-500:]
    assert not out.exists() or not any(out.rglob("*"))
