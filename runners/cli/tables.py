"""`pacebench import-table`: published results tables and speedrun logs into a store
(workbench/importers/tables.py and speedrun.py). Every row is checked before anything is
written; a bad one is one error line naming file, row and column."""
from __future__ import annotations

import argparse

from runners.cli.common import begin_writing, store_path
from runners.cli.flags import store_flag

__all__ = ["add", "import_table"]


def add(sub) -> None:
    """The group's parser."""
    p = sub.add_parser("import-table", help="import a published results table (finals: a "
                                            "ladder's final losses; evals: eval rows) or a "
                                            "folder of speedrun logs into --store")
    p.add_argument("file", metavar="FILE", help="a CSV, Parquet or JSON lines file (a folder "
                                                "of *.txt logs for --kind speedrun-logs)")
    p.add_argument("--kind", required=True, choices=("finals", "evals", "speedrun-logs"),
                   help="finals: one row per run of a size ladder; evals: one row per eval; "
                        "speedrun-logs: step:N/T val_loss:X lines (docs/reference.md)")
    p.add_argument("--name", help="the import's name: its runs' study name (default: the "
                                  "file's stem or the folder's name)")
    p.add_argument("--target", help="evals and speedrun-logs: the target, e.g. "
                                    "'validation/loss<=3.28' (or 'val_loss<=3.28')")
    p.add_argument("--algorithm", help="speedrun-logs: the algorithm of every log (default: "
                                       "each file's folder name)")
    store_flag(p)
    p.set_defaults(func=import_table)


def import_table(args: argparse.Namespace) -> int:
    """`pacebench import-table FILE --kind K --store S`: one summary line (and notes)."""
    from workbench.importers.tables import import_table as do_import

    target = store_path(args)
    report = do_import(args.file, target, args.kind, args.name, args.target, args.algorithm,
                       before_writing=begin_writing)
    print(report.summary(str(target)))
    for note in report.notes:
        print(f"note: {note}")
    return 0
