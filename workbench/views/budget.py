"""Tuning budget: how each algorithm's result depends on the number of trials it is tuned with
(workbench.budget, exact order statistics over the trials in the store).

Per workload: the probability that at least one of k trials reaches the target, the median best
time to target among k trials, and the probability that each algorithm is the fastest at budget k
(a stacked area, with "none" for no algorithm reaching). Over the scored workloads: the benchmark
score as a function of k. The dashboard shows one workload at a time; the report each scored
workload's P(fastest).
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import panel as pn
import param

from workbench.results import BudgetCurve, Results
from workbench.views.base import View
from workbench.views.live import Line, LivePlot, stacked_areas
from workbench.views.plotting import hv
from workbench.views.selection import Selection

__all__ = ["TuningBudget", "budget_data", "workload_plots", "score_plot", "figures"]

NONE_COLOR = "#cccccc"


def budget_data(selection: Selection) -> tuple[dict, list[BudgetCurve]]:
    """(trial times by (algorithm, workload), their curves) of the shown cube (cached). A
    cell's trials and curve depend on no other cell: they are found once over the full cube
    (Selection.full_value) and cut to the shown cube's algorithms and workloads."""
    def full():
        trials = Results.trial_times(selection.full_cube())
        return trials, {(c.algorithm, c.workload): c for c in Results.budget_curves(trials)}

    def make():
        if not selection.n_runs:
            return {}, []
        trials, curves = selection.full_value("budget_curves", full)
        cube = selection.cube
        algorithms, workloads = set(cube["algorithm"].values), set(cube["workload"].values)
        keys = [k for k in trials if k[0] in algorithms and k[1] in workloads]
        return {k: trials[k] for k in keys}, [curves[k] for k in keys if k in curves]
    return selection.cached("budget_curves", make)


def _curve_frame(curves: list[BudgetCurve], workload: str) -> pd.DataFrame:
    rows = [{"algorithm": c.algorithm, "k": k, "p_reach": p,
             "median_best": np.nan if m is None else m}
            for c in curves if c.workload == workload
            for k, p, m in zip(c.k, c.p_reach, c.median_best)]
    return pd.DataFrame(rows)


def _k_ticks(top: int) -> list[int]:
    """Whole numbers of trials on the k axis: every k up to 12, else about 10 of them."""
    return list(range(1, top + 1, max(1, math.ceil(top / 10)) if top > 12 else 1))


# The plots: (key, x label, y label, title after "<workload>: ", y range or None).
_WORKLOAD_PLOTS = (
    ("reach", "tuning budget k (trials)", "P(at least one reaches)", "reaching the target",
     (-0.02, 1.02)),
    ("best", "tuning budget k (trials)", "median best time to target ({units})",
     "best of k trials (gaps: the median draw misses)", None),
    ("fastest", "tuning budget k (trials, each algorithm)", "P(fastest)",
     "which algorithm is fastest", (0, 1)),
)
_SCORE_LABELS = ("tuning budget k (trials per workload)", "benchmark score",
                 "Score by tuning budget")


def workload_lines(selection: Selection, workload: str) -> dict[str, list[Line]]:
    """The lines of `workload`'s plots: "reach" and "best" one per algorithm (NaN where the
    median draw misses), "fastest" the stacked areas of P(fastest) ("none" last); {} without
    trials."""
    trials, curves = budget_data(selection)
    frame = _curve_frame(curves, workload)
    if frame.empty:
        return {}
    colors = selection.colors
    groups = list(frame.groupby("algorithm", sort=False))
    out = {key: [(str(name), colors.get(name, "gray"), rows["k"].to_numpy(float),
                  rows[column].to_numpy(float)) for name, rows in groups]
           for key, column in (("reach", "p_reach"), ("best", "median_best"))}
    fastest = Results.fastest_probabilities(trials, workload)
    names = [c for c in fastest.columns if c != "none"] + ["none"]
    out["fastest"] = stacked_areas(fastest.index.to_numpy(float), [
        (str(n), NONE_COLOR if n == "none" else colors.get(n, NONE_COLOR),
         fastest[n].to_numpy(float)) for n in names])
    return out


