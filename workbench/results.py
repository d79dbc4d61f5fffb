"""Results: the one API over a store, whose numbers every surface shows.

    import workbench
    res = workbench.open("results/demo")
    res.runs()                         # every run attempt, status included (records.RUN_COLUMNS)
    res.score()                        # == `pacebench score --json`
    res.compare("adamw", "heavy_ball")  # == `pacebench compare --json`
    res.compare("adamw", "heavy_ball", sequential=True)  # == `compare --sequential --json`
    res.budget()                       # == `pacebench budget --json`
    res.ladder()                       # == `pacebench ladder --summary --json`
    res.rank_result().text()           # == `pacebench rank` (res.rank(): as JSON)
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

This module is the one door: the views, the app and the CLI import no analysis module (query,
scope, cubes, scoring, compare, budget, ladder, ...) but through it (tests/test_architecture.py).
The dashboard, which scores a cube cut by its filters cell by cell and caches each step, calls
the steps as Results' methods: the store's reads (`run_index`, `read_runs`, `first_hits`,
`finished`, `evals`, `train_rows`, `eval_clock`, `ladder_records`, `ladder_finals`), the tuning
report and comparison of a run table it holds (`tuning_report`, `tuning_runs`, `comparison`),
and the pure steps (workbench/result_steps.py: e.g. `Results.study_times(cube)`). The result
objects (ScoreResult, ...) are workbench/result_objects.py's, importable from here.

Importing this module loads neither torch nor Panel; `view` and `report` load Panel.
"""
from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any, Sequence

import pandas as pd
import xarray as xr

from workbench import compare as C
from workbench import budget as B
from workbench import ladder as LD
from workbench import early_stopping, ladder_reads, query, scoring, sensitivity
from workbench import tuning as T
from workbench.catalog import median_steps_to_target, noise_floor_of
from workbench.errors import UserError
from workbench.eval_clock import eval_clock, indexed_clock
from workbench.holdings import holdings, ladder_pointer
from workbench.cubes import axis_column, axis_name, final_cube, on_time_axis
from workbench.result_objects import (BOOTSTRAP_DRAWS, COMPARE_DRAWS, INTERVAL_LEVEL,
                                      BudgetResult, CompareResult, LadderResult, RankResult,
                                      ScoreResult, dumps)
from workbench.result_steps import (AXIS_LABELS, AXIS_UNITS, EXACT_BOOTSTRAP,
                                    LADDER_INTERVAL_LEVEL, MIN_STUDIES_FOR_INTERVAL, RANKED,
                                    RANKING_GROUP_KEYS, RANKING_MIN_RUNS, RULESETS_ORDER,
                                    SCORE_COLUMNS, TAU_MAX, TIME_TO_TARGET,
                                    BudgetCurve, Comparison, ResultSteps, ScoringConfig)
from workbench.scope import (Scope, Scoped, finished_runs, labelled_runs, scoped_runs,
                             with_relaxed_targets)
from workbench.store import Store, open_store

__all__ = ["open", "Results", "ScoreResult", "CompareResult", "BudgetResult", "LadderResult",
           "RankResult", "scored_names", "dumps", "BOOTSTRAP_DRAWS", "COMPARE_DRAWS",
           "INTERVAL_LEVEL",
           # what a view or command names of the analysis modules (workbench/result_steps.py
           # STEP_NAMES), so that it reaches the analysis through this module only
           "AXIS_LABELS", "AXIS_UNITS", "TIME_TO_TARGET", "MIN_STUDIES_FOR_INTERVAL", "TAU_MAX",
           "SCORE_COLUMNS", "RULESETS_ORDER", "EXACT_BOOTSTRAP", "LADDER_INTERVAL_LEVEL",
           "RANKING_GROUP_KEYS", "RANKING_MIN_RUNS", "RANKED", "Scope", "Scoped",
           "ScoringConfig", "Comparison", "BudgetCurve"]

# The sequential test's defaults (`study --until-decided`, `compare --sequential`), importable
# from here as DEFAULT_CONFIDENCE etc.: read from workbench.sequential when first asked for (it
# loads scipy.stats, which `score` never needs).
_SEQUENTIAL = ("DEFAULT_CONFIDENCE", "DEFAULT_DETECT", "DEFAULT_FIRST_ROUND",
               "DEFAULT_MAX_STUDIES")


