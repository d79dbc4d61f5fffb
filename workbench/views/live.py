"""Plots of the served dashboard made once and redrawn in place.

HoloViews builds every Bokeh model of a plot again on each redraw (about 17 ms per line of an
overlay: seconds for a tab of 20 algorithms on 500-point lines). A LivePlot is a plain Bokeh
figure made once with one glyph for all its lines (a multi-line) or all its stacked areas
(patches), and optionally one for points: a redraw assigns new columns to the glyphs' data
sources, which the browser receives as one message each, and the legend follows the data (one
entry per label, in order). The paper figures (workbench.figures) keep HoloViews, drawn once
from the same data; a report embeds whichever its views draw.
"""
from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np
import panel as pn
from bokeh.models import (BasicTickFormatter, ColorBar, ColumnDataSource, FixedTicker,
                          HoverTool, Label, LogColorMapper, Range1d, Span)
from bokeh.plotting import figure

__all__ = ["LivePlot", "LiveHeatMap", "Line", "Point", "Rule", "steps", "stacked_areas",
           "LINE_WIDTH"]

# (label, colour, x values, y values): one line (NaN in y breaks it) or one area's outline.
Line = tuple[str, str, Sequence[float], Sequence[float]]
# (label, colour, x, y, what the hover names it by): one point, a dot of size 6; or with
# (..., marker, size, outline colour) another mark.
Point = tuple
_POINT_KEYS = ("group", "color", "x", "y", "note", "marker", "size", "line")
_DOT = ("circle", 6)
# (where, dash): a black rule across the plot at one value, e.g. (0.98, "dashed").
Rule = tuple[float, str]
LINE_WIDTH = 2.5


