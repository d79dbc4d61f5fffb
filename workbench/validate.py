"""What every door into a store checks (DESIGN.md, "Hostile input"): the rows and records a run
brings could have been measured. `merge`, `import-parquet` and `--reuse-from`
(workbench/transfer.py, through run_problem) and the AlgoPerf import
(workbench/importers/algoperf.py, through eval_rows_problem) refuse a run that breaks a rule,
in one line naming the rule, and write nothing of it. TrialSlots keeps one design per trial
slot for merge and import-parquet, by the checks `--resume` makes (design_differences).

The rules, along a run's eval rows in eval order (a missing value, null or NaN, is not checked):
- steps and the training, evaluation and wall seconds are finite and >= 0;
- none of them ever decreases from one eval to the next;
- wall seconds >= training seconds on each row (the wall clock runs while the training clock
  does; WALL_SLACK_S allows for the two timers' rounding);
- metric values are finite (inf is no measurement, but in a run that diverged); losses
  (`<split>/loss`, `<split>/*_loss`) are >= 0; accuracies and other fractions
  (FRACTION_METRICS, `*accuracy*`) lie in [0, 1];
- a complete ladder run's recorded tokens are its planned steps times its tokens per step
  (batch size x the rung's context), within one step's tokens (ladder_problem).
"""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from workbench import records as R

__all__ = ["eval_rows_problem", "metric_problem", "ladder_problem", "run_problem", "TrialSlots",
           "design_differences", "slot_of", "PLACE",
           "CLOCK_COLUMNS", "FRACTION_METRICS", "WALL_SLACK_S"]

# The clocks of an eval row, in the order they are checked.
CLOCK_COLUMNS = ("step", "train_seconds", "eval_seconds", "wall_seconds")
# Metrics that are fractions, besides any whose name holds "accuracy" (AlgoPerf's ssim and wer
# are not: ssim can be negative, a word error rate above 1).
FRACTION_METRICS = frozenset({"error_rate", "mean_average_precision"})
WALL_SLACK_S = 1e-3  # seconds: wall may read this much below training time (timer rounding)


def _values(column: Any) -> np.ndarray:
    """A column (Arrow array, list, numpy) as floats, nulls as NaN."""
    if hasattr(column, "to_numpy") and not isinstance(column, np.ndarray):
        column = column.to_numpy(zero_copy_only=False)
    return np.asarray([np.nan if v is None else v for v in column] if
                      getattr(column, "dtype", None) == object else column, dtype=float)


def _clock_problem(name: str, values: np.ndarray, log: np.ndarray, shown: str) -> str | None:
    given = ~np.isnan(values)
    values, same_log = values[given], np.diff(log[given]) == 0
    if not np.isfinite(values).all() or (values < 0).any():
        return (f"column {shown!r} holds a negative or infinite value; steps and times are "
                "finite and >= 0")
    falls = np.flatnonzero((np.diff(values) < 0) & same_log)
    if len(falls):
        return (f"column {shown!r} decreases (from {values[falls[0]]:g} to "
                f"{values[falls[0] + 1]:g}); steps and times never go back along the evals")
    return None


def metric_problem(column: str, values: Any, diverged: bool = False) -> str | None:
    """Why the values of metric column `column` (`<split>/<metric>`) could not have been
    measured (None when they could): see the module doc. `diverged`: the run diverged, and an
    infinite value is what it measured (it never meets a target)."""
    values = _values(values)
    metric = column.split("/", 1)[-1].lower()
    given = values[~np.isnan(values)]
    if diverged:
        given = given[np.isfinite(given)]
    if np.isinf(given).any():
        return f"metric {column!r} holds an infinite value; metrics are finite (or missing)"
    if (metric == "loss" or metric.endswith("_loss")) and (given < 0).any():
        return f"metric {column!r} holds {given.min():g}; losses are >= 0"
    if ("accuracy" in metric or metric in FRACTION_METRICS) and \
            ((given < 0).any() or (given > 1).any()):
        bad = given[(given < 0) | (given > 1)][0]
        return f"metric {column!r} holds {bad:g}; a fraction lies in [0, 1]"
    return None


def eval_rows_problem(columns: Mapping[str, Any], log: Any = None,
                      names: Mapping[str, str] | None = None,
                      diverged: bool = False) -> str | None:
    """Why eval rows could not have been measured (None when they could), by the rules of the
    module doc. `columns`: {column name: values in eval order} (Arrow arrays, lists or numpy;
    null or NaN: not given), the clocks of CLOCK_COLUMNS and any `<split>/<metric>` columns;
    `log`: each row's log where several logs are checked at once (clocks restart at each);
    `names`: how to name our clock columns in the message (a foreign log's own names);
    `diverged`: the run diverged (its metrics may be infinite: metric_problem)."""
    names = names or {}
    clocks = {c: _values(columns[c]) for c in CLOCK_COLUMNS if c in columns}
    n = len(next(iter(clocks.values()))) if clocks else 0
    log = np.zeros(n, dtype=np.int64) if log is None else np.asarray(log)
    for name, values in clocks.items():
        problem = _clock_problem(name, values, log, names.get(name, name))
        if problem:
            return problem
    if "train_seconds" in clocks and "wall_seconds" in clocks:
        train, wall = clocks["train_seconds"], clocks["wall_seconds"]
        below = np.flatnonzero(wall < train - WALL_SLACK_S)  # NaN compares False: not given
        if len(below):
            i = below[0]
            return (f"column {names.get('wall_seconds', 'wall_seconds')!r} is below "
                    f"{names.get('train_seconds', 'train_seconds')!r} at eval {i} ({wall[i]:g} < "
                    f"{train[i]:g}); the wall clock runs whenever the training clock does")
    for column in sorted(c for c in columns if R.split_of(c)):
        problem = metric_problem(column, columns[column], diverged)
        if problem:
            return problem
    return None