def __getattr__(name: str) -> Any:
    if name in _SEQUENTIAL:
        from workbench import sequential
        return getattr(sequential, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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


class Results(ResultSteps):
    """A store's runs and everything computed from them (see the module doc). Reads the store
    once, and again only when its contents changed (Store.signature). The steps its analyses
    are made of are its methods too (workbench/result_steps.py): the dashboard's views make
    them one by one, cached, through this class."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._runs: pd.DataFrame | None = None
        self._finished: frozenset[str] = frozenset()  # the indexed runs: never written again
        self._signature = None
        self._known_clock: pd.DataFrame | None = None  # read_runs' indexed_clock

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
        index = self.run_index()
        self._finished = frozenset(index[0]["run_id"].tolist())
        self._signature = self.store.signature(self._finished, names)  # taken before the read
        self._runs = self.read_runs(index, names)
        return self._runs

    def run_index(self) -> tuple:
        """The store's run index as it is (query.read_index): its runs have ended and are never
        written again; `[0]` is its run table."""
        return query.read_index(None, self.store)  # no DuckDB connection needed (25 ms)

    def read_runs(self, index: tuple | None = None,
                  names: list[str] | None = None) -> pd.DataFrame:
        """The run table read now, uncached (query.runs_frame; `runs` caches it): `index` and
        `names`, the run index and run folders when the caller just read them. The eval
        clocks the run index holds for these runs are kept for eval_clock."""
        table = query.runs_table(self.store, index=index, names=names)[0]
        self._known_clock = indexed_clock(table)
        return query.runs_frame_of(self.store, table)

    def evals(self, run_ids: Sequence[str] | None = None) -> pd.DataFrame:
        """Eval rows of `run_ids` (default: every run), one row per eval."""
        return query.evals_frame(self.store, None if run_ids is None else list(run_ids))

    def train_rows(self, run_ids: Sequence[str]) -> pd.DataFrame:
        """Training-loss rows of `run_ids` (query.train_frame), one row per logged step."""
        return query.train_frame(self.store, list(run_ids))

    def eval_clock(self, run_ids: Sequence[str]) -> pd.DataFrame:
        """Each run's eval and wall seconds at its last eval (workbench/eval_clock.py): from
        the run index's clocks of the last read_runs where it has them."""
        return eval_clock(self.store, list(run_ids), self._known_clock)

    def ladder_records(self, run_ids: Sequence[str]):
        """The ladder records of `run_ids` (ladder_reads.ladder_records)."""
        return ladder_reads.ladder_records(self.store, list(run_ids))

    def scoped(self, **scope) -> Scoped:
        """The runs the analyses of `scope` read, and what was left out (workbench/scope.py)."""
        return scoped_runs(self.runs(), _scope(scope), self.first_hits)

    def first_hits(self, runs: pd.DataFrame, relax: float) -> pd.DataFrame:
        """query.first_hits of `runs` against targets relaxed by `relax` (eval rows read)."""
        return query.first_hits(self.store, runs, relax)

    def finished(self, labelled: Scoped, relax: float = 0.0) -> Scoped:
        """What is scored of a scope's labelled runs (scope.finished_runs), first hits against
        targets relaxed by `relax` (scope.with_relaxed_targets; eval rows read when relax > 0),
        as `scoped` makes it."""
        return finished_runs(with_relaxed_targets(labelled, relax, self.first_hits))

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
        scoped = scoped_runs(self.runs(), chosen, self.first_hits)
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
                           pool=sensitivity.pool_sensitivity(times, config), clock=self.eval_clock,
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
        return self.tuning_report(scoped.runs, labelled_runs(self.runs(), chosen).runs,
                                  chosen.time_axis, hparams, algorithms)

    def tuning_report(self, runs: pd.DataFrame, attempts: pd.DataFrame,
                      time_axis: str = "train", hparams: Sequence[str] = (),
                      algorithms: Sequence[str] | None = None) -> dict[str, dict[str, dict]]:
        """tuning.tuning_report of the finished `runs` (a scope's), every attempt in `attempts`
        counted, the workloads' noise floors (catalog) judging the edges: what `tuning`,
        `score` and `compare` report, and the dashboard's views show."""
        names = sorted(set(runs["workload"].astype(str)))
        floors = {w: f.cov for w in names if (f := noise_floor_of(w)) is not None}
        return T.tuning_report(runs, self.store.run_doc, attempts=attempts,
                               algorithms=algorithms, hparams=hparams, floors=floors,
                               time_axis=time_axis)

    def tuning_runs(self, runs: pd.DataFrame, algorithms: Sequence[str],
                    scored: pd.Series) -> dict[str, dict]:
        """tuning.tuning_runs: the tuning runs behind each of `algorithms`' search spaces among
        `runs` (the store's), `scored` the run ids of the scope's finished runs."""
        return T.tuning_runs(runs, list(algorithms), self.store.run_doc, scored)

    def comparison(self, runs: pd.DataFrame, cube: xr.Dataset, a: str, b: str,
                   **options) -> C.Comparison:
        """compare.compare_runs of `a` and `b` over a scope's finished `runs` and their `cube`,
        with what compare_result adds (the workloads' noise floors and tuned steps, each
        side's search space, COMPARE_DRAWS draws); `options`: compare_runs' others (time_axis,
        workloads, config, tuning, tuning_runs, confidence, detect, study_time)."""
        return C.compare_runs(runs, cube, a, b, **self._compare_options(runs, cube, a, b,
                                                                        **options))

    def _compare_options(self, runs: pd.DataFrame, cube: xr.Dataset, a: str, b: str,
                         **options) -> dict[str, Any]:
        names = [str(w) for w in cube["workload"].values]
        floors = {w: f.cov for w in names if (f := noise_floor_of(w)) is not None}
        tuned = {w: s for w in names if (s := median_steps_to_target(w)) is not None}
        return dict(noise_cov=floors, replicates=COMPARE_DRAWS, tuned_steps=tuned,
                    search_spaces=C.fairness(runs, [a, b], self.store.run_doc), **options)

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
        options = self._compare_options(
            scoped.runs, cube, a, b, time_axis=chosen.time_axis,
            workloads=list(workloads) if workloads else scored_names(config, cube),
            config=config, confidence=confidence, detect=detect, study_time=study_time,
            tuning=self._tuning(chosen, scoped, hparams, [a, b]),
            tuning_runs=self.tuning_runs(self.runs(), [a, b],
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

    def ladder_finals(self, studies: Sequence[str] | str = (), runs: pd.DataFrame | None = None,
                      warn: bool = True) -> pd.DataFrame:
        """The final runs of the store's model-size ladders (workbench.ladder.FINAL_COLUMNS,
        one row each; empty when it has none), of the ladders (study names) `studies` only
        when given. A run whose ladder record is malformed is skipped (in
        `.attrs["skipped"]`), with a warning naming its folder and what is valid when `warn`.
        `runs`: the store's run table when the caller has read it."""
        runs = self.runs() if runs is None else runs
        wanted = (studies,) if isinstance(studies, str) else tuple(studies)
        if wanted:  # and their sweeps (runners/procedures/ladder.py tuning_name: "<name>.tuning")
            runs = runs[runs["study_name"].isin(wanted + tuple(f"{w}.tuning" for w in wanted))]
        finals, skipped = ladder_reads.ladder_finals(self.store, runs)
        for run_id, problem in skipped.items() if warn else ():
            warnings.warn(f"skipped ladder run {run_id}: {problem}", stacklevel=2)
        finals.attrs["skipped"] = skipped
        return finals

    def early_stopping_saved(self, study_names: Sequence[str],
                             runs: pd.DataFrame | None = None) -> pd.DataFrame:
        """early_stopping.saved_frame: the training seconds spent and saved by early stopping
        per group of `study_names` (empty when none stopped trials early); `runs`: the store's
        run table when the caller has it."""
        return early_stopping.saved_frame(self.store, study_names, runs)

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

    def rank_result(self, study: str | None = None,
                    fractions: Sequence[float] = (0.05, 0.1, 0.2, 0.5)) -> RankResult:
        """How well the early estimators (TSE, LCGA: workbench/curves.py) rank the finished
        runs of each (study, workload, algorithm) with enough of them, by Spearman and Kendall
        against the final validation metric at each budget fraction, and what the early-
        stopping tuner saved in each study (workbench/early_stopping.py) (rich). `study`: that
        study name only (default: every one)."""
        from workbench.early_stopping import ranking_tables, study_summary

        runs = self.runs()
        if study:
            runs = runs[runs.study_name == study]
        fractions = tuple(float(f) for f in fractions)
        tables = ranking_tables(self.store, runs, fractions)
        summaries = [study_summary(self.store, name, runs)
                     for name in sorted(runs.study_name.unique())]
        return RankResult(tables, summaries, fractions)

    def rank(self, study: str | None = None,
             fractions: Sequence[float] = (0.05, 0.1, 0.2, 0.5)) -> dict[str, Any]:
        """rank_result as JSON: the rank correlations of each ranked group by estimator and
        fraction, and each study's early-stopping summary (`pacebench rank` prints its text)."""
        return self.rank_result(study, fractions).to_json()

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
                        f"compare one of those, or pick a study (--study NAME; in Python, "
                        f"studies=[NAME])")
    raise UserError(f"unknown algorithm {name!r}: the algorithms are {', '.join(present)}")


scored_names = scoring.scored_names  # the scored workloads that have runs (scoring owns it)


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

