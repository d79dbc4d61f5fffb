"""Ladder: a model-size ladder's final validation loss against training tokens per rung
(log-log, the reference's fitted L(D) = a D^-b + c dashed), the tokens the reference would
need against the tokens used per rung (D_eff against D, log-log, with the diagonal and 1.2x /
1.4x guides), each candidate's equal-loss speedup against model size with its interval and
seed counts, and one verdict sentence per candidate. Imported runs say where they came from.

The numbers are workbench.ladder.ladder_analysis's, over the same runs and draws as
`pacebench ladder --summary` (Results.ladder_finals; DRAWS, seed 0), computed once per read of
the store. The sidebar's workload and algorithm choices pick the rungs and candidates shown.
A store without ladder runs shows a line saying so.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import panel as pn

from workbench.results import LADDER_INTERVAL_LEVEL, Results
from workbench.views.base import View
from workbench.views.formats import md
from workbench.views.plotting import hv
from workbench.views.selection import Selection

__all__ = ["Ladder", "NONE", "NO_SPEEDUP", "ladder_of", "loss_plot", "deff_plot", "deff_rows",
           "speedup_plot", "speedup_rows", "figures", "GUIDES"]

GUIDES = (1.0, 1.2, 1.4)  # speedups drawn as lines D_eff = k D on the D_eff-against-D plot

NONE = ("No model-size ladder here: this tab shows the runs of `pacebench ladder --sizes ... "
        "--algorithms ...` (their final validation loss per data budget and model size).")


NO_SPEEDUP = ("No equal-loss speedup to draw here: the warnings under each rung say why "
              "(e.g. a reference with fewer than 3 budgets has no fit).")


def ladder_of(selection: Selection) -> dict | None:
    """ladder_analysis of the store's final ladder runs (None without any), once per read."""
    def make():
        if selection.results is None:
            return None
        finals = selection.results.ladder_finals(runs=selection._runs, warn=False)
        return None if finals.empty else Results.ladder_analysis(finals)
    return selection.cached("ladder", make, "read")


def _shown(selection: Selection, result: dict) -> tuple[list[dict], list[str]]:
    """(the rungs of the shown workloads, the shown candidates): every one when the sidebar
    picks none of them. A rung whose name is no workload the sidebar lists (an imported
    table's label that is not a plain name) is always shown."""
    listed = set(selection.param.workloads.objects)
    rungs = [r for r in result["rungs"] if r["name"] in selection.workloads
             or r["name"] not in listed] or result["rungs"]
    names = sorted({a for r in result["rungs"] for a in r["speedups"]})
    return rungs, [a for a in names if a in selection.algorithms] or names


def loss_plot(rung: dict, reference: str, algorithms: list[str], colors: dict) -> hv.Overlay:
    """One rung: mean final validation loss (bars: ± sd over seeds) against tokens, log-log,
    per algorithm, and the reference's fit dashed."""
    parts = []
    for name in [reference] + algorithms:
        rows = pd.DataFrame(rung["losses"].get(name, []))
        if rows.empty:
            continue
        rows = rows.assign(algorithm=name, low=rows["mean"] - rows["sd"].fillna(0),
                           high=rows["mean"] + rows["sd"].fillna(0))
        color = colors.get(name, "gray")
        parts.append(hv.Segments(rows, ["tokens", "low", "tokens", "high"]).opts(color=color))
        parts.append(hv.Scatter(rows, "tokens", ["mean", "sd", "seeds", "budget", "algorithm"],
                                label=str(name)).opts(color=color, size=8, tools=["hover"]))
    fit = rung["fit"]
    if fit is not None and rung["losses"].get(reference):
        tokens = [row["tokens"] for row in rung["losses"][reference]]
        grid = np.geomspace(min(tokens) / 2, max(tokens) * 2, 80)
        curve = fit["a"] * grid ** -fit["b"] + fit["c"]
        parts.append(hv.Curve((grid, curve), "tokens", "mean",
                              label=f"{reference} fit: {fit['a']:.3g} D^-{fit['b']:.3f} + "
                                    f"{fit['c']:.3f}").opts(color=colors.get(reference, "gray"),
                                                            line_dash="dashed"))
    title = f"{rung['name']}: {rung['non_embedding_params']:,} non-embedding parameters"
    ticks = sorted({row["tokens"] for rows in rung["losses"].values() for row in rows})
    return hv.Overlay(parts).opts(hv.opts.Overlay(
        responsive=True, min_height=300, logx=True, logy=True, show_grid=True, title=title,
        xticks=[(t, _size_label(t)) for t in ticks] or None,  # (none: Bokeh's own)
        xlabel="training tokens D", ylabel="final validation loss (nats/token)",
        legend_position="right"))


