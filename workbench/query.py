"""DuckDB over a results store: the run table, the eval rows and the training-loss rows as frames.

All SQL of the project lives here and in workbench.eval_rows (its lower half: row files and the
figures computed from eval rows). Values are always bound as parameters, file lists included
(`read_json(?)`, `read_parquet(?)`); the only text spliced into SQL is quoted column identifiers
found in the files' own schemas. Rows are read from sealed Parquet and from live JSON lines alike,
so running, crashed and finished runs are all visible; a torn last JSON line reads as an all-NULL
row, which is dropped.

The files come from the store (workbench.store lists them; this module never builds a path).
Reading never writes: not even the run index, which the launcher and the importer refresh
(workbench.run_index).

The run table of finished runs is also kept in the store's run index (records.INDEX_DIR):
Parquet parts of runs_frame rows. runs_frame reads the index in one scan and reads the run
folders only for runs the index lacks, so a store of thousands of runs is read in a fraction of a
second. Only runs whose document has a final status are indexed (their documents and rows never
change again); a run folder that is gone drops out of the table even if the index still lists
it; a part that cannot be read, or whose bytes are not those its name's digest says, is ignored
(its runs are read from their folders); and a row is taken only while its run's document has the
size and modification time the row was read at (INDEX_STAT_COLUMNS, one lstat a run), so the
index can never hide or change a run.

Only regular files inside the store are opened (workbench.store.file_problem): a run with a FIFO,
a device or a link out of the store among its files is skipped, named in a warning, before any
path is handed to DuckDB (which would block on a FIFO).

A finished run's folder is read in one pass over its document: the figures the run table
computes from eval rows (time to target, best value, ...) are sealed into the document with the
rows (records.EVAL_SUMMARY), and the rows are read only for runs whose document has no usable
summary (stores written before summaries, interrupted runs). So opening a never-indexed store
reads one small file per run, not two.
"""
from __future__ import annotations

import functools
import json
import os
import stat
from pathlib import Path
from typing import Any, Iterable

import numpy as np
import pandas as pd

from workbench import records as R
from workbench.eval_rows import (_FIRST_HIT, _ROW_TYPES, _Rows, _ident,  # noqa: F401
                                 _read_rows, _rows_source, _skip, _summaries, _usable_summary,
                                 _wide_frame, connect, duckdb)
from workbench.spec import COMPARISONS, relaxed_goal
from workbench.store import Store, read_regular

__all__ = ["connect", "runs_frame", "runs_frame_of", "evals_frame", "train_frame", "runs_table",
           "read_index", "INDEX_STAT_COLUMNS", "RUN_DTYPES", "ladder_records", "last_evals",
           "ladder_finals", "first_hits", "FIRST_HIT_COLUMNS"]

# Columns computed from eval rows rather than read from the run document.
_COMPUTED = ("reached_target", "time_to_target", "step_to_target", "wall_to_target",
             "eval_index_to_target", "best_validation")
# Columns that the document holds but that may be missing (interrupted runs): max over eval rows.
_FROM_ROWS = ("steps", "train_seconds", "wall_seconds")

_INT = ("attempt", "study", "trial", "seed", "rng_seed", "batch_size", "budget_steps", "steps",
        "step_to_target", "eval_index_to_target", "launch_position", "stalled_at_step")
_FLOAT = ("target_validation", "target_test", "budget_seconds", "train_seconds", "wall_seconds",
          "time_to_target", "wall_to_target", "best_validation", "inference_seconds",
          "peak_memory_bytes", "mfu", "energy_joules", "compile_seconds", "probe_seconds")

# pandas dtype of every column of runs_frame (the empty frame has the same dtypes).
RUN_DTYPES: dict[str, Any] = {
    c: ("Int64" if c in _INT else "float64" if c in _FLOAT else "bool" if c == "reached_target"
        else object if c == "hparams" else "str")
    for c in R.RUN_COLUMNS
}

# DuckDB types of the run-document keys read by runs_frame (other keys are ignored).
_DOC_TYPES: dict[str, str] = {
    c: ("BIGINT" if c in _INT else "DOUBLE" if c in _FLOAT else "JSON" if c == "hparams"
        else "VARCHAR")
    for c in R.RUN_COLUMNS if c not in _COMPUTED
}



