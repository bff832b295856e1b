"""What a search leaves in --out: the ranked table (CSV and JSON) and best.json.

Rows are ranked by the predicted time of their build (`time_us`); rejected,
failed and interrupted points follow, with their reasons. Every row names its
whole build (launch, variant, mode, GEMM body) and the partition it runs on,
searched or not. A fused row's `nonfused_us` is the four non-fused kernels of
its own variant, partition and body, so `speedup_vs_nonfused` is what fusing
buys at that point, like with like; `vs_paper_default` compares with one
fixed point, the paper's. `best.json` is a schema-1 mapping file
(`megasim.contract.mapping.io`) that names the best point's whole build, so
`megasim simulate --mapping best.json` reproduces the prediction and
`megasim bench --mapping best.json` runs exactly that build.
"""
from __future__ import annotations

import csv
import json
from pathlib import Path

from megasim.io.writing import make_folders, write_then_rename
from megasim.contract.errors import MegasimError
from megasim.contract.graph import build_graph
from megasim.contract.problem import WinogradVariant
from megasim.contract.mapping import make, validate
from megasim.contract.mapping.io import save_mapping
from megasim.app.search.loop import nonfused_key, outcome
from megasim.app.search.runner import SearchResult


def rows(result: SearchResult, space) -> list[dict]:
    """One dict per finished evaluation, ranked (rank 1 is the best prediction)."""
    ref = (result.reference or {}).get("time_us")
    out = []
    for t in result.trials:
        point = space.complete(space.canonical(t.params))
        row = {"trial": t.number, "status": outcome(t), **point}
        try:
            part = space.split(t.params)[0]
            row.update(part.to_dict())
        except MegasimError:
            part = None
        if t.state.name == "COMPLETE":
            build = space.setting(t.params)
            fused = build.launch == "fused"
            nf = t.value if not fused else result.nonfused.get(nonfused_key(WinogradVariant(build.variant), part,
                                                                             build.gemm))
            row.update({k: t.user_attrs.get(k) for k in ("predicted_us", "default_mapping_us", "infusible", "num_tbs",
                                                          "blocks_per_sm", "sim_seconds")})
            row.update(label=build.label, time_us=t.value, fused_us=t.value if fused else None, nonfused_us=nf,
                       speedup_vs_nonfused=nf / t.value if nf and fused else None,
                       vs_paper_default=ref / t.value if ref else None)
        row["cached"] = bool(t.user_attrs.get("cached", False))
        row["reason"] = t.user_attrs.get("rejected") or t.user_attrs.get("error") or _stopped(t)
        out.append(row)
    ok = sorted((r for r in out if r["status"] == "ok"), key=lambda r: (r["time_us"], r["trial"]))
    rest = sorted((r for r in out if r["status"] != "ok"), key=lambda r: r["trial"])
    for i, r in enumerate(ok, 1):
        r["rank"] = i
    return [{"rank": r.get("rank"), **{k: v for k, v in r.items() if k != "rank"}} for r in ok + rest]


def fusion_margin(table: list[dict], intervals: dict | None = None) -> dict | None:
    """The predicted fused-vs-non-fused margin of the search: its fastest fused build against its fastest
    non-fused one (non-fused / fused - 1, so > 0 means fusing wins), with the profile's held-out interval
    (`calibrate.uncertainty`) where it has one; None until both kinds were simulated."""
    best = {}
    for r in table:
        if r["status"] == "ok":
            launch = "fused" if r.get("fused_us") is not None else "nonfused"
            best.setdefault(launch, r)
    nonfused = best.get("nonfused") or next((r for r in table if r["status"] == "ok" and r.get("nonfused_us")), None)
    if "fused" not in best or nonfused is None:
        return None
    f, nf = best["fused"]["time_us"], nonfused["nonfused_us"]
    out = {"fused": best["fused"]["label"], "fused_us": f, "nonfused_us": nf, "margin": nf / f - 1,
           "nonfused": nonfused["label"] if "nonfused" in best else f"nonfused twin of {best['fused']['label']}"}
    if intervals:
        from megasim.app.calibrate.uncertainty import Uncertainty
        out.update(Uncertainty.from_dict(intervals).call(f, nf))
    return out


def margin_text(m: dict) -> str:
    """One line: fastest fused against fastest non-fused, the margin and, with a profile, its interval."""
    line = (f"fusion margin: {m['margin']:+.1%} ({m['fused']} {m['fused_us']:.1f} us vs {m['nonfused']} "
            f"{m['nonfused_us']:.1f} us)")
    if "margin_interval" in m:
        lo, hi = m["margin_interval"]
        line += f"; {m['coverage']:.0%} interval [{lo:+.1%}, {hi:+.1%}]: {m['call']}"
    return line


def _stopped(trial) -> str:
    """Who was running an interrupted trial, where the run that stopped recorded it."""
    if outcome(trial) != "interrupted":
        return ""
    who = trial.user_attrs.get("interrupted")
    return f"interrupted (pid {who['pid']} on {who['host']})" if isinstance(who, dict) else "abandoned"


def distinct_best(table: list[dict], space, k: int) -> list[dict]:
    """The k best rows with distinct points (TPE may evaluate a point twice; the table keeps both)."""
    seen, out = set(), []
    names = [p.name for p in space.params]
    for r in table:
        if r["status"] != "ok":
            continue
        key = tuple(r[n] for n in names)
        if key not in seen:
            seen.add(key)
            out.append(r)
        if len(out) == k:
            break
    return out


def bench_command(mapping_path) -> str:
    """The mapping file carries its layer and whole build, so bench needs nothing else: it runs that build
    and shows the search's prediction beside the measurement."""
    return f"megasim bench --mapping {mapping_path}"


def write_table(table: list[dict], header: dict, out: Path) -> tuple[Path, Path]:
    make_folders(out)
    csv_path, json_path = out / "evaluations.csv", out / "evaluations.json"
    columns = list(dict.fromkeys(k for r in table for k in r))
    with write_then_rename(csv_path) as tmp, open(tmp, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=columns)
        w.writeheader()
        for r in table:
            w.writerow({k: (f"{v:.4f}" if isinstance(v, float) else v) for k, v in r.items()})
    with write_then_rename(json_path) as tmp:
        tmp.write_text(json.dumps({**header, "evaluations": table}, indent=1))
    return csv_path, json_path


def write_best(problem, space, best_row: dict, out: Path, header: dict) -> Path:
    """best.json: the best point's whole build and mapping, for `megasim simulate --mapping` and
    `megasim bench --mapping`."""
    point = {p.name: best_row[p.name] for p in space.params}
    problem, part, opts = problem.at(space, point)
    graph = build_graph(problem.layer, problem.variant, part)
    mapping = make(graph, space.strategy, **opts)
    validate(graph, mapping)
    path = out / "best.json"
    extra = {"search": {"predicted_us": best_row["time_us"], "raw_predicted_us": best_row.get("predicted_us"),
                        "label": best_row.get("label"), "gpu": problem.gpu.name,
                        "study": header.get("study"), "model": header.get("model"),
                        "bench_command": bench_command(path)}}
    return save_mapping(path, graph, mapping, extra, mode=problem.mode, launch=problem.launch, gemm=problem.gemm,
                        precision=problem.precision)
