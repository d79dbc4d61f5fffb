"""The Costs view's plots of one workload (workbench/views/costs.py): the Pareto front of cost
against the best quality reached, cost-to-quality and speedup-at-quality curves, each as its
data (cached) and its drawing on a LivePlot; they read the eval rows of one run per study
(costs.curve_runs), never every run of the store.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from workbench import costs
from workbench import records as R
from workbench.views.cost_tables import (MAX_PARETO_POINTS, QUALITY_POINTS, prices_key,
                                         shown_workloads)
from workbench.views.live import LivePlot, steps
from workbench.views.selection import Selection
from workbench.views.plotting import hv

__all__ = ["figures", "pareto_data", "pareto_plot", "cost_quality_data", "cost_quality_plot",
           "speedup_data", "speedup_plot", "PLOTS"]


# -- the plots of one workload -------------------------------------------------------------------
def _log_scale(values) -> bool:
    """A log cost axis when the positive finite costs span at least two decades (a log axis
    over less labels its minor ticks, which crowd)."""
    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values) & (values > 0)]
    return bool(values.size) and bool(values.max() >= 100 * values.min())


def _cost_label(what: str, log: bool) -> str:
    return f"{what} (USD{', log scale' if log else ''})"


def _quality_range(quality: pd.Series, direction: str) -> tuple[float, float]:
    """y range of a quality axis: the best value and the 10th percentile from the worst end, so
    a few runs that went nowhere do not squash the front (pan to see them)."""
    best = quality.max() if direction == "max" else quality.min()
    bulk = quality.quantile(0.1 if direction == "max" else 0.9)
    low, high = sorted((float(bulk), float(best)))
    pad = 0.05 * (high - low) or 0.05 * abs(high) or 0.05
    return low - pad, high + pad


def _workload_runs(selection: Selection, workload: str) -> pd.DataFrame:
    """The runs of `workload` of every algorithm (Selection.full_runs), cached."""
    def make() -> pd.DataFrame:
        runs = selection.full_runs()
        return runs[runs["workload"] == workload]
    return selection.full_value(f"costs:runs:{workload}", make, time_axis=False)


def _shown(frame: pd.DataFrame, selection: Selection) -> pd.DataFrame:
    """The rows of `frame` (a column algorithm) of the shown algorithms."""
    return frame[frame["algorithm"].isin(selection.algorithms)]


def _curve_rows(selection: Selection, workload: str) -> pd.DataFrame:
    """Eval rows of the runs standing for each study of `workload` (costs.curve_runs), of
    every algorithm, read once per data and ruleset, study and hardware filter."""
    def make() -> pd.DataFrame:
        picked = selection.full_value("costs:curve_runs", lambda: costs.curve_runs(
            selection.full_cube("train_seconds")), time_axis=False)
        ids = picked.loc[picked["workload"] == workload, "run_id"].tolist()
        if not ids or selection.store is None:
            return pd.DataFrame(columns=list(R.EVAL_COLUMNS))
        return selection.results.evals(ids)
    return selection.full_value(f"costs:evals:{workload}", make, time_axis=False)


def _quality_of(runs: pd.DataFrame) -> tuple[str, str, float]:
    """(validation metric column, direction, validation target) of one workload's runs."""
    first = runs.iloc[0]
    target = first["target_validation"]
    return (R.metric_column("validation", first["target_metric"]), first["target_direction"],
            float(target) if target is not None and not pd.isna(target) else math.nan)


