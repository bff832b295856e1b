"""Per case and kernel: Nsight Compute's DRAM traffic and time (ncu_writes.sh) beside the bytes the task graph writes.

    python docs/results/ncu_fused/analyse_writes.py docs/results/ncu_fused/h200/writes

Reads `ncu.csv` and `cases.json` from the folder, writes `traffic.md` there.
"""
import csv
import json
import sys
from pathlib import Path

STAGES = ("filter_transform", "input_transform", "gemm", "output_transform")
KERNELS = ("ms_megakernel", "ms_filter_kernel", "ms_input_kernel", "ms_gemm_kernel", "ms_output_kernel")


def kernels(folder: Path) -> list[dict]:
    """One dict per profiled launch, in launch order: name and metrics (bytes, ns, percent)."""
    rows = [r for r in csv.DictReader(line for line in (folder / "ncu.csv").open() if line.startswith('"'))]
    out: dict = {}
    for r in rows:
        k = out.setdefault(int(r["ID"]), {"name": r["Kernel Name"]})
        value = float(r["Metric Value"].replace(",", ""))
        scale = {"Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "byte": 1.0, "usecond": 1e3, "msecond": 1e6,
                 "nsecond": 1.0}.get(r["Metric Unit"], 1.0)
        k[r["Metric Name"]] = value * scale
    return [out[i] for i in sorted(out)]


def main(folder: Path) -> int:
    cases = json.loads((folder / "cases.json").read_text())
    launches = kernels(folder)
    assert len(launches) == len(KERNELS) * len(cases), len(launches)
    gpu = "H100" if folder.resolve().parent.name == "h100" else "H200"
    lines = [f"# DRAM write traffic: the megakernel and the non-fused kernels ({gpu}, Nsight Compute)", "",
             "Per launch: time, DRAM bytes written and read (`dram__bytes_write.sum`, `dram__bytes_read.sum`), DRAM "
             "throughput as a share of its sustained peak, and the bytes the task graph's blocks write (what the "
             "simulator charges as write-back). `python docs/results/ncu_fused/analyse_writes.py "
             f"{folder.as_posix()}`.", "",
             "| case | kernel | us | DRAM written MB | graph writes MB | written / graph | DRAM read MB | DRAM % of peak |",
             "|---|---|---|---|---|---|---|---|"]
    for i, case in enumerate(cases):
        for j, name in enumerate(KERNELS):
            k = launches[i * len(KERNELS) + j]
            assert k["name"] == name, (k["name"], name)
            graph = sum(case["written_bytes"].values()) if j == 0 else case["written_bytes"][STAGES[j - 1]]
            w, r = k["dram__bytes_write.sum"], k["dram__bytes_read.sum"]
            lines.append(f"| {case['case']} | {name[3:]} | {k['gpu__time_duration.sum'] / 1e3:.1f} | {w / 1e6:.1f} | "
                         f"{graph / 1e6:.1f} | {w / graph:.2f} | {r / 1e6:.1f} | "
                         f"{k['dram__throughput.avg.pct_of_peak_sustained_elapsed']:.0f}% |")
    (folder / "traffic.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