class LivePlot:
    """A figure drawing labelled, coloured lines (or, with `areas`, filled outlines) and, with
    `points`, labelled points, that `draw` replaces in place; `pane` is what a layout holds
    (and shows or hides)."""

    def __init__(self, *, xlabel: str, ylabel: str, height: int = 320,
                 y_range: tuple[float, float] | None = None,
                 x_range: tuple[float, float] | None = None, areas: bool = False,
                 points: bool = False, x_log: bool = False, y_log: bool = False,
                 legend: bool = True, hover: tuple[str, str, str] | None = None,
                 dashes: bool = False, legend_below: bool = False, bands: bool = False,
                 css_classes: Iterable[str] = ()) -> None:
        """`hover`: what the hover names x, y and a point's note (default: the axis labels
        and "run"); an empty name leaves its line out. `dashes`: each line has its own dash
        pattern (draw's `dashes`). `legend_below`: the legend under the plot, not at its right
        (for long labels, which would narrow the plot). `bands`: shaded bands under the lines
        (draw's `bands`, e.g. interquartile ranges). The figure is made at the first draw
        (or use of `figure`): a dashboard holds a dozen, most in tabs never opened."""
        self._options = dict(xlabel=xlabel, ylabel=ylabel, height=height, y_range=y_range,
                             x_range=x_range, areas=areas, points=points, x_log=x_log,
                             y_log=y_log, legend=legend, hover=hover, dashes=dashes,
                             legend_below=legend_below, bands=bands)
        self._figure: figure | None = None
        self._ticks: dict[str, FixedTicker] = {}
        # in a Column, which is what a view shows and hides: Panel's Bokeh pane re-reads the
        # figure's properties on any change of its own, and fails on the figure's style sheets
        self.pane = pn.Column(sizing_mode="stretch_width", css_classes=list(css_classes))

    @property
    def figure(self) -> figure:
        """The Bokeh figure, made now if it was not yet."""
        return self._made()

    def make(self) -> None:
        """Make the figure now if it was not yet: where a view shows one of two plots, making
        both when its tab opens keeps the other's making (and the page's new models) out of
        a later filter change."""
        self._made()

    def _made(self) -> figure:
        if self._figure is None:
            self._figure = self._make(**self._options)
            self.pane.append(pn.pane.Bokeh(self._figure, sizing_mode="stretch_width",
                                           min_height=self._options["height"]))
        return self._figure

    def _make(self, *, xlabel, ylabel, height, y_range, x_range, areas, points, x_log, y_log,
              legend, hover, dashes, legend_below, bands) -> figure:
        """The figure and its data sources (self.source, .points, .marks, .background)."""
        fig = figure(height=height, sizing_mode="stretch_width", title="",
                     x_axis_type="log" if x_log else "linear",
                     y_axis_type="log" if y_log else "linear",
                     tools="pan,wheel_zoom,box_zoom,reset,save", toolbar_location="above")
        if y_range is not None:  # draw(ylim=...) moves it
            fig.y_range = Range1d(*y_range)
        if x_range is not None:  # draw(xlim=...) moves it
            fig.x_range = Range1d(*x_range)
        fig.xaxis.axis_label, fig.yaxis.axis_label = xlabel, ylabel
        x_name, y_name, note = hover or (xlabel, ylabel, "run")
        for axis in (fig.xaxis, fig.yaxis):  # no 1.000e-5 on an axis (a model per figure:
            axis.formatter = BasicTickFormatter(use_scientific=False)  # one document each)
        self.bands = ColumnDataSource({"xs": [], "ys": [], "color": []})
        if bands:  # under every line
            fig.patches("xs", "ys", source=self.bands, fill_color="color", fill_alpha=0.18,
                        line_width=0)
        self.background = ColumnDataSource({"x": [], "y": []})
        fig.line("x", "y", source=self.background, color="gray", alpha=0.35, line_width=1)
        self.source = ColumnDataSource({"xs": [], "ys": [], "label": [], "color": [],
                                        "width": [], "alpha": [], "dash": []})
        legend_of = (lambda field: {"legend_field": field}) if legend else (lambda _: {})
        if areas:
            fig.patches("xs", "ys", source=self.source, fill_color="color", fill_alpha=0.85,
                        line_width=0, **legend_of("label"))
        else:
            lines = fig.multi_line("xs", "ys", source=self.source, line_color="color",
                                   line_width="width", line_alpha="alpha",
                                   **({"line_dash": "dash"} if dashes else {}),
                                   **legend_of("label"))
            fig.add_tools(HoverTool(renderers=[lines], tooltips=_tooltips(
                [("", "@label"), (x_name, "$x{0,0.[0000]}"), (y_name, "$y{0,0.[0000]}")])))
        # "group", not "label": legend items of two glyphs on one field would merge into one
        self.points = ColumnDataSource({key: [] for key in _POINT_KEYS})
        self.marks = ColumnDataSource({"x": [], "y": []})
        if points:
            dots = fig.scatter("x", "y", source=self.points, fill_color="color",
                               line_color="line", marker="marker", size="size", line_width=1.5,
                               alpha=0.8, **legend_of("group"))
            fig.scatter("x", "y", source=self.marks, fill_alpha=0, line_color="black",
                        line_width=2, size=12)
            fig.add_tools(HoverTool(renderers=[dots], tooltips=_tooltips(
                [("", "@group"), (note, "@note"), (x_name, "@x{0,0.[000000]}"),
                 (y_name, "@y{0,0.[0000]}")])))
        self._rules = {dim: Span(dimension=dim, line_color="black", line_width=1.5,
                                 visible=False) for dim in ("width", "height")}
        for rule in self._rules.values():
            fig.add_layout(rule)
        # what the horizontal rule is (draw's hline_label): at its left end, above it
        self._rule_label = Label(x=6, y=0, x_units="screen", y_units="data", text="",
                                 text_font_size="11px", text_color="black", y_offset=3,
                                 background_fill_color="white", background_fill_alpha=0.7,
                                 visible=False)
        fig.add_layout(self._rule_label)
        if legend:
            fig.legend[0].label_text_font_size = "11px"
            fig.add_layout(fig.legend[0], "below" if legend_below else "right")
        return fig

    def draw(self, lines: Iterable[Line], title: str, *, xticks: Sequence[float] | None = None,
             yticks: Sequence[float] | None = None, ytick_labels: Sequence[str] | None = None,
             xlabel: str | None = None, ylabel: str | None = None,
             widths: Sequence[float] | None = None, alphas: Sequence[float] | None = None,
             dashes: Sequence[str] | None = None, xlim: tuple[float, float] | None = None, ylim: tuple[float, float] | None = None,
             points: Iterable[Point] = (), marks: tuple[Sequence, Sequence] = ((), ()),
             background: tuple[Sequence, Sequence] = ((), ()), hline: Rule | None = None,
             vline: Rule | None = None, flip_x: bool = False, hline_label: str = "",
             bands: Iterable[tuple[str, Sequence, Sequence, Sequence]] = ()) -> None:
        """Show `lines` and `points` (and nothing else) under `title`.

        `xticks`, `yticks`: ticks at exactly these values (default: Bokeh's), the y ones
        named `ytick_labels` if given (drawn as text, never markup); `xlabel`, `ylabel`: new
        axis labels; `widths`, `alphas`, `dashes`: each line's (default LINE_WIDTH, opaque, solid; dashes
        drawn by a plot made with `dashes`); `xlim`,
        `ylim`: the ranges of a plot made with them; `marks`: (x, y) of points ringed in
        black; `background`: (x, y) of one thin grey line (NaN breaks it); `hline`, `vline`:
        black rules, `hline_label` the text over the horizontal one; `flip_x`: the x axis runs
        right to left; `bands`: (colour, x, low, high) of shaded bands (a plot made with
        `bands`; NaNs left out)."""
        lines, points = list(lines), list(points)
        self._made()
        _assign(self.source, {
            "xs": [_drawable(x) for _, _, x, _ in lines],
            "ys": [_drawable(y) for _, _, _, y in lines],
            "label": [str(label) for label, _, _, _ in lines],
            "color": [color for _, color, _, _ in lines],
            "width": list(widths) if widths is not None else [LINE_WIDTH] * len(lines),
            "alpha": list(alphas) if alphas is not None else [1.0] * len(lines),
            "dash": list(dashes) if dashes is not None else ["solid"] * len(lines)})
        points = [p if len(p) == 8 else (*p, *_DOT, p[1]) for p in points]
        points = [p for p in points if np.isfinite(p[2]) and np.isfinite(p[3])]
        _assign(self.points, {key: [p[i] for p in points] for i, key in enumerate(_POINT_KEYS)})
        _assign(self.marks, {"x": list(marks[0]), "y": list(marks[1])})
        _assign(self.background, {"x": np.asarray(background[0], dtype=float),
                                  "y": np.asarray(background[1], dtype=float)})
        for rule, given in ((self._rules["width"], hline), (self._rules["height"], vline)):
            if given is not None:
                rule.update(location=float(given[0]), line_dash=given[1])
            rule.visible = given is not None
        shown = bool(hline_label) and hline is not None
        self._rule_label.update(text=hline_label if shown else "", visible=shown,
                                **({"y": float(hline[0])} if shown else {}))
        band_xs, band_ys, band_colors = [], [], []
        for color, x, low, high in bands:
            x, low, high = (np.asarray(v, dtype=float) for v in (x, low, high))
            keep = np.isfinite(x) & np.isfinite(low) & np.isfinite(high)
            if keep.sum() >= 2:
                band_xs.append(np.concatenate([x[keep], x[keep][::-1]]))
                band_ys.append(np.concatenate([high[keep], low[keep][::-1]]))
                band_colors.append(color)
        _assign(self.bands, {"xs": band_xs, "ys": band_ys, "color": band_colors})
        self._decorate(title, xlabel, ylabel, xlim, ylim, flip_x)
        self._tick("x", xticks)
        self._tick("y", yticks)
        if ytick_labels is not None:
            self.figure.yaxis.major_label_overrides = {
                float(t): str(label) for t, label in zip(yticks, ytick_labels)}

    def _tick(self, dim: str, ticks: Sequence[float] | None) -> None:
        """Ticks of axis `dim` at exactly `ticks` (one FixedTicker per axis, changed in place)."""
        if ticks is None:
            return
        values = [float(t) for t in ticks]
        if self._options[f"{dim}_log"]:  # each decade as itself: the axis formatter's one
            axis = self.figure.xaxis if dim == "x" else self.figure.yaxis  # precision for
            axis.major_label_overrides = {t: f"{t:g}" for t in values}  # all printed 1e-4 as 0
        if dim not in self._ticks:
            self._ticks[dim] = FixedTicker(ticks=values)
            axis = self.figure.xaxis if dim == "x" else self.figure.yaxis
            axis.ticker = self._ticks[dim]
        else:
            self._ticks[dim].ticks = values

    def _decorate(self, title, xlabel, ylabel, xlim, ylim, flip_x) -> None:
        fig = self.figure
        fig.title.text = title
        if xlabel is not None:
            fig.xaxis.axis_label = xlabel
        if ylabel is not None:
            fig.yaxis.axis_label = ylabel
        for given, axis_range in ((xlim, fig.x_range), (ylim, fig.y_range)):
            if given is not None:
                axis_range.update(start=given[0], end=given[1])
        if not isinstance(fig.x_range, Range1d):
            fig.x_range.flipped = flip_x


