"""Run one paper layer's non-fused GEMM kernel once in FP32 and once in 3xTF32, for Nsight Compute.

    ncu --section SpeedOfLight --section WarpStateStats --section Occupancy --section LaunchStats \\
        --section ComputeWorkloadAnalysis --section InstructionStats --section MemoryWorkloadAnalysis \\
        -k ms_gemm_kernel -c 2 python3 docs/results/tensor_core/ncu_gemm.py vgg-3 4 > OUT/ncu_vgg3_gemm.txt
"""
import sys

import cupy as cp

from measure import graph_of  # this folder's, on the path when run as a script
from megasim.gpu.nonfused import NonFusedConv
from megasim.gpu.timing import rotation_inputs


def main() -> int:
    graph = graph_of(sys.argv[1], int(sys.argv[2]))
    xs, ws, ys = rotation_inputs(cp, graph.layer, seed=1, nsets=1)
    for precision in ("fp32", "3xtf32"):
        NonFusedConv(graph, gemm="warp", precision=precision).run(xs[0], ws[0], ys[0])
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
