"""The `pacebench` command: run, study, scale, tune, score, compare, budget, rank, report, serve,
set-targets, noise, list, ladder, import-algoperf, merge, export, import-parquet, import-table.

The commands are defined one group to a module: training.py (run, study, scale), tune.py (tune),
analysis.py (score, compare, budget, rank, import-algoperf: printing what workbench.results returns),
views.py (report, serve), targets.py (set-targets, noise, list), stores.py (merge, export,
import-parquet), tables.py (import-table), catalog.py (list's output) and ladder.py (ladder; running one: ladder_run.py);
common.py holds the flags and options they share. The store is `--store`, else
$PACEBENCH_STORE, else `results/`. A bad input ends in one line saying what was wrong and what
is valid (the traceback with PACEBENCH_DEBUG=1).
"""
from __future__ import annotations

import argparse
import atexit
import errno
import os
import sys
import threading
import warnings

from runners.cli import analysis, ladder, stores, tables, targets, training, tune, views
from runners.cli.common import reset_writing, store_path, writing_begun
from runners.cli.flags import add_execution_flags, check_numbers
from workbench.errors import UserError

__all__ = ["main", "entry", "build_parser", "add_execution_flags", "store_path"]


class _Parser(argparse.ArgumentParser):
    """argparse, with a bad argument reported in one line (no usage dump): what was wrong, and
    where the valid forms are listed; no abbreviations (`--batch-size` must never be taken for
    `--batch-sizes`). Subparsers are of this class too."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str):
        self.exit(2, f"error: {self.prog}: {message} (`{self.prog} --help` lists the options)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="pacebench", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for group in (training, tune, analysis, views, targets, stores, tables, ladder):
        group.add(sub)
    return parser


def _one_line_warning(message, category, filename, lineno, file=None, line=None) -> None:
    print(f"warning: {message}", file=sys.stderr)


def entry() -> None:
    """The `pacebench` console command (and `python -m runners.cli`): main, then exit with its
    status, skipping the interpreter's teardown of the modules and objects the command made
    (torch's, pandas', xarray's, DuckDB's: 1.2 s of a one-trial `study`, 0.2 to 0.4 s of a 1.5 s
    `score`; docs/performance.md). The exit handlers (multiprocessing's, logging's, temporary
    folders', an unused fork server's) still run first; while a thread of the command's own is
    still running, the usual exit is taken, which waits for it."""
    args = build_parser().parse_args()
    code = run(args, sys.argv[1:])
    if any(t.is_alive() and not t.daemon for t in threading.enumerate()
           if t is not threading.main_thread()):
        sys.exit(code)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except OSError:  # the reader went away: the usual exit reports nothing more either
        sys.exit(code)
    atexit._run_exitfuncs()  # what the usual exit runs before tearing the interpreter down
    os._exit(code)


def main(argv: list[str] | None = None) -> int:
    """Run a `pacebench` command; its exit status: 0 done, 2 bad input (one line, nothing
    written), 1 an environment problem or an internal error (see _failure), 130 stopped by
    Ctrl-C (one line; a launch says what it did)."""
    return run(build_parser().parse_args(argv), list(sys.argv[1:] if argv is None else argv))


def run(args: argparse.Namespace, argv: list[str]) -> int:
    """main of parsed `args`; `argv`, the command line they came from (tune records it)."""
    args.argv = argv
    if not os.environ.get("PACEBENCH_DEBUG"):  # e.g. "warning: skipped run X: ..." in one line
        warnings.showwarning = _one_line_warning
    reset_writing()
    try:
        check_numbers(args)
        return args.func(args)
    except BrokenPipeError:  # the reader went away (`pacebench score | head`): stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except KeyboardInterrupt as stop:  # Ctrl-C: a launch has stopped its workers by now
        if os.environ.get("PACEBENCH_DEBUG"):
            raise
        result = getattr(stop, "result", None)  # runners.launch.scheduler.StudyInterrupted
        print(result.summary().splitlines()[0] if result is not None else "interrupted",
              file=sys.stderr)
        return 130  # as a shell reports a command ended by SIGINT
    except (Exception, SystemExit) as err:  # noqa: BLE001 - sorted into whose fault it is
        if os.environ.get("PACEBENCH_DEBUG"):
            raise
        return _failure(err)


# Bad input: a UserError (workbench/errors.py), or a user's path that is missing or refused,
# raised while the inputs are checked, before the command writes anything. Any other exception
# (a ValueError or KeyError included) is a bug of ours: an internal error with its traceback.
_BAD_INPUT = (UserError, FileNotFoundError, NotADirectoryError, IsADirectoryError,
              PermissionError)
# The environment's: the machine or the file system refused a write, or a tool is missing.
_ENVIRONMENT = {errno.ENOSPC: "no space left on the device of", errno.EDQUOT: "disk quota "
                "exceeded on", errno.EACCES: "permission denied on", errno.EPERM: "operation not "
                "permitted on", errno.EROFS: "read-only file system at", errno.ENOENT: "no such "
                "file or folder:", errno.EMFILE: "too many open files, at"}


def _failure(err: BaseException) -> int:
    """Say whose fault `err` is, in one line on stderr, and give the exit status: bad input
    (exit 2: what was wrong and what is valid), the environment's (exit 1: which path or tool),
    or an internal error (exit 1, the traceback in a file whose path is printed)."""
    if isinstance(err, SystemExit):  # code of ours never exits from inside a command
        print(f"error: the command was ended by sys.exit({err.code!r}) in code it ran (a "
              f"plug-in's top level?): nothing {'more ' if writing_begun() else ''}was run",
              file=sys.stderr)
        return 1 if writing_begun() else 2
    if not writing_begun() and isinstance(err, (OverflowError, RecursionError)):
        # before any writing, only the input holds numbers this large or nesting this deep
        what = "a number too large to compute with" if isinstance(err, OverflowError) else \
            "data nested too deeply to read"
        print(f"error: the input holds {what} ({type(err).__name__}): give values within "
              "range; nothing was written", file=sys.stderr)
        return 2
    if not writing_begun() and isinstance(err, _BAD_INPUT):
        print(f"error: {err}", file=sys.stderr)
        return 2
    if isinstance(err, OSError) and err.errno in _ENVIRONMENT:
        where = err.filename or "(no path given)"
        print(f"error: {_ENVIRONMENT[err.errno]} {where} ({err.strerror}); nothing already "
              "recorded was lost: free it up or fix it, then run the command again (a study: "
              "with --resume)", file=sys.stderr)
        return 1
    if writing_begun() and isinstance(err, UserError):
        # a check that only the work could make (e.g. a name the store refuses): still input
        print(f"error: {err}", file=sys.stderr)
        return 2
    path = _save_traceback(err)
    first = (str(err).splitlines() or [""])[0][:200]
    print(f"internal error: {type(err).__name__}: {first}; details in {path}", file=sys.stderr)
    return 1


def _save_traceback(err: BaseException) -> str:
    """The traceback of `err` in a new file of the temporary folder; its path."""
    import tempfile
    import traceback

    fd, path = tempfile.mkstemp(prefix="pacebench-error-", suffix=".txt")
    with os.fdopen(fd, "w") as f:
        f.write(f"pacebench {' '.join(sys.argv[1:])}\n\n")
        f.write("".join(traceback.format_exception(type(err), err, err.__traceback__)))
    return path