class LiveHeatMap:
    """Cells on an integer grid (columns left to right, rows bottom to top, named by the axis
    ticks) coloured on a log scale between `low` and `high` (grey: no value), each with a
    text in its own ink colour; `draw` replaces them in place."""

    def __init__(self, *, xlabel: str, palette: Sequence[str], low: float, high: float,
                 colorbar_title: str, hover: tuple[str, str, str],
                 css_classes: Iterable[str] = ()) -> None:
        """The figure is made at the first draw, as LivePlot's."""
        self._options = dict(xlabel=xlabel, palette=palette, low=low, high=high,
                             colorbar_title=colorbar_title, hover=hover)
        self._figure: figure | None = None
        self.pane = pn.Column(sizing_mode="stretch_width", css_classes=list(css_classes))

    @property
    def figure(self) -> figure:
        """The Bokeh figure, made now if it was not yet."""
        if self._figure is None:
            self._figure = self._make(**self._options)
            self.pane.append(pn.pane.Bokeh(self._figure, sizing_mode="stretch_width",
                                           min_height=240))
        return self._figure

    def _make(self, *, xlabel, palette, low, high, colorbar_title, hover) -> figure:
        """The figure, its data source (self.source) and its axes' tickers."""
        mapper = LogColorMapper(palette=list(palette), low=low, high=high, nan_color="#dddddd")
        fig = figure(height=240, sizing_mode="stretch_width", title="", tools="save",
                     toolbar_location="above", x_range=Range1d(-0.5, 0.5),
                     y_range=Range1d(-0.5, 0.5))
        self.source = ColumnDataSource({key: [] for key in _CELL_KEYS})
        cells = fig.rect("column", "row", 1, 1, source=self.source, line_color="white",
                         fill_color={"field": "value", "transform": mapper})
        fig.text("column", "row", text="text", text_color="ink", text_align="center",
                 text_baseline="middle", text_font_size="9pt", source=self.source)
        fig.add_layout(ColorBar(color_mapper=mapper, title=colorbar_title), "right")
        fig.add_tools(HoverTool(renderers=[cells], tooltips=[
            (hover[0], "@row_name"), (hover[1], "@column_name"), (hover[2], "@text")]))
        fig.xaxis.axis_label, fig.xaxis.major_label_orientation = xlabel, 0.6
        fig.grid.visible = False
        self._ticks = {dim: FixedTicker(ticks=[]) for dim in ("x", "y")}
        fig.xaxis.ticker, fig.yaxis.ticker = self._ticks["x"], self._ticks["y"]
        return fig

    def draw(self, cells: dict[str, Sequence], rows: Sequence[str], columns: Sequence[str],
             title: str) -> None:
        """`cells`: columns "column" and "row" (grid positions), "value" (NaN: grey), "text",
        "ink"; `rows` and `columns` name the positions."""
        rows, columns, fig = [str(r) for r in rows], [str(c) for c in columns], self.figure
        self.source.data = {**{key: list(cells[key]) for key in _CELL_KEYS[:5]},
                            "row_name": [rows[int(i)] for i in cells["row"]],
                            "column_name": [columns[int(i)] for i in cells["column"]]}
        for dim, names, axis, axis_range in (("x", columns, fig.xaxis, fig.x_range),
                                             ("y", rows, fig.yaxis, fig.y_range)):
            self._ticks[dim].ticks = list(range(len(names)))
            axis.major_label_overrides = dict(enumerate(names))
            axis_range.update(start=-0.5, end=len(names) - 0.5)
        fig.title.text, fig.height = title, 170 + 34 * len(rows)


