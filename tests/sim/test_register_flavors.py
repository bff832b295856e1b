"""The register plan knows a build's flavor: the variant and the GEMM's vector loads change what ptxas allocates,
and so how many blocks share an SM (tests/gpu/test_occupancy_ptxas.py holds the table to ptxas)."""
from megasim.app.catalog import load_gpu, partition_for
from megasim.contract.graph import build_graph
from megasim.contract.problem import Layer, Op, WinogradVariant
from megasim.contract.resources import DEFAULT_FLAVOR, Flavor, blocks_per_sm, megakernel_resources, stage_resources
from megasim.engine import fused_kernels, nonfused_kernels
from megasim.contract.mapping import make

H200 = load_gpu("h200")


def test_a_three_channel_layer_loads_c_a_float_at_a_time_and_fits_three_gemm_blocks_not_four():
    layer = Layer(n=256, c=3, h=17, w=17, k=192, name="c3")
    part = partition_for(layer)
    flavor = Flavor.of(layer, WinogradVariant(4), part)
    assert flavor == Flavor(4, vector_c=False, vector_k=True)
    assert blocks_per_sm(H200, stage_resources(part, Op.GEMM)) == 4
    assert blocks_per_sm(H200, stage_resources(part, Op.GEMM, flavor=flavor)) == 3
    assert blocks_per_sm(H200, megakernel_resources(part, flavor=flavor)) == 3


def test_f6_transforms_take_more_registers_than_f4_and_f2_fewer():
    layer = Layer(n=64, c=192, h=56, w=56, k=48, name="DenseNet")
    part = partition_for(layer)
    regs = {m: stage_resources(part, Op.OUTPUT_TRANSFORM, flavor=Flavor(m)).regs_per_thread for m in (2, 4, 6)}
    assert regs[2] < regs[4] < regs[6]
    assert blocks_per_sm(H200, megakernel_resources(part, flavor=Flavor(6))) < blocks_per_sm(
        H200, megakernel_resources(part, flavor=DEFAULT_FLAVOR))


def test_the_engine_sizes_its_slots_by_the_graphs_flavor():
    layer = Layer(n=8, c=3, h=17, w=17, k=192, name="c3")
    graph = build_graph(layer, WinogradVariant(4), partition_for(layer))
    flavor = Flavor.of(layer, graph.variant, graph.partition)
    gemm = [k for k in nonfused_kernels(graph) if k.name == "gemm"][0]
    assert gemm.resources == stage_resources(graph.partition, Op.GEMM, flavor=flavor)
    fused = fused_kernels(graph, make(graph, "paper"))[0]
    assert fused.resources == megakernel_resources(graph.partition, flavor=flavor)
