"""Variant robustness: for each algorithm, each variant workload beside its base (reached or not,
time ratio variant / base), a robustness score (share of variants reached, median slowdown), and
the benchmark score with and without AlgoPerf's held-out variant rule.

The numbers come from `workbench.robustness` (which calls `workbench.scoring`); this view picks,
orders and formats them. The held-out toggle is local: it chooses which of the two scores the
robustness table shows and orders by; the leaderboard keeps the store's own rules.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import panel as pn
import param
from bokeh.models.widgets.tables import NumberFormatter
from bokeh.palettes import RdBu, interp_palette

from workbench import robustness
from workbench.views.base import View
from workbench.views.formats import MISS, NO_RUNS, duration, group_header, md, percent, unit_for
from workbench.views.leaderboard import TABLE_CSS
from workbench.views.live import LiveHeatMap
from workbench.views.selection import Selection
from workbench.views.plotting import hv


__all__ = ["Robustness", "figures", "pair_frame", "summary_frame", "scores_frame",
           "ratio_data", "ratio_plot", "scores_plot", "RULE_LABELS"]

RULE_LABELS = {False: "without the held-out rule", True: "with the held-out rule"}
BASE_MISS = "base missed"  # no ratio: the base workload's target was not reached
RATIO_RANGE = (0.25, 4.0)  # colour range of the ratio heat map (log scale, 1 in the middle)


def _time_text(value: float, units: str, unit: str | None = None) -> str:
    """A time in the cube's units: '5,043 s' / '1.40 h' for seconds, '1,200 steps' otherwise."""
    if units == "s" or math.isnan(value) or math.isinf(value):
        return duration(value, unit)
    return f"{value:,.0f} {units}"


def _ratio_text(ratio: float, base_reached: bool, variant_time: float) -> str:
    if math.isnan(variant_time):
        return NO_RUNS
    if not base_reached:
        return BASE_MISS
    return MISS if math.isinf(ratio) else f"{ratio:.2f}x"


def _cell_text(ratio: float, base_reached: bool, variant_time: float) -> str:
    """Short text of a heat-map cell: '1.48x', 'miss', 'base miss', or blank for no runs."""
    if math.isnan(variant_time):
        return ""
    return "base miss" if not base_reached else _ratio_text(ratio, base_reached, variant_time)


def _units(selection: Selection) -> str:
    return selection.cube["time_to_target"].attrs.get("units", "s")


def _shown_pairs(selection: Selection) -> pd.DataFrame:
    """variant_table rows of the shown variants (hidden held-out variants still feed the score)."""
    def make() -> pd.DataFrame:
        if not selection.n_runs:
            return pd.DataFrame(columns=list(robustness.VARIANT_COLUMNS))
        table = robustness.variant_table(selection.cube, selection.workload_times())
        return table[table["workload"].isin(selection.workloads)].reset_index(drop=True)
    return selection.cached("robustness_pairs", make)


def scores_frame(selection: Selection) -> tuple[pd.DataFrame, dict[str, str]]:
    """`robustness.held_out_scores` under the selection's scoring rules (the shown scored
    workloads), and the held-out pairs; empty when no scored workload is shown."""
    def make() -> tuple[pd.DataFrame, dict[str, str]]:
        if not selection.n_runs or not selection.workload_groups()["scored"]:
            return pd.DataFrame(columns=list(robustness.HELD_OUT_COLUMNS)), {}
        return robustness.held_out_scores(selection.cube, selection.scoring_config,
                                          selection.workload_times())
    return selection.cached("held_out_scores", make)


