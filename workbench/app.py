"""The served dashboard: `panel serve workbench/app.py --address 127.0.0.1` (store from env
PACEBENCH_STORE, default `results`). This module only assembles: the selection, the sidebar and
the views live in `workbench.views`, the list of views in workbench/views/registry.py.

The dashboard shows a store to this machine only: a page requested from another address gets a
notice instead, unless PACEBENCH_ALLOW_REMOTE=1 (which `pacebench serve --address <non-loopback>`
sets), so a `panel serve` started without `--address`, which listens on every interface, still
shows nothing to the network.

A dashboard that cannot draw says why on the page: a view that raises shows a one-line alert in
its place (workbench/views/base.py), and a page that cannot be built at all shows one alert
(`serve_page`); the traceback goes to the server log (with PACEBENCH_DEBUG=1 to the page too).
"""
from __future__ import annotations

import importlib
import ipaddress
import os
import threading
from pathlib import Path

import panel as pn

from workbench.views.base import LOG, failure_text
from workbench.views.formats import md
from workbench.views.panel_internals import PageDesign, background_periodic
from workbench.views.registry import WARM_UPS, view_tabs, warm_ups
from workbench.views.selection import Selection
from workbench.views.sidebar import Filters, StoreNotice
from workbench.views.status import RunStatus, ScopeNotes

__all__ = ["build_app", "serve_page", "store_from_env", "REFRESH_MS", "remote_allowed",
           "ALLOW_REMOTE", "PageDesign", "warm_up", "WARM_MODULES"]

REFRESH_MS = 5000  # how often a served dashboard re-reads the store for new or growing runs


ALLOW_REMOTE = "PACEBENCH_ALLOW_REMOTE"  # "1": show the store to other machines too


def remote_allowed(remote_ip: str | None, environ=os.environ) -> bool:
    """Whether a page requested from `remote_ip` may show the store: from this machine always
    (None: not served, e.g. a report), from elsewhere only with PACEBENCH_ALLOW_REMOTE=1."""
    if remote_ip is None or environ.get(ALLOW_REMOTE) == "1":
        return True
    try:
        return ipaddress.ip_address(remote_ip.split("%")[0]).is_loopback
    except ValueError:
        return False


def _remote_ip() -> str | None:
    context = pn.state.curdoc.session_context if pn.state.curdoc else None
    request = getattr(context, "request", None)
    return getattr(request, "remote_ip", None) if request is not None else None


def refusal() -> pn.viewable.Viewable:
    """What a page requested from another machine shows."""
    return pn.pane.Markdown(
        "### This dashboard shows its store to this machine only\n\nOpen it from the machine "
        "it runs on, or restart it with `pacebench serve --address <address>` (or "
        f"`{ALLOW_REMOTE}=1 panel serve workbench/app.py --address <address>`) to share it.")


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
    # served: `panel serve` runs this file as a module named bokeh_app_... (what
    # pn.state.served finds out from inspect.stack(), which costs 0.1 s of a first page)
    if __name__.startswith("bokeh_app"):
        # in the background: Panel turns the page's busy spinner on and off around every
        # periodic callback, which told the page (and benchmarks/dashboard_tabs.py, which waits
        # for it) that the server was busy up to REFRESH_MS after a filter change, for a
        # re-read that finds nothing new. The spinner is for what the user asked.
        background_periodic(lambda: _refresh(selection), REFRESH_MS)
        # once the page is up, not while the first page is still being built and sent
        pn.state.onload(lambda: warm_up(store_path, work=warm_ups(selection)))
    status, notes = RunStatus(selection=selection, live=True), ScopeNotes(selection=selection,
                                                                         live=True)
    return pn.template.BootstrapTemplate(
        title="Pacebench",
        sidebar=[pn.pane.Markdown(f"**Store** {md(store_path)}"), Filters(selection=selection)],
        main=[pn.Column(StoreNotice(selection=selection), status.failure, status,
                        notes.failure, notes, tabs, sizing_mode="stretch_width")],
        header_background="#1f4e79", design=PageDesign,
    )


# Imported by a tab's first drawing, not by the first page: scipy's fits and rank correlations
# (Early ranking; 1.7 s to import on a busy 2-core machine, which the tab's first opening paid).
# The views' modules too (workbench/views/registry.py imports each when its tab first opens).
WARM_MODULES = ("scipy.optimize", "scipy.stats",
                *(f"workbench.views.{m}" for m in ("curves", "compare", "budget", "hparams",
                                                   "profiles", "costs", "ladder", "studies",
                                                   "speedups", "robustness", "early_ranking",
                                                   "scaling")))
_WARMED: set[str] = set()  # stores warmed up by this server process


def warm_up(store_path: str | os.PathLike, modules: tuple[str, ...] = WARM_MODULES,
            work=WARM_UPS) -> threading.Thread | None:
    """In a background thread, once per server process and store: import `modules` and do the
    views' warm-up `work` (registry.WARM_UPS: each fills the shared cache with what its tab
    first shows), so that no tab's first opening waits for them; None when done already. A
    tab opened meanwhile waits for an import in progress (Python's import lock) or makes a
    value itself (views/cache.py), never longer than it would have. A failure is logged."""
    key = str(Path(store_path).resolve())
    if key in _WARMED:
        return None
    _WARMED.add(key)

    def run() -> None:
        try:
            for module in modules:
                importlib.import_module(module)
            for step in work:
                step(key)
        except Exception as exc:  # the tab will do it (and say what fails) when opened
            LOG.warning("warming up the dashboard over %s failed", key, exc_info=exc)

    thread = threading.Thread(target=run, name="pacebench-warm-up", daemon=True)
    thread.start()
    return thread


def _refresh(selection: Selection) -> None:
    """The periodic re-read: a failure is logged and said on the page, and the next try goes
    on (an exception would only reach the log, every REFRESH_MS). All that changed is sent in
    one message: unheld, the sidebar's boxes got their names (shown) in one message and their
    ticks in a later one, after every view had redrawn, so that for a moment (seconds on a busy
    machine) a shown algorithm's box read unticked, and a click on it then was undone by the
    late ticks."""
    try:
        with pn.io.hold():
            selection.refresh()
    except Exception as exc:
        LOG.error("re-reading the store %s failed", selection.store_path, exc_info=exc)
        first = (str(exc).splitlines() or [""])[0]
        selection.message = (f"Could not re-read the store ({type(exc).__name__}: {first}); "
                             "what is shown is its last read. The server log has the traceback.")


def serve_page(store_path: str | os.PathLike) -> pn.viewable.Viewable:
    """The page `panel serve` shows: the dashboard (build_app), or, when it cannot be built,
    an alert saying in one line what failed and what to do (the traceback in the server log),
    never a blank page."""
    try:
        return build_app(store_path)
    except Exception as exc:
        LOG.error("the dashboard over %s could not be built", store_path, exc_info=exc)
        todo = (f"*pacebench score --store {md(store_path)}* reads the store the same way "
                "and may say more; report it")
        return pn.Column(pn.pane.Markdown("### Pacebench"), pn.pane.Alert(
            failure_text(f"The dashboard over {store_path}", exc, todo), alert_type="danger",
            css_classes=["pb-failure"]), sizing_mode="stretch_width")


if __name__.startswith("bokeh"):
    (serve_page(store_from_env()) if remote_allowed(_remote_ip()) else refusal()).servable()
