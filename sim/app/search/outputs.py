"""What a search leaves in --out: the ranked table (CSV and JSON) and best.json.

Rows are ranked by predicted fused time; rejected, failed and interrupted
points follow, with their reasons. Every row names its variant and mode, searched or not.
Its `nonfused_us` is the four non-fused kernels of the row's own variant and
partition, so `speedup_vs_nonfused` is what fusing buys at that point, like
with like; `vs_paper_default` compares with one fixed point, the paper's.
`best.json` is a schema-1 mapping file (`megasim.contract.mapping.io`) with
the best point's variant and mode, so `megasim simulate --mapping best.json`
reproduces the prediction; `bench_command` is the `megasim bench` line that
builds the same variant and partition on a GPU.
"""
from __future__ import annotations

import csv
import json
from pathlib import Path

from megasim.io.writing import make_folders, write_then_rename
from megasim.contract.graph import build_graph
from megasim.contract.mapping import make, validate
from megasim.contract.mapping.io import save_mapping
from megasim.app.search.loop import nonfused_key, outcome
from megasim.app.search.runner import SearchResult


def rows(result: SearchResult, space) -> list[dict]:
    """One dict per finished evaluation, ranked (rank 1 is the best prediction)."""
    ref = (result.reference or {}).get("fused_us")
    out = []
    for t in result.trials:
        point = space.complete(t.params)
        row = {"trial": t.number, "status": outcome(t), **point}
        if t.state.name == "COMPLETE":
            part, _ = space.split(t.params)
            nf = result.nonfused.get(nonfused_key(space.setting(t.params)[0], part))
            row.update({k: t.user_attrs.get(k) for k in ("infusible", "num_tbs", "blocks_per_sm", "sim_seconds")})
            row.update(fused_us=t.value, nonfused_us=nf, speedup_vs_nonfused=nf / t.value if nf else None,
                       vs_paper_default=ref / t.value if ref else None)
        row["cached"] = bool(t.user_attrs.get("cached", False))
        row["reason"] = t.user_attrs.get("rejected") or t.user_attrs.get("error") or _stopped(t)
        out.append(row)
    ok = sorted((r for r in out if r["status"] == "ok"), key=lambda r: (r["fused_us"], r["trial"]))
    rest = sorted((r for r in out if r["status"] != "ok"), key=lambda r: r["trial"])
    for i, r in enumerate(ok, 1):
        r["rank"] = i
    return [{"rank": r.get("rank"), **{k: v for k, v in r.items() if k != "rank"}} for r in ok + rest]


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
    """The mapping file carries its layer, variant and partition, so bench needs nothing else (it times
    every scheduling mode, the file's among them)."""
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
    """best.json: the best point's mapping, variant and mode, for `megasim simulate --mapping` and
    `megasim bench --mapping`."""
    point = {p.name: best_row[p.name] for p in space.params}
    problem, part, opts = problem.at(space, point)
    graph = build_graph(problem.layer, problem.variant, part)
    mapping = make(graph, space.strategy, **opts)
    validate(graph, mapping)
    path = out / "best.json"
    extra = {"search": {"predicted_fused_us": best_row["fused_us"], "gpu": problem.gpu.name,
                        "study": header.get("study"), "model": header.get("model"),
                        "bench_command": bench_command(path)}}
    return save_mapping(path, graph, mapping, extra, mode=problem.mode)
