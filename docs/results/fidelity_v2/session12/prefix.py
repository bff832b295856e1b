"""Study patch: stage 2 compares a kernel's graph prefix difference with the same kernel simulated after its
predecessors (warm L2), not alone."""
from megasim.app.calibrate import predict, fit
from megasim.contract.problem import Op
from megasim.engine import nonfused_kernels, run_kernels

def predict_kernel_in_graph(run, op, spec):
    graph = predict.graph_of(run)
    raw = run_kernels(graph, nonfused_kernels(graph)[: int(op) + 1], spec)
    a, b = raw.kernel_spans_cycles[-1]
    lead = spec.first_launch_us if op == Op.FILTER_TRANSFORM else spec.launch_overhead_us
    return spec.cycles_to_us(b - a) + lead

def install():
    predict.predict_kernel_in_graph = predict_kernel_in_graph
    fit.predict_kernel_in_graph = predict_kernel_in_graph
