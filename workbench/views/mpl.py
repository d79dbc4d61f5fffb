"""The views' HoloViews plots drawn by Matplotlib: for papers (workbench/figures.py writes them
as PNG and SVG files) and for a notebook's static copy of a view (workbench/views/notebook.py).

The views style their plots with Bokeh options, which HoloViews keeps per backend: drawn by
Matplotlib as they are, a plot loses its colours, title, axis labels and log axes.
`to_matplotlib` restates those options for Matplotlib (the algorithm colours of
`Selection.colors` included) and `save_figure` draws one object at a paper size and DPI. SVG
text stays text (svg.fonttype "none"): labels can be edited and searched. A view may set
Matplotlib options of its own (`.opts(backend="matplotlib", ...)`, say a larger `fig_inches`
for a big heat map): those win over the restated ones.
"""
from __future__ import annotations

import contextlib
import io
import math
import os
from pathlib import Path
from typing import Iterable

import holoviews as hv
import matplotlib
import matplotlib.pyplot as plt
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.ticker import FixedFormatter, FixedLocator, Formatter, LogFormatter, NullFormatter

from workbench.errors import UserError

__all__ = ["FORMATS", "DPI", "SCREEN_DPI", "FIG_INCHES", "PANEL_INCHES", "check_formats",
           "to_matplotlib", "save_figure", "png_bytes", "tidy_tick_labels"]

FORMATS = ("png", "svg")     # what save_figure writes
DPI = 300                    # PNG resolution (print quality)
SCREEN_DPI = 100             # PNG resolution on a page
FIG_INCHES = (5.0, 3.2)      # one plot, before trimming to its content (a side legend adds width)
PANEL_INCHES = (3.4, 2.6)    # one panel of a layout of plots

_PX = 0.75  # a Bokeh screen pixel in Matplotlib points (96 px, 72 pt per inch)
_MARKERS = {"circle": "o", "square": "s", "triangle": "^", "diamond": "D", "cross": "+",
            "x": "x", "inverted_triangle": "v", "star": "*", "plus": "P", "dot": "."}
_UNFILLED = {"x", "+", "|", "_", "1", "2", "3", "4"}  # Matplotlib markers drawn as lines only
_DASHES = {"dotdash": "dashdot"}  # other Bokeh dash names (solid, dashed, ...) are Matplotlib's
_ALIGN = {"middle": "center", "alphabetic": "baseline", "hanging": "top", "ideographic": "bottom"}
# Plot options both backends know, whose values mean something else in each: not carried across.
_NOT_CARRIED = {"aspect", "backend_opts", "hooks", "initial_hooks", "fontsize", "xformatter",
                "yformatter", "cformatter", "gridstyle", "legend_opts", "colorbar_opts",
                "projection", "data_aspect"}
_GRID = {"grid_color": "0.88", "grid_linewidth": 0.6}  # light grid lines (drawn behind the data)


def _style(obj, bokeh: dict, allowed: set[str]) -> dict:
    """Matplotlib style options of element `obj` for its Bokeh style options `bokeh`."""
    out = {}
    for key, value in bokeh.items():
        if key in ("color", "alpha", "cmap", "visible"):
            out[key] = value
        elif key == "line_width":
            out["linewidth"] = value * _PX
        elif key == "line_dash" and isinstance(value, str):
            out["linestyle"] = _DASHES.get(value, value)
        elif key == "size" and "s" in allowed:
            out["s"] = (value * _PX) ** 2  # Bokeh: diameter in px; Matplotlib: area in pt^2
        elif key == "marker":
            out["marker"] = _MARKERS.get(value, value)
        elif key == "line_color":
            out["edgecolors" if "edgecolors" in allowed else "edgecolor"] = value
        elif key == "text_color":
            out["color"] = value
        elif key == "text_font_size" and str(value).endswith("pt"):
            out["size"] = float(str(value)[:-2])
        elif key == "text_align":
            out["horizontalalignment"] = value
        elif key == "text_baseline":
            out["verticalalignment"] = _ALIGN.get(value, value)
        elif key == "angle":
            out["rotation"] = value
    if out.get("marker") in _UNFILLED:  # Matplotlib warns when these get an edge colour
        out["edgecolors"] = None
    if isinstance(out.get("cmap"), dict) and isinstance(out.get("color"), str) \
            and obj.get_dimension(out["color"]) is not None:
        # Colour by category as explicit colours: a categorical colour mapping would make
        # Matplotlib add a legend of its own, whatever show_legend says.
        out["color"] = hv.dim(out["color"]).categorize(out.pop("cmap"), default="gray")
    return {k: v for k, v in out.items() if k in allowed}