def pareto_data(selection: Selection, workload: str, prices: costs.PriceTable) -> dict | None:
    """What the Pareto plot draws: every shown run of `workload` at (cost of the whole run, best
    validation quality), coloured by algorithm (at most MAX_PARETO_POINTS besides the front),
    and the Pareto front; axis labels, range and title. None when no run has a priced cost
    and a quality."""
    runs = _workload_runs(selection, workload)
    if not len(runs):
        return None
    metric, direction, _ = _quality_of(runs)

    def priced() -> pd.DataFrame:
        points = costs.run_costs(runs, prices).assign(
            quality=runs["best_validation"].to_numpy(float))
        return points[(points["train_cost_usd"] > 0) & np.isfinite(points["quality"])]
    points = _shown(selection.full_value(f"costs:points:{workload}:{prices_key(prices)}",
                                         priced, time_axis=False), selection)
    if not len(points):
        return None
    front = points[costs.pareto_front(points["train_cost_usd"], points["quality"], direction)]
    front = front.sort_values("train_cost_usd")
    drawn = points.drop(front.index)
    step = max(1, math.ceil(len(drawn) / MAX_PARETO_POINTS))
    drawn = pd.concat([drawn.iloc[::step], front]).sort_values("algorithm", kind="stable")
    shown = f"{len(drawn)} of {len(points)} runs drawn" if step > 1 else f"{len(points)} runs"
    log = _log_scale(points["train_cost_usd"])
    return {"points": drawn, "front": front, "log": log,
            "ylim": _quality_range(points["quality"], direction),
            "xlabel": _cost_label("cost of the whole run", log),
            "ylabel": f"best {metric} reached",
            "title": f"{workload}: cost vs best quality ({shown})"}


def pareto_plot(selection: Selection, workload: str,
                prices: costs.PriceTable) -> hv.Overlay | None:
    """pareto_data in HoloViews (paper figures, the report): runs as points, log cost axis
    over two decades or more, the front as a black step line with rings."""
    data = pareto_data(selection, workload, prices)
    if data is None:
        return None
    colors, front = selection.colors, data["front"]
    scatters = [hv.Scatter(part, "train_cost_usd", ["quality", "algorithm", "run_id"],
                           label=str(name)).opts(color=colors.get(name, "gray"))
                for name, part in data["points"].groupby("algorithm", sort=True)]
    line = hv.Curve(front, "train_cost_usd", ["quality", "algorithm", "run_id"],
                    label="Pareto front").opts(color="black", interpolation="steps-post",
                                               line_width=2)
    marks = hv.Scatter(front, "train_cost_usd", ["quality", "algorithm", "run_id"]).opts(
        fill_alpha=0, line_color="black", line_width=2, size=12)
    return hv.Overlay([*scatters, line, marks]).opts(
        hv.opts.Scatter(size=6, alpha=0.7, tools=["hover"]),
        hv.opts.Overlay(responsive=True, min_height=360, shared_axes=False, logx=data["log"],
                        show_grid=True, ylim=data["ylim"], xlabel=data["xlabel"],
                        ylabel=data["ylabel"], legend_position="right", title=data["title"]))


def _draw_pareto(plot: LivePlot, data: dict, colors: dict) -> None:
    points, front = data["points"], data["front"]
    cost, quality = front["train_cost_usd"].to_numpy(float), front["quality"].to_numpy(float)
    plot.draw(
        [("Pareto front", "black", *steps(cost, quality))], data["title"], widths=[2],
        points=zip(points["algorithm"].astype(str), points["algorithm"].map(
            lambda a: colors.get(a, "gray")), points["train_cost_usd"].to_numpy(float),
            points["quality"].to_numpy(float), points["run_id"].astype(str)),
        marks=(cost, quality), xlabel=data["xlabel"], ylabel=data["ylabel"], ylim=data["ylim"])


def _curves(selection: Selection, workload: str, prices: costs.PriceTable):
    """(best_so_far rows, metric, direction, target, median cost to quality (algorithm,
    quality) or None) of `workload`'s curve runs of the shown algorithms. Computed once over
    every algorithm (per data, ruleset, study and hardware filter, and prices), the quality
    grid included, so that it stays put while algorithms are ticked, and cut to the shown
    algorithms."""
    empty = pd.DataFrame(columns=["run_id", "algorithm", "cost_usd", "quality"])

    def make():
        runs = _workload_runs(selection, workload)
        if not len(runs):
            return empty, "", "max", math.nan, None
        metric, direction, target = _quality_of(runs)
        evals = _curve_rows(selection, workload)
        if metric not in evals.columns or not len(evals):
            return empty, metric, direction, target, None
        curves = costs.best_so_far(evals, runs, prices, metric, direction)
        curves = curves[curves["cost_usd"] > 0]  # drawn on log axes; unpriced (NaN) left out
        if not len(curves.dropna(subset=["quality"])):
            return empty, metric, direction, target, None
        grid = costs.quality_grid(curves, direction, QUALITY_POINTS, include=[target])
        medians = costs.median_cost_to_quality(costs.cost_to_quality(curves, grid, direction))
        return curves, metric, direction, target, medians

    def cut():
        curves, metric, direction, target, medians = full
        curves = _shown(curves, selection)
        if medians is None or not len(curves.dropna(subset=["quality"])):
            return empty, metric, direction, target, None
        drawn = set(curves["algorithm"].unique())
        names = [a for a in medians["algorithm"].values if a in drawn]
        return curves, metric, direction, target, medians.sel(algorithm=names)
    key = f"costs:curves:{workload}:{prices_key(prices)}"
    full = selection.full_value(key, make, time_axis=False)
    return selection.cached(key, cut)


