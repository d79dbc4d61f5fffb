"""Each run's eval clock: the eval seconds and wall seconds accumulated by its last usable eval
row, for the eval share of wall clock (workbench.costs.eval_share). Taken from the run index
where it is known (query.INDEX_CLOCK_COLUMNS, from each sealed eval summary), read from the eval
rows only for the other runs. A layer above workbench.query: it reads the index query reads.
"""
from __future__ import annotations

from typing import Iterable

import numpy as np
import pandas as pd

from workbench.eval_rows import _ROW_TYPES, _Rows, _ident, _read_rows, duckdb
from workbench.query import _index_rows, _unchanged, _unreadable, connect
from workbench.store import Store

__all__ = ["eval_clock", "indexed_clock"]


# Per run, its last eval row (largest eval_index) whose training, eval and wall seconds are all
# finite and >= 0 (a row the first-hit rule would not count does not count here either): the
# evaluation seconds and the wall seconds accumulated by then.
_EVAL_CLOCK_SQL = """
SELECT run_id, arg_max(eval_seconds, eval_index) AS eval_seconds,
       arg_max(wall_seconds, eval_index) AS wall_seconds
FROM (SELECT run_id, {eval_index} AS eval_index, {train_seconds} AS train_seconds,
             {eval_seconds} AS eval_seconds, {wall_seconds} AS wall_seconds FROM ({rows}))
WHERE eval_index IS NOT NULL AND isfinite(train_seconds) AND isfinite(eval_seconds)
      AND isfinite(wall_seconds) AND train_seconds >= 0 AND eval_seconds >= 0
      AND wall_seconds >= 0
GROUP BY run_id
"""


def eval_clock(store: Store, run_ids: Iterable[str],
               known: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per run of `run_ids` with such a row: the accumulated eval seconds and wall seconds of
    its last eval row whose training, eval and wall seconds are finite and >= 0 (columns run_id, eval_seconds,
    wall_seconds). A run whose rows cannot be read is left out with a warning naming it.
    The run index's clock (INDEX_CLOCK_COLUMNS) is taken where it is known and its run is as
    it was when indexed; only the other runs' rows are read (reading all 3,700 runs' rows of
    the AlgoPerf v0.5 logs took most of a `score --json`). `known`: indexed_clock of the
    run table just read, when the caller has it (the index is then not read again)."""
    ids = [str(r) for r in run_ids]
    if known is None:
        indexed = _indexed_clock(store, ids)
    else:
        indexed = known[_among(known["run_id"], ids)]
    known = set(indexed["run_id"].tolist()) if len(indexed) else set()
    rest = [r for r in ids if r not in known]
    indexed = indexed[indexed["eval_seconds"].notna()]  # NaN: known that no row counts
    if rest:
        found = _clock_from_rows(store, rest)
        indexed = pd.concat([f for f in (indexed, found) if len(f)] or [found],
                            ignore_index=True)
    return indexed.astype({"run_id": "str", "eval_seconds": float, "wall_seconds": float})


def indexed_clock(table: pd.DataFrame) -> pd.DataFrame:
    """The known clocks (run_id, eval_seconds, wall_seconds; NaN seconds where no row counts)
    of query.runs_table's first item: its rows from the run index, each checked unchanged
    there; the runs read from their folders have none."""
    if "eval_clock_known" not in table:
        return _no_clock()
    known = table["eval_clock_known"].eq(True).to_numpy(bool)
    return _clock_frame(table.loc[known, list(_CLOCK)].rename(columns=_CLOCK))


def _among(run_ids: pd.Series, ids: list[str]) -> np.ndarray:
    """Which of `run_ids` are in `ids` (Series.isin of a pyarrow string column makes an Arrow
    scalar of each value looked for: 49 ms for the 3,700 runs of the v0.5 logs, a set 1 ms)."""
    wanted = set(ids)
    return np.fromiter(map(wanted.__contains__, run_ids.tolist()), bool, len(run_ids))


_CLOCK = {"run_id": "run_id", "eval_clock_eval_seconds": "eval_seconds",
          "eval_clock_wall_seconds": "wall_seconds"}


def _no_clock() -> pd.DataFrame:
    return _clock_frame(pd.DataFrame(columns=list(_CLOCK.values())))


def _clock_frame(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.reset_index(drop=True).astype(
        {"run_id": "str", "eval_seconds": float, "wall_seconds": float})


def _indexed_clock(store: Store, ids: list[str]) -> pd.DataFrame:
    """The run index's known clocks of `ids` (as indexed_clock's), of runs unchanged since they
    were indexed (_unchanged)."""
    frame = _index_rows(store)[0]
    if frame is None:
        return _no_clock()
    frame = frame[_among(frame["run_id"], ids) & frame["eval_clock_known"].to_numpy(bool)]
    frame = frame[_unchanged(store, frame)] if len(frame) else frame
    return _clock_frame(frame[list(_CLOCK)].rename(columns=_CLOCK))


def _clock_from_rows(store: Store, ids: list[str]) -> pd.DataFrame:
    """eval_clock of `ids` computed from their eval rows (_EVAL_CLOCK_SQL)."""
    con = connect()

    def build(rows: _Rows | None) -> pd.DataFrame:
        if rows is None:
            return _no_clock()
        present = {c.lower() for c in rows.columns}
        typed = {c: f"TRY_CAST({_ident(c)} AS {_ROW_TYPES[c]})" if c in present
                 else f"NULL::{_ROW_TYPES[c]}"
                 for c in ("eval_index", "train_seconds", "eval_seconds", "wall_seconds")}
        sql = _EVAL_CLOCK_SQL.format(rows=rows.sql, **typed)
        return con.execute(sql, rows.params).df()

    try:
        found = _read_rows(con, store, "evals", ids, build)
    except duckdb.Error:
        bad = _unreadable(con, store, ids, "evals", docs=False)
        found = _read_rows(con, store, "evals", [r for r in ids if r not in bad], build)
    return found
