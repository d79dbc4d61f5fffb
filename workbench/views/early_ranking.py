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

from workbench import curves
from workbench.results import RANKED, Results
from workbench.results import RANKING_GROUP_KEYS as GROUP_KEYS, RANKING_MIN_RUNS as MIN_RUNS
from workbench.store import open_store
from workbench.views.base import View
from workbench.views.formats import run_labels
from workbench.views.live import LivePlot
from workbench.views.plotting import hv
from workbench.views.selection import Selection


__all__ = ["EarlyRanking", "ranking_plot", "prediction_plot", "prediction_lines", "group_plots",
           "group_data", "cached_group_data", "offered_groups", "warm", "figures",
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


def prediction_lines(train: pd.DataFrame, finals: pd.Series, budget: float,
                     fraction: float = PREDICT_FRACTION, labels: dict[str, str] | None = None
                     ) -> list[tuple[str, str, pd.DataFrame, np.ndarray, np.ndarray]]:
    """(legend text, colour, the run's training-loss rows by step, fit steps, fitted loss) of
    the best SHOWN_PREDICTIONS runs by final metric (`finals` sorted best first), the LCGA fit
    on the first `fraction` of `budget` steps. `labels`: run id -> legend text (default: the
    trial's place by final metric)."""
    cutoff, out = fraction * budget, []
    grid = np.linspace(1.0, budget, 200)
    for i, run_id in enumerate(finals.index[:SHOWN_PREDICTIONS]):
        rows = train[train["run_id"] == run_id].sort_values("step")
        seen = rows[rows["step"] <= cutoff]
        fit = curves.fit_lcga(seen["step"], seen["loss"])
        label = (labels or {}).get(run_id, f"run {i + 1} by final metric")
        out.append((label, RUN_COLORS[i % len(RUN_COLORS)], rows, grid, fit.predict(grid)))
    return out


def prediction_title(fraction: float = PREDICT_FRACTION) -> str:
    return f"Loss (solid), LCGA fit on the first {fraction:.0%} (dashed)"


def prediction_plot(train: pd.DataFrame, finals: pd.Series, budget: float,
                    fraction: float = PREDICT_FRACTION,
                    labels: dict[str, str] | None = None) -> hv.Overlay:
    """Actual training loss (solid) vs the LCGA fit on the first `fraction` (dashed, same colour),
    for the best SHOWN_PREDICTIONS runs by final metric (prediction_lines); a run's two lines
    share one legend entry."""
    return _prediction_overlay(prediction_lines(train, finals, budget, fraction, labels),
                               fraction * budget, fraction)


def _prediction_overlay(lines: list, cutoff: float, fraction: float = PREDICT_FRACTION
                        ) -> hv.Overlay:
    parts = []
    for label, color, rows, grid, fitted in lines:
        parts.append(hv.Curve(rows, "step", "loss", label=label).opts(
            color=color, line_width=1, alpha=0.6))
        parts.append(hv.Curve((grid, fitted), "step", "loss", label=label)
                     .opts(color=color, line_dash="dashed", line_width=2.5))
    parts.append(hv.VLine(cutoff).opts(color="gray", line_dash="dotted"))
    return hv.Overlay(parts).opts(hv.opts.Overlay(
        responsive=True, min_height=380, logy=True, show_grid=True, legend_position="bottom",
        legend_cols=1, title=prediction_title(fraction)))


def _trial_labels(group: pd.DataFrame, algorithm: str) -> dict[str, str]:
    """run id -> "study 0, trial 3, learning_rate=0.01": formats.run_labels of the group's
    runs (all of `algorithm`, which the plot's title names) without the algorithm."""
    return {run_id: label.removeprefix(f"{algorithm}, ")
            for run_id, label in run_labels(group).items()}


def group_plots(store, runs: pd.DataFrame) -> dict[tuple, tuple[hv.Overlay, hv.Overlay]]:
    """(study_name, workload, algorithm) -> (ranking_plot, prediction_plot) of each group of
    `runs` with MIN_RUNS or more complete runs."""
    return {key: _plots(store, key, group) for key, group in Results.ranked_groups(runs)}


def group_data(store, key: tuple, runs: pd.DataFrame) -> dict:
    """What the plots of one group's complete runs show: "title", "table" (ranking_table),
    "lines" (prediction_lines) and "cutoff" (the last step the LCGA fits saw)."""
    study, workload, algorithm = key
    group = runs[runs["status"] == "complete"]
    ids = list(group["run_id"])
    reads = Results(store)
    evals, train = reads.evals(ids), reads.train_rows(ids)
    finals = Results.final_values(group, evals).sort_values(
        ascending=group["target_direction"].iloc[0] == "min")
    budget = float(group["budget_steps"].max())
    return {"title": f"{study}: {workload} / {algorithm} ({len(group)} runs)",
            "table": Results.ranking_table(group, evals, train),
            "lines": prediction_lines(train, finals, budget,
                                      labels=_trial_labels(group, algorithm)),
            "cutoff": PREDICT_FRACTION * budget}


def _plots(store, key: tuple, runs: pd.DataFrame) -> tuple[hv.Overlay, hv.Overlay]:
    """(ranking_plot, prediction_plot) of one group's complete runs."""
    data = group_data(store, key, runs)
    return ranking_plot(data["table"], data["title"]), _prediction_overlay(data["lines"],
                                                                          data["cutoff"])


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


# the estimators' colours on the ranking plot, in curves.ESTIMATORS order
ESTIMATOR_COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b")


def _group_liveplots() -> tuple[LivePlot, LivePlot]:
    """The dashboard's two plots of a group (made once, redrawn in place: views/live.py)."""
    ranking = LivePlot(xlabel="fraction of the step budget", ylabel="Spearman rho vs final",
                       height=380, y_range=(-1.05, 1.05), x_log=True,
                       hover=("fraction", "Spearman rho", ""))
    prediction = LivePlot(xlabel="step", ylabel="loss", height=460, y_log=True, dashes=True,
                          legend_below=True, hover=("step", "loss", ""))
    return ranking, prediction


def _draw_group(ranking: LivePlot, prediction: LivePlot, data: dict) -> None:
    """Draw group_data `data` on the group's two plots."""
    table = data["table"].sort_values("fraction")
    names = [n for n in curves.ESTIMATORS if n in set(table["estimator"])]
    ranking.draw([(name, ESTIMATOR_COLORS[i % len(ESTIMATOR_COLORS)],
                   table.loc[table["estimator"] == name, "fraction"].to_numpy(float),
                   table.loc[table["estimator"] == name, "spearman"].to_numpy(float))
                  for i, name in enumerate(names)], data["title"],
                 xticks=sorted(table["fraction"].unique()))
    lines, widths, alphas, dashes = [], [], [], []
    for label, color, rows, grid, fitted in data["lines"]:
        lines += [(label, color, rows["step"].to_numpy(float), rows["loss"].to_numpy(float)),
                  (label, color, grid, fitted)]
        widths += [1.0, 2.5]
        alphas += [0.6, 1.0]
        dashes += ["solid", "dashed"]
    prediction.draw(lines, prediction_title(), widths=widths, alphas=alphas, dashes=dashes,
                    vline=(data["cutoff"], "dotted"))


def offered_groups(selection: Selection) -> dict[str, tuple]:
    """Label -> key of the shown runs' groups with MIN_RUNS or more complete runs."""
    def make() -> dict[str, tuple]:
        done = selection.runs_where(columns=GROUP_KEYS, **RANKED)
        sizes = done.value_counts(sort=False)
        return {_label(k): k for k in sorted(sizes[sizes >= MIN_RUNS].index)}
    return selection.cached("early_ranking:groups", make)


def cached_group_data(selection: Selection, key: tuple) -> dict:
    """group_data of one group, computed once per data and ruleset, study and hardware filter
    (the algorithm and workload filters only say whether it is offered), shared by the
    server's sessions (views/cache.py)."""
    def make():
        runs = selection.full_runs()
        study, workload, algorithm = key
        group = runs[(runs["study_name"] == study) & (runs["workload"] == workload)
                     & (runs["algorithm"] == algorithm) & (runs["source"] == RANKED["source"])]
        return group_data(selection.store, key, group)
    return selection.full_value(f"early_ranking:{_label(key)}", make, time_axis=False)


def warm(store_path: str) -> None:
    """Compute what the dashboard's tab first shows (the first group's data: its LCGA fits
    take about a second) into the server's shared cache, in a Selection of its own with the
    default filters, which a new session's are (workbench.app runs it in the background once
    a page is up)."""
    selection = Selection(store_path=str(store_path))
    groups = offered_groups(selection)
    if groups:
        cached_group_data(selection, next(iter(groups.values())))


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
        self._drawn_plots: list = []  # the (cached) group data shown
        self._pairs: list[tuple[LivePlot, LivePlot]] = []  # per group drawn: its two plots
        self._columns: list[pn.Column] = []  # per group drawn: its plots, one above the other
        self._drawn_saved: list = []  # the (cached) compute-saved frame shown
        self.param.watch(self._picked, "group")
        self._first_draw()

    def _groups(self) -> dict[str, tuple]:
        return offered_groups(self.selection)

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
            data = [self._group_data(key) for key in keys]
            if not _same(data, self._drawn_plots):  # the cached data: nothing to redraw
                self._drawn_plots = data
                for i, group in enumerate(data):
                    _draw_group(*self._pair(i), group)
                if not _same(self._body.objects, self._columns[:len(data)]):
                    self._body.objects = self._columns[:len(data)]
        saved = self._saved_frame()
        if not _same([saved], self._drawn_saved):
            self._drawn_saved = [saved]
            self._saved.objects = [
                pn.pane.Markdown("#### Compute saved by the early-stopping tuner"),
                pn.pane.DataFrame(saved.round(2), index=False)] if len(saved) else [
                pn.Spacer(height=0)]

    def _pair(self, i: int) -> tuple[LivePlot, LivePlot]:
        """The i-th group's (ranking, prediction) plots, made once: the dashboard redraws
        its one pair in place when another group is picked."""
        while len(self._pairs) <= i:
            pair = _group_liveplots()
            self._pairs.append(pair)
            # a group's two plots one above the other, each the full width: the prediction
            # plot's legend names runs by their hyperparameters, and it was cut off at the
            # right of half a row ("one_minus_beta1=0.03" at 1500 px)
            self._columns.append(pn.Column(*(p.pane for p in pair), sizing_mode="stretch_width"))
        return self._pairs[i]

    def _group_data(self, key: tuple) -> dict:
        return cached_group_data(self.selection, key)

    def _saved_frame(self) -> pd.DataFrame:
        names = sorted(self.selection.present("study_name"))
        return self.selection.full_value(
            f"early_ranking:saved:{names}",
            lambda: self.selection.results.early_stopping_saved(names,
                                                                 self.selection.full_runs()),
            time_axis=False)

    def __panel__(self) -> pn.viewable.Viewable:
        return pn.Column(pn.pane.Markdown(
            "### Early ranking\nSigned Spearman rho between each estimator computed on the first "
            "fraction of the step budget and the final validation metric (+1: perfect ranking). "
            "All estimators are 'lower predicts better'; LCGA is the fitted loss at the full "
            "budget, LCGA-D1N's sign is uncalibrated."), self._picker, self._body, self._saved,
            sizing_mode="stretch_width", css_classes=["pb-early-ranking"])
