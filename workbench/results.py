"""Results: the one API over a store, whose numbers every surface shows.

    import workbench
    res = workbench.open("results/demo")
    res.runs()                         # every run attempt, status included (records.RUN_COLUMNS)
    res.score()                        # == `pacebench score --json`
    res.compare("adamw", "heavy_ball")  # == `pacebench compare --json`
    res.compare("adamw", "heavy_ball", sequential=True)  # == `compare --sequential --json`
    res.budget()                       # == `pacebench budget --json`
    res.ladder()                       # == `pacebench ladder --summary --json`
    res.tuning()                       # the tuning report (== `score --json`'s "tuning")
    res.cube(time_axis="steps")        # the final cube (xarray) the numbers come from
    res.report("reports/x.html")       # the self-contained HTML report
    res.view("Leaderboard")            # a dashboard view, inline in JupyterLab (Panel)

Every analysis method takes the scope options (workbench/scope.py): `ruleset`, `studies`,
`with_adhoc`, `time_axis` ("train", "wall" or "steps"), `exclude_compile` and `relax_targets`
(R in [0, 1): targets made easier, first hits recomputed from the eval rows), with the CLI's
defaults. The CLI's analysis commands print what these methods return, and the dashboard and the
report draw from the same functions with the same random draws (BOOTSTRAP_DRAWS and
COMPARE_DRAWS, seed 0), so a store gives one set of numbers everywhere.

Importing this module loads neither torch nor Panel; `view` and `report` load Panel.
"""
from __future__ import annotations

import json
import math
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd
import xarray as xr

from workbench import compare as C
from workbench import budget as B
from workbench import ladder as LD
from workbench import costs, query, scoring, sensitivity
from workbench import tuning as T
from workbench.catalog import median_steps_to_target, noise_floor_of
from workbench.holdings import holdings, ladder_pointer
from workbench.cubes import (AXIS_LABELS, AXIS_UNITS, axis_column, axis_name, final_cube,
                             on_time_axis)
from workbench.errors import UserError
from workbench.scope import Scope, Scoped, labelled_runs, scoped_runs
from workbench.store import Store, open_store

__all__ = ["open", "Results", "ScoreResult", "CompareResult", "BudgetResult", "LadderResult",
           "scored_names",
           "BOOTSTRAP_DRAWS", "COMPARE_DRAWS", "INTERVAL_LEVEL"]

# The draws every surface makes (seed 0); owned by scoring and compare, which the dashboard's
# views import (they cannot import this module: it loads them for `view` and `report`).
BOOTSTRAP_DRAWS = scoring.BOOTSTRAP_DRAWS  # resamplings of the studies behind score and
                                           # speedup intervals
COMPARE_DRAWS = C.BOOTSTRAP_REPLICATES  # behind a head-to-head's ratio intervals
INTERVAL_LEVEL = scoring.INTERVAL_LEVEL  # of the score and speedup intervals

_SCOPE_OPTIONS = ("ruleset", "studies", "with_adhoc", "time_axis", "exclude_compile",
                  "relax_targets")


def open(path: str | Path) -> "Results":  # noqa: A001 - workbench.open, as the user types it
    """The results of the store at `path` (a store folder; StoreError when it is not one)."""
    return Results(open_store(path))


def _scope(options: dict[str, Any]) -> Scope:
    unknown = sorted(set(options) - set(_SCOPE_OPTIONS))
    if unknown:
        raise TypeError(f"unknown option {', '.join(unknown)}: valid are "
                        f"{', '.join(_SCOPE_OPTIONS)}")
    studies = options.get("studies") or ()
    options = {**options, "studies": (studies,) if isinstance(studies, str) else tuple(studies)}
    axis = options.get("time_axis", "train")
    axis_column(axis)  # an unknown axis: one line naming the valid ones
    return Scope(**options)


