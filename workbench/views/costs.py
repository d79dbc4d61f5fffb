"""Cost vs accuracy (DAWNBench and the compute-efficiency survey): dollars to the target, the
Pareto front of cost against the best quality reached, cost-to-quality and speedup-at-quality
curves, and batch-1 inference latency and cost per 10,000 examples.

Every number comes from `workbench.costs` with the prices of an editable price table (one row per
hardware key of the shown runs, filled from costs.PRICE_RULES); editing a price recomputes the
view. A hardware key without a price shows "n/a" and a notice naming it. The curve plots are drawn
for one workload, picked in the view; they read the eval rows of one run per study
(costs.curve_runs), never every run of the store.
"""
from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
import panel as pn
import param
import xarray as xr

from workbench import costs, query
from workbench import records as R
from workbench.views.formats import MISS, NO_RUNS, duration, md, unit_for
from workbench.views.base import FILTERS, View
from workbench.views.leaderboard import GROUP_TITLES, TABLE_CSS, wrap_title
from workbench.views.live import LivePlot, steps
from workbench.views.selection import Selection
from workbench.views.plotting import hv


__all__ = ["Costs", "figures", "cost_table", "cost_frame", "cost_pivot", "price_frame",
           "train_time_cube", "missing_prices_note", "pareto_data", "pareto_plot",
           "cost_quality_data", "cost_quality_plot", "speedup_data", "speedup_plot", "usd",
           "NOT_PRICED", "MAX_PARETO_POINTS", "QUALITY_POINTS", "eval_share", "eval_share_frame"]

NOT_PRICED = "n/a (no price)"  # a cost whose hardware has no price in the table
NOT_MEASURED = "n/m"  # latency or energy the runs did not measure (explained under the table)
MAX_PARETO_POINTS = 3000       # runs drawn on the Pareto plot (the front is always drawn whole)
QUALITY_POINTS = 60            # quality thresholds of the cost-to-quality and s(q) curves
EDITED = "edited in the dashboard"

COST_TITLES = {
    "algorithm": "Algorithm", "workload": "Workload", "hardware": "Hardware",
    "usd_per_hour": "USD per hour", "time_to_target": "Median time to target",
    "cost_to_target": "Median cost to target", "studies_reached": "Studies reached",
    "inference_ms": "Inference latency (batch 1)", "inference_usd_per_10k":
        "Inference cost per 10,000 examples", "energy": "GPU energy per run",
}
PRICE_TITLES = {"hardware": "Hardware", "usd_per_hour": "USD per hour (edit me)",
                "source": "Source of the price"}


def usd(value: float) -> str:
    """'$1,230', '$12.3', '$0.500', '$0.0123', '$0.00000246' (three significant digits, never
    scientific notation), '< $0.000000001' below that; MISS for +inf, NOT_PRICED for NaN."""
    if value is None or math.isnan(value):
        return NOT_PRICED
    if math.isinf(value):
        return MISS
    if value < 1e-9:
        return "$0" if value <= 0 else "< $0.000000001"
    return f"${significant(value)}"


def significant(value: float, digits: int = 3) -> str:
    """A positive finite number to `digits` significant digits, thousands separated, never in
    scientific notation: 1234.5 -> '1,230', 12.345 -> '12.3', 0.000123456 -> '0.000123'."""
    places = digits - 1 - math.floor(math.log10(abs(value))) if value else 0
    rounded = round(value, places)
    if rounded and math.floor(math.log10(abs(rounded))) > math.floor(math.log10(abs(value))):
        places -= 1  # 999.7 rounds up to 1,000: one place fewer
    return f"{rounded:,.{max(places, 0)}f}"


# CPU hardware keys and their cores (runners/run/env.py's "cpu: <model> (<n> threads)", the fake
# stores' "synthetic CPU x<n>"). A CPU's cost reads in core-seconds unless a price was typed
# into the price table: its default price is an example rate (costs.PRICE_RULES), and a dollar
# figure of a few seconds on a laptop ("$0.0000696") says nothing.
CPU_CORES = re.compile(r"cpu: .+ \((\d+) threads?\)|synthetic CPU x(\d+)")


def cpu_cores(hardware: object) -> int | None:
    """The cores of a CPU hardware key (CPU_CORES); None for other hardware."""
    match = CPU_CORES.fullmatch(str(hardware)) if isinstance(hardware, str) else None
    return int(match.group(1) or match.group(2)) if match else None