def deff_rows(rung: dict, algorithms: list[str]) -> pd.DataFrame:
    """One row per (candidate, budget) with a finite speedup at `rung`: tokens D, the tokens
    the reference would need D_eff = speedup x D, the speedup, extrapolated."""
    rows = []
    for name in algorithms:
        s = rung["speedups"].get(name)
        for p in (s or {}).get("per_budget", []):
            if p["value"] is None or p["tokens"] is None:
                continue
            rows.append({"algorithm": name, "tokens": p["tokens"],
                         "d_eff": p["value"] * p["tokens"], "speedup": p["value"],
                         "budget": Results.ladder_budget_text(p["budget"]),
                         "extrapolated": p["extrapolated"]})
    return pd.DataFrame(rows, columns=["algorithm", "tokens", "d_eff", "speedup", "budget",
                                       "extrapolated"])


def deff_plot(rung: dict, reference: str, algorithms: list[str], colors: dict) -> hv.Overlay:
    """One rung: D_eff (the tokens the reference would need to reach a candidate's loss)
    against D (the tokens the candidate used), log-log, per candidate; the diagonal is the
    reference (1x), dashed and dotted lines 1.2x and 1.4x."""
    rows = deff_rows(rung, algorithms)
    tokens = rows["tokens"].tolist() or [r["tokens"] for r in rung["losses"].get(reference, [])]
    low, high = (min(tokens) / 1.5, max(tokens) * 1.5) if tokens else (1.0, 10.0)
    grid = np.geomspace(low, high, 2)
    parts = [hv.Curve((grid, k * grid), "tokens", "d_eff", label=f"{k:g}x").opts(
        color="gray", line_dash=dash, alpha=0.7)
        for k, dash in zip(GUIDES, ("solid", "dashed", "dotted"))]
    for name, part in rows.groupby("algorithm", sort=True):
        color = colors.get(name, "gray")
        parts.append(hv.Curve(part, "tokens", "d_eff").opts(color=color, alpha=0.4))
        parts.append(hv.Scatter(part, "tokens", ["d_eff", "speedup", "budget", "extrapolated",
                                                 "algorithm"], label=str(name)).opts(
            color=color, size=8, tools=["hover"]))
    return hv.Overlay(parts).opts(hv.opts.Overlay(
        responsive=True, min_height=300, logx=True, logy=True, show_grid=True,
        xticks=[(t, _size_label(t)) for t in sorted(set(tokens))],
        yticks=[(t, _size_label(t)) for t in sorted(set(tokens))],
        title=f"{rung['name']}: tokens {reference} would need (D_eff) against tokens used (D)",
        xlabel="training tokens D", ylabel=f"D_eff: {reference}'s tokens to the same loss",
        legend_position="right"))


def speedup_rows(result: dict, rungs: list[dict], algorithms: list[str]) -> pd.DataFrame:
    """One row per (rung, candidate) with a finite speedup: params, speedup, its interval
    (NaN ends: none), time ratio, seeds of each side, extrapolated."""
    rows = []
    for rung in rungs:
        for name in algorithms:
            s = rung["speedups"].get(name)
            if s is None or s["value"] is None:
                continue
            low, high = s["interval"] or (None, None)
            rows.append({"rung": rung["name"], "params": rung["non_embedding_params"],
                         "algorithm": name, "speedup": s["value"],
                         "low": math.nan if low is None else low,
                         "high": math.inf if s["interval"] and high is None else
                         (math.nan if high is None else high),
                         "time_ratio": s["time_ratio"], "seeds": s["seeds"],
                         "reference_seeds": s["reference_seeds"],
                         "extrapolated": s["extrapolated"]})
    return pd.DataFrame(rows, columns=["rung", "params", "algorithm", "speedup", "low", "high",
                                       "time_ratio", "seeds", "reference_seeds", "extrapolated"])