def summary_frame(selection: Selection, held_out: bool) -> pd.DataFrame:
    """Per algorithm: its score (with the held-out rule if `held_out`, else without) beside the
    robustness score of `robustness.robustness_scores`; best score first."""
    columns = ["algorithm", "score", *robustness.ROBUSTNESS_COLUMNS[1:]]
    pairs = _shown_pairs(selection)
    scores, held = scores_frame(selection)
    if not len(pairs) and not len(scores):
        return pd.DataFrame(columns=columns)
    required = [w for w in pairs["workload"].unique() if w in held] if len(pairs) else []
    robust = robustness.robustness_scores(pairs, required) if len(pairs) else \
        pd.DataFrame(columns=list(robustness.ROBUSTNESS_COLUMNS))
    column = "score_with" if held_out else "score_without"
    score = scores[["algorithm", column]].rename(columns={column: "score"})
    frame = score.merge(robust, on="algorithm", how="outer")
    frame = frame.sort_values(["score", "reached_share", "algorithm"],
                              ascending=[False, False, True], na_position="last", kind="stable")
    return frame[columns].reset_index(drop=True)


def pair_frame(selection: Selection, order: list[str]) -> pd.DataFrame:
    """The shown base/variant pairs as text, algorithms in `order`: algorithm, variant, base,
    held_out ("yes"/"no"), base time, variant time, ratio ('2.00x', MISS, BASE_MISS, NO_RUNS).
    A variant the algorithm has no runs on is left out unless it is held out (then a miss)."""
    columns = ["algorithm", "variant", "base", "held_out", "base_time", "variant_time", "ratio"]
    pairs = _shown_pairs(selection)
    if not len(pairs):
        return pd.DataFrame(columns=columns)
    _, held = scores_frame(selection)
    pairs = pairs[pairs["variant_time"].notna() | pairs["workload"].isin(held)]
    units = _units(selection)
    both = pd.concat([pairs["base_time"], pairs["variant_time"]])
    unit = unit_for(both) if units == "s" else None  # one unit for the whole table
    rank = {a: i for i, a in enumerate(order)}
    pairs = pairs.assign(_a=pairs["algorithm"].map(lambda a: rank.get(a, len(rank))))
    pairs = pairs.sort_values(["_a", "algorithm", "base_workload", "workload"], kind="stable")
    return pd.DataFrame({
        "algorithm": pairs["algorithm"], "variant": pairs["workload"],
        "base": pairs["base_workload"],
        "held_out": ["yes" if w in held else "no" for w in pairs["workload"]],
        "base_time": [_time_text(v, units, unit) for v in pairs["base_time"]],
        "variant_time": [_time_text(v, units, unit) for v in pairs["variant_time"]],
        "ratio": [_ratio_text(r, b, v) for r, b, v in
                  zip(pairs["ratio"], pairs["base_reached"], pairs["variant_time"])],
    }, columns=columns).reset_index(drop=True)


def ratio_data(selection: Selection, order: list[str] | None = None) -> dict | None:
    """The cells of the heat map of variant / base time ratios (algorithm x variant): "cells"
    (column, row: integer positions; ratio, NaN where there is no finite ratio; text: why
    there is none, blank for no runs; ink: white on the dark ends of the colours), "rows"
    (algorithms in `order`, the best at the top) and "columns" (variants of a base side by
    side); None when no variant is shown with its base."""
    pairs = _shown_pairs(selection)
    if not len(pairs):
        return None
    order = order or sorted(pairs["algorithm"].unique())
    rows = [a for a in reversed(order) if a in set(pairs["algorithm"])]  # best at the top
    base_of = dict(zip(pairs["workload"], pairs["base_workload"]))
    columns = sorted(base_of, key=lambda w: (base_of[w], w))  # variants of a base side by side
    ratio = pairs["ratio"].to_numpy(float)
    cells = pd.DataFrame({
        "column": pairs["workload"].map(columns.index).to_numpy(int),
        "row": pairs["algorithm"].map(rows.index).to_numpy(int),
        # colour only where there is a finite ratio; the text says why elsewhere
        "ratio": np.where(np.isfinite(ratio), ratio, np.nan),
        # object text: HoloViews cannot reshape Arrow strings into its grid
        "variant": pairs["workload"].to_numpy(), "algorithm": pairs["algorithm"].to_numpy(),
        "text": [_cell_text(r, b, v) for r, b, v in
                 zip(ratio, pairs["base_reached"], pairs["variant_time"])],
        # white text on the dark ends of the colour map, black elsewhere
        "ink": np.where(np.isfinite(ratio) & (np.abs(np.log2(ratio)) > 1.2), "white",
                        "black")})
    cells = cells.astype({c: object for c in ("variant", "algorithm", "text", "ink")})
    return {"cells": cells, "rows": rows, "columns": columns}


