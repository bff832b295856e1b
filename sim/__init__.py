"""megasim: simulate and measure fused Winograd-convolution megakernels under task->thread-block mappings.

Three layers, every import pointing down (docs/architecture.md):
`megasim.app` (CLI, commands, calibration, search) imports both executors,
`megasim.engine` (SimPy model) and `megasim.gpu` (CUDA kernels, emulator,
baselines) import only `megasim.contract` (problem, graph, encoding, resource
plan, data ranges, mappings), which imports only `megasim.io` (reading and
writing files, typed input ranges), which knows nothing of the domain.
"""