def ladder_problem(doc: Mapping[str, Any]) -> str | None:
    """Why a complete ladder run's record could not be (None when it could, or the run is no
    complete ladder run, or its rung is not a catalog workload): its recorded tokens must be
    its planned steps times batch size times the rung's context, within one step's tokens."""
    config = doc.get("config")
    ladder = config.get("ladder") if isinstance(config, Mapping) else None
    if doc.get("status") != "complete" or not isinstance(ladder, Mapping):
        return None
    if ladder.get("origin") is not None:  # an imported table's row: no steps or schedule to check
        return None
    from workbench.catalog import get_workload

    try:
        block = int(get_workload(str(doc.get("workload"))).model["block_size"])
        tokens, steps = float(ladder["tokens"]), float(ladder["steps"])
        batch = float(doc.get("batch_size") or config.get("batch_size"))
    except (KeyError, TypeError, ValueError, AttributeError):
        return None  # not a rung we know, or no numbers to compare: ladder.finals_frame says
    per_step = batch * block
    if not abs(tokens - steps * per_step) <= per_step:
        return (f"its ladder record says {tokens:g} tokens for {steps:g} steps of {per_step:g} "
                "tokens: a complete ladder run's tokens are its steps x batch size x context")
    return None


def run_problem(doc: Mapping[str, Any], evals: "pa.Table | None") -> str | None:  # noqa: F821
    """Why a run (its document and its eval rows, an Arrow table) may not enter a store by any
    door (None when it may): eval_rows_problem of its rows in eval order, then ladder_problem."""
    if evals is not None and evals.num_rows:
        if "eval_index" in evals.column_names and evals.column("eval_index").null_count == 0:
            import pyarrow.compute as pc

            evals = evals.take(pc.sort_indices(evals.column("eval_index")))
        problem = eval_rows_problem({c: evals.column(c) for c in evals.column_names},
                                    diverged=doc.get("status") == "diverged")
        if problem:
            return f"its eval rows: {problem}"
    return ladder_problem(doc)


# -- one design per trial slot ---------------------------------------------------------------
PLACE = ("workload", "algorithm", "ruleset", "study", "trial", "seed")  # a trial's slot in a study


def slot_of(config: "RunConfig") -> tuple:  # noqa: F821
    """The trial slot of `config` (its study name and PLACE)."""
    return (config.study_name, *(getattr(config, k) for k in PLACE))


def design_differences(old: "RunConfig", new: "RunConfig",  # noqa: F821
                       execution_may_differ: bool = False) -> list[tuple[str, Any, Any]]:
    """What makes `new` another design than `old`, in the same slot: [] when the two are one
    trial (one trial key: more trials per study, or another thread count, change nothing), or
    when they differ in execution options only and `execution_may_differ`; else the fields that
    differ, (field, old value, new value) (RunConfig.differences)."""
    from dataclasses import replace

    if old.trial_key == new.trial_key:
        return []
    if execution_may_differ and replace(new, execution=old.execution).trial_key == old.trial_key:
        return []
    return old.differences(new) or [("trial_key", old.trial_key, new.trial_key)]


def _config(doc: Mapping[str, Any]) -> "RunConfig | None":  # noqa: F821
    """The RunConfig a run document records, or None (imported runs have none)."""
    from workbench.spec import RunConfig

    try:
        return RunConfig.from_dict(doc["config"])
    except (KeyError, TypeError, ValueError, AttributeError):
        return None


class TrialSlots:
    """The design of each trial slot of a store (the runs' recorded configs), to refuse a run of
    another design at any door (merge, import-parquet) as `--resume` refuses a plan of one
    (runners/launch/resume.py check_same_plan, by the same design_differences). A run that differs in
    execution options only is welcome when it or the slot's runs record a mix that
    `--allow-mixed-execution` allowed (RunConfig.mixed_execution)."""

    def __init__(self, docs: Any = ()) -> None:
        self._slots: dict[tuple, tuple["RunConfig", bool]] = {}  # noqa: F821
        for doc in docs:
            self.add(doc)

    def add(self, doc: Mapping[str, Any]) -> None:
        """Count run `doc` in its slot (the first run of a slot sets its design)."""
        config = _config(doc)
        if config is not None:
            self._slots.setdefault(slot_of(config), (config, bool(config.mixed_execution)))

    def problem(self, doc: Mapping[str, Any]) -> str | None:
        """Why run `doc` may not join its slot (None when it may): the fields in which its
        design differs from the slot's runs', with their values."""
        config = _config(doc)
        found = self._slots.get(slot_of(config)) if config is not None else None
        if found is None:
            return None
        old, mixed = found
        differ = design_differences(old, config, mixed or bool(config.mixed_execution))
        if not differ:
            return None
        what = "; ".join(f"{f}: {_short(a)} in the store, {_short(b)} in this run"
                         for f, a, b in differ[:3])
        where = ", ".join(f"{k} {getattr(config, k)}" for k in PLACE)
        return (f"its trial slot (study {config.study_name}, {where}) holds runs of another "
                f"design ({what}): a slot holds one design; give this study another name")


def _short(value: Any) -> str:
    text = repr(dict(value) if isinstance(value, Mapping) else value)
    return text if len(text) <= 80 else text[:77] + "..."
