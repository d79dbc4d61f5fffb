"""Hyperparameters: each trial's outcome (time to target or best validation value) against each
hyperparameter, and a parallel-coordinates view of the trials, for one workload and algorithm
picked in the view.

The trial table, the log-axis rule and the normalisation are `workbench.hparams`; this view only
draws them. At most MAX_TRIALS trials are drawn: above that, a fixed random sample
(`hparams.sample_trials`, seed 0), and the view says how many of how many. Beneath, the tuning
report (workbench/tuning.py) of every shown algorithm on the picked workload: its findings and
the search spaces as a table, each side's best trial and its position in each range.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import panel as pn
import param
from bokeh.models import BasicTickFormatter

from workbench.errors import UserError
from workbench import hparams as H
from workbench.results import Results
from workbench.views import tuning as VT
from workbench.views.base import View
from workbench.views.formats import log_ticks, md
from workbench.views.live import LivePlot
from workbench.views.selection import Selection
from workbench.views.plotting import hv


__all__ = ["Hyperparameters", "figures", "trials_for", "scatter_plots", "scatter_list",
           "scatter_points",
           "parallel_plot",
           "MAX_TRIALS", "OUTCOMES"]

MAX_TRIALS = 2000  # trials drawn at most, per workload and algorithm (a Bokeh line each)
OUTCOMES = {"time_to_target": "time to target", "best_validation": "best validation value"}
MISS_COLOR = "#aaaaaa"
SCATTER_SIZE = (340, 300)  # pixels: each scatter's least width (it takes its column's) and height
SCATTER_COLUMNS = 3
MISS_LEVEL = 1.12  # where a miss sits on the parallel plot's outcome axis (axes span 0..1)
CMAP = "viridis"


def trials_for(selection: Selection, workload: str, algorithm: str) -> pd.DataFrame:
    """`hparams.trial_frame` of one workload and algorithm of the selection (empty when the
    selection has no such runs); cached with the selection's data and filters."""
    def make() -> pd.DataFrame:
        mine = selection.runs_where(workload=workload, algorithm=algorithm)
        if not len(mine):
            return pd.DataFrame(columns=list(H.OUTCOME_COLUMNS))
        return H.trial_frame(selection.cube, mine, workload, algorithm)
    return selection.cached(f"hparams_trials/{workload}/{algorithm}", make).copy()


def _time_label(frame: pd.DataFrame) -> str:
    return f"time to target ({frame.attrs.get('time_units', 's')})"


def _outcome_label(frame: pd.DataFrame, outcome: str, metric: str) -> str:
    return _time_label(frame) if outcome == "time_to_target" else f"best validation {metric}"


def scatter_plots(frame: pd.DataFrame, algorithm: str, outcome: str = "time_to_target",
                  metric: str = "target metric") -> hv.Layout | None:
    """One scatter per varying numeric hyperparameter (scatter_list), as a Layout of three
    columns (for figures). None when no hyperparameter varies."""
    plots = scatter_list(frame, algorithm, outcome, metric)
    return hv.Layout(plots).cols(3).opts(shared_axes=False) if plots else None


def _scatter_scales(frame: pd.DataFrame, algorithm: str, outcome: str):
    """What both scatter builders share: the varying numeric axes, which are log, the outcome's
    values (an array) and its finite ones, whether the outcome axis is log, and the height of the
    misses' line (1.1x the slowest hit, 1.5x on a log axis); None when nothing varies."""
    if outcome not in OUTCOMES:
        raise UserError(f"unknown outcome {outcome!r}: valid are {list(OUTCOMES)}")
    axes = H.numeric_axes(frame)
    if not axes or not len(frame):
        return None
    logs = H.log_axes(frame, algorithm, axes)
    values = frame[outcome].astype(float).to_numpy()
    finite = values[np.isfinite(values)]
    logy = H.infer_log(pd.Series(finite))
    miss_y = (finite.max() * (1.5 if logy else 1.1)) if len(finite) else 1.0
    return axes, logs, values, finite, logy, miss_y


