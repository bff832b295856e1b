"""Simulation jobs on a process pool, and the progress bar that counts them.

`megasim calibrate` and `megasim validate` spend their minutes in independent simulations of very
unequal size (a VGG-1 run simulates 60,000 blocks, a small corpus shape 200). Handed to the pool in the
order they were listed, a big job near the end keeps one worker busy while the other waits; handed out
largest first (by an estimate of their cost), the workers finish together.
"""
from __future__ import annotations

from concurrent.futures import as_completed
from contextlib import contextmanager


def largest_first(pool, fn, args: list, costs: list, tick=None) -> list:
    """`[fn(a) for a in args]` on `pool`, submitted in decreasing `costs`, results in the order of `args`;
    `tick()` after each one finishes."""
    order = sorted(range(len(args)), key=lambda i: -costs[i])
    futures = {pool.submit(fn, args[i]): i for i in order}
    results = [None] * len(args)
    for future in as_completed(futures):
        results[futures[future]] = future.result()
        if tick:
            tick()
    return results


@contextmanager
def progress(description: str, total: int, shown: bool = True):
    """A bar on stderr while the block runs, yielding the callable that advances it by one (or by
    `amount`). It draws only on a terminal and leaves nothing behind; `shown=False` (`--json`) hides it."""
    from rich.console import Console
    console = Console(stderr=True) if shown else None
    if console is None or not console.is_terminal:  # not even the newline a finished bar leaves in a pipe
        yield lambda amount=1: None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console, transient=True) as bar:
        task = bar.add_task(description, total=total)
        yield lambda amount=1: bar.advance(task, amount)
