"""Runs moved between stores: copied for reuse, merged, and exported to and imported from Parquet.

Every run read from another store or from Parquet files is validated like an import (DESIGN.md,
"Hostile input") before anything is written: its document (records.run_doc_problem, plain names,
finite numbers, times >= 0) and its rows (the eval columns present and typed, integer steps and
indices >= 0, times finite and >= 0 or null, metric values numbers), then by the rules every door
shares (workbench/validate.py run_problem: clocks that never go back, wall >= training time,
metrics in range, ladder tokens); merge and import-parquet take a run only into a trial slot that
is empty or holds its own design (validate.TrialSlots). A bad run is skipped with one warning line
saying what was wrong, never copied blindly and never an aborted command.

  reusable / copy_runs   `pacebench study --reuse-from`: finished runs of the same reuse key
                         (runners/launch/reuse.py) copied into the study's store, each recording
                         `reused_from` = {"store", "run_id"}
  merge_stores           `pacebench merge --store C A B`: identical runs kept once; a run id
                         held with different content refused by name, writing nothing
  export_parquet         `pacebench export`: runs.parquet (the run table, hparams as JSON text,
                         plus each run's whole document as JSON text in `document`),
                         evals.parquet and train.parquet (query.py's frames)
  import_parquet         `pacebench import-parquet`: those files back into a store
"""
from __future__ import annotations

import json
import math
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from workbench import records as R
from workbench.errors import UserError
from workbench.spec import NAME
from workbench.store import Store, StoreError, read_jsonl
from workbench.store_files import not_regular
from workbench.validate import TrialSlots, run_problem

__all__ = ["RunProblem", "doc_problem", "rows_problem", "read_run", "reusable", "copy_runs",
           "merge_stores", "MergeConflict", "export_parquet", "import_parquet",
           "PARQUET_FILES"]

PARQUET_FILES = R.EXPORT_FILES
_PLAIN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,199}")  # a run id or a trial key
_COLUMN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_./-]{0,127}")  # a row column's name
_INTEGERS = {"evals": ("eval_index", "step", "examples"), "train": ("step", "examples")}
_SECONDS = {"evals": ("train_seconds", "eval_seconds", "wall_seconds"), "train": ("train_seconds",)}
_REQUIRED = {"evals": R.EVAL_COLUMNS[1:], "train": ("step", "train_seconds", "loss")}
# Not a run's content: rewritten by every write of a sealed run, or where a reused copy came from
# (a copy and its original are one run: a merge keeps the first of them it reads)
_NOT_CONTENT = ("schema_version", R.EVAL_SUMMARY, "reused_from")


class RunProblem(UserError):
    """A run that cannot be taken in: its one line says what was wrong and what is valid."""


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def doc_problem(doc: Any) -> str | None:
    """Why run document `doc` cannot be copied into a store (None when it can): see the module
    doc. A run still `running` cannot be: only a finished, failed or interrupted one."""
    problem = R.run_doc_problem(doc)
    if problem:
        return problem
    for key in ("study_name", "workload", "algorithm"):
        if not NAME.fullmatch(doc[key]):
            return (f"its {key} {doc[key][:60]!r} is not a plain name (letters, digits, '.', "
                    "'_', '-', starting with a letter or digit, at most 128 characters)")
    for key in ("run_id", "trial_key"):
        if not _PLAIN.fullmatch(doc[key]):
            return (f"its {key} {doc[key][:60]!r} is not a plain name (letters, digits, '_', "
                    "'.', '-', not starting with '.', at most 200 characters)")
    if doc["status"] not in R.TERMINAL:
        return f"it is {doc['status']}: only a run that has ended can be copied"
    for key in R.RUN_COLUMNS:
        value = doc.get(key)
        if _number(value) and not math.isfinite(value):
            return f"its {key} is {value}: numbers in a run document are finite"
        if _number(value) and value < 0 and ("seconds" in key or key.endswith("to_target")):
            return f"its {key} is {value}: times are >= 0"
    return None