def score_lines(selection: Selection) -> list[Line]:
    """The benchmark score of each algorithm at budgets k (the scored workloads); [] when
    nothing is scored."""
    _, curves = budget_data(selection)
    scored = selection.workload_groups()["scored"]
    if not any(c.workload in scored for c in curves):
        return []
    scores = Results.scores_by_budget(curves, selection.scoring_config, scored)
    colors = selection.colors
    return [(str(a), colors.get(a, "gray"), scores.index.to_numpy(float),
             scores[a].to_numpy(float)) for a in scores.columns]


def _top_k(lines: list[Line]) -> int:
    return int(max(max(x) for _, _, x, _ in lines))


def _units(selection: Selection) -> str:
    return selection.cube["time_to_target"].attrs.get("units", "s")


def _overlay(lines: list[Line], ylabel: str, areas: bool = False) -> hv.Overlay:
    """HoloViews of `lines` (for the paper figures and the report, drawn once)."""
    if areas:  # each outline back to its layer's top and bottom
        parts = [hv.Area((x[:len(x) // 2], y[:len(x) // 2], y[len(x) // 2:][::-1]), "k",
                         [ylabel, "bottom"], label=label).opts(color=color)
                 for label, color, x, y in lines]
        return hv.Overlay(parts).opts(hv.opts.Area(fill_alpha=0.85, line_width=0))
    return hv.Overlay([hv.Curve((x, y), "k", ylabel, label=label).opts(color=color)
                       for label, color, x, y in lines]).opts(
        hv.opts.Curve(line_width=2.5, tools=["hover"]))


def _hv_opts(xlabel: str, ylabel: str, title: str, ylim, top: int) -> hv.opts:
    return hv.opts.Overlay(responsive=True, min_height=320, show_grid=True,
                           legend_position="right", xticks=_k_ticks(top), xlabel=xlabel,
                           ylabel=ylabel, title=title, **({"ylim": ylim} if ylim else {}))


def workload_plots(selection: Selection, workload: str) -> list[hv.Overlay]:
    """[P(reach) by k, median best time by k, P(fastest) by k] on `workload` as HoloViews;
    [] without trials."""
    lines = workload_lines(selection, workload)
    if not lines:
        return []
    top = _top_k(lines["reach"])
    return [_overlay(lines[key], ylabel.format(units=_units(selection)), key == "fastest")
            .opts(_hv_opts(xlabel, ylabel.format(units=_units(selection)),
                           f"{workload}: {title}", ylim, top))
            for key, xlabel, ylabel, title, ylim in _WORKLOAD_PLOTS]


def score_plot(selection: Selection) -> hv.Overlay | None:
    """score_lines as HoloViews; None when nothing is scored."""
    lines = score_lines(selection)
    if not lines:
        return None
    xlabel, ylabel, title = _SCORE_LABELS
    return _overlay(lines, ylabel).opts(_hv_opts(xlabel, ylabel, title, (-0.02, 1.02),
                                                 _top_k(lines)))


def figures(selection: Selection) -> dict[str, hv.Overlay]:
    """The score plot and each scored workload's P(fastest), for workbench.figures (as the
    report)."""
    out = {}
    plot = score_plot(selection)
    if plot is not None:
        out["budget_score"] = plot
    shown = [x for x in selection.param.workloads.objects if x in selection.workloads]
    for w in [x for x in selection.workload_groups()["scored"] if x in shown] or shown:
        for p in workload_plots(selection, w)[2:]:
            out[f"budget_fastest_{w}"] = p
    return out


_PLOT_KEYS = ("score", *(key for key, *_ in _WORKLOAD_PLOTS))


def _live_plot(key: str) -> LivePlot:
    """An empty plot for `key` ("score" or a key of _WORKLOAD_PLOTS), drawn by _draw."""
    if key == "score":
        return LivePlot(xlabel=_SCORE_LABELS[0], ylabel=_SCORE_LABELS[1], y_range=(-0.02, 1.02),
                        height=340)
    xlabel, ylabel, ylim = next((x, y, lim) for k, x, y, _, lim in _WORKLOAD_PLOTS if k == key)
    return LivePlot(xlabel=xlabel, ylabel=ylabel, y_range=ylim, areas=key == "fastest")


def _draw(plot: LivePlot, key: str, lines: list[Line], selection: Selection,
          workload: str | None) -> None:
    """`lines` on `plot` (made by _live_plot(key)), titled for `workload` (the score: none)."""
    if key == "score":
        title, ylabel = _SCORE_LABELS[2], _SCORE_LABELS[1]
    else:
        ylabel, what = next((y, t) for k, _, y, t, _ in _WORKLOAD_PLOTS if k == key)
        title = f"{workload}: {what}"
        ylabel = ylabel.format(units=_units(selection) if selection.n_runs else "s")
    plot.draw(lines, title, xticks=_k_ticks(_top_k(lines)), ylabel=ylabel)


class TuningBudget(View):
    """Tuning-budget curves of the selection: one workload (picked) or, in the report, every
    scored workload."""

    workload = param.Selector(default=None, objects=[], allow_None=True, doc="Workload shown")
    all_workloads = param.Boolean(default=False, doc="Every scored workload's P(fastest) at "
                                                     "once (the report).")

    def __init__(self, **params) -> None:
        super().__init__(**params)
        self._picker = pn.widgets.Select.from_param(self.param.workload, name="Workload",
                                                    width=320, visible=not self.all_workloads)
        # The dashboard's plots are made once and redrawn in place (workbench.views.live);
        # the report draws its sections once, on plots of the same kind.
        self._empty = pn.pane.Markdown("No trials to draw.", visible=False)
        self._plots = {key: _live_plot(key) for key in _PLOT_KEYS}
        for plot in self._plots.values():
            plot.pane.visible = False
        self._body = pn.Column(
            *([] if self.all_workloads else
              [self._empty, *(plot.pane for plot in self._plots.values())]),
            sizing_mode="stretch_width")
        self._choosing = False  # set while _update updates the picker: not a user's pick
        self.param.watch(lambda *_: None if self._choosing else self._selection_changed(),
                         "workload")
        self._first_draw()

    def _update(self) -> None:
        shown = [w for w in self.selection.param.workloads.objects
                 if w in self.selection.workloads]
        scored = [w for w in self.selection.workload_groups()["scored"] if w in shown]
        self._choosing = True
        try:  # the widget follows the parameter's objects and value
            self.param.workload.objects = shown
            if self.workload not in shown:
                self.workload = (scored or shown or [None])[0]
        finally:
            self._choosing = False
        if self.all_workloads:
            self._body.objects = self._report(scored or shown)
            return
        self._draw_live()

    def _draw_live(self) -> None:
        """Redraw the dashboard's plots in place: the score by budget, then the workload's."""
        drawn = {"score": score_lines(self.selection)}
        if self.workload:
            drawn.update(workload_lines(self.selection, self.workload))
        for key, plot in self._plots.items():
            lines = drawn.get(key) or []
            if lines:
                _draw(plot, key, lines, self.selection, self.workload)
            plot.pane.visible = bool(lines)
        self._empty.visible = not any(drawn.values())

    def _report(self, workloads: list[str]) -> list:
        """Every section at once: the score by budget, then each scored workload's P(fastest)
        (the dashboard adds P(reach) and the median best time: drawing all three for every
        workload of an 11-algorithm store doubled the report's time)."""
        drawn = [("score", score_lines(self.selection), None)]
        drawn += [("fastest", workload_lines(self.selection, w).get("fastest"), w)  # (P(reach)
                  for w in workloads]                                   # and speed at once)
        parts = []
        for key, lines, workload in drawn:
            if lines:
                plot = _live_plot(key)
                _draw(plot, key, lines, self.selection, workload)
                parts.append(plot.pane)
        return parts or [pn.pane.Markdown("No trials to draw.")]

    def __panel__(self) -> pn.viewable.Viewable:
        return pn.Column(
            pn.pane.Markdown(
                "### Tuning budget\nWith a budget of k trials drawn from the trials in the "
                "store (studies pooled), computed exactly from order statistics: the chance "
                "that at least one reaches the target, the median best time to target, the "
                "chance that each algorithm is the fastest, and the benchmark score of the "
                "median best times. An algorithm that needs many trials to show its speed "
                "climbs late; AlgoPerf scores at k = 5."),
            self._picker, self._body, sizing_mode="stretch_width", css_classes=["pb-budget"])
