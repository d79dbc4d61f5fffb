"""`pacebench ladder --sizes ... --algorithms ...`: run a model-size ladder (runners/procedures/ladder.py)
through the study launcher, store and resume rules; its flags and its command."""
from __future__ import annotations

import argparse
import math
import sys

from runners.cli.common import (algorithm_sources, execution_options, existing_store,
                                launch_and_report, launch_options, search_spaces,
                                store_for_writing)
from runners.cli.flags import ALGORITHM_HELP, add_execution_flags, launch_flags, store_flag
from runners.cli.types import csv as _csv, floats as _floats
from workbench.errors import UserError

__all__ = ["add_run_flags", "run_ladder_command", "trials_flag", "transfer_flag"]


def trials_flag(text: str) -> dict[str, int] | int:
    """--trials: K for every algorithm, or NAME=K items (e.g. adamw=8,muon=8)."""
    items = _csv(text)
    if len(items) == 1 and "=" not in items[0]:
        return _positive(items[0], text)
    out = {}
    for item in items:
        name, sep, k = item.partition("=")
        if not sep or not name:
            raise argparse.ArgumentTypeError(f"expected K or NAME=K items (e.g. adamw=8,"
                                             f"muon=8), got {text[:80]!r}")
        out[name.strip()] = _positive(k, text)
    return out


def _positive(text: str, whole: str) -> int:
    try:
        k = int(text)
    except ValueError:
        k = 0
    if k < 1:
        raise argparse.ArgumentTypeError(f"trials must be integers >= 1 (K or NAME=K), got "
                                         f"{whole[:80]!r}")
    return k


def transfer_flag(text: str) -> dict[str, str]:
    """--transfer NAME=RULE items (runners/procedures/ladder.py TRANSFER_RULES)."""
    out = {}
    for item in _csv(text):
        name, sep, rule = item.partition("=")
        if not sep or not name or not rule:
            raise argparse.ArgumentTypeError(f"expected NAME=RULE items (e.g. adamw_mup=width),"
                                             f" got {text[:80]!r}")
        out[name.strip()] = rule.strip()
    return out


def add_run_flags(p: argparse.ArgumentParser) -> None:
    """The flags of running a ladder (beside --list and --summary)."""
    g = p.add_argument_group("running a ladder")
    g.add_argument("--sizes", type=_csv, help="rung names as `pacebench ladder --list` prints "
                                              "them, comma-separated")
    g.add_argument("--algorithms", type=_csv, help="the first is the reference; " + ALGORITHM_HELP)
    g.add_argument("--budgets", type=_floats, default=[1.0, 2.0, 4.0, 8.0],
                   help="data budgets as multiples of Chinchilla (20 tokens per non-embedding "
                        "parameter); default 1,2,4,8")
    g.add_argument("--seeds", type=int, default=1, help="a count: seeds 0..N-1 (default 1)")
    g.add_argument("--trials", type=trials_flag, default=1,
                   help="1 (default): each algorithm's declared setting or transfer rule; K > 1:"
                        " K quasirandom points of learning rate and weight decay per rung at "
                        "the smallest budget, the best rerun at every budget and seed; or "
                        "NAME=K items per algorithm")
    g.add_argument("--search-space", action="append", default=[], metavar="NAME=SPACE.json",
                   help="the space an algorithm's sweep (--trials K > 1) draws its learning "
                        "rate and weight decay from, instead of its own (e.g. one `pacebench "
                        "tune` wrote); repeatable")
    g.add_argument("--transfer", type=transfer_flag, default={}, metavar="NAME=RULE",
                   help="an algorithm's transfer rule from the smallest rung (width: learning "
                        "rate x base width / width), with --trials 1; e.g. adamw_mup=width "
                        "beside adamw_mup=adamw in --algorithms")
    g.add_argument("--data", default="generated",
                   help="generated (default) | shakespeare | bytes:PATH (the bytes of a text "
                        "file or of a folder's text files, vocabulary 256) | a token-file folder")
    g.add_argument("--tokens-per-param", type=float, default=20.0,
                   help="the tokens per non-embedding parameter of budget 1 (default 20, "
                        "Chinchilla)")
    g.add_argument("--evals", type=int, default=None,
                   help="evals per run on a step cadence, plus one at its last step, of 256 "
                        "windows per split; default: sized by each run, eval FLOPs at most 5 %% "
                        "of its training FLOPs (docs/ladder.md)")
    g.add_argument("--batch-size", type=int, help="sequences per step (default: each rung's)")
    g.add_argument("--name", default="ladder", help="the ladder's study name (resume matches "
                                                    "on it; its sweeps: NAME.tuning)")
    g.add_argument("--dry-run", action="store_true", help="print the plan; run, write nothing")
    g.add_argument("--data-dir", help="dataset folder (default: $PACEBENCH_DATA or "
                                      "datasets/cache)")
    g.add_argument("--quiet", action="store_true", help="no progress bar")
    store_flag(g)
    launch_flags(p)
    add_execution_flags(p)