def _column_problem(table: pa.Table, name: str, kind: str) -> str | None:
    column, kind_type = table.column(name), table.schema.field(name).type
    if pa.types.is_null(kind_type):
        return None
    if name in _INTEGERS[kind]:
        if not pa.types.is_integer(kind_type):
            return f"its {kind} column {name} holds {kind_type}, not integers"
        low = pc.min(column).as_py()
        if low is not None and low < 0:
            return f"its {kind} column {name} has {low}: counts are >= 0"
        if name != "examples" and column.null_count:
            return f"its {kind} column {name} has nulls: every row has one"
        return None
    if not (pa.types.is_floating(kind_type) or pa.types.is_integer(kind_type)):
        return f"its {kind} column {name} holds {kind_type}, not numbers"
    if name in _SECONDS[kind]:
        values = [v for v in column.to_pylist() if v is not None]
        if any(not math.isfinite(v) or v < 0 for v in values):
            bad = next(v for v in values if not math.isfinite(v) or v < 0)
            return f"its {kind} column {name} has {bad}: times are finite and >= 0, or null"
    return None


def rows_problem(table: pa.Table | None, kind: str) -> str | None:
    """Why `table`, a run's rows of `kind` ("evals" or "train"), cannot be copied (None when it
    can): the required columns, names, types and values of the module doc."""
    if table is None:
        return None
    lacking = [c for c in _REQUIRED[kind] if c not in table.column_names]
    if lacking:
        return f"its {kind} rows lack {', '.join(lacking)}"
    for name in table.column_names:
        if name == "run_id":
            continue
        if not _COLUMN.fullmatch(name):
            return (f"its {kind} column {name[:60]!r} is not a plain column name (letters, "
                    "digits, '_', '.', '-', '/')")
        problem = _column_problem(table, name, kind)
        if problem:
            return problem
    try:
        R.check_row_columns(table.column_names)
    except ValueError as err:
        return f"its {kind} rows: {err}"
    return None


def _rows(store: Store, run_id: str, kind: str) -> pa.Table | None:
    problems: dict[str, str] = {}
    sealed, live = store.row_files(kind, [run_id], problems)
    if run_id in problems:  # a FIFO, socket or outside link where its rows belong: not rowless
        raise UserError(problems[run_id])
    if sealed:
        return pq.read_table(sealed[0])
    rows = read_jsonl(Path(live[0]), store.root) if live else []
    return pa.Table.from_pylist(rows) if rows else None


def read_run(store: Store, doc: Mapping[str, Any]) -> tuple[dict, pa.Table | None, pa.Table | None]:
    """(document, eval rows, training rows) of run `doc` of `store`, validated (RunProblem)."""
    problem = doc_problem(doc)
    if problem:
        raise RunProblem(problem)
    try:
        evals, train = (_rows(store, doc["run_id"], kind) for kind in ("evals", "train"))
    except (OSError, ValueError, KeyError, pa.ArrowException) as err:
        raise RunProblem(f"its rows cannot be read ({str(err)[:200]})") from None
    problem = rows_problem(evals, "evals") or rows_problem(train, "train") or \
        run_problem(doc, evals)
    if problem:
        raise RunProblem(problem)
    return dict(doc), evals, train


def _skip(where: str, run_id: str, problem: str) -> None:
    warnings.warn(f"skipped run {run_id[:80]} of {where}: {problem}", stacklevel=3)


# -- reuse ----------------------------------------------------------------------------------
def reusable(sources: Iterable[Store], keys: Iterable[str]) -> dict[str, tuple[Store, dict]]:
    """{reuse key: (its store, the document of a finished run of that key)} for the `keys`
    found among the `sources`' runs (the first store holding a key wins; within one store the
    first such run in run-id order). Runs without a key are never reused."""
    wanted, found = set(keys), {}
    for source in sources:
        for doc in source.documents():
            key = doc.get("reuse_key")
            if (isinstance(key, str) and key in wanted and key not in found
                    and doc.get("status") in R.DONE_STATUSES):
                found[key] = (source, doc)
    return found


