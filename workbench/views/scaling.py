"""Scaling: steps-to-result against batch size on log-log axes, one series per sparsity, with the
fitted S(B) = S_min (1 + B_crit/B), B_crit, the regimes and the gradient-noise-scale estimate.

The goal is the workload's validation target unless the study recorded its own (a scaling study's
summary document, Store.study_summary). Computed by workbench.scaling.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import panel as pn

from workbench import scaling
from workbench import records as R
from workbench.results import Results
from workbench.store import open_store
from workbench.views.base import View
from workbench.views.plotting import hv
from workbench.views.selection import Selection


__all__ = ["Scaling", "study_goal", "scaling_results", "scaling_plot", "figures"]


def study_goal(store, study_name: str, runs: pd.DataFrame) -> float:
    """The scaling study's goal from its summary document, else the runs' validation target."""
    goal = ((store.study_summary(study_name) or {}).get("spec") or {}).get("goal")
    return float(goal) if goal is not None else float(runs["target_validation"].iloc[0])


def scaling_results(store, runs: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(steps-to-result per study/workload/algorithm/sparsity/batch size, fits per sparsity with
    B_crit and the noise-scale estimate B_simple from the winning runs' measurements)."""
    results, fits = [], []
    for (study, workload, algorithm), group in runs.groupby(
            ["study_name", "workload", "algorithm"], sort=True):
        metric = R.metric_column("validation", group["target_metric"].iloc[0])
        evals = Results(store).evals(group["run_id"])
        table = scaling.steps_to_result(group, evals, study_goal(store, study, group), metric,
                                        group["target_direction"].iloc[0])
        table = table.assign(study_name=study, workload=workload, algorithm=algorithm)
        results.append(table)
        for sparsity, part in table.groupby("sparsity", sort=True):
            fit = scaling.fit_steps_to_result(part["batch_size"], part["steps"])
            winners = part.dropna(subset=["run_id"])
            noise = scaling.noise_estimate(evals, winners["run_id"],
                                           dict(zip(winners["run_id"], winners["steps"])))
            fits.append({"study_name": study, "workload": workload, "algorithm": algorithm,
                         "sparsity": sparsity, "s_min": fit["s_min"], "b_crit": fit["b_crit"],
                         "b_simple": noise, "points": fit["n"], "rmse_log": fit["rmse_log"]})
    if not results:
        return pd.DataFrame(), pd.DataFrame()
    return pd.concat(results, ignore_index=True), pd.DataFrame(fits)


def scaling_plot(results: pd.DataFrame, fits: pd.DataFrame, title: str) -> hv.Overlay:
    """log-log steps-to-result vs batch size per sparsity: measured points and the fitted curve."""
    parts = []
    for sparsity, part in results.groupby("sparsity", sort=True):
        fit = fits[fits["sparsity"] == sparsity].iloc[0]
        label = f"sparsity {sparsity:g}"
        reached = part.dropna(subset=["steps"])
        parts.append(hv.Scatter(reached, "batch_size", ["steps", "trial"], label=label)
                     .opts(size=8, tools=["hover"]))
        if np.isfinite(fit["b_crit"]):
            grid = np.geomspace(part["batch_size"].min(), part["batch_size"].max(), 100)
            curve = scaling.predicted_steps(grid, fit["s_min"], fit["b_crit"])
            parts.append(hv.Curve((grid, curve), "batch_size", "steps",
                                  label=f"{label} fit, B_crit {fit['b_crit']:.0f}")
                         .opts(line_dash="dashed"))
    return hv.Overlay(parts).opts(hv.opts.Overlay(
        responsive=True, min_height=340, logx=True, logy=True, show_grid=True,
        xlabel="batch size", ylabel="steps to result", legend_position="right", title=title))


def _regimes(fits: pd.DataFrame, results: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for fit in fits.itertuples():
        batches = sorted(results.loc[results["sparsity"] == fit.sparsity, "batch_size"].unique())
        labels = scaling.regime(batches, fit.b_crit) if np.isfinite(fit.b_crit) else ["-"] * len(batches)
        rows.append({"sparsity": fit.sparsity, **{str(b): lab for b, lab in zip(batches, labels)}})
    return pd.DataFrame(rows)


def _results(selection: Selection) -> tuple[pd.DataFrame, pd.DataFrame]:
    """scaling_results of the selection's runs (empty frames when they span one batch size)."""
    if len(selection.present("batch_size")) < 2:
        return pd.DataFrame(), pd.DataFrame()
    runs = selection.runs
    store = open_store(selection.store_path)
    keep = set(runs["run_id"])
    runs = scaling.scaling_runs(store)
    return scaling_results(store, runs[runs["run_id"].isin(keep)])


def _groups(results: pd.DataFrame, fits: pd.DataFrame):
    """(study, workload, algorithm), its results and its fits, per group of `results` that
    ran at two or more batch sizes (one batch size is no scaling study: a lone point on
    log axes, which Bokeh draws without ticks)."""
    if not len(results):
        return
    for (study, workload, algorithm), part in results.groupby(
            ["study_name", "workload", "algorithm"], sort=True):
        if part["batch_size"].nunique() < 2:
            continue
        fit = fits[(fits["study_name"] == study) & (fits["workload"] == workload) &
                   (fits["algorithm"] == algorithm)]
        yield (study, workload, algorithm), part, fit


def figures(selection: Selection) -> dict[str, hv.Overlay]:
    """For `workbench.figures`: "scaling_<study>_<workload>_<algorithm>" per scaling study
    group; a group none of whose batch sizes reached the result is left out (nothing to draw
    on its log axes)."""
    results, fits = _results(selection)
    return {f"scaling_{study}_{workload}_{algorithm}":
            scaling_plot(part, fit, f"{study}: {workload} / {algorithm}")
            for (study, workload, algorithm), part, fit in _groups(results, fits)
            if part["steps"].notna().any()}


class Scaling(View):
    """Steps-to-result vs batch size per sparsity, the fit, B_crit, noise scale and regimes."""

    def __init__(self, **params) -> None:
        super().__init__(**params)
        self._body = pn.Column(sizing_mode="stretch_width")
        self._none = pn.pane.Markdown("No scaling study here: it needs runs at two or more "
                                      "batch sizes (`pacebench scale ...`).")
        self._first_draw()

    def _update(self) -> None:
        if len(self.selection.present("batch_size")) < 2:  # counted: no copy of the runs
            if [id(o) for o in self._body.objects] != [id(self._none)]:
                self._body.objects = [self._none]  # shown already: no layout update
            return
        parts = []  # (a store of ordinary studies at several batch sizes has no group)
        for (study, workload, algorithm), part, fit in _groups(*_results(self.selection)):
            parts += [pn.pane.HoloViews(scaling_plot(part, fit, f"{study}: {workload} / "
                                                     f"{algorithm}"), sizing_mode="stretch_width"),
                      pn.pane.DataFrame(fit.round(3), index=False),
                      pn.pane.Markdown("Regimes per batch size:"),
                      pn.pane.DataFrame(_regimes(fit, part), index=False)]
        self._body.objects = parts or [self._none]

    def __panel__(self) -> pn.viewable.Viewable:
        return pn.Column(pn.pane.Markdown(
            "### Batch-size scaling\nSteps to the goal (minimum over the trials at each batch size) "
            "on log-log axes, per sparsity; dashed: S(B) = S_min (1 + B_crit/B) fitted on log S. "
            "B_simple: gradient noise scale (ratio of mean estimates) from the winning runs."),
            self._body, sizing_mode="stretch_width")