# Kept beside each run's row in the run index: its run document's size and modification time
# (ns) when the row was read. A run whose document stats otherwise now is read from its folder.
INDEX_STAT_COLUMNS = ("doc_size", "doc_mtime_ns")
# Kept there too: each run's eval clock (eval_clock's figures), read from its sealed eval summary
# (records.EVAL_SUMMARY's "eval_clock"), so that eval_clock reads no rows of an indexed run.
# Known false where the summary holds none (an older store, figures computed from the rows):
# eval_clock reads that run's rows. Seconds NaN where no row counts.
INDEX_CLOCK_COLUMNS = ("eval_clock_known", "eval_clock_eval_seconds", "eval_clock_wall_seconds")
_CLOCK_DTYPES = dict(zip(INDEX_CLOCK_COLUMNS, ("bool", "float64", "float64")))


def _unreadable(con: duckdb.DuckDBPyConnection, store: Store, run_ids: Iterable[str],
                kind: str, docs: bool, skipped: dict[str, str] | None = None) -> set[str]:
    """The runs among `run_ids` (which do not read together) whose rows of `kind` (and, with
    `docs`, whose document) cannot be read, each named in a warning (and in `skipped`): one bad
    run is skipped, never the whole store. Found by halving: a half that reads is cleared at
    once, so a bad run among thousands costs a few reads of the store, not one per run."""
    def check(group: list[str]) -> None:
        if docs:  # the run table reads no rows of a run with a usable summary
            found = _read_docs(con, store.doc_paths(group), store.root)
            summed = set(_sealed_summaries(found)["run_id"].tolist())
            group = [r for r in group if r not in summed]
        rows = _rows_source(con, *store.row_files(kind, group)) if group else None
        if rows is not None:
            con.execute(f"SELECT count(*) FROM ({rows.sql})", rows.params).fetchall()

    def bad_among(group: list[str], failed: bool) -> set[str]:
        try:
            if not failed or len(group) == 1:
                check(group)
                return set()
        except (duckdb.Error, KeyError) as exc:
            if len(group) == 1:
                reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
                _skip(skipped, group[0], f"its files cannot be read ({reason})")
                return set(group)
        half = len(group) // 2
        return bad_among(group[:half], False) | bad_among(group[half:], False) if group else set()

    return bad_among(list(run_ids), True)


def _rows_frame(store: Store, kind: str, run_ids: Iterable[str] | None, head: tuple[str, ...],
                order: str) -> pd.DataFrame:
    """The rows of `kind` as a frame (_wide_frame), leaving out runs whose files are unreadable."""
    con = connect()

    def build(rows: _Rows | None) -> pd.DataFrame:
        return _wide_frame(con, rows, head, order)

    if run_ids is None:  # the runs that runs_frame lists: never rows of a run it leaves out
        run_ids = runs_table(store, con)[0]["run_id"].tolist()
    try:
        return _read_rows(con, store, kind, run_ids, build)
    except duckdb.Error:
        ids = list(run_ids)
        bad = _unreadable(con, store, ids, kind, docs=False)
        return _read_rows(con, store, kind, [r for r in ids if r not in bad], build)


def evals_frame(store: Store, run_ids: Iterable[str] | None = None) -> pd.DataFrame:
    """Eval rows of the store (or of `run_ids`): records.EVAL_COLUMNS, then metric columns sorted.

    Sorted by run_id and eval_index; metric columns are float (null and NaN both read as NaN).
    A run whose rows cannot be read is left out, with a warning naming it; without `run_ids`,
    the rows of the runs that runs_frame lists (never those of a run it skips).
    """
    return _rows_frame(store, "evals", run_ids, R.EVAL_COLUMNS, "run_id, eval_index")


def train_frame(store: Store, run_ids: Iterable[str] | None = None) -> pd.DataFrame:
    """Training-loss rows of the store (or of `run_ids`): records.TRAIN_COLUMNS, sorted by run, step."""
    return _rows_frame(store, "train", run_ids, R.TRAIN_COLUMNS, "run_id, step")


# -- the run table ---------------------------------------------------------------------------
# Numeric keys of the run document: a value of another type reads as NULL, and is reported;
# the required text keys: a number there would read as text, and is reported too.
_NUMERIC_DOC_KEYS = tuple(c for c, t in _DOC_TYPES.items() if t in ("BIGINT", "DOUBLE"))
_TEXT_DOC_KEYS = tuple(c for c in R.REQUIRED_DOC_FIELDS if c != "run_id")


