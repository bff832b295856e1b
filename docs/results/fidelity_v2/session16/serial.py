"""Session 16 study patch: a transform block's FP32 work starts only when its memory jobs have ended.

The trace sample's block laws fit the sum of a block's latency, its FP32 share and its memory share better than
their maximum (`maxsum.py`: the output's median per-launch error 0.092 summed, 0.121 overlapped; the input's 0.072
and 0.089), and the committed output law was fitted in the summed form. The engine overlaps a block's DRAM, L2 and
FP32 jobs. `install(ops)` makes the engine run the listed task types' FP32 job after their memory jobs instead.
"""
import numpy as np

import megasim.engine.core as core
from megasim.contract.problem import OP_NAMES, Op

SERIAL = set()


def _serial(base):
    class Serial(base):
        def launch(self, now, k):
            base.launch(self, now, k)
            if not hasattr(self, "deferred"):
                self.serial = np.array([OP_NAMES[o] in SERIAL for o in Op])
                self.deferred = np.full(len(self.order), -1.0)
            self.real_submit = list(self.fp_submit)
            self.fp_submit = [self._deferring(q) for q in self.real_submit]

        def _deferring(self, real):
            def submit(now, amount, b):
                if self.serial[self.op[b]]:
                    self.deferred[b] = amount
                    left = self.pending[b] = self.pending[b] - 1
                    if not left:
                        self.jobs_done(now, b)
                else:
                    real(now, amount, b)
            return submit

        def jobs_done(self, now, b):
            amount = self.deferred[b]
            if amount >= 0.0:
                self.deferred[b] = -1.0
                self.pending[b] = 1
                self.real_submit[self.sm[b]](now, amount, b)
                return
            base.jobs_done(self, now, b)
    return Serial


def install(ops):
    """The compiled `run_kernels` binds its machine classes statically, so the interpreter's reference to it is
    replaced by one that picks the serial subclass of the machine it would have picked."""
    import megasim.engine.interpreter as interpreter
    SERIAL.update(ops)
    machines = {False: _serial(core._Machine), True: _serial(core._StretchedMachine)}

    def run_kernels(graph, kernels, gpu, policy="in_order_round_robin", policy_options=None,
                    quantum=core.DEFAULT_QUANTUM_CYCLES, seed=0):
        if gpu.neighbour_slowdown or gpu.unshared_fp32:
            raise NotImplementedError("serial.py patches the committed form only")
        machine = machines[bool(gpu.gemm_neighbour_stretch)]
        return machine(graph, gpu, list(kernels), policy, policy_options, quantum, seed).run()
    interpreter.run_kernels = run_kernels
