"""Early stopping and early ranking: how well early estimates rank a study's runs, the tuner's
rung decisions, and the compute it saved.

The tuner (runners/run/early_stop.py) is asynchronous successive halving inside the runs: at a rung
(a fraction of the step budget) a trial compares its own early estimate with those recorded at the
same rung by the other trials of its group, and stops when it is not in the best 1/eta of them.
This module holds the pure decision rule and reads the tuner's records back (through the store),
so the analysis side can say how much compute early stopping saved without importing the
training side. Early ranking (ranking_tables) measures, per study group, how well each loss-curve
estimator computed on a fraction of the budget ranks the runs by their final validation metric
(workbench.curves computes the estimators); `pacebench rank` and the dashboard's Early ranking
tab show it.
"""
from __future__ import annotations

import math
from typing import Any, Iterator, Mapping, Sequence

import pandas as pd

from workbench import curves, query
from workbench import records as R
from workbench.errors import UserError
from workbench.store import Store

__all__ = ["rung_decision", "compute_saved", "study_summary", "write_study_summary",
           "RANKED", "GROUP_KEYS", "MIN_RUNS", "ranked_groups", "final_values", "ranking_table",
           "ranking_tables", "saved_frame"]

MIN_RUNS = 3  # fewer ranked runs in a group give no rank correlation
# What a run must be to be ranked: complete, and from our runner (the only runs with per-step
# training loss; imported logs have evals only). A group is one study's workload and algorithm.
RANKED = {"status": "complete", "source": "pacebench"}
GROUP_KEYS = ["study_name", "workload", "algorithm"]


def rung_decision(own: float, others: Sequence[float], eta: int = 3,
                  min_trials: int | None = None) -> tuple[bool, int, int]:
    """(keep, rank, n): keep the trial at a rung when its estimate (lower = better) is among the
    best ceil(n / eta) of the n finite estimates seen there (its own included).

    Fewer than `min_trials` (default eta) finite estimates, or a non-finite own estimate, always
    keep: the tuner never stops a run on too little evidence. rank is 1-based (1 = best).
    """
    if eta < 2:
        raise UserError(f"eta must be >= 2, got {eta}")
    seen = [v for v in others if v is not None and math.isfinite(v)]
    if own is None or not math.isfinite(own):
        return True, 0, len(seen)
    n = len(seen) + 1
    rank = 1 + sum(v < own for v in seen)
    if n < (eta if min_trials is None else min_trials):
        return True, rank, n
    return rank <= math.ceil(n / eta), rank, n


def compute_saved(runs: pd.DataFrame, pruned_keys: set[str]) -> dict[str, float]:
    """Compute spent and saved by early stopping over `runs` (one row per trial: trial_key,
    steps, train_seconds, budget_steps; `pruned_keys`: the trials stopped early). A stopped
    trial's full cost is projected from its own rate:
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


def study_summary(store: Store, study_name: str,
                  runs: pd.DataFrame | None = None) -> dict[str, Any]:
    """Per (workload, algorithm) of a study: compute spent/saved by early stopping and the best
    trial. `runs`: the store's run table when the caller has it (else it is read)."""
    from workbench.cubes import select_attempts

    runs = query.runs_frame(store) if runs is None else runs
    runs = select_attempts(runs[runs["study_name"] == study_name])
    docs = {d["trial_key"]: d for d in store.early_stop_docs(study_name)}
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
    """study_summary plus `extra`, written as the study's summary document; returns it."""
    doc = {**study_summary(store, study_name), **(extra or {})}
    store.write_study_summary(study_name, doc)
    return doc


# -- early ranking -----------------------------------------------------------------------------
def ranked_groups(runs: pd.DataFrame) -> Iterator[tuple[tuple, pd.DataFrame]]:
    """(key, runs) of each group (GROUP_KEYS) of `runs` with MIN_RUNS or more RANKED runs."""
    done = runs[(runs["status"] == RANKED["status"]) & (runs["source"] == RANKED["source"])]
    for key, group in done.groupby(GROUP_KEYS, sort=True):
        if len(group) >= MIN_RUNS:
            yield key, group


def final_values(group: pd.DataFrame, evals: pd.DataFrame) -> pd.Series:
    """run_id -> the validation target metric at the run's last eval."""
    column = R.metric_column("validation", group["target_metric"].iloc[0])
    rows = evals[evals["run_id"].isin(group["run_id"])].sort_values("step")
    return rows.groupby("run_id")[column].last() if column in rows else pd.Series(dtype=float)


def ranking_table(group: pd.DataFrame, evals: pd.DataFrame, train: pd.DataFrame,
                  fractions: tuple[float, ...] = curves.DEFAULT_FRACTIONS) -> pd.DataFrame:
    """curves.early_ranking_table of one group's runs, from their eval and training-loss rows."""
    return curves.early_ranking_table(train, final_values(group, evals),
                                      group["target_direction"].iloc[0], fractions=fractions,
                                      budget_steps=float(group["budget_steps"].max()))


def ranking_tables(store: Store, runs: pd.DataFrame,
                   fractions: tuple[float, ...] = curves.DEFAULT_FRACTIONS
                   ) -> dict[tuple, pd.DataFrame]:
    """(study_name, workload, algorithm) -> ranking_table of each ranked group of `runs`."""
    out = {}
    for key, group in ranked_groups(runs):
        ids = list(group["run_id"])
        out[key] = ranking_table(group, query.evals_frame(store, ids),
                                 query.train_frame(store, ids), fractions)
    return out


def saved_frame(store: Store, study_names, runs: pd.DataFrame | None = None) -> pd.DataFrame:
    """Compute spent and saved by early stopping per study group (empty when no study stopped
    trials early). `runs`: the store's run table when the caller has it."""
    rows = []
    for name in study_names:
        if not store.early_stop_docs(name):  # not tuned with early stopping
            continue
        summary = study_summary(store, name, runs)
        if not summary["estimators"]:
            continue
        for g in summary["groups"]:
            rows.append({"study": name, "workload": g["workload"], "algorithm": g["algorithm"],
                         "estimator": ", ".join(summary["estimators"]), "trials": g["trials"],
                         "stopped early": g["pruned"], "train s spent": g["spent_train_seconds"],
                         "train s saved": g["saved_train_seconds"],
                         "saved %": 100 * g["saved_fraction_seconds"],
                         "best trial": (g["best"] or {}).get("trial")})
    return pd.DataFrame(rows)