class Results:
    """A store's runs and everything computed from them (see the module doc). Reads the store
    once, and again only when its contents changed (Store.signature)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._runs: pd.DataFrame | None = None
        self._finished: frozenset[str] = frozenset()  # the indexed runs: never written again
        self._signature = None

    def __repr__(self) -> str:
        return f"Results({str(self.store.root)!r})"

    # -- the data ---------------------------------------------------------------------------
    def runs(self) -> pd.DataFrame:
        """Every run attempt of the store, one row each (records.RUN_COLUMNS; `status`, and the
        runs that could not be read in `.attrs["skipped"]`)."""
        names = self.store.run_names()  # listed once: for the signatures and the read
        if self._runs is not None and \
                self.store.signature(self._finished, names) == self._signature:
            return self._runs
        # The runs of the run index have ended and are never written again (it is refreshed
        # after a launch's last write): the signature looks only at the others (a stat of each
        # of the v0.5 store's 3,700 runs took 0.1 s), and the read takes the index as it is.
        index = query.read_index(query.connect(), self.store)
        self._finished = frozenset(index[0]["run_id"].tolist())
        self._signature = self.store.signature(self._finished, names)  # taken before the read
        self._runs = query.runs_frame(self.store, index, names)
        return self._runs

    def evals(self, run_ids: Sequence[str] | None = None) -> pd.DataFrame:
        """Eval rows of `run_ids` (default: every run), one row per eval."""
        return query.evals_frame(self.store, None if run_ids is None else list(run_ids))

    def scoped(self, **scope) -> Scoped:
        """The runs the analyses of `scope` read, and what was left out (workbench/scope.py)."""
        return scoped_runs(self.runs(), _scope(scope), self._first_hits)

    def _first_hits(self, runs: pd.DataFrame, relax: float) -> pd.DataFrame:
        """query.first_hits of `runs` against targets relaxed by `relax` (eval rows read)."""
        return query.first_hits(self.store, runs, relax)

    def config(self) -> scoring.ScoringConfig | None:
        """The store's scoring rules (an AlgoPerf import's), or None: the plain rules."""
        doc = self.store.scoring_config()
        return scoring.ScoringConfig.from_dict(doc) if doc else None

    def cube(self, **scope) -> xr.Dataset:
        """The final cube of the scoped runs, `time_to_target` on the scope's time axis."""
        return self._cube(self.scoped(**scope), _scope(scope))

    @staticmethod
    def _cube(scoped: Scoped, scope: Scope) -> xr.Dataset:
        return on_time_axis(final_cube(scoped.runs), scope.time_axis)

    def _prepared(self, scope: dict) -> tuple[Scope, Scoped, xr.Dataset]:
        chosen = _scope(scope)
        scoped = scoped_runs(self.runs(), chosen, self._first_hits)
        if scoped.runs.empty:
            raise UserError(f"store {self.store.root} has no finished runs to analyse"
                            + (f" ({'; '.join(scoped.notes)})" if scoped.notes else ""))
        return chosen, scoped, self._cube(scoped, chosen)

    # -- the analyses -----------------------------------------------------------------------
    def score_result(self, reference: str | None = None, rank_shift: str | None = None,
                     hparams: Sequence[str] = (), **scope) -> "ScoreResult":
        """The AlgoPerf scores with their intervals, times to target and speedups, the pool
        sensitivity and eval share of wall clock, and with `rank_shift` (a time axis: "train",
        "wall" or "steps") each algorithm's rank on the scope's axis and on that one, with the
        probability of each rank (workbench/sensitivity.py), and the tuning report of every
        algorithm (`tuning`, judging the learning rate and `hparams`) (rich)."""
        T.check_hparam_names(hparams)
        if holdings(self.store, self.runs()).ladder_only:  # its zeros would be by design
            raise UserError(ladder_pointer(self.store.root))
        chosen, scoped, cube = self._prepared(scope)
        if rank_shift is not None:
            rank_shift = axis_name(rank_shift)  # an unknown axis: one line naming the valid ones
            if rank_shift == axis_name(chosen.time_axis):
                raise UserError(f"--rank-shift {rank_shift}: the scores are already on "
                                f"{rank_shift}; name another time axis (train, wall or steps)")
        config = self.config()
        column = axis_column(chosen.time_axis)
        study = scoring.study_times(cube)  # once, and one set of bootstrap draws (seed 0) for
        replicas = scoring.bootstrap_medians(study, BOOTSTRAP_DRAWS)  # the score's and the
        times = scoring.median_over_studies(study)  # speedups' intervals: each drew the same
        table = scoring.score_table_with_intervals(cube, config, n=BOOTSTRAP_DRAWS,
                                                   level=INTERVAL_LEVEL, times=study,
                                                   replicas=replicas)
        speedups = _speedups(times, config, reference, table, column, scoped.ruleset, study,
                             replicas)
        shift = None
        if rank_shift is not None:
            other_study = scoring.study_times(on_time_axis(final_cube(scoped.runs), rank_shift))
            shift = sensitivity.rank_shift(
                {axis_name(chosen.time_axis): times,
                 rank_shift: scoring.median_over_studies(other_study)},
                {axis_name(chosen.time_axis): replicas,
                 rank_shift: scoring.bootstrap_medians(other_study, BOOTSTRAP_DRAWS)}, config)
        return ScoreResult(table, times, speedups, scoped, chosen,  # the runs _prepared read
                           dict(self._runs.attrs.get("skipped", {})),
                           rank_shift=shift, rank_axes=(axis_name(chosen.time_axis), rank_shift),
                           pool=sensitivity.pool_sensitivity(times, config), store=self.store,
                           tuning=self._tuning(chosen, scoped, hparams))

    def score(self, reference: str | None = None, rank_shift: str | None = None,
              hparams: Sequence[str] = (), **scope) -> dict[str, Any]:
        """What `pacebench score --json` prints (`--hparam` names: `hparams`)."""
        return self.score_result(reference, rank_shift, hparams, **scope).to_json()

    def tuning(self, algorithms: Sequence[str] | None = None, hparams: Sequence[str] = (),
               **scope) -> dict[str, dict[str, dict[str, Any]]]:
        """The tuning report (workbench/tuning.py): {algorithm: {workload: {"trials",
        "finished", "bad_fraction", "planned_trials", "origin", "best", "hparams" (each range's
        low, high, scaling, the best trial's value and position), "edge", "bracketed", "why",
        "finding"}}} of `algorithms` (default every one), the learning rate's edge judged, and
        that of each name in `hparams`."""
        T.check_hparam_names(hparams)
        chosen, scoped, _ = self._prepared(scope)
        report = self._tuning(chosen, scoped, hparams)
        if algorithms is None:
            return report
        unknown = [a for a in algorithms if a not in report]
        if unknown:
            raise UserError(f"unknown algorithm {unknown[0]!r}: the algorithms are "
                            f"{', '.join(report)}")
        return {a: report[a] for a in algorithms}

    def _tuning(self, chosen: Scope, scoped: Scoped, hparams: Sequence[str] = (),
                algorithms: Sequence[str] | None = None) -> dict[str, dict[str, dict]]:
        """tuning.tuning_report of the scoped runs, every attempt of the scope counted."""
        names = sorted(set(scoped.runs["workload"].astype(str)))
        floors = {w: f.cov for w in names if (f := noise_floor_of(w)) is not None}
        attempts = labelled_runs(self.runs(), chosen).runs
        return T.tuning_report(scoped.runs, self.store.run_doc, attempts=attempts,
                               algorithms=algorithms, hparams=hparams, floors=floors,
                               time_axis=chosen.time_axis)

    def compare_result(self, a: str, b: str, workloads: Sequence[str] | None = None,
                       confidence: float = C.DEFAULT_CONFIDENCE,
                       detect: float = C.DEFAULT_DETECT, study_time: str = "algoperf",
                       sequential: bool = False, max_studies: int | None = None,
                       ongoing: bool = False, first: int | None = None,
                       hparams: Sequence[str] = (), **scope) -> "CompareResult":
        """A against B (workbench.compare.compare_runs) on the scope's time axis (rich), a
        study's time by `study_time` (compare.STUDY_TIME_RULES: "algoperf", the trial that met
        the target at the smallest eval index; "fastest", the trial with the smallest time),
        with each side's search space and trials per study (compare.fairness) and the
        under-tuned check of each side against the workloads' tuned records.
        `sequential`: replayed round by round with the sequential test (workbench/sequential.py)
        planned for `max_studies` studies a side (default: those the store holds); `ongoing`
        and `first` (the first round's size) are for a study under way (`study
        --until-decided`). The tuning report of both (workbench/tuning.py) judges the learning
        rate's edge and each name in `hparams`, and counts each side's tuning runs."""
        T.check_hparam_names(hparams)
        if study_time not in C.STUDY_TIME_RULES:
            raise UserError(f"unknown study-time rule {study_time!r}: valid are "
                            f"{', '.join(C.STUDY_TIME_RULES)}")
        if not sequential and (max_studies is not None or ongoing or first is not None):
            raise UserError("max_studies, ongoing and first go with sequential=True")
        chosen, scoped, cube = self._prepared(scope)
        for name in (a, b):
            _check_compared(name, scoped, cube)
        config = self.config()
        names = [str(w) for w in cube["workload"].values]
        floors = {w: f.cov for w in names if (f := noise_floor_of(w)) is not None}
        tuned = {w: s for w in names if (s := median_steps_to_target(w)) is not None}
        options = dict(time_axis=chosen.time_axis,
                       workloads=list(workloads) if workloads else scored_names(config, cube),
                       config=config, confidence=confidence, detect=detect, noise_cov=floors,
                       replicates=COMPARE_DRAWS, study_time=study_time, tuned_steps=tuned,
                       search_spaces=C.fairness(scoped.runs, [a, b], self.store.run_doc),
                       tuning=self._tuning(chosen, scoped, hparams, [a, b]),
                       tuning_runs=T.tuning_runs(self.runs(), [a, b], self.store.run_doc,
                                                 scoped.runs["run_id"].astype(str)))
        if sequential:
            from workbench.sequential import DEFAULT_FIRST_ROUND, sequential_compare
            comparison = sequential_compare(scoped.runs, cube, a, b, max_studies=max_studies,
                                            ongoing=ongoing,
                                            first=first or DEFAULT_FIRST_ROUND, **options)
        else:
            comparison = C.compare_runs(scoped.runs, cube, a, b, **options)
        return CompareResult(comparison, scoped, chosen)

    def compare(self, a: str, b: str, workloads: Sequence[str] | None = None,
                confidence: float = C.DEFAULT_CONFIDENCE, detect: float = C.DEFAULT_DETECT,
                study_time: str = "algoperf", sequential: bool = False,
                max_studies: int | None = None, hparams: Sequence[str] = (),
                **scope) -> dict[str, Any]:
        """What `pacebench compare --json` prints (`--study-time`, `--sequential`,
        `--max-studies`, `--hparam`: `hparams`)."""
        return self.compare_result(a, b, workloads, confidence, detect, study_time=study_time,
                                   sequential=sequential, max_studies=max_studies,
                                   hparams=hparams, **scope).to_json()

    def budget_result(self, **scope) -> "BudgetResult":
        """Tuning-budget curves (workbench/budget.py) of the scoped trials (rich)."""
        chosen, scoped, cube = self._prepared(scope)
        trials = B.trial_times(cube)
        return BudgetResult(B.budget_curves(trials), trials, self.config(),
                            scored_names(self.config(), cube), scoped, chosen)

    def budget(self, **scope) -> dict[str, Any]:
        """What `pacebench budget --json` prints."""
        return self.budget_result(**scope).to_json()

    def ladder_finals(self, studies: Sequence[str] | str = ()) -> pd.DataFrame:
        """The final runs of the store's model-size ladders (workbench.ladder.FINAL_COLUMNS,
        one row each; empty when it has none), of the ladders (study names) `studies` only
        when given. A run whose ladder record is malformed is skipped with a warning naming
        its folder and what is valid (in `.attrs["skipped"]`)."""
        runs = self.runs()
        wanted = (studies,) if isinstance(studies, str) else tuple(studies)
        if wanted:  # and their sweeps (runners/procedures/ladder.py tuning_name: "<name>.tuning")
            runs = runs[runs["study_name"].isin(wanted + tuple(f"{w}.tuning" for w in wanted))]
        finals, skipped = query.ladder_finals(self.store, runs)
        for run_id, problem in skipped.items():
            warnings.warn(f"skipped ladder run {run_id}: {problem}", stacklevel=2)
        finals.attrs["skipped"] = skipped
        return finals

    def ladder_result(self, reference: str | None = None,
                      studies: Sequence[str] | str = (), loss_noise: float | None = None,
                      fit_budgets: Sequence[float] | None = None) -> "LadderResult":
        """The ladder analysis (workbench/ladder.py) of the store's ladder runs (rich).
        `loss_noise` (nats): one seed per configuration, intervals by a parametric bootstrap;
        `fit_budgets`: the reference's budgets its fit uses (`--fit-budgets 1,2,4,8`)."""
        finals = self.ladder_finals(studies)
        if finals.empty:
            raise UserError(f"store {self.store.root} has no ladder runs: run `pacebench "
                            "ladder --sizes ... --store` (or `pacebench import-table --kind "
                            "finals`) into it first (`pacebench ladder --list` names the sizes)")
        return LadderResult(LD.ladder_analysis(finals, reference, loss_noise=loss_noise,
                                               fit_budgets=fit_budgets), finals)

    def ladder(self, reference: str | None = None, studies: Sequence[str] | str = (),
               loss_noise: float | None = None,
               fit_budgets: Sequence[float] | None = None) -> dict[str, Any]:
        """What `pacebench ladder --summary --json` prints: per rung the reference's fit
        L(D) = a D^-b + c, each candidate's equal-loss speedups and time ratios with
        bootstrap intervals, leave-one-out fragility, and the trend with size
        (workbench/ladder.py)."""
        return self.ladder_result(reference, studies, loss_noise, fit_budgets).to_json()

    # -- the views ----------------------------------------------------------------------------
    def report(self, path: str | Path, title: str | None = None, **options) -> Path:
        """Write the self-contained HTML report (workbench/report.py) to `path`."""
        from workbench.report import write_report
        return write_report(self.store.root, Path(path), title=title, **options)

    def view(self, name: str, **filters):
        """The dashboard's view `name` (its tab title, e.g. "Leaderboard", or its key, e.g.
        "early_ranking") over this store, a Panel object that renders inline in JupyterLab and,
        as a static copy of its tables and plots, in an exported notebook (nbconvert HTML).

        filters: ruleset, studies, with_adhoc (what is read, as in score), workloads,
        algorithms, time_axis ("train", "wall" or "steps"), relax_targets (R in [0, 1)). An
        unknown view is a ValueError
        naming the valid ones; so is a name the store does not hold. `reference`: the algorithm
        speedups are measured against. `.save(path)` writes it as a static HTML file.
        """
        from workbench.views.registry import notebook_view
        return notebook_view(self.store.root, name, **filters)


