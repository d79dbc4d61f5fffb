"""`pacebench tune`: a search space by measurement, from a log grid of short runs.

A range sweep of one hyperparameter (the learning rate by default) of one algorithm on one
workload, for an algorithm with no search space or one whose space is badly centred:

1. **Grid.** `points` values (default 7) spread evenly in log scale over `decades` (default 3)
   and centred on the algorithm's own value: the geometric centre of the hyperparameter's
   range in its own search space (a built-in's file, a plug-in's declared or file space, or the
   space derived from an optimizer's constructor, which is centred on the constructor's
   default: runners/algorithms/wrapper.py derived_search_space), or `--center`. Every other
   hyperparameter keeps the algorithm's default.
2. **Runs.** Each grid point is one run of a quarter of the workload's step budget (of
   `--max-steps` when it caps the budget) with its schedule laid over those steps
   (RunConfig.step_hint), trained to the end (no stop on target), in the store under the
   study name `tune-<algorithm>` with `phase` "tuning" in its run document (records.py), which
   every score and comparison leaves out (workbench/scope.py). A point the store already holds
   (same workload, algorithm, value, steps and execution options) is not run again.
3. **Ranking** (rank_points). The early-stopping tuner's loss-curve estimate at the end of each
   run (runners/run/early_stop.py estimate: the LCGA fit of its training-loss rows, evaluated at its
   last step: a smoothed final training loss, less noisy than one eval) ranks the points when
   it ranks reliably here: at least MIN_RELIABLE_POINTS runs with a finite estimate and a
   finite validation metric, every finished run with a finite estimate, and a Spearman rank
   correlation of at least RELIABLE_RHO between the estimate and the validation target metric
   reached (training loss and validation metric then order the grid alike: no overfitting
   and no fit failure). Otherwise the validation target metric at the run's last eval ranks
   them. Diverged and failed runs rank last.
4. **Edges.** When the best point is the lowest or the highest of the grid, the grid extends one
   decade that way (the same spacing) and the new points are run; at most MAX_EXTENSIONS times.
5. **Space.** An AlgoPerf-format search space whose range for the hyperparameter spans the
   grid points just below and just above the best (log scaling; a side with no point beyond
   the best after the extensions gets one grid step more, unmeasured, and a warning), every
   other hyperparameter as in the algorithm's own space; and a sidecar `<file>.origin.json`
   (TUNE_RECORD_KIND: the command, the store, the curve, the bracket, the file's sha256) that
   makes `--search-space NAME=FILE` record the origin "tuned" (runners/tuning.py file_origin).
"""
from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from workbench.errors import UserError
from workbench.records import DONE_STATUSES, TUNE_PREFIX, metric_column
from workbench.spec import ExecutionOptions, RunConfig
from workbench.store import Store

__all__ = ["TunePlan", "Point", "TuneResult", "log_grid", "edge_side", "rank_points",
           "bracket", "tuned_space", "plan_configs", "read_points", "run_tune", "write_space",
           "curve_table", "study_name", "DEFAULT_POINTS", "DEFAULT_DECADES", "MAX_EXTENSIONS",
           "BUDGET_FRACTION", "RELIABLE_RHO", "MIN_RELIABLE_POINTS"]

DEFAULT_POINTS = 7        # grid points
DEFAULT_DECADES = 3.0     # decades the grid spans (7 points: half a decade apart)
MAX_EXTENSIONS = 2        # times the grid extends one decade past an edge
BUDGET_FRACTION = 0.25    # of the workload's step budget, per run
RELIABLE_RHO = 0.7        # Spearman rho(estimate, metric) from which the estimate ranks
MIN_RELIABLE_POINTS = 4   # finite (estimate, metric) pairs a rank correlation needs here
ESTIMATOR = "lcga"        # runners/run/early_stop.py ESTIMATORS


def study_name(algorithm: str) -> str:
    """The study name of `pacebench tune`'s runs of `algorithm` (records.TUNE_PREFIX)."""
    return f"{TUNE_PREFIX}{algorithm}"


