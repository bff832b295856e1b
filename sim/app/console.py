"""What the command line prints when it stops: each error as one printable line, SIGTERM as an interrupt."""
from __future__ import annotations

import signal
import sys

LINE_LIMIT = 600


class Terminated(KeyboardInterrupt):
    """SIGTERM (from `timeout`, CI or a scheduler), handled as Ctrl-C is: outputs not yet in place are removed."""


def terminate(signum, frame):
    """The SIGTERM handler `main` installs. `timeout` and CI signal this process alone, not its worker processes
    (as Ctrl-C does the terminal's whole group), and a pool would wait for its workers for ever: they are ended
    first."""
    import multiprocessing
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second SIGTERM ends the process at once
    for child in multiprocessing.active_children():
        child.terminate()
    raise Terminated


def error_line(text: str, stream=None) -> str:
    """`text` as one printable line for `stream`: control characters (a newline in a name, a terminal escape)
    and what the stream's encoding cannot carry (a lone surrogate, non-ASCII under PYTHONIOENCODING=ascii) are
    written as escapes."""
    encoding = getattr(stream or sys.stderr, "encoding", None) or "utf-8"
    shown = "".join(ch if ch.isprintable() else ch.encode("unicode_escape", "backslashreplace").decode("ascii")
                    for ch in text)
    if len(shown) > LINE_LIMIT:  # a 100,000-digit value is quoted by its ends
        shown = f"{shown[:LINE_LIMIT // 2]}...({len(shown) - LINE_LIMIT} characters)...{shown[-LINE_LIMIT // 2:]}"
    return shown.encode(encoding, "backslashreplace").decode(encoding, "replace")


__all__ = ["LINE_LIMIT", "Terminated", "error_line", "terminate"]
