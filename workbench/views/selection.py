"""The one selection object of the dashboard: the store, the filters, and the data they leave.

`Selection` reads the store's runs and scoring rules once per refresh and filters them; eval and
training-loss rows are read only for the runs drawn on the learning curves (a store imported from
AlgoPerf has ~3,700 runs and ~220,000 eval rows). Every view reads its frames and cube from here
and watches its parameters. It computes no metric: the final cube comes from `workbench.cubes`,
scores, chosen trials and profiles from `workbench.scoring`.

Scoring rules: a store that records a ScoringConfig (an AlgoPerf import) is scored by it,
restricted to the shown workloads; a held-out variant is an input of its base's score, so its runs
stay in the scored cube while its base is shown, whatever the workload filter says.
"""
from __future__ import annotations

import dataclasses
import os
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Iterable

import numpy as np
import pandas as pd
import panel as pn
import param
import xarray as xr
from bokeh.palettes import Category20_20

from workbench import cubes, query, scoring
from workbench import records as R
from workbench.store import StoreError, open_store

__all__ = ["Selection", "Filters", "StoreNotice", "TIME_AXES", "MAX_DEFAULT_CURVES", "PALETTE",
           "DEFAULT_REFERENCE", "FILTER_COLUMNS", "TIME_TO_TARGET"]

# Time axes of the learning curves: eval-row column -> axis label.
TIME_AXES = {"train_seconds": "train seconds", "wall_seconds": "wall seconds", "step": "steps"}
# Runs drawn per workload when no run is picked: all of them up to this many, else the chosen
# trial of one study per algorithm (keeps a 3,700-run store readable and fast to draw).
MAX_DEFAULT_CURVES = 48
# 20 distinct colours, the strong ten first: 11 AlgoPerf submissions get 11 colours.
PALETTE = tuple(Category20_20[0::2] + Category20_20[1::2])
DEFAULT_REFERENCE = "baseline"  # speedups are measured against it when the store has it
MAX_PICKABLE = 2000  # runs offered by the sidebar's run picker (the most recent of the selection)
CACHE_SIZE = 64  # cubes and frames kept for recent filter settings (switching back is instant)
# Filters over the run table: Selection parameter -> run-table column.
FILTER_COLUMNS = {"workloads": "workload", "algorithms": "algorithm", "rulesets": "ruleset",
                  "studies": "study_name", "hardware": "hardware"}
# The final cube's variable that time to target is read from, per time axis.
TIME_TO_TARGET = {"train_seconds": "time_to_target", "wall_seconds": "wall_to_target",
                  "step": "step_to_target"}


def _store_signature(root: Path, finished: Iterable[str] = ()) -> tuple:
    """Cheap fingerprint of a store: changes when a run folder is added or removed, or when a
    run not in `finished` (the runs that had ended at the last read) writes, seals or ends.
    A finished run never changes again, so its files are not looked at: the fingerprint of a
    100,000-run store costs one directory listing and a few stat calls."""
    runs_dir = root / R.RUNS_DIR
    try:
        names = sorted(n for n in os.listdir(runs_dir) if not n.startswith("."))
    except OSError:
        return ((root / R.STORE_DOC).exists(),)
    done = finished if isinstance(finished, (set, frozenset)) else set(finished)
    sig = []
    for run_id in names:
        if run_id in done:
            continue
        stats = []
        for name in (R.RUN_DOC, R.EVALS_LIVE, R.EVALS_SEALED, R.TRAIN_LIVE, R.TRAIN_SEALED):
            try:
                st = os.stat(runs_dir / run_id / name)
                stats.append((st.st_mtime_ns, st.st_size))
            except OSError:
                stats.append(None)
        sig.append((run_id, *stats))
    return (True, len(names), hash(tuple(names)), tuple(sig))


def _frozen(value):
    return tuple(value) if isinstance(value, list) else value