def _check_compared(name: str, scoped: Scoped, cube: xr.Dataset) -> None:
    """ValueError naming why `name` cannot be compared: its trials all failed, its studies are
    shown apart under other names, or no run has it."""
    present = [str(x) for x in cube["algorithm"].values]
    if name in present:
        return
    if name in scoped.failed:
        n = sum(scoped.failed[name].values())
        raise UserError(f"{name} has no finished trial to compare: its {n} trials failed or "
                        f"were interrupted (a crash is neither a time nor a miss); the "
                        f"algorithms with finished trials are {', '.join(present)}")
    if name in scoped.shown_apart:
        labels = ", ".join(f"'{name} [{n}]'" for n in scoped.shown_apart[name])
        raise UserError(f"{name} ran in studies of different designs, shown apart as {labels}: "
                        f"compare one of those, or pick a study with --study NAME")
    raise UserError(f"unknown algorithm {name!r}: the algorithms are {', '.join(present)}")


scored_names = scoring.scored_names  # the scored workloads that have runs (scoring owns it)


def _axis_json(scope: Scope) -> dict[str, Any]:
    return {"time_axis": scope.time_axis, "unit": AXIS_UNITS[axis_column(scope.time_axis)],
            "exclude_compile": bool(scope.exclude_compile),
            "relax_targets": scope.relax_targets}