def _translated(obj, extra: dict | None = None):
    """A copy of `obj` (an element or a container) whose Matplotlib options restate its Bokeh
    ones, plus `extra` (Matplotlib options)."""
    groups = hv.Store.options(backend="matplotlib")[type(obj).__name__].groups
    plot_ok = set(groups["plot"].allowed_keywords) if "plot" in groups else set()
    style_ok = set(groups["style"].allowed_keywords) if "style" in groups else set()
    plot = hv.Store.lookup_options("bokeh", obj, "plot").kwargs
    style = hv.Store.lookup_options("bokeh", obj, "style").kwargs
    options = {k: v for k, v in plot.items() if k in plot_ok and k not in _NOT_CARRIED}
    options.update(_style(obj, style, style_ok))
    if isinstance(obj, hv.Bars) and len(obj.kdims) > 1:
        # Bokeh nests the second category under the first on the axis; Matplotlib's nested
        # labels overlap, so there the second category goes to a legend beside the plot
        options.update(multi_level=False, show_legend=True, legend_position="right")
    options.update({k: v for k, v in (extra or {}).items() if k in plot_ok | style_ok})
    for key in _own_matplotlib_options(obj):  # what the view set for Matplotlib itself wins
        options.pop(key, None)
    copy = obj.clone()
    if isinstance(obj, hv.Labels):  # Matplotlib's labels add offsets in place: integer x fails
        copy = obj.clone(obj.dframe().astype({d.name: float for d in obj.kdims}))
    return copy.opts(backend="matplotlib", **options)


def _own_matplotlib_options(obj) -> set[str]:
    """Names of the Matplotlib options set on `obj` itself (not HoloViews' defaults)."""
    defaults = hv.Store.options(backend="matplotlib")[type(obj).__name__].groups
    own = set()
    for group in ("plot", "style"):
        base = defaults[group].kwargs if group in defaults else {}
        options = hv.Store.lookup_options("matplotlib", obj, group).kwargs
        own |= {k for k, v in options.items() if k not in base or base[k] is not v}
    return own


def _with_grid(obj):
    """Matplotlib draws a grid from each element's show_grid, never from its overlay's: an
    element that asks for a grid, or sits in an overlay that does, gets a light one."""
    grid = hv.Store.lookup_options("bokeh", obj, "plot").kwargs.get("show_grid")
    if isinstance(obj, hv.Element):
        return obj.opts(backend="matplotlib", gridstyle=_GRID, clone=True) if grid else obj
    return obj.map(lambda el: el.opts(backend="matplotlib", show_grid=True, gridstyle=_GRID,
                                      clone=True), hv.Element) if grid else obj


def _size(obj) -> dict:
    """Figure size: FIG_INCHES for one plot, PANEL_INCHES per panel for a layout."""
    if isinstance(obj, hv.Layout):
        cols = min(len(obj), obj._max_cols or len(obj))  # HoloViews keeps .cols(n) only there
        rows = math.ceil(len(obj) / cols)
        return {"fig_inches": (PANEL_INCHES[0] * cols, PANEL_INCHES[1] * rows),
                "vspace": 0.45,  # room for a panel's title under the x label of the one above
                "sublabel_format": None}  # no "A", "B" panel letters: the titles name them
    return {"fig_inches": FIG_INCHES}


def to_matplotlib(obj):
    """The same plot, styled for Matplotlib: colours, line styles, markers, colour maps, titles,
    axis labels, limits, ticks, log axes and legends restated; a paper size on the top object."""
    hv.renderer("matplotlib")  # loads the backend once; Bokeh stays the current one
    # aspect "auto": the axes fill the figure (a numeric aspect comes out wrong on log axes)
    translated = obj.map(lambda o: _translated(o, {"aspect": "auto"}), specs=None)
    translated = translated.map(_with_grid, [hv.Overlay, hv.Element])
    size = {k: v for k, v in _size(obj).items() if k not in _own_matplotlib_options(obj)}
    return translated.opts(backend="matplotlib", clone=True, **size)


def save_figure(obj, stem: str | os.PathLike, formats: str | Iterable[str] = FORMATS,
                dpi: int = DPI) -> list[Path]:
    """Draw `obj` with Matplotlib and write `stem`.png and/or `stem`.svg; returns the paths."""
    formats = check_formats(formats)
    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    paths = [stem.with_name(f"{stem.name}.{fmt}") for fmt in formats]
    with _drawn(obj) as figure:
        for fmt, path in zip(formats, paths):
            figure.savefig(path, format=fmt, dpi=dpi, bbox_inches="tight",
                           metadata={"Date": None} if fmt == "svg" else None)
    return paths


def png_bytes(obj, dpi: int = SCREEN_DPI) -> bytes:
    """`obj` drawn by Matplotlib as save_figure draws it, as PNG bytes (for a page: a
    notebook's static copy of a view)."""
    buffer = io.BytesIO()
    with _drawn(obj) as figure:
        figure.savefig(buffer, format="png", dpi=dpi, bbox_inches="tight")
    return buffer.getvalue()


