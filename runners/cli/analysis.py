"""`pacebench score`, `compare`, `budget`, `rank` and `import-algoperf`: the analysis commands;
and `pacebench ladder --summary` (ladder_summary_flags, ladder_summary: the ladder command's
analysis part).

Each prints what workbench.results.Results returns (`--json`: the same dict as the API); no
analysis is computed here. They load neither torch nor the dashboard's libraries.
"""
from __future__ import annotations

import argparse
import math
import sys

from runners.cli.common import scope_options, store_path
from runners.cli.flags import scope_flags, store_flag
from runners.cli.types import csv as _csv, floats as _floats
from workbench.errors import UserError

__all__ = ["add", "score", "compare", "budget", "rank", "import_algoperf",
           "ladder_summary_flags", "ladder_summary"]


def add(sub) -> None:
    """The group's parsers."""
    p = sub.add_parser("score", help="AlgoPerf scores, times to target and speedups of a store")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print the result as JSON")
    out.add_argument("--csv", action="store_true", help="one row per algorithm, for spreadsheets")
    p.add_argument("--reference", help="algorithm the speedups are measured against (default: "
                                       "baseline when present, else adamw, else the "
                                       "first name)")
    p.add_argument("--rank-shift", choices=("train", "wall", "steps"), metavar="AXIS",
                   help="also rank the algorithms with times counted on AXIS (train, wall or "
                        "steps), beside the --time-axis ranks, with the probability of each "
                        "rank over the bootstrap of studies")
    _hparam_flag(p)
    scope_flags(p)
    store_flag(p)
    p.set_defaults(func=score)

    p = sub.add_parser("compare", help="A against B: speedup with an interval, a test, a verdict")
    p.add_argument("--algorithms", type=_csv, required=True, help="A,B")
    p.add_argument("--workloads", type=_csv, help="default: the scored workloads")
    p.add_argument("--confidence", type=float, default=0.95, help="of intervals and verdict")
    p.add_argument("--detect", type=float, default=1.25, help="speedup to size studies for")
    p.add_argument("--study-time", choices=("algoperf", "fastest"), default="algoperf",
                   help="a study's time: algoperf (default), the trial that met the target at "
                        "the smallest eval index, as AlgoPerf's scorer; fastest, its trial "
                        "with the smallest time to target")
    p.add_argument("--sequential", action="store_true",
                   help="replay the studies round by round with the sequential test (valid "
                        "under a look after every round) and stop at the first verdict")
    p.add_argument("--max-studies", type=int,
                   help="with --sequential: the studies a side the test is planned for "
                        "(default: all the store holds)")
    _hparam_flag(p)
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    scope_flags(p)
    store_flag(p)
    p.set_defaults(func=compare)

    p = sub.add_parser("budget", help="tuning-budget curves: results with k of the trials")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    scope_flags(p)
    store_flag(p)
    p.set_defaults(func=budget)

    p = sub.add_parser("rank", help="early ranking: how well TSE/LCGA estimators rank a study's runs")
    p.add_argument("--study", help="study name (default: every study in the store)")
    p.add_argument("--fractions", type=_floats, default=[0.05, 0.1, 0.2, 0.5],
                   help="budget fractions (default 0.05,0.1,0.2,0.5)")
    store_flag(p)
    p.set_defaults(func=rank)

    p = sub.add_parser("import-algoperf", help="import AlgoPerf scoring logs into a store")
    p.add_argument("logdir", help="folder holding <submission>/study_<k>/<workload>_<fw>/trial_<i>/")
    p.add_argument("--targets", required=True,
                   help="AlgoPerf targets file, e.g. workload_targets_v05.json")
    p.add_argument("--ruleset", choices=("external", "self"),
                   help="default: from an external_tuning / self_tuning folder in the path")
    store_flag(p)
    p.set_defaults(func=import_algoperf)


def _hparam_flag(p) -> None:
    """--hparam NAME (repeatable): a hyperparameter whose edge the tuning report judges, beside
    the learning rate."""
    p.add_argument("--hparam", action="append", default=[], dest="judged_hparams",
                   metavar="NAME", help="the tuning report also judges whether the best trial "
                                        "sits at an edge of this hyperparameter's range "
                                        "(repeatable; the learning rate always)")