def scatter_list(frame: pd.DataFrame, algorithm: str, outcome: str = "time_to_target",
                 metric: str = "target metric") -> list[hv.Overlay]:
    """One scatter per varying numeric hyperparameter: the outcome against it (log x where
    `hparams.log_axes` says so). Time to target: a miss is a grey cross on a line above the
    slowest hit (1.1x its time, 1.5x on a log axis). Empty when no hyperparameter varies."""
    scales = _scatter_scales(frame, algorithm, outcome)
    if scales is None:
        return []
    axes, logs, values, finite, logy, miss_y = scales
    values = pd.Series(values, index=frame.index)
    y_label = _outcome_label(frame, outcome, metric)
    plots = []
    for column in axes:
        name = H.hparam_name(column)
        data = pd.DataFrame({name: frame[column].astype(float), "outcome": values,
                             "run_id": frame["run_id"], "study": frame["study"],
                             "trial": frame["trial"]})
        hit = data[np.isfinite(data["outcome"])]
        miss = data[np.isinf(data["outcome"])].assign(outcome=miss_y)
        vdims = [hv.Dimension("outcome", label=y_label), "run_id", "study", "trial"]
        points = hv.Scatter(hit, kdims=name, vdims=vdims, label="reached").opts(
            color="#1f77b4", size=7, alpha=0.8)
        misses = hv.Scatter(miss, kdims=name, vdims=vdims, label="miss").opts(
            color=MISS_COLOR, marker="x", size=9)
        plots.append((points * misses).opts(
            hv.opts.Scatter(tools=["hover"]),
            hv.opts.Overlay(logx=logs[column], logy=logy, title=name, xlabel=name,
                            ylabel=y_label, show_legend=False, responsive=True,
                            height=SCATTER_SIZE[1], show_grid=True,
                            # plain numbers at the precision the ticks need: neither
                            # '1.000e-5' nor '1.7000000000000002' (Bokeh's printf '%g')
                            xformatter=BasicTickFormatter(use_scientific=False),
                            yformatter=BasicTickFormatter(use_scientific=False),
                            **_log_ticks_of("yticks", finite, logy),
                            **_log_ticks_of("xticks", data[name], logs[column]))))
    return plots


def scatter_points(frame: pd.DataFrame, algorithm: str, outcome: str = "time_to_target",
                   metric: str = "target metric") -> list[dict]:
    """What the dashboard's scatters draw (scatter_list's plots, for LivePlots): per varying
    numeric hyperparameter, "name", "x_log", "y_log", "y_label", "points" (views/live.py Point:
    a hit a blue dot, a miss a grey cross at 1.1x the slowest hit, 1.5x on a log axis) and the
    log axes' "xticks", "yticks" (None: Bokeh's)."""
    scales = _scatter_scales(frame, algorithm, outcome)
    if scales is None:
        return []
    axes, logs, values, finite, logy, miss_y = scales
    notes = [f"{r} (study {s}, trial {t})" for r, s, t in
             zip(frame["run_id"], frame["study"], frame["trial"])]
    out = []
    for column in axes:
        x = frame[column].astype(float).to_numpy()
        points = [("reached", "#1f77b4", xi, yi, note, "circle", 7, "#1f77b4")
                  if np.isfinite(yi) else ("miss", MISS_COLOR, xi, miss_y, note, "x", 9, MISS_COLOR)
                  for xi, yi, note in zip(x, values, notes) if not np.isnan(yi)]
        out.append({"name": H.hparam_name(column), "x_log": bool(logs[column]), "y_log": logy,
                    "y_label": _outcome_label(frame, outcome, metric), "points": points,
                    "xticks": log_ticks(pd.Series(x)) if logs[column] else None,
                    "yticks": log_ticks(pd.Series(finite)) if logy else None})
    return out


def _log_ticks_of(option: str, values: pd.Series, log: bool) -> dict:
    """`option` (xticks or yticks) for a log axis: decades, or 1-2-5 when it spans under a
    few (Bokeh labels every digit there, the labels running into each other), else nothing."""
    return {option: log_ticks(values.astype(float))} if log else {}


