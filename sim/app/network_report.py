"""The plain-text table of a network run (`megasim simulate --network`, `megasim bench --network`).

One line per layer of the network file: its shape, how often it occurs, the
mapping it ran under, fused and non-fused time of one occurrence, and both
weighted by the count; then the totals; then every convolution the totals
leave out, with its count and why, and the share of the network's
convolution FLOPs the totals cover.
"""
from __future__ import annotations


def _shape(r: dict) -> str:
    return f"{r['c']}->{r['k']} @ {r['h']}x{r['w']}"


def _mapping(r: dict) -> str:
    return "default" if r["mapping"] == "default" else "file"


def _uncovered_lines(doc: dict) -> list[str]:
    listed, t = doc["uncovered"], doc["totals"]
    if listed is None:
        return ["not covered: the network file does not list the convolutions it leaves out"]
    if not listed:
        return ["not covered: none; every convolution of the network is 3x3 stride 1"]
    lines = [f"not covered by the Winograd path (3x3 stride 1 only), so not in the totals: "
             f"{t['uncovered_convs']} convolutions"]
    for u in listed:
        shape = f"{u['c']}->{u['k']} @ {u['h']}x{u['w']}" if "c" in u else ""
        lines.append(f"  {u['name'][:28]:28} {u['kernel']}x{u['kernel']}/{u['stride']} {shape:>20} "
                     f"x{u['count']:<3} {u['reason']}")
    if t["covered_flop_share"] is not None:
        lines.append(f"the {t['covered_convs']} covered convolutions are {t['covered_flop_share']:.1%} of the "
                     f"network's convolution FLOPs")
    return lines


def format_network(doc: dict, title: str) -> str:
    """`doc` is `megasim.app.network.report(...)`; `title` the first line."""
    head = (f"{'layer':16} {'C->K @ HxW':>18} {'count':>5} {'mapping':>7} {'fused us':>10} {'non-fused':>10} "
            f"{'speedup':>7} {'fused x n':>11} {'non-fused x n':>13}")
    lines = [title, head, "-" * len(head)]
    for r in doc["layers"]:
        lines.append(f"{r['name'][:16]:16} {_shape(r):>18} {r['count']:5d} {_mapping(r):>7} {r['fused_us']:10.1f} "
                     f"{r['nonfused_us']:10.1f} {r['speedup']:6.3f}x {r['fused_total_us']:11.1f} "
                     f"{r['nonfused_total_us']:13.1f}")
    t = doc["totals"]
    lines.append("-" * len(head))
    lines.append(f"{'total':16} {'':>18} {t['covered_convs']:5d} {'':>7} {'':>10} {'':>10} {t['speedup']:6.3f}x "
                 f"{t['fused_us']:11.1f} {t['nonfused_us']:13.1f}")
    lines.append(f"network: fused {t['fused_us'] / 1e3:.3f} ms, non-fused {t['nonfused_us'] / 1e3:.3f} ms, "
                 f"speedup {t['speedup']:.3f}x; the faster of the two per layer {t['best_of_each_us'] / 1e3:.3f} ms "
                 f"({t['distinct_runs']} distinct runs for {t['layers']} layers)")
    files = sorted({r["mapping"] for r in doc["layers"] if r["mapping"] != "default"})
    if files:
        lines.append("mapping files: " + ", ".join(files))
    return "\n".join(lines + _uncovered_lines(doc))