@contextlib.contextmanager
def _drawn(obj):
    """The Matplotlib figure of `obj` (to_matplotlib), closed after the block."""
    # fonttype "none": SVG text as <text>, not glyph outlines; hashsalt: the same element ids
    # each time the same figure is written
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "pacebench"}):
        figure = hv.render(to_matplotlib(obj), backend="matplotlib")
        try:
            for axes in figure.axes:  # grid and ticks behind the data (HoloViews' zorder: 0, 1..)
                axes.xaxis.set_zorder(-1)
                axes.yaxis.set_zorder(-1)
            tidy_tick_labels(figure)
            yield figure
        finally:
            plt.close(figure)


class _PlainLog(Formatter):
    """The ticks a log formatter labels, labelled 0.2, 3, 1e+04 instead of 2x10^-1 (mathtext
    four times as wide, which ran into each other on an axis under two decades)."""

    def __init__(self, inner: LogFormatter) -> None:
        self.inner = inner

    def set_axis(self, axis) -> None:
        super().set_axis(axis)
        self.inner.set_axis(axis)

    def set_locs(self, locs) -> None:
        self.inner.set_locs(locs)

    def __call__(self, x, pos=None) -> str:
        return f"{x:g}" if self.inner(x, pos) else ""


def _number(text: str) -> bool:
    try:
        float(text.replace("\N{MINUS SIGN}", "-").strip("$"))
        return True
    except ValueError:
        return False


def _in_view(axis, which: str = "major") -> list[tuple[float, object]]:
    """(tick value, its label) of the `which` ticks of `axis` inside the axis's view, whose
    label shows some text, in the order they are drawn."""
    low, high = sorted(axis.get_view_interval())
    locs = axis.get_majorticklocs() if which == "major" else axis.get_minorticklocs()
    pairs = zip(locs, axis.get_ticklabels(which=which))
    span = (high - low) * 1e-9
    return [(loc, label) for loc, label in pairs if low - span <= loc <= high + span
            and label.get_visible() and label.get_text().strip()]


def _overlapping(labels: list, renderer) -> bool:
    boxes = [label.get_window_extent(renderer) for label in labels]
    return any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:])


def _thin(axis, renderer) -> None:
    """Blank each numeric tick label (major or minor) that would run into the one kept before
    it, in drawing order (the ticks stay): a figure at paper size has room for fewer labels
    than Matplotlib places."""
    shown = {which: _in_view(axis, which) for which in ("major", "minor")}
    every = sorted(((label.get_window_extent(renderer), loc) for pairs in shown.values()
                    for loc, label in pairs),
                   key=lambda item: item[0].x0 if axis.axis_name == "x" else item[0].y0)
    kept, last = set(), None
    for box, loc in every:
        if last is None or not box.overlaps(last):
            kept.add(loc)
            last = box
    for which, pairs in shown.items():
        locs = [loc for loc, _ in pairs]
        getattr(axis, f"set_{which}_locator")(FixedLocator(locs))
        getattr(axis, f"set_{which}_formatter")(FixedFormatter(
            [label.get_text() if loc in kept else "" for loc, label in pairs]))


def tidy_tick_labels(figure) -> None:
    """No tick label of `figure` drawn over another: log axes labelled as plain numbers, their
    minor ticks left unlabelled where two major ticks are labelled; overlapping numbers
    thinned (_thin); overlapping names on an x axis (a parallel-coordinates plot's
    hyperparameters) turned to 30 degrees."""
    if not hasattr(figure.canvas, "get_renderer"):
        FigureCanvasAgg(figure)  # HoloViews leaves a canvas that cannot measure text
    every_axis = [axis for axes in figure.axes for axis in (axes.xaxis, axes.yaxis)]
    for axis in every_axis:
        for which in ("major", "minor"):
            formatter = getattr(axis, f"get_{which}_formatter")()
            if isinstance(formatter, LogFormatter):
                getattr(axis, f"set_{which}_formatter")(_PlainLog(formatter))
    # laid out (ticks placed, text measured) without painting a pixel: a third of the time of
    # a canvas draw, which the figure gets when it is saved
    figure.draw_without_rendering()
    for axis in every_axis:
        if len(_in_view(axis)) >= 2:
            axis.set_minor_formatter(NullFormatter())
    figure.draw_without_rendering()
    renderer = figure.canvas.get_renderer()
    for axis in every_axis:
        labels = [label for which in ("major", "minor") for _, label in _in_view(axis, which)]
        if not _overlapping(labels, renderer):
            continue
        if all(_number(label.get_text()) for label in labels):
            _thin(axis, renderer)
        elif axis.axis_name == "x":
            for label in axis.get_ticklabels():
                label.set(rotation=30, horizontalalignment="right", rotation_mode="anchor")


def check_formats(formats: str | Iterable[str]) -> tuple[str, ...]:
    """`formats` ("png,svg" or a list) as a tuple; an error naming the valid ones if any is
    unknown or none is given."""
    items = formats.split(",") if isinstance(formats, str) else formats
    formats = tuple(f.strip() for f in items if f.strip())
    unknown = [f for f in formats if f not in FORMATS]
    if unknown or not formats:
        raise UserError(f"unknown figure format(s) {', '.join(map(repr, unknown)) or '(none)'}: "
                        f"valid are {', '.join(FORMATS)}")
    return formats
