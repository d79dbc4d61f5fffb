"""Learning curves: the validation target metric against train seconds, wall seconds or steps
(training tokens for a model-size ladder), per algorithm the median of its runs and their
interquartile band (or one line per run, on demand), the target as a horizontal line (at the
edge, labelled, when no run comes near it: never an axis limit that squashes the curves) and each
run's first eval that met it marked; beside it, the training loss of the same runs.

Everything drawn is read from the store's rows; the time to target comes with each run record.
Which runs are drawn, and their rows, is workbench/views/curve_rows.py's (importable from here).
"""
from __future__ import annotations

import html

import numpy as np
import pandas as pd
import panel as pn
import param

from workbench import records as R
from workbench.views.curve_rows import (MAX_CURVE_POINTS, MAX_DEFAULT_CURVES, curve_evals,
                                        curve_train, decimate, shown_curve_runs)
from workbench.views.base import FILTERS, View
from workbench.views.plotting import hv
from workbench.views.formats import log_ticks, md, run_labels
from workbench.views.live import LivePlot
from workbench.views.selection import TIME_AXES, Selection

__all__ = ["Curves", "validation_plot", "loss_plot", "figures", "shown_curve_runs", "run_labels",
           "legend_html", "curve_evals", "curve_train", "decimate", "MAX_DEFAULT_CURVES",
           "MAX_CURVE_POINTS"]

TOKENS_LABEL = "training tokens"  # the x axis of a model-size ladder's curves
BAND_POINTS = 200  # points of a median curve and its interquartile band


def _run_lines(rows: pd.DataFrame, x: str, y: str, colors: dict[str, str],
               labels: dict[str, str]) -> list[hv.Path]:
    """Per algorithm of `rows` (which carry `algorithm` and `run_id`), one hv.Path holding a line
    per run, its hover naming the run (run_labels): one glyph per algorithm keeps hundreds of
    runs fast to draw."""
    lines = []
    for algorithm, runs in rows.groupby("algorithm", sort=True):
        paths = [{x: group[x].to_numpy(float), y: group[y].to_numpy(float),
                  "run": labels.get(run_id, str(algorithm))}
                 for run_id, group in runs.sort_values(x).groupby("run_id", sort=True)]
        lines.append(hv.Path(paths, kdims=[x, y], vdims=["run"], label=str(algorithm))
                     .opts(color=colors.get(algorithm, "gray")))
    return lines


def _missed_points(runs: pd.DataFrame, evals: pd.DataFrame, x: str, y: str,
                   labels: dict[str, str]) -> pd.DataFrame:
    """Per run that did not meet the target: a cross at its best eval (how close it came)."""
    missed = runs[~runs["reached_target"].fillna(False).astype(bool)]
    rows = evals[evals["run_id"].isin(missed["run_id"])].dropna(subset=[y])
    minimise = bool((missed["target_direction"] == "min").any())  # one workload, one direction
    rows = rows.sort_values(y, ascending=minimise, kind="stable").drop_duplicates("run_id")
    return rows.assign(run=rows["run_id"].map(labels).fillna(""))


def _target_points(runs: pd.DataFrame, evals: pd.DataFrame, x: str, y: str,
                   labels: dict[str, str]) -> pd.DataFrame:
    """The eval (rows of `evals`) at which each run first met its target (eval_index_to_target)."""
    reached = runs[runs["reached_target"].fillna(False).astype(bool)]
    keys = reached[["run_id", "eval_index_to_target"]].rename(
        columns={"eval_index_to_target": "eval_index"})
    points = keys.merge(evals, on=["run_id", "eval_index"])
    return points.assign(run=points["run_id"].map(labels).fillna(""))


def _target(run: pd.Series) -> tuple[float | None, str]:
    """The validation target of a workload (None when its run has none) and its title text."""
    value = run["target_validation"]
    if value is None or pd.isna(value):
        return None, "no validation target"
    return float(value), f"target {float(value):g}, {run['target_direction']}"


