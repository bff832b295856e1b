"""Simulator-guided schedule search (`megasim search`).

A point is a choice of the Winograd variant and the scheduling mode (both
searched unless pinned), of the mapping strategy's options (D_IG, D_GO, M
for `paper`) and of the partition knobs (tiles per group, GEMM tile sizes,
threads). `space` declares the values and rejects illegal points before any
simulation; `objective` simulates one point; `runner` drives Optuna's
ask/tell loop over a local process pool or a Dask cluster (`dask_runner`)
with resumable storage; `outputs` and `heatmaps` write what a search found;
`hardware` measures the best few on a GPU. The exhaustive device sweep and
its CPU analysis are a study: docs/results/search_sweep_h200/.
"""
