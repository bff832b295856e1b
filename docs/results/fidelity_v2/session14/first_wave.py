"""Which SMs the first tickets of a megakernel launch land on, traced, and the race that reproduces it (item 5).

    python docs/results/fidelity_v2/session14/first_wave.py [SAMPLE]

For every fused launch of a packed trace sample: its mode, tasks, the blocks that started in the first 0.5 us
(the first wave) and how many distinct SMs the first 132 and 264 tickets (start order) ran on. The hardware's
dispatcher puts one block on every SM before it puts a second on any (a 110-block launch runs on 110 SMs), so a
model whose tickets follow the dispatcher has the first 132 on 132 SMs. Then `ticketrace.race` (each SM's arrival
U(0, 1), each of its blocks MIX x U(0, 1) more) at several MIX against the static launches' distinct-SM counts
in the first quarter and half of a full first wave.
"""
import sys
from pathlib import Path

import numpy as np

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parent.parent / "session13")]
from megasim.app.calibrate.trace_law import load_sample  # noqa: E402
from ticketrace import race  # noqa: E402

MIXES = (0.1, 0.3, 0.5, 0.7, 1.0, 2.0, 1000.0)


def traced(sample):
    meta, traces = load_sample(sample)
    rows = []
    for case, about in meta.items():
        rec = traces[case]["fused"]
        order = np.argsort(rec["start_us"], kind="stable")
        sm, start = rec["sm"][order], rec["start_us"][order]
        wave = int((start < 0.5).sum())
        rows.append({"case": case, "mode": about.get("mode", "static"), "tasks": len(sm), "wave": wave,
                     "first132": len(np.unique(sm[:132])), "first264": len(np.unique(sm[:264])),
                     "quarter": len(np.unique(sm[:wave // 4])), "half": len(np.unique(sm[:wave // 2]))})
    return rows


def simulated(slots_per_sm: int, mix: float, draws: int = 200, sms: int = 132):
    rng = np.random.default_rng(0)
    q, h = [], []
    for _ in range(draws):
        sm = np.asarray(race([s for _ in range(slots_per_sm) for s in range(sms)], mix, rng))
        q.append(len(np.unique(sm[:len(sm) // 4])))
        h.append(len(np.unique(sm[:len(sm) // 2])))
    return float(np.mean(q)), float(np.mean(h))


def main(sample="scenarios/calibrations/raw/h200_trace_sample.npz"):
    rows = traced(sample)
    print("| case | mode | tasks | first wave | distinct SMs, first 132 tickets | first 264 |\n|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['case']} | {r['mode']} | {r['tasks']} | {r['wave']} | {r['first132']} | {r['first264']} |")
    full = [r for r in rows if r["mode"] == "static" and r["wave"] >= 3 * 132 and r["wave"] % 132 == 0]
    print("\n| slots per SM | static launches | traced: distinct SMs in the first quarter / half of the wave | "
          + " | ".join(f"race {m:g}" for m in MIXES) + " |\n|---|---|---|" + "---|" * len(MIXES))
    for s in sorted({r["wave"] // 132 for r in full}):
        sel = [r for r in full if r["wave"] // 132 == s]
        cells = [simulated(s, m) for m in MIXES]
        print(f"| {s} | {len(sel)} | {np.mean([r['quarter'] for r in sel]):.0f} / {np.mean([r['half'] for r in sel]):.0f} | "
              + " | ".join(f"{q:.0f} / {h:.0f}" for q, h in cells) + " |")


if __name__ == "__main__":
    main(*sys.argv[1:])
