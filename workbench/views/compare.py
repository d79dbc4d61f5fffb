"""Compare: two algorithms head to head (workbench.compare), the answer to "is A really faster?".

Per scored workload, the ratio of B's median study time to A's with its interval, drawn as a
forest plot (log axis, 1 = equal), the overall speedup with its interval beneath, and the verdict
in words with its p-value, the probability of improvement and the studies a verdict would need;
the verdict by steps to target beside the one on the time axis, and the machine-speed check's
warning with the reason a verdict in seconds was withheld; whether both sides were tuned
comparably (workbench/tuning.py: a "Tuning" line, the findings, the tuning table and the search
spaces as a table, views/tuning.py). The comparison is
`workbench.compare.compare_runs` over the selection's finished runs with COMPARE_DRAWS draws,
as `pacebench compare` and `Results.compare()` make it. A and B are picked in the view (default:
the top scorer and the sidebar's reference); the report has one section per algorithm against
the reference.
"""
from __future__ import annotations

import pandas as pd
import panel as pn
import param

from workbench.views import tuning as VT
from workbench.results import (AXIS_LABELS, COMPARE_DRAWS, EXACT_BOOTSTRAP, Comparison,
                               Results)
from workbench.views.base import FILTERS, View
from workbench.views.formats import TABLE_CSS, log_ticks, md
from workbench.views.live import LivePlot
from workbench.views.plotting import hv
from workbench.views.selection import Selection

__all__ = ["Compare", "comparison", "cautions", "forest_data", "forest_plot", "default_pair",
           "figures", "OVERALL", "tuning_text", "tuning_tables"]

OVERALL = "overall (geometric mean)"


def default_pair(selection: Selection) -> tuple[str | None, str | None]:
    """(A, B): the best-scoring shown algorithm other than the reference, and the reference."""
    shown = [a for a in selection.param.algorithms.objects if a in selection.algorithms]
    ranked = [a for a in selection.scores()["algorithm"] if a in shown] or shown
    b = selection.reference if selection.reference in shown else (ranked[1:2] or [None])[0]
    a = next((x for x in ranked if x != b), None)
    return a, b


def comparison(selection: Selection, a: str, b: str) -> Comparison | None:
    """Results.comparison (compare.compare_runs) of `a` and `b` over the shown scored workloads
    (cached), as Results.compare_result makes it: the scope's finished runs of every
    algorithm (a miss counts as the longest any run trained on a workload), the store's rules,
    the workloads' noise floors, COMPARE_DRAWS draws; with the verdict by steps and the
    machine-speed check.
    None when either is not shown with a finished run, or no workload is scored."""
    finished = selection.finished_algorithms()
    shown = set(selection.workload_groups()["scored"])
    if a not in finished or b not in finished or a == b or not shown or not selection.n_runs:
        return None

    def make() -> Comparison:
        cube = selection.full_cube("train_seconds")
        workloads = [w for w in Results.scored_names(selection.store_config, cube) if w in shown]
        return selection.results.comparison(
            selection.full_runs(), cube, a, b, time_axis=selection.time_axis,
            workloads=workloads, config=selection.store_config,
            tuning=VT.cut(VT.report_of(selection), [a, b]),
            tuning_runs=VT.runs_of(selection, [a, b]))
    return selection.cached(f"compare:{a}\x00{b}", make)


def _rows(result: Comparison) -> pd.DataFrame:
    rows = [{"label": r.workload, "ratio": r.ratio, "low": r.low, "high": r.high,
             "studies": f"{r.studies_a} + {r.studies_b}", "misses": f"{r.misses_a} + {r.misses_b}"}
            for r in result.per_workload if r.ratio is not None]
    if result.speedup is not None:
        rows.append({"label": OVERALL, "ratio": result.speedup, "low": result.low,
                     "high": result.high, "studies": "", "misses": ""})
    frame = pd.DataFrame(rows)
    frame["y"] = list(range(len(frame)))[::-1]  # the first workload on top, overall at 0
    frame["interval"] = [f"{lo:.3g} to {hi:.3g}" if lo is not None and not pd.isna(lo)
                         else "n/a" for lo, hi in zip(frame["low"], frame["high"])]
    return frame


