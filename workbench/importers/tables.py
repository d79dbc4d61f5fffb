"""Published results tables -> a Pacebench store (`pacebench import-table`).

Three kinds of foreign results, each checked row by row before anything is written:

  finals         one row per run of a model-size ladder: algorithm, rung, non_embedding_params,
                 tokens, final_loss (+ seed, train_seconds, learning_rate, hparams, study, data).
                 Each row becomes a sealed run whose ladder record (config.ladder) and one eval
                 row (its final loss, at step 0: the table gives no steps) make the store answer
                 `ladder --summary` as for a ladder Pacebench ran. A budget is
                 tokens / (20 x non_embedding_params).
  evals          one row per eval: algorithm, workload, run, step and the target's metric column
                 (+ seed, study, trial, train_seconds, wall_seconds, other metric columns
                 `<split>/<metric>`, and hyperparameter columns, constant within a run). Each run
                 becomes a sealed run with the target given at import (`--target
                 'validation/loss<=3.28'`); without a study column each run is a study of one
                 trial under the self-tuning ruleset, so n seeds are n studies.
  speedrun-logs  a folder of `*.txt` logs: importers/speedrun.py reads them into eval rows,
                 checked and written here as an eval table's.

Every run records where it came from (run.json `origin`: kind, name, file, sha256 of the file,
first row; `source` "table"). Importing the same table twice adds nothing (run ids come from the
import's name and each run's key). A bad row is one TableError line naming the file, the row
(1-based, data rows), the column and what is valid; nothing is written then. The runs are written
through the same checks as every other door into a store (workbench.transfer.doc_problem and
rows_problem, workbench.validate.run_problem).
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

import numpy as np
import pandas as pd

from workbench import records as R
from workbench.digest import file_sha256
from workbench.errors import UserError
from workbench.ladder import budget_text
from workbench.spec import NAME
from workbench.store import Store, open_store

__all__ = ["KINDS", "FINALS_REQUIRED", "FINALS_OPTIONAL", "EVALS_REQUIRED", "EVALS_OPTIONAL",
           "TableError", "TableImport", "read_table", "parse_target", "finals_runs",
           "evals_runs", "write_runs", "import_table"]

KINDS = ("finals", "evals", "speedrun-logs")
FINALS_REQUIRED = ("algorithm", "rung", "non_embedding_params", "tokens", "final_loss")
FINALS_OPTIONAL = ("seed", "train_seconds", "learning_rate", "hparams", "study", "data")
EVALS_REQUIRED = ("algorithm", "workload", "run", "step")  # and the target's metric column
EVALS_OPTIONAL = ("seed", "study", "trial", "train_seconds", "wall_seconds")
TOKENS_PER_PARAM = 20   # Chinchilla's tokens per non-embedding parameter: budget 1
MAX_TEXT = 200          # characters of a rung label, a run id or a data name
MAX_ROWS = 5_000_000    # rows of one table
_SUFFIXES = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet", ".jsonl": "json",
             ".ndjson": "json", ".json": "json"}
_TARGET = re.compile(r"\s*([A-Za-z0-9_./-]+)\s*(<=|>=)\s*([-+0-9.eE]+)\s*")


class TableError(UserError):
    """A table, a row or a log that cannot be imported: one line saying where and what is
    valid."""


# -- reading ---------------------------------------------------------------------------------
def _regular(path: Path) -> Path:
    """`path` when it is a regular file (a FIFO or device is never opened)."""
    try:
        mode = os.stat(path).st_mode
    except OSError as e:
        raise TableError(f"{path}: cannot be read ({e.strerror}); give a CSV, Parquet or JSON "
                         "lines file") from None
    if not stat.S_ISREG(mode):
        raise TableError(f"{path}: not a regular file; give a CSV, Parquet or JSON lines file")
    return path


def read_table(path: str | os.PathLike) -> pd.DataFrame:
    """The rows of a CSV (.csv), Parquet (.parquet, .pq) or JSON lines (.jsonl, .ndjson, .json)
    file, as read; TableError in one line when it cannot be read."""
    path = _regular(Path(path))
    kind = _SUFFIXES.get(path.suffix.lower())
    if kind is None:
        raise TableError(f"{path}: unknown file type {path.suffix!r}; valid are "
                         f"{', '.join(sorted(_SUFFIXES))}")
    try:
        if kind == "csv":
            frame = pd.read_csv(path, dtype=object, keep_default_na=False, na_values=[""])
        elif kind == "parquet":
            frame = pd.read_parquet(path)
        else:
            frame = pd.read_json(path, lines=True, dtype=False)
    except Exception as e:  # a parser's many errors: one line each
        first = str(e).strip().splitlines()[0][:160] if str(e).strip() else type(e).__name__
        raise TableError(f"{path}: cannot be read as {kind} ({first})") from None
    if len(frame) > MAX_ROWS:
        raise TableError(f"{path}: {len(frame):,} rows; at most {MAX_ROWS:,} are read")
    if frame.empty:
        raise TableError(f"{path}: no rows")
    frame.columns = [str(c).strip() for c in frame.columns]
    return frame.reset_index(drop=True)


def parse_target(text: str) -> tuple[str, str, float]:
    """('validation/<metric>', 'min' | 'max', value) from 'validation/loss<=3.28'
    (`val_loss` is the speedrun logs' name of validation/loss)."""
    match = _TARGET.fullmatch(text or "")
    if not match:
        raise TableError(f"--target {text!r} is not COLUMN<=VALUE or COLUMN>=VALUE; e.g. "
                         "'validation/loss<=3.28'")
    column, op, value = match.groups()
    column = "validation/loss" if column == "val_loss" else column.lower()
    if R.split_of(column) != "validation":
        raise TableError(f"--target column {column!r} is not a validation metric; valid are "
                         "'validation/<metric>' (e.g. validation/loss) or val_loss")
    try:
        number = float(value)
    except ValueError:
        number = math.nan
    if not math.isfinite(number):
        raise TableError(f"--target value {value!r} is not a finite number")
    return column, ("min" if op == "<=" else "max"), number


# -- checking cells --------------------------------------------------------------------------
class _Rows:
    """The table being checked: cell accessors that raise TableError naming file, row, column."""

    def __init__(self, frame: pd.DataFrame, file: str) -> None:
        self.frame, self.file = frame, file

    def fail(self, row: int, column: str, value: Any, valid: str) -> TableError:
        shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
        return TableError(f"{self.file}: row {row + 1}, column {column}: {shown} is not valid; "
                          f"valid is {valid}")

    def present(self, row: int, column: str) -> bool:
        if column not in self.frame.columns:
            return False
        value = self.frame.at[row, column]
        return not (value is None or (isinstance(value, float) and math.isnan(value))
                    or value is pd.NA)

    def number(self, row: int, column: str, low: float, strict: bool, what: str) -> float:
        value = self.frame.at[row, column]
        try:
            number = float(value) if not isinstance(value, bool) else math.nan
        except (TypeError, ValueError):
            number = math.nan
        if not math.isfinite(number) or number < low or (strict and number == low):
            raise self.fail(row, column, value, what)
        return number

    def count(self, row: int, column: str, low: int, what: str) -> int:
        number = self.number(row, column, low, False, what)
        if number != int(number) or number > 2 ** 62:
            raise self.fail(row, column, self.frame.at[row, column], what)
        return int(number)

    def name(self, row: int, column: str) -> str:
        value = self.frame.at[row, column]
        if not isinstance(value, str) or not NAME.fullmatch(value):
            raise self.fail(row, column, value, "a plain name (letters, digits, '.', '_', '-', "
                            "starting with a letter or digit, at most 128 characters)")
        return value

    def text(self, row: int, column: str) -> str:
        value = self.frame.at[row, column]
        if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
            value = str(value)
        if not isinstance(value, str) or not 0 < len(value) <= MAX_TEXT or \
                any(ord(ch) < 32 or ord(ch) == 127 for ch in value):
            raise self.fail(row, column, value, f"text of 1 to {MAX_TEXT} characters without "
                            "control characters")
        return value

    def hparams(self, row: int, column: str) -> dict[str, Any]:
        value = self.frame.at[row, column]
        try:
            parsed = json.loads(value) if isinstance(value, str) else value
        except ValueError:
            parsed = None
        if not isinstance(parsed, dict) or not all(
                isinstance(k, str) and (isinstance(v, (str, bool)) or v is None or
                                        (isinstance(v, (int, float)) and math.isfinite(v)))
                for k, v in parsed.items()):
            raise self.fail(row, column, value, "a JSON object of names to numbers, text, "
                            "true/false or null")
        return dict(parsed)


def _check_columns(frame: pd.DataFrame, file: str, required: Iterable[str],
                   optional: Iterable[str], extra_ok=lambda c: False) -> None:
    required, optional = list(required), list(optional)
    lacking = [c for c in required if c not in frame.columns]
    if lacking:
        raise TableError(f"{file}: lacks column {', '.join(lacking)}; required are "
                         f"{', '.join(required)}")
    unknown = [c for c in frame.columns if c not in required + optional and not extra_ok(c)]
    if unknown:
        raise TableError(f"{file}: unknown column {unknown[0][:60]!r}; valid are "
                         f"{', '.join(required + optional)}")


# -- finals ----------------------------------------------------------------------------------
@dataclass
class TableImport:
    """What an import did (or would do): its runs, and counts."""

    kind: str
    name: str
    file: str
    runs: list[tuple[dict, "Any"]] = field(default_factory=list)  # (document, eval rows)
    imported: int = 0
    existing: int = 0
    notes: list[str] = field(default_factory=list)

    def summary(self, store: str) -> str:
        """One line: what was imported where."""
        return (f"imported {self.imported} runs from {self.file} ({self.kind} as {self.name!r}) "
                f"into {store}; {self.existing} already there")


def _origin(kind: str, name: str, path: Path, digest: str, row: int) -> dict[str, Any]:
    return {"kind": kind, "name": name, "file": path.name, "path": str(path.resolve()),
            "sha256": digest, "row": row + 1}


def _run_id(prefix: str, name: str, *key: Any) -> str:
    digest = hashlib.sha256(json.dumps([name, *key], default=str).encode()).hexdigest()[:16]
    return f"{prefix}-{name[:80]}-{digest}"


def _finals_row(rows: _Rows, i: int) -> dict[str, Any]:
    """One finals row, checked."""
    out = {"algorithm": rows.name(i, "algorithm"), "rung": rows.text(i, "rung"),
           "non_embedding_params": rows.count(i, "non_embedding_params", 1, "a whole number >= 1"),
           "tokens": rows.number(i, "tokens", 0, True, "a finite number of tokens > 0"),
           "final_loss": rows.number(i, "final_loss", 0, False, "a finite loss >= 0"),
           "seed": rows.count(i, "seed", 0, "a whole number >= 0") if rows.present(i, "seed")
           else 0,
           "train_seconds": rows.number(i, "train_seconds", 0, True, "finite seconds > 0, or "
                                        "empty") if rows.present(i, "train_seconds") else None,
           "hparams": rows.hparams(i, "hparams") if rows.present(i, "hparams") else {},
           "study": rows.name(i, "study") if rows.present(i, "study") else None,
           "data": rows.text(i, "data") if rows.present(i, "data") else None}
    if rows.present(i, "learning_rate"):
        out["hparams"]["learning_rate"] = rows.number(i, "learning_rate", 0, True,
                                                      "a finite learning rate > 0, or empty")
    return out


def _check_finals(checked: list[dict], file: str) -> None:
    """Across rows: one size per rung; one row per (rung, algorithm, tokens, seed); budgets of a
    rung that print differently."""
    sizes, seen, labels = {}, {}, {}
    for i, row in enumerate(checked):
        size = sizes.setdefault(row["rung"], (row["non_embedding_params"], i))
        if size[0] != row["non_embedding_params"]:
            raise TableError(f"{file}: row {i + 1}, column non_embedding_params: rung "
                             f"{row['rung']!r} has {row['non_embedding_params']} here and "
                             f"{size[0]} in row {size[1] + 1}; valid is one size per rung")
        key = (row["rung"], row["algorithm"], row["tokens"], row["seed"])
        if key in seen:
            raise TableError(f"{file}: row {i + 1} repeats row {seen[key] + 1} (rung, algorithm, "
                             "tokens and seed); valid is one row per run (give seeds apart)")
        seen[key] = i
        label = (row["rung"], budget_text(row["budget"]))
        other = labels.setdefault(label, row["tokens"])
        if other != row["tokens"]:
            raise TableError(f"{file}: row {i + 1}, column tokens: {row['tokens']:g} and "
                             f"{other:g} tokens both print as budget {label[1]} at rung "
                             f"{row['rung']!r}; valid are budgets 3 significant digits apart")


def finals_runs(frame: pd.DataFrame, path: Path, name: str, digest: str = "") -> list[tuple]:
    """(run document, eval rows) per row of a finals table, every row checked first."""
    import pyarrow as pa

    file = path.name
    _check_columns(frame, file, FINALS_REQUIRED, FINALS_OPTIONAL)
    rows = _Rows(frame, file)
    checked = []
    for i in range(len(frame)):
        row = _finals_row(rows, i)
        row["budget"] = row["tokens"] / (TOKENS_PER_PARAM * row["non_embedding_params"])
        checked.append(row)
    _check_finals(checked, file)
    out = []
    for i, row in enumerate(checked):
        study = row["study"] or name
        run_id = _run_id("table", study, row["rung"], row["algorithm"], row["tokens"],
                         row["seed"])
        origin = _origin("finals", name, path, digest, i)
        record = {"rung": row["rung"], "non_embedding_params": row["non_embedding_params"],
                  "params": None, "budget": row["budget"], "tokens": row["tokens"],
                  "steps": None, "data": row["data"], "phase": "final",
                  "origin": {k: origin[k] for k in ("kind", "name", "file", "row")}}
        workload = row["rung"] if NAME.fullmatch(row["rung"]) else \
            "rung-" + hashlib.sha256(row["rung"].encode()).hexdigest()[:12]  # a plain name
        doc = _doc(run_id, study, workload, row["algorithm"], row["seed"], row["hparams"],
                   origin, "imported from a finals table")
        doc.update({"study": 0, "trial": 0, "train_seconds": row["train_seconds"],
                    "config": {"ladder": record}, "ladder": record})
        evals = pa.table({"eval_index": [0], "step": [0], "examples": pa.nulls(1, pa.int64()),
                          "train_seconds": pa.array([row["train_seconds"]], pa.float64()),
                          "eval_seconds": pa.nulls(1, pa.float64()),
                          "wall_seconds": pa.nulls(1, pa.float64()),
                          "validation/loss": [row["final_loss"]]})
        out.append((doc, evals))
    return out


def _doc(run_id: str, study: str, workload: str, algorithm: str, seed: int,
         hparams: Mapping[str, Any], origin: Mapping[str, Any], why: str) -> dict[str, Any]:
    """The run document fields every imported row shares."""
    return {"run_id": run_id, "trial_key": run_id, "attempt": 1, "study_name": study,
            "workload": workload, "base_workload": workload, "variant": None,
            "algorithm": algorithm, "ruleset": None, "study": 0, "trial": 0, "seed": seed,
            "rng_seed": None, "hparams": dict(hparams), "batch_size": None,
            "status": "complete", "stop_reason": why, "hardware": None, "source": "table",
            "target_metric": None, "target_direction": None, "target_validation": None,
            "target_test": None, "budget_seconds": None, "budget_steps": None, "steps": None,
            "train_seconds": None, "wall_seconds": None, "error": None, "origin": dict(origin)}


# -- evals -----------------------------------------------------------------------------------
def _is_metric(column: str) -> bool:
    return R.split_of(column) is not None


def _eval_rows(rows: _Rows, index: list[int], columns: list[str], run: str) -> dict:
    """One run's eval columns from its rows `index`, checked: steps whole, >= 0 and
    non-decreasing; seconds finite, >= 0, non-decreasing, on every row or none; metric values
    finite (losses >= 0)."""
    out = {"step": [rows.count(i, "step", 0, "a whole number of steps >= 0") for i in index]}
    for i, (a, b) in zip(index[1:], zip(out["step"], out["step"][1:])):
        if b < a:
            raise rows.fail(i, "step", b, f"steps non-decreasing along run {run!r} (the row "
                            f"before has {a})")
    for column in ("train_seconds", "wall_seconds"):
        given = [rows.present(i, column) for i in index]
        if any(given) and not all(given):
            i = index[given.index(False)]
            raise rows.fail(i, column, None, f"seconds on every row of run {run!r} or on none")
        values = [rows.number(i, column, 0, False, "finite seconds >= 0") for i in index] \
            if any(given) else [None] * len(index)
        for i, (a, b) in zip(index[1:], zip(values, values[1:])):
            if a is not None and b < a:
                raise rows.fail(i, column, b, f"seconds non-decreasing along run {run!r}")
        out[column] = values
    for column in columns:
        low = 0 if column.endswith("loss") else -math.inf
        out[column] = [rows.number(i, column, low, False, "a finite number" +
                                   (" >= 0 (a loss)" if low == 0 else "") + ", or empty")
                       if rows.present(i, column) else None for i in index]
    return out


def _constant(rows: _Rows, index: list[int], column: str, read) -> Any:
    values = [read(i, column) if rows.present(i, column) else None for i in index]
    for i, value in zip(index, values):
        if value != values[0]:
            raise rows.fail(i, column, value, f"one value per run (its first row has "
                            f"{values[0]!r})")
    return values[0]


def evals_runs(frame: pd.DataFrame, path: Path, name: str, target: str,
               digest: str = "", kind: str = "evals",
               budget_steps: Mapping[str, int] | None = None) -> list[tuple]:
    """(run document, eval rows) per run of an eval table, every row checked first."""
    column, direction, value = parse_target(target)
    file = path.name
    if column not in frame.columns:
        raise TableError(f"{file}: lacks the target's column {column}; its metric columns are "
                         f"{', '.join(c for c in frame.columns if _is_metric(c)) or 'none'}")
    _check_columns(frame, file, EVALS_REQUIRED, EVALS_OPTIONAL, lambda c: True)
    rows = _Rows(frame, file)
    metrics = [c for c in frame.columns if _is_metric(c)]
    for c in metrics:
        try:
            R.check_row_columns([*R.EVAL_COLUMNS, c])
        except ValueError as e:
            raise TableError(f"{file}: {e}") from None
    params = [c for c in frame.columns if c not in EVALS_REQUIRED + EVALS_OPTIONAL
              and c not in metrics]
    for c in params:
        if not NAME.fullmatch(c):
            raise TableError(f"{file}: column {c[:60]!r} is not a plain name (a hyperparameter "
                             "column: letters, digits, '.', '_', '-', starting with a letter or "
                             "digit); metric columns are <split>/<metric>")
    runs: dict[str, list[int]] = {}
    for i in range(len(frame)):
        runs.setdefault(rows.text(i, "run"), []).append(i)
    return _eval_runs(rows, runs, metrics, params, (column, direction, value), path, name,
                      digest, kind, budget_steps or {})


def _eval_runs(rows: _Rows, runs: dict[str, list[int]], metrics: list[str], params: list[str],
               target: tuple, path: Path, name: str, digest: str, kind: str,
               budget_steps: Mapping[str, int]) -> list[tuple]:
    import pyarrow as pa

    has_study = "study" in rows.frame.columns
    keyed = []
    for run, index in runs.items():
        ident = {"algorithm": _constant(rows, index, "algorithm", rows.name),
                 "workload": _constant(rows, index, "workload", rows.name),
                 "seed": _constant(rows, index, "seed", lambda i, c: rows.count(
                     i, c, 0, "a whole number >= 0")) or 0,
                 "study": _constant(rows, index, "study", lambda i, c: rows.count(
                     i, c, 0, "a whole number >= 0")),
                 "trial": _constant(rows, index, "trial", lambda i, c: rows.count(
                     i, c, 0, "a whole number >= 0")) or 0,
                 "hparams": {p: _constant(rows, index, p, _hparam(rows)) for p in params}}
        if has_study and ident["study"] is None:
            raise rows.fail(index[0], "study", None, "a whole number >= 0 on every row (or no "
                            "study column: each run a study of one trial)")
        keyed.append((run, index, ident, _eval_rows(rows, index, metrics, run)))
    if not has_study:  # each run a study of one trial: seeds in order, then run ids
        order = sorted(keyed, key=lambda k: (k[2]["algorithm"], k[2]["workload"], k[2]["seed"],
                                             k[0]))
        counter: dict[tuple, int] = {}
        for run, _, ident, _ in order:
            key = (ident["algorithm"], ident["workload"])
            ident["study"] = counter[key] = counter.get(key, -1) + 1
    trials = pd.Series([(k[2]["algorithm"], k[2]["workload"], k[2]["study"]) for k in keyed])
    ruleset = "external" if has_study and trials.duplicated().any() else "self"
    column, direction, value = target
    out = []
    for run, index, ident, cols in keyed:
        run_id = _run_id("table", name, run)
        doc = _doc(run_id, name, ident["workload"], ident["algorithm"], ident["seed"],
                   {k: v for k, v in ident["hparams"].items() if v is not None},
                   _origin(kind, name, path, digest, index[0]), f"imported from {kind}")
        steps = max(cols["step"])
        doc.update({"study": ident["study"], "trial": ident["trial"], "ruleset": ruleset,
                    "target_metric": column.split("/", 1)[1], "target_direction": direction,
                    "target_validation": value, "steps": steps,
                    "budget_steps": budget_steps.get(run),
                    "train_seconds": _last(cols["train_seconds"]),
                    "wall_seconds": _last(cols["wall_seconds"]), "origin_run": run})
        evals = pa.table({"eval_index": list(range(len(index))), "step": cols["step"],
                          "examples": pa.nulls(len(index), pa.int64()),
                          "train_seconds": pa.array(cols["train_seconds"], pa.float64()),
                          "eval_seconds": pa.nulls(len(index), pa.float64()),
                          "wall_seconds": pa.array(cols["wall_seconds"], pa.float64()),
                          **{c: pa.array(cols[c], pa.float64()) for c in metrics}})
        out.append((doc, evals))
    return out


def _hparam(rows: _Rows):
    def read(i: int, column: str) -> Any:
        value = rows.frame.at[i, column]
        if isinstance(value, (bool, np.bool_)):
            return bool(value)
        try:
            number = float(value)
        except (TypeError, ValueError):
            return rows.text(i, column)
        if not math.isfinite(number):
            raise rows.fail(i, column, value, "a finite number or text")
        return int(number) if number == int(number) and "." not in str(value) else number
    return read


def _last(values: list) -> float | None:
    return values[-1] if values and values[-1] is not None else None


# -- writing ---------------------------------------------------------------------------------
def write_runs(store: Store, runs: list[tuple[dict, Any]], report: TableImport,
               before_writing=None) -> None:
    """Check every run as every door into a store does (transfer.doc_problem, rows_problem,
    validate.run_problem),
    then write the new ones in one SealedBatch. A run id already there must hold the same
    import's row (same origin file hash and row), else TableError; nothing is written then."""
    from workbench.transfer import doc_problem, rows_problem
    from workbench.validate import run_problem

    new = []
    for doc, evals in runs:
        problem = doc_problem({**doc, "schema_version": R.SCHEMA_VERSION}) or \
            rows_problem(evals, "evals") or run_problem(doc, evals)
        if problem:
            raise TableError(f"{report.file}: row {doc['origin']['row']}: {problem}")
        if store.run_path(doc["run_id"]).exists():
            _same_origin(store, doc, report.file)
            report.existing += 1
        else:
            new.append((doc, evals))
    if not new:
        return
    if before_writing is not None:
        before_writing()
    store.ensure()
    with store.sealed_batch() as batch:
        for doc, evals in new:
            batch.add(doc, evals, doc["run_id"])
        added = batch.publish()
    report.imported += sum(bool(v) for v in added.values())
    report.existing += sum(not v for v in added.values())
    from workbench.run_index import refresh_index

    refresh_index(store)


def _same_origin(store: Store, doc: Mapping[str, Any], file: str) -> None:
    try:
        held = store.run_doc(doc["run_id"]).get("origin") or {}
    except (KeyError, ValueError, OSError):
        held = {}
    mine = doc["origin"]
    if (held.get("sha256"), held.get("row")) != (mine["sha256"], mine["row"]):
        raise TableError(f"{file}: row {mine['row']}: the store already holds run "
                         f"{doc['run_id']} from another table ({held.get('file')!r} row "
                         f"{held.get('row')}); import this one under another --name")


def import_table(path: str | os.PathLike, store: Store | str | os.PathLike, kind: str,
                 name: str | None = None, target: str | None = None,
                 algorithm: str | None = None, before_writing=None) -> TableImport:
    """Import the table (or, for speedrun-logs, the folder) at `path` into `store`: see the
    module doc. `name` (default: the file's stem, or the folder's name) names the import:
    the study name of its runs. Every row is checked before anything is written
    (`before_writing`, when given, is called once the checks passed and writing begins)."""
    if kind not in KINDS:
        raise TableError(f"unknown kind {kind!r}; valid are {', '.join(KINDS)}")
    path = Path(path)
    name = name if name is not None else re.sub(r"[^A-Za-z0-9._-]", "_", path.stem)[:128]
    if not NAME.fullmatch(name or ""):
        raise TableError(f"--name {name!r} is not a plain name (letters, digits, '.', '_', '-', "
                         "starting with a letter or digit); give --name")
    if kind != "evals" and kind != "speedrun-logs" and target is not None:
        raise TableError("--target goes with --kind evals or speedrun-logs (finals tables have "
                         "no target)")
    if kind != "speedrun-logs" and algorithm is not None:
        raise TableError("--algorithm goes with --kind speedrun-logs (tables name theirs in an "
                         "algorithm column)")
    if kind in ("evals", "speedrun-logs") and target is None:
        raise TableError(f"--kind {kind} needs --target, e.g. --target 'validation/loss<=3.28'")
    report = TableImport(kind, name, str(path))
    if kind == "speedrun-logs":
        from workbench.importers.speedrun import log_rows

        frame, budgets = log_rows(path, name, algorithm)
        report.runs = evals_runs(frame, path, name, target, kind=kind, budget_steps=budgets)
    else:
        frame = read_table(path)
        digest = file_sha256(path)
        report.runs = finals_runs(frame, path, name, digest) if kind == "finals" else \
            evals_runs(frame, path, name, target, digest)
    if kind != "finals" and all(d.get("train_seconds") is None for d, _ in report.runs):
        report.notes.append("the runs give no seconds: score and compare them on the steps "
                            "axis (--time-axis steps)")
    store = store if isinstance(store, Store) else open_store(store, create=True)
    write_runs(store, report.runs, report, before_writing)
    return report