def cost_text(cost: float, seconds: float, hardware: object, prices: costs.PriceTable) -> str:
    """A cost in the unit that fits: dollars (usd) where the price is a real one or was typed
    in; core-seconds ("12.3 core-s") on a CPU at its default example price; MISS for a miss."""
    cores = cpu_cores(hardware)
    price = prices.prices.get(costs.hardware_key(hardware))
    if cores is None or (price is not None and price.source == EDITED):
        return usd(cost)
    if seconds is None or math.isnan(seconds):
        return NOT_PRICED
    if math.isinf(seconds):
        return MISS
    return f"{significant(seconds * cores)} core-s" if seconds > 0 else "0 core-s"


def energy_text(joules: float) -> str:
    """Energy in a unit that fits, three significant digits: J, kJ, or kWh from 0.01 kWh."""
    if not math.isfinite(joules):
        return NOT_MEASURED
    if joules >= 36_000:
        return f"{significant(joules / 3.6e6)} kWh"
    if joules >= 1_000:
        return f"{significant(joules / 1e3)} kJ"
    return f"{significant(joules)} J" if joules > 0 else "0 J"


def _milliseconds(seconds: float) -> str:
    return NOT_MEASURED if seconds is None or math.isnan(seconds) else f"{seconds * 1e3:.3g} ms"


def _shown_workloads(selection: Selection) -> list[str]:
    """Shown workloads in leaderboard order (scored, held-out variants, other variants)."""
    groups = selection.workload_groups() if selection.n_runs else {}
    ordered = [w for ws in groups.values() for w in ws if w in selection.workloads]
    return ordered + [w for w in selection.workloads if w not in ordered]


def train_time_cube(selection: Selection) -> xr.Dataset:
    """The selection's final cube on the shown workloads with time_to_target in training
    seconds whatever the sidebar's time axis: cost is training time x price (DAWNBench)."""
    def make() -> xr.Dataset:
        cube = selection.cut(selection.full_cube("train_seconds"))
        return cube.sel(workload=[w for w in cube["workload"].values
                                  if w in set(selection.workloads)])
    return selection.cached("costs:train_time_cube", make)


def _prices_key(prices: costs.PriceTable) -> str:
    """A cache-key text of the prices (hardware key and USD per hour of each)."""
    return repr(sorted((k, p.usd_per_hour) for k, p in prices.prices.items()))


def cost_table(selection: Selection, prices: costs.PriceTable) -> pd.DataFrame:
    """costs.cost_table of the shown runs at these prices. A row depends on its algorithm and
    workload's runs only, so the table is computed once over every algorithm and workload
    (per data, ruleset, study and hardware filter, and prices) and the shown rows are cut
    from it."""
    key = f"costs:table:{_prices_key(prices)}"
    full = selection.full_value(key, lambda: costs.cost_table(
        selection.full_cube("train_seconds"), selection.full_runs(), prices), time_axis=False)
    return selection.cached(key, lambda: full[
        full["algorithm"].isin(selection.algorithms) & full["workload"].isin(
            selection.workloads)].reset_index(drop=True))


def price_frame(selection: Selection, prices: costs.PriceTable) -> pd.DataFrame:
    """The editable price table: one row per hardware key of the shown runs."""
    return prices.to_frame(sorted({costs.hardware_key(h) for h in
                                   selection.present("hardware", nulls=True)}))


def missing_prices_note(selection: Selection, prices: costs.PriceTable) -> str:
    """Markdown naming each shown hardware key without a price ("" when all are priced)."""
    missing = prices.missing(selection.present("hardware", nulls=True))
    if not missing:
        return ""
    names = ", ".join(md(k) for k in missing)
    return (f"**No price for {names}:** the costs of these runs show *{NOT_PRICED}*. Type the "
            "on-demand USD per hour of that machine into the price table's *USD per hour* "
            "column (its row is already there); the costs recompute at once.")