def speedup_plot(rows: pd.DataFrame, reference: str, level: float, colors: dict) -> hv.Overlay:
    """Equal-loss speedup against non-embedding parameters (log-log), per candidate, bars its
    interval; the dotted line is the reference (1)."""
    parts = [hv.HLine(1.0).opts(color="gray", line_dash="dotted")]
    for name, part in rows.groupby("algorithm", sort=True):
        color = colors.get(name, "gray")
        bars = part.dropna(subset=["low", "high"])
        bars = bars[np.isfinite(bars["high"])]
        parts.append(hv.Segments(bars, ["params", "low", "params", "high"]).opts(color=color))
        parts.append(hv.Curve(part, "params", "speedup").opts(color=color, alpha=0.4))
        parts.append(hv.Scatter(part, "params", ["speedup", "low", "high", "seeds",
                                                 "reference_seeds", "rung", "algorithm"],
                                label=str(name)).opts(color=color, size=9, tools=["hover"]))
    sizes = sorted(set(rows["params"]))
    return hv.Overlay(parts).opts(hv.opts.Overlay(
        responsive=True, min_height=320, logx=True, logy=True, show_grid=True,
        xticks=[(n, _size_label(n)) for n in sizes] or None,  # (none: Bokeh's own)
        title=f"equal-loss speedup over {reference} ({100 * level:.0f} % intervals)",
        xlabel="non-embedding parameters", ylabel="speedup D_ref(L) / D (x)",
        legend_position="right"))


def _size_label(n: float) -> str:
    """12000 -> '12k', 1.9e8 -> '190M': a model size as people write it."""
    for scale, unit in ((1e9, "B"), (1e6, "M"), (1e3, "k")):
        if n >= scale:
            return f"{n / scale:.3g}{unit}"
    return f"{n:g}"


def _table(rows: pd.DataFrame, result: dict) -> pd.DataFrame:
    def interval(r):
        if math.isnan(r.low):
            return "n/a"
        return f"{r.low:.3f} to {'inf' if math.isinf(r.high) else f'{r.high:.3f}'}"
    return pd.DataFrame({
        "rung": rows["rung"], "algorithm": rows["algorithm"],
        "speedup": [f"{v:.3f}" + (" *" if e else "") for v, e in
                    zip(rows["speedup"], rows["extrapolated"])],
        f"{100 * result['interval_level']:.0f} % interval": [interval(r) for r in
                                                              rows.itertuples()],
        "time ratio": [("n/a" if v is None or pd.isna(v) else f"{v:.3f}")
                       for v in rows["time_ratio"]],
        "seeds (candidate / reference)": [f"{a} / {b}" for a, b in
                                          zip(rows["seeds"], rows["reference_seeds"])]})


def figures(selection: Selection) -> dict[str, hv.Overlay]:
    """For `workbench.figures`: "ladder_loss_<rung>" per rung and "ladder_speedup"."""
    result = ladder_of(selection)
    if result is None:
        return {}
    rungs, names = _shown(selection, result)
    colors = selection.colors
    out = {f"ladder_loss_{r['name']}": loss_plot(r, result["reference"], names, colors)
           for r in rungs}
    out.update({f"ladder_deff_{r['name']}": deff_plot(r, result["reference"], names, colors)
                for r in rungs if r["speedups"]})
    rows = speedup_rows(result, rungs, names)
    if len(rows):
        out["ladder_speedup"] = speedup_plot(rows, result["reference"],
                                             result["interval_level"], colors)
    return out