def _speedups(times, config, reference: str | None, table, axis: str, ruleset: str | None,
              study, replicas):
    """(scoring.speedup_table over `reference` with its INTERVAL_LEVEL bootstrap interval (NaN
    below scoring.MIN_STUDIES_FOR_INTERVAL studies of either), the reference, whether misses
    cost the budget); None when there is a single algorithm. `study`, `replicas`: the study
    times and their bootstrap_medians (BOOTSTRAP_DRAWS, seed 0)."""
    names = [str(a) for a in times["algorithm"].values]
    reference = reference or scoring.default_reference(names)
    if len(names) < 2:
        return None
    if reference not in names:
        raise UserError(f"unknown --reference {reference!r}: the store's algorithms are "
                        f"{', '.join(names)}")
    frame = scoring.speedup_table_with_intervals(
        times, study, replicas, reference, config, ruleset or "external", axis, INTERVAL_LEVEL)
    return frame, reference, frame.attrs["budgets"]


def _number(value: float) -> float | None:
    return round(float(value), 6) if value is not None and math.isfinite(value) else None


@dataclass
class ScoreResult:
    """The scores of a store (Results.score_result): to_json, text and csv renderings."""

    table: pd.DataFrame          # scoring.score_table_with_intervals, best first
    times: xr.DataArray          # median time to target per (algorithm, workload)
    speedups: tuple | None       # (frame, reference, budgets) of _speedups
    scoped: Scoped
    scope: Scope
    skipped: dict[str, str] = field(default_factory=dict)
    rank_shift: dict[str, dict] | None = None  # sensitivity.rank_shift over rank_axes
    rank_axes: tuple[str, str | None] = ("train", None)  # (the scope's axis, the other one)
    pool: dict[str, dict] = field(default_factory=dict)  # sensitivity.pool_sensitivity
    store: Store | None = None   # where eval_share reads the eval rows (None: it is empty)
    tuning: dict[str, dict] = field(default_factory=dict)  # tuning.tuning_report

    def eval_share(self) -> pd.DataFrame:
        """costs.eval_share of the scoped runs (their eval rows are read on the first call:
        most of a `score --json` of the v0.5 logs, so the text and CSV outputs skip it)."""
        if not hasattr(self, "_eval_share"):
            runs = self.scoped.runs
            clock = query.eval_clock(self.store, runs["run_id"].tolist()) \
                if self.store is not None and len(runs) else \
                pd.DataFrame(columns=["run_id", "eval_seconds", "wall_seconds"])
            self._eval_share = costs.eval_share(runs, clock)
        return self._eval_share

    def to_json(self) -> dict[str, Any]:
        t = self.table
        times = self.times.transpose("algorithm", "workload")  # by position: .sel took 0.2 s
        ttt = {str(a): {str(w): _number(times.values[i, j].item())
                        for j, w in enumerate(times.workload.values)}
               for i, a in enumerate(times.algorithm.values)}
        out: dict[str, Any] = {
            "scores": {r.algorithm: round(float(r.score), 6) for r in t.itertuples()},
            "studies": {r.algorithm: int(r.studies) for r in t.itertuples()},
            "intervals": {r.algorithm: None if not np.isfinite(r.low) else
                          [_number(r.low), _number(r.high)] for r in t.itertuples()},
            "interval_level": INTERVAL_LEVEL, "time_to_target": ttt}
        if self.speedups is not None:
            frame, reference, _ = self.speedups
            out["speedups"] = {
                "reference": reference,
                "faster_by": {str(a): _number(v) for a, v in frame["faster_by"].items()},
                "intervals": {str(a): None if not np.isfinite(r.low) else
                              [_number(r.low), _number(r.high)] for a, r in frame.iterrows()},
                "interval_level": INTERVAL_LEVEL}
        out["pool_sensitivity"] = {
            a: {"without": {b: round(v, 6) for b, v in e["without"].items()},
                "largest_change": round(e["largest_change"], 6)} for a, e in self.pool.items()}
        out["eval_share"] = {
            str(a): {str(r.workload): _number(r.share) for r in rows.itertuples()}
            for a, rows in self.eval_share().groupby("algorithm", sort=True)}
        if self.rank_shift is not None:
            out["rank_shift"] = {a: {k: [round(p, 6) for p in v] if isinstance(v, list) else v
                                     for k, v in e.items()} for a, e in self.rank_shift.items()}
            out["rank_shift_spearman"] = _number(sensitivity.spearman(self.rank_shift,
                                                                      *self.rank_axes))
        out["tuning"] = {a: dict(v) for a, v in self.tuning.items()}
        return {**out, **_axis_json(self.scope), **self.scoped.to_json(),
                "skipped_runs": dict(self.skipped)}

    def text(self) -> str:
        """What `pacebench score` prints."""
        column = axis_column(self.scope.time_axis)
        label = AXIS_LABELS[column] + (", compilation excluded" if self.scope.exclude_compile
                                       else "")
        lines = [f"ruleset: {self.scoped.ruleset}; time axis: {label}",
                 self.table.drop(columns=["low", "high"]).to_string(
                     index=False, float_format=lambda v: f"{v:.4f}"),
                 f"(interval: {100 * INTERVAL_LEVEL:.0f} % bootstrap over each algorithm's "
                 f"studies; n/a below {scoring.MIN_STUDIES_FOR_INTERVAL} studies)\n"
                 "(workloads_reached: of the workloads_scored, those where the median study "
                 "reached the target within 4x of the fastest time, after the rules)",
                 f"\nmedian {AXIS_LABELS[column]} to target (inf = not reached):",
                 self.times.to_pandas().to_string(float_format=lambda v: f"{v:.2f}")]
        floors = {str(w): f for w in self.times.workload.values
                  if (f := noise_floor_of(str(w))) is not None}
        if floors:
            lines.append("\nnoise floor (the tuned baseline's time to target over the seeds "
                         "that set the target):")
            lines += [f"  {w}: {floor.describe()}" for w, floor in floors.items()]
        if self.speedups is not None:
            frame, reference, budgets = self.speedups
            rule = "misses cost the budget + 1 s" if budgets else "workloads both missed left out"
            lines.append(f"\nspeedup over {reference} in {AXIS_LABELS[column]} (1 - geometric "
                         f"mean of ratios to target over the scored workloads; {rule}):")
            lines.append(_speedup_lines(frame, reference))
        if (reason := scoring.all_zero_reason(self.table)) is not None:
            lines.append("\n" + reason)
        lines += self._sensitivity_lines()
        if self.tuning:
            lines += ["\ntuning (each algorithm's trials and search space; edge: the best "
                      "trial at an end of its range, beyond the noise floor):",
                      T.report_table(self.tuning).to_string(index=False)]
        lines += _left_out_lines(self.scoped, self.skipped)
        return "\n".join(lines)

    def _sensitivity_lines(self) -> list[str]:
        """The rank shift (when asked for) and the pool sensitivity, one line per algorithm."""
        lines: list[str] = []
        width = max((len(a) for a in self.pool), default=0)
        if self.rank_shift is not None:
            first, second = self.rank_axes
            lines.append(f"\nrank by {first} and by {second} (spearman "
                         f"{sensitivity.spearman(self.rank_shift, first, second):.3f}; the "
                         f"probability of each rank over {BOOTSTRAP_DRAWS:,} bootstrap draws of "
                         "each algorithm's studies, ranks under 5 % left out):")
            for a, e in self.rank_shift.items():
                one, two = (f"{e[f'rank_{c}']:>2} ({_ranks_text(e[f'p_rank_{c}'])})"
                            for c in (first, second))
                lines.append(f"{a.ljust(width)}  {one}  ->  {two}")
        if len(self.pool) > 1:
            lines.append("\npool sensitivity (the largest change of each score when one other "
                         "algorithm is left out of the pool):")
            for a in self.table["algorithm"]:
                e = self.pool[a]
                who = [b for b, v in e["without"].items()
                       if math.isclose(v - e["score"], e["largest_change"])]
                lines.append(f"{a.ljust(width)}  {e['largest_change']:+.4f}"
                             + (f" (without {', '.join(who)})" if e["largest_change"] else ""))
        return lines

    def csv(self) -> str:
        """What `pacebench score --csv` prints: one row per algorithm, in score order."""
        from workbench.csvout import to_csv

        column = axis_column(self.scope.time_axis)
        out = self.table.rename(columns={"low": "score_low", "high": "score_high"}) \
            .set_index("algorithm")
        ttt = self.times.to_pandas()
        for workload in ttt.columns:
            out[f"{_CSV_TIMES[column]}/{workload}"] = ttt[workload].reindex(out.index)
        if self.speedups is not None:
            frame, reference, _ = self.speedups
            for source, name in (("faster_by", "faster_by"), ("low", "faster_by_low"),
                                 ("high", "faster_by_high")):
                values = frame[source].reindex(out.index).astype(float)
                out[f"{name} (vs {reference})"] = values.where(np.isfinite(values))
        return to_csv(out, index=True)