def forest_data(result: Comparison | None) -> dict | None:
    """What the forest plot draws: per workload with a ratio t(B) / t(A) and overall, its row
    ("rows": label, ratio, low, high, y, interval, studies, misses; the first workload on top,
    overall at 0), the x range (log axis around them and 1), axis label and title; None when no
    workload has a ratio."""
    if result is None or result.speedup is None:
        return None
    frame = _rows(result)
    bars = frame.dropna(subset=["low", "high"])
    values = pd.concat([frame["ratio"], bars["low"], bars["high"]]).astype(float)
    xlim = (min(values.min(), 1.0) / 1.15, max(values.max(), 1.0) * 1.15)
    return {"rows": frame, "bars": bars, "height": 140 + 36 * len(frame), "xlim": xlim,
            # labelled ticks over the whole axis: Bokeh's and Matplotlib's own log ticks on a
            # range under a decade or two label nothing below 0.5, or every digit, overlapping
            "xticks": log_ticks(pd.Series(xlim)),
            "ylim": (-0.7, len(frame) - 0.3),
            "xlabel": f"t({result.b}) / t({result.a}): median study times (> 1: "
                      f"{result.a} faster), {result.confidence:.0%} intervals",
            "title": f"{result.a} against {result.b}"}


def forest_plot(result: Comparison) -> hv.Overlay | None:
    """forest_data in HoloViews (paper figures, the report): each ratio a dot on its
    interval, overall a red diamond, 1 dashed; None when no workload has a ratio."""
    data = forest_data(result)
    if data is None:
        return None
    frame, bars = data["rows"], data["bars"]
    segments = hv.Segments(bars.assign(y0=bars["y"], y1=bars["y"]),
                           kdims=["low", "y0", "high", "y1"]).opts(color="#444", line_width=2)
    points = hv.Scatter(frame, kdims=["ratio"], vdims=["y", "label", "interval", "studies",
                                                       "misses"]).opts(
        color="#1f77b4", size=9, marker="circle", tools=["hover"])
    overall = hv.Scatter(frame[frame["label"] == OVERALL], kdims=["ratio"],
                         vdims=["y", "label", "interval"]).opts(
        color="#d62728", size=14, marker="diamond", tools=["hover"])
    return (segments * points * overall * hv.VLine(1.0).opts(color="gray", line_dash="dashed")
            ).opts(hv.opts.Overlay(
                logx=True, xlim=data["xlim"], ylim=data["ylim"],
                xticks=[(t, f"{t:g}") for t in data["xticks"]],
                yticks=list(zip(frame["y"], frame["label"])), responsive=True,
                min_height=data["height"], show_grid=True, show_legend=False,
                xlabel=data["xlabel"], ylabel="", title=data["title"]))


def _live_forest() -> LivePlot:
    """An empty plot for forest_data, drawn by _draw_forest (the dashboard's and the
    report's; forest_plot draws the paper figure)."""
    return LivePlot(xlabel="", ylabel="", height=180, x_log=True, x_range=(0.5, 2),
                    y_range=(0, 1), points=True, legend=False, hover=("ratio", "", "interval"))


def _draw_forest(plot: LivePlot, data: dict) -> None:
    """forest_data on the dashboard's plot, redrawn in place."""
    frame, bars = data["rows"], data["bars"]
    overall = frame["label"] == OVERALL
    plot.figure.height = data["height"]
    plot.draw(
        [(label, "#444", (low, high), (y, y)) for label, low, high, y in
         zip(bars["label"], bars["low"], bars["high"], bars["y"])], data["title"],
        widths=[2] * len(bars),
        points=[(label, "#d62728" if top else "#1f77b4", ratio, y,
                 f"{interval}; studies {studies}; misses {misses}" if studies else interval,
                 "diamond" if top else "circle", 14 if top else 9,
                 "#d62728" if top else "#1f77b4")
                for label, ratio, y, interval, studies, misses, top in zip(
                    frame["label"], frame["ratio"].astype(float), frame["y"], frame["interval"],
                    frame["studies"], frame["misses"], overall)],
        vline=(1.0, "dashed"), xlim=data["xlim"], ylim=data["ylim"], xlabel=data["xlabel"],
        xticks=data["xticks"], yticks=list(frame["y"]), ytick_labels=list(frame["label"]))


