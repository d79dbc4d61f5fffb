"""DuckDB over a store's eval and training-loss rows (workbench.query's lower half): reading
the row files of many runs at once, wide frames of them, and the run table's per-run figures
computed from eval rows (the first hit in SQL, checked against workbench.outcomes).

The rules of workbench.query hold here: values are always bound as parameters, the only text
spliced into SQL is quoted column identifiers found in the files' own schemas, only regular
files inside the store are opened, and a run whose rows cannot be read is skipped with a
warning naming it.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, Callable, Iterable

import numpy as np
import pandas as pd

from workbench import records as R
from workbench.spec import COMPARISONS
from workbench.store import Store

__all__ = ["connect", "duckdb"]


class _DuckDB:
    """The duckdb module, imported when first used (an attribute looked up): reading a store
    whose finished runs are all in its run index needs no SQL, and `score` then does without
    its 0.05 to 0.09 s import. Import it as `from workbench.eval_rows import duckdb`; its
    names are the module's (`duckdb.Error`, `duckdb.connect`)."""

    def __getattr__(self, name: str) -> Any:
        import duckdb as module

        return getattr(module, name)


duckdb = _DuckDB()

_ROW_TYPES = {"run_id": "VARCHAR", "eval_index": "BIGINT", "step": "BIGINT", "examples": "BIGINT",
              "train_seconds": "DOUBLE", "eval_seconds": "DOUBLE", "wall_seconds": "DOUBLE",
              "loss": "DOUBLE"}

_RETRIES = 3  # a live file may be sealed (and removed) between listing and reading it


def connect() -> duckdb.DuckDBPyConnection:
    """A fresh in-memory DuckDB connection (not thread-safe: one per thread or session)."""
    con = duckdb.connect(":memory:")
    con.execute("SET parquet_metadata_cache = true")  # schemas are read at bind time and again
    try:  # no bar in logs or a CLI's output; in Jupyter without ipywidgets DuckDB refuses the
        con.execute("SET enable_progress_bar = false")  # setting, and shows no bar there anyway
    except duckdb.Error:
        pass
    return con


def _ident(name: str) -> str:
    """A column name as a quoted SQL identifier."""
    return '"' + name.replace('"', '""') + '"'


# -- reading rows ----------------------------------------------------------------------------
@dataclass(frozen=True)
class _Rows:
    """A SELECT over sealed and live row files: its text, its parameters and its column names."""

    sql: str
    params: list[Any]
    columns: list[str]


def _rows_source(con: duckdb.DuckDBPyConnection, parquet: list[str],
                 jsonl: list[str]) -> _Rows | None:
    """One SELECT over sealed and live rows (union by column name); None when there are none."""
    parts, params = [], []
    if parquet:
        parts.append("SELECT * FROM read_parquet(?, union_by_name = true)")
        params.append(parquet)
    if jsonl:
        # ignore_errors turns a torn line into an all-NULL row; run_id IS NULL drops it. Files
        # holding only torn lines have no columns at all: then there is no live row to read.
        live = ("SELECT * FROM read_json(?, format = 'newline_delimited', union_by_name = true,"
                " ignore_errors = true, sample_size = -1)")
        if "run_id" in con.sql(live, params=[jsonl]).columns:
            parts.append(f"{live} WHERE run_id IS NOT NULL")
            params.append(jsonl)
    if not parts:
        return None
    sql = " UNION ALL BY NAME ".join(f"({p})" for p in parts)
    return _Rows(sql, params, con.sql(sql, params=params).columns)  # binding reads the schemas


def _read_rows(con: duckdb.DuckDBPyConnection, store: Store, kind: str,
               run_ids: Iterable[str] | None, build: Callable[[_Rows | None], Any]) -> Any:
    """List the row files of `kind` ("evals", "train"), then `build(rows)`; list again when a
    live file vanished meanwhile."""
    run_ids = None if run_ids is None else list(run_ids)
    for attempt in range(_RETRIES):
        problems: dict[str, str] = {}
        parquet, jsonl = store.row_files(kind, run_ids, problems)
        for run_id, problem in problems.items():  # never handed to DuckDB (a FIFO blocks it)
            _skip(None, run_id, problem)
        try:
            return build(_rows_source(con, parquet, jsonl))
        except duckdb.IOException:
            if attempt == _RETRIES - 1:
                raise