def _notes(result: dict, names: list[str]) -> str:
    """Markdown (every name escaped): the verdict per shown candidate, where the runs came
    from, and how to get intervals with one seed."""
    lines = [f"- {md(result['verdicts'][n])}" for n in names if n in result.get("verdicts", {})]
    origins = result.get("origins") or {}
    if set(origins) - {"pacebench"}:
        lines.append("- runs: " + "; ".join(f"{n} from {md(k)}" for k, n in origins.items()))
    if result.get("interval_note"):
        lines.append(f"- {md(result['interval_note'])}")
    return "\n".join(lines)


class Ladder(View):
    """Final loss against tokens per rung with the reference's fit; speedup against size."""

    WATCHES = ("version", "workloads", "algorithms")

    def __init__(self, **params) -> None:
        super().__init__(**params)
        self._body = pn.Column(sizing_mode="stretch_width")
        self._none = pn.pane.Markdown(NONE, css_classes=["pb-ladder-none"])
        self._first_draw()

    def _update(self) -> None:
        result = ladder_of(self.selection)
        if result is None:
            if [id(o) for o in self._body.objects] != [id(self._none)]:
                self._body.objects = [self._none]
            return
        rungs, names = _shown(self.selection, result)
        colors = self.selection.colors
        reference = result["reference"]
        rows = speedup_rows(result, rungs, names)
        if len(rows):
            parts = [pn.pane.HoloViews(speedup_plot(rows, reference, result["interval_level"],
                                                    colors), sizing_mode="stretch_width",
                                       css_classes=["pb-ladder-speedup"], linked_axes=False),
                     pn.pane.DataFrame(_table(rows, result), index=False, escape=True)]
        else:  # e.g. a rung with fewer than 3 budgets: its warning below says why
            parts = [pn.pane.Markdown(NO_SPEEDUP, css_classes=["pb-ladder-no-speedup"])]
        notes = _notes(result, names)
        if notes:
            parts.append(pn.pane.Markdown(notes, css_classes=["pb-ladder-verdicts"]))
        for rung in rungs:
            parts.append(pn.pane.HoloViews(loss_plot(rung, reference, names, colors),
                                           sizing_mode="stretch_width",
                                           css_classes=["pb-ladder-loss"], linked_axes=False))
            tuning = Results.ladder_tuning_table(rung)
            if len(tuning) and (tuning["trials"] > 0).any():  # a sweep to judge
                parts += [pn.pane.Markdown(f"Tuning at {md(rung['name'])} (the tuning report's "
                                           "edge rule on each sweep):"),
                          pn.pane.DataFrame(tuning, index=False, escape=True,
                                            css_classes=["pb-ladder-tuning"])]
            if rung["speedups"]:
                parts.append(pn.pane.HoloViews(deff_plot(rung, reference, names, colors),
                                               sizing_mode="stretch_width",
                                               css_classes=["pb-ladder-deff"],
                                               linked_axes=False))
            parts += [pn.pane.Markdown(f"warning ({md(rung['name'])}): {md(w)}")
                      for w in rung["warnings"]]
        self._body.objects = parts

    def __panel__(self) -> pn.viewable.Viewable:
        level = f"{100 * LADDER_INTERVAL_LEVEL:.0f} %"
        return pn.Column(pn.pane.Markdown(
            "### Model-size ladder\nEach candidate's equal-loss speedup over the reference: "
            "the reference's final validation loss is fitted over its data budgets as "
            "L(D) = a D^-b + c per rung, and a candidate that ends at loss L after D tokens "
            "needed D_ref(L) / D times fewer tokens (geometric mean over budgets; * some "
            f"budget extrapolated beyond the fitted ones). Bars: {level} bootstrap intervals "
            "over seeds and the fit. Time ratio: the same with the reference's L over train "
            "seconds. Below, per rung: mean final loss ± sd over seeds against tokens, "
            "log-log, the reference's fit dashed; and D_eff, the tokens the reference would "
            "need to reach each candidate's loss, against the tokens D it used (the diagonal "
            "is 1x, the guides 1.2x and 1.4x)."),
            self._body, sizing_mode="stretch_width", css_classes=["pb-ladder"])
