"""`pacebench ladder`: a model-size ladder. Running one: runners/cli/ladder_run.py; its summary
(--summary): runners/cli/analysis.py ladder_summary."""
from __future__ import annotations

import argparse

from runners.cli.analysis import ladder_summary, ladder_summary_flags
from runners.cli.flags import store_flag
from runners.cli.ladder_run import add_run_flags, run_ladder_command

__all__ = ["add"]


def add(sub) -> None:
    """The `ladder` parser."""
    p = sub.add_parser("ladder", help="a model-size ladder: rungs x data budgets x algorithms x "
                                      "seeds, compared at equal loss")
    add_run_flags(p)
    ladder_summary_flags(p.add_argument_group("its summary"))
    if "--store" not in p._option_string_actions:  # the run flags may have added it
        store_flag(p)
    p.set_defaults(func=_ladder)


def _ladder(args: argparse.Namespace) -> int:
    if args.summary:
        return ladder_summary(args)
    if args.json or args.reference or args.ladder_studies:
        raise ValueError("--json, --reference and --study go with --summary (e.g. pacebench "
                         "ladder --summary --json --store S)")
    return run_ladder_command(args)
