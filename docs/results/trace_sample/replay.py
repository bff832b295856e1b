"""Replay every traced megakernel placement, with a second replay that does not wait for a full SM.

    python docs/results/trace_sample/replay.py docs/results/trace_sample/h200 [--profile P]

`megasim validate` reports the replay target itself (`megasim.app.calibrate.replay_check`: each static fused case
of the GPU's own trace sample replayed on its traced SMs, and under the default dispatch). This study adds
`--opt when_full=any`, which takes any free SM when the traced one is full, and writes `replay.md` and
`replay.json` in the folder (docs/decisions.md, "The H200 fits on its own trace sample").
"""
from __future__ import annotations

from pathlib import Path

from megasim.app.calibrate.profile import load_profile
from megasim.app.calibrate.replay_check import DISPATCHES, TARGET, replay_rows, replay_summary, sample_paths
from megasim.app.catalog import load_gpu
from study_io import folder_and_profile, write_report

RAW = Path(__file__).resolve().parents[3] / "scenarios" / "calibrations" / "raw"
KINDS = {"replay": "replay (wait for the traced SM)",
         "replay_any": "replay, any free SM when the traced one is full", "default": "default dispatch"}


def report(folder: Path, profile_path: str, rows: list[dict]) -> str:
    lines = [f"# Replaying the traced placements ({folder.name})", "",
             f"`python docs/results/trace_sample/replay.py {folder}` under `{profile_path}`: each static fused case's "
             "measured SM placement replayed (`--policy replay`), against its untraced time and the default "
             "dispatch's prediction.", "",
             f"| dispatch | within {TARGET:.0%} | MAPE | median error | worst | blocks on their traced SM (median) |",
             "|---|---|---|---|---|---|"]
    for key, label in KINDS.items():
        s = replay_summary(rows, key)
        lines.append(f"| {label} | {s['within_target']} of {s['cases']} | {s['mape']:.1%} | {s['median_error']:+.1%} | "
                     f"{s['worst_error']:+.1%} | {s['on_traced_sm']:.0%} |")
    lines += ["", "| case | blocks | measured us | " + " | ".join(f"{label} us | error" for label in KINDS.values()) + " |",
              "|---|---|---|" + "---|---|" * len(KINDS)]
    for r in rows:
        lines.append(f"| {r['case']} | {r['blocks']} | {r['measured_us']:.1f} | "
                     + " | ".join(f"{r[key + '_us']:.1f} | {r[key + '_error']:+.1%}" for key in KINDS) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    args = folder_and_profile(__doc__)
    profile = load_profile(args.profile)
    dispatches = {**DISPATCHES, "replay_any": ("replay", {"when_full": "any"})}
    rows = replay_rows(profile.apply(load_gpu(profile.gpu)), *sample_paths(RAW, args.folder.name), dispatches)
    text = report(args.folder, args.profile, rows)
    write_report(args.folder, "replay", text, rows)
    print(text)


if __name__ == "__main__":
    main()