def _texts(files: list[str], root: Path) -> tuple[list[str], list[tuple[int, int]]]:
    """The text of each file, and its (size, modification time in ns) when it was read; only a
    regular file inside the store `root` is opened (store.read_regular). A file that cannot be
    read (gone since it was listed, not UTF-8, a FIFO) raises duckdb.IOException, as DuckDB's own
    readers do, so one error path handles both."""
    texts, stats, seen = [], [], {}  # seen: the folders checked (each once)
    for path in files:
        try:
            data, st = read_regular(path, root, seen)
            texts.append(data.decode("utf-8"))
            stats.append((st.st_size, st.st_mtime_ns))
        except (OSError, UnicodeDecodeError) as exc:
            raise duckdb.IOException(f"cannot read {path}: {exc}") from None
    return texts, stats


def _typed_key(key: str, sql_type: str) -> str:
    """SQL typing run-document key `key` (read as JSON into struct d.j) as from_json would
    type it: text unquoted, other values as their JSON text; numbers NULL when not numbers."""
    value = f"d.j.{_ident(key)}"
    if sql_type == "JSON":
        return value
    if sql_type == "VARCHAR":
        return f"json_extract_string({value}, '$')"
    return f"TRY_CAST({value} AS {sql_type})"


def _read_docs(con: duckdb.DuckDBPyConnection, files: list[str], root: Path) -> pd.DataFrame:
    """The run documents, one row each, typed; run_id falls back to the folder name. Column
    `mistyped` lists the numeric keys whose value is not a number (they read as NULL) and the
    required text keys whose value is not text."""
    # One parse per document, every key as JSON, then typed the way from_json types it. The
    # texts are read here and handed over as one Arrow column: from_json on DuckDB's read_text
    # is 6x slower on 100,000 small files (duckdb 2.0), read_json slower still.
    import pyarrow as pa

    checked = _NUMERIC_DOC_KEYS + _TEXT_DOC_KEYS
    keys = ", ".join(f"{_typed_key(c, t)} AS {_ident(c)}" for c, t in _DOC_TYPES.items()
                     if c != "run_id")
    raw = ", ".join(f"d.j.{_ident(c)} AS {_ident('raw:' + c)}" for c in checked)
    structure = json.dumps(dict.fromkeys((*_DOC_TYPES, "schema_version", R.EVAL_SUMMARY), "JSON"))
    sql = (f"SELECT coalesce({_typed_key('run_id', 'VARCHAR')}, "
           f"parse_filename(parse_dirpath(filename))) AS run_id, {keys}, "
           f"{_typed_key('schema_version', 'BIGINT')} AS schema_version, "
           f"d.j.{_ident(R.EVAL_SUMMARY)} AS {_ident(R.EVAL_SUMMARY)}, {raw} "
           "FROM (SELECT filename, from_json(content, ?) AS j FROM texts) AS d")
    texts, stats = _texts(files, root)
    con.register("texts", pa.table({"filename": files, "content": texts}))
    try:
        docs = con.sql(sql, params=[structure]).to_arrow_table().to_pandas()  # 1.7x .df()
    finally:
        con.unregister("texts")
    mistyped = [[] for _ in range(len(docs))]
    for c in checked:
        given = docs.pop(f"raw:{c}")
        present = given.notna().to_numpy() & (given != "null").to_numpy()
        wrong = docs[c].isna().to_numpy() if c in _NUMERIC_DOC_KEYS else \
            ~given.fillna("").astype(str).str.startswith('"').to_numpy()
        for i in np.flatnonzero(present & wrong):
            kind = "a number" if c in _NUMERIC_DOC_KEYS else "text"
            mistyped[i].append(f"{c} = {str(given.iloc[i])[:40]} (expected {kind})")
    docs["mistyped"] = mistyped
    for i, c in enumerate(INDEX_STAT_COLUMNS):
        docs[c] = pd.Series([st[i] for st in stats], index=docs.index, dtype="int64")
    return docs