def _cast(column: str, types: dict[str, str]) -> str:
    """SELECT expression casting a row column to its type (metric columns are DOUBLE)."""
    metric = R.split_of(column)
    sql_type = types.get(column) or ("DOUBLE" if metric else None)
    name = column.lower() if metric else column  # a foreign file's upper-case metric column
    return f"TRY_CAST({_ident(column)} AS {sql_type}) AS {_ident(name)}" if sql_type \
        else _ident(column)


def _wide_frame(con: duckdb.DuckDBPyConnection, rows: _Rows | None, head: tuple[str, ...],
                order: str) -> pd.DataFrame:
    """Rows as a frame: the `head` columns in order, then the other columns sorted by name."""
    if rows is None:
        return _empty_rows(head)
    extra = sorted(c for c in rows.columns if c not in head)
    select = [_cast(c, _ROW_TYPES) if c in rows.columns else f"NULL::{_ROW_TYPES[c]} AS {_ident(c)}"
              for c in head] + [_cast(c, _ROW_TYPES) for c in extra]
    key = order.split(",")[-1].strip()  # a mistyped row (no index or step) is dropped
    sql = f"SELECT * FROM (SELECT {', '.join(select)} FROM ({rows.sql})) " \
          f"WHERE {_ident(key)} IS NOT NULL ORDER BY {order}"
    return con.execute(sql, rows.params).df()


def _empty_rows(head: tuple[str, ...]) -> pd.DataFrame:
    dtypes = {"VARCHAR": "str", "BIGINT": "int64", "DOUBLE": "float64"}
    return pd.DataFrame({c: pd.Series(dtype=dtypes[_ROW_TYPES[c]]) for c in head})


def _skip(skipped: dict[str, str] | None, run_id: str, reason: str) -> None:
    """Leave run `run_id` out of a read: a warning naming it, and its reason kept in `skipped`."""
    warnings.warn(f"skipped run {run_id}: {reason}", stacklevel=4)
    if skipped is not None:
        skipped[run_id] = reason


def _target_value_sql(metrics: list[str], columns: list[str]) -> tuple[str, list[str]]:
    """CASE expression picking each row's `validation/<target_metric>` value, and its parameters."""
    arms, params = [], []
    named = {c.lower(): c for c in reversed(columns)}  # DuckDB matches names regardless of case
    for metric in metrics:
        column = named.get(R.metric_column("validation", metric).lower())
        if column is not None:
            arms.append(f"WHEN d.target_metric = ? THEN TRY_CAST(e.{_ident(column)} AS DOUBLE)")
            params.append(metric)
    if not arms:
        return "NULL::DOUBLE", []
    return f"CASE {' '.join(arms)} END", params


# spec.meets in SQL: a finite value at least as good as the target in its direction (isfinite is
# checked beside it). The comparisons are spec.COMPARISONS, so the rule has one definition.
_MEETS_SQL = "CASE direction " + " ".join(
    f"WHEN '{direction}' THEN value {op} target" for direction, op in COMPARISONS.items()) + " END"

