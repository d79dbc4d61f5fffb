"""`pacebench merge`, `export` and `import-parquet`: runs moved between stores and files.

Each calls workbench/transfer.py, which validates every run it reads like an import (a bad run
skipped with one warning line); they load neither torch nor the dashboard's libraries.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from runners.cli.common import begin_writing, check_folder, store_path
from runners.cli.flags import store_flag
from workbench.errors import UserError

__all__ = ["add", "merge", "export", "import_parquet"]


def add(sub) -> None:
    """The group's parsers."""
    p = sub.add_parser("merge", help="merge stores into --store: identical runs kept once, "
                                     "conflicting ones refused by name (nothing written)")
    p.add_argument("sources", nargs="+", metavar="STORE", help="the stores to merge in")
    store_flag(p)
    p.set_defaults(func=merge)

    p = sub.add_parser("export", help="a store as three Parquet files, runs, evals and train "
                                      "(DuckDB and pandas read them directly)")
    p.add_argument("--out", required=True, help="the folder to write the three files to")
    store_flag(p)
    p.set_defaults(func=export)

    p = sub.add_parser("import-parquet", help="read the files `pacebench export` wrote into "
                                              "--store, each run validated")
    p.add_argument("folder", help="the folder `pacebench export` wrote its three files to")
    store_flag(p)
    p.set_defaults(func=import_parquet)


def merge(args: argparse.Namespace) -> int:
    """`pacebench merge --store C A B`: the runs of A and B into C (see transfer.merge_stores);
    exit 2 and nothing written when two hold one run id with different content."""
    from workbench.store import open_store
    from workbench.transfer import merge_stores

    sources = [open_store(path) for path in args.sources]
    target = store_path(args)
    if any(Path(s.root).resolve() == target.resolve() for s in sources):
        raise UserError(f"--store {target} is also a store to merge in: give it once, as "
                        "--store (its runs are kept) or as a source")
    from workbench.store import Store
    report = merge_stores(Store(target), sources)  # checks everything before it writes
    print(report.summary(str(target)))
    return 0


def export(args: argparse.Namespace) -> int:
    """`pacebench export --store S --out DIR`: the store as three Parquet files."""
    from workbench.store import open_store
    from workbench.transfer import PARQUET_FILES, export_parquet

    store = open_store(store_path(args))
    check_folder("--out", args.out, f"the files {', '.join(PARQUET_FILES.values())}")
    begin_writing()
    counts = export_parquet(store, args.out)
    for kind, name in PARQUET_FILES.items():
        print(f"{Path(args.out) / name}: {counts[kind]} rows")
    return 0


def import_parquet(args: argparse.Namespace) -> int:
    """`pacebench import-parquet DIR --store T`: the exported files into a store."""
    from workbench.store import Store
    from workbench.transfer import import_parquet as do_import

    target = store_path(args)
    report = do_import(args.folder, Store(target))  # a malformed file: refused before writing
    print(report.summary(args.folder, str(target)))
    return 1 if report.skipped else 0
