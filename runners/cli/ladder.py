"""`pacebench ladder`: a model-size ladder. Running one: runners/cli/ladder_run.py."""
from __future__ import annotations

import argparse

from runners.cli.ladder_run import add_run_flags, run_ladder_command

__all__ = ["add"]


def add(sub) -> None:
    """The `ladder` parser."""
    p = sub.add_parser("ladder", help="a model-size ladder: rungs x data budgets x algorithms x "
                                      "seeds, compared at equal loss")
    add_run_flags(p)
    p.set_defaults(func=_ladder)


def _ladder(args: argparse.Namespace) -> int:
    return run_ladder_command(args)