def _sealed_summaries(docs: pd.DataFrame) -> pd.DataFrame:
    """What _summaries computes from eval rows, for the runs whose document holds a usable
    eval summary (records.EVAL_SUMMARY), read from it: no rows are read for those."""
    texts = docs[R.EVAL_SUMMARY].tolist()
    parsed = json.loads("[" + ",".join(t if isinstance(t, str) else "null" for t in texts) + "]")
    targets = zip(docs["target_metric"].tolist(), docs["target_direction"].tolist(),
                  docs["target_validation"].tolist())
    usable = [(run_id, s) for run_id, s, (m, d, v) in zip(docs["run_id"].tolist(), parsed, targets)
              if s is not None and _usable_summary(s, [m, d, v])]
    columns = {"reached_target": "bool", **{c: RUN_DTYPES[c] for c in _COMPUTED[1:]},
               **{f"rows_{c}": RUN_DTYPES[c] for c in _FROM_ROWS}}
    frame = pd.DataFrame({"run_id": [run_id for run_id, _ in usable]}, dtype="str")
    for c, dtype in columns.items():
        key = c.removeprefix("rows_")
        frame[c] = pd.Series([s[key] for _, s in usable], dtype=object).astype(dtype)
    clocks = [_clock_of(s) for _, s in usable]
    for i, c in enumerate(INDEX_CLOCK_COLUMNS):
        frame[c] = pd.Series([clock[i] for clock in clocks], dtype=_CLOCK_DTYPES[c])
    return frame


def _clock_of(summary: dict) -> tuple[bool, float, float]:
    """(known, eval seconds, wall seconds) of a summary's "eval_clock": known only when it is
    null (no row counts: NaN seconds) or two finite numbers >= 0."""
    clock = summary.get("eval_clock", False)
    if clock is None:
        return True, np.nan, np.nan
    if isinstance(clock, list) and len(clock) == 2 and all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and np.isfinite(v) and v >= 0
            for v in clock):
        return True, float(clock[0]), float(clock[1])
    return False, np.nan, np.nan


# The run-table columns a first hit sets (what first_hits recomputes).
FIRST_HIT_COLUMNS = ("reached_target", *_FIRST_HIT)


def first_hits(store: Store, runs: pd.DataFrame, relax: float) -> pd.DataFrame:
    """The first hits of `runs` (run-table rows of `store`) against their validation targets
    relaxed by `relax` (spec.relaxed_goal: AlgoPerf's relaxation), recomputed from their eval
    rows by the run table's first-hit rule (_SUMMARY_SQL): columns run_id and
    FIRST_HIT_COLUMNS, one row per run of `runs` (a run with no eval row has reached_target
    False). A run whose rows cannot be read is left out of the read with a warning naming it,
    and reads as never reaching the target."""
    docs = runs[["run_id", "target_metric", "target_direction", "target_validation"]].copy()
    docs["run_id"] = docs["run_id"].astype(str)
    docs["target_direction"] = docs["target_direction"].astype(object)
    known = docs["target_direction"].isin(list(COMPARISONS)).to_numpy(bool)
    goals = docs["target_validation"].to_numpy(float).copy()
    goals[known] = relaxed_goal(goals[known], docs["target_direction"].to_numpy(object)[known],
                                relax)
    docs["target_validation"] = goals
    con = connect()

    def build(rows: _Rows | None) -> pd.DataFrame:
        return _summaries(con, docs, rows)

    ids = docs["run_id"].tolist()
    try:
        found = _read_rows(con, store, "evals", ids, build) if ids else None
    except duckdb.Error:
        bad = _unreadable(con, store, ids, "evals", docs=False)
        found = _read_rows(con, store, "evals", [r for r in ids if r not in bad], build)
    out = docs[["run_id"]].merge(found, on="run_id", how="left") if found is not None and \
        len(found.columns) > 1 else docs[["run_id"]].assign(
            **{c: np.nan for c in FIRST_HIT_COLUMNS})
    out["reached_target"] = out["reached_target"].eq(True)
    return out[["run_id", *FIRST_HIT_COLUMNS]].astype(
        {c: RUN_DTYPES[c] for c in FIRST_HIT_COLUMNS})


def _parse_hparams(texts: pd.Series) -> list[dict]:
    """The hparams column's JSON texts as dicts ({} where there is none), parsed as one JSON
    array: one parser call instead of one per run (3x faster on 100,000 runs)."""
    texts = [h if isinstance(h, str) and h else "{}" for h in texts.tolist()]
    return json.loads("[" + ",".join(texts) + "]")


