"""Early ranking: how well the loss-curve estimators (TSE, TSE-EMA, LCGA, ...) rank the runs of a
study against their final validation metric, as a function of the budget fraction used; the LCGA
fit's predicted loss curve against the actual one; and the compute the early-stopping tuner saved.

Everything is computed by workbench.curves and workbench.early_stopping (which `pacebench rank`
uses too); this module only lays the results out. Rows are read from the store for the selected
runs.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import panel as pn
import param

from workbench import curves, query
from workbench.early_stopping import (GROUP_KEYS, MIN_RUNS, RANKED, final_values, ranked_groups,
                                      ranking_table, saved_frame)
from workbench.store import open_store
from workbench.views.base import View
from workbench.views.formats import run_labels
from workbench.views.plotting import hv
from workbench.views.selection import Selection


__all__ = ["EarlyRanking", "ranking_plot", "prediction_plot", "group_plots", "figures",
           "PREDICT_FRACTION"]

PREDICT_FRACTION = 0.2  # the LCGA fit of the prediction plot uses the first 20 % of the budget
SHOWN_PREDICTIONS = 4   # runs on the prediction plot (the best by final metric)


def ranking_plot(table: pd.DataFrame, title: str) -> hv.Overlay:
    """Spearman rho against the budget fraction, one line per estimator."""
    lines = [hv.Curve(g, kdims="fraction", vdims=["spearman", "kendall", "n"], label=name)
             .opts(tools=["hover"]) * hv.Scatter(g, "fraction", "spearman").opts(size=6)
             for name, g in table.groupby("estimator", sort=True)]
    return hv.Overlay(lines).opts(
        hv.opts.Overlay(responsive=True, min_height=380, logx=True, ylim=(-1.05, 1.05),
                        xlabel="fraction of the step budget", ylabel="Spearman rho vs final",
                        show_grid=True, legend_position="bottom", legend_cols=5, title=title))


# one colour per run of the prediction plot, its actual loss and its fit alike
RUN_COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b")


def prediction_plot(train: pd.DataFrame, finals: pd.Series, budget: float,
                    fraction: float = PREDICT_FRACTION,
                    labels: dict[str, str] | None = None) -> hv.Overlay:
    """Actual training loss (solid) vs the LCGA fit on the first `fraction` (dashed, same colour),
    for the best SHOWN_PREDICTIONS runs by final metric (`finals` sorted best first). `labels`:
    run id -> legend text (default: the trial's place by final metric); a run's two lines share
    one legend entry."""
    cutoff, parts = fraction * budget, []
    grid = np.linspace(1.0, budget, 200)
    for i, run_id in enumerate(finals.index[:SHOWN_PREDICTIONS]):
        rows = train[train["run_id"] == run_id].sort_values("step")
        seen = rows[rows["step"] <= cutoff]
        fit = curves.fit_lcga(seen["step"], seen["loss"])
        label = (labels or {}).get(run_id, f"run {i + 1} by final metric")
        color = RUN_COLORS[i % len(RUN_COLORS)]
        parts.append(hv.Curve(rows, "step", "loss", label=label).opts(
            color=color, line_width=1, alpha=0.6))
        parts.append(hv.Curve((grid, fit.predict(grid)), "step", "loss", label=label)
                     .opts(color=color, line_dash="dashed", line_width=2.5))
    parts.append(hv.VLine(cutoff).opts(color="gray", line_dash="dotted"))
    return hv.Overlay(parts).opts(hv.opts.Overlay(
        responsive=True, min_height=380, logy=True, show_grid=True, legend_position="bottom",
        legend_cols=1, title=f"Loss (solid), LCGA fit on the first {fraction:.0%} (dashed)"))


def _trial_labels(group: pd.DataFrame, algorithm: str) -> dict[str, str]:
    """run id -> "study 0, trial 3, learning_rate=0.01": formats.run_labels of the group's
    runs (all of `algorithm`, which the plot's title names) without the algorithm."""
    return {run_id: label.removeprefix(f"{algorithm}, ")
            for run_id, label in run_labels(group).items()}


def group_plots(store, runs: pd.DataFrame) -> dict[tuple, tuple[hv.Overlay, hv.Overlay]]:
    """(study_name, workload, algorithm) -> (ranking_plot, prediction_plot) of each group of
    `runs` with MIN_RUNS or more complete runs."""
    return {key: _plots(store, key, group) for key, group in ranked_groups(runs)}


def _plots(store, key: tuple, runs: pd.DataFrame) -> tuple[hv.Overlay, hv.Overlay]:
    """(ranking_plot, prediction_plot) of one group's complete runs."""
    study, workload, algorithm = key
    group = runs[runs["status"] == "complete"]
    ids = list(group["run_id"])
    evals, train = query.evals_frame(store, ids), query.train_frame(store, ids)
    finals = final_values(group, evals).sort_values(
        ascending=group["target_direction"].iloc[0] == "min")
    title = f"{study}: {workload} / {algorithm} ({len(group)} runs)"
    return (ranking_plot(ranking_table(group, evals, train), title),
            prediction_plot(train, finals, float(group["budget_steps"].max()),
                            labels=_trial_labels(group, algorithm)))


def figures(selection: Selection) -> dict[str, hv.Overlay]:
    """For `workbench.figures`, per study group: "early_ranking_<study>_<workload>_<algorithm>"
    and "early_prediction_<study>_<workload>_<algorithm>"."""
    if not selection.n_runs:
        return {}
    plots = group_plots(open_store(selection.store_path), selection.runs)
    out = {}
    for (study, workload, algorithm), (ranking, prediction) in plots.items():
        if np.isfinite(ranking.dimension_values("spearman")).any():  # else nothing to draw
            out[f"early_ranking_{study}_{workload}_{algorithm}"] = ranking
        out[f"early_prediction_{study}_{workload}_{algorithm}"] = prediction
    return out


def _same(these: list, those: list) -> bool:
    """Whether two lists hold the very same objects (values from the selection's cache)."""
    return len(these) == len(those) and all(a is b for a, b in zip(these, those))


def _label(key: tuple) -> str:
    return " / ".join(str(k) for k in key)


class EarlyRanking(View):
    """Per study group: rank correlation vs budget fraction, predicted vs actual, compute saved.

    In the dashboard (`one_group`) one group is drawn at a time, picked in the view: a big
    store has hundreds of groups, and ranking one reads and fits its runs' curves (its plots
    are kept for the data and ruleset, study and hardware filters). The report draws them all.
    """

    one_group = param.Boolean(default=False, doc="Draw one study group, picked in the view.")
    group = param.Selector(default=None, objects=[], allow_None=True,
                           doc="The study group drawn: study / workload / algorithm.")

    def __init__(self, **params) -> None:
        super().__init__(**params)
        self._picker = pn.widgets.Select.from_param(self.param.group, name="Study group",
                                                    width=520, visible=self.one_group)
        self._body = pn.Column(sizing_mode="stretch_width")
        # never childless: Bokeh warns (EMPTY_LAYOUT) on every report with an empty layout
        self._saved = pn.Column(pn.Spacer(height=0), sizing_mode="stretch_width")
        self._offering = False  # True while _update sets the picker: no second draw
        self._drawn_plots: list = []  # the (cached) plot pairs shown
        self._drawn_saved: list = []  # the (cached) compute-saved frame shown
        self.param.watch(self._picked, "group")
        self._first_draw()

    def _groups(self) -> dict[str, tuple]:
        """Label -> key of the shown runs' groups with MIN_RUNS or more complete runs."""
        def make() -> dict[str, tuple]:
            done = self.selection.runs_where(columns=GROUP_KEYS, **RANKED)
            sizes = done.value_counts(sort=False)
            return {_label(k): k for k in sorted(sizes[sizes >= MIN_RUNS].index)}
        return self.selection.cached("early_ranking:groups", make)

    def _picked(self, _event) -> None:
        if not self._offering:
            self._selection_changed()

    def _update(self) -> None:
        groups = self._groups()
        self._offering = True
        try:
            self.param.group.objects = list(groups)
            if self.group not in groups:
                self.group = next(iter(groups), None)
        finally:
            self._offering = False
        self._picker.visible = self.one_group and bool(groups)
        if not groups:
            self._drawn_plots = []
            self._body.objects = [pn.pane.Markdown(
                f"No study group has {MIN_RUNS} or more complete runs to rank (runs of our "
                "runner only: imported logs have no per-step training loss).")]
        else:
            keys = [groups[self.group]] if self.one_group else list(groups.values())
            plots = [self._group_plots(key) for key in keys]
            if not _same(plots, self._drawn_plots):  # the cached plots: no layout update
                self._drawn_plots = plots
                # a group's two plots one above the other, each the full width: the
                # prediction plot's legend names runs by their hyperparameters, and it was cut
                # off at the right of half a row ("one_minus_beta1=0.03" at 1500 px)
                self._body.objects = [pn.Column(*(pn.pane.HoloViews(plot,
                                                                    sizing_mode="stretch_width")
                                                  for plot in pair), sizing_mode="stretch_width")
                                      for pair in plots]
        saved = self._saved_frame()
        if not _same([saved], self._drawn_saved):
            self._drawn_saved = [saved]
            self._saved.objects = [
                pn.pane.Markdown("#### Compute saved by the early-stopping tuner"),
                pn.pane.DataFrame(saved.round(2), index=False)] if len(saved) else [
                pn.Spacer(height=0)]

    def _group_plots(self, key: tuple) -> tuple[hv.Overlay, hv.Overlay]:
        """The plots of one group, computed once per data and ruleset, study and hardware
        filter (the algorithm and workload filters only say whether it is offered)."""
        def make():
            runs = self.selection.full_runs()
            study, workload, algorithm = key
            group = runs[(runs["study_name"] == study) & (runs["workload"] == workload)
                         & (runs["algorithm"] == algorithm) & (runs["source"] == RANKED["source"])]
            return _plots(self.selection.store, key, group)
        return self.selection.full_value(f"early_ranking:{_label(key)}", make, time_axis=False)

    def _saved_frame(self) -> pd.DataFrame:
        names = sorted(self.selection.present("study_name"))
        return self.selection.full_value(
            f"early_ranking:saved:{names}",
            lambda: saved_frame(self.selection.store, names, self.selection.full_runs()),
            time_axis=False)

    def __panel__(self) -> pn.viewable.Viewable:
        return pn.Column(pn.pane.Markdown(
            "### Early ranking\nSigned Spearman rho between each estimator computed on the first "
            "fraction of the step budget and the final validation metric (+1: perfect ranking). "
            "All estimators are 'lower predicts better'; LCGA is the fitted loss at the full "
            "budget, LCGA-D1N's sign is uncalibrated."), self._picker, self._body, self._saved,
            sizing_mode="stretch_width", css_classes=["pb-early-ranking"])
