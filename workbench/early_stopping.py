"""What the early-stopping tuner did: rung decisions, its per-trial records, and compute saved.

The tuner (runners/pruning.py) is asynchronous successive halving inside the runs: at a rung
(a fraction of the step budget) a trial compares its own early estimate with those recorded at the
same rung by the other trials of its group, and stops when it is not in the best 1/eta of them.
This module holds the pure decision rule and reads the records (records.PRUNING_DIR) back, so the
analysis side can say how much compute pruning saved without importing the training side.
"""
from __future__ import annotations

import json
import math
from typing import Any, Mapping, Sequence

import pandas as pd

from workbench import records as R
from workbench.store import Store, atomic_write_json

__all__ = ["rung_decision", "read_pruning_docs", "compute_saved", "study_summary",
           "write_study_summary"]


def rung_decision(own: float, others: Sequence[float], eta: int = 3,
                  min_trials: int | None = None) -> tuple[bool, int, int]:
    """(keep, rank, n): keep the trial at a rung when its estimate (lower = better) is among the
    best ceil(n / eta) of the n finite estimates seen there (its own included).

    Fewer than `min_trials` (default eta) finite estimates, or a non-finite own estimate, always
    keep: the tuner never stops a run on too little evidence. rank is 1-based (1 = best).
    """
    if eta < 2:
        raise ValueError(f"eta must be >= 2, got {eta}")
    seen = [v for v in others if v is not None and math.isfinite(v)]
    if own is None or not math.isfinite(own):
        return True, 0, len(seen)
    n = len(seen) + 1
    rank = 1 + sum(v < own for v in seen)
    if n < (eta if min_trials is None else min_trials):
        return True, rank, n
    return rank <= math.ceil(n / eta), rank, n


def read_pruning_docs(store: Store, study_name: str) -> list[dict[str, Any]]:
    """The pruning documents of one study's trials (see records.PRUNING_DIR); [] when none."""
    folder = R.pruning_path(store.root, study_name, "x").parent
    if not folder.is_dir():
        return []
    docs = []
    for path in sorted(folder.glob("*.json")):
        try:
            docs.append(json.loads(path.read_text()))
        except (json.JSONDecodeError, OSError):
            continue  # being replaced right now: atomic writes make this rare and harmless
    return docs


def compute_saved(runs: pd.DataFrame, pruned_keys: set[str]) -> dict[str, float]:
    """Compute spent and saved by pruning over `runs` (one row per trial: trial_key, steps,
    train_seconds, budget_steps). A pruned trial's full cost is projected from its own rate:
    train_seconds * budget_steps / steps. Seconds are training seconds; steps are update steps."""
    steps = runs["steps"].astype(float)
    budget = runs["budget_steps"].astype(float)
    secs = runs["train_seconds"].astype(float)
    pruned = runs["trial_key"].isin(pruned_keys).to_numpy()
    full_secs = (secs * budget / steps.where(steps > 0)).fillna(secs)
    saved_secs = float((full_secs - secs)[pruned].clip(lower=0).sum())
    saved_steps = float((budget - steps)[pruned].clip(lower=0).sum())
    spent_secs, spent_steps = float(secs.sum()), float(steps.sum())
    return {"trials": int(len(runs)), "pruned": int(pruned.sum()),
            "spent_train_seconds": spent_secs, "saved_train_seconds": saved_secs,
            "saved_fraction_seconds": saved_secs / (spent_secs + saved_secs or math.nan),
            "spent_steps": spent_steps, "saved_steps": saved_steps,
            "saved_fraction_steps": saved_steps / (spent_steps + saved_steps or math.nan)}


def _best_trial(runs: pd.DataFrame) -> dict[str, Any] | None:
    """The trial with the best best_validation (in its target direction), ties: lower trial."""
    done = runs.dropna(subset=["best_validation"])
    if not len(done):
        return None
    sign = -1.0 if done["target_direction"].iloc[0] == "max" else 1.0
    best = done.assign(_key=sign * done["best_validation"]).sort_values(["_key", "trial"]).iloc[0]
    return {"trial": int(best["trial"]), "run_id": best["run_id"],
            "best_validation": float(best["best_validation"]), "hparams": best["hparams"]}


def study_summary(store: Store, study_name: str) -> dict[str, Any]:
    """Per (workload, algorithm) of a study: compute spent/saved by pruning and the best trial."""
    from workbench.cubes import select_attempts

    runs = store.runs()
    runs = select_attempts(runs[runs["study_name"] == study_name])
    docs = {d["trial_key"]: d for d in read_pruning_docs(store, study_name)}
    pruned = {k for k, d in docs.items() if d.get("pruned_at_rung") is not None}
    groups = []
    for (workload, algorithm), group in runs.groupby(["workload", "algorithm"], sort=True):
        groups.append({"workload": workload, "algorithm": algorithm,
                       **compute_saved(group, pruned), "best": _best_trial(group),
                       "pruned_trials": sorted(int(t) for t in
                                               group[group["trial_key"].isin(pruned)]["trial"])})
    estimators = sorted({d.get("estimator") for d in docs.values()} - {None})
    return {"study_name": study_name, "estimators": estimators, "groups": groups,
            "total": compute_saved(runs, pruned) if len(runs) else None}


def write_study_summary(store: Store, study_name: str,
                        extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """study_summary plus `extra`, written to records.study_summary_path; returns it."""
    doc = {**study_summary(store, study_name), **(extra or {})}
    path = R.study_summary_path(store.root, study_name)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_json(path, doc)
    return doc
