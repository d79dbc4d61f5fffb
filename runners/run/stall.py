"""The stall rule: a run that has stopped making progress towards its target.

A run whose validation metric no longer improves burns its whole budget and then reads as a miss
anyway; on a GPU that is minutes to hours of nothing. The rule, checked at evals (off the clock),
with the share of the budget used u = max(steps / step budget, training seconds / seconds budget):

- only at evals with MIN_USED (10 %) <= u <= MAX_USED (50 %), and never once the validation
  target has been met (the run's time is then known; it goes on only for the test target). The
  second half of a budget is left alone: that is where decaying schedules bring the late gains
  (on digits_mlp a heavy-ball run flat from 31 % to 53 % of its budget met its target at 72 %;
  benchmarks/stalls.py measures how often a rule flags a run that later meets its target);
- stalled when neither the validation target metric nor the validation loss has improved on its
  best for NO_PROGRESS (20 %) of the budget and FLAT_EVALS (3) evals (an improvement is a new best by more than float
  noise, FLOAT_NOISE relative; the loss counts too because a metric such as accuracy on a few
  hundred examples moves in coarse steps while the loss still falls), or
- stalled when its validation loss (the target metric when the workload has no loss) has been
  flat to float noise over the last FLAT_EVALS evals spanning at least FLAT_SPAN (5 %) of the
  budget: its parameters are not moving (a learning rate of 0, a dead network).

So a run that never improves is stopped by u = 0.2 + one eval when evals come at least every
6.7 % of the budget (the built-in workloads' come at least every 5 % of a tuned run's steps to
target), and every stall is called by u = 0.5 or not at all. A run that stops on its
target ends with status `stalled` and the reason (a miss, like `diverged`); runs that train to
their end whatever (`--no-stop-on-target`, target-setting reruns, ladder runs) record the step in
`stalled_at_step` and go on.
"""
from __future__ import annotations

import math
from typing import Mapping

from workbench.records import metric_column
from workbench.spec import Budget, Target

__all__ = ["StallRule", "MIN_USED", "MAX_USED", "NO_PROGRESS", "FLAT_SPAN", "FLAT_EVALS",
           "FLOAT_NOISE"]

MIN_USED = 0.10      # share of the budget before which no run is called stalled
MAX_USED = 0.50      # share of the budget after which no run is called stalled
NO_PROGRESS = 0.20   # share of the budget without a new best that makes a run stalled
FLAT_SPAN = 0.05     # share of the budget a flat stretch must span
FLAT_EVALS = 3       # evals a flat stretch must hold
FLOAT_NOISE = 1e-6   # relative change below which two values are the same number


def _same(a: float, b: float) -> bool:
    return abs(a - b) <= FLOAT_NOISE * max(1.0, abs(a), abs(b))


class StallRule:
    """Feed it every eval row (`check`); it says why the run has stalled, or None."""

    def __init__(self, budget: Budget, target: Target) -> None:
        self.budget, self.target = budget, target
        self.column = metric_column("validation", target.metric)
        self.loss_column = metric_column("validation", "loss")
        self.best: dict[str, float] = {}          # column -> best value so far
        self.best_used = 0.0                      # budget share at the last new best of either
        self.since_best = 0                       # evals since then
        self.flat: list[tuple[float, float]] = []  # (budget share, value) of the flat stretch

    def used(self, step: int, train_seconds: float) -> float:
        """The share of the budget used after `step` steps and `train_seconds` of training."""
        return max(step / self.budget.steps, train_seconds / self.budget.seconds)

    def check(self, row: Mapping[str, float]) -> str | None:
        """The reason the run has stalled at this eval row, or None."""
        used = self.used(row["step"], row["train_seconds"])
        value = row.get(self.column)
        if value is None or not math.isfinite(value):
            return None  # a non-finite value is divergence: the loop's rule, not this one
        directions = {self.column: self.target.direction, self.loss_column: "min"}
        self.since_best += 1
        for column, direction in directions.items():
            new, best = row.get(column), self.best.get(column)
            if new is None or not math.isfinite(new):
                continue
            if best is None or ((new > best if direction == "max" else new < best)
                                and not _same(new, best)):
                self.best[column], self.best_used, self.since_best = new, used, 0
        loss = row.get(self.loss_column)
        flat_value = loss if loss is not None and math.isfinite(loss) else value
        if self.flat and not _same(flat_value, self.flat[0][1]):
            self.flat = []
        self.flat.append((used, flat_value))
        if self.target.reached(value) or not MIN_USED - 1e-9 <= used <= MAX_USED + 1e-9:
            return None
        if used - self.best_used >= NO_PROGRESS - 1e-9 and self.since_best >= FLAT_EVALS:
            bests = ", ".join(f"{c.partition('/')[2]} {v:.6g}" for c, v in self.best.items())
            what = self.target.metric + ("" if self.target.metric == "loss" else " or loss")
            return (f"stalled: no new best of the validation {what} "
                    f"(best {bests}) for {self.since_best} evals, "
                    f"{100 * (used - self.best_used):.0f} % of the budget (step {row['step']})")
        if len(self.flat) >= FLAT_EVALS and used - self.flat[0][0] >= FLAT_SPAN - 1e-9:
            what = "loss" if self.loss_column in row else self.target.metric
            return (f"stalled: validation {what} flat at {flat_value:.6g} (to float noise) over "
                    f"the last {len(self.flat)} evals, {100 * (used - self.flat[0][0]):.0f} % "
                    f"of the budget (step {row['step']}): the parameters are not moving")
        return None