def cost_frame(selection: Selection, prices: costs.PriceTable,
               workload: str | None = None) -> pd.DataFrame:
    """One formatted row per shown (algorithm, workload) with runs (only `workload`'s when
    given), workloads in leaderboard order, algorithms by median cost to target (cheapest
    first)."""
    if not selection.n_runs:
        return pd.DataFrame(columns=list(COST_TITLES))
    table = cost_table(selection, prices)
    if workload is not None:
        table = table[table["workload"] == workload]
    order = {w: i for i, w in enumerate(_shown_workloads(selection))}
    table = table[table["workload"].isin(order)].assign(
        _w=table["workload"].map(order),
        _c=table["cost_to_target"].fillna(np.inf).where(~table["unpriced"], np.inf))
    table = table.sort_values(["_w", "_c", "algorithm"], kind="stable")
    unit = unit_for(table["time_to_target"])
    return pd.DataFrame({
        "algorithm": table["algorithm"], "workload": table["workload"],
        "hardware": table["hardware"],
        "usd_per_hour": table["usd_per_hour"].map(lambda p: NOT_PRICED if math.isnan(p)
                                                  else f"${p:,.4g}"),
        "time_to_target": table["time_to_target"].map(lambda t: duration(t, unit)),
        "cost_to_target": [cost_text(c, t, h, prices) for c, t, h in zip(
            table["cost_to_target"], table["time_to_target"], table["hardware"])],
        "studies_reached": [f"{r}/{n}" for r, n in zip(table["studies_reached"],
                                                       table["studies"])],
        "inference_ms": table["inference_seconds"].map(_milliseconds),
        "inference_usd_per_10k": [usd(c) if n else NOT_MEASURED for c, n in
                                  zip(table["inference_usd_per_10k"], table["inference_runs"])],
        "energy": table["energy_joules"].map(energy_text),
    }).reset_index(drop=True)


def cost_pivot(selection: Selection, prices: costs.PriceTable,
               workloads: list[str] | None = None) -> pd.DataFrame:
    """Median cost to target (formatted) per algorithm (rows, leaderboard order) and workload
    (columns: `workloads`, default every shown one in leaderboard order); NO_RUNS where an
    algorithm has no runs."""
    if not selection.n_runs:
        return pd.DataFrame(columns=["algorithm"])
    table = cost_table(selection, prices)
    texts = [cost_text(c, t, h, prices) for c, t, h in zip(
        table["cost_to_target"], table["time_to_target"], table["hardware"])]
    pivot = table.assign(text=texts).pivot(
        index="algorithm", columns="workload", values="text")
    workloads = _shown_workloads(selection) if workloads is None else workloads
    # the leaderboard order (Selection.scores: its rows are score_frame's, in order)
    order = [a for a in selection.scores()["algorithm"] if a in pivot.index]
    order += sorted(a for a in pivot.index if a not in order)
    pivot = pivot.reindex(index=order, columns=workloads).fillna(NO_RUNS)
    return pivot.rename_axis(index="algorithm", columns=None).reset_index()


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
        return query.evals_frame(selection.store, ids)
    return selection.full_value(f"costs:evals:{workload}", make, time_axis=False)


def eval_share(selection: Selection) -> pd.DataFrame:
    """costs.eval_share of every finished run of the scope (Selection.full_runs), cut to the
    shown algorithms and workloads; read once per scope (query.eval_clock)."""
    def make() -> pd.DataFrame:
        runs = selection.full_runs()
        if selection.store is None or not len(runs):
            return costs.eval_share(runs.iloc[:0], pd.DataFrame(
                columns=["run_id", "eval_seconds", "wall_seconds"]))
        return costs.eval_share(runs, query.eval_clock(selection.store,
                                                       runs["run_id"].tolist()))
    full = selection.full_value("costs:eval_share", make, time_axis=False)
    return full[full["algorithm"].isin(selection.algorithms)
                & full["workload"].isin(selection.workloads)]


