"""A store's model-size ladder runs as workbench.ladder reads them: each run's ladder record
(its document's `config.ladder`) and its final eval row, read here and checked and joined there
(Results.ladder; workbench.holdings names a store's ladders)."""
from __future__ import annotations

import json
from typing import Any, Iterable

import numpy as np
import pandas as pd

from workbench import query
from workbench.outcomes import final_rows
from workbench.store import Store

__all__ = ["ladder_records", "last_evals", "ladder_finals"]


def ladder_records(store: Store, run_ids: Iterable[str]) -> dict[str, Any]:
    """{run_id: its run document's `config.ladder` value, as written} for the runs of `run_ids`
    that have one (a model-size ladder's runs, runners/procedures/ladder.py); the value is not checked
    here (workbench.ladder.finals_frame does). A document that cannot be read is left out
    silently: runs_frame has already warned about it. Documents without the key are passed
    over before parsing (a store of thousands of other runs costs one read per file)."""
    out = {}
    run_ids = [r for r in run_ids if isinstance(r, str) and "/" not in r and "\\" not in r
               and r not in ("", ".", "..")]  # folder names: never a path out of runs/
    for run_id, path in zip(run_ids, store.doc_paths(run_ids)):
        try:
            text = store.read_file(path)
        except OSError:  # gone, or no regular file inside the store
            continue
        if b'"ladder"' not in text:
            continue
        try:
            doc = json.loads(text)
        except (ValueError, RecursionError):
            continue
        config = doc.get("config") if isinstance(doc, dict) else None
        if isinstance(config, dict) and config.get("ladder") is not None:
            out[run_id] = config["ladder"]
    return out


def last_evals(store: Store, run_ids: Iterable[str], column: str) -> pd.DataFrame:
    """Each run's final eval row (workbench.outcomes.final_rows: its largest eval_index): run_id,
    step, train_seconds and `column` (NaN where the rows lack it)."""
    ids = list(run_ids)
    if not ids:
        return pd.DataFrame(columns=["run_id", "step", "train_seconds", column])
    rows = query.evals_frame(store, ids)
    if column not in rows.columns:
        rows[column] = np.nan
    return final_rows(rows)[["run_id", "step", "train_seconds", column]]


def ladder_finals(store: Store, runs: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, str]]:
    """(the final ladder runs among `runs` (a runs_frame), workbench.ladder.FINAL_COLUMNS;
    {run_id: why its ladder record was skipped}): their records and last eval rows read here,
    checked and joined by workbench.ladder.finals_frame; the sweep runs among `runs` in
    attrs["sweeps"] (workbench.ladder.sweep_frame)."""
    from workbench import ladder

    records = ladder_records(store, runs["run_id"].tolist())
    last = last_evals(store, list(records), ladder.LOSS_COLUMN)
    finals, skipped = ladder.finals_frame(runs, records, last, ladder.LOSS_COLUMN)
    finals.attrs["sweeps"] = ladder.sweep_frame(runs, records, last, ladder.LOSS_COLUMN)
    return finals, skipped