@functools.cache
def _no_runs() -> pd.DataFrame:  # built once: its 60-odd typed columns took 20 ms each time
    return pd.DataFrame({c: pd.Series(dtype=t) for c, t in RUN_DTYPES.items()})


def _empty_runs() -> pd.DataFrame:
    return _no_runs().copy()


def _effective_status(store: Store, frame: pd.DataFrame) -> None:
    """Apply the store's liveness rule to runs whose documents say `running` (in place)."""
    running = frame.index[frame["status"] == "running"]
    for i in running:
        doc = store.run_doc(frame.at[i, "run_id"])
        frame.at[i, "status"] = doc.get("status")
        frame.at[i, "stop_reason"] = doc.get("stop_reason")


def _finish_runs(docs: pd.DataFrame, summary: pd.DataFrame) -> pd.DataFrame:
    """Join documents and summaries; fill steps/times from rows; fix column order and dtypes."""
    frame = docs.merge(summary, on="run_id", how="left") if len(summary.columns) > 1 else docs
    for c in _FROM_ROWS:
        rows = frame.get(f"rows_{c}")
        if rows is not None:
            frame[c] = frame[c].astype(RUN_DTYPES[c]).fillna(rows.astype(RUN_DTYPES[c]))
    for c in _COMPUTED:
        if c not in frame:
            frame[c] = pd.Series(np.nan, index=frame.index)
    frame["reached_target"] = frame["reached_target"].eq(True)  # no eval rows: False
    frame["hparams"] = _parse_hparams(frame["hparams"])
    for c in INDEX_CLOCK_COLUMNS[1:]:
        frame[c] = frame[c].astype(float) if c in frame else np.nan
    # no usable summary (the merge left NaN, or no summary at all): the clock is not known
    known = frame["eval_clock_known"] if "eval_clock_known" in frame else None
    frame["eval_clock_known"] = known.eq(True) if known is not None else False
    frame = frame[list(R.RUN_COLUMNS) + [c for c in INDEX_STAT_COLUMNS if c in frame]
                  + list(INDEX_CLOCK_COLUMNS)]
    return frame.astype(RUN_DTYPES).sort_values("run_id", ignore_index=True)


def _runs_from_folders(con: duckdb.DuckDBPyConnection, store: Store, run_ids: list[str],
                       skipped: dict[str, str]) -> pd.DataFrame:
    """Run-table rows of `run_ids` read from their folders; `status` as the documents say. Runs
    whose files cannot be read or whose document fails records.run_doc_problem are left out,
    each named in a warning and in `skipped`."""
    unsafe = store.unsafe_runs(run_ids)  # never opened: a FIFO blocks, a device never ends
    for run_id, problem in unsafe.items():
        _skip(skipped, run_id, problem)
    run_ids = [r for r in run_ids if r not in unsafe]
    if not run_ids:
        return _empty_runs()
    try:
        return _read_runs(con, store, run_ids, skipped)
    except duckdb.Error:  # some run's files are unreadable: leave those out, read the others
        bad = _unreadable(con, store, run_ids, "evals", docs=True, skipped=skipped)
        good = [r for r in run_ids if r not in bad]
        return _read_runs(con, store, good, skipped) if good else _empty_runs()


def _plainly_valid(docs: pd.DataFrame) -> np.ndarray:
    """Rows that records.run_doc_problem surely accepts (a readable schema version, every
    required key non-empty text, a known status, no mistyped key), found column by column;
    the others are checked one by one."""
    ok = docs["schema_version"].isin(R.READABLE_SCHEMA_VERSIONS).to_numpy(bool, na_value=False,
                                                                        copy=True)
    for c in R.REQUIRED_DOC_FIELDS:
        values = docs[c]
        ok &= values.map(lambda v: isinstance(v, str) and v != "").to_numpy(bool)
    ok &= docs["status"].isin(R.STATUSES).to_numpy(bool, na_value=False)
    return ok & (docs["mistyped"].map(len) == 0).to_numpy(bool)


