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

from workbench import budget as B
from workbench.views.base import View
from workbench.views.plotting import hv
from workbench.views.selection import Selection

__all__ = ["TuningBudget", "budget_data", "workload_plots", "score_plot", "figures"]

NONE_COLOR = "#cccccc"


def budget_data(selection: Selection) -> tuple[dict, list[B.BudgetCurve]]:
    """(trial times by (algorithm, workload), their curves) of the shown runs (cached)."""
    def make():
        if not selection.n_runs:
            return {}, []
        trials = B.trial_times(selection.cube)
        return trials, B.budget_curves(trials)
    return selection.cached("budget_curves", make)


def _curve_frame(curves: list[B.BudgetCurve], workload: str) -> pd.DataFrame:
    rows = [{"algorithm": c.algorithm, "k": k, "p_reach": p,
             "median_best": np.nan if m is None else m}
            for c in curves if c.workload == workload
            for k, p, m in zip(c.k, c.p_reach, c.median_best)]
    return pd.DataFrame(rows)


def _k_ticks(top: int) -> list[int]:
    """Whole numbers of trials on the k axis: every k up to 12, else about 10 of them."""
    return list(range(1, top + 1, max(1, math.ceil(top / 10)) if top > 12 else 1))


def workload_plots(selection: Selection, workload: str) -> list[hv.Overlay]:
    """[P(reach) by k, median best time by k, P(fastest) by k] on `workload`; [] without
    trials."""
    trials, curves = budget_data(selection)
    frame = _curve_frame(curves, workload)
    if frame.empty:
        return []
    colors = selection.colors
    units = selection.cube["time_to_target"].attrs.get("units", "s")
    reach, best = [], []
    for name, rows in frame.groupby("algorithm", sort=False):
        color = colors.get(name, "gray")
        reach.append(hv.Curve(rows, "k", "p_reach", label=str(name)).opts(color=color))
        best.append(hv.Curve(rows, "k", "median_best", label=str(name)).opts(color=color))
    common = dict(responsive=True, min_height=300, show_grid=True, legend_position="right",
                  xticks=_k_ticks(int(frame["k"].max())))
    plots = [
        hv.Overlay(reach).opts(hv.opts.Curve(line_width=2.5, tools=["hover"]), hv.opts.Overlay(
            ylim=(-0.02, 1.02), xlabel="tuning budget k (trials)",
            ylabel="P(at least one reaches)", title=f"{workload}: reaching the target",
            **common)),
        hv.Overlay(best).opts(hv.opts.Curve(line_width=2.5, tools=["hover"]), hv.opts.Overlay(
            xlabel="tuning budget k (trials)", ylabel=f"median best time to target ({units})",
            title=f"{workload}: best of k trials (gaps: the median draw misses)", **common)),
    ]
    fastest = B.fastest_probabilities(trials, workload)
    names = [c for c in fastest.columns if c != "none"] + ["none"]
    areas = [hv.Area((fastest.index.values, fastest[n].values), "k", "P(fastest)",
                     label=str(n)).opts(color=colors.get(n, NONE_COLOR) if n != "none"
                                        else NONE_COLOR) for n in names]
    plots.append(hv.Area.stack(hv.Overlay(areas)).opts(
        hv.opts.Area(fill_alpha=0.85, line_width=0), hv.opts.Overlay(
            ylim=(0, 1), xlabel="tuning budget k (trials, each algorithm)",
            ylabel="P(fastest)", title=f"{workload}: which algorithm is fastest", **common)))
    return plots


def score_plot(selection: Selection) -> hv.Overlay | None:
    """The benchmark score of each algorithm at budgets k (the scored workloads); None when
    nothing is scored."""
    _, curves = budget_data(selection)
    scored = selection.workload_groups()["scored"]
    if not any(c.workload in scored for c in curves):
        return None
    scores = B.scores_by_budget(curves, selection.scoring_config, scored)
    colors = selection.colors
    lines = [hv.Curve((scores.index.values, scores[a].values), "k", "score", label=str(a))
             .opts(color=colors.get(a, "gray")) for a in scores.columns]
    return hv.Overlay(lines).opts(
        hv.opts.Curve(line_width=2.5, tools=["hover"]),
        hv.opts.Overlay(responsive=True, min_height=320, ylim=(-0.02, 1.02), show_grid=True,
                        xticks=_k_ticks(int(scores.index.max())),
                        legend_position="right", xlabel="tuning budget k (trials per workload)",
                        ylabel="benchmark score", title="Score by tuning budget"))


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
        # The dashboard's panes are made once and redrawn in place (replacing a layout's
        # children while the page lays them out races in the browser); the report builds its
        # sections once.
        self._empty = pn.pane.Markdown("No trials to draw.", visible=False)
        self._panes = [pn.pane.HoloViews(sizing_mode="stretch_width", min_height=h,
                                         visible=False) for h in (340, 320, 320, 320)]
        self._body = pn.Column(*([] if self.all_workloads else [self._empty, *self._panes]),
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
        plots = [score_plot(self.selection)]
        plots += workload_plots(self.selection, self.workload) if self.workload else []
        plots += [None] * (len(self._panes) - len(plots))
        for pane, plot in zip(self._panes, plots):
            pane.param.update(object=plot, visible=plot is not None)
        self._empty.visible = all(p is None for p in plots)

    def _report(self, workloads: list[str]) -> list:
        """Every section at once: the score by budget, then each scored workload's P(fastest)
        (the dashboard adds P(reach) and the median best time: drawing all three for every
        workload of an 11-algorithm store doubled the report's time)."""
        parts = []
        plot = score_plot(self.selection)
        if plot is not None:
            parts.append(pn.pane.HoloViews(plot, sizing_mode="stretch_width", min_height=340))
        for w in workloads:
            plots = workload_plots(self.selection, w)[2:]  # P(fastest): reach and speed at once
            parts.extend(pn.pane.HoloViews(p, sizing_mode="stretch_width", min_height=320)
                         for p in plots)
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