def ladder_summary_flags(p) -> None:
    """`pacebench ladder`'s analysis flags: --summary (print the ladder's summary of the
    --store instead of running), --json, --reference, --study. The parser adds --store."""
    p.add_argument("--summary", action="store_true",
                   help="print the ladder's analysis of --store: final losses, the reference's "
                        "fit L(D), equal-loss speedups and time ratios with intervals, the "
                        "trend with size")
    p.add_argument("--json", action="store_true", help="with --summary: as JSON")
    p.add_argument("--reference", help="with --summary: the algorithm speedups are measured "
                                       "against (default: the ladder's first algorithm)")
    p.add_argument("--study", action="append", default=[], dest="ladder_studies",
                   metavar="NAME", help="with --summary: only the ladder of this name (its "
                                        "study name; repeatable); default: every ladder run")
    p.add_argument("--loss-noise", type=float, metavar="SIGMA",
                   help="with --summary, one seed per configuration: the sd of one run's final "
                        "loss (nats) for parametric-bootstrap intervals (refused with 2+ seeds)")
    p.add_argument("--fit-budgets", metavar="B1,B2,...",
                   help="with --summary: the reference budgets its fit uses, e.g. 1,2,4,8 "
                        "(default: all)")


def ladder_summary(args: argparse.Namespace) -> int:
    """`pacebench ladder --summary [--json]`: what Results.ladder returns."""
    from workbench.results import dumps

    result = _results(args).ladder_result(args.reference, args.ladder_studies,
                                          args.loss_noise, _budgets(args.fit_budgets))
    print(dumps(result.to_json()) if args.json else result.text())
    return 0


def _budgets(text: str | None) -> list[float] | None:
    """--fit-budgets "1,2,4,8" -> [1.0, 2.0, 4.0, 8.0]; one error line when not numbers > 0."""
    if text is None:
        return None
    try:
        values = [float(v) for v in text.split(",")]
    except ValueError:
        values = []
    if not values or not all(math.isfinite(v) and v > 0 for v in values):
        raise UserError(f"--fit-budgets {text!r} is not valid; valid are budgets > 0 separated "
                        "by commas, e.g. 1,2,4,8")
    return values


def _results(args: argparse.Namespace):
    """workbench.results.Results of the --store (StoreError when it is not one)."""
    from workbench.results import Results
    from workbench.store import open_store

    return Results(open_store(store_path(args)))


def score(args: argparse.Namespace) -> int:
    """`pacebench score`: the AlgoPerf scores, times to target and speedups of a store."""
    from workbench.results import dumps

    result = _results(args).score_result(args.reference, args.rank_shift,
                                         hparams=args.judged_hparams, **scope_options(args))
    if args.json:
        print(dumps(result.to_json()))
    elif args.csv:
        print(result.csv(), end="")
    else:
        print(result.text())
    return 0


def compare(args: argparse.Namespace) -> int:
    """`pacebench compare`: algorithm A against B, with intervals, a test and a verdict, and the
    verdict by steps."""
    from workbench.results import dumps

    if len(args.algorithms) != 2:
        raise UserError(f"--algorithms takes exactly two names, A,B; got {len(args.algorithms)}"
                        f": {','.join(args.algorithms)}")
    if args.max_studies is not None and not args.sequential:
        raise UserError("--max-studies goes with --sequential")
    result = _results(args).compare_result(*args.algorithms, workloads=args.workloads,
                                           confidence=args.confidence, detect=args.detect,
                                           study_time=args.study_time,
                                           sequential=args.sequential,
                                           max_studies=args.max_studies,
                                           hparams=args.judged_hparams,
                                           **scope_options(args))
    print(dumps(result.to_json()) if args.json else result.text())
    return 0


def budget(args: argparse.Namespace) -> int:
    """`pacebench budget`: tuning-budget curves from the trials of a store."""
    from workbench.results import dumps

    result = _results(args).budget_result(**scope_options(args))
    print(dumps(result.to_json()) if args.json else result.text())
    return 0


def rank(args: argparse.Namespace) -> int:
    """`pacebench rank`: Spearman/Kendall of each early estimator vs the final validation metric,
    per budget fraction, for each (study, workload, algorithm) with enough complete runs; plus
    the compute the early-stopping tuner saved (what Results.rank_result returns)."""
    text = _results(args).rank_result(args.study, args.fractions).text()
    if text:
        print(text)
    return 0


def import_algoperf(args: argparse.Namespace) -> int:
    """`pacebench import-algoperf`: AlgoPerf scoring logs into a store."""
    from workbench.importers.algoperf import import_algoperf as do_import

    report_ = do_import(args.logdir, store_path(args), args.targets, ruleset=args.ruleset)
    print(f"{report_.summary()} into {store_path(args)}")
    if report_.unscored():
        print(report_.unscored())
    for problem in report_.problems:
        print(f"problem: {problem}", file=sys.stderr)
    return 1 if report_.problems else 0
