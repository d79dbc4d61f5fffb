"""The one list of views: what the served dashboard shows (workbench/app.py), what a report holds
(workbench/report.py) and whose plots become figures for papers (workbench/figures.py).

A new view is one entry in VIEWS: its key, its tab title, its class, and (if it draws plots) the
function giving them by name. `dashboard` and `report` are options of the view's class that
differ between the served dashboard (a view draws when its tab opens; big stores show one
workload or one study group at a time) and the static report (every view draws up front).
`notebook_view` gives one view for a notebook (`workbench.results.Results.view`).

A view that cannot be made or drawn shows why in an alert in its place (views/base.py), and the
others still draw.
"""
from __future__ import annotations

import importlib
import io
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import panel as pn

from workbench.errors import UserError
from workbench.csvout import to_csv
from workbench.holdings import store_holdings
from workbench.views.base import LOG, View, failure_text
from workbench.views.narrowed import selection_of
from workbench.views.notebook import NotebookView
from workbench.views.selection import Selection

__all__ = ["ViewEntry", "VIEWS", "view_entry", "find_view", "make_views", "view_tabs",
           "tables_csv", "with_csv_download", "notebook_view", "NotebookView", "WARM_UPS",
           "NOTEBOOK_FILTERS", "tab_plan", "warm_ups", "TABS_OF", "MORE"]


@dataclass(frozen=True)
class ViewEntry:
    """One view of the dashboard, the report and the figures."""

    key: str                                    # short name, e.g. "profiles"
    title: str                                  # its tab's title
    view: Callable[..., View]                   # the view's class
    figures: Callable[[Selection], dict[str, Any]] | None = None  # name -> HoloViews plot
    dashboard: Mapping[str, Any] = field(default_factory=dict)    # options when served
    report: Mapping[str, Any] = field(default_factory=dict)       # options in a report


def _lazy(module: str, name: str) -> Callable:
    """`workbench.views.<module>.<name>`, imported when first called: a view's module (and
    what it imports: HoloViews, SciPy) loads when its tab first opens, not with the first page
    (the served dashboard's first page took 38 s on a loaded machine, 13 s of it importing
    every view)."""
    def call(*args, **kwargs):
        return getattr(importlib.import_module(f"workbench.views.{module}"), name)(*args,
                                                                                   **kwargs)
    call.__name__ = call.__qualname__ = f"{module}.{name}"
    return call


VIEWS: tuple[ViewEntry, ...] = (
    ViewEntry("leaderboard", "Leaderboard", _lazy("leaderboard", "Leaderboard"),
              dashboard={"keep_columns": True}),
    ViewEntry("studies", "Studies", _lazy("studies", "StudyTimes")),
    ViewEntry("speedups", "Speedups", _lazy("speedups", "Speedups")),
    ViewEntry("compare", "Compare", _lazy("compare", "Compare"), _lazy("compare", "figures"),
              report={"against_reference": True}),
    ViewEntry("budget", "Tuning budget", _lazy("budget", "TuningBudget"),
              _lazy("budget", "figures"), report={"all_workloads": True}),
    ViewEntry("profiles", "Profiles", _lazy("profiles", "Profiles"),
              _lazy("profiles", "figures")),
    ViewEntry("curves", "Curves", _lazy("curves", "Curves"), _lazy("curves", "figures"),
              dashboard={"one_workload": True}, report={"only_scored": True}),
    ViewEntry("robustness", "Robustness", _lazy("robustness", "Robustness"),
              _lazy("robustness", "figures")),
    ViewEntry("costs", "Costs", _lazy("costs", "Costs"), _lazy("costs", "figures")),
    ViewEntry("hparams", "Hyperparameters", _lazy("hparams", "Hyperparameters"),
              _lazy("hparams", "figures")),
    ViewEntry("early_ranking", "Early ranking", _lazy("early_ranking", "EarlyRanking"),
              _lazy("early_ranking", "figures"), dashboard={"one_group": True}),
    ViewEntry("scaling", "Scaling", _lazy("scaling", "Scaling"), _lazy("scaling", "figures")),
    ViewEntry("ladder", "Ladder", _lazy("ladder", "Ladder"), _lazy("ladder", "figures")),
)