def _valid_docs(docs: pd.DataFrame, skipped: dict[str, str]) -> pd.DataFrame:
    """The documents that records.run_doc_problem accepts; the others are skipped."""
    fields = ["schema_version", *R.REQUIRED_DOC_FIELDS]
    keep, given = _plainly_valid(docs), docs[fields]
    for i in np.flatnonzero(~keep):
        row = given.iloc[i]
        doc = {k: (None if v is None or v is pd.NA or (isinstance(v, float) and np.isnan(v))
                   else v) for k, v in row.items()}
        problem = R.run_doc_problem(doc) or (
            f"{R.RUN_DOC} has {'; '.join(docs['mistyped'].iat[i])}"
            if docs["mistyped"].iat[i] else None)
        if problem:
            _skip(skipped, str(doc["run_id"]), problem)
        else:
            keep[i] = True
    return docs if keep.all() else docs[keep].reset_index(drop=True)


def _read_runs(con: duckdb.DuckDBPyConnection, store: Store, run_ids: list[str],
               skipped: dict[str, str]) -> pd.DataFrame:
    docs = _valid_docs(_read_docs(con, store.doc_paths(run_ids), store.root), skipped)
    sealed = _sealed_summaries(docs)
    known = set(sealed["run_id"].tolist())
    # rows are read only for the runs without a usable summary (nor for a run left out)
    run_ids = [r for r in docs["run_id"].tolist() if r not in known]

    def build(rows: _Rows | None) -> pd.DataFrame:
        computed = _summaries(con, docs, rows)
        both = [f for f in (sealed, computed) if len(f)]
        return _finish_runs(docs, pd.concat(both, ignore_index=True) if len(both) > 1
                            else both[0] if both else computed)

    return _read_rows(con, store, "evals", run_ids, build)