def _ranks_text(p: list[float]) -> str:
    """'1: 75 %, 2: 15 %, 3: 9 %': the ranks at least 5 % likely."""
    return ", ".join(f"{k}: {100 * q:.0f} %" for k, q in enumerate(p, 1) if q >= 0.05)


# The CSV's column of median times to target, per time axis.
_CSV_TIMES = {"train_seconds": "time_to_target_s", "wall_seconds": "wall_to_target_s",
              "step": "steps_to_target"}


def _speedup_lines(frame: pd.DataFrame, reference: str) -> str:
    """One line per algorithm: its speedup over the reference and its interval."""
    width = max(len(str(a)) for a in frame.index)
    lines = []
    for algorithm, r in frame.iterrows():
        value = f"{r.faster_by:+.4f}" if math.isfinite(r.faster_by) else "n/a (a miss)"
        if algorithm == reference:
            interval = "(the reference)"
        elif not math.isnan(r.low):
            interval = f"{100 * INTERVAL_LEVEL:.0f} % interval {r.low:+.4f} to {r.high:+.4f}"
        else:
            interval = scoring.interval_text(math.nan, math.nan, int(r.studies))
        lines.append(f"{str(algorithm).ljust(width)}  {value.rjust(12)}  {interval}")
    return "\n".join(lines)


