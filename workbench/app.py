"""The served dashboard: `panel serve workbench/app.py` (store from env PACEBENCH_STORE, default
`results`). This module only assembles: the selection, the sidebar and the views live in
`workbench.views`, the list of views in workbench/views/registry.py.
"""
from __future__ import annotations

import os
from pathlib import Path

import panel as pn

from workbench.views.formats import md
from workbench.views.registry import make_views, view_tabs
from workbench.views.selection import Selection
from workbench.views.sidebar import Filters, StoreNotice
from workbench.views.status import RunStatus

__all__ = ["build_app", "store_from_env", "make_views", "view_tabs", "REFRESH_MS"]

REFRESH_MS = 5000  # how often a served dashboard re-reads the store for new or growing runs


def store_from_env() -> Path:
    """The store the dashboard shows: $PACEBENCH_STORE, else `results`."""
    return Path(os.environ.get("PACEBENCH_STORE", "results"))


def build_app(store_path: str | os.PathLike,
              selection: Selection | None = None) -> pn.template.BootstrapTemplate:
    """The dashboard over the store at `store_path`: filters in the sidebar, views in tabs
    (workbench/views/registry.py). `selection`: an existing Selection of that store to drive
    it (tests and benchmarks set its filters the way the sidebar does)."""
    pn.extension("tabulator", sizing_mode="stretch_width", notifications=False)
    selection = selection or Selection(store_path=str(store_path))
    # dynamic: a view draws when its tab is opened, so the first page shows fast on big stores
    tabs = view_tabs(selection, dynamic=True)
    if pn.state.served:
        pn.state.add_periodic_callback(selection.refresh, period=REFRESH_MS)
    return pn.template.BootstrapTemplate(
        title="Pacebench",
        sidebar=[pn.pane.Markdown(f"**Store** {md(store_path)}"), Filters(selection=selection)],
        main=[pn.Column(StoreNotice(selection=selection), RunStatus(selection=selection), tabs,
                        sizing_mode="stretch_width")],
        header_background="#1f4e79",
    )


if __name__.startswith("bokeh"):
    build_app(store_from_env()).servable()
