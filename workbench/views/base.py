"""The base of every dashboard view: redraw when the selection changes, but only while shown.

A served dashboard holds every view at once, one per tab, while the user looks at one. A filter
change must not recompute the hidden ones (on a 100,000-run store that is most of the server's
time): a hidden view only notes that it is stale and redraws when its tab is opened.
`workbench.app` sets `shown` from the active tab; a report shows (and so draws) every view.

A view that raises while drawing does not take the page with it: the exception is logged with
its traceback (logger "workbench.views"), and the view's `failure` alert says in one line what
failed and what to do (with PACEBENCH_DEBUG=1 the traceback too); the next draw that succeeds
hides it.
"""
from __future__ import annotations

import html
import logging
import os
import traceback

import panel as pn
import param

from workbench.views.formats import md
from workbench.views.selection import Selection

__all__ = ["View", "FILTERS", "failure_text", "DEBUG", "LOG", "TRY_OTHER_FILTERS"]

LOG = logging.getLogger("workbench.views")
DEBUG = "PACEBENCH_DEBUG"  # "1": a failure shows its traceback on the page too

# Selection parameters that change what every view shows.
FILTERS = ("version", "workloads", "algorithms", "ruleset", "studies", "with_adhoc", "hardware",
           "time_axis", "relax_targets")
_NOT_DRAWN = ("name", "selection", "shown", "live")  # View parameters that do not change a drawing


TRY_OTHER_FILTERS = "Try other filters, or report it"


def failure_text(what: str, exc: BaseException, todo: str = TRY_OTHER_FILTERS,
                 environ=os.environ) -> str:
    """Markdown of a failure, one line: what could not be drawn, the exception (its first line,
    escaped) and what to do (`todo`, then where the traceback is); with PACEBENCH_DEBUG=1 the
    traceback follows, as code."""
    first = (str(exc).strip().splitlines() or [""])[0]
    text = (f"**{md(what)} could not be drawn:** {md(type(exc).__name__)}: {md(first)}. "
            f"{todo} with the traceback in the server log (set {DEBUG}=1 to show it here "
            "too).")
    if environ.get(DEBUG) == "1":
        trace = "".join(traceback.format_exception(exc))
        text += "\n\n<pre>" + html.escape(trace) + "</pre>"  # an HTML block: shown as is
    return text


class View(pn.viewable.Viewer):
    """A view over a Selection. Subclasses draw in `_update` and list in `WATCHES` the
    selection parameters that make it redraw (default: the data and every filter)."""

    selection = param.ClassSelector(class_=Selection)
    shown = param.Boolean(default=True, doc="False while the view's tab is hidden: redraws "
                                            "wait until it is shown again.")
    live = param.Boolean(default=False, doc="In the served dashboard (a sidebar and widgets "
                                            "that work); False in a static report, whose text "
                                            "then names the settings instead of the sidebar.")

    WATCHES: tuple[str, ...] = FILTERS

    def __init__(self, **params) -> None:
        super().__init__(**params)
        self.failure = pn.pane.Alert(alert_type="danger", visible=False,
                                     sizing_mode="stretch_width", css_classes=["pb-failure"])
        self._stale = False
        self._drawn_for: tuple | None = None  # the watched values of the last draw
        self.selection.param.watch(self._selection_changed, list(self.WATCHES))
        self.param.watch(self._shown_changed, "shown")

    def _first_draw(self) -> None:
        """Draw now if shown, else when first shown (call at the end of a subclass __init__)."""
        if self.shown:
            self._draw()
        else:
            self._stale = True

    def _selection_changed(self, *_events) -> None:
        if self.shown:
            self._draw()
        else:
            self._stale = True

    def _shown_changed(self, event) -> None:
        if event.new and self._stale:
            self._stale = False
            self._draw()

    def _mark_stale(self) -> None:
        """Redraw in full when next shown (for a part a subclass could not draw while hidden)."""
        self._stale, self._drawn_for = True, None

    def _draw(self) -> None:
        """_update, unless the selection's watched values and the view's own parameters are
        those of the last draw: one filter change can notify twice (unticking the reference
        algorithm changes the reference too), and a hidden view's filters may have come back
        to what it shows."""
        if self._watched() == self._drawn_for:
            return
        try:
            self._update()
        except Exception as exc:  # the page stays up and says why this part is missing
            self._failed(exc)
            self._drawn_for = None  # the next change tries again
            return
        if self.failure.visible:
            self.failure.visible = False
        self._drawn_for = self._watched()  # after: _update may set the view's own parameters

    def _failed(self, exc: Exception) -> None:
        """Log the traceback; show what failed in the view's `failure` alert."""
        what = type(self).__name__
        LOG.error("%s could not be drawn (store %s)", what, self.selection.store_path,
                  exc_info=exc)
        self.failure.param.update(object=failure_text(f"The {what} view", exc), visible=True)

    def _watched(self) -> tuple:
        own = (getattr(self, name) for name in self.param if name not in _NOT_DRAWN)
        watched = (getattr(self.selection, name) for name in self.WATCHES)
        return tuple(tuple(v) if isinstance(v, list) else v for v in (*watched, *own))

    def _update(self) -> None:
        """Redraw from the selection (subclasses)."""
        raise NotImplementedError