def _free_id(store: Store, run_id: str, taken: set[str]) -> str:
    """`run_id`, or the next attempt's name of its trial when the store holds that id."""
    stem, n = (run_id.rsplit("-a", 1) + ["1"])[:2]
    n = int(n) if n.isdigit() else 1
    candidate = run_id
    while store.run_path(candidate).exists() or candidate in taken:
        n += 1
        candidate = f"{stem}-a{n}"
    return candidate


def copy_runs(store: Store, picked: Iterable[tuple[Store, dict] | tuple[Store, dict, dict]]
              ) -> list[dict]:
    """Copy each (source store, run document[, changes]) of `picked` into `store`, validated (a
    bad run is skipped with a warning), recording `reused_from`; the copied runs' new
    documents. `changes`: document fields the copy takes instead of the original's (a reused
    run made in a study of another name becomes the planned trial: runners/launch/reuse.py); its
    "run_id", if any, is the id the copy asks for."""
    store.ensure()
    copied, taken = [], set()
    with store.sealed_batch() as batch:
        for source, doc, *changes in picked:
            try:
                doc, evals, train = read_run(source, doc)
            except RunProblem as problem:
                _skip(str(source.root), doc.get("run_id", "?"), str(problem))
                continue
            changes = dict(changes[0]) if changes else {}
            run_id = _free_id(store, changes.pop("run_id", doc["run_id"]), taken)
            attempt = run_id.rsplit("-a", 1)[-1]
            new = {**doc, **changes, "run_id": run_id,
                   "attempt": int(attempt) if attempt.isdigit() else doc.get("attempt"),
                   "reused_from": {"store": str(source.root.resolve()), "run_id": doc["run_id"]}}
            if batch.add(new, evals, run_id, train):
                taken.add(run_id)
                copied.append(new)
        added = batch.publish()
    return [doc for doc in copied if added.get(doc["run_id"])]


# -- merge -------------------------------------------------------------------------------------
class MergeConflict(UserError):
    """Stores that hold one run id with different content: nothing was written."""


def _content(doc: Mapping[str, Any], evals: pa.Table | None, train: pa.Table | None) -> str:
    """A run's content as one text (NaN equal to NaN), to tell identical copies from conflicts."""
    plain = {k: v for k, v in {"attempt": 1, **doc}.items() if k not in _NOT_CONTENT}
    rows = [None if t is None else t.select(sorted(t.column_names)).to_pylist()
            for t in (evals, train)]
    return json.dumps([plain, rows], sort_keys=True, default=str)


@dataclass
class MergeReport:
    """What merge_stores did: runs added, identical runs kept once, runs skipped (bad)."""

    added: int = 0
    identical: int = 0
    skipped: list[str] = field(default_factory=list)

    def summary(self, into: str) -> str:
        return (f"merged {self.added} runs into {into}; {self.identical} identical copies kept "
                f"once; {len(self.skipped)} bad runs skipped")


def _gather(stores: list[Store], report: MergeReport) -> dict[str, tuple]:
    """{run id: (doc, evals, train, its store, content)} of the runs of `stores`, each once;
    MergeConflict naming the runs held with different content under one id."""
    runs: dict[str, tuple] = {}
    conflicts = []
    for source in stores:
        for doc in source.documents(effective=True, unreadable=report.skipped):
            try:
                doc, evals, train = read_run(source, doc)
            except RunProblem as problem:
                _skip(str(source.root), str(doc.get("run_id", "?")), str(problem))
                report.skipped.append(str(doc.get("run_id", "?")))
                continue
            run_id, content = doc["run_id"], _content(doc, evals, train)
            first = runs.get(run_id)
            if first is None:
                runs[run_id] = (doc, evals, train, source, content)
            elif first[4] == content:
                report.identical += 1
            else:
                conflicts.append(f"{run_id} ({first[3].root} and {source.root})")
    if conflicts:
        n = len(conflicts)
        raise MergeConflict(f"{n} run{'s differ' if n != 1 else ' differs'} between the stores "
                            "under one run id: "
                            f"{'; '.join(conflicts[:5])}{'; ...' if len(conflicts) > 5 else ''}; "
                            "nothing was written (merge stores whose shared runs are copies)")
    return runs