@dataclass(frozen=True)
class TunePlan:
    """What one sweep runs: the hyperparameter, its grid and the runs' settings."""

    workload: str
    algorithm: str
    hparam: str = "learning_rate"
    center: float = 1e-3
    points: int = DEFAULT_POINTS
    decades: float = DEFAULT_DECADES
    steps: int = 100                        # update steps per run, the schedule's horizon
    seed: int = 0                           # the runs' seed (RunConfig.seed)
    own_space: Mapping[str, Any] = field(default_factory=dict)  # the algorithm's own (AlgoPerf)
    execution: ExecutionOptions = field(default_factory=ExecutionOptions)
    algorithm_source: str | None = None     # as RunConfig's (runners/algorithms/sources.py)
    algorithm_sha256: str | None = None
    target_direction: str = "min"           # of the workload's validation target metric
    target_metric: str = "loss"

    def __post_init__(self) -> None:
        if not (math.isfinite(self.center) and self.center > 0):
            raise UserError(f"--center {self.center!r}: must be a finite number > 0 (the grid "
                            "is in log scale)")
        if self.points < 3:
            raise UserError(f"--points {self.points}: must be an integer >= 3")
        if not (math.isfinite(self.decades) and self.decades > 0):
            raise UserError(f"--decades {self.decades!r}: must be a finite number > 0")

    @property
    def step_decades(self) -> float:
        """Decades between neighbouring grid points."""
        return self.decades / (self.points - 1)


