"""From command-line arguments to a strategy's and a policy's options, read from their declarations.

Each option a registered strategy declares becomes a flag (`--dig`, `--dgo`
and `--m` come from `PaperOptions`, `--seed` from `RandomTopoOptions`), and
any strategy or policy option can be given as `--opt name=value`. `simulate`
and `bench` both get their mapping from `mapping_from_args`, so there is one
way from arguments to a mapping.
"""
from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from megasim.contract.errors import MegasimError
from megasim.contract.mapping import MAPPINGS
from megasim.contract.modes import DEFAULT_POLICY
from megasim.contract.options import declared

if TYPE_CHECKING:
    from megasim.contract.mapping import Mapping


def add_choice_args(p) -> None:
    """--strategy, --opt and --mapping; `add_option_flags` comes once the command's own flags are in."""
    p.add_argument("--strategy", help="mapping strategy (megasim mappings lists them; default paper)")
    p.add_argument("--opt", action="append", metavar="NAME=VALUE",
                   help="an option of the strategy or policy (repeatable; megasim mappings lists them)")
    p.add_argument("--mapping", help="a mapping JSON file (from megasim search); overrides --strategy")


def add_policy_args(p) -> None:
    """--policy, and --replay-trace: the older spelling of `--opt trace=PATH` for the replay policy."""
    p.add_argument("--policy", default=DEFAULT_POLICY,
                   help=f"block dispatch policy (default {DEFAULT_POLICY}; its options: --opt)")
    p.add_argument("--replay-trace", help="with --policy replay: the same as --opt trace=PATH")


def add_option_flags(*parsers) -> None:
    """One flag per strategy option name, with the declarations' help and type, on each parser.

    Added last, so a name the command already uses (say `--trace`) keeps its
    meaning and the option stays reachable through `--opt`.
    """
    owners: dict[str, list] = {}
    for strategy in MAPPINGS.names():
        for info in declared(MAPPINGS.get(strategy).options):
            owners.setdefault(info.name, []).append((strategy, info))
    for p in parsers:
        flags = []
        for name, decl in owners.items():
            text = "; ".join(f"{strategy}: {info.help}" for strategy, info in decl)
            try:
                p.add_argument(f"--{name.replace('_', '-')}", dest=name, type=decl[0][1].type, help=text)
            except argparse.ArgumentError:
                continue
            flags.append(name)
        p.set_defaults(option_flags=tuple(flags))


def _assignments(args) -> dict[str, str]:
    """--opt's name=value pairs (and --replay-trace as trace=PATH); a name given twice is refused, since
    only one of its values could be used."""
    out = {}
    for item in getattr(args, "opt", None) or []:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise MegasimError(f"--opt wants name=value, got {item!r}")
        if name.strip() in out:
            raise MegasimError(f"--opt {name.strip()} given twice ({out[name.strip()]!r}, then {value.strip()!r}); "
                               "give it once")
        out[name.strip()] = value.strip()
    if getattr(args, "replay_trace", None):
        if "trace" in out:
            raise MegasimError("--replay-trace and --opt trace=... both name the replay trace; give one")
        out["trace"] = args.replay_trace
    return out


def options_from_args(args) -> tuple[dict, dict]:
    """(strategy options, policy options): generated flags and --opt, each name to whichever declares it."""
    strategy = MAPPINGS.get(getattr(args, "strategy", None) or "paper")
    policy = None
    if getattr(args, "policy", None):
        from megasim.engine.dispatch import DISPATCH_POLICIES
        policy = DISPATCH_POLICIES.get(args.policy)
    assigned = _assignments(args)
    theirs = policy.names() if policy else []
    if getattr(args, "replay_trace", None) and "trace" not in theirs:
        raise MegasimError(f"--replay-trace is the replay policy's trace; add --policy replay "
                           f"(the policy is {getattr(args, 'policy', None)})")
    unknown = sorted(set(assigned) - set(strategy.names()) - set(theirs))
    if unknown:
        takes = [f"{e.label} takes {', '.join(e.names()) or 'none'}" for e in (strategy, policy) if e]
        raise MegasimError(f"unknown option(s) {', '.join(unknown)}; {'; '.join(takes)}")
    flags = {n: getattr(args, n) for n in getattr(args, "option_flags", ()) if getattr(args, n, None) is not None}
    both = sorted(set(flags) & set(assigned))
    if both:
        name = both[0]
        raise MegasimError(f"--{name.replace('_', '-')} {flags[name]} and --opt {name}={assigned[name]} give one "
                           "option twice; give it once")
    to_policy = {k: v for k, v in assigned.items() if k in theirs and k not in strategy.names()}
    return {**flags, **{k: v for k, v in assigned.items() if k not in to_policy}}, to_policy


def mapping_from_args(graph, args) -> Mapping:
    """The mapping `simulate` and `bench` run: a mapping file, or the strategy with its options."""
    from megasim.contract.mapping import make, validate
    strategy_options, _ = options_from_args(args)
    if getattr(args, "mapping", None):
        from megasim.contract.mapping.io import load_mapping
        return load_mapping(args.mapping, graph)
    mapping = make(graph, getattr(args, "strategy", None) or "paper", **strategy_options)
    validate(graph, mapping)
    return mapping


def _entries(registry) -> list[str]:
    import inspect
    lines = []
    for name in registry.names():
        entry = registry.get(name)
        doc = (inspect.getmodule(entry.build).__doc__ or "").strip().split("\n\n")[0]
        lines.append(f"  {name:22s}{' '.join(doc.split())}")
        for o in declared(entry.options):
            search = f" (search: {', '.join(map(str, o.search))})" if o.search else ""
            lines.append(f"      {o.name}={o.default!r}: {o.help}{search}")
    return lines


def describe() -> str:
    """What `megasim mappings` prints: every strategy and policy with its options and their help."""
    from megasim.engine.dispatch import DISPATCH_POLICIES
    return "\n".join(["mapping strategies (--strategy NAME; options as --NAME VALUE or --opt NAME=VALUE):",
                      *_entries(MAPPINGS),
                      "dispatch policies (--policy NAME; options as --opt NAME=VALUE):",
                      *_entries(DISPATCH_POLICIES)])