def _about(result: Comparison | None, a: str | None, b: str | None) -> str:
    if result is None:
        return ("Pick two different shown algorithms; a comparison needs at least one scored "
                "workload with finished studies of both.")
    text = (f"A = **{md(result.a)}**, B = **{md(result.b)}**.\n\n"
            f"**Verdict in {AXIS_LABELS[Results.axis_column(result.time_axis)]}: "
            f"{md(result.verdict)}.** Verdict by steps to target: "
            f"**{md(result.verdict_by_steps or 'n/a')}**.\n\n{md(result.sentence())}")
    if result.left_out:
        text += "\n\nLeft out: " + "; ".join(f"{md(w)} ({md(why)})"
                                             for w, why in result.left_out.items())
    if result.counted_as_missed:
        text += "\n\nCounted as missed: " + "; ".join(
            md(why) for why in result.counted_as_missed.values())
    text += "\n\n" + tuning_text(result)
    rule = ("the trial that met the target at the smallest eval index (AlgoPerf's rule)"
            if result.study_time == "algoperf" else "its fastest trial's (--study-time fastest)")
    return text + (
        f"\n\nA study's time is {rule}. The ratio is B's median "
        "study time over A's; its interval redraws each side's studies (the exact bootstrap "
        f"distribution where it has at most {EXACT_BOOTSTRAP:,} resamples, else "
        f"{COMPARE_DRAWS:,} draws, as `pacebench compare`); a miss counts as the workload's "
        "budget there, so ratios with misses are bounds towards 1. The verdict is an exact "
        "permutation test on ranks (a miss ranks last), two-sided at "
        f"{Results.level_text(result.confidence)}: with no true difference it is wrong at most "
        f"{Results.level_text(1 - result.confidence)} of the time. The verdict by steps is the "
        "same test on steps to target, which the machine's speed does not change.")


def tuning_text(result: Comparison) -> str:
    """Whether the two sides were tuned comparably (Markdown, escaped): compare's one tuning
    line, each side's finding, and the tuning runs behind each space."""
    line = Results.tuning_line(result.tuning, result.a, result.b, result.fair_tuning,
                         result.tuning_warnings).removeprefix("tuning: ")
    text = f"**Tuning:** {md(line)}"
    if result.tuning:
        text += "\n\n" + VT.findings(result.tuning)
    findings = {e["finding"] for per in result.tuning.values() for e in per.values()}
    extra = [w for w in result.tuning_warnings if w not in findings]
    if extra:
        text += "\n\n" + "\n".join(f"- {md(w)}" for w in extra)
    runs = [f"{md(side)}: {info.get('runs', 0)} tuning runs, its space "
            f"{md(info.get('origin') or 'unrecorded')}"
            for side, info in result.tuning_runs.items()]
    if runs:
        text += "\n\nTuning runs behind each space: " + "; ".join(runs) + "."
    return text