def _clim(values: np.ndarray) -> tuple[float, float]:
    """A colour range over `values`; a single value gets +-10 % (else Bokeh would stretch it
    to a range that starts below zero)."""
    low, high = float(np.min(values)), float(np.max(values))
    if low == high:
        pad = 0.1 * abs(low) or 0.1
        return low - pad, high + pad
    return low, high


def parallel_plot(frame: pd.DataFrame, algorithm: str, outcome: str = "time_to_target",
                  metric: str = "target metric") -> hv.Overlay | None:
    """Parallel coordinates: one line per trial through its value on each varying numeric
    hyperparameter (each axis normalised to [0, 1], log10 where log) and, last, its outcome
    (time to target, or best validation value); coloured by that outcome, a miss of the target
    grey (drawn first, on a 'miss' level above the time axis). Tick labels in real units. None
    when no hyperparameter varies."""
    axes = H.numeric_axes(frame)
    if not axes or not len(frame):
        return None
    logs = H.log_axes(frame, algorithm, axes)
    times = frame[outcome].astype(float).to_numpy()
    reached = np.isfinite(times)
    log_time = H.infer_log(times[reached])
    columns = {c: H.normalise(frame[c].astype(float), logs[c]) for c in axes}
    columns["time"] = np.where(reached, H.normalise(np.where(reached, times, np.nan), log_time),
                               MISS_LEVEL)
    segments = _segments(np.column_stack(list(columns.values())), times,
                         frame["run_id"].to_numpy(object))
    time_dim = hv.Dimension("time", label=_outcome_label(frame, outcome, metric))
    kdims, vdims = ["x0", "y0", "x1", "y1"], [time_dim, "run_id"]
    missed = segments[~np.isfinite(segments["time"])]
    hits = segments[np.isfinite(segments["time"])]
    layers = [hv.Segments(missed, kdims=kdims, vdims=vdims, label="miss").opts(
        color=MISS_COLOR, alpha=0.5, line_width=1.2)]
    if len(hits):
        layers.append(hv.Segments(hits, kdims=kdims, vdims=vdims).opts(
            color="time", cmap=CMAP, colorbar=True, cnorm="log" if log_time else "linear",
            line_width=1.8, alpha=0.85, clim=_clim(times[reached])))
    names = [H.hparam_name(c) for c in axes] + [_outcome_label(frame, outcome, metric)]
    ticks = [(i, pos, text) for i, c in enumerate(axes)
             for pos, text in H.axis_ticks(frame[c].astype(float), logs[c])]
    ticks += [(len(axes), pos, text) for pos, text in H.axis_ticks(times[reached], log_time)]
    if not reached.all():
        ticks.append((len(axes), MISS_LEVEL, "miss"))
    # the ticks' own dimension names: Panel links the axes of plots that share a dimension name
    # (a scatter's y axis linked to this plot's hidden one lost its ticks)
    labels = hv.Labels(pd.DataFrame(ticks, columns=["axis", "level", "text"]),
                       kdims=["axis", "level"],
                       vdims="text").opts(text_align="left", text_font_size="8pt",
                                          xoffset=0.04, text_color="#333333")
    uprights = hv.Overlay([hv.VLine(float(i)).opts(color="black", line_width=1)
                           for i in range(len(names))])
    return (uprights * hv.Overlay(layers) * labels).opts(
        hv.opts.Segments(tools=["hover"]),
        hv.opts.Overlay(xticks=list(enumerate(names)), yaxis=None, responsive=True,
                        xrotation=30 if len(names) > 5 else 0,
                        min_height=420, xlim=(-0.3, len(names) - 0.3), ylim=(-0.06, 1.2),
                        title=f"Parallel coordinates ({len(frame)} trials)", xlabel="",
                        show_legend=False))


