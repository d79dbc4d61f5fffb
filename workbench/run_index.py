"""The store's run index: the run table of finished runs kept as Parquet parts, so that a store of
thousands of runs is read in one scan (see workbench.query's module docstring).

Derived data only: every row is recomputable from the run folders. Readers never write it; the
launcher (at the end of a launch) and the importer (at the end of an import) call refresh_index.
"""
from __future__ import annotations

import json
import math

import pandas as pd

from workbench import query
from workbench import records as R
from workbench.store import Store

__all__ = ["refresh_index", "MAX_INDEX_PARTS"]

MAX_INDEX_PARTS = 8   # refresh_index merges the parts into one when there are more


def _index_table(frame: pd.DataFrame) -> "pa.Table":  # noqa: F821
    """Run-table rows as an Arrow table for an index part (hparams as JSON text)."""
    import pyarrow as pa

    out = frame[[*R.RUN_COLUMNS, *query.INDEX_STAT_COLUMNS]].copy()
    for c in query.INDEX_CLOCK_COLUMNS:  # a run read without its eval clock: not known
        out[c] = frame[c].to_numpy() if c in frame else math.nan
    out["eval_clock_known"] = out["eval_clock_known"].eq(True)
    out["hparams"] = [json.dumps(h, sort_keys=True) for h in out["hparams"]]
    return pa.Table.from_pandas(out, preserve_index=False)


def _finished(frame: pd.DataFrame) -> pd.DataFrame:
    return frame[frame["status"].isin(R.TERMINAL)]


def refresh_index(store: Store) -> int:
    """Add the finished runs that the run index lacks; merge its parts when there are many.

    Safe at any time and from many processes: a part is written atomically, a merge writes the
    merged part before removing the old ones (a crash in between only leaves duplicate rows,
    which readers drop). A part that cannot be read is merged away. Returns the number of runs
    added.
    """
    frame, fresh, listed, read = query.runs_table(store)
    fresh = fresh[fresh["doc_size"].notna()] if "doc_size" in fresh else fresh.iloc[:0]
    added = _finished(fresh)
    if len(added):
        store.write_index_part(_index_table(added))
    parts = store.index_parts()
    store.drop_index_parts(store.older_index_parts())  # never read again
    if len(parts) > MAX_INDEX_PARTS or len(read) < len(listed):
        store.write_index_part(_index_table(_finished(frame)))
        store.drop_index_parts(parts)  # their runs are all in the merged part (or re-read)
    return len(added)