def _spec(args: argparse.Namespace, algorithms: list[str]):
    from workbench.spec import LadderSpec

    if not args.sizes or not algorithms:
        raise UserError("a ladder needs --sizes and --algorithms (`pacebench ladder --list` "
                        "lists the sizes)")
    trials = (args.trials if isinstance(args.trials, dict)
              else {a: args.trials for a in algorithms})
    if args.tokens_per_param is None or not math.isfinite(args.tokens_per_param) \
            or args.tokens_per_param <= 0:
        raise UserError(f"--tokens-per-param {args.tokens_per_param!r}: must be a finite "
                        "number > 0")
    if args.seeds < 1:
        raise UserError(f"--seeds {args.seeds}: must be a count >= 1 (seeds 0..N-1)")
    if args.evals is not None and args.evals < 1:
        raise UserError(f"--evals {args.evals}: must be an integer >= 1")
    return LadderSpec(sizes=tuple(args.sizes), algorithms=tuple(algorithms),
                      budgets=tuple(args.budgets), seeds=args.seeds, trials=trials,
                      transfer=args.transfer, data=args.data,
                      tokens_per_param=args.tokens_per_param, evals=args.evals,
                      batch_size=args.batch_size, name=args.name,
                      execution=execution_options(args))


def run_ladder_command(args: argparse.Namespace) -> int:
    """`pacebench ladder --sizes ... --algorithms ...`: check every input, print the plan (the
    tuning budget per algorithm per rung, and any fairness warning), run the missing runs, and
    print the ladder's summary when the analysis is there."""
    from runners.procedures.ladder import catalog_rungs, describe_ladder, plan_ladder, run_ladder

    if args.allow_mixed_execution and not args.resume:
        raise UserError("--allow-mixed-execution goes with --resume (a new ladder mixes nothing)")
    sources = algorithm_sources(args.algorithms or [], existing_store(args))
    spec = _spec(args, list(sources))
    rungs = catalog_rungs(spec.data, args.data_dir)
    spaces = search_spaces(args.search_space, spec.algorithms)
    plan_ladder(spec, rungs, sources, spaces)  # every name, rule and space checked before writing
    plan = describe_ladder(spec, rungs)
    if args.dry_run:
        print(plan)
        print("nothing was run or written")
        return 0
    for line in plan.splitlines():
        print(line, file=sys.stderr if line.startswith("warning:") else sys.stdout)
    options = launch_options(args)
    store = store_for_writing(args)
    status = launch_and_report(
        lambda: run_ladder(spec, rungs, store, workers=args.workers, resume=args.resume,
                           data_dir=args.data_dir, progress=not args.quiet, sources=sources,
                           options=options, allow_mixed_execution=args.allow_mixed_execution,
                           search_spaces=spaces),
        f"store: {store.root}   its summary: pacebench ladder --summary --store {store.root}")
    _print_summary(store, spec.name)
    return status


def _print_summary(store, name: str) -> None:
    """The ladder's summary (workbench.results.Results.ladder_result), or why there is none."""
    import workbench

    try:
        result = workbench.open(store.root).ladder_result(studies=(name,))
    except ValueError as err:  # no finished final run to summarise
        print(f"no summary: {err}", file=sys.stderr)
        return
    print(result.text())