def _broken_lines(rows: pd.DataFrame, x: str, y: str) -> tuple[np.ndarray, np.ndarray]:
    """The (x, y) of every run's line (rows ordered by run, as best_so_far is) as one line
    broken by NaN between runs: one glyph for all, quick to draw however many runs."""
    ids = rows["run_id"].to_numpy(object)
    starts = np.flatnonzero(ids[1:] != ids[:-1]) + 1
    return tuple(np.insert(rows[c].to_numpy(float), starts, np.nan) for c in (x, y))


def cost_quality_data(selection: Selection, workload: str,
                      prices: costs.PriceTable) -> dict | None:
    """What the quality-for-the-money plot draws: best quality so far against cost so far, a
    thin grey line per curve run (one per study: "background", one line broken by NaN) and,
    per algorithm, the median over studies of the cost to reach each quality ("lines", steps);
    the target; None when there is nothing priced to draw."""
    curves, metric, direction, target, medians = _curves(selection, workload, prices)
    if medians is None:
        return None
    colors, lines = selection.colors, []
    for name in medians["algorithm"].values:
        cost = medians.sel(algorithm=name).values
        keep = np.isfinite(cost)
        if keep.any():
            order = np.argsort(cost[keep], kind="stable")
            lines.append((str(name), colors.get(name, "gray"), cost[keep][order],
                          medians["quality"].values[keep][order]))
    log = _log_scale(curves["cost_usd"])
    return {"background": _broken_lines(curves, "cost_usd", "quality"), "lines": lines,
            "target": target, "log": log, "xlabel": _cost_label("cost so far", log),
            "ylabel": f"best {metric} so far",
            "title": f"{workload}: quality reached for the money (bold: median over studies)"}


def cost_quality_plot(selection: Selection, workload: str,
                      prices: costs.PriceTable) -> hv.Overlay | None:
    """cost_quality_data in HoloViews (paper figures, the report); the target dashed."""
    data = cost_quality_data(selection, workload, prices)
    if data is None:
        return None
    parts = [hv.Curve(data["background"], "cost_usd", "quality").opts(
        color="gray", alpha=0.35, line_width=1)]
    parts += [hv.Curve((x, y), "cost_usd", "quality", label=label).opts(
        color=color, line_width=3, interpolation="steps-post") for label, color, x, y in
        data["lines"]]
    if not math.isnan(data["target"]):
        parts.append(hv.HLine(data["target"]).opts(color="black", line_dash="dashed",
                                                    line_width=1.5))
    return hv.Overlay(parts).opts(
        hv.opts.Curve(tools=["hover"]),
        hv.opts.Overlay(responsive=True, min_height=360, shared_axes=False, logx=data["log"],
                        show_grid=True, xlabel=data["xlabel"], ylabel=data["ylabel"],
                        legend_position="right", title=data["title"]))


def _draw_cost_quality(plot: LivePlot, data: dict, colors: dict) -> None:
    target = data["target"]
    plot.draw([(label, color, *steps(x, y)) for label, color, x, y in data["lines"]],
              data["title"], widths=[3] * len(data["lines"]), background=data["background"],
              hline=None if math.isnan(target) else (target, "dashed"),
              xlabel=data["xlabel"], ylabel=data["ylabel"])


