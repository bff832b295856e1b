"""Every output a command names, checked before the command starts any work.

`calibrate --from-raw --out ro/p.toml` used to fail after eight minutes of
fitting, `validate` after a minute and a half with its figures written and
no report. Here each output flag of each command is looked at first (the
checks are `megasim.io.writing.check_writable`'s: nothing is created),
and `--plot` must name a format by its extension. Outputs a command derives
itself (search's default folder) it checks where it derives them.
"""
from __future__ import annotations

from pathlib import Path

from megasim.contract.errors import MegasimError
from megasim.io.writing import check_writable

FIGURE_FORMATS = {".png": "png", ".pdf": "pdf", ".svg": "svg"}

OUTPUT_FILES = {"simulate": ("trace", "plot"), "bench": ("out", "plot", "trace"), "calibrate": ("out",),
                "validate": ("report",), "compare": ("plot",)}
OUTPUT_FOLDERS = {"validate": ("out",), "search": ("out",)}


def figure_format(path) -> str:
    """The matplotlib format `path`'s extension names; anything but .png, .pdf and .svg is refused."""
    suffix = Path(path).suffix.lower()
    if suffix not in FIGURE_FORMATS:
        raise MegasimError(f"{path}: the extension picks the figure format; use .png, .pdf or .svg")
    return FIGURE_FORMATS[suffix]


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def named_outputs(args) -> list[tuple[str, str, bool]]:
    """(flag, path, is a folder) for every output the command's arguments name."""
    command = getattr(args, "command", None)
    named = [(_flag(n), getattr(args, n, None), False) for n in OUTPUT_FILES.get(command, ())]
    named += [(_flag(n), getattr(args, n, None), True) for n in OUTPUT_FOLDERS.get(command, ())]
    if command == "calibrate" and not getattr(args, "from_raw", False):
        named.append(("--raw", args.raw, True))
    if command == "search" and getattr(args, "storage", None):
        from megasim.app.search.store import storage_file
        named.append(("--storage", storage_file(args.storage), False))
    return [(flag, path, folder) for flag, path, folder in named if path]


def preflight(args) -> None:
    """Refuse, before any work, outputs that cannot be written, a `--plot` of an unknown format, and two
    outputs that name one file."""
    named = named_outputs(args)
    if getattr(args, "command", None) in ("simulate", "compare", "bench") and getattr(args, "plot", None):
        figure_format(args.plot)
    seen: dict[Path, str] = {}
    folders = {}
    for flag, path, folder in named:
        if folder:
            try:
                folders[Path(path).resolve()] = flag
            except (OSError, RuntimeError):  # a loop: check_writable refuses it below
                pass
    for flag, path, folder in named:
        check_writable(path, folder=folder)
        if not folder:
            real = Path(path).resolve()
            if real in seen:
                raise MegasimError(f"{path}: named by both {seen[real]} and {flag}; give each output its own file")
            if real in folders:
                raise MegasimError(f"{path}: {flag} names the folder {folders[real]} writes into; give the file "
                                   "another name")
            seen[real] = flag


def write_simulation_outputs(args, result, layer, gpu, mapping) -> list[str]:
    """`simulate --trace` and `--plot`; one "wrote ..." line per file. The figures are the table's: the
    plot's title gives the fused time the table prints, and the trace carries the same utilisation."""
    if not (args.trace or args.plot):
        return []
    written = []
    utilisation = result.fused.utilisation(gpu)
    if args.trace:
        from megasim.app.perfetto import write_trace
        write_trace(result.fused.records, args.trace, {"layer": layer.name, "gpu": gpu.name, **result.params},
                    utilisation=utilisation)
        written.append(f"wrote {args.trace} (Perfetto trace: ui.perfetto.dev)")
    if args.plot:
        from megasim.app.plot import plot_timeline
        plot_timeline(result.fused.records, args.plot,
                      title=f"{layer.name} on {gpu.name}: megakernel, {mapping.strategy} {result.params}",
                      num_sms=gpu.sm_count, utilisation=utilisation, time_us=result.fused.time_us)
        written.append(f"wrote {args.plot} (per-SM timeline)")
    return written