def _rules(stores: list[Store]) -> dict | None:
    """The one scoring document of `stores` (None: none has one); MergeConflict if they differ."""
    rules = {json.dumps(s.scoring_config(), sort_keys=True) for s in stores
             if s.scoring_config() is not None}
    if len(rules) > 1:
        raise MergeConflict("the stores are scored by different rules (their "
                            f"{R.SCORING_DOC} differ): nothing was written")
    return json.loads(rules.pop()) if rules else None


def merge_stores(store: Store, sources: Iterable[Store]) -> MergeReport:
    """Merge the runs of `sources` into `store` (created if missing): each run once, identical
    copies kept once, a run id held with different content (here or in two sources) refused by
    name (MergeConflict) before anything is written; so are scoring rules that differ."""
    sources, report = list(sources), MergeReport()
    for source in sources:
        source.check()
    stores = ([store] if _is_store(store) else []) + sources
    rules = _rules(stores)
    runs = _gather(stores, report)
    store.ensure()
    store.remove_left_temps()  # a killed merge's
    if rules is not None and store.scoring_config() is None:
        store.write_scoring_config(rules)
    slots = TrialSlots(run[0] for run in runs.values() if run[3] is store)
    with store.sealed_batch() as batch:
        for run_id, (doc, evals, train, where, _) in sorted(runs.items()):
            if where is store:
                continue
            problem = slots.problem(doc)  # a trial slot holds one design, whatever the door
            if problem:
                _skip(str(where.root), run_id, problem)
                report.skipped.append(run_id)
                continue
            slots.add(doc)
            batch.add(doc, evals, run_id, train)
        report.added = sum(batch.publish().values())
    return report


def _is_store(store: Store) -> bool:
    try:
        store.check()
        return True
    except StoreError:
        return False


# -- Parquet ----------------------------------------------------------------------------------
def _write_table(frame, path: Path) -> None:
    """A frame as a Parquet file at `path`, atomically (a reader never sees half of it)."""
    import os

    tmp = path.with_name(f".{path.name}.tmp")
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), tmp)
    os.replace(tmp, path)


def export_parquet(store: Store, out: str | Path) -> dict[str, int]:
    """Write `out`/runs.parquet, evals.parquet and train.parquet (PARQUET_FILES) of `store`,
    which DuckDB and pandas read directly: the run table (query.runs_frame; `hparams` as JSON
    text) with each run's document as JSON text in `document`, and query's eval and training
    rows. Returns the number of rows of each."""
    from workbench import query

    store.check()
    runs = query.runs_frame(store).copy()
    docs = {d["run_id"]: d for d in store.documents(effective=True)}
    runs = runs[runs["run_id"].isin(docs.keys())].reset_index(drop=True)
    runs["hparams"] = [json.dumps(h, sort_keys=True) for h in runs["hparams"]]
    runs["document"] = [json.dumps(docs[r], sort_keys=True) for r in runs["run_id"]]
    ids = runs["run_id"].tolist()
    frames = {"runs": runs, "evals": query.evals_frame(store, ids),
              "train": query.train_frame(store, ids)}
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    for kind, frame in frames.items():
        _write_table(frame, folder / PARQUET_FILES[kind])
    return {kind: len(frame) for kind, frame in frames.items()}