def _indexed(root: Path) -> set[str]:
    """Runs that the store's run index lists (finished: never written again)."""
    try:
        return query.indexed_run_ids(open_store(root))
    except StoreError:
        return set()


def _forget_finished(signature: tuple, finished: set[str]) -> tuple:
    """`signature` as _store_signature would have written it, taken at the same moment, had it
    been told that the runs in `finished` had ended (their entries dropped)."""
    if len(signature) < 4:
        return signature
    return (*signature[:3], tuple(e for e in signature[3] if e[0] not in finished))


class _Shared:
    """What every dashboard session of one server process shares, per store: the last read
    (runs, rules, fingerprint) and the values computed from it. `panel serve` runs app.py once
    per browser tab; without this, each new tab would re-read and re-score a big store.
    Shared values must never be modified in place."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.reads: dict[str, tuple] = {}  # store path -> (signature, finished, runs, config, store)
        self.values: OrderedDict[tuple, object] = OrderedDict()

    def value(self, key: tuple, make):
        with self.lock:
            if key in self.values:
                self.values.move_to_end(key)
                return self.values[key]
        value = make()
        with self.lock:
            self.values[key] = value
            while len(self.values) > CACHE_SIZE:  # least recently used first
                self.values.popitem(last=False)
        return value


SHARED = _Shared()


def _roles(names: list[str], scored: list[str], config) -> dict[str, list[str]]:
    """Workloads by role: "scored" (as given), "held_out" (the config's held-out variants among
    `names` that are not scored), "other" (the rest of `names`)."""
    held_out = [w for w in names if config and w in config.held_out and w not in scored]
    other = [w for w in names if w not in scored and w not in held_out]
    return {"scored": scored, "held_out": held_out, "other": other}


def _keep_and_add(selected: list[str], known: list[str], names: list[str]) -> list[str]:
    """New selection after a reload: keep what was selected, and select names not seen before."""
    return [n for n in names if n in selected or n not in known]


class Selection(param.Parameterized):
    """Owns the store path and the filters; serves the filtered runs, the final cube and curves."""

    store_path = param.String(default="results", doc="Directory of the results store.")
    workloads = param.ListSelector(default=[], objects=[], doc="Workloads shown.")
    algorithms = param.ListSelector(default=[], objects=[], doc="Algorithms shown.")
    rulesets = param.ListSelector(default=[], objects=[],
                                  doc="AlgoPerf tuning rulesets shown (external, self).")
    studies = param.ListSelector(default=[], objects=[], doc="Study names shown.")
    hardware = param.ListSelector(default=[], objects=[],
                                  doc="Hardware shown (the key runs record their time on).")
    time_axis = param.Selector(default="train_seconds", objects=list(TIME_AXES),
                               doc="What time to target means (training seconds, wall seconds "
                                   "or update steps) and the x axis of the learning curves.")
    curve_runs = param.ListSelector(default=[], objects=[],
                                    doc="Runs drawn on the learning curves; none picked = "
                                        "the default (see shown_curve_runs).")
    reference = param.Selector(default=None, objects=[], allow_None=True,
                               doc="Algorithm the speedups are measured against.")
    message = param.String(default="", doc="Why there is nothing to show; empty when all is well.")
    version = param.Integer(default=0, doc="Bumped each time a refresh read new data.")

    def __init__(self, **params) -> None:
        super().__init__(**params)
        self._runs = pd.DataFrame(columns=list(R.RUN_COLUMNS))
        self._config: scoring.ScoringConfig | None = None
        self._store = None  # the open Store once a read succeeded
        self._signature: tuple | None = None
        self._finished: set[str] = set()  # runs that had ended at the last read
        self._data_key = 0  # identifies the data read (the same in every session that read it)
        self.refresh()

    # -- loading --------------------------------------------------------------------------
    def refresh(self) -> bool:
        """Re-read the store if anything in it changed; returns whether new data was read."""
        root = Path(self.store_path)
        key = str(root.resolve())
        if self._signature is None:  # first read: another session's, or the index's, runs
            shared = SHARED.reads.get(key)
            self._finished = shared[1] if shared else _indexed(root)
        signature = _store_signature(root, self._finished)
        if signature == self._signature:
            return False
        shared = SHARED.reads.get(key)
        if shared is not None and shared[0] == _forget_finished(signature, shared[1]):
            _, self._finished, self._runs, self._config, self._store = shared  # read already
            message = self._message(root)
        else:
            message = self._load(root)
            # taken before the read, so a run that writes during it is read again next time
            self._finished = set(self._runs.loc[self._runs["status"].isin(R.TERMINAL),
                                                "run_id"])
            if not message:
                SHARED.reads[key] = (_forget_finished(signature, self._finished),
                                     self._finished, self._runs, self._config, self._store)
        self._signature = _forget_finished(signature, self._finished)
        self._data_key = hash((key, self._signature))
        new = {}
        for name, column in FILTER_COLUMNS.items():
            names = sorted(self._runs[column].dropna().unique())
            new[name] = _keep_and_add(getattr(self, name), self.param[name].objects, names)
            self.param[name].objects = names
        self.param.curve_runs.objects = list(self._runs["run_id"])
        curve_runs = [r for r in self.curve_runs if r in self.param.curve_runs.objects]
        self.param.update(**new, curve_runs=curve_runs, message=message, version=self.version + 1)
        self._choose_reference()
        return True

    def _load(self, root: Path) -> str:
        """Read runs, evals and training rows; returns a message when there is nothing to show."""
        try:
            store = open_store(root)
            runs = store.runs()
            doc = store.scoring_config()
            config = scoring.ScoringConfig.from_dict(doc) if doc else None
        except StoreError as exc:
            return f"**No results to show.** {exc}"
        except Exception as exc:  # a store being written may be half-readable: say so, keep going
            return f"**Could not read the store at `{root}`:** {type(exc).__name__}: {exc}"
        self._store, self._runs, self._config = store, runs, config
        return self._message(root)

    def _message(self, root: Path) -> str:
        if not len(self._runs):
            return (f"The store at `{root}` has no runs yet. Start a study with "
                    f"`pacebench study --store {root} ...`; runs appear here as they are written.")
        return ""

    # -- filtered data --------------------------------------------------------------------
    @property
    def colors(self) -> dict[str, str]:
        """A fixed colour per algorithm of the whole store (stable while filters change)."""
        names = self.param.algorithms.objects
        return {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(names)}

    def _keep(self, workloads: list[str], algorithms: bool = True) -> np.ndarray:
        """Which rows of the run table pass every filter, with `workloads` in place of the
        workload filter (and every algorithm unless `algorithms`)."""
        keep = np.array(self._runs["workload"].isin(workloads), dtype=bool)
        for name, column in FILTER_COLUMNS.items():
            if name == "workloads" or (name == "algorithms" and not algorithms):
                continue
            if len(getattr(self, name)) < len(self.param[name].objects):
                keep &= np.asarray(self._runs[column].isin(getattr(self, name)), dtype=bool)
        return keep

    def _filtered(self, workloads: list[str], algorithms: bool = True) -> pd.DataFrame:
        """Run attempts passing every filter (see _keep)."""
        return self._runs[self._keep(workloads, algorithms)]

    @property
    def runs(self) -> pd.DataFrame:
        """Run attempts passing the filters (records.RUN_COLUMNS)."""
        return self.cached("runs", lambda: self._runs[self.shown_rows()])

    def runs_where(self, columns: list[str] | None = None, **equals) -> pd.DataFrame:
        """The filtered runs whose run-table columns equal the values given (e.g.
        `status="running"`), their `columns` only (default: all); only those rows are copied."""
        rows = self.shown_rows()
        for column, value in equals.items():
            codes, values = self._codes(column)
            found = np.flatnonzero(np.asarray(values == value, dtype=bool))
            rows = rows & np.isin(codes, found)
        return self._runs.loc[rows, list(columns) if columns is not None else slice(None)]

    def shown_rows(self) -> np.ndarray:
        """The boolean mask of the run table's rows that pass the filters (cached)."""
        return self.cached("shown_rows", lambda: self._keep(self.workloads))

    def recent_runs(self, limit: int) -> list[str]:
        """Ids of the `limit` most recently started runs that pass the filters."""
        order = self.cached("recent_order", lambda: np.argsort(
            self._runs["started_at"].to_numpy(object).astype(str), kind="stable")[::-1],
            filters=())
        ids = self._runs["run_id"].to_numpy(object)
        return ids[order[self.shown_rows()[order]][:limit]].tolist()

    def variant_workloads(self) -> frozenset:
        """The store's workloads that are variants of another (base_workload differs)."""
        def make():
            runs = self._runs
            return frozenset(runs.loc[runs["workload"] != runs["base_workload"],
                                      "workload"].unique().tolist())
        return self.cached("variant_workloads", make, filters=())

    @property
    def n_runs(self) -> int:
        """How many run attempts pass the filters (no copy of the run table)."""
        return self.cached("n_runs", lambda: int(self.shown_rows().sum()))

    def _codes(self, column: str) -> tuple[np.ndarray, np.ndarray]:
        """`pd.factorize` of a run-table column, once per read: (codes, distinct values);
        code -1 for a null."""
        return self.cached(f"codes:{column}", lambda: pd.factorize(self._runs[column]),
                           filters=())

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
    def store(self):
        """The open Store once a read succeeded, else None."""
        return self._store

    @property
    def store_config(self) -> scoring.ScoringConfig | None:
        """The scoring rules the store records (an AlgoPerf import), None for our own studies."""
        return self._config

    @property
    def scoring_config(self) -> scoring.ScoringConfig | None:
        """The store's rules restricted to the shown workloads (None: the plain rules).

        Scored: the store's base workloads that are shown; held out: their variants.
        """
        config = self._config
        if config is None or config.base_workloads is None:
            return config
        known = self.param.workloads.objects  # a base without any run stays: a miss for all
        bases = tuple(w for w in config.base_workloads if w in self.workloads or w not in known)
        held_out = {v: b for v, b in config.held_out.items() if b in bases}
        return dataclasses.replace(config, base_workloads=bases, held_out=held_out,
                                   apply_held_out=config.apply_held_out and bool(held_out))

    def cached(self, name: str, make, filters: tuple[str, ...] | None = None):
        """`make()`, computed once per (name, data read, filters, time axis) and shared by the
        sessions of this server process: the cubes and tables that views derive from the
        selection are computed once per filter setting, and the last CACHE_SIZE are kept so
        that switching back is instant. `filters`: the only filters the value depends on
        (default: all, the curve runs and the time axis). Never modify the value in place."""
        names = filters if filters is not None else \
            (*FILTER_COLUMNS, "curve_runs", "time_axis")
        key = (name, self._data_key, *((n, _frozen(getattr(self, n))) for n in names))
        return SHARED.value(key, make)

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
        algorithms, workloads = self.cached("cut", make, ("algorithms", "workloads",
                                                          "rulesets", "studies", "hardware"))
        return full.sel(algorithm=algorithms, workload=workloads)

    def _per_cell(self, name: str, make):
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
        filters = ("rulesets", "studies", "hardware") + (("time_axis",) if time_axis else ())
        return self.cached(f"full:{name}", make, filters)

    def full_runs(self) -> pd.DataFrame:
        """Run attempts passing the ruleset, study and hardware filters, of every algorithm
        and workload (what full_cube is built from)."""
        return self.full_value("runs", lambda: self._filtered(self.param.workloads.objects,
                                                              algorithms=False),
                               time_axis=False)

    def full_cube(self, time_axis: str | None = None):
        """The final cube of full_runs, its time_to_target on `time_axis` (default: the
        selection's; a shallow copy per axis of one cube built per ruleset, study and
        hardware filter)."""
        axis = time_axis or self.time_axis
        if axis not in TIME_AXES:
            raise ValueError(f"unknown time axis {axis!r}: valid are {list(TIME_AXES)}")
        cube = self.full_value("cube", lambda: cubes.final_cube(self.full_runs()),
                               time_axis=False)
        if axis == "train_seconds":
            return cube

        def on_axis():
            times = cube[TIME_TO_TARGET[axis]]
            return cube.assign(time_to_target=times.assign_attrs(
                units=times.attrs.get("units", "s")))
        return self.full_value(f"cube:{axis}", on_axis, time_axis=False)

    def scores(self) -> pd.DataFrame:
        """`scoring.score_table` of the cube under the scoring rules, best score first (ties:
        exact score); empty when no run or no scored workload is shown."""
        def make():
            if not self.n_runs or not self.workload_groups()["scored"]:
                return pd.DataFrame(columns=list(scoring.SCORE_COLUMNS))
            table = scoring.score_table_of_times(self.workload_times(), self.scoring_config)
            return table.sort_values(["score", "exact_score"], ascending=False,
                                     kind="stable").reset_index(drop=True)
        return self.cached("scores", make)

    def study_times(self) -> xr.DataArray:
        """`scoring.study_times` of the cube: the chosen trial's time to target per
        (algorithm, workload, study), on the chosen time axis (cached)."""
        return self._per_cell("study_times", self._all_study_times)

    def _all_study_times(self) -> xr.DataArray:
        return self.full_value("study_times", lambda: scoring.study_times(self.full_cube()))

    def workload_times(self) -> xr.DataArray:
        """`scoring.workload_times` of the cube: median time to target per (algorithm,
        workload), on the chosen time axis (cached)."""
        return self._per_cell("workload_times", lambda: scoring.median_over_studies(
            self._all_study_times()))

    def bootstrap_medians(self, n: int, seed: int = 0) -> xr.DataArray:
        """`scoring.bootstrap_medians` of the study times (cached), drawn once over every
        algorithm and workload: a filter change reuses the draws of the cells it shows."""
        return self._per_cell(f"bootstrap:{n}:{seed}", lambda: scoring.bootstrap_medians(
            self._all_study_times(), n, seed))

    def workload_groups(self) -> dict[str, list[str]]:
        """The shown workloads by role: "scored", "held_out" (scoring inputs), "other"."""
        config = self.scoring_config
        shown = [w for w in self.param.workloads.objects if w in self.workloads]
        if config is not None and config.base_workloads is not None:
            scored = list(config.base_workloads)
        else:
            scored = [w for w in scoring.scored_workloads(self.workload_times()) if w in shown] \
                if self.n_runs else []
        return _roles(shown, scored, config)

    def store_workload_groups(self) -> dict[str, list[str]]:
        """workload_groups as they would be with every workload of the store shown (the
        columns a view can keep while workloads are ticked, hiding the unshown ones)."""
        def make():
            config = self._config
            names = list(self.param.workloads.objects)
            if config is not None and config.base_workloads is not None:
                scored = list(config.base_workloads)
            else:
                cube = self.full_cube()
                scored = scoring.scored_workloads(cube) if cube.sizes.get("workload") else []
            return _roles(names, scored, config)
        return self.cached("store_workload_groups", make, ("rulesets", "studies", "hardware"))

    @property
    def ruleset(self) -> str:
        """The AlgoPerf ruleset of the shown runs ("self" or "external"; external if mixed)."""
        rulesets = set(self.present("ruleset"))
        return rulesets.pop() if len(rulesets) == 1 else "external"

    def _choose_reference(self) -> None:
        """Reference for speedups: kept while shown, else "baseline", else the top scorer
        (shown: an algorithm with runs that pass the filters)."""
        present = self.present("algorithm")
        shown = [a for a in self.param.algorithms.objects if a in present]
        self.param.reference.objects = shown
        if self.reference in shown or not shown:
            self.reference = self.reference if shown else None
            return
        if DEFAULT_REFERENCE in shown:
            self.reference = DEFAULT_REFERENCE
            return
        scores = self.scores()
        self.reference = scores["algorithm"].iloc[0] if len(scores) else shown[0]

    @param.depends("algorithms", "workloads", "rulesets", "studies", "hardware", watch=True)
    def _filters_changed(self) -> None:
        self._choose_reference()

    @property
    def shown_curve_runs(self) -> pd.DataFrame:
        """Runs on the learning curves: the picked ones that pass the filters, else per workload
        all its runs if at most MAX_DEFAULT_CURVES, else one per algorithm (_representatives)."""
        def make():
            runs = self.runs
            if self.curve_runs:
                return runs[runs["run_id"].isin(self.curve_runs)]
            counts = runs.groupby("workload")["run_id"].transform("size")
            keep = (counts <= MAX_DEFAULT_CURVES) | runs["run_id"].isin(self._representatives())
            return runs[keep].groupby("workload").head(MAX_DEFAULT_CURVES)
        return self.cached("shown_curve_runs", make)

    def _representatives(self) -> list[str]:
        """Per (algorithm, workload): the chosen trial of its middle study (by time) among the
        studies that met the target (scoring.study_choices); none where no study did."""
        def make():
            if not self.n_runs:
                return []
            choices = scoring.study_choices(self.cube)[["time_to_target", "run_id"]]
            frame = choices.to_dataframe().reset_index()
            frame = frame[frame["run_id"] != ""].sort_values("time_to_target", kind="stable")
            groups = frame.groupby(["algorithm", "workload"])["run_id"]
            return [ids.iloc[(len(ids) - 1) // 2] for _, ids in groups]
        return self.cached("representatives", make)

    def curve_evals(self) -> pd.DataFrame:
        """Eval rows of `shown_curve_runs` (read from the store on first use)."""
        ids = list(self.shown_curve_runs["run_id"])
        return self.cached("evals", lambda: self._store.evals(ids) if ids else
                            pd.DataFrame(columns=list(R.EVAL_COLUMNS)))

    def curve_train(self) -> pd.DataFrame:
        """Training-loss rows of `shown_curve_runs` (read from the store on first use)."""
        ids = list(self.shown_curve_runs["run_id"])
        return self.cached("train", lambda: self._store.train_rows(ids) if ids else
                            pd.DataFrame(columns=list(R.TRAIN_COLUMNS)))


class Filters(pn.viewable.Viewer):
    """Sidebar widgets bound to a Selection's filters. Workloads come as two lists, the base
    workloads and their variants, that together set `selection.workloads`. A filter is hidden
    while it offers no choice (ruleset, study, hardware: fewer than two values)."""

    selection = param.ClassSelector(class_=Selection)

    def __init__(self, **params) -> None:
        super().__init__(**params)
        sel = self.selection.param
        self._bases = pn.widgets.CheckBoxGroup(css_classes=["pb-base-workloads"])
        self._variants = pn.widgets.CheckBoxGroup(css_classes=["pb-variant-filter"])
        self._runs_picker = pn.widgets.MultiChoice(
            placeholder="default: see the Curves tab", search_option_limit=50,
            css_classes=["pb-curve-runs"])
        self._choices = {  # filter name -> its titled widget
            "reference": pn.Column("**Speedups against**", pn.widgets.Select.from_param(
                sel.reference, name="")),
            "algorithms": pn.Column("**Algorithms**",
                                    pn.widgets.CheckBoxGroup.from_param(sel.algorithms, name="")),
            "workloads": pn.Column("**Workloads**", self._bases),
            "variants": pn.Column("**Variants**", self._variants),
            "rulesets": pn.Column("**Ruleset**",
                                  pn.widgets.CheckBoxGroup.from_param(sel.rulesets, name="")),
            "studies": pn.Column("**Studies**",
                                 pn.widgets.CheckBoxGroup.from_param(sel.studies, name="")),
            "hardware": pn.Column("**Hardware**",
                                  pn.widgets.CheckBoxGroup.from_param(sel.hardware, name="")),
            "curve_runs": pn.Column("**Runs on the curves**", self._runs_picker),
        }
        self._syncing = False
        self._runs_picker.param.watch(self._picked, "value")
        self._bases.param.watch(self._boxes_changed, "value")
        self._variants.param.watch(self._boxes_changed, "value")
        self._show_filled()
        self._offer_runs()

    def _split(self) -> tuple[list[str], list[str]]:
        """The store's workloads: (base workloads, variants)."""
        names = self.selection.param.workloads.objects
        variant = self.selection.variant_workloads()
        return [w for w in names if w not in variant], [w for w in names if w in variant]

    @param.depends("selection.version", "selection.workloads", watch=True)
    def _show_filled(self) -> None:
        bases, variants = self._split()
        shown = set(self.selection.workloads)
        self._syncing = True  # the boxes follow the selection here, not the other way round
        try:
            self._bases.param.update(options=bases, value=[w for w in bases if w in shown])
            self._variants.param.update(options=variants,
                                        value=[w for w in variants if w in shown])
        finally:
            self._syncing = False
        for name, column in self._choices.items():
            if name == "variants":
                column.visible = bool(variants)
            elif name == "workloads":
                column.visible = bool(bases)
            else:
                least = 2 if name in ("rulesets", "studies", "hardware") else 1
                column.visible = len(self.selection.param[name].objects) >= least

    @param.depends("selection.version", "selection.workloads", "selection.algorithms",
                   "selection.rulesets", "selection.studies", "selection.hardware",
                   "selection.curve_runs", watch=True)
    def _offer_runs(self) -> None:
        """The picker offers the filtered runs, the most recent MAX_PICKABLE of them (a list of
        100,000 ids would weigh on the page), plus the ones picked."""
        sel = self.selection
        picked = list(sel.curve_runs)
        recent = sel.recent_runs(MAX_PICKABLE + len(picked))
        options = picked + [r for r in recent if r not in picked][:MAX_PICKABLE]
        self._syncing = True
        try:
            self._runs_picker.param.update(options=options, value=picked)
        finally:
            self._syncing = False

    def _picked(self, event) -> None:
        if not self._syncing and list(event.new) != list(self.selection.curve_runs):
            self.selection.curve_runs = list(event.new)

    def _boxes_changed(self, _event) -> None:
        if self._syncing:
            return
        chosen = set(self._bases.value) | set(self._variants.value)
        workloads = [w for w in self.selection.param.workloads.objects if w in chosen]
        if workloads != list(self.selection.workloads):
            self.selection.workloads = workloads

    def __panel__(self) -> pn.viewable.Viewable:
        time_axis = pn.widgets.RadioButtonGroup.from_param(
            self.selection.param.time_axis, name="", color="light",
            options={label: column for column, label in TIME_AXES.items()})
        c = self._choices
        return pn.Column(c["reference"], "**Time axis**", time_axis, c["algorithms"],
                         c["workloads"], c["variants"], c["rulesets"], c["studies"],
                         c["hardware"], c["curve_runs"], sizing_mode="stretch_width")


class StoreNotice(pn.viewable.Viewer):
    """A visible notice when the store is missing, unreadable or empty; hidden otherwise."""

    selection = param.ClassSelector(class_=Selection)

    def __panel__(self) -> pn.viewable.Viewable:
        alert = pn.pane.Alert(alert_type="warning", sizing_mode="stretch_width")

        def show(message: str) -> None:
            alert.param.update(object=message, visible=bool(message))

        show(self.selection.message)
        self.selection.param.watch(lambda event: show(event.new), "message")
        return alert