# Work a served dashboard does in the background once a page is up, each given the store's path:
# what a tab's first opening would otherwise wait for (workbench.app.warm_up).
WARM_UPS: tuple[Callable[[str], None], ...] = (_lazy("early_ranking", "warm"),)
_WARM_UP_KEYS = ("early_ranking",)  # the view of each of WARM_UPS


def warm_ups(selection: Selection) -> tuple[Callable[[str], None], ...]:
    """The WARM_UPS of the views the store fills (tab_plan's first tabs): Early ranking's LCGA
    fits (seconds of CPU) are not worth making in the background of a page that keeps the tab
    under More, while the user opens the others."""
    shown = {e.key for e in tab_plan(selection)[0]}
    return tuple(w for w, key in zip(WARM_UPS, _WARM_UP_KEYS) if key in shown)


# What notebook_view (Results.view) narrows a view by: workbench.views.narrowed.selection_of's.
NOTEBOOK_FILTERS = ("ruleset", "studies", "with_adhoc", "workloads", "algorithms", "time_axis",
                    "relax_targets", "reference")


def tables_csv(layout: pn.viewable.Viewable) -> str:
    """Every visible table (Tabulator) of a view's layout, as it shows it, as CSV
    (workbench.csvout: formula-safe); tables after the first are preceded by an empty line."""
    frames = [t.value for t in layout.select(pn.widgets.Tabulator)
              if t.visible and t.value is not None and len(t.value.columns)]
    return "\n".join(to_csv(frame) for frame in frames)


def with_csv_download(title: str, view: View, embed: bool) -> pn.viewable.Viewable:
    """The view's layout, with a button under it that downloads its tables (tables_csv) when it
    has any. `embed` (a report, read without a server): the file goes into the page as it is
    drawn; else (served) it is made on each click, from the tables as they are then. The
    view's failure alert (hidden while it draws) sits above it."""
    layout = pn.Column(view.failure, pn.panel(view), sizing_mode="stretch_width")
    if not layout.select(pn.widgets.Tabulator):
        return layout
    name = re.sub(r"[^a-z0-9]+", "_", title.lower()).strip("_")
    button = pn.widgets.FileDownload(
        callback=lambda: io.StringIO(tables_csv(layout)), filename=f"pacebench_{name}.csv",
        label=f"Download the {title.lower()} tables (CSV)", embed=embed, button_type="light",
        width=320, css_classes=["pb-csv"])
    return pn.Column(layout, button, sizing_mode="stretch_width")


def view_entry(key: str, views: tuple[ViewEntry, ...] = VIEWS) -> ViewEntry:
    """The entry of view `key`; KeyError naming the valid keys."""
    for entry in views:
        if entry.key == key:
            return entry
    raise KeyError(f"unknown view {key!r}: valid are {', '.join(e.key for e in views)}")


def find_view(name: str, views: tuple[ViewEntry, ...] = VIEWS) -> ViewEntry:
    """The entry whose key or tab title is `name` (any case); ValueError naming the valid
    ones."""
    wanted = name.strip().lower()
    for entry in views:
        if wanted in (entry.key, entry.title.lower()):
            return entry
    raise UserError(f"unknown view {name!r}: valid are "
                     f"{', '.join(repr(e.title) for e in views)} (or their keys: "
                     f"{', '.join(e.key for e in views)})")


def _made(entry: ViewEntry, selection: Selection, dynamic: bool) -> View:
    """The view of `entry` over `selection`, shown (drawn now), with its `dashboard` options
    when `dynamic`, else its `report` options."""
    return entry.view(selection=selection, shown=True, live=dynamic,
                      **(entry.dashboard if dynamic else entry.report))