def _read_parquet(folder: Path, kind: str, needed: tuple[str, ...]) -> pa.Table:
    path = folder / PARQUET_FILES[kind]
    try:
        problem = not_regular(path)  # pyarrow calls a FIFO "not found"
        if problem:
            raise UserError(f"{problem}: import-parquet reads the files `pacebench export` "
                            "writes")
        table = pq.read_table(path)
    except FileNotFoundError:
        raise FileNotFoundError(f"{path} not found: import-parquet reads a folder that "
                                "`pacebench export` wrote "
                                f"({', '.join(PARQUET_FILES.values())})") from None
    except (OSError, pa.ArrowException) as err:
        raise UserError(f"{path} is not a readable Parquet file ({str(err)[:120]})") from None
    for name in needed:
        kind_type = table.schema.field(name).type if name in table.column_names else None
        if kind_type is None or not (pa.types.is_string(kind_type)
                                     or pa.types.is_large_string(kind_type)):
            raise UserError(f"{path} has no text column {name!r}: import-parquet reads the "
                            "files `pacebench export` writes")
    return table


def _run_rows(table: pa.Table | None, run_id: str, kind: str) -> pa.Table | None:
    """The rows of run `run_id` in `table`, the columns that hold nothing for it left out."""
    if table is None:
        return None
    rows = table.filter(pc.equal(table.column("run_id"), run_id))
    if not rows.num_rows:
        return None
    keep = [c for c in rows.column_names
            if c in _REQUIRED[kind] or rows.column(c).null_count < rows.num_rows]
    return rows.select(keep)


@dataclass
class ImportReport:
    """What import_parquet did: runs imported, runs already in the store, runs skipped (bad)."""

    imported: int = 0
    existing: int = 0
    skipped: list[str] = field(default_factory=list)

    def summary(self, source: str, into: str) -> str:
        return (f"imported {self.imported} runs from {source} into {into}; {self.existing} "
                f"already there; {len(self.skipped)} bad runs skipped")


def _parsed(text: Any) -> tuple[dict | None, str | None]:
    try:
        doc = json.loads(text) if isinstance(text, str) else None
    except ValueError as err:
        return None, f"its document is not JSON ({str(err)[:80]})"
    except RecursionError:
        return None, "its document is JSON nested too deeply to read"
    return (doc, None) if isinstance(doc, dict) else (None, "its document is not a JSON object")


def import_parquet(folder: str | Path, store: Store) -> ImportReport:
    """Read the files export_parquet wrote in `folder` into `store` (created if missing), each
    run validated (a bad one skipped with a warning); a malformed file is refused in one line
    (UserError) before anything is written."""
    folder, report = Path(folder), ImportReport()
    runs = _read_parquet(folder, "runs", ("run_id", "document"))
    evals = _read_parquet(folder, "evals", ("run_id",))
    train = _read_parquet(folder, "train", ("run_id",)) \
        if (folder / PARQUET_FILES["train"]).exists() else None
    good: dict[str, tuple[dict, dict]] = {}
    for run_id, text in zip(runs.column("run_id").to_pylist(),
                            runs.column("document").to_pylist()):
        shown = str(run_id)[:80]
        doc, problem = _parsed(text)
        problem = problem or doc_problem(doc) or (
            "its document names another run id" if doc["run_id"] != run_id else None) or (
            "it is listed twice" if run_id in good else None)
        rows = {k: _run_rows(t, run_id, k) for k, t in (("evals", evals), ("train", train))} \
            if not problem else {}
        problem = problem or rows_problem(rows["evals"], "evals") or \
            rows_problem(rows["train"], "train") or run_problem(doc, rows["evals"])
        if problem:
            _skip(str(folder), shown, problem)
            report.skipped.append(shown)
            continue
        good[run_id] = (doc, rows)
    if not good and not _is_store(store):
        return report  # nothing to import: no empty store left behind
    store.ensure()
    store.remove_left_temps()  # a killed import's
    slots = TrialSlots(store.documents())  # a trial slot holds one design, whatever the door
    with store.sealed_batch() as batch:
        for run_id, (doc, rows) in good.items():
            problem = slots.problem(doc)
            if problem:
                _skip(str(folder), str(run_id)[:80], problem)
                report.skipped.append(str(run_id)[:80])
                continue
            slots.add(doc)
            if not batch.add(doc, rows["evals"], run_id, rows["train"]):
                report.existing += 1
        report.imported = sum(batch.publish().values())
    return report
