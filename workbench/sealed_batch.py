"""Finished runs added to a store whole (SealedBatch): importers, merge and reuse.

Each run is written into a hidden `.tmp-<random>-<pid>-<host>-<run id>` folder under runs/,
made durable with the rest of its batch and renamed into place, so readers and crashes see a
run whole or not at all; a folder a killed importer left is found by its name (temp_left).
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import socket
import uuid
from pathlib import Path
from typing import Any, Mapping, Protocol

import psutil

from workbench import records as R
from workbench.errors import UserError
from workbench.store_files import fsync_path, json_safe, sync_many, write_parquet

__all__ = ["SealedBatch", "temp_left", "host_tag", "STALE_TEMP_S"]

STALE_TEMP_S = 24 * 3600.0  # a batch's temp folder from another host, or unowned, this old is
                           # left by a killed importer (one of this host: its process is gone)


class _HasRuns(Protocol):
    """What a SealedBatch needs of its store (workbench.store.Store, which imports this module)."""

    runs_dir: Path  # the store's runs/ folder


def _with_run_id(table: "pa.Table", run_id: str) -> "pa.Table":  # noqa: F821
    """`table` with its first column `run_id` set to `run_id` on every row."""
    import pyarrow as pa

    if "run_id" in table.column_names:
        table = table.drop_columns(["run_id"])
    return table.add_column(0, "run_id", pa.repeat(pa.scalar(run_id, pa.string()), table.num_rows))


def host_tag(host: str | None = None) -> str:
    """8 hex digits naming a host in temp folder names (any hostname fits a file name so)."""
    return hashlib.sha256((host or socket.gethostname()).encode()).hexdigest()[:8]

_TEMP_NAME = re.compile(r"\.tmp-[0-9a-f]{12}-(\d+)-([0-9a-f]{8})-")


def temp_left(path: Path, now: float) -> bool:
    """Whether the batch temp folder `path` was left by a killed importer: its owner (pid and
    host in its name) is a process of this host that is gone (or a later one under its pid);
    of another host, or unnamed, when untouched for STALE_TEMP_S."""
    try:
        mtime = path.stat().st_mtime
    except OSError:
        return False
    owner = _TEMP_NAME.match(path.name)
    if owner is None or owner.group(2) != host_tag():
        return now - mtime > STALE_TEMP_S
    try:
        return psutil.Process(int(owner.group(1))).create_time() > mtime + 1.0
    except (psutil.Error, ValueError, OverflowError):
        return True


class SealedBatch:
    """Finished runs added to a store together (importers): `add` writes each run, as
    Store.write_sealed_run describes, into a hidden folder under runs/; `publish` makes them
    durable and renames them into place. The files and folders of the whole batch are made
    durable together before any rename (sync_many), and runs/ is fsynced once after the
    renames, so readers and crashes still see each run whole or not at all. Leaving the `with`
    block removes the folders added and not published. `add` is thread-safe; `publish` is
    called once, from one thread.

        with store.sealed_batch() as batch:
            for doc, evals, run_id in runs:
                batch.add(doc, evals, run_id)    # False: the run exists, nothing written
            added = batch.publish()              # run id -> True, or False when it exists now
    """

    def __init__(self, store: _HasRuns, durable: bool = True) -> None:
        self.store = store
        self.durable = durable
        self._staged: list[tuple[str, Path, list[Path]]] = []  # run id, folder, files written

    def add(self, doc: Mapping[str, Any], evals: "pa.Table | None",  # noqa: F821
            run_id: str, train: "pa.Table | None" = None) -> bool:  # noqa: F821
        """Write one finished run into its hidden folder (see Store.write_sealed_run for the
        arguments and the checks); False, writing nothing, when run `run_id` exists."""
        status = doc.get("status")
        if status not in R.TERMINAL:
            raise UserError(f"a sealed run needs a final status, one of {R.TERMINAL}; "
                            f"got {status!r}")
        if not re.fullmatch(r"[A-Za-z0-9_.-]+", run_id) or run_id.startswith("."):
            raise UserError(f"run id {run_id!r} is not a plain folder name: use letters, digits, "
                            "'_', '.', '-' (not leading '.')")
        names = set() if evals is None else set(evals.column_names)  # (a new list each call)
        lacking = [] if evals is None else [c for c in R.EVAL_COLUMNS[1:] if c not in names]
        if lacking:
            raise UserError(f"eval rows lack columns {lacking}: give {list(R.EVAL_COLUMNS[1:])} "
                            "(null where unknown) and the <split>/<metric> columns")
        for table in (evals, train):
            if table is not None:
                R.check_row_columns(table.column_names)
        runs_dir = self.store.runs_dir
        if (runs_dir / run_id).exists():
            return False
        tmp = runs_dir / f".tmp-{uuid.uuid4().hex[:12]}-{os.getpid()}-{host_tag()}-{run_id}"
        tmp.mkdir(parents=True)
        try:
            files = []
            for table, name in ((evals, R.EVALS_SEALED), (train, R.TRAIN_SEALED)):
                if table is not None and table.num_rows:
                    write_parquet(_with_run_id(table, run_id), tmp / name, durable=False)
                    files.append(tmp / name)
            full = {"attempt": 1, **doc, "schema_version": R.SCHEMA_VERSION, "run_id": run_id}
            full.pop(R.EVAL_SUMMARY, None)  # what the rows say, never what the caller says
            columns = {} if evals is None else \
                evals.select(R.summary_columns(evals.column_names, full)).to_pydict()
            sealed = R.eval_summary_of_columns(columns, full)
            if sealed is not None:
                full[R.EVAL_SUMMARY] = sealed
            with open(tmp / R.RUN_DOC, "w") as f:  # one write: json.dump writes piece by piece
                f.write(json.dumps(json_safe(full), indent=1, sort_keys=True))
            files.append(tmp / R.RUN_DOC)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        self._staged.append((run_id, tmp, files))
        return True

    def publish(self) -> dict[str, bool]:
        """Make the added runs durable and rename them into place: run id -> True, or False
        when a run of that id appeared meanwhile (its folder is removed, nothing overwritten)."""
        staged, self._staged = self._staged, []
        try:
            if self.durable:
                sync_many([p for _, tmp, files in staged for p in (*files, tmp)],
                           self.store.runs_dir)
            added = {}
            for run_id, tmp, _ in staged:
                try:
                    os.rename(tmp, self.store.runs_dir / run_id)  # fails when it exists, not empty
                    added[run_id] = True
                except OSError:
                    added[run_id] = False
            if self.durable and any(added.values()):
                fsync_path(self.store.runs_dir)
            return added
        finally:
            for _, tmp, _ in staged:
                if tmp.exists():
                    shutil.rmtree(tmp, ignore_errors=True)

    def __enter__(self) -> "SealedBatch":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        staged, self._staged = self._staged, []
        for _, tmp, _ in staged:
            shutil.rmtree(tmp, ignore_errors=True)

