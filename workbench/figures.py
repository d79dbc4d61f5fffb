"""Figures for papers: each view's plots written as PNG and SVG files by Matplotlib, no browser.

Protocol: a view that draws plots gives, in its registry entry (workbench/views/registry.py), a
function `figures(selection)` returning {name: HoloViews object} (names like "profiles",
"curves_digits_mlp"). How a plot styled for Bokeh is drawn by Matplotlib (`to_matplotlib`,
`save_figure`) is workbench/views/mpl.py's; here the figures of every view are collected and
written, a failure of one not stopping the others.
"""
from __future__ import annotations

import logging
import os
import re
from pathlib import Path
from typing import Iterable

import holoviews as hv

from workbench.errors import UserError
from workbench.views.mpl import (DPI, FIG_INCHES, FORMATS, PANEL_INCHES, check_formats,
                                 save_figure, to_matplotlib)
from workbench.views.registry import VIEWS, ViewEntry, view_entry
from workbench.views.selection import Selection

__all__ = ["FORMATS", "DPI", "FIG_INCHES", "PANEL_INCHES", "FigureError", "check_formats",
           "collect", "to_matplotlib", "save_figure", "write_figures"]

log = logging.getLogger(__name__)


def _entries(views: Iterable[str | ViewEntry] | None) -> list[ViewEntry]:
    """The registry entries of `views` (keys or entries; None: every view), in order; an
    unknown key is skipped with a logged note."""
    entries = []
    for view in VIEWS if views is None else views:
        if isinstance(view, ViewEntry):
            entries.append(view)
            continue
        try:
            entries.append(view_entry(view))
        except KeyError as exc:
            log.warning("figures: %s, skipped", exc.args[0])
    return entries


def collect(selection: Selection, views: Iterable[str | ViewEntry] | None = None
            ) -> dict[str, object]:
    """{name: HoloViews object} of every view's `figures(selection)`, in registry order.

    `views`: registry keys or entries (None: every view). A view without figures is skipped
    (with a logged note when it was asked for by name); a name given twice is an error (one
    would overwrite the other). The Matplotlib backend is loaded first, so `figures()` may set
    Matplotlib options.
    """
    hv.renderer("matplotlib")  # loads the backend once; Bokeh stays the current one
    out: dict[str, object] = {}
    for entry in _entries(views):
        if entry.figures is None:
            if views is not None:
                log.warning("figures: view %s has no figures, skipped", entry.key)
            continue
        for key, obj in entry.figures(selection).items():
            if key in out:
                raise ValueError(f"figure name {key!r} is given by two views")
            out[key] = obj
    return out


class FigureError(UserError):
    """Some figures could not be made; the others were written."""


def write_figures(selection: Selection, folder: str | os.PathLike,
                  formats: str | Iterable[str] = FORMATS, dpi: int = DPI,
                  views: Iterable[str | ViewEntry] | None = None) -> dict[str, list[Path]]:
    """Write every view's figures of `selection` into `folder`; returns {name: paths written}.

    `views`: registry keys or entries (None: every view with figures, the others passed over
    without a note: a leaderboard draws no plots, and nobody asked for its figures). A view or
    a figure that fails does not stop the others: once all are tried, FigureError names each
    failure and its cause.
    """
    formats = check_formats(formats)
    folder = Path(folder)
    written, failed = {}, []
    for entry in _entries(views):
        if views is None and entry.figures is None:
            continue
        try:
            figures = collect(selection, [entry])
        except Exception as exc:  # noqa: BLE001 -- reported below, with the view's name
            failed.append(f"{entry.key}.figures(): {type(exc).__name__}: {exc}")
            continue
        for name, obj in figures.items():
            if name in written:
                raise ValueError(f"figure name {name!r} is given by two views")
            try:
                written[name] = save_figure(obj, folder / _file_name(name), formats, dpi)
            except Exception as exc:  # noqa: BLE001 -- reported below, with the figure's name
                failed.append(f"{name}: {type(exc).__name__}: {exc}")
    if failed:
        raise FigureError(f"{len(failed)} figure(s) or view(s) failed, {len(written)} figures "
                          f"are in {folder}:\n  " + "\n  ".join(failed))
    return written


def _file_name(name: str) -> str:
    """A figure name as a portable file name (letters, digits, '_', '-', '.')."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("._") or "figure"
