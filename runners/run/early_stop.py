"""The early-stopping tuner: asynchronous successive halving inside the runs, no checkpoints.

`SuccessiveHalving` is a loop `should_stop` hook (`pacebench study --early-stop lcga|tse`). Rungs
sit at fractions of the step budget (default 1/9 and 1/3, eta = 3). At the first eval at or past
a rung's step, the trial computes its estimator from its own training-loss rows up to that step
(the same cutoff for every trial), records it in its early-stopping document
(records.EARLY_STOP_DIR, through the store), reads the estimates recorded at that rung by the
other trials of its group (same study, workload, algorithm, batch size and sparsity) and stops
when it is not in the best 1/eta of them (workbench.early_stopping.rung_decision). A stopped run
ends `complete` with stop_reason "pruned at rung k by <estimator>: ...", and its run document
gets `pruned: true` and `pruned_rung: k` (the record keeps the first stores' words: "pruned"
there means stopped early, not sparsity).

Estimators (lower = better): "lcga" = the LCGA fit's predicted loss at the full budget;
"tse" = TSE, the sum of window means (window = budget/50 steps) up to the rung.
"""
from __future__ import annotations

import math
from typing import Any

from workbench import curves
from workbench.early_stopping import rung_decision
from workbench.errors import UserError
from workbench.spec import RunConfig
from workbench.store import Store

__all__ = ["SuccessiveHalving", "ESTIMATORS", "DEFAULT_RUNGS", "estimate"]

ESTIMATORS = ("lcga", "tse")
DEFAULT_RUNGS = (1 / 9, 1 / 3)
WINDOWS_PER_BUDGET = 50  # TSE window = budget / 50 steps


def estimate(name: str, steps: list[float], losses: list[float], cutoff: float,
             budget_steps: int) -> float:
    """Estimator `name` from (step, loss) rows with step <= cutoff; NaN when it cannot be had."""
    rows = [(s, v) for s, v in zip(steps, losses) if s <= cutoff]
    s, v = [r[0] for r in rows], [r[1] for r in rows]
    if name == "lcga":
        return float(curves.fit_lcga(s, v).predict(float(budget_steps)))
    if name == "tse":
        window = max(1, budget_steps // WINDOWS_PER_BUDGET)
        return curves.tse(curves.window_means(s, v, window, up_to=cutoff))
    raise UserError(f"unknown early-stopping estimator {name!r}: valid are "
                    f"{', '.join(ESTIMATORS)}")


def _group(config: RunConfig) -> str:
    return f"{config.workload}|{config.algorithm}|{config.batch_size}|{config.sparsity}"


class SuccessiveHalving:
    """should_stop hook of one trial; `decision` holds (rung, reason) once it stopped the trial."""

    def __init__(self, store: Store, config: RunConfig, budget_steps: int, estimator: str = "lcga",
                 eta: int = 3, rungs: tuple[float, ...] = DEFAULT_RUNGS) -> None:
        if estimator not in ESTIMATORS:
            raise UserError(f"unknown early-stopping estimator {estimator!r}: valid are "
                            f"{', '.join(ESTIMATORS)}")
        self.store, self.config, self.estimator, self.eta = store, config, estimator, eta
        self.budget_steps = budget_steps
        self.rung_steps = [max(1, int(round(f * budget_steps))) for f in rungs]
        self.doc: dict[str, Any] = {
            "trial_key": config.trial_key, "trial": config.trial, "workload": config.workload,
            "algorithm": config.algorithm, "group": _group(config), "estimator": estimator,
            "eta": eta, "budget_steps": budget_steps, "rungs": {}, "pruned_at_rung": None,
            "reason": None}
        self.decision: tuple[int, str] | None = None

    def _write(self) -> None:
        self.store.write_early_stop_doc(self.config.study_name, self.config.trial_key, self.doc)

    def _own_rows(self, run_id: str) -> tuple[list[float], list[float]]:
        rows = self.store.live_rows(run_id, "train")
        return [float(r["step"]) for r in rows], [
            math.nan if r.get("loss") is None else float(r["loss"]) for r in rows]

    def _others(self, rung: int) -> list[float]:
        values = []
        for doc in self.store.early_stop_docs(self.config.study_name):
            entry = (doc.get("rungs") or {}).get(str(rung))
            if doc.get("trial_key") != self.config.trial_key and \
                    doc.get("group") == self.doc["group"] and entry:
                values.append(math.nan if entry.get("estimate") is None else entry["estimate"])
        return values

    def __call__(self, row: dict) -> str | None:
        for rung, rung_step in enumerate(self.rung_steps, start=1):
            if str(rung) in self.doc["rungs"] or row["step"] < rung_step:
                continue
            steps, losses = self._own_rows(row["run_id"])
            value = estimate(self.estimator, steps, losses, rung_step, self.budget_steps)
            self.doc["rungs"][str(rung)] = {"step": rung_step, "estimate": value}
            keep, rank, n = rung_decision(value, self._others(rung), self.eta)
            if not keep:
                reason = (f"pruned at rung {rung} by {self.estimator}: estimate {value:.4g} at "
                          f"step {rung_step} ranks {rank} of {n}, outside the best "
                          f"{math.ceil(n / self.eta)}")
                self.doc.update(pruned_at_rung=rung, reason=reason)
                self.decision = (rung, reason)
            self._write()
            if self.decision:
                return self.decision[1]
        return None

    def record_verdict(self, run_id: str) -> None:
        """Add `pruned`, `pruned_rung` and `prune_estimator` (stopped early, at which rung, by
        which estimator) to the finished run's document."""
        self.store.amend(run_id, pruned=self.decision is not None,
                         pruned_rung=self.decision[0] if self.decision else None,
                         prune_estimator=self.estimator)