def _left_out_lines(scoped: Scoped, skipped: dict[str, str]) -> list[str]:
    """What a result left out or changed, one line each (workbench/scope.py), and the runs that
    could not be read."""
    lines = [f"note: {n}" for n in scoped.notes]
    for algorithm, workloads in scoped.failed.items():
        lines.append(f"failed trials of {algorithm}: " + ", ".join(
            f"{w} {n}" for w, n in workloads.items()))
    if skipped:
        lines.append(f"{len(skipped)} runs of the store skipped: their files cannot be read "
                     "(the warnings above name them and say why)")
    return [""] + lines if lines else []


@dataclass
class BudgetResult:
    """Tuning-budget curves of a store (Results.budget_result)."""

    curves: list
    trials: dict
    config: scoring.ScoringConfig | None
    scored: list[str]
    scoped: Scoped
    scope: Scope

    def to_json(self) -> dict[str, Any]:
        return {**B.budget_json(self.curves, self.trials, self.config, self.scored),
                **_axis_json(self.scope), **self.scoped.to_json()}

    def text(self) -> str:
        body = B.budget_text(self.curves, self.trials, self.config, self.scored,
                             axis_column(self.scope.time_axis))
        return "\n".join([body, *_left_out_lines(self.scoped, {})])


@dataclass
class CompareResult:
    """A head-to-head of a store (Results.compare_result): a fixed design's, or a sequential
    one's (workbench.sequential.SequentialComparison)."""

    comparison: Any
    scoped: Scoped
    scope: Scope

    def to_json(self) -> dict[str, Any]:
        return {**self.comparison.to_json(), **_axis_json(self.scope), **self.scoped.to_json()}

    def text(self) -> str:
        """What `pacebench compare` prints."""
        result, label = self.comparison, AXIS_LABELS[axis_column(self.scope.time_axis)]
        sequential = None
        if not isinstance(result, C.Comparison):  # a sequential comparison (its last look's)
            sequential, result = result, result.comparison
        lines = [f"ruleset: {self.scoped.ruleset}; time axis: {label}"
                 + (", compilation excluded" if self.scope.exclude_compile else "")
                 + f" (ratios of median study {label} to target)",
                 C.comparison_table(result).to_string(index=False)]
        lines += [f"  {w}: left out ({why})" for w, why in result.left_out.items()]
        lines += [f"  {w}: {why}" for w, why in result.counted_as_missed.items()]
        if result.study_time != "algoperf":
            lines.append("study time: each study's fastest trial (--study-time fastest), not "
                         "AlgoPerf's rule (the trial that met the target at the smallest eval "
                         "index)")
        lines += [f"warning: {caution}" for caution in result.warnings]
        if result.withheld_line():
            lines.append(f"warning: {result.withheld_line()}")
        lines += [T.tuning_line(result.tuning, result.a, result.b, result.fair_tuning,
                                result.tuning_warnings),
                  f"\nverdict in {label}: {result.verdict}",
                  f"verdict by steps to target: {result.verdict_by_steps}"]
        if sequential is not None:
            lines += [f"studies used: {sequential.studies_used} a side of "
                      f"{sequential.max_studies}; stopped because: "
                      f"{sequential.stopped_because or 'not decided yet'}",
                      "\n" + sequential.sentence()]
        else:
            lines.append("\n" + result.sentence())
        lines += _tuning_lines(result)
        return "\n".join(lines + _left_out_lines(self.scoped, {}))