def _read_parts(store: Store, parts: list[Path]) -> pd.DataFrame | None:
    """Rows of index parts, or None when one cannot be read (or is not what was written:
    Store.read_index_part), lacks run-table or stat columns or holds values of other types."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    tables = []
    for part in parts:
        data = store.read_index_part(part)
        if data is None:
            return None
        try:
            tables.append(pq.read_table(pa.BufferReader(data)))
        except (pa.ArrowException, OSError):  # not Parquet
            return None
    try:  # through Arrow: 2.5x faster than .df() on 100,000 rows (dtypes set by the caller)
        frame = pa.concat_tables(tables, promote_options="permissive").to_pandas()
    except (pa.ArrowException, ValueError, TypeError):
        return None
    columns = [*R.RUN_COLUMNS, *INDEX_STAT_COLUMNS, *INDEX_CLOCK_COLUMNS]
    if not all(c in frame.columns for c in columns):
        return None
    try:  # a part whose values are not of the run table's types is not read either
        return frame[columns].astype(
            {**{c: t for c, t in RUN_DTYPES.items() if c != "hparams"},
             **dict.fromkeys(INDEX_STAT_COLUMNS, "int64"), **_CLOCK_DTYPES})
    except (ValueError, TypeError):
        return None


def read_index(con: duckdb.DuckDBPyConnection | None, store: Store
               ) -> tuple[pd.DataFrame, list, list]:
    """(run-table rows of the index with INDEX_STAT_COLUMNS and INDEX_CLOCK_COLUMNS, the parts
    listed, the parts read); bad parts are skipped; of a run listed twice, the row of the
    newest part. `con` is not used (the parts are read with pyarrow): None will do."""
    frame, parts, read = _index_rows(store)
    if frame is None:
        return _empty_index(), parts, read
    frame["hparams"] = _parse_hparams(frame["hparams"])
    return frame.astype(RUN_DTYPES), parts, read


def _index_rows(store: Store) -> tuple[pd.DataFrame | None, list, list]:
    """read_index's rows as the parts hold them (hparams as JSON text), or None when no part
    can be read; the parts listed, the parts read."""
    parts = store.index_parts()
    if not parts:
        return None, [], []
    frame, read = _read_parts(store, parts), parts
    if frame is None:  # find the parts that can be read
        pieces = {p: _read_parts(store, [p]) for p in parts}
        read = [p for p, f in pieces.items() if f is not None]
        if not read:
            return None, parts, []
        frame = pd.concat([pieces[p] for p in read], ignore_index=True)
    twice = frame["run_id"].duplicated(keep="last").to_numpy(bool)
    return (frame[~twice].reset_index(drop=True) if twice.any() else frame), parts, read


def _empty_index() -> pd.DataFrame:
    return _empty_runs().assign(**{c: pd.Series(dtype="int64") for c in INDEX_STAT_COLUMNS},
                                **{c: pd.Series(dtype=t) for c, t in _CLOCK_DTYPES.items()})


def _unchanged(store: Store, indexed: pd.DataFrame) -> np.ndarray:
    """Which rows of the index still describe their run: its run document is a regular file
    whose size and modification time are those the row was read at (one lstat a run). A run
    whose folder is gone, or whose document changed since, is not taken from the index."""
    runs_dir = str(store.runs_dir)
    now = []
    for run_id in indexed["run_id"].tolist():
        try:
            st = os.lstat(os.path.join(runs_dir, run_id, R.RUN_DOC))
            now.append((st.st_size, st.st_mtime_ns) if stat.S_ISREG(st.st_mode) else None)
        except OSError:
            now.append(None)
    then = zip(indexed["doc_size"].tolist(), indexed["doc_mtime_ns"].tolist())
    return np.fromiter((n == t for n, t in zip(now, then)), bool, count=len(now))


def runs_table(store: Store, con: duckdb.DuckDBPyConnection | None = None,
               index: tuple | None = None, names: list[str] | None = None
               ) -> tuple[pd.DataFrame, pd.DataFrame, list, list]:
    """(every run's row with the documents' status, the rows read from folders, index parts
    listed, index parts read): what runs_frame shows and what workbench.run_index adds.
    `index`: what read_index returned, when the caller has just read it; `names`: what
    Store.run_names returned, when the caller has just listed the run folders."""
    indexed, parts, read = index if index is not None else read_index(con, store)
    if len(indexed):  # the index is a cache: only rows whose run is as it was when read
        indexed = indexed if (same := _unchanged(store, indexed)).all() else indexed[same]
    # as a list: iterating the Arrow-backed column itself costs 2 us an id
    indexed_ids = indexed["run_id"].tolist()
    known = set(indexed_ids)
    run_ids = store.run_ids(known, names)
    present = set(run_ids)
    new = present - known
    skipped: dict[str, str] = {}
    # a DuckDB connection only for runs read from their folders (one takes 25 ms to open)
    fresh = _runs_from_folders(con or connect(), store, [r for r in run_ids if r in new],
                               skipped) if new else _empty_runs()
    frames = [f for f in (indexed, fresh) if len(f)]
    frame = pd.concat(frames, ignore_index=True) if len(frames) > 1 else \
        (frames[0] if frames else _empty_runs())
    frame = frame.astype(RUN_DTYPES)  # (no copy by a filter, a sort or a de-duplication
    frame = frame.reset_index(drop=True) if frame["run_id"].is_monotonic_increasing else \
        frame.sort_values("run_id", ignore_index=True)  # where nothing changes: 60-odd columns)
    frame.attrs["skipped"] = skipped
    return frame, fresh, parts, read


def runs_frame(store: Store, index: tuple | None = None,
               names: list[str] | None = None) -> pd.DataFrame:
    """One row per run attempt, columns records.RUN_COLUMNS in order (dtypes: RUN_DTYPES).

    `status` is the effective status (a `running` document whose process is gone reads
    `interrupted`). reached_target, eval_index_to_target, time_to_target (training seconds),
    step_to_target, wall_to_target (wall seconds) and best_validation are computed from the
    eval rows against each run's own validation target, by the first-hit rule above (or read
    from the eval summary sealed with them, records.eval_summary: the same rule); NaN and
    null values never meet a target (spec.meets). steps, train_seconds and wall_seconds come
    from the document, else (interrupted runs) from the last eval rows. Finished runs come from
    the run index when it has them (see the module docstring). Nothing is written.

    A run whose files cannot be read, or whose document is not a run of a readable schema
    (records.run_doc_problem), is left out with a warning naming it; `frame.attrs["skipped"]`
    maps each such run id to the reason. `index`: read_index's result, and `names`:
    Store.run_names's, when the caller has just read them (the dashboard reads both first to
    fingerprint the store).
    """
    return runs_frame_of(store, runs_table(store, index=index, names=names)[0])


def runs_frame_of(store: Store, table: pd.DataFrame) -> pd.DataFrame:
    """runs_frame of runs_table's first item: its run-table columns, effective statuses."""
    frame = table[list(R.RUN_COLUMNS)]  # not the index's stat and clock columns
    frame.attrs["skipped"] = table.attrs["skipped"]
    _effective_status(store, frame)
    return frame
