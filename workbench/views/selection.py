"""The one selection object of the dashboard: the store, the filters, and the data they leave.

No widget (those are workbench/views/sidebar.py); what it computes is cached in the shared cache
(workbench/views/cache.py explains the levels). It reads the store through the scope as every
analysis does (workbench/views/reading.py: one ruleset, the study names asked for, ad-hoc runs
only when asked) and filters what that leaves; eval rows are read only for the runs on the
learning curves.

Two tables come out of it. `runs` (and runs_where, counts, n_shown) are the scope's labelled
runs (every status: the status line and the curves show failed and running runs too) passing
the algorithm, workload and hardware filters. The cube and everything scored come from
`scoped()`, the finished trials only (scope.finished_runs), so that with every filter open the
dashboard counts what `workbench.results.Results.score()` counts. It computes no metric: it
reaches the analysis through `workbench.results.Results` only, the store's reads through its
store's Results (`results`) and the cube and scores through its steps (workbench/result_steps.py:
the cubes and scoring functions the commands use). A store that records a
ScoringConfig (an AlgoPerf import) is scored by it, restricted to the shown workloads; a
held-out variant's runs stay in the scored cube while its base is shown.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import param
import xarray as xr
from bokeh.palettes import Category20_20

from workbench.results import SCORE_COLUMNS, TIME_TO_TARGET as _TIME_TO_TARGET, Results, Scoped, \
    ScoringConfig
from workbench.views.reading import SCOPE_PARAMETERS, ScopedRead, keep_and_add

__all__ = ["Selection", "TIME_AXES", "PALETTE", "FILTER_COLUMNS", "SCOPE_PARAMETERS",
           "TIME_TO_TARGET"]

# Time axes of the learning curves: eval-row column -> axis label.
TIME_AXES = {"train_seconds": "train seconds", "wall_seconds": "wall seconds", "step": "steps"}
# 20 distinct colours, the strong ten first: 11 AlgoPerf submissions get 11 colours.
PALETTE = tuple(Category20_20[0::2] + Category20_20[1::2])
# Filters over the scope's labelled run table: Selection parameter -> run-table column.
FILTER_COLUMNS = {"workloads": "workload", "algorithms": "algorithm", "hardware": "hardware"}
# The final cube's variable that time to target is read from, per time axis (cubes owns it).
TIME_TO_TARGET = _TIME_TO_TARGET
# The cut of a full value to the shown algorithms and workloads depends on these filters.
_CUT = ("algorithms", "workloads", *SCOPE_PARAMETERS, "hardware", "relax_targets")


class Selection(ScopedRead):
    """Owns the store path, the scope (ScopedRead) and the filters; serves the filtered runs,
    the final cube and curves."""

    workloads = param.ListSelector(default=[], objects=[], doc="Workloads shown.")
    algorithms = param.ListSelector(default=[], objects=[], doc=(
        "Algorithms shown, as the scope labels them ('<algorithm> [<study name>]' for an "
        "algorithm whose study names ran different designs)."))
    hardware = param.ListSelector(default=[], objects=[],
                                  doc="Hardware shown (the key runs record their time on).")
    time_axis = param.Selector(default="train_seconds", objects=list(TIME_AXES),
                               doc="What time to target means (training seconds, wall seconds "
                                   "or update steps) and the x axis of the learning curves.")
    relax_targets = param.Number(default=0.0, bounds=(0.0, 1.0), inclusive_bounds=(True, False),
                                 doc="Targets made easier by this share (spec.relaxed_goal: a "
                                     "minimised target times 1 + R, a maximised one times "
                                     "1 - R); first hits recomputed from the eval rows.")
    curve_runs = param.ListSelector(default=[], objects=[], doc="Runs drawn on the learning "
                                    "curves besides the default (views.curves.shown_curve_runs).")
    reference = param.Selector(default=None, objects=[], allow_None=True,
                               doc="Algorithm the speedups are measured against.")

    def _dependants(self, ruleset, studies, with_adhoc: bool) -> dict:
        """The algorithms, workloads and hardware of the scope's labelled runs (the shown ones
        kept, new ones shown) and the curve runs still among them; sets the parameters'
        objects, returns their values."""
        table = self._labelled_for(ruleset, studies, with_adhoc).runs
        new = {}
        for name, column in FILTER_COLUMNS.items():
            names = sorted(table[column].dropna().unique())
            new[name] = keep_and_add(getattr(self, name), self.param[name].objects, names)
            self.param[name].objects = names
        # hardware: what was shown, else the one with the most runs (ties: the first name), so
        # that times of two machines pool only when asked for (a new one is not selected)
        counts = table["hardware"].value_counts()
        new["hardware"] = [h for h in self.param.hardware.objects if h in self.hardware] or \
            sorted(counts.index, key=lambda h: (-counts[h], h))[:1]
        self.param.curve_runs.objects = table["run_id"].tolist()  # not a loop over Arrow
        known = set(self.param.curve_runs.objects)
        new["curve_runs"] = [r for r in self.curve_runs if r in known]
        return new

    def _after_scope(self) -> None:
        self._choose_reference()

    @property
    def _table(self) -> pd.DataFrame:
        """The scope's labelled runs, every status (scope.labelled_runs): what the algorithm,
        workload and hardware filters mask."""
        return self.labelled().runs

    def scoped(self) -> Scoped:
        """What the cube and every score are made of: scope.finished_runs of the labelled runs
        on the shown hardware (each trial's finished attempts; trials without one counted in
        `failed`; studies under half finished dropped), with every note of the scope; first
        hits against targets relaxed by relax_targets (scope.with_relaxed_targets)."""
        def make() -> Scoped:
            labelled = self.labelled()
            if len(self.hardware) < len(self.param.hardware.objects):
                keep = labelled.runs["hardware"].isin(self.hardware).to_numpy(bool)
                labelled = Scoped(labelled.runs[keep], labelled.ruleset, labelled.notes, {},
                                  labelled.shown_apart, labelled.duplicates)
            if self.results is None:  # no store opened: no eval rows to relax targets with
                return Results.finished_runs(labelled)
            return self.results.finished(labelled, self.relax_targets)
        return self.full_value("scoped", make, time_axis=False)

    # -- filtered data --------------------------------------------------------------------
    @property
    def colors(self) -> dict[str, str]:
        """A colour per algorithm, the strongest to the leader (the score order of this read's
        first scoring, then by name): stable while filters change, the same in every view."""
        def make():
            names = list(self.param.algorithms.objects)
            ranked = [a for a in self.scores()["algorithm"] if a in names]
            order = ranked + sorted(a for a in names if a not in ranked)
            return {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(order)}
        return self.cached("colors", make, "labelled")

    def _keep(self, table: pd.DataFrame) -> np.ndarray:
        """Which rows of `table` (the labelled runs, or the finished ones) pass the algorithm,
        workload and hardware filters."""
        keep = np.ones(len(table), dtype=bool)
        for name, column in FILTER_COLUMNS.items():
            if len(getattr(self, name)) < len(self.param[name].objects):
                keep &= np.asarray(table[column].isin(getattr(self, name)), dtype=bool)
        return keep

    @property
    def runs(self) -> pd.DataFrame:
        """The scope's labelled run attempts passing the filters, every status
        (records.RUN_COLUMNS; `algorithm` as the scope labels it)."""
        return self.cached("runs", lambda: self._table[self.shown_rows()])

    def runs_where(self, columns: list[str] | None = None, **equals) -> pd.DataFrame:
        """The filtered runs whose run-table columns equal the values given (`status="running"`;
        a list: any of its values), their `columns` only (default: all); only those copied."""
        rows = self.shown_rows()
        for column, value in equals.items():
            codes, values = self._codes(column)
            match = values.isin(value) if isinstance(value, list) else values == value
            rows = rows & np.isin(codes, np.flatnonzero(np.asarray(match, dtype=bool)))
        return self._table.loc[rows, list(columns) if columns is not None else slice(None)]

    def shown_rows(self) -> np.ndarray:
        """The boolean mask of the labelled table's rows that pass the filters (cached)."""
        return self.cached("shown_rows", lambda: self._keep(self._table))

    def run_rows(self, run_ids: list[str]) -> pd.DataFrame:
        """The scope's rows of `run_ids` (one each, in that order), whatever the filters."""
        index = self.cached("run_ids", lambda: pd.Index(self._table["run_id"]), "labelled")
        found = index.get_indexer_for(run_ids)  # a table re-indexed by id cost 0.1 s
        return self._table.iloc[found[found >= 0]].reset_index(drop=True)

    def recent_runs(self, limit: int) -> list[str]:
        """Ids of the `limit` most recently started runs that pass the filters."""
        order = self.cached("recent_order", lambda: self._table["started_at"].fillna(
            "nan").argsort(kind="stable").to_numpy()[::-1], level="labelled")  # nan: newest
        ids = self._table["run_id"].to_numpy(object)
        return ids[order[self.shown_rows()[order]][:limit]].tolist()

    def variant_workloads(self) -> frozenset:
        """The store's workloads that are variants of another (base_workload differs)."""
        def make():
            runs = self._runs
            return frozenset(runs.loc[runs["workload"] != runs["base_workload"],
                                      "workload"].unique().tolist())
        return self.cached("variant_workloads", make, level="read")

    @property
    def n_runs(self) -> int:
        """How many finished run attempts pass the filters: what the cube is made of (0:
        nothing to score or draw). No copy of a run table."""
        return self.cached("n_runs", lambda: int(self._finished_rows().sum()))

    def _finished_rows(self) -> np.ndarray:
        """The mask of full_runs' rows that pass the filters (cached)."""
        return self.cached("finished_rows", lambda: self._keep(self.full_runs()))

    def finished_algorithms(self) -> frozenset:
        """The shown algorithms with a finished run passing the filters: those the cube, the
        scores and the speedups hold."""
        return self.cached("finished_algorithms", lambda: frozenset(
            self.full_runs().loc[self._finished_rows(), "algorithm"].unique().tolist()))

    @property
    def n_shown(self) -> int:
        """How many run attempts of the scope pass the filters, of every status (`runs`)."""
        return self.cached("n_shown", lambda: int(self.shown_rows().sum()))

    def _codes(self, column: str) -> tuple[np.ndarray, np.ndarray]:
        """`pd.factorize` of a column of the labelled table, once per scope: (codes, distinct
        values); code -1 for a null."""
        return self.cached(f"codes:{column}", lambda: pd.factorize(self._table[column]),
                           level="labelled")

    def counts(self, column: str, nulls: bool = False) -> dict:
        """Filtered runs per distinct value of a run-table column, in order of first
        appearance in the table (values with no shown run left out; nulls counted under None
        if `nulls`), counted on the column's codes: no copy of the run table."""
        def make():
            codes, values = self._codes(column)
            counts = np.bincount(codes[self.shown_rows()] + 1, minlength=len(values) + 1)
            found = {values[i - 1]: int(counts[i]) for i in np.flatnonzero(counts[1:]) + 1}
            return {None: int(counts[0]), **found} if counts[0] else found
        counted = self.cached(f"counts:{column}", make)
        return counted if nulls else {k: n for k, n in counted.items() if k is not None}

    def present(self, column: str, nulls: bool = False) -> frozenset:
        """The distinct values of a run-table column among the filtered runs (None among them
        when `nulls` and a shown run has none)."""
        return frozenset(self.counts(column, nulls))

    @property
    def scoring_config(self) -> ScoringConfig | None:
        """The store's rules restricted to the shown workloads (ScoringConfig.restricted;
        None: the plain rules)."""
        config = self._read.config
        return None if config is None else \
            config.restricted(self.workloads, self.param.workloads.objects)

    @property
    def cube(self):
        """`cubes.final_cube` of the filtered runs and of the held-out variants they are scored
        with, its `time_to_target` on the chosen time axis (units in its attrs). Cut from the
        cube of every algorithm and workload (built once per ruleset, study, hardware and time
        axis), so ticking algorithms and workloads costs a slice, not a rebuild."""
        return self.cached("cube", lambda: self.cut(self.full_cube()))

    def cut(self, full):
        """The part of a value over the full cube's algorithms and workloads (the full cube
        itself, or a per-cell value of it) that the shown cube holds."""
        def make():
            config = self.scoring_config
            inputs = set(self.workloads) | set(config.held_out if config else ())
            cube = self.full_cube()
            shown = set(self.algorithms)
            return ([a for a in cube["algorithm"].values if a in shown],
                    [w for w in cube["workload"].values if w in inputs])
        algorithms, workloads = self.cached("cut", make, _CUT)
        return full.sel(algorithm=algorithms, workload=workloads)

    def per_cell(self, name: str, make):
        """A value computed cell by cell (a cell's value does not depend on the others):
        `make()` over the full cube once per ruleset, study, hardware and time axis
        (full_value), cut to the shown algorithms and workloads, so that ticking algorithms
        and workloads costs a slice."""
        full = self.full_value(name, make)
        return self.cached(name, lambda: self.cut(full))

    def full_value(self, name: str, make, time_axis: bool = True):
        """`make()`, a value over every algorithm and workload (full_runs, full_cube), once
        per ruleset, study and hardware filter (and time axis, if it depends on it). For
        values computed cell by cell: a view cuts the shown algorithms and workloads out of
        it, so that ticking them costs a cut, not a recomputation."""
        return self.cached(f"full:{name}", make, "axis" if time_axis else "scope")

    def full_runs(self) -> pd.DataFrame:
        """The finished run attempts of the scope on the shown hardware, of every algorithm
        and workload (scoped().runs: what full_cube is built from)."""
        return self.scoped().runs

    def full_cube(self, time_axis: str | None = None):
        """The final cube of full_runs, its time_to_target on `time_axis` (default: the
        selection's; cubes.on_time_axis, the same swap the analysis commands make: a shallow
        copy per axis of one cube built per ruleset, study and hardware filter)."""
        axis = Results.axis_column(time_axis or self.time_axis)
        cube = self.full_value("cube", lambda: Results.final_cube(self.full_runs()),
                               time_axis=False)
        if axis == "train_seconds":
            return cube
        return self.full_value(f"cube:{axis}", lambda: Results.on_time_axis(cube, axis),
                               time_axis=False)

    def scores(self) -> pd.DataFrame:
        """`scoring.score_table` of the cube under the scoring rules, in scoring.rank_scores
        order; empty when no run or no scored workload is shown."""
        def make():
            if not self.n_runs or not self.workload_groups()["scored"]:
                return pd.DataFrame(columns=list(SCORE_COLUMNS))
            return Results.score_table_of_times(self.workload_times(), self.scoring_config)
        return self.cached("scores", make)

    def study_times(self) -> xr.DataArray:
        """`scoring.study_times` of the cube: the chosen trial's time to target per
        (algorithm, workload, study), on the chosen time axis (cached)."""
        return self.per_cell("study_times", self._all_study_times)

    def _all_study_times(self) -> xr.DataArray:
        return self.full_value("study_times", lambda: Results.study_times(self.full_cube()))

    def workload_times(self) -> xr.DataArray:
        """`scoring.workload_times` of the cube, on the chosen time axis (cached)."""
        return self.per_cell("workload_times", lambda: Results.median_over_studies(
            self._all_study_times()))

    def bootstrap_medians(self, n: int, seed: int = 0) -> xr.DataArray:
        """`scoring.bootstrap_medians` of the study times, drawn once over every cell (cached)."""
        return self.per_cell(f"bootstrap:{n}:{seed}", lambda: Results.bootstrap_medians(
            self._all_study_times(), n, seed))

    def workload_groups(self) -> dict[str, list[str]]:
        """The shown workloads by role: "scored", "held_out" (scoring inputs), "other"."""
        config = self.scoring_config
        shown = [w for w in self.param.workloads.objects if w in self.workloads]
        if config is not None and config.base_workloads is not None:
            scored = list(config.base_workloads)
        else:
            scored = [w for w in Results.scored_workloads(self.workload_times()) if w in shown] \
                if self.n_runs else []
        return Results.workload_roles(shown, scored, config)

    def store_workload_groups(self) -> dict[str, list[str]]:
        """workload_groups with every workload of the store shown (the columns a view keeps
        while workloads are ticked)."""
        def make():
            config = self._read.config
            names = list(self.param.workloads.objects)
            if config is not None and config.base_workloads is not None:
                scored = list(config.base_workloads)
            else:
                cube = self.full_cube()
                scored = Results.scored_workloads(cube) if cube.sizes.get("workload") else []
            return Results.workload_roles(names, scored, config)
        return self.cached("store_workload_groups", make, "scope")

    def _choose_reference(self) -> None:
        """Reference for speedups: kept while shown, else scoring.default_reference ("baseline",
        else "adamw", else the first name) among the shown algorithms (with finished runs that
        pass the filters)."""
        present = self.finished_algorithms()
        shown = [a for a in self.param.algorithms.objects if a in present]
        self.param.reference.objects = shown
        if self.reference in shown or not shown:
            self.reference = self.reference if shown else None
            return
        self.reference = Results.default_reference(shown)

    @param.depends("algorithms", "workloads", "hardware", watch=True)
    def _filters_changed(self) -> None:
        # an internal watcher: it runs before the views', so that they draw once, with the
        # reference of the new filters
        self._choose_reference()
