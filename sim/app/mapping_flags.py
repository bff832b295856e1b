"""`simulate --mapping FILE`: the file fixes the problem; a flag may repeat it but never contradict it.

A mapping file carries the layer, variant and partition it was made for, the
scheduling mode it was chosen for, and the order, which stands in for what
`--strategy` and its options would build. So with `--mapping`:

- `--layer`/`--shape` must name the file's layer, and the file's partition is
  used (not the partition table's, which a search may have moved away from);
- `--variant` must be the file's, and `--partition`'s overrides must leave the
  file's partition as it is;
- `--strategy`, its option flags (`--dig`, `--seed`, ...) and strategy options
  given with `--opt` are refused: the file's order would silently win;
- `--mode` may differ (the order runs in any mode), and dispatch-policy
  options apply as they do without a file.

Each conflict is one error that names the flag and what the file says.
"""
from __future__ import annotations

from megasim.app.catalog import apply_overrides, resolve_layer
from megasim.app.choices import options_from_args
from megasim.contract.errors import MegasimError
from megasim.contract.mapping.io import mode_of, problem_of, read_mapping_file
from megasim.contract.problem import Layer, Partition, WinogradVariant

_SHAPE = ("n", "c", "h", "w", "k")


def _shape(layer: Layer) -> str:
    return ",".join(str(getattr(layer, f)) for f in _SHAPE)


def _layer(args, theirs: Layer, path) -> Layer:
    if not (args.layer or args.shape):
        return theirs
    mine = resolve_layer(args.layer, args.shape)
    if _shape(mine) != _shape(theirs):
        flag = f"--layer {args.layer}" if args.layer else f"--shape {args.shape}"
        raise MegasimError(f"{flag} ({_shape(mine)}) conflicts with {path}, made for {theirs.name} "
                           f"({_shape(theirs)}); drop one")
    return mine


def _check_problem_flags(args, variant: WinogradVariant, partition: Partition, path) -> None:
    if args.variant is not None and args.variant != variant.m:
        raise MegasimError(f"--variant {args.variant} conflicts with {path}, made for F({variant.m}x{variant.m},3x3) "
                           f"(variant {variant.m}); drop one")
    if args.partition:
        changed = apply_overrides(partition, args.partition).to_dict()
        differ = [f"{k}={v}" for k, v in partition.to_dict().items() if changed[k] != v]
        if differ:
            raise MegasimError(f"--partition {args.partition} conflicts with {path}, made for {', '.join(differ)}; "
                               "drop one")


def _strategy_flags(args) -> list[str]:
    """The flags that choose a strategy or its options, as given."""
    given = [f"--strategy {args.strategy}"] if getattr(args, "strategy", None) else []
    strategy_options, _ = options_from_args(args)
    flags = set(getattr(args, "option_flags", ()))
    for name, value in strategy_options.items():
        by_flag = name in flags and getattr(args, name, None) is not None
        given.append(f"--{name.replace('_', '-')} {value}" if by_flag else f"--opt {name}={value}")
    return given


def problem_from_mapping_file(args) -> tuple[Layer, WinogradVariant, Partition, str]:
    """(layer, variant, partition, mode) of `args.mapping`, after refusing every flag that contradicts it."""
    path = args.mapping
    doc = read_mapping_file(path)
    theirs, variant, partition = problem_of(doc, path)
    layer = _layer(args, theirs, path)
    _check_problem_flags(args, variant, partition, path)
    given = _strategy_flags(args)
    if given:
        made = f"{doc.get('strategy', 'file')} {doc.get('params') or {}}"
        raise MegasimError(f"{', '.join(given)}: {path} already gives the order (made by {made}); "
                           "drop the flag or the --mapping")
    return layer, variant, partition, mode_of(doc, path)


def gemm_precision_and_partition(args, layer, partition: Partition, source: str) -> tuple[str, str, Partition, str]:
    """`simulate`'s GEMM body and precision (`--gemm` and `--precision`, else the --mapping file's, else the
    generic body in FP32; a precision off its body is refused) and the partition it runs on: a mapping file's as
    it is, else the table's widened for the warp body as `bench` runs it."""
    from megasim.contract.build import Build, build_partition
    from megasim.contract.mapping.io import build_of
    from megasim.contract.resources import check_precision_body
    named = build_of(read_mapping_file(args.mapping), args.mapping) if args.mapping else Build()
    gemm, precision = args.gemm or named.gemm, args.precision or named.precision
    check_precision_body(gemm, precision)
    if args.mapping:
        return gemm, precision, partition, source
    widened = build_partition(layer, Build(gemm=gemm), partition)
    if widened != partition:
        source += f", widened for the {gemm} GEMM body (gemm_k_per_task {widened.gemm_k_per_task})"
    return gemm, precision, widened, source
