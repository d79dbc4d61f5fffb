"""The Costs view's tables (workbench/views/costs.py): dollars to the target per algorithm and
workload under an editable price table, the price table itself, the eval share of wall clock,
and the texts of a cost, an energy and a latency. Every number comes from `workbench.costs`.
"""
from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
import xarray as xr

from workbench import costs
from workbench.views.formats import MISS, NO_RUNS, duration, md, unit_for
from workbench.views.selection import Selection

__all__ = ["cost_table", "cost_frame", "cost_pivot", "price_frame", "train_time_cube",
           "missing_prices_note", "usd", "significant", "cost_text", "energy_text",
           "eval_share", "eval_share_frame", "NOT_PRICED", "NOT_MEASURED", "MAX_PARETO_POINTS",
           "QUALITY_POINTS", "EDITED", "COST_TITLES", "PRICE_TITLES", "prices_key",
           "shown_workloads"]


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


def shown_workloads(selection: Selection) -> list[str]:
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


def prices_key(prices: costs.PriceTable) -> str:
    """A cache-key text of the prices (hardware key and USD per hour of each)."""
    return repr(sorted((k, p.usd_per_hour) for k, p in prices.prices.items()))


def cost_table(selection: Selection, prices: costs.PriceTable) -> pd.DataFrame:
    """costs.cost_table of the shown runs at these prices. A row depends on its algorithm and
    workload's runs only, so the table is computed once over every algorithm and workload
    (per data, ruleset, study and hardware filter, and prices) and the shown rows are cut
    from it."""
    key = f"costs:table:{prices_key(prices)}"
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
    order = {w: i for i, w in enumerate(shown_workloads(selection))}
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
    workloads = shown_workloads(selection) if workloads is None else workloads
    # the leaderboard order (Selection.scores: its rows are score_frame's, in order)
    order = [a for a in selection.scores()["algorithm"] if a in pivot.index]
    order += sorted(a for a in pivot.index if a not in order)
    pivot = pivot.reindex(index=order, columns=workloads).fillna(NO_RUNS)
    return pivot.rename_axis(index="algorithm", columns=None).reset_index()


def eval_share(selection: Selection) -> pd.DataFrame:
    """costs.eval_share of every finished run of the scope (Selection.full_runs), cut to the
    shown algorithms and workloads; read once per scope (Results.eval_clock)."""
    def make() -> pd.DataFrame:
        runs = selection.full_runs()
        if selection.store is None or not len(runs):
            return costs.eval_share(runs.iloc[:0], pd.DataFrame(
                columns=["run_id", "eval_seconds", "wall_seconds"]))
        return costs.eval_share(runs, selection.results.eval_clock(
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
