"""Learning curves: the validation target metric against train seconds, wall seconds or steps, one
line per run coloured by algorithm, the target as a horizontal line and each run's first eval that
met it marked; beside it, the training loss of the same runs.

Everything drawn is read from the store's rows; the time to target comes with each run record.
"""
from __future__ import annotations

import holoviews as hv
import pandas as pd
import panel as pn
import param

from workbench import records as R
from workbench.views.selection import MAX_DEFAULT_CURVES, TIME_AXES, Selection

hv.extension("bokeh", logo=False)  # the backend whose options the plots below set

__all__ = ["Curves", "validation_plot", "loss_plot"]


def _run_lines(rows: pd.DataFrame, x: str, y: str, colors: dict[str, str]) -> list[hv.Curve]:
    """One hv.Curve per run of `rows` (which carry `algorithm`), labelled by algorithm."""
    return [
        hv.Curve(group.sort_values(x), kdims=x, vdims=[y, "run_id"], label=str(name[0]))
        .opts(color=colors.get(name[0], "gray"))
        for name, group in rows.groupby(["algorithm", "run_id"], sort=True)
    ]


def _target_points(runs: pd.DataFrame, evals: pd.DataFrame, x: str, y: str) -> hv.Scatter:
    """The eval (rows of `evals`) at which each run first met its target (eval_index_to_target)."""
    reached = runs[runs["reached_target"].fillna(False).astype(bool)]
    keys = reached[["run_id", "eval_index_to_target"]].rename(
        columns={"eval_index_to_target": "eval_index"})
    points = keys.merge(evals, on=["run_id", "eval_index"])
    return hv.Scatter(points, kdims=x, vdims=[y, "algorithm", "run_id"], label="time to target")


def _target(run: pd.Series) -> tuple[list[hv.HLine], str]:
    """The target line of a workload (none when its run has no target) and its title text."""
    value = run["target_validation"]
    if value is None or pd.isna(value):
        return [], "no validation target"
    line = hv.HLine(float(value), label="target").opts(color="black", line_dash="dashed",
                                                       line_width=1.5)
    return [line], f"target {float(value):g}, {run['target_direction']}"


def validation_plot(selection: Selection, workload: str) -> hv.Overlay:
    """Validation target metric of the shown runs of one workload, with target and hits."""
    runs = selection.shown_curve_runs.query("workload == @workload")
    x, metric = selection.time_axis, runs.iloc[0]["target_metric"]
    y = R.metric_column("validation", metric)
    evals = selection.curve_evals().merge(runs[["run_id", "algorithm"]], on="run_id")
    evals = evals.dropna(subset=[y]) if y in evals else evals.assign(**{y: float("nan")})
    target, about = _target(runs.iloc[0])
    hits = _target_points(runs, evals, x, y).opts(
        color="algorithm", cmap=selection.colors, size=9, marker="circle", line_color="black",
        show_legend=False)
    return hv.Overlay([*_run_lines(evals, x, y, selection.colors), *target, hits]).opts(
        hv.opts.Curve(line_width=1.5, alpha=0.85, tools=["hover"]),
        hv.opts.Overlay(responsive=True, min_height=320, xlabel=TIME_AXES[x],
                        ylabel=f"validation {metric}", show_grid=True, legend_position="right",
                        title=f"{workload}: validation {metric} ({about})"))


def loss_plot(selection: Selection, workload: str) -> hv.Overlay:
    """Minibatch training loss of the shown runs of one workload (log scale when positive)."""
    runs = selection.shown_curve_runs.query("workload == @workload")
    train = selection.curve_train().merge(runs[["run_id", "algorithm"]], on="run_id")
    # Training rows carry no wall clock: on the wall-seconds axis they stay on train seconds.
    x = selection.time_axis if selection.time_axis in R.TRAIN_COLUMNS else "train_seconds"
    train = train.dropna(subset=["loss"])
    return hv.Overlay(_run_lines(train, x, "loss", selection.colors)).opts(
        hv.opts.Curve(line_width=1, alpha=0.8, tools=["hover"]),
        hv.opts.Overlay(responsive=True, min_height=320, xlabel=TIME_AXES[x], ylabel="loss",
                        logy=bool(len(train)) and bool((train["loss"] > 0).all()),
                        show_grid=True, show_legend=False,
                        title=f"{workload}: training loss"))


class Curves(pn.viewable.Viewer):
    """Per shown workload: validation curves beside training-loss curves."""

    selection = param.ClassSelector(class_=Selection)

    def __init__(self, **params) -> None:
        super().__init__(**params)
        self._body = pn.Column(sizing_mode="stretch_width")
        self._update()

    @param.depends("selection.version", "selection.workloads", "selection.algorithms",
                   "selection.time_axis", "selection.curve_runs", watch=True)
    def _update(self) -> None:
        runs = self.selection.shown_curve_runs
        if not len(runs):
            self._body.objects = [pn.pane.Markdown("No runs to draw with the current selection.")]
            return
        self._body.objects = [
            pn.Row(pn.pane.HoloViews(validation_plot(self.selection, w),
                                     sizing_mode="stretch_width", css_classes=["pb-curve"]),
                   pn.pane.HoloViews(loss_plot(self.selection, w), sizing_mode="stretch_width"),
                   sizing_mode="stretch_width")
            for w in sorted(runs["workload"].unique())
        ]

    def __panel__(self) -> pn.viewable.Viewable:
        return pn.Column(
            pn.pane.Markdown(
                f"### Learning curves\nOne line per run, coloured by algorithm; the dashed line "
                f"is the validation target and a dot marks the first eval that met it. Showing "
                f"the runs picked in the sidebar, or else the first {MAX_DEFAULT_CURVES} "
                f"shown runs."),
            self._body, sizing_mode="stretch_width")
