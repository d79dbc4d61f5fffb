"""The served dashboard: `panel serve workbench/app.py` (store from env PACEBENCH_STORE, default
`results`). This module only assembles: the selection and views live in `workbench.views`.
"""
from __future__ import annotations

import os
from pathlib import Path

import panel as pn

from workbench.views.base import View
from workbench.views.costs import Costs
from workbench.views.curves import Curves
from workbench.views.early_ranking import EarlyRanking
from workbench.views.hparams import Hyperparameters
from workbench.views.leaderboard import Leaderboard
from workbench.views.profiles import Profiles
from workbench.views.robustness import Robustness
from workbench.views.scaling import Scaling
from workbench.views.selection import Filters, Selection, StoreNotice
from workbench.views.speedups import Speedups
from workbench.views.status import RunStatus
from workbench.views.studies import StudyTimes

__all__ = ["build_app", "store_from_env", "make_views", "view_tabs", "REFRESH_MS"]

REFRESH_MS = 5000  # how often a served dashboard re-reads the store for new or growing runs


def store_from_env() -> Path:
    """The store the dashboard shows: $PACEBENCH_STORE, else `results`."""
    return Path(os.environ.get("PACEBENCH_STORE", "results"))


def build_app(store_path: str | os.PathLike,
              selection: Selection | None = None) -> pn.template.BootstrapTemplate:
    """The dashboard over the store at `store_path`: filters in the sidebar, views in tabs.
    `selection`: an existing Selection of that store to drive it (tests and benchmarks set
    its filters the way the sidebar does)."""
    pn.extension("tabulator", sizing_mode="stretch_width", notifications=False)
    selection = selection or Selection(store_path=str(store_path))
    # dynamic: a view draws when its tab is opened, so the first page shows fast on big stores
    tabs = view_tabs(selection, dynamic=True)
    if pn.state.served:
        pn.state.add_periodic_callback(selection.refresh, period=REFRESH_MS)
    return pn.template.BootstrapTemplate(
        title="Pacebench",
        sidebar=[pn.pane.Markdown(f"**Store** `{store_path}`"), Filters(selection=selection)],
        main=[pn.Column(StoreNotice(selection=selection), RunStatus(selection=selection), tabs,
                        sizing_mode="stretch_width")],
        header_background="#1f4e79",
    )


def make_views(selection: Selection, dynamic: bool = False) -> list[tuple[str, View]]:
    """(tab title, view) of every view over `selection`. `dynamic` (the dashboard): only the
    first is shown (the others draw when their tab opens), the leaderboard keeps a column per
    workload (unshown ones hidden), the curves show one workload and the early ranking one
    study group at a time; else (the report) every view draws up front, the curves of the
    scored workloads."""
    views = [
        ("Leaderboard", lambda **kw: Leaderboard(keep_columns=dynamic, **kw)),
        ("Studies", StudyTimes), ("Speedups", Speedups),
        ("Profiles", Profiles),
        ("Curves", lambda **kw: Curves(one_workload=dynamic, only_scored=not dynamic, **kw)),
        ("Robustness", Robustness), ("Costs", Costs), ("Hyperparameters", Hyperparameters),
        ("Early ranking", lambda **kw: EarlyRanking(one_group=dynamic, **kw)),
        ("Scaling", Scaling),
    ]
    return [(name, make(selection=selection, shown=not dynamic or i == 0))
            for i, (name, make) in enumerate(views)]


def view_tabs(selection: Selection, dynamic: bool = False) -> pn.Tabs:
    """The views (make_views), one tab each. `dynamic` (the dashboard): a view draws only while
    its tab is open (filter changes redraw the open one; the others when next opened)."""
    made = make_views(selection, dynamic)
    # Every tab keeps its models (not dynamic): a tab re-rendered on each visit lost updates
    # that raced with its re-rendering. Hidden views stay cheap: they draw when first shown.
    tabs = pn.Tabs(*made, sizing_mode="stretch_width")

    def show_active(event) -> None:  # tabs.objects hold the views' layouts, not the views
        for i, (_, view) in enumerate(made):
            view.shown = i == event.new

    if dynamic:
        tabs.param.watch(show_active, "active")
    return tabs


if __name__.startswith("bokeh"):
    build_app(store_from_env()).servable()