def _tuning_lines(result: C.Comparison) -> list[str]:
    """The tuning report under compare's verdict: each side's trials and edges, its search space
    as a table (never as JSON), the warnings, and the tuning runs behind each space."""
    if not result.tuning:
        return []
    lines = ["\ntuning report (workbench/tuning.py; edge: the best trial in the outer 10 % of "
             "a range, beating the best of the inner 80 % by more than the noise floor):",
             T.report_table(result.tuning).to_string(index=False)]
    spaces = T.space_table(result.tuning)
    if len(spaces):
        lines += ["search spaces (best: the best trial's value; position: 0 low end, 1 high "
                  "end, in the range's scaling):", spaces.to_string(index=False)]
    lines += [f"finding: {e['finding']}" for per in result.tuning.values() for e in per.values()]
    findings = {e["finding"] for per in result.tuning.values() for e in per.values()}
    lines += [f"tuning warning: {w}" for w in result.tuning_warnings if w not in findings]
    for side, info in result.tuning_runs.items():
        where = info.get("origin") or "unrecorded"
        lines.append(f"tuning runs of {side}: {info.get('runs', 0)}"
                     + (f" ({', '.join(info['study_names'])})" if info.get("study_names")
                        else "") + f"; its search space: {where}"
                     + (f" ({info['file']})" if info.get("file") else ""))
    return lines


@dataclass
class LadderResult:
    """A store's ladder analysis (Results.ladder_result): the JSON and the finals it came from."""

    analysis: dict[str, Any]
    finals: pd.DataFrame

    def to_json(self) -> dict[str, Any]:
        studies = sorted(set(self.finals["study_name"].dropna().astype(str)))
        return {**self.analysis, "ladders": studies,
                "skipped_runs": dict(self.finals.attrs.get("skipped", {}))}

    def text(self) -> str:
        """What `pacebench ladder --summary` prints."""
        lines = [LD.ladder_text(self.analysis)]
        studies = sorted(set(self.finals["study_name"].dropna().astype(str)))
        if len(studies) > 1:
            lines.append(f"\nnote: the runs of {len(studies)} ladders are pooled "
                         f"({', '.join(studies)}); pick one with --study NAME")
        skipped = self.finals.attrs.get("skipped", {})
        if skipped:
            lines.append(f"\n{len(skipped)} ladder runs skipped: their ladder records cannot "
                         "be read (the warnings above name them and say why)")
        return "\n".join(lines)


def dumps(value: dict[str, Any]) -> str:
    """JSON as the CLI prints it."""
    return json.dumps(value, indent=2)