def speedup_data(selection: Selection, workload: str,
                 prices: costs.PriceTable) -> dict | None:
    """What the speedup-at-quality plot draws: s(q) = the reference's median cost to reach q /
    each algorithm's, over the quality grid ("lines"); the target; None without the
    reference's curves or a priced cost."""
    reference = selection.reference
    curves, metric, direction, target, medians = _curves(selection, workload, prices)
    drawn = set(curves["algorithm"]) if medians is not None else set()
    if reference not in drawn or len(drawn) < 2:
        return None
    speedups = costs.speedup_at_quality(medians, reference)
    colors, lines = selection.colors, []
    for name in speedups["algorithm"].values:
        s = speedups.sel(algorithm=name)
        keep = np.isfinite(s.values)
        if keep.any():
            lines.append((str(name), colors.get(name, "gray"), s["quality"].values[keep],
                          s.values[keep]))
    if not lines:
        return None
    return {"lines": lines, "target": target, "flip": direction == "min", "metric": metric,
            "xlabel": f"quality threshold q ({metric}; better to the right)",
            "ylabel": f"s(q): cost of {reference} / cost of the algorithm",
            "title": f"{workload}: speedup at quality over {reference}"}


def speedup_plot(selection: Selection, workload: str,
                 prices: costs.PriceTable) -> hv.Overlay | None:
    """speedup_data in HoloViews (paper figures, the report): log y axis, 1 dashed, the target
    dotted."""
    data = speedup_data(selection, workload, prices)
    if data is None:
        return None
    parts = [hv.Curve((x, y), data["metric"], "speedup", label=label).opts(
        color=color, line_width=2.5) for label, color, x, y in data["lines"]]
    parts.append(hv.HLine(1.0).opts(color="black", line_dash="dashed", line_width=1))
    if not math.isnan(data["target"]):
        parts.append(hv.VLine(data["target"]).opts(color="black", line_dash="dotted",
                                                   line_width=1.5))
    return hv.Overlay(parts).opts(
        hv.opts.Curve(tools=["hover"], interpolation="steps-mid"),
        hv.opts.Overlay(responsive=True, min_height=360, shared_axes=False, logy=True,
                        show_grid=True, invert_xaxis=data["flip"], xlabel=data["xlabel"],
                        ylabel=data["ylabel"], legend_position="right", title=data["title"]))


def _draw_speedup(plot: LivePlot, data: dict, colors: dict) -> None:
    target = data["target"]
    plot.draw([(label, color, *steps(x, y, mid=True)) for label, color, x, y in data["lines"]],
              data["title"], hline=(1.0, "dashed"),
              vline=None if math.isnan(target) else (target, "dotted"),
              xlabel=data["xlabel"], ylabel=data["ylabel"], flip_x=data["flip"])


def figures(selection: Selection, prices: costs.PriceTable | None = None) -> dict[str, hv.Overlay]:
    """The view's plots for every shown workload, by name ("cost_pareto_<workload>",
    "cost_quality_<workload>", "speedup_at_quality_<workload>"); default prices from
    costs.PRICE_RULES. A plot with nothing to draw is left out."""
    if not selection.n_runs:
        return {}
    prices = prices or costs.PriceTable.defaults(selection.present("hardware", nulls=True))
    out = {}
    for workload in shown_workloads(selection):
        plots = {"cost_pareto": pareto_plot(selection, workload, prices),
                 "cost_quality": cost_quality_plot(selection, workload, prices),
                 "speedup_at_quality": speedup_plot(selection, workload, prices)}
        out.update({f"{kind}_{workload}": plot for kind, plot in plots.items() if plot is not None})
    return out


# The plots of one workload, by the CSS class of their pane (browser tests find them by it),
# and the dashboard's drawing of each: (its data, how it draws on a LivePlot, the LivePlot's
# options, hover names included); a plot whose data says "log" is drawn on the log-axis one of
# a pair.
PLOTS = {"pb-cost-pareto": (pareto_data, _draw_pareto, {
             "points": True, "y_range": (0, 1), "hover": ("cost (USD)", "best quality", "run")}),
         "pb-cost-quality": (cost_quality_data, _draw_cost_quality, {
             "hover": ("cost so far (USD)", "best quality so far", "")}),
         "pb-speedup-quality": (speedup_data, _draw_speedup, {
             "y_log": True, "hover": ("quality", "speedup", "")})}
