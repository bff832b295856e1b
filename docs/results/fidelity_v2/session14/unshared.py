"""Study patch: a transform block's FP32 work is latency, not a share of its SM (session 14, item 5). Traced on the
H200, F(6) input blocks take 31, 35, 38 and 39 us with 1, 2, 3 and 4 blocks working on their SM, where the model,
sharing the SM's FP32 issue, gives 27, 32, 45 and 58: a transform's few warps wait on loads and dependent
arithmetic, and co-resident blocks fill the issue slots they leave. The named task types' FLOPs over their
efficiency are added to their latency at the SM's peak rate; they keep their issue weight on the SM for their life
(the FP32 queue is sticky), so they still slow the GEMMs beside them as before."""
import numpy as np
import megasim.engine.blocks as blocks
from megasim.contract.problem import OP_NAMES, Op
from megasim.engine.blocks import view


def install(ops=("input_transform", "output_transform")) -> None:
    codes = [o for o in Op if OP_NAMES[o] in ops]
    original = blocks.BlockColumns._block_work

    def block_work(self, order, graph, gpu, scale):
        original(self, order, graph, gpu, scale)
        op = np.asarray(self.op)
        pick = np.isin(op, codes)
        fp = np.array(self.fp, dtype=np.float64)
        added = np.array(self.added, dtype=np.float64)
        added[pick] += fp[pick] / gpu.fp32_flops_per_cycle_per_sm
        fp[pick] = 1e-9
        self.fp, self.added = view(fp), view(added)
    blocks.BlockColumns._block_work = block_work
