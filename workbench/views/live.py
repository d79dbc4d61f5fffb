"""Plots of the served dashboard made once and redrawn in place.

HoloViews builds every Bokeh model of a plot again on each redraw (about 17 ms per line of an
overlay: seconds for a tab of 20 algorithms on 500-point lines). A LivePlot is a plain Bokeh
figure made once with one glyph for all its lines (a multi-line) or all its stacked areas
(patches): a redraw assigns new columns to that glyph's data source, which the browser receives
as one message, and the legend follows the data (one entry per label, in order). The paper
figures (workbench.figures) keep HoloViews, drawn once, from the same data.
"""
from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np
import panel as pn
from bokeh.models import (BasicTickFormatter, ColumnDataSource, FixedTicker, HoverTool,
                          Range1d)
from bokeh.plotting import figure

__all__ = ["LivePlot", "Line", "steps", "stacked_areas"]

# (label, colour, x values, y values): one line (NaN in y breaks it) or one area's outline.
Line = tuple[str, str, Sequence[float], Sequence[float]]
LINE_WIDTH = 2.5


class LivePlot:
    """A figure drawing labelled, coloured lines (or, with `areas`, filled outlines) that
    `draw` replaces in place; `pane` is what a layout holds (and shows or hides)."""

    def __init__(self, *, xlabel: str, ylabel: str, height: int = 320,
                 y_range: tuple[float, float] | None = None,
                 x_range: tuple[float, float] | None = None, areas: bool = False,
                 css_classes: Iterable[str] = ()) -> None:
        fig = figure(height=height, sizing_mode="stretch_width", title="",
                     tools="pan,wheel_zoom,box_zoom,reset,save", toolbar_location="above")
        if y_range is not None:
            fig.y_range = Range1d(*y_range)
        if x_range is not None:  # draw(xlim=...) moves it
            fig.x_range = Range1d(*x_range)
        fig.xaxis.axis_label, fig.yaxis.axis_label = xlabel, ylabel
        for axis in (fig.xaxis, fig.yaxis):
            axis.formatter = BasicTickFormatter(use_scientific=False)
        self.source = ColumnDataSource({"xs": [], "ys": [], "label": [], "color": [],
                                        "width": [], "alpha": []})
        if areas:
            glyph = fig.patches("xs", "ys", source=self.source, fill_color="color",
                                fill_alpha=0.85, line_width=0, legend_field="label")
        else:
            glyph = fig.multi_line("xs", "ys", source=self.source, line_color="color",
                                   line_width="width", line_alpha="alpha",
                                   legend_field="label")
            fig.add_tools(HoverTool(renderers=[glyph], tooltips=[
                ("", "@label"), (xlabel, "$x{0,0.[00]}"), (ylabel, "$y{0,0.[000]}")]))
        legend = fig.legend[0]
        legend.label_text_font_size = "11px"
        fig.add_layout(legend, "right")
        self.figure, self._ticker = fig, None
        # in a Column, which is what a view shows and hides: Panel's Bokeh pane re-reads the
        # figure's properties on any change of its own, and fails on the figure's style sheets
        self.pane = pn.Column(pn.pane.Bokeh(fig, sizing_mode="stretch_width", min_height=height),
                              sizing_mode="stretch_width", css_classes=list(css_classes))

    def draw(self, lines: Iterable[Line], title: str, xticks: Sequence[float] | None = None,
             ylabel: str | None = None, widths: Sequence[float] | None = None,
             alphas: Sequence[float] | None = None,
             xlim: tuple[float, float] | None = None) -> None:
        """Show `lines` (and nothing else) under `title`; `xticks`: ticks at exactly these
        values (default: Bokeh's); `ylabel`: a new label of the y axis; `widths` and `alphas`:
        each line's (default: LINE_WIDTH, opaque); `xlim`: the x range of a plot made with
        one."""
        lines = list(lines)
        self.source.data = {
            "xs": [np.asarray(x, dtype=float) for _, _, x, _ in lines],
            "ys": [np.asarray(y, dtype=float) for _, _, _, y in lines],
            "label": [str(label) for label, _, _, _ in lines],
            "color": [color for _, color, _, _ in lines],
            "width": list(widths) if widths is not None else [LINE_WIDTH] * len(lines),
            "alpha": list(alphas) if alphas is not None else [1.0] * len(lines)}
        self.figure.title.text = title
        if ylabel is not None:
            self.figure.yaxis.axis_label = ylabel
        if xlim is not None:
            self.figure.x_range.update(start=xlim[0], end=xlim[1])
        if xticks is not None:
            ticks = [float(t) for t in xticks]
            if self._ticker is None:
                self._ticker = FixedTicker(ticks=ticks)
                self.figure.xaxis.ticker = self._ticker
            else:
                self._ticker.ticks = ticks


def steps(x: Sequence[float], y: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    """The corners of a right-continuous step line through (x, y): each value holds until
    the next x (what HoloViews draws as interpolation="steps-post")."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
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