RATIO_TITLE = "Time ratio variant / base (median time to target)"


def ratio_plot(selection: Selection, order: list[str] | None = None) -> hv.Overlay | None:
    """ratio_data in HoloViews (paper figures, the report): a log colour scale centred on 1,
    grey where there is no ratio; None when no variant is shown with its base. Cells sit at
    integer positions named by the axis ticks, so that Matplotlib (figure export) draws the
    text labels as Bokeh does."""
    drawn = ratio_data(selection, order)
    if drawn is None:
        return None
    data, rows, columns = drawn["cells"], drawn["rows"], drawn["columns"]
    # An Image on the integer grid (row 0 at the bottom: the array's last line), not a
    # HeatMap: Matplotlib would print each cell's raw value over the text below.
    grid = np.full((len(rows), len(columns)), np.nan)
    grid[len(rows) - 1 - data["row"].to_numpy(), data["column"].to_numpy()] = data["ratio"]
    bounds = (-0.5, -0.5, len(columns) - 0.5, len(rows) - 0.5)
    heat = hv.Image(grid, kdims=["column", "row"], vdims=["ratio"], bounds=bounds).opts(
        cmap="RdBu_r", cnorm="log", clim=RATIO_RANGE, colorbar=True, tools=["hover"],
        clipping_colors={"NaN": "#dddddd"}, colorbar_opts={"title": "variant / base"})
    text = hv.Labels(data, kdims=["column", "row"], vdims=["text", "ink"]).opts(
        text_font_size="9pt", text_color="ink")
    return (heat * text).opts(
        hv.opts.Overlay(title=RATIO_TITLE, xlabel="variant workload", ylabel="",
                        responsive=True, xticks=list(enumerate(columns)),
                        yticks=list(enumerate(rows)), xrotation=35,
                        height=170 + 34 * len(rows)))  # width follows the page


def scores_plot(scores: pd.DataFrame) -> hv.Bars | None:
    """Grouped bars: each algorithm's score without and with the held-out rule."""
    if not len(scores):
        return None
    long = pd.concat([
        pd.DataFrame({"algorithm": scores["algorithm"], "rule": RULE_LABELS[flag],
                      "score": scores["score_with" if flag else "score_without"]})
        for flag in (False, True)])
    return hv.Bars(long, kdims=["algorithm", "rule"], vdims="score").opts(
        ylim=(0, 1.02), xrotation=35, responsive=True, min_height=360, tools=["hover"],
        color=hv.dim("rule").categorize({RULE_LABELS[False]: "#9ecae1",
                                         RULE_LABELS[True]: "#1f4e79"}),
        title="Benchmark score without and with the held-out rule", ylabel="score",
        xlabel="", show_grid=True)


def figures(selection: Selection) -> dict[str, hv.Element]:
    """The view's plots by name, for figure export: "variant_ratios" (heat map) and
    "held_out_scores" (grouped bars); a plot with nothing to draw is left out."""
    scores, _ = scores_frame(selection)
    out = {"variant_ratios": ratio_plot(selection, list(scores["algorithm"]) or None),
           "held_out_scores": scores_plot(scores)}
    return {name: plot for name, plot in out.items() if plot is not None}


def _rule_text(selection: Selection, held: dict[str, str]) -> str:
    if not held:
        return ("No held-out variant is shown with its scored base workload, so the rule changes "
                "nothing here.")
    config = selection.store_config
    source = (f"the {len(held)} held-out variants this store's rules name (AlgoPerf "
              f"v{config.benchmark_version})" if config is not None and config.held_out else
              f"every shown variant of a scored workload ({len(held)}); a base with several "
              "variants counts only if it passes the rule with each of them")
    pairs = ", ".join(f"{md(v)} -> {md(b)}" for v, b in held.items())
    return (f"Held out: {source}: {pairs}.")


