"""The study patches' command-line options: one rule for taking `--flag VALUE` out of argv and installing it."""
import json


def take(argv: list, flag: str, install) -> None:
    """If `argv` holds `flag VALUE`, remove both words and call `install(VALUE)`."""
    if flag in argv:
        i = argv.index(flag)
        value = argv[i + 1]
        del argv[i:i + 2]
        install(value)


def take_all(argv: list) -> None:
    """Session 18's patches: --queued S, --input-dram D, --l2-cap JSON (README.md)."""
    import dram_pin
    import l2cap
    import queued
    take(argv, "--queued", lambda v: queued.install({"input_transform": float(v)}))
    take(argv, "--input-dram", lambda v: dram_pin.install(float(v)))
    take(argv, "--l2-cap", lambda v: l2cap.install(json.loads(v)))
