"""Simulator-guided schedule search (`megasim search`).

A point is a choice of the Winograd variant and the scheduling mode (both
searched unless pinned), of the mapping strategy's options (D_IG, D_GO, M
for `paper`) and of the partition knobs (tiles per group, GEMM tile sizes,
threads). `space` declares the values and rejects illegal points before any
simulation; `objective` simulates one point; `runner` sets up one search
and `loop` drives Optuna's ask/tell over a local process pool (`pool`) or
a Dask cluster (`dask_runner`), several evaluations in flight; `store`
keeps the trials in memory while it runs and copies them to the resumable
storage, and `lock` keeps a second search off the same folder; `outputs`
and `heatmaps` write what a search found, `network` does it for each layer
of a network; `hardware` measures the best few on a GPU. The exhaustive
device sweep and its CPU analysis are a study: docs/results/search_sweep_h200/.
Optuna and Dask are imported only on the search command's path.
"""
