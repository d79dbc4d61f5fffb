"""A model-size ladder's run records: the `config.ladder` value each ladder run's document
carries, checked (`record_problem`), and the frames workbench.ladder analyses, built from the
run table, those records and each run's final eval row (`finals_frame`, `sweep_frame`).
"""
from __future__ import annotations

import math
from typing import Any, Callable, Mapping

import pandas as pd

__all__ = ["FINAL_COLUMNS", "SWEEP_COLUMNS", "LOSS_COLUMN", "MAX_NAME", "record_problem",
           "finals_frame", "sweep_frame"]

# Columns of the frame the analysis reads: one row per run.
FINAL_COLUMNS = (
    "run_id", "rung", "non_embedding_params", "params", "algorithm", "budget",  # budget: x 20
    "tokens",          # planned training tokens D                            # tokens/param
    "seed", "final_loss",  # the last eval row's validation loss
    "train_seconds",   # accumulated train seconds at that eval
    "status", "early",  # early: read before its schedule ended (step < planned, or not complete)
    "repeated_tokens", "transfer", "tuning_trials",
)
# Columns of a ladder's sweep runs (phase "tuning"): one row per run (`sweep_frame`).
SWEEP_COLUMNS = ("run_id", "rung", "algorithm", "hparams", "status", "final_loss", "study_name")
LOSS_COLUMN = "validation/loss"  # the eval rows' column whose last value is a run's final loss


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and \
        math.isfinite(value)


def _is_count(value: Any, low: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= low


MAX_NAME = 200  # characters of a rung name, a transfer rule or a reference


def _is_name(value: Any) -> bool:
    return isinstance(value, str) and 0 < len(value) <= MAX_NAME


# A ladder record's keys (runners/procedures/ladder.py writes them into the run's config.ladder): what
# each must be, and whether it may be missing or null.
_RECORD_RULES: dict[str, tuple[Callable[[Any], bool], str, bool]] = {
    "rung": (_is_name, f"a name of 1 to {MAX_NAME} characters", False),
    "non_embedding_params": (lambda v: _is_count(v, 1), "a whole number >= 1", False),
    "params": (lambda v: _is_count(v, 1), "a whole number >= 1", True),
    "budget": (lambda v: _is_number(v) and v > 0, "a number > 0 (a multiple of Chinchilla's "
               "20 tokens per non-embedding parameter)", False),
    "tokens": (lambda v: _is_number(v) and v > 0, "a number of tokens > 0", False),
    "steps": (lambda v: _is_count(v, 1), "a whole number of steps >= 1", True),
    "repeated_tokens": (lambda v: isinstance(v, bool), "true or false", True),
    "transfer": (_is_name, f"a rule's name of 1 to {MAX_NAME} characters", True),
    "tuning_trials": (lambda v: _is_count(v, 0), "a whole number >= 0", True),
    "phase": (_is_name, "a name", True),
    "reference": (_is_name, f"a name of 1 to {MAX_NAME} characters", True),
    "eval_windows": (lambda v: _is_count(v, 1), "a whole number of windows >= 1", True),
}


def record_problem(record: Any) -> str | None:
    """Why a run's ladder record (config.ladder) cannot be read, in one line saying what is
    valid; None when it can. Unknown keys are ignored (a newer runner may add some)."""
    if not isinstance(record, Mapping):
        return f"its ladder record is {type(record).__name__}, not an object"
    for key, (valid, what, optional) in _RECORD_RULES.items():
        value = record.get(key)
        if value is None and optional:
            continue
        if not valid(value):
            shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
            return f"its ladder record's {key} is {shown}; valid is {what}"
    return None


def finals_frame(runs: pd.DataFrame, records: Mapping[str, Any], last: pd.DataFrame,
                 loss_column: str) -> tuple[pd.DataFrame, dict[str, str]]:
    """(FINAL_COLUMNS, one row per final ladder run; {run_id: why it was skipped}) from the run
    table `runs`, the runs' ladder records ({run_id: config.ladder}) and their last eval rows
    `last` (run_id, step, train_seconds, `loss_column`). Tuning runs (phase "tuning") are left
    out: a ladder compares its final runs. A record that fails record_problem skips its run."""
    skipped, rows = {}, []
    by_run = last.set_index("run_id") if len(last) else None
    for run in runs.itertuples(index=False):
        record = records.get(run.run_id)
        if record is None:
            continue
        problem = record_problem(record)
        if problem:
            skipped[run.run_id] = problem
            continue
        if record.get("phase") == "tuning":
            continue
        row = by_run.loc[run.run_id] if by_run is not None and run.run_id in by_run.index \
            else None
        loss = float(row[loss_column]) if row is not None else math.nan
        step = row["step"] if row is not None else None
        planned = record.get("steps")
        early = run.status != "complete" or step is None or pd.isna(step) or \
            (planned is not None and int(step) < planned)
        rows.append({
            "run_id": run.run_id, "rung": record["rung"],
            "non_embedding_params": record["non_embedding_params"],
            "params": record.get("params"), "algorithm": run.algorithm,
            "budget": float(record["budget"]), "tokens": float(record["tokens"]),
            "seed": run.seed, "final_loss": loss,
            "train_seconds": float(row["train_seconds"]) if row is not None else math.nan,
            "status": run.status, "early": bool(early),
            "repeated_tokens": bool(record.get("repeated_tokens") or False),
            "transfer": record.get("transfer"), "tuning_trials": record.get("tuning_trials"),
            "reference": record.get("reference"), "study_name": run.study_name,
            "hparams": getattr(run, "hparams", None),
            "origin": _origin_label(record.get("origin"))})
    columns = list(FINAL_COLUMNS) + ["reference", "study_name", "hparams", "origin"]
    return pd.DataFrame(rows, columns=columns), skipped


def sweep_frame(runs: pd.DataFrame, records: Mapping[str, Any], last: pd.DataFrame,
                loss_column: str) -> pd.DataFrame:
    """(SWEEP_COLUMNS, one row per sweep run: ladder phase "tuning") from the same inputs as
    finals_frame; a run whose record fails record_problem is left out (finals_frame says so)."""
    by_run = last.set_index("run_id") if len(last) else None
    rows = []
    for run in runs.itertuples(index=False):
        record = records.get(run.run_id)
        if record is None or record_problem(record) or record.get("phase") != "tuning":
            continue
        has = by_run is not None and run.run_id in by_run.index
        rows.append({"run_id": run.run_id, "rung": record["rung"], "algorithm": run.algorithm,
                     "hparams": getattr(run, "hparams", None), "status": run.status,
                     "final_loss": float(by_run.loc[run.run_id][loss_column]) if has
                     else math.nan, "study_name": run.study_name})
    return pd.DataFrame(rows, columns=list(SWEEP_COLUMNS))


def _origin_label(origin: Any) -> str | None:
    """"<kind> table <name> (<file>)" for an imported run's record origin; None for runs
    Pacebench ran (or an origin that is not an object)."""
    if not isinstance(origin, Mapping):
        return None
    kind, name, file = (str(origin.get(k, "?"))[:MAX_NAME] for k in ("kind", "name", "file"))
    return f"{kind} table {name!r} ({file})"