def _y_range(evals: pd.DataFrame, x: str, y: str, full: bool = False,
             direction: str = "max") -> tuple[float, float] | tuple[None, None]:
    """Where the race is: the values of the second half of each run (by `x`), from their 5th
    percentile up to the best (`direction` "max") or from the best up to their 95th percentile
    ("min"): a run that blew up (a loss of 1e6 before it diverged) does not squash the race
    against the axis; with `full`, the bulk of every value (2nd to 98th percentile), so that a
    few early evals far from the target do not squash every curve against it. Non-finite
    values are left out (a diverged run's inf would make the range infinite, and the plot
    blank). The target is fitted in by _fit_target."""
    evals = evals[np.isfinite(evals[y].astype(float))]
    values = evals[y]
    if not len(values):
        return (None, None)
    if not full:
        position = evals.groupby("run_id")[x].rank(pct=True)
        late = evals.loc[position >= 0.5, y]
        values = late if len(late) else values
        low, high = ((values.quantile(0.05), values.max()) if direction != "min" else
                     (values.min(), values.quantile(0.95)))
    else:
        low, high = values.quantile(0.02), values.quantile(0.98)
    return float(low), float(high)


# A target this far beyond the drawn values (a share of their span) is not an axis limit: it
# would squash every curve into a sliver (the ladder's 3.32 nats, which no run reaches by
# design); it is drawn as a labelled line at the plot's edge instead.
TARGET_REACH = 0.5


def _fit_target(low: float | None, high: float | None, target: float | None, reached: bool
                ) -> tuple[tuple[float, float] | tuple[None, None], float | None, str]:
    """(the y range, padded; where the target line is drawn (None: no target); its label).
    The range takes in the target when a run reached it or it lies within TARGET_REACH of
    the range's span; else the line sits at the edge it lies beyond, labelled with its value
    and "off the axis"."""
    if low is None:
        return (None, None), target, ""
    span = (high - low) or abs(high) or 1.0
    near = target is not None and (reached or low - TARGET_REACH * span <= target
                                   <= high + TARGET_REACH * span)
    if near:
        low, high = min(low, target), max(high, target)
    pad = 0.05 * (high - low) or 0.05 * abs(high) or 0.05
    ylim = (low - pad, high + pad)
    if target is None or near:
        return ylim, target, ""
    below = target < low
    edge = ylim[0] + pad / 2 if below else ylim[1] - pad / 2
    return ylim, edge, (f"target {target:g} ({'below' if below else 'above'} the axis: "
                        "no drawn run came near it)")


def _tokens_per_step(selection: Selection, runs: pd.DataFrame) -> dict[str, float]:
    """{run_id: training tokens per step} of the model-size ladder runs among `runs` (their
    ladder record: planned tokens / planned steps); empty for other runs."""
    def make() -> dict[str, float]:
        records = selection.results.ladder_records(runs["run_id"].tolist())
        out = {}
        for run_id, record in records.items():
            try:
                tokens, steps = float(record["tokens"]), float(record["steps"])
            except (KeyError, TypeError, ValueError):
                continue
            if np.isfinite(tokens) and np.isfinite(steps) and steps > 0 and tokens > 0:
                out[run_id] = tokens / steps
        return out
    key = ",".join(sorted(runs["workload"].astype(str).unique()))
    return selection.cached(f"curves:tokens:{key}", make)


def _on_tokens(selection: Selection, runs: pd.DataFrame, rows: pd.DataFrame, x: str
               ) -> tuple[pd.DataFrame, str]:
    """(rows, x column): against training tokens (a "tokens" column, step x tokens per step)
    when every run of `runs` is a ladder run, which the ladder compares at token budgets; else
    as they are, on `x`."""
    if not len(runs) or "step" not in rows:
        return rows, x
    per_step = _tokens_per_step(selection, runs)
    if not per_step or not runs["run_id"].isin(list(per_step)).all():
        return rows, x
    return rows.assign(tokens=rows["step"].astype(float) * rows["run_id"].map(per_step)), \
        "tokens"


