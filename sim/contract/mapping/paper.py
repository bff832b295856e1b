"""Algorithm 1 of Jia et al. (IEEE TC 2020): the megakernel task mapping.

1. Filter prefix: the first N_F blocks transform the filters (every GEMM needs them).
2. Head: the next D_IG blocks are input transforms only, so GEMMs start late
   enough that their inputs are done (dependency distance, section 5.3).
3. Initial phase, about D_GO blocks: GEMM groups of M task groups, column by
   column: for the j-th filter matrix, M*S_I/S_G input transforms then the M
   GEMMs that share that matrix (filter reuse (M-1)/M, section 5.4). No
   output transforms yet, so they trail their GEMMs by D_GO.
4. Body: the same pattern plus M*S_O/S_G output transforms per column, until
   the input transforms run out (task types stay in proportion, section 5.2).
5. Tail: the remaining GEMMs and output transforms.

Fractional counts are spread with a running remainder. One guard keeps the
result legal for any parameters: a GEMM is never placed before its group's
last input transform (with D_IG = 0 it lands right behind it and spins), and
an output transform only after its group's last GEMM.
"""
from collections import deque
from dataclasses import dataclass

from megasim.contract.errors import MegasimError
from megasim.contract.mapping.strategies import strategy
from megasim.contract.options import option
from megasim.contract.problem import Op


@dataclass(frozen=True)
class PaperOptions:
    dig: int = option(512, "D_IG, input->GEMM distance in blocks", search=(0, 64, 128, 256, 512, 1024, 2048))
    dgo: int = option(512, "D_GO, GEMM->output distance in blocks", search=(0, 64, 128, 256, 512, 1024, 2048))
    m: int = option(4, "M, task groups sharing one filter matrix", search=(1, 2, 4, 8))

    def __post_init__(self):
        for name in ("dig", "dgo"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 0:
                raise MegasimError(f"paper mapping: {name} must be an integer >= 0, got {getattr(self, name)!r}")
        if not isinstance(self.m, int) or self.m < 1:
            raise MegasimError(f"paper mapping: m must be an integer >= 1, got {self.m!r}")


class _Emitter:
    """Tracks what has been placed so the guard can hold the order legal."""

    def __init__(self, graph):
        g = graph.geometry
        self.s_i, self.s_g = g.s_i, g.s_g
        self.order = list(graph.tasks_of(Op.FILTER_TRANSFORM))
        self.inputs = deque(graph.tasks_of(Op.INPUT_TRANSFORM).tolist())
        self.outputs = deque(graph.tasks_of(Op.OUTPUT_TRANSFORM).reshape(g.n_g, g.s_o).tolist())
        self.gemm = graph.tasks_of(Op.GEMM).reshape(g.n_g, g.s_g)
        self.inputs_placed = 0
        self.groups_gemm_done = 0
        self.input_credit = 0.0
        self.output_credit = 0.0

    def place_inputs(self, count: int) -> None:
        for _ in range(min(count, len(self.inputs))):
            self.order.append(self.inputs.popleft())
            self.inputs_placed += 1

    def place_gemm(self, group: int, column: int) -> None:
        missing = (group + 1) * self.s_i - self.inputs_placed
        if missing > 0:
            self.place_inputs(missing)
        self.order.append(self.gemm[group, column])

    def place_outputs(self, count: int) -> None:
        while count > 0 and self.outputs and self._output_group() < self.groups_gemm_done:
            row = self.outputs[0]
            self.order.append(row.pop(0))
            if not row:
                self.outputs.popleft()
            count -= 1

    def _output_group(self) -> int:
        return self.gemm.shape[0] - len(self.outputs)

    def credit(self, attr: str, amount: float) -> int:
        value = getattr(self, attr) + amount
        whole = int(value)
        setattr(self, attr, value - whole)
        return whole


@strategy("paper", PaperOptions)
def paper(graph, opts):
    g = graph.geometry
    em = _Emitter(graph)
    m = opts.m
    em.place_inputs(opts.dig)
    blocks = [range(b, min(b + m, g.n_g)) for b in range(0, g.n_g, m)]
    initial = opts.dgo // (m * (g.s_i + g.s_g))
    for b, groups in enumerate(blocks):
        with_outputs = b >= initial
        for j in range(g.s_g):
            em.place_inputs(em.credit("input_credit", len(groups) * g.s_i / g.s_g))
            for grp in groups:
                em.place_gemm(grp, j)
            if with_outputs:
                em.place_outputs(em.credit("output_credit", len(groups) * g.s_o / g.s_g))
        em.groups_gemm_done = groups.stop
    em.place_outputs(g.n_g * g.s_o)
    return em.order