def tuning_tables(result: Comparison | None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(tuning.report_table, tuning.space_table) of a comparison (empty frames without)."""
    if result is None or not result.tuning:
        return (pd.DataFrame({"algorithm": []}), pd.DataFrame({"hyperparameter": []}))
    return Results.tuning_report_table(result.tuning), Results.tuning_space_table(result.tuning)


def cautions(result: Comparison | None) -> str:
    """The machine-speed check's warnings and why a verdict in seconds was withheld (Markdown,
    escaped); empty when there are none."""
    if result is None or not (result.warnings or result.withheld):
        return ""
    lines = [f"**Warning:** {md(w)}" for w in result.warnings]
    if result.withheld:
        lines.append(f"**Verdict withheld:** {md(result.withheld)}; the test on the times "
                     f"alone: {md(result.measured_verdict or 'n/a')}. Rerun with the "
                     "interleaved order or compare by steps.")
    return "\n\n".join(lines)


def figures(selection: Selection) -> dict[str, hv.Overlay]:
    """The forest plot of each algorithm against the reference ("compare_<algorithm>")."""
    out = {}
    for a in _against_reference(selection):
        plot = forest_plot(comparison(selection, a, selection.reference))
        if plot is not None:
            out[f"compare_{a}"] = plot
    return out


def _against_reference(selection: Selection) -> list[str]:
    shown = [a for a in selection.param.algorithms.objects if a in selection.algorithms]
    if selection.reference not in shown:
        return []
    ranked = [a for a in selection.scores()["algorithm"] if a in shown and
              a != selection.reference]
    return ranked + [a for a in shown if a not in ranked and a != selection.reference]


class Compare(View):
    """A against B on the shown scored workloads; in a report, every algorithm against the
    reference."""

    a = param.Selector(default=None, objects=[], allow_None=True, doc="Algorithm A")
    b = param.Selector(default=None, objects=[], allow_None=True, doc="Algorithm B")
    against_reference = param.Boolean(default=False, doc="One section per algorithm against "
                                                         "the reference (the report).")
    WATCHES = FILTERS + ("reference",)

    def __init__(self, **params) -> None:
        super().__init__(**params)
        self._pickers = pn.Row(
            pn.widgets.Select.from_param(self.param.a, name="A", width=260),
            pn.widgets.Select.from_param(self.param.b, name="B", width=260),
            visible=not self.against_reference)
        # The dashboard's panes are made once and redrawn in place (replacing a layout's
        # children while the page lays them out races in the browser); the report builds its
        # sections once.
        self._text = pn.pane.Markdown(sizing_mode="stretch_width")
        self._caution = pn.pane.Alert(alert_type="warning", sizing_mode="stretch_width",
                                      visible=False, css_classes=["pb-compare-caution"])
        self._forest = _live_forest()
        self._plot = self._forest.pane
        self._plot.visible = False
        # Always shown (empty when there is nothing): a Tabulator made while hidden measures
        # its columns on a missing element in the browser.
        self._table = pn.widgets.Tabulator(disabled=True, show_index=False,
                                           layout="fit_data_stretch", stylesheets=[TABLE_CSS],
                                           sizing_mode="stretch_width")
        self._tuning = VT.table(pd.DataFrame({"algorithm": []}), "pb-compare-tuning")
        self._spaces = VT.table(pd.DataFrame({"hyperparameter": []}), "pb-compare-spaces")
        self._body = pn.Column(*([] if self.against_reference else
                                 [self._text, self._caution, self._plot, self._table,
                                  pn.pane.Markdown(f"**{VT.REPORT_TITLE}**"), self._tuning,
                                  pn.pane.Markdown(f"**{VT.SPACES_TITLE}**"), self._spaces]),
                               sizing_mode="stretch_width")
        self._choosing = False  # set while _choices updates the pickers: not a user's pick
        self.param.watch(lambda *_: None if self._choosing else self._selection_changed(),
                         ["a", "b"])
        self._first_draw()

    def _choices(self) -> None:
        shown = [x for x in self.selection.param.algorithms.objects
                 if x in self.selection.algorithms]
        a, b = self.a, self.b
        if a not in shown or b not in shown or a == b:
            a, b = default_pair(self.selection)
        self._choosing = True
        try:  # the widgets follow the parameters' objects and values
            self.param.a.objects = self.param.b.objects = shown
            self.param.update(a=a, b=b)
        finally:
            self._choosing = False

    def _section(self, a: str | None, b: str | None) -> list:
        result = comparison(self.selection, a, b) if a and b else None
        data = forest_data(result)
        parts = [pn.pane.Markdown(_about(result, a, b), sizing_mode="stretch_width")]
        if caution := cautions(result):
            parts.append(pn.pane.Alert(caution, alert_type="warning",
                                       sizing_mode="stretch_width"))
        if data is not None:  # the dashboard's plot, drawn once
            plot = _live_forest()
            _draw_forest(plot, data)
            parts.append(plot.pane)
        if result is not None and result.per_workload:
            parts.append(pn.widgets.Tabulator(
                Results.comparison_table(result, names=False), disabled=True, show_index=False,
                layout="fit_data_stretch", stylesheets=[TABLE_CSS], sizing_mode="stretch_width"))
        if result is not None and result.tuning:
            report, spaces = tuning_tables(result)
            parts += [pn.pane.Markdown(f"**{VT.REPORT_TITLE}**"),
                      VT.table(report, "pb-compare-tuning")]
            if len(spaces):
                parts += [pn.pane.Markdown(f"**{VT.SPACES_TITLE}**"),
                          VT.table(spaces, "pb-compare-spaces")]
        return parts

    def _update(self) -> None:
        self._choices()
        if not self.against_reference:
            result = comparison(self.selection, self.a, self.b) if self.a and self.b else None
            data = forest_data(result)
            self._text.object = _about(result, self.a, self.b)
            caution = cautions(result)
            self._caution.param.update(object=caution, visible=bool(caution))
            if data is not None:
                _draw_forest(self._forest, data)
            self._plot.visible = data is not None
            shown = result is not None and bool(result.per_workload)
            self._table.value = (Results.comparison_table(result, names=False) if shown
                                 else pd.DataFrame({"workload": []}))
            self._tuning.value, self._spaces.value = tuning_tables(result)
            return
        parts = []
        for a in _against_reference(self.selection):
            parts.append(pn.pane.Markdown(f"#### {md(a)} against {md(self.selection.reference)}"))
            parts.extend(self._section(a, self.selection.reference))
        self._body.objects = parts or [pn.pane.Markdown("No algorithm to compare with the "
                                                        "reference.")]

    def __panel__(self) -> pn.viewable.Viewable:
        return pn.Column(pn.pane.Markdown("### Compare: is A really faster than B?"),
                         self._pickers, self._body, sizing_mode="stretch_width",
                         css_classes=["pb-compare"])

