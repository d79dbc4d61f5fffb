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
from pathlib import Path

import pandas as pd
import panel as pn
import param
from bokeh.palettes import Category20_20

from workbench import cubes, scoring
from workbench import records as R
from workbench.store import StoreError, open_store

__all__ = ["Selection", "Filters", "StoreNotice", "TIME_AXES", "MAX_DEFAULT_CURVES", "PALETTE",
           "DEFAULT_REFERENCE"]

# Time axes of the learning curves: eval-row column -> axis label.
TIME_AXES = {"train_seconds": "train seconds", "wall_seconds": "wall seconds", "step": "steps"}
# Runs drawn per workload when no run is picked: all of them up to this many, else the chosen
# trial of one study per algorithm (keeps a 3,700-run store readable and fast to draw).
MAX_DEFAULT_CURVES = 48
# 20 distinct colours, the strong ten first: 11 AlgoPerf submissions get 11 colours.
PALETTE = tuple(Category20_20[0::2] + Category20_20[1::2])
DEFAULT_REFERENCE = "baseline"  # speedups are measured against it when the store has it


def _store_signature(root: Path) -> tuple:
    """Cheap fingerprint of a store (stat calls only): changes when any run writes or seals rows."""
    runs_dir = root / R.RUNS_DIR
    if not runs_dir.is_dir():
        return ((root / R.STORE_DOC).exists(),)
    sig = []
    for run in sorted(runs_dir.iterdir()):
        files = (R.RUN_DOC, R.EVALS_LIVE, R.EVALS_SEALED, R.TRAIN_LIVE, R.TRAIN_SEALED)
        stats = [(run / f).stat() if (run / f).exists() else None for f in files]
        sig.append((run.name, *[(s.st_mtime_ns, s.st_size) if s else None for s in stats]))
    return (True, tuple(sig))


def _keep_and_add(selected: list[str], known: list[str], names: list[str]) -> list[str]:
    """New selection after a reload: keep what was selected, and select names not seen before."""
    return [n for n in names if n in selected or n not in known]