def eval_share_frame(selection: Selection, workloads: list[str]) -> pd.DataFrame:
    """eval_share as text, algorithm (rows, score order) x `workloads`: '41.3 %', NO_RUNS
    where there is no run with an eval row."""
    share = eval_share(selection)
    table = share.pivot(index="algorithm", columns="workload", values="share") \
        if len(share) else pd.DataFrame()
    order = [a for a in selection.colors if a in set(share["algorithm"])]
    table = table.reindex(index=order, columns=workloads)
    text = table.apply(lambda column: column.map(
        lambda v: NO_RUNS if pd.isna(v) else f"{100 * v:.1f} %"))
    return text.rename_axis(index="algorithm", columns=None).reset_index()


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
    points = _shown(selection.full_value(f"costs:points:{workload}:{_prices_key(prices)}",
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
    key = f"costs:curves:{workload}:{_prices_key(prices)}"
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
    for workload in _shown_workloads(selection):
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


class Costs(View):
    """The price table, the median cost to target of every shown workload and, for the workload
    picked here, its costs and inference table and its Pareto, quality-for-the-money and
    speedup-at-quality plots. Draws only while shown (workbench.views.base.View)."""

    WATCHES = FILTERS + ("reference",)
    workload = param.Selector(default=None, objects=[], allow_None=True,
                              doc="Workload of the table and plots of one workload.")
    show_eval_share = param.Boolean(default=False, doc=(
        "Show the eval share of wall clock per algorithm and workload (eval_share_frame: it "
        "reads the last eval row of every shown run)."))

    def __init__(self, **params) -> None:
        super().__init__(**params)
        self._edited: dict[str, costs.Price] = {}  # prices typed into the table, kept on refresh
        self._applying = False  # True while the view itself writes the price table
        self._prices = pn.widgets.Tabulator(
            show_index=False, layout="fit_data_stretch", sizing_mode="stretch_width",
            titles=PRICE_TITLES, css_classes=["pb-prices"], stylesheets=[TABLE_CSS],
            editors={"hardware": None, "source": None,
                     "usd_per_hour": {"type": "number", "min": 0, "step": 0.01}},
            formatters={"source": {"type": "textarea"}}, widths={"source": "50%"})
        self._prices.param.watch(self._prices_edited, "value")
        self._notice = pn.pane.Alert(alert_type="warning", sizing_mode="stretch_width",
                                     visible=False, css_classes=["pb-missing-prices"])
        self._overview = pn.Column(sizing_mode="stretch_width")
        self._overview_tables: dict[str, tuple] = {}  # group -> (title, table), made once
        # made now, not at the first draw: a table first rendered after the page lost
        # TABLE_CSS's header style to the page's theme
        for group in GROUP_TITLES:
            self._overview_table(group)
        self._cost_table = pn.widgets.Tabulator(  # the picked workload's table
            disabled=True, show_index=False, layout="fit_columns", sortable=False,
            widths={"algorithm": 190, "hardware": 200},
            sizing_mode="stretch_width", titles=COST_TITLES, css_classes=["pb-costs"],
            stylesheets=[TABLE_CSS], text_align={c: "right" for c in COST_TITLES
                                                 if c not in ("algorithm", "hardware")})
        self._detail = pn.Column(sizing_mode="stretch_width")
        # the plots are made once and redrawn in place (workbench.views.live)
        self._live = {css: {log: LivePlot(xlabel="", ylabel="", height=380, x_log=log, **opts)
                            for log in ((False,) if opts.get("y_log") else (False, True))}
                      for css, (_, _, opts) in PLOTS.items()}
        self._notes = {css: pn.pane.Markdown(visible=False) for css in PLOTS}
        self._slots = {css: pn.Column(*(p.pane for p in self._live[css].values()),
                                      self._notes[css], sizing_mode="stretch_width",
                                      css_classes=[css]) for css in PLOTS}
        self._plots = pn.Column(*self._slots.values(), sizing_mode="stretch_width")
        self._drawn: dict[str, tuple] = {}  # part -> the state it was last drawn for
        self._share_toggle = pn.widgets.Toggle.from_param(
            self.param.show_eval_share, name="Show the eval share of wall clock",
            color="light", css_classes=["pb-eval-share-toggle"], width=320)
        self._share = pn.widgets.Tabulator(
            disabled=True, show_index=False, layout="fit_columns", sortable=False,
            sizing_mode="stretch_width", css_classes=["pb-eval-share"], stylesheets=[TABLE_CSS],
            widths={"algorithm": 190}, visible=False)
        self.param.watch(lambda _: self._draw_eval_share(), "show_eval_share")
        self.param.watch(lambda _: self._draw_workload(), "workload")
        self._first_draw()

    # -- prices ------------------------------------------------------------------------------
    @property
    def prices(self) -> costs.PriceTable:
        """The prices in use: the defaults of the shown hardware, with the edits over them."""
        defaults = costs.PriceTable.defaults(self.selection.present("hardware", nulls=True))
        return costs.PriceTable({**defaults.prices, **self._edited})

    def _show_prices(self) -> None:
        prices = self.prices
        frame = price_frame(self.selection, prices)
        # unchanged by most filter changes (it lists the shown hardware): a table set anew is
        # sent and rendered again by the browser (Tabulator), the most of a change's time there
        if self._prices.value is None or not frame.equals(self._prices.value):
            self._applying = True
            try:
                self._prices.value = frame
            finally:
                self._applying = False
        note = missing_prices_note(self.selection, prices)
        self._notice.param.update(object=note, visible=bool(note))

    def _prices_edited(self, event: param.parameterized.Event) -> None:
        """Prices typed into the table: keep them (source: edited) and recompute the view; an
        emptied price falls back to the default, an invalid one is refused with a notice."""
        if self._applying:
            return
        shown, refused, changed = self.prices, [], False
        for row in event.new.to_dict("records"):
            key, value = row["hardware"], row["usd_per_hour"]
            old = shown.usd_per_hour(key)
            if value is None or pd.isna(value):
                changed |= self._edited.pop(key, None) is not None
            elif math.isnan(old) or float(value) != old:
                try:
                    self._edited[key] = costs.Price(float(value), EDITED)
                    changed = True
                except (TypeError, ValueError) as exc:
                    refused.append(f"**Price of {md(key)} not used:** {md(exc)}")
        if not (changed or refused):
            return  # the browser echoed the table back unchanged: nothing to recompute
        self._show_prices()
        if refused:
            self._notice.param.update(object="\n\n".join(refused), visible=True)
        self._draw_costs()

    # -- drawing -----------------------------------------------------------------------------
    def _update(self) -> None:
        """The selection changed: prices of the shown hardware, workload choices, everything."""
        shown = _shown_workloads(self.selection)
        self.param.workload.objects = shown
        self._show_prices()
        before = self.workload
        if self.workload not in shown:
            self.workload = shown[0] if shown else None  # a new workload draws its own part
        if self.workload == before:
            self._draw_workload()
        self._draw_overview()
        self._draw_eval_share()

    def _draw_costs(self) -> None:
        self._draw_overview()
        self._draw_workload()

    def _draw_eval_share(self) -> None:
        """The eval share table (eval_share_frame), while show_eval_share is on."""
        shown = self.show_eval_share and self.selection.n_runs > 0
        if shown:
            workloads = _shown_workloads(self.selection)
            self._share.param.update(
                value=eval_share_frame(self.selection, workloads),
                titles={"algorithm": "Algorithm", **{w: wrap_title(w) for w in workloads}},
                text_align={w: "right" for w in workloads})
        self._share.visible = shown

    def _state(self, *extra) -> tuple:
        """What a part drawn from the selection depends on: data, filters, prices and `extra`."""
        filters = (getattr(self.selection, f) for f in FILTERS)
        return (*(tuple(v) if isinstance(v, list) else v for v in filters),
                _prices_key(self.prices), *extra)

    def _redraw(self, part: str, state: tuple) -> bool:
        """Whether `part` needs drawing for `state` (remembered as drawn): one filter change
        can notify twice (algorithms, then the reference they imply); only changed parts redraw."""
        if self._drawn.get(part) == state:
            return False
        self._drawn[part] = state
        return True

    def _draw_overview(self) -> None:
        """Median cost to target, algorithm x workload (cost_pivot), one table per group of
        workloads as on the leaderboard (scored, held out, other)."""
        if not self._redraw("overview", self._state()):
            return
        groups = self.selection.workload_groups() if self.selection.n_runs else {}
        parts, prices = [], self.prices
        for name, workloads in groups.items():
            workloads = [w for w in workloads if w in self.selection.workloads]
            if not workloads:
                continue
            title, table = self._overview_table(name)  # kept: only its values change
            table.param.update(
                value=cost_pivot(self.selection, prices, workloads),
                titles={"algorithm": "Algorithm", **{w: wrap_title(w) for w in workloads}},
                text_align={w: "right" for w in workloads})
            parts += [title, table]
        if not parts:
            parts = [pn.pane.Markdown("No runs with the current selection.")]
        if [id(p) for p in parts] != [id(p) for p in self._overview.objects]:
            self._overview.objects = parts  # a layout set anew rebuilds its page models

    def _overview_table(self, group: str) -> tuple[pn.pane.Markdown, pn.widgets.Tabulator]:
        """The title and table of one group of workloads in the overview (made once)."""
        if group not in self._overview_tables:
            self._overview_tables[group] = (
                pn.pane.Markdown(f"**{GROUP_TITLES[group]}**"), pn.widgets.Tabulator(
                    disabled=True, show_index=False, layout="fit_columns", sortable=False,
                    sizing_mode="stretch_width", css_classes=[f"pb-cost-overview-{group}"],
                    stylesheets=[TABLE_CSS], widths={"algorithm": 190}))
        return self._overview_tables[group]

    def _draw_workload(self) -> None:
        """The picked workload's cost table (cost_frame) and plots."""
        if not self.shown:
            self._mark_stale()
            return
        workload, prices = self.workload, self.prices
        if workload is None:
            self._drawn.clear()
            self._detail.objects = [pn.pane.Markdown("No runs with the current selection.")]
            for css in PLOTS:
                self._show_plot(css, None)
            return
        if self._redraw("detail", self._state(workload)):
            self._cost_table.value = cost_frame(self.selection, prices,
                                                workload).drop(columns="workload")
            if self._detail.objects != [self._cost_table]:
                self._detail.objects = [self._cost_table]
        for css, (data_of, _, _) in PLOTS.items():
            extra = (self.selection.reference,) if css == "pb-speedup-quality" else ()
            if self._redraw(css, self._state(workload, *extra)):
                self._show_plot(css, data_of(self.selection, workload, prices))

    def _show_plot(self, css: str, data: dict | None) -> None:
        """Draw plot `css` from `data` in place, or say why there is none (data None)."""
        log = bool(data and data.get("log"))
        for key, plot in self._live[css].items():
            if data is not None and key == log:
                PLOTS[css][1](plot, data, self.selection.colors)
            elif data is not None:
                plot.make()  # the other scale too, now: a change of scale then costs no models
            plot.pane.visible = data is not None and key == log
        missing = data is None and self.workload is not None
        self._notes[css].param.update(object=self._nothing(css) if missing else "",
                                      visible=missing)

    def _nothing(self, css: str) -> str:
        if css == "pb-speedup-quality":
            return (f"*{md(self.workload)}: no speedup-at-quality curve: it needs priced curves "
                    f"of the reference algorithm ({md(self.selection.reference)}) and of another "
                    "algorithm.*")
        return (f"*{md(self.workload)}: nothing to draw: no run has both a priced cost and a "
                "quality.*")

    def __panel__(self) -> pn.viewable.Viewable:
        return pn.Column(
            pn.pane.Markdown(
                "### Cost vs accuracy\nCost = training hours (the training clock, evals off it, "
                "as DAWNBench counted) x the hourly price of the run's hardware. **Prices** are "
                "on-demand USD per hour by hardware; edit a price and every cost below "
                "recomputes."),
            self._prices, self._notice,
            pn.pane.Markdown(
                "#### Median cost to target\nPer study the trial the leaderboard's rule chose "
                "(first to meet the validation target), its training time x its price; the "
                f"median over studies (*{MISS}*: the median study missed; *{NOT_PRICED}*: its "
                "hardware has no price above). On a CPU whose price is the default example "
                "rate, in *core-s* (training seconds x cores); type a price above for dollars. "
                "Three significant digits."),
            self._overview,
            pn.pane.Markdown(
                "#### Eval share of wall clock\nThe training clock pauses while a run "
                "evaluates, so no score counts that time: per algorithm and workload, the eval "
                "seconds over the wall seconds of its shown finished runs, each run's read at "
                "its last eval row (accumulated values) and summed over the runs before "
                "dividing (*pacebench score --json*'s *eval_share*). Off until asked: it reads "
                "every shown run's eval rows."),
            *([self._share_toggle] if self.live else []), self._share,
            pn.pane.Markdown(
                "#### One workload\nIts costs per algorithm, cheapest first. *Inference*: the "
                "median over runs of the batch-1 latency measured at the end of each run (median "
                "of 50 single-example forward passes, off the training clock), and what 10,000 "
                "such inferences cost at the run's price. *GPU energy*: the median over runs of "
                "a whole run's GPU energy (NVML). "
                f"*{NOT_MEASURED}*: not measured (an imported run, or no GPU). Then its curves. "
                "*Cost vs best quality*: every run at its whole cost and best validation value; "
                "black rings and steps: the Pareto front (no run is both cheaper and better). "
                "*Quality for the money*: best validation value so far against cost so far, thin "
                "grey per study (the chosen trial, or the best one of a study that missed), bold "
                "the median over studies of the cost to reach each quality. *Speedup at "
                "quality*: s(q) = the reference's median cost to reach q / the algorithm's "
                "(above 1: cheaper than the reference), where both reach q."),
            pn.widgets.Select.from_param(self.param.workload, name="Workload", width=320),
            self._detail, self._plots,
            sizing_mode="stretch_width")