def log_grid(plan: TunePlan, low_k: int | None = None, high_k: int | None = None
             ) -> dict[int, float]:
    """{k: center x 10^(k x step)} for k in [low_k, high_k] (default: the plan's grid, k from
    -(points // 2)), to 12 significant digits: a value is the same float in every sweep of the
    same lattice (its run is found in the store again), whichever of its points is the centre."""
    low = -(plan.points // 2) if low_k is None else low_k
    high = low + plan.points - 1 if high_k is None else high_k
    return {k: float(f"{plan.center * 10 ** (k * plan.step_decades):.12g}")
            for k in range(low, high + 1)}


def extension_steps(plan: TunePlan) -> int:
    """Grid points that one decade adds past an edge (at least 1)."""
    return max(1, round(1.0 / plan.step_decades))


@dataclass
class Point:
    """One grid point's run and what ranks it."""

    k: int                       # grid index (value = center x 10^(k x step))
    value: float
    trial: int | None = None
    run_id: str | None = None
    status: str | None = None    # the run's status (None: no run recorded)
    estimate: float = math.nan   # ESTIMATOR at the run's last step (lower = better)
    metric: float = math.nan     # validation target metric at its last eval
    rank: int | None = None      # 1 = best

    def to_dict(self) -> dict[str, Any]:
        clean = (lambda v: v if isinstance(v, float) and math.isfinite(v) else None)
        return {"value": self.value, "trial": self.trial, "run_id": self.run_id,
                "status": self.status, "estimate": clean(self.estimate),
                "metric": clean(self.metric), "rank": self.rank}


def edge_side(points: Sequence[Point], best: Point) -> str | None:
    """"low" / "high" when `best` is the lowest / highest value of `points`, else None."""
    ks = [p.k for p in points]
    return "low" if best.k == min(ks) else "high" if best.k == max(ks) else None


def _spearman(a: Sequence[float], b: Sequence[float]) -> float:
    from scipy.stats import spearmanr

    rho = spearmanr(a, b).statistic
    return float(rho) if rho is not None and math.isfinite(rho) else math.nan


def rank_points(points: Sequence[Point], direction: str) -> tuple[list[Point], str, float]:
    """(points best first, "estimate" or "metric", Spearman rho of estimate and metric) under
    the module doc's rule; sets each point's `rank`. `direction`: "min" or "max" for the
    metric. Points with no finished run, or whose ranking value is not finite, come last."""
    sign = -1.0 if direction == "max" else 1.0
    done = [p for p in points if p.status in DONE_STATUSES and p.status != "diverged"]
    pairs = [p for p in done if math.isfinite(p.estimate) and math.isfinite(p.metric)]
    rho = (_spearman([p.estimate for p in pairs], [sign * p.metric for p in pairs])
           if len(pairs) >= 2 else math.nan)
    reliable = (len(pairs) >= MIN_RELIABLE_POINTS and len(pairs) == len(done)
                and rho >= RELIABLE_RHO)
    by = "estimate" if reliable else "metric"

    def key(p: Point) -> tuple:
        value = p.estimate if reliable else sign * p.metric
        usable = p in done and math.isfinite(value)
        return (not usable, value if usable else 0.0, p.k)

    ordered = sorted(points, key=key)
    for i, p in enumerate(ordered, start=1):
        p.rank = i if key(p)[0] is False else None
    return ordered, by, rho


def bracket(points: Sequence[Point], best: Point, plan: TunePlan
            ) -> tuple[float, float, list[str]]:
    """(low, high, unmeasured sides): the grid values just below and just above the best; a
    side with no grid point beyond the best gets the best moved one grid step, unmeasured."""
    values = sorted(p.value for p in points)
    below = [v for v in values if v < best.value]
    above = [v for v in values if v > best.value]
    factor = 10 ** plan.step_decades
    open_sides = [s for s, side in (("low", below), ("high", above)) if not side]
    return (below[-1] if below else best.value / factor,
            above[0] if above else best.value * factor, open_sides)


def tuned_space(own: Mapping[str, Any], hparam: str, low: float, high: float) -> dict:
    """The algorithm's own space (AlgoPerf dict) with `hparam` log-uniform over [low, high],
    in the own space's order (a hyperparameter it lacks goes last)."""
    out = {k: v for k, v in own.items()}
    out[hparam] = {"min": low, "max": high, "scaling": "log"}
    return out


def plan_configs(plan: TunePlan, values: Mapping[int, float], store: Store | None
                 ) -> dict[int, RunConfig]:
    """{k: the RunConfig of grid point k}: its trial number is that of a run the store already
    holds of the same settings (it is not run again), else the next free one of the study."""
    name = study_name(plan.algorithm)
    base = RunConfig(workload=plan.workload, algorithm=plan.algorithm, study_name=name,
                     seed=plan.seed,
                     max_steps=plan.steps, step_hint=plan.steps, stop_on_target=False,
                     phase="tuning", execution=plan.execution,
                     algorithm_source=plan.algorithm_source,
                     algorithm_sha256=plan.algorithm_sha256)
    known, used, seen = {}, set(), []
    for doc in (store.documents(study_name=name) if store is not None else ()):
        try:
            recorded = RunConfig.from_dict(doc["config"])
        except (KeyError, TypeError, ValueError):
            continue
        used.add((recorded.workload, recorded.trial))
        known.setdefault(replace(recorded, trial=0).trial_key, recorded.trial)
        seen.append(recorded.hparams.get(plan.hparam))
    out, free = {}, 0
    for k, value in sorted(values.items()):
        value = _snapped(value, seen)
        config = replace(base, hparams={plan.hparam: value})
        trial = known.get(config.trial_key)
        if trial is None:
            while (plan.workload, free) in used:
                free += 1
            trial = free
            used.add((plan.workload, trial))
        out[k] = replace(config, trial=trial)
    return out


def _snapped(value: float, recorded: Sequence[Any]) -> float:
    """A recorded value within a relative 1e-9 of `value` (the same lattice point computed
    from another centre, its last digit apart), else `value`."""
    for v in recorded:
        if isinstance(v, float) and math.isclose(v, value, rel_tol=1e-9):
            return v
    return value


def read_points(store: Store, configs: Mapping[int, RunConfig], plan: TunePlan
                ) -> list[Point]:
    """The grid points of `configs` as the store holds them: each trial's latest finished
    attempt (else its latest), its estimate and the metric at its last eval."""
    from runners.run.early_stop import estimate
    from workbench import query

    points = []
    for k, config in sorted(configs.items()):
        docs = store.attempts(config.trial_key, effective=True)
        done = [d for d in docs if d.get("status") in DONE_STATUSES]
        doc = (done or docs or [None])[-1]
        points.append(Point(k, float(config.hparams[plan.hparam]), config.trial,
                            doc and doc["run_id"], doc and doc.get("status")))
    ids = [p.run_id for p in points if p.run_id]
    if not ids:
        return points
    train, evals = query.train_frame(store, ids), query.evals_frame(store, ids)
    column = metric_column("validation", plan.target_metric)
    for p in points:
        rows = train[train["run_id"] == p.run_id]
        if len(rows):
            last = float(rows["step"].max())
            p.estimate = _finite(estimate(ESTIMATOR, rows["step"].astype(float).tolist(),
                                          rows["loss"].astype(float).tolist(), last, int(last)))
        mine = evals[evals["run_id"] == p.run_id]
        if column in mine and len(mine):
            p.metric = _finite(float(mine.sort_values("step")[column].iloc[-1]))
    return points


def _finite(value: float) -> float:
    return value if value is not None and math.isfinite(value) else math.nan


@dataclass
class TuneResult:
    """What a sweep found (see the module doc)."""

    plan: TunePlan
    points: list[Point]          # by value
    ranked_by: str               # "estimate" | "metric"
    rho: float                   # Spearman rho of estimate and metric over the grid
    best: Point
    low: float
    high: float
    open_sides: list[str]        # sides of the bracket with no measured point
    extensions: list[str]        # "low" / "high", one per extension made

    def to_dict(self) -> dict[str, Any]:
        return {"workload": self.plan.workload, "algorithm": self.plan.algorithm,
                "hparam": self.plan.hparam, "center": self.plan.center,
                "steps_per_run": self.plan.steps, "study_name": study_name(self.plan.algorithm),
                "ranked_by": self.ranked_by, "estimator": ESTIMATOR,
                "rho": self.rho if math.isfinite(self.rho) else None,
                "curve": [p.to_dict() for p in self.points], "best": self.best.value,
                "bracket": [self.low, self.high], "unmeasured_sides": list(self.open_sides),
                "extensions": list(self.extensions)}


def run_tune(plan: TunePlan, store: Store,
             launch: Callable[[list[RunConfig]], None]) -> TuneResult:
    """Run the sweep: the grid, ranked; one decade more past an edge the best lies on (at most
    MAX_EXTENSIONS times). `launch(configs)` runs the configs (into `store`); points the store
    already holds are not passed to it. UserError when no run of the grid finished."""
    values = log_grid(plan)
    extensions: list[str] = []
    while True:
        configs = plan_configs(plan, values, store)
        todo = [c for c in configs.values() if not _finished(store, c)]
        if todo:
            launch(todo)
        points = read_points(store, configs, plan)
        ranked, by, rho = rank_points(points, plan.target_direction)
        best = ranked[0]
        if best.rank is None:
            raise UserError(f"no run of the sweep of {plan.algorithm} on {plan.workload} "
                            f"finished with a value to rank (statuses: "
                            f"{', '.join(sorted({str(p.status) for p in points}))}); its "
                            f"logs are in the store under study {study_name(plan.algorithm)}")
        side = edge_side(points, best)
        if side is None or len(extensions) == MAX_EXTENSIONS:
            break
        extensions.append(side)
        ks, more = sorted(values), extension_steps(plan)
        values = {**values, **(log_grid(plan, ks[0] - more, ks[0] - 1) if side == "low"
                               else log_grid(plan, ks[-1] + 1, ks[-1] + more))}
    low, high, open_sides = bracket(points, best, plan)
    return TuneResult(plan, points, by, rho, best, low, high, open_sides, extensions)


def _finished(store: Store, config: RunConfig) -> bool:
    return any(d.get("status") in DONE_STATUSES
               for d in store.attempts(config.trial_key, effective=True))


def write_space(result: TuneResult, out: Path, command: str, store_root: Path) -> Path:
    """Write the tuned search space to `out` and its sidecar beside it (runners/tuning.py
    sidecar_path); the sidecar's path."""
    from runners.tuning import TUNE_RECORD_KIND, sidecar_path

    space = tuned_space(result.plan.own_space, result.plan.hparam, result.low, result.high)
    data = (json.dumps(space, indent=2) + "\n").encode()
    out.write_bytes(data)
    record = {"kind": TUNE_RECORD_KIND, "command": command,
              "store": str(Path(store_root).resolve()), "space_file": str(out.resolve()),
              "space_sha256": hashlib.sha256(data).hexdigest(), **result.to_dict()}
    sidecar = sidecar_path(out)
    sidecar.write_text(json.dumps(record, indent=2) + "\n")
    return sidecar


def curve_table(result: TuneResult) -> str:
    """The curve as a small text table (value, estimate, metric, status, rank) and the
    bracket, as `pacebench tune` prints it."""
    plan = result.plan
    metric = f"val {plan.target_metric}"
    lines = [f"{plan.hparam:>14}  {ESTIMATOR + ' est.':>10}  {metric:>12}  {'status':<9} rank"]
    for p in result.points:
        mark = "  <- best" if p is result.best else ""
        lines.append(f"{p.value:>14.4g}  {_num(p.estimate):>10}  {_num(p.metric):>12}  "
                     f"{str(p.status):<9} {p.rank if p.rank else '-'}{mark}")
    rho = f"{result.rho:.2f}" if math.isfinite(result.rho) else "n/a"
    why = (f"the {ESTIMATOR} estimate (rank correlation with the metric {rho} >= "
           f"{RELIABLE_RHO})" if result.ranked_by == "estimate" else
           f"the validation {plan.target_metric} (the estimate's rank correlation with it: {rho}"
           f", reliable from {RELIABLE_RHO} over {MIN_RELIABLE_POINTS}+ runs)")
    lines.append(f"ranked by {why}; {plan.steps} steps per run (schedule over them)")
    if result.extensions:
        lines.append("grid extended one decade: " + ", ".join(result.extensions))
    lines.append(f"best {plan.hparam} {result.best.value:.4g}; bracket {result.low:.4g} to "
                 f"{result.high:.4g} (log)")
    return "\n".join(lines)


def _num(value: float) -> str:
    return f"{value:.4g}" if math.isfinite(value) else "-"