# The first-hit rule, whose one owner is workbench.outcomes (first_hit; its module doc states
# it), in SQL for speed: a run's time to target is the training time of its FIRST eval (smallest
# eval_index) whose validation target metric meets the target, never the best eval's.
# scoring.study_times then picks, per study, the trial whose first hit has the smallest
# eval_index. tests/test_outcomes.py checks this SQL against the owner on the same rows (NaN,
# values equal to the goal, both directions, relax, unusable clocks).
_SUMMARY_SQL = """
WITH v AS (
    SELECT e.run_id, {eval_index} AS eval_index, {step} AS step,
           {train_seconds} AS train_seconds, {wall_seconds} AS wall_seconds,
           d.target_direction AS direction, d.target_validation AS target, {value} AS value
    FROM ({rows}) AS e JOIN docs AS d ON e.run_id = d.run_id
    WHERE {eval_index} IS NOT NULL  -- a mistyped live row is dropped
), m AS (
    -- a row whose training time is not a finite time >= 0 (a foreign store's) never counts
    SELECT *, coalesce(isfinite(value) AND {meets} AND isfinite(train_seconds)
                       AND train_seconds >= 0, false) AS met
    FROM v
)
SELECT run_id,
       bool_or(met) AS reached_target,
       min(eval_index) FILTER (WHERE met) AS eval_index_to_target,
       -- the first hit's own values, NULL where it has none (arg_min would skip to a later hit)
       arg_min_null(train_seconds, eval_index) FILTER (WHERE met) AS time_to_target,
       arg_min_null(step, eval_index) FILTER (WHERE met) AS step_to_target,
       arg_min_null(wall_seconds, eval_index) FILTER (WHERE met) AS wall_to_target,
       CASE any_value(direction) WHEN 'max' THEN max(value) FILTER (WHERE isfinite(value))
                                 ELSE min(value) FILTER (WHERE isfinite(value)) END
           AS best_validation,
       max(step) AS rows_steps, max(train_seconds) AS rows_train_seconds,
       max(wall_seconds) AS rows_wall_seconds
FROM m GROUP BY run_id
"""


def _summaries(con: duckdb.DuckDBPyConnection, docs: pd.DataFrame,
               rows: _Rows | None) -> pd.DataFrame:
    """Per-run figures computed from eval rows (time to target, best value, max step/time)."""
    if rows is None:
        return pd.DataFrame({"run_id": pd.Series(dtype="string")})
    metrics = sorted(docs["target_metric"].dropna().unique())
    value, params = _target_value_sql(metrics, rows.columns)
    con.register("docs", docs[["run_id", "target_metric", "target_direction", "target_validation"]])
    present = {c.lower() for c in rows.columns}  # DuckDB matches names regardless of case
    typed = {c: f"TRY_CAST(e.{_ident(c)} AS {_ROW_TYPES[c]})" if c in present
             else f"NULL::{_ROW_TYPES[c]}"  # no file of these runs has the column
             for c in ("eval_index", "step", "train_seconds", "wall_seconds")}
    sql = _SUMMARY_SQL.format(value=value, rows=rows.sql, meets=_MEETS_SQL, **typed)
    try:  # parameters in text order: the CASE arms, then the file lists
        return con.execute(sql, params + rows.params).df()
    finally:
        con.unregister("docs")


# The figures of the first eval that met the target, in a summary and in the run table.
_FIRST_HIT = ("eval_index_to_target", "time_to_target", "step_to_target", "wall_to_target")


def _usable_summary(summary: Any, target: list) -> bool:
    """Whether `summary` (a document's records.EVAL_SUMMARY) is well formed, consistent and was
    computed against `target` ([metric, direction, validation target])."""
    def count(v: Any) -> bool:
        return v is None or (isinstance(v, int) and not isinstance(v, bool) and v >= 0)

    def number(v: Any) -> bool:
        return v is None or (isinstance(v, (int, float)) and not isinstance(v, bool)
                             and bool(np.isfinite(v)))

    def seconds(v: Any) -> bool:
        return number(v) and (v is None or v >= 0)

    if not isinstance(summary, dict) or summary.get("target") != target:
        return False
    reached, first = summary.get("reached_target"), [summary.get(c) for c in _FIRST_HIT]
    if not (isinstance(reached, bool) and count(first[0]) and seconds(first[1])
            and count(first[2]) and seconds(first[3]) and count(summary.get("steps"))
            and seconds(summary.get("train_seconds")) and seconds(summary.get("wall_seconds"))
            and number(summary.get("best_validation"))):
        return False
    # reached: the first hit has an index and a time; not reached: it has nothing
    return reached == (first[0] is not None and first[1] is not None) and \
        (reached or all(v is None for v in first))