class Selection(param.Parameterized):
    """Owns the store path and the filters; serves the filtered runs, the final cube and curves."""

    store_path = param.String(default="results", doc="Directory of the results store.")
    workloads = param.ListSelector(default=[], objects=[], doc="Workloads shown.")
    algorithms = param.ListSelector(default=[], objects=[], doc="Algorithms shown.")
    time_axis = param.Selector(default="train_seconds", objects=list(TIME_AXES),
                               doc="x axis of the learning curves.")
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
        self._cache: dict[tuple, object] = {}  # cubes and curve rows of the current data
        self.refresh()

    # -- loading --------------------------------------------------------------------------
    def refresh(self) -> bool:
        """Re-read the store if anything in it changed; returns whether new data was read."""
        root = Path(self.store_path)
        signature = _store_signature(root)
        if signature == self._signature:
            return False
        self._signature = signature
        message = self._load(root)
        self._cache.clear()
        workloads = sorted(self._runs["workload"].dropna().unique())
        algorithms = sorted(self._runs["algorithm"].dropna().unique())
        new = dict(workloads=_keep_and_add(self.workloads, self.param.workloads.objects, workloads),
                   algorithms=_keep_and_add(self.algorithms, self.param.algorithms.objects,
                                            algorithms))
        self.param.workloads.objects, self.param.algorithms.objects = workloads, algorithms
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
        if not len(runs):
            return (f"The store at `{root}` has no runs yet. Start a study with "
                    f"`pacebench study --store {root} ...`; runs appear here as they are written.")
        return ""

    # -- filtered data --------------------------------------------------------------------
    @property
    def colors(self) -> dict[str, str]:
        """A fixed colour per algorithm of the whole store (stable while filters change)."""
        names = self.param.algorithms.objects
        return {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(names)}

    @property
    def runs(self) -> pd.DataFrame:
        """Run attempts of the selected workloads and algorithms (records.RUN_COLUMNS)."""
        keep = self._runs["workload"].isin(self.workloads) & \
            self._runs["algorithm"].isin(self.algorithms)
        return self._runs[keep]

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

    def _cached(self, name: str, make):
        key = (name, self.version, tuple(self.workloads), tuple(self.algorithms),
               tuple(self.curve_runs))
        if key not in self._cache:
            self._cache[key] = make()
        return self._cache[key]

    @property
    def cube(self):
        """`cubes.final_cube` of the filtered runs and of the held-out variants they are scored
        with (cached until the data or filters change)."""
        def make():
            config = self.scoring_config
            inputs = set(self.workloads) | set(config.held_out if config else ())
            runs = self._runs[self._runs["workload"].isin(inputs)
                              & self._runs["algorithm"].isin(self.algorithms)]
            return cubes.final_cube(runs)
        return self._cached("cube", make)

    def workload_groups(self) -> dict[str, list[str]]:
        """The shown workloads by role: "scored", "held_out" (scoring inputs), "other"."""
        config = self.scoring_config
        shown = [w for w in self.param.workloads.objects if w in self.workloads]
        if config is not None and config.base_workloads is not None:
            scored = list(config.base_workloads)
        else:
            scored = [w for w in scoring.scored_workloads(self.cube) if w in shown] \
                if len(self.runs) else []
        held_out = [w for w in shown if config and w in config.held_out and w not in scored]
        other = [w for w in shown if w not in scored and w not in held_out]
        return {"scored": scored, "held_out": held_out, "other": other}

    @property
    def ruleset(self) -> str:
        """The AlgoPerf ruleset of the shown runs ("self" or "external"; external if mixed)."""
        rulesets = set(self.runs["ruleset"].dropna())
        return rulesets.pop() if len(rulesets) == 1 else "external"

    def _choose_reference(self) -> None:
        """Reference for speedups: kept while shown, else "baseline", else the top scorer."""
        shown = [a for a in self.param.algorithms.objects if a in self.algorithms]
        self.param.reference.objects = shown
        if self.reference in shown or not shown:
            self.reference = self.reference if shown else None
            return
        if DEFAULT_REFERENCE in shown:
            self.reference = DEFAULT_REFERENCE
            return
        scored = self.workload_groups()["scored"]
        top = scoring.score_table(self.cube, self.scoring_config)["algorithm"].iloc[0] \
            if scored and len(self.runs) else shown[0]
        self.reference = top

    @param.depends("algorithms", "workloads", watch=True)
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
        return self._cached("shown_curve_runs", make)

    def _representatives(self) -> list[str]:
        """Per (algorithm, workload): the chosen trial of its middle study (by time) among the
        studies that met the target (scoring.study_choices); none where no study did."""
        def make():
            if not len(self.runs):
                return []
            choices = scoring.study_choices(self.cube)[["time_to_target", "run_id"]]
            frame = choices.to_dataframe().reset_index()
            frame = frame[frame["run_id"] != ""].sort_values("time_to_target", kind="stable")
            groups = frame.groupby(["algorithm", "workload"])["run_id"]
            return [ids.iloc[(len(ids) - 1) // 2] for _, ids in groups]
        return self._cached("representatives", make)

    def curve_evals(self) -> pd.DataFrame:
        """Eval rows of `shown_curve_runs` (read from the store on first use)."""
        ids = list(self.shown_curve_runs["run_id"])
        return self._cached("evals", lambda: self._store.evals(ids) if ids else
                            pd.DataFrame(columns=list(R.EVAL_COLUMNS)))

    def curve_train(self) -> pd.DataFrame:
        """Training-loss rows of `shown_curve_runs` (read from the store on first use)."""
        ids = list(self.shown_curve_runs["run_id"])
        return self._cached("train", lambda: self._store.train_rows(ids) if ids else
                            pd.DataFrame(columns=list(R.TRAIN_COLUMNS)))


class Filters(pn.viewable.Viewer):
    """Sidebar widgets bound to a Selection's filters; a filter with no choices yet is hidden."""

    selection = param.ClassSelector(class_=Selection)

    def __init__(self, **params) -> None:
        super().__init__(**params)
        sel = self.selection.param
        self._choices = {  # filter name -> its titled widget
            "algorithms": pn.Column("**Algorithms**",
                                    pn.widgets.CheckBoxGroup.from_param(sel.algorithms, name="")),
            "workloads": pn.Column("**Workloads**",
                                   pn.widgets.CheckBoxGroup.from_param(sel.workloads, name="")),
            "reference": pn.Column("**Speedups against**", pn.widgets.Select.from_param(
                sel.reference, name="")),
            "curve_runs": pn.Column("**Runs on the curves**", pn.widgets.MultiChoice.from_param(
                sel.curve_runs, name="", placeholder="default: see the Curves tab")),
        }
        self._show_filled()

    @param.depends("selection.version", watch=True)
    def _show_filled(self) -> None:
        for name, column in self._choices.items():
            column.visible = bool(self.selection.param[name].objects)

    def __panel__(self) -> pn.viewable.Viewable:
        time_axis = pn.widgets.RadioButtonGroup.from_param(
            self.selection.param.time_axis, name="", color="light",
            options={label: column for column, label in TIME_AXES.items()})
        return pn.Column(self._choices["reference"], self._choices["algorithms"],
                         self._choices["workloads"], "**Time axis** (curves)", time_axis,
                         self._choices["curve_runs"],
                         sizing_mode="stretch_width")


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