def validation_data(selection: Selection, workload: str, full_range: bool = False) -> dict:
    """What the validation plot of one workload draws: the shown runs' eval rows ("evals",
    with their algorithm), each run's first eval that met the target ("hits") and, for a run
    that never did, its best eval ("misses"), the target line and its label (_fit_target: an
    unreachable target at the edge), the y range (zoomed on the race, _y_range, unless
    `full_range`), run labels, axis labels and title. Ladder runs are drawn against tokens."""
    runs = shown_curve_runs(selection).query("workload == @workload")
    metric = runs.iloc[0]["target_metric"]
    y = R.metric_column("validation", metric)
    evals = curve_evals(selection, workload).merge(runs[["run_id", "algorithm"]], on="run_id")
    evals, x = _on_tokens(selection, runs, evals, selection.time_axis)
    # a diverged run's last value may be +-inf: not drawable, and no zoom survives it
    evals = evals[np.isfinite(evals[y].astype(float))] if y in evals else \
        evals.assign(**{y: float("nan")})
    target, about = _target(runs.iloc[0])
    labels = run_labels(runs)
    hits = _target_points(runs, evals, x, y, labels)
    low, high = _y_range(evals, x, y, full_range, runs.iloc[0]["target_direction"])
    ylim, line, line_label = _fit_target(low, high, target, bool(len(hits)))
    return {"evals": evals, "x": x, "y": y, "labels": labels, "target": line,
            "target_label": line_label, "hits": hits,
            "misses": _missed_points(runs, evals, x, y, labels), "ylim": ylim,
            # the drawn algorithms' colours only: a filtered report names no algorithm it
            # leaves out
            "colors": {a: c for a, c in selection.colors.items()
                       if a in set(runs["algorithm"])},
            "xlabel": TOKENS_LABEL if x == "tokens" else TIME_AXES[x],
            "ylabel": f"validation {metric}",
            "title": f"{workload}: validation {metric} ({about})"}


def validation_plot(selection: Selection, workload: str, full_range: bool = False,
                    legend: bool = True) -> hv.Overlay:
    """validation_data in HoloViews (paper figures, the report): a line per run, the target
    dashed, a dot at each run's first eval that met it and a cross at the best eval of a run
    that never did. `legend`: the algorithms' legend beside the plot (a figure's; the
    dashboard shows one legend for all, legend_html)."""
    data = validation_data(selection, workload, full_range)
    x, y, colors = data["x"], data["y"], data["colors"]
    target = [] if data["target"] is None else [hv.HLine(data["target"], label="target").opts(
        color="black", line_dash="dashed", line_width=1.5)]
    hits = hv.Scatter(data["hits"], kdims=x, vdims=[y, "algorithm", "run"],
                      label="time to target").opts(
        color="algorithm", cmap=colors, size=9, marker="circle", line_color="black",
        show_legend=False, tools=["hover"])
    misses = hv.Scatter(data["misses"], kdims=x, vdims=[y, "algorithm", "run"],
                        label="missed: best value").opts(
        color="algorithm", cmap=colors, size=12, marker="x", line_width=2.5,
        show_legend=False, tools=["hover"])
    return hv.Overlay([*_run_lines(data["evals"], x, y, selection.colors, data["labels"]),
                       *target, hits, misses]).opts(
        hv.opts.Path(line_width=1.5, alpha=0.85, tools=["hover"], show_legend=legend),
        hv.opts.Overlay(responsive=True, min_height=400, xlabel=data["xlabel"],
                        shared_axes=False, ylim=data["ylim"], ylabel=data["ylabel"],
                        show_grid=True, show_legend=legend, legend_position="right",
                        title=data["title"]))


def _line_tuples(rows: pd.DataFrame, x: str, y: str, colors: dict[str, str],
                 labels: dict[str, str]) -> list:
    """One live.Line per run of `rows` (which carry `algorithm` and `run_id`), named by its
    run label and coloured by its algorithm."""
    rows = rows.sort_values(["run_id", x], kind="stable")
    return [(labels.get(run_id, str(group["algorithm"].iat[0])),
             colors.get(group["algorithm"].iat[0], "gray"), group[x].to_numpy(float),
             group[y].to_numpy(float)) for run_id, group in rows.groupby("run_id", sort=True)]


