"""Synthetic graphs and toy GPUs whose answers follow from arithmetic alone."""
import signal
from contextlib import contextmanager

import numpy as np
import pytest

from megasim.contract.graph import Geometry, TaskGraph
from megasim.contract.problem import Layer, Op, Partition, WinogradVariant
from megasim.contract.ranges import DataRanges
from megasim.contract.resources import StageResources
from megasim.contract.regions import Buffer, RegionLayout
from megasim.engine.model import GPUModel, Model


def toy_gpu(**over) -> GPUModel:
    """1 GHz, so one cycle is one nanosecond; no latencies unless asked. `over` takes hardware figures, model
    constants and laws alike (`GPUModel.with_model`)."""
    base = dict(name="toy", full_name="toy", sm_count=4, sms_per_gpc=2, first_wave_lead_sms=(),
                max_threads_per_sm=2048, max_blocks_per_sm=4, regs_per_sm=65536,
                smem_per_sm_bytes=100_000, max_smem_per_block_bytes=100_000, clock_mhz=1000.0,
                fp32_flops_per_cycle_per_sm=100, dram_gbps=400.0, l2_bytes=1 << 40, l2_gbps=1e6,
                dram_latency_cycles=0, l2_latency_cycles=0, sm_bytes_per_cycle=1e9,
                launch_overhead_us=0.0, tb_dispatch_latency_cycles=0, tb_dispatch_interval_cycles=0.0,
                atomic_latency_cycles=0, spin_poll_cycles=0, dram_efficiency=1.0, l2_efficiency=1.0,
                l2_usable_fraction=1.0, compute_efficiency={}, task_overhead_cycles=0)
    model = {k: base.pop(k) for k in ("dram_efficiency", "l2_efficiency", "l2_usable_fraction", "compute_efficiency",
                                      "task_overhead_cycles")}
    return GPUModel(**base, model=Model(**model)).with_model(**over)


def synthetic_graph(op, flops, read_bytes, shared_region=None) -> TaskGraph:
    """Independent tasks, each reading its own region (or `shared_region[i]`) once."""
    n = len(flops)
    region = np.arange(n) if shared_region is None else np.asarray(shared_region)
    nreg = int(region.max()) + 1
    layer = Layer(1, 1, 1, 1, 1, name="synthetic")
    geo = Geometry(1, 1, 1, 1, 1, 1, 1, 1, 1, 1)
    return TaskGraph(
        layer=layer, variant=WinogradVariant(4), partition=Partition(), geometry=geo,
        ranges=DataRanges.of(layer, WinogradVariant(4), Partition()),
        op=np.asarray(op, dtype=np.int8), group=np.zeros(n, dtype=np.int32), index=np.arange(n, dtype=np.int32),
        flops=np.asarray(flops, dtype=np.float64), waits_on=np.full((n, 2), -1, dtype=np.int32),
        signals=np.full(n, -1, dtype=np.int32), counter_init=np.zeros(1, dtype=np.int32),
        group_tiles=np.ones(1, dtype=np.int64),
        regions=RegionLayout(base={k: 0 for k in Buffer}, kind=np.full(nreg, Buffer.INPUT, dtype=np.int8)),
        read_ptr=np.arange(n + 1, dtype=np.int64), read_region=region.astype(np.int32),
        read_bytes=np.asarray(read_bytes, dtype=np.int64),
        write_ptr=np.zeros(n + 1, dtype=np.int64), write_region=np.zeros(0, dtype=np.int32),
        write_bytes=np.zeros(0, dtype=np.int64))


BLOCK = StageResources(threads=256, regs_per_thread=32)


@pytest.fixture
def gpu():
    return toy_gpu()


__all__ = ["toy_gpu", "synthetic_graph", "BLOCK", "Op"]


class Hung(BaseException):
    """Not an OSError or a MegasimError, so the CLI cannot turn it into a tidy exit code 2."""


@contextmanager
def alarm_after(seconds: int = 20):
    """A hang (a FIFO read, a refusal that comes only after minutes of work) becomes a failure, not a stuck job."""
    def hung(*_):
        raise Hung(f"the command ran past its {seconds} s alarm: it hung, or refused only after the work")
    old = signal.signal(signal.SIGALRM, hung)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


@pytest.fixture
def alarm():
    """`alarm_after(20)` around the test: the bad-input promise is an answer within 20 s."""
    with alarm_after(20):
        yield


def write_files(folder, files: dict) -> None:
    """Each `name: text or bytes` of `files` written into `folder`."""
    for name, content in files.items():
        (folder / name).write_bytes(content if isinstance(content, bytes) else content.encode())


def assert_refused(rc: int, err: str, phrase: str) -> None:
    """The bad-input promise: exit code 2 and one line on stderr that names the problem, never a traceback."""
    assert rc == 2, err
    assert len(err.splitlines()) == 1 and err.startswith("megasim: error: ") and "Traceback" not in err, err
    assert phrase in err, err
