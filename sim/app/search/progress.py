"""The search's progress bar on stderr (rich), or nothing with --quiet."""
from __future__ import annotations

from contextlib import nullcontext


def progress_bar(enabled: bool, total: int, start: int, label: str):
    """A context whose value is `update(done, best)`."""
    if not enabled:
        return nullcontext(lambda done, best: None)
    from rich.console import Console
    from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn,
                               TimeRemainingColumn)
    bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                   TextColumn("best {task.fields[best]}"), TimeElapsedColumn(), TextColumn("ETA"),
                   TimeRemainingColumn(), console=Console(stderr=True))
    task = bar.add_task(label, total=total, completed=start, best="-")

    def update(done, best):
        bar.update(task, completed=done, best=f"{best:.1f} us" if best < float("inf") else "-")

    class _Ctx:
        def __enter__(self):
            bar.start()
            return update

        def __exit__(self, *exc):
            bar.stop()
            return False
    return _Ctx()