def median_bands(rows: pd.DataFrame, x: str, y: str, points: int = BAND_POINTS
                 ) -> list[tuple[str, np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]]:
    """Per algorithm of `rows` (which carry `algorithm` and `run_id`): (algorithm, x grid,
    median, 25th and 75th percentile of its runs' `y`, runs). Each run is interpolated
    linearly on `points` evenly spaced x values between the algorithm's first and last; a
    grid point counts where at least half the runs cover it (beyond, only the slow runs would
    be left: a median of the survivors)."""
    out = []
    rows = rows[np.isfinite(rows[x].astype(float)) & np.isfinite(rows[y].astype(float))]
    for algorithm, group in rows.groupby("algorithm", sort=True):
        runs = [(g[x].to_numpy(float), g[y].to_numpy(float))
                for _, g in group.sort_values(x, kind="stable").groupby("run_id", sort=True)]
        low, high = min(r[0][0] for r in runs), max(r[0][-1] for r in runs)
        grid = np.linspace(low, high, points) if high > low else np.array([low])
        values = np.full((len(runs), len(grid)), np.nan)
        for i, (xs, ys) in enumerate(runs):
            inside = (grid >= xs[0]) & (grid <= xs[-1])
            values[i, inside] = np.interp(grid[inside], xs, ys)
        enough = np.isfinite(values).sum(axis=0) >= max(1, (len(runs) + 1) // 2)
        if not enough.any():
            continue
        q1, median, q3 = _quartiles(values[:, enough])
        out.append((str(algorithm), grid[enough], median, q1, q3, len(runs)))
    return out


def _quartiles(values: np.ndarray) -> np.ndarray:
    """np.nanpercentile(values, [25, 50, 75], axis=0), the same numbers, by one np.percentile
    over the columns with each count of values that are not NaN (NaN sorts last):
    nanpercentile computes column by column in Python, 4.6 s of the 3,700-run v0.5 report's
    curves."""
    ordered = np.sort(values, axis=0)
    counts = (~np.isnan(values)).sum(axis=0)
    out = np.full((3, values.shape[1]), np.nan)
    for n in np.unique(counts[counts > 0]):
        columns = counts == n
        out[:, columns] = np.percentile(ordered[:n, columns], [25, 50, 75], axis=0)
    return out


def _lines_or_bands(rows: pd.DataFrame, x: str, y: str, colors: dict[str, str],
                    labels: dict[str, str], every_run: bool, width: float,
                    alpha: float) -> dict:
    """draw's lines (with widths, alphas) and bands: a line per run when `every_run`, else a
    median line and interquartile band per algorithm (median_bands)."""
    if every_run:
        lines = _line_tuples(rows, x, y, colors, labels)
        return {"lines": lines, "widths": [width] * len(lines), "alphas": [alpha] * len(lines),
                "bands": []}
    bands = median_bands(rows, x, y)
    lines = [(f"{a}: median of {n} run{'s' * (n != 1)}", colors.get(a, "gray"), grid, median)
             for a, grid, median, _, _, n in bands]
    return {"lines": lines, "widths": [2.5] * len(lines), "alphas": [1.0] * len(lines),
            "bands": [(colors.get(a, "gray"), grid, q1, q3) for a, grid, _, q1, q3, _ in bands]}


def _draw_validation(plot: LivePlot, data: dict, colors: dict[str, str],
                     every_run: bool = False) -> bool:
    """Draw validation_data on the dashboard's plot (every run, or the median and
    interquartile band per algorithm); False when it has no line."""
    x, y = data["x"], data["y"]
    drawn = _lines_or_bands(data["evals"], x, y, colors, data["labels"], every_run, 1.5, 0.85)
    if not drawn["lines"]:
        return False
    marks = []  # dots (outlined black) at first hits, crosses at the misses' best evals
    for frame, marker, size in ((data["hits"], "circle", 9), (data["misses"], "x", 12)):
        for algorithm, xv, yv, run in zip(frame["algorithm"], frame[x].to_numpy(float),
                                          frame[y].to_numpy(float), frame["run"]):
            color = colors.get(algorithm, "gray")
            marks.append((str(algorithm), color, xv, yv, str(run), marker, size,
                          "black" if marker == "circle" else color))
    low, high = data["ylim"]
    plot.draw(drawn["lines"], data["title"], widths=drawn["widths"], alphas=drawn["alphas"],
              bands=drawn["bands"], points=marks, xlabel=data["xlabel"], ylabel=data["ylabel"],
              ylim=None if low is None else (low, high),
              hline=None if data["target"] is None else (data["target"], "dashed"),
              hline_label=data.get("target_label", ""))
    return True


EVAL_LOSS = R.metric_column("train", "loss")  # the training-split loss measured at each eval


def _eval_loss_column(evals: pd.DataFrame) -> str | None:
    """train/loss, else another training-split loss column (AlgoPerf's speech: train/ctc_loss)."""
    if EVAL_LOSS in evals:
        return EVAL_LOSS
    losses = sorted(c for c in evals.columns if c.startswith("train/") and c.endswith("loss")
                    and evals[c].notna().any())
    return losses[0] if losses else None


def _loss_rows(selection: Selection, runs: pd.DataFrame,
               workload: str) -> tuple[pd.DataFrame, str, str]:
    """(rows with `loss`, x column, what they are) of `runs` (of `workload`): the minibatch
    losses the runner recorded, or else (AlgoPerf logs record none) the training-split loss
    of the eval rows."""
    keys = runs[["run_id", "algorithm"]]
    train = curve_train(selection, workload).merge(keys, on="run_id").dropna(subset=["loss"])
    evals = curve_evals(selection, workload).merge(keys, on="run_id")
    column = _eval_loss_column(evals)
    if len(train) or column is None:
        # Training rows carry no wall clock: on the wall-seconds axis they stay on train seconds.
        x = selection.time_axis if selection.time_axis in R.TRAIN_COLUMNS else "train_seconds"
        return train, x, "training loss"
    evals = evals.drop(columns=["loss"], errors="ignore").rename(columns={column: "loss"})
    what = "training loss" if column == EVAL_LOSS else column.replace("/", " ")
    return evals.dropna(subset=["loss"]), selection.time_axis, f"{what} at evals"


def loss_data(selection: Selection, workload: str) -> dict:
    """What the loss plot of one workload draws: the rows (_loss_rows), x column (tokens for
    ladder runs), run labels, whether its y axis is logarithmic (every loss positive and
    spanning a decade or more: a narrower range on a log axis got one tick) and its ticks,
    title."""
    runs = shown_curve_runs(selection).query("workload == @workload")
    train, x, what = _loss_rows(selection, runs, workload)
    train, x = _on_tokens(selection, runs, train, x)
    train = train[np.isfinite(train["loss"].astype(float))]  # a diverged run's inf: undrawable
    positive = bool(len(train)) and bool((train["loss"] > 0).all())
    log = positive and float(train["loss"].max()) >= 10 * float(train["loss"].min())
    return {"rows": train, "x": x, "labels": run_labels(runs), "log": log,
            "yticks": log_ticks(train["loss"]) if log else None,
            "xlabel": TOKENS_LABEL if x == "tokens" else TIME_AXES[x],
            "title": f"{workload}: {what}"}


def loss_plot(selection: Selection, workload: str) -> hv.Overlay:
    """loss_data in HoloViews (paper figures, the report): a line per run."""
    data = loss_data(selection, workload)
    ticks = {"yticks": data["yticks"]} if data["log"] else {}
    return hv.Overlay(_run_lines(data["rows"], data["x"], "loss", selection.colors,
                                 data["labels"])).opts(
        hv.opts.Path(line_width=1, alpha=0.8, tools=["hover"]),
        hv.opts.Overlay(responsive=True, min_height=400, xlabel=data["xlabel"], ylabel="loss",
                        shared_axes=False, logy=data["log"], show_grid=True, show_legend=False,
                        title=data["title"], **ticks))


def _draw_loss(plot: LivePlot, data: dict, colors: dict[str, str],
               every_run: bool = False) -> bool:
    """Draw loss_data on one of the dashboard's loss plots (every run, or the median and
    interquartile band per algorithm); False when it has no line."""
    drawn = _lines_or_bands(data["rows"], data["x"], "loss", colors, data["labels"],
                            every_run, 1, 0.8)
    if drawn["lines"]:
        plot.draw(drawn["lines"], data["title"], widths=drawn["widths"],
                  alphas=drawn["alphas"], bands=drawn["bands"], xlabel=data["xlabel"],
                  yticks=data["yticks"])
    return bool(drawn["lines"])


def _has_lines(plot: hv.Overlay) -> bool:
    return any(len(path.split()) for path in plot.traverse(lambda e: e, [hv.Path]))


def figures(selection: Selection) -> dict[str, hv.Overlay]:
    """For `workbench.figures`: per workload with drawn runs, "curves_<workload>" (validation)
    and "curves_<workload>_loss"; a plot without any line is left out."""
    out = {}
    for workload in sorted(shown_curve_runs(selection)["workload"].unique()):
        for name, plot in ((f"curves_{workload}", validation_plot(selection, workload)),
                           (f"curves_{workload}_loss", loss_plot(selection, workload))):
            if _has_lines(plot):
                out[name] = plot
    return out


class Curves(View):
    """Per workload: validation curves beside training-loss curves. In the dashboard
    (`one_workload`) a picker in the view chooses the workload drawn; the report draws every
    shown scored workload (`only_scored`)."""

    WATCHES = FILTERS + ("curve_runs",)

    one_workload = param.Boolean(default=False, doc="Draw one workload, picked in the view.")
    workload = param.Selector(default=None, objects=[], allow_None=True,
                              doc="The workload drawn when one_workload is set.")
    only_scored = param.Boolean(default=False, doc="Draw the scored workloads only (the report: "
                                                   "keeps a big store's file small).")
    full_range = param.Boolean(default=False, doc="Validation axes over every value, not "
                                                  "zoomed on the race to the target.")
    every_run = param.Boolean(default=False, doc="A line per run, not the median and "
                                                 "interquartile band per algorithm.")

    def __init__(self, **params) -> None:
        super().__init__(**params)
        self._legend = pn.pane.HTML(sizing_mode="stretch_width", css_classes=["pb-legend"])
        self._body = pn.Column(sizing_mode="stretch_width")
        if self.one_workload:  # the dashboard: plots made once, redrawn in place (views.live)
            self._validation = LivePlot(xlabel="", ylabel="", height=400, y_range=(0, 1),
                                        legend=False, points=True, bands=True,
                                        hover=("at", "validation", "run"))
            self._losses = {log: LivePlot(xlabel="", ylabel="loss", height=400, y_log=log,
                                          legend=False, bands=True, hover=("at", "loss", ""))
                            for log in (False, True)}
            self._notes = {css: pn.pane.Markdown(visible=False, sizing_mode="stretch_width")
                           for css in ("pb-curve", "pb-loss")}
            self._row = pn.Row(
                pn.Column(self._validation.pane, self._notes["pb-curve"],
                          sizing_mode="stretch_width", css_classes=["pb-curve"]),
                pn.Column(*(p.pane for p in self._losses.values()), self._notes["pb-loss"],
                          sizing_mode="stretch_width", css_classes=["pb-loss"]),
                sizing_mode="stretch_width")
            self._nothing = pn.pane.Markdown("No runs to draw with the current selection.")
        self.param.watch(lambda _: self._selection_changed(),
                         ["workload", "full_range", "every_run"])
        self._first_draw()

    def _update(self) -> None:
        groups = self.selection.workload_groups()
        shown = [w for ws in groups.values() for w in ws if w in self.selection.workloads]
        self.param.workload.objects = shown
        if self.workload not in shown:
            with param.parameterized.discard_events(self):  # drawn just below
                self.workload = shown[0] if shown else None
        self._legend.object = legend_html(self.selection, shown_curve_runs(self.selection))
        if self.one_workload:
            self._draw_live()
        else:
            self._body.objects = self.plots().objects

    def _draw_live(self) -> None:
        """The dashboard's workload: its two plots redrawn in place, or why there are none."""
        drawn = self._drawn(shown_curve_runs(self.selection))
        shown = self._row if drawn else self._nothing
        if self._body.objects != [shown]:  # a layout set anew rebuilds its page models
            self._body.objects = [shown]
        if not drawn:
            return
        w, colors = drawn[0], self.selection.colors
        has = _draw_validation(self._validation, validation_data(
            self.selection, w, self.full_range), colors, self.every_run)
        self._validation.pane.visible = has
        loss = loss_data(self.selection, w)
        for log, plot in self._losses.items():
            plot.pane.visible = log == loss["log"] and _draw_loss(plot, loss, colors,
                                                                  self.every_run)
        for css, ok, what in (("pb-curve", has, "validation metric"),
                              ("pb-loss", any(p.pane.visible for p in self._losses.values()),
                               "training loss")):
            self._notes[css].param.update(
                object=f"*{md(w)}: no {what} recorded for the drawn runs.*", visible=not ok)

    def _drawn(self, runs: pd.DataFrame) -> list[str]:
        if self.one_workload:
            return [self.workload] if self.workload in set(runs["workload"]) else []
        scored = self.selection.workload_groups()["scored"]
        return sorted(w for w in runs["workload"].unique() if not self.only_scored or w in scored)

    def plots(self) -> pn.Column:
        """One row per drawn workload: its validation plot and its loss plot, drawn once as
        the dashboard draws them (views.live: a multi-line of whole runs; HoloViews cuts a
        line with hover into a glyph per segment, which made the v0.5 report's Curves tab
        18,000 arrays, 3.8 MB, and slow to open)."""
        runs = shown_curve_runs(self.selection)
        drawn = self._drawn(runs)
        if not drawn:
            return pn.Column(pn.pane.Markdown("No runs to draw with the current selection."))
        return pn.Column(*[self._static_row(w) for w in drawn], sizing_mode="stretch_width")

    def _static_row(self, workload: str) -> pn.Row:
        """The report's plots of `workload`, or a note in place of one with nothing to draw."""
        colors = self.selection.colors
        validation = LivePlot(xlabel="", ylabel="", height=400, y_range=(0, 1), legend=False,
                              points=True, bands=True, hover=("at", "validation", "run"),
                              css_classes=["pb-curve"])
        loss = loss_data(self.selection, workload)
        losses = LivePlot(xlabel="", ylabel="loss", height=400, y_log=loss["log"], legend=False,
                          bands=True, hover=("at", "loss", ""), css_classes=["pb-loss"])
        drawn = (_draw_validation(validation, validation_data(
            self.selection, workload, self.full_range), colors, self.every_run),
                 _draw_loss(losses, loss, colors, self.every_run))
        notes = ("validation metric", "training loss")
        return pn.Row(*[plot.pane if ok else pn.pane.Markdown(
            f"*{md(workload)}: no {what} recorded for the drawn runs.*",
            sizing_mode="stretch_width") for plot, ok, what in zip((validation, losses), drawn,
                                                                      notes)],
            sizing_mode="stretch_width")

    def __panel__(self) -> pn.viewable.Viewable:
        live = self.one_workload  # the served dashboard: a sidebar and widgets that work
        return pn.Column(
            pn.pane.Markdown(
                f"### Learning curves\nPer algorithm (by colour) the median of its drawn runs, "
                f"the shaded band their middle half (25th to 75th percentile), until half of "
                f"them have ended" + ("; tick *Every run* for a line per run" if live else "")
                + ". The dashed line is the validation target (one no drawn run came near sits "
                f"at the plot's edge, labelled), a dot marks a run's first eval that met it and "
                f"a cross the best eval of a run that never did; model-size ladder runs are "
                f"drawn against training tokens. Drawn per workload: all its runs when "
                f"it has at most {MAX_DEFAULT_CURVES}, else one per algorithm (the trial chosen "
                f"in its middle study among the studies that met the target; for an algorithm "
                f"that never met it, its closest run)"
                + (", and the runs picked in the sidebar besides" if live else "")
                + ". The validation axis is zoomed on the race to the target (the second half "
                "of each run" + ("; tick *Full range* for every value)." if live else ").")),
            pn.Row(pn.widgets.Select.from_param(self.param.workload, name="Workload", width=320,
                                                visible=live),
                   pn.widgets.Checkbox.from_param(self.param.full_range, name="Full range",
                                                  align="end", visible=live),
                   pn.widgets.Checkbox.from_param(self.param.every_run, name="Every run",
                                                  align="end", visible=live)),
            self._legend, self._body, sizing_mode="stretch_width")


def legend_html(selection: Selection, runs: pd.DataFrame) -> str:
    """One legend for every plot of the tab (it takes no plot's width): a swatch per drawn
    algorithm, in the colours of every tab, and what the marks mean. Names escaped."""
    colors = selection.colors
    items = [f'<span style="white-space:nowrap;margin-right:14px"><span style="display:'
             f'inline-block;width:22px;height:4px;vertical-align:middle;background:'
             f'{colors.get(a, "gray")}"></span> {html.escape(str(a))}</span>'
             for a in [a for a in colors if a in set(runs["algorithm"])]]
    marks = ('<span style="white-space:nowrap;color:#444">&#9473; median &nbsp; &#9618; '
             'middle half of the runs &nbsp; - - - target &nbsp; &#9679; first eval that met it '
             '&nbsp; &#10005; best eval of a run that missed</span>')
    return f'<div style="line-height:1.9">{"".join(items)}{marks}</div>'
