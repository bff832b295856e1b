"""The command line's parser: argparse, with the refusals argparse leaves out, made once for every command.

argparse takes `--layer ""` as a value (which then reads as "not given" and runs the default), keeps the
last of `--dig 64 --dig 128`, and keeps a flag whose help says "with --network" when --network is absent.
Each of these ran something other than what was asked, so each is refused: an empty value and a flag
given twice by the actions every string flag gets (registered as the parser's default `store` and
`append` actions, so a new flag is covered without a word of its own), and a flag missing the flag it
works with by `check_needs`, from the table `NEEDS`.
"""
from __future__ import annotations

import argparse
import os

from megasim.contract.errors import MegasimError

_GIVEN = "_megasim_given"


def _refuse_empty(action, values) -> None:
    if values == "":
        tail = "; give one, or leave the flag out for its default" if action.option_strings else ""
        raise argparse.ArgumentError(action, "empty value" + tail)


def _given(namespace) -> dict:
    return namespace.__dict__.setdefault(_GIVEN, {})


class _StoreOnce(argparse.Action):
    """argparse's `store`, refusing an empty string and a second value for the same option."""

    def __call__(self, parser, namespace, values, option_string=None):
        _refuse_empty(self, values)
        given = _given(namespace)
        if self.dest in given:
            raise argparse.ArgumentError(self, f"given twice ({given[self.dest]!r}, then {values!r}); give it once")
        given[self.dest] = values
        setattr(namespace, self.dest, values)


class _AppendNonEmpty(argparse.Action):
    """argparse's `append` (a fresh list, never the default's), refusing an empty string."""

    def __call__(self, parser, namespace, values, option_string=None):
        _refuse_empty(self, values)
        _given(namespace)[self.dest] = values
        setattr(namespace, self.dest, [*(getattr(namespace, self.dest, None) or []), values])


class Parser(argparse.ArgumentParser):
    """Errors are MegasimErrors (one line, exit 2, from `main`); `args.given` holds the dests given."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for name in (None, "store"):
            self.register("action", name, _StoreOnce)
        self.register("action", "append", _AppendNonEmpty)

    def error(self, message):
        raise MegasimError(message)

    def parse_known_args(self, args=None, namespace=None):
        namespace, rest = super().parse_known_args(args, namespace)
        given = namespace.__dict__.pop(_GIVEN, {})
        namespace.given = frozenset(given) | frozenset(getattr(namespace, "given", ()))
        return namespace, rest


# (command, flag given, the flag it works with, whether the arguments have that)
NEEDS = (
    ("simulate", "mappings", "--network", lambda a: a.network),
    ("bench", "mappings", "--network", lambda a: a.network),
    ("bench", "plot", "--network", lambda a: a.network),
    ("search", "reps", "--validate-top", lambda a: a.validate_top is not None),
    ("calibrate", "trace_sample", "--sharing resident", lambda a: a.sharing == "resident"),
)


class BooleanOnce(argparse.BooleanOptionalAction):
    """argparse's `--flag/--no-flag`, refusing both (or either twice) in one command."""

    def __call__(self, parser, namespace, values, option_string=None):
        given = _given(namespace)
        if self.dest in given:
            raise argparse.ArgumentError(self, f"given twice ({given[self.dest]}, then {option_string}); give one")
        given[self.dest] = option_string
        super().__call__(parser, namespace, values, option_string)


def check_counts(args) -> None:
    """Worker counts this machine can run and budgets that measure something: `--jobs 100000` would start
    thousands of processes on two cores, `--budget-s -1` would measure nothing and call it a pause."""
    cores = os.cpu_count() or 1
    jobs = getattr(args, "jobs", None)
    if isinstance(jobs, int) and jobs > cores:
        raise MegasimError(f"--jobs {jobs} is more worker processes than this machine's {cores} cores; give at "
                           f"most {cores}")
    scheduler = getattr(args, "scheduler", None) or ""
    name, sep, count = scheduler.partition(":")
    if name == "local" and sep and count.isdigit():
        if int(count) > cores:
            raise MegasimError(f"--scheduler {scheduler} asks for more workers than this machine's {cores} cores; "
                               f"give at most local:{cores}")
        if int(count) >= 1 and "jobs" in getattr(args, "given", ()) and jobs != int(count):
            raise MegasimError(f"--scheduler {scheduler} runs {count} workers and --jobs {jobs} another number; "
                               "give one of them (local takes --jobs as its count)")
    budget = getattr(args, "budget_s", None)
    if isinstance(budget, float) and not budget > 0:
        raise MegasimError(f"--budget-s wants a positive number of seconds, got {budget:g}")


def check_needs(args) -> None:
    """Refuse a flag given without the flag its help says it works with: it would be ignored."""
    command, given = getattr(args, "command", None), getattr(args, "given", ())
    for where, dest, needed, has in NEEDS:
        if command == where and dest in given and not has(args):
            flag = "--" + dest.replace("_", "-")
            raise MegasimError(f"{flag} works only with {needed}; add {needed}, or leave {flag} out")