def make_views(selection: Selection) -> list[tuple[str, View]]:
    """(tab title, view) of every view over `selection`, each drawn now with its `report`
    options (the dashboard makes its views one by one, as their tabs open: view_tabs)."""
    return [(entry.title, _made(entry, selection, dynamic=False)) for entry in VIEWS]


def _laid_out(entry: ViewEntry, selection: Selection, dynamic: bool
              ) -> tuple[pn.viewable.Viewable, View | None]:
    """(the view of `entry` with its CSV button (with_csv_download), the view); when the view
    cannot even be made, (an alert saying why, None), the traceback logged."""
    try:
        view = _made(entry, selection, dynamic)
        return with_csv_download(entry.title, view, embed=not dynamic), view
    except Exception as exc:  # one view's bug must not blank the page
        LOG.error("the %s view could not be made (store %s)", entry.title,
                  selection.store_path, exc_info=exc)
        return pn.pane.Alert(failure_text(f"The {entry.title} view", exc), alert_type="danger",
                             sizing_mode="stretch_width", css_classes=["pb-failure"]), None


# The tab titles wrap onto a second line where the page is too narrow for all of them (Bokeh
# keeps them on one line and cuts off the last: "Scalin" at 1500 px with the sidebar open).
TABS_CSS = ".bk-headers-wrapper { flex-wrap: wrap; }"

# The tabs each kind of study fills (workbench/holdings.py), in the order they come; every
# other view is under the one MORE tab. Robustness comes with workload variants, Early
# ranking with early-stopping data.
TABS_OF = {
    "time_to_target": ("leaderboard", "compare", "curves", "budget", "hparams", "profiles",
                       "costs"),
    "ladder": ("ladder", "curves"),
    "scaling": ("scaling",),
}
MORE = "More"  # the title of the tab that holds the views the store cannot fill


def tab_plan(selection: Selection, views: tuple[ViewEntry, ...] | None = None
             ) -> tuple[list[ViewEntry], list[ViewEntry]]:
    """(the views the store's runs can fill, in tab order; the others, for the MORE tab).
    A store of time-to-target studies (or none yet) opens on the Leaderboard; a ladder-only
    store on the Ladder."""
    views = VIEWS if views is None else views
    held = store_holdings(selection)
    kinds = held.kinds or frozenset({"time_to_target"})
    keys = [k for kind in TABS_OF if kind in kinds for k in TABS_OF[kind]]
    keys += ["robustness"] * held.variants + ["early_ranking"] * held.early_stopping
    order = {key: i for i, key in reversed(list(enumerate(keys)))}  # the first place of each
    main = sorted((e for e in views if e.key in order), key=lambda e: order[e.key])
    return main, [e for e in views if e.key not in order]


class _LazyTabs:
    """Tabs of the dashboard whose views are made when first opened and draw only while their
    tab is open and the tabs themselves are shown; `more` (a title and another _LazyTabs) is
    the last tab, shown while it is open."""

    def __init__(self, entries: list[ViewEntry], selection: Selection, shown: bool = True,
                 more: tuple[str, "_LazyTabs"] | None = None) -> None:
        self.entries, self.selection, self.shown, self.more = entries, selection, shown, more
        self.slots = [pn.Column(sizing_mode="stretch_width") for _ in entries]
        self.views: dict[int, View | None] = {}  # None: a view that could not be made
        tabs = [(e.title, slot) for e, slot in zip(entries, self.slots)]
        if more is not None:
            tabs.append((more[0], more[1].tabs))
        self.tabs = pn.Tabs(*tabs, sizing_mode="stretch_width", stylesheets=[TABS_CSS])
        self.tabs.param.watch(lambda _event: self.show(), "active")
        self.show()

    def set_shown(self, shown: bool) -> None:
        """Show or hide these tabs (the MORE tab opened or left)."""
        self.shown = shown
        self.show()

    def show(self) -> None:
        """Make the open tab's view if new; let only it draw."""
        index = self.tabs.active if self.shown else -1
        for i, view in self.views.items():
            if view is not None:
                view.shown = i == index
        if 0 <= index < len(self.entries) and index not in self.views:
            # Made without a design of their own, as the first page's parts are: the template
            # then styles them as part of its page (a part made after the page took the
            # template's design for itself, and with it the theme's whole stylesheet: headings
            # at twice their size, wider table text).
            with pn.config.set(design=None):
                layout, self.views[index] = _laid_out(self.entries[index], self.selection,
                                                      dynamic=True)
                self.slots[index].objects = [layout]
        if self.more is not None:
            self.more[1].set_shown(self.shown and index == len(self.entries))