class Robustness(View):
    """Benchmark scores with and without the held-out rule, a robustness table per algorithm
    (fed by the local toggle) and the base/variant pairs as a heat map and a table."""

    held_out = param.Boolean(default=False, doc="Score with AlgoPerf's held-out variant rule "
                             "in this view's robustness table (local; the leaderboard keeps "
                             "the store's rules).")

    def __init__(self, **params) -> None:
        config = params["selection"].store_config if "selection" in params else None
        params.setdefault("held_out", bool(config is not None and config.apply_held_out))
        super().__init__(**params)
        number = NumberFormatter(format="0.0000")
        self._scores = pn.widgets.Tabulator(
            disabled=True, show_index=False, layout="fit_data_stretch", sortable=False,
            sizing_mode="stretch_width", css_classes=["pb-held-out"], stylesheets=[TABLE_CSS],
            titles={"algorithm": "Algorithm", "score_without": "Score without the rule",
                    "score_with": "Score with the rule", "change": "Change",
                    "reached_without": "Workloads within 4x, without the rule",
                    "reached_with": "Workloads within 4x, with the rule"},
            widths={"score_without": 120, "score_with": 120, "change": 90,  # titles wrap
                    "reached_without": 150, "reached_with": 150},
            formatters={"score_without": number, "score_with": number,
                        "change": NumberFormatter(format="+0.0000")})
        self._summary = pn.widgets.Tabulator(
            disabled=True, show_index=False, layout="fit_data_stretch", sortable=False,
            sizing_mode="stretch_width", css_classes=["pb-robustness"], stylesheets=[TABLE_CSS],
            formatters={"score": number})
        self._pairs = pn.widgets.Tabulator(
            disabled=True, show_index=False, layout="fit_data_stretch", groupby=["algorithm"],
            hidden_columns=["algorithm"], sortable=False, sizing_mode="stretch_width",
            max_height=640, css_classes=["pb-variants"], stylesheets=[TABLE_CSS],
            titles={"variant": "Variant", "base": "Base workload", "held_out": "Held out",
                    "base_time": "Base time", "variant_time": "Variant time",
                    "ratio": "Variant / base"},
            text_align={"base_time": "right", "variant_time": "right", "ratio": "right"})
        self._ratios = LiveHeatMap(  # made once, redrawn in place (workbench.views.live)
            xlabel="variant workload", palette=interp_palette(RdBu[11], 256),
            low=RATIO_RANGE[0], high=RATIO_RANGE[1], colorbar_title="variant / base",
            hover=("algorithm", "variant", "variant / base"), css_classes=["pb-ratios"])
        self._rule = pn.pane.Markdown(sizing_mode="stretch_width")
        self._empty = pn.pane.Markdown(sizing_mode="stretch_width")
        # the heat map where there is one, else why not: never an empty layout (Bokeh warns
        # of one, W-1002, in every report of a store without variants)
        self._heat = pn.Column(self._empty, sizing_mode="stretch_width")
        self.param.watch(lambda _: self._selection_changed(), "held_out")
        self._first_draw()

    def _update(self) -> None:
        scores, held = scores_frame(self.selection)
        self._scores.value = scores[["algorithm", "score_without", "score_with",
                                     "reached_without", "reached_with"]].assign(
            change=scores["score_with"] - scores["score_without"]) if len(scores) else scores
        self._scores.visible = len(scores) > 0
        self._rule.object = _rule_text(self.selection, held) if len(scores) else \
            "No scored workload is shown, so there is no benchmark score to compare."
        summary = summary_frame(self.selection, self.held_out)
        self._summary.param.update(value=self._summary_text(summary),
                                   titles=self._summary_titles())
        self._summary.visible = len(summary) > 0
        order = list(summary["algorithm"])
        pairs = pair_frame(self.selection, order)
        self._pairs.value = pairs.assign(algorithm=group_header(pairs["algorithm"])) \
            if "algorithm" in pairs else pairs
        self._pairs.visible = len(pairs) > 0
        drawn = ratio_data(self.selection, order)
        if drawn is not None:
            cells = drawn["cells"]
            self._ratios.draw({**{c: cells[c] for c in ("column", "row", "text", "ink")},
                               "value": cells["ratio"]}, drawn["rows"], drawn["columns"],
                              RATIO_TITLE)
        shown = self._empty if drawn is None else self._ratios.pane
        if self._heat.objects != [shown]:  # a layout set anew rebuilds its page models
            self._heat.objects = [shown]
        self._empty.object = "" if len(pairs) else (
            "No variant workload is shown together with its base workload: show a base and "
            "its variants (e.g. digits_mlp with digits_mlp_tanh)"
            + (" in the sidebar." if self.live else "."))

    def _summary_titles(self) -> dict[str, str]:
        return {"algorithm": "Algorithm", "score": f"Score {RULE_LABELS[self.held_out]}",
                "reached": "Variants reached", "reached_share": "Share reached",
                "median_slowdown": "Median slowdown (variant / base)"}

    @staticmethod
    def _summary_text(summary: pd.DataFrame) -> pd.DataFrame:
        """Counts and shares as text: '5/6', '83.3 %', '1.21x (n=4)'."""
        if not len(summary):
            return pd.DataFrame(columns=["algorithm", "score", "reached", "reached_share",
                                         "median_slowdown"])
        slow = [f"{m:.2f}x (n={int(n)})" if np.isfinite(m) else "n/a (n=0)"
                for m, n in zip(summary["median_slowdown"].astype(float),
                                summary["slowdowns"].fillna(0))]
        reached = [f"{int(r)}/{int(n)}" if pd.notna(n) else NO_RUNS
                   for r, n in zip(summary["variants_reached"], summary["variants"])]
        return pd.DataFrame({
            "algorithm": summary["algorithm"], "score": summary["score"].astype(float),
            "reached": reached,
            "reached_share": [percent(s, signed=False) for s in
                              summary["reached_share"].astype(float)],
            "median_slowdown": slow})

    def __panel__(self) -> pn.viewable.Viewable:
        toggle = pn.widgets.Checkbox.from_param(
            self.param.held_out, css_classes=["pb-held-out-toggle"],
            name="Held-out rule in the robustness table's score (this view only; the "
                 "leaderboard keeps the store's rules)")
        return pn.Column(
            pn.pane.Markdown(
                "### Variant robustness\nA variant changes its base workload (activation, "
                "normalisation, size, initialisation) and restates its target. AlgoPerf v0.5's "
                "*held-out rule*: a base workload's time counts only if the algorithm also "
                "reaches its held-out variant's target within 4x of the fastest on that variant "
                "(fastest among those that reached the base); otherwise the base counts as a "
                "miss. Both scores below use the shown scored workloads and the 4x cut-off; "
                "*workloads within 4x*: the scored workloads where the algorithm's median "
                "study reached the target in at most 4x the fastest time, after the rules."),
            self._rule, self._scores, toggle,
            pn.pane.Markdown(
                "#### Robustness per algorithm\n*Variants reached*: of the variants the "
                "algorithm ran, and the held-out ones (a held-out variant without runs is a "
                "miss), those whose median study met the target. *Median slowdown*: median of "
                "time on the variant / time on the base, over the n variants where both were "
                "reached (below 1: the variant was faster). In the heat map a grey cell has no "
                "ratio: *miss* (variant missed), *base miss*, or blank (no runs)."),
            self._summary, self._heat,
            pn.pane.Markdown(
                f"#### Base and variant, per algorithm\nMedian time to target over studies "
                f"(the chosen trial per study, as on the leaderboard). *{MISS}*: the variant's "
                f"target was not reached; *{BASE_MISS}*: no ratio, the base's target was not "
                f"reached; *{NO_RUNS}*: the algorithm has no runs on this held-out variant (a "
                f"variant it did not run and that is not held out is left out)."),
            self._pairs, sizing_mode="stretch_width")