def _segments(ys: np.ndarray, times: np.ndarray, run_ids: np.ndarray) -> pd.DataFrame:
    """The lines of a parallel-coordinates plot as segments between neighbouring axes: trial i
    at height ys[i, j] on axis j. One table of segments (hv.Segments) draws thousands of lines
    fast, where one path per trial (hv.Path) took minutes for 500 trials. A segment with an
    end missing (NaN: the trial lacks that hyperparameter) is left out."""
    n, k = ys.shape
    left = np.repeat(np.arange(k - 1, dtype=float)[None, :], n, axis=0)
    out = pd.DataFrame({"x0": left.ravel(), "y0": ys[:, :-1].ravel(), "x1": left.ravel() + 1,
                        "y1": ys[:, 1:].ravel(), "time": np.repeat(times, k - 1),
                        "run_id": np.repeat(run_ids, k - 1)})
    out["run_id"] = out["run_id"].astype(object)
    return out.dropna(subset=["y0", "y1"]).reset_index(drop=True)


def _default_pick(selection: Selection) -> tuple[str | None, str | None]:
    """The first shown workload with runs, and of its algorithms the one with the most trials
    (ties: by name) among those whose trials vary some numeric hyperparameter, if any does."""
    if not selection.n_runs:
        return None, None
    groups, present = selection.workload_groups(), selection.present("workload")
    order = [w for ws in groups.values() for w in ws if w in present]
    workload = order[0] if order else sorted(present)[0]
    counts = selection.runs_where(["algorithm"], workload=workload)["algorithm"].value_counts()
    ranked = sorted(counts.index, key=lambda a: (-counts[a], a))
    for algorithm in ranked:
        if H.numeric_axes(trials_for(selection, workload, algorithm)):
            return workload, algorithm
    return workload, ranked[0]


def figures(selection: Selection, workload: str | None = None,
            algorithm: str | None = None) -> dict[str, hv.Element]:
    """The view's plots by name, for figure export: "hparams_scatter" (outcome against each
    hyperparameter) and "hparams_parallel", of `workload` and `algorithm` (default: the first
    shown workload and its first algorithm); plots with nothing to draw are left out."""
    default_workload, default_algorithm = _default_pick(selection)
    workload, algorithm = workload or default_workload, algorithm or default_algorithm
    if workload is None or algorithm is None:
        return {}
    frame = H.sample_trials(trials_for(selection, workload, algorithm), MAX_TRIALS)
    metric = _metric(selection, workload)
    parallel = parallel_plot(frame, algorithm, "time_to_target", metric)
    if parallel is not None:  # an inch per axis (and the colour bar): each axis's value labels
        # start at its line and run right, into the next axis's at the default 5 inches
        width = 1.1 * (len(H.numeric_axes(frame)) + 1) + 1.5
        parallel = parallel.opts(backend="matplotlib", fig_inches=(max(5.0, width), 3.6))
    out = {"hparams_scatter": scatter_plots(frame, algorithm, "time_to_target", metric),
           "hparams_parallel": parallel}
    return {name: plot for name, plot in out.items() if plot is not None}


def _metric(selection: Selection, workload: str) -> str:
    metrics = selection.runs_where(["target_metric"], workload=workload)["target_metric"].dropna()
    return str(metrics.iloc[0]) if len(metrics) else "target metric"


def _value_text(value) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


