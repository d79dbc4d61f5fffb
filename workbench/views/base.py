"""The base of every dashboard view: redraw when the selection changes, but only while shown.

A served dashboard holds every view at once, one per tab, while the user looks at one. A filter
change must not recompute the hidden ones (on a 100,000-run store that is most of the server's
time): a hidden view only notes that it is stale and redraws when its tab is opened.
`workbench.app` sets `shown` from the active tab; a report shows (and so draws) every view.
"""
from __future__ import annotations

import panel as pn
import param

from workbench.views.selection import Selection

__all__ = ["View", "FILTERS"]

# Selection parameters that change what every view shows.
FILTERS = ("version", "workloads", "algorithms", "rulesets", "studies", "hardware", "time_axis")
_NOT_DRAWN = ("name", "selection", "shown", "live")  # View parameters that do not change a drawing


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
        self._update()
        self._drawn_for = self._watched()  # after: _update may set the view's own parameters

    def _watched(self) -> tuple:
        own = (getattr(self, name) for name in self.param if name not in _NOT_DRAWN)
        watched = (getattr(self.selection, name) for name in self.WATCHES)
        return tuple(tuple(v) if isinstance(v, list) else v for v in (*watched, *own))

    def _update(self) -> None:
        """Redraw from the selection (subclasses)."""
        raise NotImplementedError