_CELL_KEYS = ("column", "row", "value", "text", "ink", "row_name", "column_name")


def _assign(source: ColumnDataSource, data: dict) -> None:
    """Give `source` `data`, unless it holds that already: every assignment is sent to the
    browser, which redraws the plot (a filter change that leaves a plot as it was, or an empty
    layer empty, costs nothing)."""
    if not _same_data(source.data, data):
        source.data = data


def _same_data(old: dict, new: dict) -> bool:
    """Whether two data-source columns dicts hold the same values (NaN equal to NaN)."""
    if old.keys() != new.keys():
        return False
    for key, values in new.items():
        before = old[key]
        if len(before) != len(values):
            return False
        if len(values) and isinstance(values[0], (list, tuple, np.ndarray)):  # multi-line
            if not all(_same_column(a, b) for a, b in zip(before, values)):
                return False
        elif not _same_column(before, values):
            return False
    return True


def _same_column(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return False
    if a.dtype.kind == "f" and b.dtype.kind == "f":
        return bool(np.array_equal(a, b, equal_nan=True))
    try:
        return bool(np.array_equal(a, b))
    except (TypeError, ValueError):
        return False


def _drawable(values: Sequence[float]) -> np.ndarray:
    """`values` as floats, +-inf as NaN: a line breaks there instead of the plot's automatic
    range becoming infinite (a blank plot whose zoom no longer works: a diverged run's loss)."""
    values = np.asarray(values, dtype=float)
    return np.where(np.isinf(values), np.nan, values)


def _tooltips(rows: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Hover rows, leaving out those named "" (but the first: the line's or point's label)."""
    return rows[:1] + [row for row in rows[1:] if row[0]]


def steps(x: Sequence[float], y: Sequence[float], mid: bool = False
          ) -> tuple[np.ndarray, np.ndarray]:
    """The corners of a step line through (x, y): each value holds until the next x (what
    HoloViews draws as interpolation="steps-post"), or with `mid` from halfway to the previous
    x to halfway to the next ("steps-mid")."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if mid and len(x) > 1:
        edges = np.concatenate([x[:1], (x[1:] + x[:-1]) / 2, x[-1:]])
        return np.repeat(edges, 2)[1:-1], np.repeat(y, 2)
    return np.repeat(x, 2)[1:], np.repeat(y, 2)[:-1]


def stacked_areas(x: Sequence[float], layers: Iterable[tuple[str, str, Sequence[float]]]
                  ) -> list[Line]:
    """Outlines of areas stacked in order, each (label, colour, height at each x): for
    LivePlot(areas=True)."""
    x = np.asarray(x, dtype=float)
    below = np.zeros(len(x))
    out = []
    for label, color, height in layers:
        above = below + np.nan_to_num(np.asarray(height, dtype=float))
        out.append((label, color, np.concatenate([x, x[::-1]]),
                    np.concatenate([above, below[::-1]])))
        below = above
    return out
