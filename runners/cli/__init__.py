"""The `pacebench` command: run, study, scale, score, compare, budget, rank, report, serve,
set-targets, noise, list, import-algoperf.

The commands are defined one group to a module: training.py (run, study, scale), analysis.py
(score, compare, budget, rank, import-algoperf: printing what workbench.results returns),
views.py (report, serve), targets.py (set-targets, noise, list) and catalog.py (list's output);
common.py holds the flags and options they share. The store is `--store`, else
$PACEBENCH_STORE, else `results/`. A bad input ends in one line saying what was wrong and what
is valid (the traceback with PACEBENCH_DEBUG=1).
"""
from __future__ import annotations

import argparse
import os
import sys
import warnings

from runners.cli import analysis, targets, training, views
from runners.cli.common import add_execution_flags, store_path
from workbench.store import StoreError

__all__ = ["main", "build_parser", "add_execution_flags", "store_path"]


class _Parser(argparse.ArgumentParser):
    """argparse, with a bad argument reported in one line (no usage dump): what was wrong, and
    where the valid forms are listed."""

    def error(self, message: str):
        self.exit(2, f"error: {self.prog}: {message} (`{self.prog} --help` lists the options)\n")

def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="pacebench", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for group in (training, analysis, views, targets):
        group.add(sub)
    return parser

def _one_line_warning(message, category, filename, lineno, file=None, line=None) -> None:
    print(f"warning: {message}", file=sys.stderr)

def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if not os.environ.get("PACEBENCH_DEBUG"):  # e.g. "warning: skipped run X: ..." in one line
        warnings.showwarning = _one_line_warning
    try:
        return args.func(args)
    except BrokenPipeError:  # the reader went away (`pacebench score | head`): stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    # bad input (names, numbers, files, a path that is no store): one line, what and what is
    # valid; PACEBENCH_DEBUG=1 raises instead, for the traceback
    except (KeyError, ValueError, OSError, StoreError) as e:
        if os.environ.get("PACEBENCH_DEBUG"):
            raise
        message = e.args[0] if isinstance(e, KeyError) and e.args else str(e)
        print(f"error: {message}", file=sys.stderr)
        return 2
