"""`megasim search`'s flags: the layer or network, a pin for each axis of the decision space, the model, the
sampler and its budget, and where the study and its outputs go."""
from __future__ import annotations

from megasim.contract.build import AXES, LAUNCHES
from megasim.contract.modes import MODES
from megasim.contract.resources import PRECISIONS


def search_parser(sub, mode_help: str):
    """The `search` subcommand's parser, added to `sub`."""
    srch = sub.add_parser("search", help="search the decision space (launch, variant, mode, GEMM body, mapping) on the "
                                         "simulator (Optuna; local pool or Dask)")
    srch.add_argument("--layer", help="a layer from scenarios/layers (default ResNet-2)")
    srch.add_argument("--shape", help="N,C,H,W,K of a custom 3x3 stride-1 layer")
    srch.add_argument("--network", help="search each distinct 3x3 stride-1 layer of a network from "
                                        "scenarios/networks (one folder per layer under --out, and a summary)")
    srch.add_argument("--launch", choices=LAUNCHES, help="pin the launch: fused megakernel or non-fused kernels "
                                                         "(default: searched)")
    srch.add_argument("--variant", type=int, help="pin m of F(m x m, 3 x 3) to 2, 4 or 6 (default: searched)")
    srch.add_argument("--mode", choices=MODES, help="pin the " + mode_help + " (default: searched)")
    srch.add_argument("--gemm", choices=AXES["gemm"], help="pin the GEMM body: generic or warp (default: searched)")
    srch.add_argument("--precision", choices=PRECISIONS,
                      help="pin the GEMM's precision: fp32 (FFMA) or 3xtf32 (tensor cores, on the warp body; needs a "
                           "model with the tensor_core_gemm law). Default: searched where the model has that law, "
                           "else fp32")
    srch.add_argument("--partition", help="base partition overrides (default: the layer's bench partition; the "
                                          "partition is searched only where --space names a field)")
    srch.add_argument("--gpu", default="h200", help="a GPU from scenarios/gpus (its calibrated profile if one exists)")
    calibrated = srch.add_mutually_exclusive_group()
    calibrated.add_argument("--uncalibrated", action="store_true", help="use the datasheet spec even with a profile")
    calibrated.add_argument("--profile", metavar="TOML",
                            help="a calibration profile to use instead of the GPU's committed one (one whose model "
                                 "lists the tensor_core_gemm law opens the precision axis)")
    srch.add_argument("--strategy", default="paper", help="mapping strategy whose options are searched")
    srch.add_argument("--method", default="tpe", help="grid, random or tpe")
    srch.add_argument("--space", action="append", metavar="NAME=V1,V2,...",
                      help="replace one parameter's values (repeatable), e.g. --space m=1,2,4")
    srch.add_argument("--budget", type=int, help="finished evaluations in the study (default 200; grid: its size)")
    srch.add_argument("--jobs", type=int, default=2, help="local worker processes")
    srch.add_argument("--scheduler", help="Dask instead of the local pool: local[:N] starts a LocalCluster of N "
                                          "worker processes (default --jobs), tcp://host:8786 attaches to one")
    srch.add_argument("--storage", help="an Optuna journal file PATH.journal (default OUT/study.journal) or an "
                                        "Optuna RDB URL such as sqlite:///PATH; reruns resume")
    srch.add_argument("--out", help="output folder, locked while a search runs (default out/search/LAYER-GPU "
                                    "or NETWORK-GPU)")
    srch.add_argument("--seed", type=int, default=0, help="sampler seed")
    srch.add_argument("--validate-top", type=int, help="measure the K best predicted builds and every build of the "
                                                       "layer's own partition on this GPU; regret is against the "
                                                       "fastest measured, which best.json then names")
    srch.add_argument("--reps", type=int, default=20, help="--validate-top: timed calls per candidate")
    srch.add_argument("--quiet", action="store_true", help="no progress bar")
    return srch