def view_tabs(selection: Selection, dynamic: bool = False) -> pn.Tabs:
    """The views, one tab each, those the store can fill first (tab_plan) and the others in
    one MORE tab of their own tabs. A report (not `dynamic`): every view made and drawn now.
    The dashboard (`dynamic`): a view is made when its tab is first opened, and draws only
    while its tab is open (filter changes redraw the open one; the others when next opened),
    so a new page costs the first tab's models only."""
    main, more = tab_plan(selection)
    if not dynamic:
        def tabs(entries):
            return [(e.title, _laid_out(e, selection, dynamic=False)[0]) for e in entries]
        inner = [(MORE, pn.Tabs(*tabs(more), sizing_mode="stretch_width",
                                stylesheets=[TABS_CSS], css_classes=["pb-more"]))] if more else []
        return pn.Tabs(*tabs(main), *inner, sizing_mode="stretch_width",
                       stylesheets=[TABS_CSS])
    # Every tab keeps its models once made (Panel's dynamic tabs re-render a tab on each visit,
    # and lost updates that raced with the re-rendering): a tab holds an empty column until it
    # is first opened, then its view's layout for good.
    inner = _LazyTabs(more, selection, shown=False) if more else None
    if inner is not None:
        inner.tabs.css_classes = ["pb-more"]
    return _LazyTabs(main, selection, more=(MORE, inner) if inner else None).tabs


def notebook_view(store_root, name: str, **filters) -> NotebookView:
    """The dashboard's view `name` (its tab title or key, any case) over the store at
    `store_root`, for a notebook: drawn with its report options (a static design: no sidebar)
    and shown live in JupyterLab, with a static copy that an exported notebook keeps
    (workbench/views/notebook.py).

    filters: ruleset, studies, with_adhoc (what is read, workbench/scope.py), workloads,
    algorithms, time_axis (train, wall or steps), relax_targets (R in [0, 1)), reference (the
    algorithm speedups are measured against); an unknown name or value is an error that lists
    the valid ones.
    """
    unknown = sorted(set(filters) - set(NOTEBOOK_FILTERS))
    if unknown:
        raise TypeError(f"unknown filter {', '.join(unknown)}: valid are "
                        f"{', '.join(NOTEBOOK_FILTERS)}")
    entry = find_view(name)
    selection = selection_of(store_root, **filters)
    _load_panel()
    layout, view = _laid_out(entry, selection, dynamic=False)
    figures = None if entry.figures is None or view is None else \
        (lambda: entry.figures(selection))
    return NotebookView(layout, figures)


def _load_panel() -> None:
    """Panel's notebook extension with Tabulator's scripts, loaded once per kernel: each load
    writes its scripts (about 50 kB) into the cell's output again. Where Panel no longer keeps
    what it loaded (private attributes), it is loaded each time."""
    loaded = getattr(pn.extension, "_loaded", False)
    if not (loaded and "tabulator" in getattr(pn.extension, "_loaded_extensions", ())):
        pn.extension("tabulator")
