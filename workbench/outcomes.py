"""What a run's eval rows say about it: the first eval that met a goal, and its final value.

Each rule has one owner here; every reader of eval rows calls it (records.eval_summary,
scaling.first_hit_steps, runners/procedures/target_setting.py, runners/procedures/ladder.py) or is checked against
it on the same rows (the run table's SQL in workbench.query, tests/test_outcomes.py).

**The first hit** (AlgoPerf's rule, research/algoperf.md 5.1): among a run's eval rows in eval
order (ascending eval_index), the first whose value meets the goal, never the best one.
- A value meets a goal when it is finite and at least as good in the goal's direction
  ("max": value >= goal, "min": value <= goal; spec.meets): a value equal to the goal meets
  it; NaN, +inf and -inf never do.
- A row counts only when its training time is a finite time >= 0 (a row without a usable
  clock reading cannot give a time to target); where no times are given every row has one.
- Ties: eval_index is unique within a run, so the first is unique; rows with equal values
  are taken in eval order, the earlier first.
- Relax: the goal is first made easier by `relax` (spec.relaxed_goal, AlgoPerf's target
  relaxation: a "min" goal times 1 + relax, a "max" goal times 1 - relax); 0 keeps it.

**The final value**: a run's last eval row, the one with the largest eval_index (the order the
rows were written in; a step count may repeat or be missing, an eval index may not).
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from workbench.spec import meets, relaxed_goal

__all__ = ["counts_as_hit", "first_hit_positions", "first_hit", "final_rows"]


def counts_as_hit(values: Any, goal: float, direction: str, seconds: Any = None,
                  relax: float = 0.0) -> np.ndarray:
    """Elementwise: does each eval row count as meeting `goal` (module doc: a finite value as
    good as the relaxed goal, with a finite training time >= 0 where `seconds` is given)?"""
    goal = relaxed_goal(goal, direction, relax) if relax else goal
    hit = meets(values, goal, direction)
    if seconds is not None:
        seconds = np.asarray(seconds, dtype=float)
        with np.errstate(invalid="ignore"):
            hit = hit & np.isfinite(seconds) & (seconds >= 0)
    return hit


def first_hit_positions(values: Any, goal: float, direction: str, seconds: Any = None,
                        relax: float = 0.0) -> np.ndarray:
    """The first hit (module doc) along the last axis of `values` (..., evals in eval order;
    `seconds` the same shape or None): its position, -1 where no row counts."""
    hit = np.atleast_1d(counts_as_hit(values, goal, direction, seconds, relax))
    if hit.shape[-1] == 0:  # no evals at all
        return np.full(hit.shape[:-1], -1, dtype=np.int64)
    first = np.argmax(hit, axis=-1)
    return np.where(hit.any(axis=-1), first, -1)


def first_hit(values: Any, goal: float, direction: str, seconds: Any = None,
              relax: float = 0.0) -> int | None:
    """The first hit of one run: the position, among its rows in eval order (ascending
    eval_index), of the first row whose value meets `goal` relaxed by `relax`, or None.

    The rule, once (module doc): a value meets the goal when finite and at least as good in
    `direction` ("max": >=, "min": <=; equal meets, NaN and +-inf never do); a row counts only
    with a finite training time >= 0 in `seconds` (when given); rows with equal values are
    taken in eval order (the earlier first); `relax` makes the goal easier by
    spec.relaxed_goal first (0: unchanged)."""
    position = int(first_hit_positions(np.asarray(values, dtype=float).ravel(), goal, direction,
                                       None if seconds is None else
                                       np.asarray(seconds, dtype=float).ravel(), relax))
    return None if position < 0 else position


def final_rows(evals: pd.DataFrame) -> pd.DataFrame:
    """Each run's final eval row (module doc: its largest eval_index), one row per run_id of
    `evals` (eval rows with run_id and eval_index), in run_id order."""
    ordered = evals.sort_values(["run_id", "eval_index"], kind="stable")
    return ordered.groupby("run_id", sort=False).tail(1).reset_index(drop=True)