class Hyperparameters(View):
    """Outcome-against-hyperparameter scatters and parallel coordinates for the workload and
    algorithm picked in the view (its own pickers; the sidebar's filters decide what is
    offered)."""

    workload = param.Selector(default=None, objects=[], allow_None=True,
                              doc="Workload whose trials are drawn.")
    algorithm = param.Selector(default=None, objects=[], allow_None=True,
                               doc="Algorithm whose trials are drawn.")
    outcome = param.Selector(default="time_to_target", objects=list(OUTCOMES),
                             doc="What the scatters put on the y axis.")

    def __init__(self, **params) -> None:
        super().__init__(**params)
        self._about = pn.pane.Markdown(sizing_mode="stretch_width",
                                       css_classes=["pb-hparams-about"])
        # one pane per scatter in a grid of SCATTER_COLUMNS: a grid of plots in one pane lost
        # its axes when redrawn, and a FlexBox of panes followed by another plot lost them all
        self._scatter = pn.GridBox(ncols=SCATTER_COLUMNS, css_classes=["pb-hparams-scatter"],
                                   sizing_mode="stretch_width")
        self._parallel = pn.pane.HoloViews(sizing_mode="stretch_width", linked_axes=False,
                                           css_classes=["pb-hparams-parallel"])
        self._tuning = pn.pane.Markdown(sizing_mode="stretch_width",
                                        css_classes=["pb-hparams-tuning"])
        # always shown (empty when there is nothing): see views/compare.py's tables
        self._spaces = VT.table(pd.DataFrame({"hyperparameter": []}), "pb-hparams-spaces")
        self._scatters: dict[tuple, LivePlot] = {}  # (place, x log, y log) -> its scatter
        self._offering = False  # True while _offer sets the pickers: no redraw per assignment
        self._drawn: tuple | None = None  # what the plots show (see _update)
        self.param.watch(self._pick_changed, ["workload", "algorithm", "outcome"])
        self._first_draw()

    def _pick_changed(self, *_events) -> None:
        if not self._offering:
            self._selection_changed()

    def _offer(self) -> None:
        """Picker choices from the selection: the shown workloads with runs, and the algorithms
        with runs on the picked one; a pick no longer offered falls back to _default_pick."""
        present = self.selection.present("workload")
        groups = self.selection.workload_groups() if self.selection.n_runs else {}
        workloads = [w for ws in groups.values() for w in ws if w in present]
        workload, algorithm = self.workload, self.algorithm
        if workload not in workloads:
            workload, algorithm = _default_pick(self.selection)
        algorithms = sorted(self.selection.runs_where(["algorithm"], workload=workload)[
            "algorithm"].unique()) if workload else []
        if algorithm not in algorithms:
            algorithm = algorithms[0] if algorithms else None
        self._offering = True
        try:
            self.param.workload.objects = workloads
            self.param.algorithm.objects = algorithms
            self.param.update(workload=workload, algorithm=algorithm)
        finally:
            self._offering = False

    def _update(self) -> None:
        self._offer()
        if self.workload is None or self.algorithm is None:
            self._about.object = "No runs to show with the current selection."
            self._scatter.visible = self._parallel.visible = False
            self._drawn = None
            self._tuning.object, self._spaces.value = "", pd.DataFrame({"hyperparameter": []})
            return
        full = trials_for(self.selection, self.workload, self.algorithm)
        frame = H.sample_trials(full, MAX_TRIALS)
        # A filter that leaves the drawn trials as they were (another algorithm hidden, ...)
        # keeps the plots: building their Bokeh models is most of a redraw's time.
        drawn = (self.workload, self.algorithm, self.outcome, MAX_TRIALS,
                 frame.attrs.get("time_units"), pd.util.hash_pandas_object(
                     frame.drop(columns=H.hparam_columns(frame)), index=False).sum())
        if drawn != self._drawn:
            metric = _metric(self.selection, self.workload)
            scatters = scatter_points(frame, self.algorithm, self.outcome, metric)
            parallel = parallel_plot(frame, self.algorithm, self.outcome, metric)
            panes = [self._draw_scatter(i, plot) for i, plot in enumerate(scatters)]
            if [id(p) for p in panes] != [id(p) for p in self._scatter.objects]:
                self._scatter.objects = panes
            self._scatter.visible = bool(scatters)
            self._parallel.param.update(object=parallel, visible=parallel is not None)
            self._drawn = drawn
        self._about.object = self._text(full, frame)
        self._draw_tuning()

    def _draw_tuning(self) -> None:
        """The tuning report of the shown algorithms on the picked workload."""
        shown = [a for a in self.param.algorithm.objects if a in self.selection.algorithms]
        report = VT.cut(VT.report_of(self.selection), shown or [self.algorithm],
                        [self.workload])
        report = {a: per for a, per in report.items() if per}
        self._tuning.object = (f"**{VT.SPACES_TITLE}** on {md(self.workload)}:\n\n"
                               + VT.findings(report)) if report else \
            "No tuning report: no finished trial of the shown algorithms here."
        self._spaces.value = Results.tuning_space_table(report) if report else \
            pd.DataFrame({"hyperparameter": []})

    def _draw_scatter(self, i: int, data: dict) -> pn.Column:
        """Draw scatter_points' `data` on the i-th scatter (a LivePlot per place and pair of
        axis scales, made once and redrawn in place: views/live.py); its pane."""
        key = (i, data["x_log"], data["y_log"])
        if key not in self._scatters:
            plot = LivePlot(xlabel="", ylabel="", height=SCATTER_SIZE[1], points=True,
                            legend=False, x_log=data["x_log"], y_log=data["y_log"],
                            hover=(data["name"], "outcome", "run"))
            plot.pane.min_width = SCATTER_SIZE[0]
            self._scatters[key] = plot
        plot = self._scatters[key]
        plot.draw([], data["name"], points=data["points"], xlabel=data["name"],
                  ylabel=data["y_label"], xticks=data["xticks"], yticks=data["yticks"])
        return plot.pane

    def _text(self, full: pd.DataFrame, frame: pd.DataFrame) -> str:
        n, reached = len(full), int(full["reached"].sum()) if len(full) else 0
        drawn = (f"all {n} trials drawn" if len(frame) == n else
                 f"{len(frame):,} of {n:,} trials drawn (a fixed random sample: at most "
                 f"{MAX_TRIALS:,} lines)")
        parts = [f"**{md(self.algorithm)} on {md(self.workload)}**: {drawn}; {reached} reached "
                 "the target."]
        axes = H.numeric_axes(frame)
        if axes:
            logs = H.log_axes(frame, self.algorithm, axes)
            scales = ", ".join(f"{md(H.hparam_name(c))} ({'log' if logs[c] else 'linear'})"
                               for c in axes)
            parts.append(f"Axes: {scales}.")
        else:
            parts.append("No numeric hyperparameter varies over these trials: nothing to plot.")
        fixed = H.fixed_hparams(frame)
        if fixed:
            parts.append("Fixed: " + ", ".join(f"{md(k)} = {md(_value_text(v))}"
                                               for k, v in fixed.items()) + ".")
        other = [H.hparam_name(c) for c in H.hparam_columns(frame)
                 if c not in axes and H.hparam_name(c) not in fixed]
        if other:
            parts.append("Not drawn (not numbers, or missing in some trials' records): "
                         + ", ".join(map(md, other)) + ".")
        return " ".join(parts)

    def __panel__(self) -> pn.viewable.Viewable:
        return pn.Column(
            pn.pane.Markdown(
                "### Hyperparameters\nEach trial's outcome against each hyperparameter that "
                "varies, then all of them at once as parallel coordinates (one line per trial, "
                "coloured by the outcome chosen above; grey: missed the target; on the scatters a "
                "grey cross above the slowest hit is a miss). An axis is log when "
                "the algorithm's search space says so, else when all its values are positive "
                "and span at least two decades."),
            self._controls(), self._about, self._scatter, self._parallel, self._tuning,
            self._spaces, sizing_mode="stretch_width")

    def _controls(self) -> pn.viewable.Viewable:
        """The pickers when served; in a static report, where widgets do nothing, a line
        naming the outcome drawn (the text below names the workload and algorithm)."""
        if not self.live:
            return pn.pane.Markdown(
                f"Outcome on the scatters' y axes: *{OUTCOMES[self.outcome]}*.")
        return pn.Row(
            pn.widgets.Select.from_param(self.param.workload, name="Workload", width=300),
            pn.widgets.Select.from_param(self.param.algorithm, name="Algorithm", width=260),
            pn.widgets.RadioButtonGroup.from_param(
                self.param.outcome, name="", options={v: k for k, v in OUTCOMES.items()},
                color="light"),
            sizing_mode="stretch_width")
