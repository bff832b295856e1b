"""The machine with `GPUSpec.neighbour_slowdown` and `unshared_fp32`: one law for how blocks share an SM.

Per-block traces of the megakernel (docs/calibration-analysis.md, session 15) show each task type slowed by the
blocks working beside it on its SM at rates no shared FP32 queue gives: a GEMM slows an output transform by 40% of
its work and an input transform by 4%, while an input slows a GEMM by 28%. A transform's few warps wait on loads
and dependent arithmetic, so its FP32 work hardly queues for the SM's issue (`unshared_fp32`: it runs at the SM's
peak over the type's efficiency, beside the block's memory jobs), yet it takes issue slots and load bandwidth that
its neighbours feel. So the engine keeps, per SM and task type, how many blocks work there over time, and a block
of type t works `1 + sum_u a[t][u] x n_u` as long, n_u the mean number of *other* blocks of type u working on its
SM over its jobs' time, or working there as they end, for jobs that took no time. For a type whose FP32 is
unshared only its time on the SM is stretched (its FP32 at its own rate or its latency floor, whichever is longer,
plus its added latency), overlapped with its memory jobs: a block waiting on DRAM does not feel its SM's company;
inside the megakernel that time is also its type's `fused_code_factor` (times its variant's `fused_code_by_variant`)
as long. GEMM blocks still share their SM's FP32 among themselves (`sm_sharing`), which is their own traced law
(`megasim.app.calibrate.trace_law`).

Pure Python over the compiled `_Machine` (a subclass may override its methods); the extra work is a handful of
array updates per block.
"""
from __future__ import annotations

import numpy as np

from megasim.contract.problem import OP_NAMES, Op
from megasim.engine.core import _Machine

TYPES = len(Op)


class SmCompany:
    """Per SM and task type: blocks working now, and their count integrated over time (block-cycles)."""

    def __init__(self, sm_count: int):
        self.working = np.zeros((sm_count, TYPES))
        self.integral = np.zeros((sm_count, TYPES))
        self.since = np.zeros(sm_count)

    def advance(self, now: float, sm: int) -> np.ndarray:
        """The SM's integrals up to `now` (the row itself, not a copy)."""
        row = self.integral[sm]
        row += self.working[sm] * (now - self.since[sm])
        self.since[sm] = now
        return row

    def enter(self, now: float, sm: int, op: int) -> np.ndarray:
        """A block of `op` starts working on `sm`; returns a copy of the SM's integrals at that moment."""
        at = self.advance(now, sm).copy()
        self.working[sm, op] += 1
        return at

    def leave(self, now: float, sm: int, op: int) -> None:
        self.advance(now, sm)
        self.working[sm, op] -= 1


def slowdown_matrix(gpu) -> np.ndarray:
    """`neighbour_slowdown` as a (type, neighbour type) array of floats."""
    out = np.zeros((TYPES, TYPES))
    code = {name: int(op) for op, name in OP_NAMES.items()}
    for t, row in gpu.neighbour_slowdown.items():
        for u, a in row.items():
            out[code[t], code[u]] = a
    return out


class CompanyMachine(_Machine):
    def __init__(self, graph, gpu, kernels, *args):
        _Machine.__init__(self, graph, gpu, kernels, *args)
        self.slowdown = slowdown_matrix(gpu)
        self.unshared = np.array([OP_NAMES[o] in gpu.unshared_fp32 for o in Op])
        self.peak = float(gpu.fp32_flops_per_cycle_per_sm)
        variant = gpu.fused_code_by_variant.get(f"F{graph.variant.m}", 1.0)
        self.code = np.array([gpu.fused_code_factor.get(OP_NAMES[o], 1.0) * variant if self.unshared[o] else 1.0
                              for o in Op])
        self.slowed = self.slowdown.any(axis=1) | (self.code != 1.0)
        self.company = SmCompany(gpu.sm_count)
        self.at_ready = np.zeros((len(self.order), TYPES))

    def launch(self, now: float, k: int) -> None:
        _Machine.launch(self, now, k)
        if self.unshared.any():
            self.fp_submit = [self._submitter(q) for q in self.fp_submit]
            if self.fp_release:
                self.fp_release = [self._releaser(q) for q in self.fp_release]

    def _submitter(self, shared):
        unshared, ops, peak, call_later, own = self.unshared, self.op, self.peak, self.call_later, self._fp_done

        def submit(now, amount, b):
            if unshared[ops[b]]:
                call_later(now, amount / peak, own, b)
            else:
                shared(now, amount, b)
        return submit

    def _releaser(self, shared):
        unshared, ops = self.unshared, self.op

        def release(now, b):
            if not unshared[ops[b]]:
                shared(now, b)
        return release

    def _fp_done(self, now: float, b: int) -> None:
        left = self.pending[b] = self.pending[b] - 1
        if not left:
            self.jobs_done(now, b)

    def work(self, now: float, b: int) -> None:
        self.at_ready[b] = self.company.enter(now, self.sm[b], self.op[b])
        _Machine.work(self, now, b)

    def jobs_done(self, now: float, b: int) -> None:
        """`_Machine.jobs_done` with the block's slowdown by its company added to its wait."""
        op = self.op[b]
        if not self.slowed[op]:
            _Machine.jobs_done(self, now, b)
            return
        wait = self.t_ready[b] + self.floor[b] - now
        wait = (wait if wait > 0.0 else 0.0) + self.added[b]
        ran = now - self.t_ready[b]
        sm = self.sm[b]
        if ran > 0.0:
            beside = (self.company.advance(now, sm) - self.at_ready[b]) / ran
        else:
            beside = self.company.working[sm].copy()
        beside[op] -= 1.0
        slow = float(self.slowdown[op] @ beside)
        if self.unshared[op]:
            own = max(self.floor[b], self.fp[b] / self.peak)
            end = self.t_ready[b] + (own + self.added[b]) * (1.0 + slow) * (self.code[op] if self.check else 1.0)
            wait = wait if now + wait > end else end - now
        else:
            wait += slow * (ran + wait)
        if wait > 0:
            self.call_later(now, wait, self.finish, b)
        else:
            self.finish(now, b)

    def finish(self, now: float, b: int) -> None:
        self.company.leave(now, self.sm[b], self.op[b])
        _Machine.finish(self, now, b)
