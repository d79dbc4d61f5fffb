"""The one selection object of the dashboard: the store, the filters, and the data they leave.

`Selection` reads the store (runs, eval rows, training-loss rows) once per refresh and filters it;
every view reads its frames and cube from here and watches its parameters. It computes no metric:
the final cube comes from `workbench.cubes`, scores and profiles from `workbench.scoring`.
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd
import panel as pn
import param
from bokeh.palettes import Category10_10

from workbench import cubes
from workbench import records as R
from workbench.store import StoreError, open_store

__all__ = ["Selection", "Filters", "StoreNotice", "TIME_AXES", "MAX_DEFAULT_CURVES"]

# Time axes of the learning curves: eval-row column -> axis label.
TIME_AXES = {"train_seconds": "train seconds", "wall_seconds": "wall seconds", "step": "steps"}
MAX_DEFAULT_CURVES = 48  # runs drawn when no run is picked explicitly (keeps big stores readable)


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
                                    doc="Runs drawn on the learning curves; none picked = all "
                                        f"shown runs (at most {MAX_DEFAULT_CURVES}).")
    message = param.String(default="", doc="Why there is nothing to show; empty when all is well.")
    version = param.Integer(default=0, doc="Bumped each time a refresh read new data.")

    def __init__(self, **params) -> None:
        super().__init__(**params)
        self._runs = pd.DataFrame(columns=list(R.RUN_COLUMNS))
        self._evals = pd.DataFrame(columns=list(R.EVAL_COLUMNS))
        self._train = pd.DataFrame(columns=list(R.TRAIN_COLUMNS))
        self._signature: tuple | None = None
        self._cube_cache: dict[tuple, object] = {}
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
        self._cube_cache.clear()
        workloads = sorted(self._runs["workload"].dropna().unique())
        algorithms = sorted(self._runs["algorithm"].dropna().unique())
        new = dict(workloads=_keep_and_add(self.workloads, self.param.workloads.objects, workloads),
                   algorithms=_keep_and_add(self.algorithms, self.param.algorithms.objects,
                                            algorithms))
        self.param.workloads.objects, self.param.algorithms.objects = workloads, algorithms
        self.param.curve_runs.objects = list(self._runs["run_id"])
        curve_runs = [r for r in self.curve_runs if r in self.param.curve_runs.objects]
        self.param.update(**new, curve_runs=curve_runs, message=message, version=self.version + 1)
        return True

    def _load(self, root: Path) -> str:
        """Read runs, evals and training rows; returns a message when there is nothing to show."""
        try:
            store = open_store(root)
            runs = store.runs()
            evals = store.evals() if len(runs) else self._evals.iloc[:0]
            train = store.train_rows() if len(runs) else self._train.iloc[:0]
        except StoreError as exc:
            return f"**No results to show.** {exc}"
        except Exception as exc:  # a store being written may be half-readable: say so, keep going
            return f"**Could not read the store at `{root}`:** {type(exc).__name__}: {exc}"
        self._runs, self._evals, self._train = runs, evals, train
        if not len(runs):
            return (f"The store at `{root}` has no runs yet. Start a study with "
                    f"`pacebench study --store {root} ...`; runs appear here as they are written.")
        return ""

    # -- filtered data --------------------------------------------------------------------
    @property
    def colors(self) -> dict[str, str]:
        """A fixed colour per algorithm of the whole store (stable while filters change)."""
        names = self.param.algorithms.objects
        return {name: Category10_10[i % len(Category10_10)] for i, name in enumerate(names)}

    @property
    def runs(self) -> pd.DataFrame:
        """Run attempts of the selected workloads and algorithms (records.RUN_COLUMNS)."""
        keep = self._runs["workload"].isin(self.workloads) & \
            self._runs["algorithm"].isin(self.algorithms)
        return self._runs[keep]

    @property
    def cube(self):
        """`cubes.final_cube` of the filtered runs (cached until the data or filters change)."""
        key = (self.version, tuple(self.workloads), tuple(self.algorithms))
        if key not in self._cube_cache:
            self._cube_cache.clear()
            self._cube_cache[key] = cubes.final_cube(self.runs)
        return self._cube_cache[key]

    @property
    def shown_curve_runs(self) -> pd.DataFrame:
        """Runs on the learning curves: the picked ones that pass the filters, else the first."""
        runs = self.runs
        if self.curve_runs:
            return runs[runs["run_id"].isin(self.curve_runs)]
        return runs.head(MAX_DEFAULT_CURVES)

    def curve_evals(self) -> pd.DataFrame:
        """Eval rows of `shown_curve_runs`."""
        return self._evals[self._evals["run_id"].isin(self.shown_curve_runs["run_id"])]

    def curve_train(self) -> pd.DataFrame:
        """Training-loss rows of `shown_curve_runs`."""
        return self._train[self._train["run_id"].isin(self.shown_curve_runs["run_id"])]


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
            "curve_runs": pn.Column("**Runs on the curves**", pn.widgets.MultiChoice.from_param(
                sel.curve_runs, name="", placeholder="all shown runs")),
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
        return pn.Column(self._choices["algorithms"], self._choices["workloads"],
                         "**Time axis** (curves)", time_axis, self._choices["curve_runs"],
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
