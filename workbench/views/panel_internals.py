"""The parts of Panel's and Bokeh's insides the dashboard and the report rely on, in one place.

- PageDesign (workbench/app.py): the Bootstrap design, giving a part of the page the same
  stylesheet models when it is updated as when the page styled it. It overrides Design's
  `params` (through `_get_modifiers`, `_patch_modifiers`) and `_apply_params`, and reads the
  document's cached stylesheets (`pn.state._stylesheets`).
- background_periodic (workbench/app.py): a periodic callback that does not turn the page's
  busy indicator on (PeriodicCallback's `background`, which add_periodic_callback does not pass).
- children_patch, APPLY_PATCH_JS and frozen (workbench/lazy_tabs.py): a JSON patch of a
  document in Bokeh's own format (the message a Bokeh server sends when a layout gets new
  children), made with Bokeh's Serializer; the line of JavaScript that applies one in the
  browser (BokehJS's Document.apply_json_patch); one walk over a document's models for many
  changes.
- panel_dist_file (workbench/report.py): the file of Panel's installed package that a
  stylesheet link to Panel's CDN names (panel.io.resources' CDN_DIST and DIST_DIR), so that a
  report inlines it and works offline.

Each is written for the pinned Panel and Bokeh (constraints.txt) and exercised by
tests/unit/views/test_panel_internals.py, which fails when they behave differently. Public APIs are used
where they exist (Document.apply_json_patch, pn.state.add_periodic_callback).
"""
from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

import panel as pn
from bokeh.core.json_encoder import serialize_json
from bokeh.core.serialization import Serializer
from bokeh.document import Document
from bokeh.model import Model
from bokeh.models import ImportedStyleSheet
from panel.io.resources import CDN_DIST, DIST_DIR

__all__ = ["PageDesign", "background_periodic", "children_patch", "frozen", "cached_stylesheets",
           "APPLY_PATCH_JS", "panel_dist_file"]

# JavaScript: apply the JSON text `patch` (children_patch's) to the BokehJS document `doc`.
APPLY_PATCH_JS = "doc.apply_json_patch(JSON.parse(patch))"


def cached_stylesheets(doc: Document | None) -> dict:
    """The stylesheet models Panel has made for `doc`, by address (Panel's per-document cache;
    a new one for a document it has none of yet, {} for no document)."""
    return pn.state._stylesheets.setdefault(doc, {}) if doc is not None else {}


class PageDesign(pn.theme.Bootstrap):
    """Bootstrap, giving a part of the page the same stylesheets when it is updated as when the
    page styled it, so that new text is sent alone.

    The template styles each part of its page with the theme's stylesheet for that kind of part
    (Design._apply_hooks, not isolated) and makes itself the part's design; a pane's later update
    asks that design for its stylesheets again (Reactive._get_properties). In Panel 1.9.4 the two
    differ twice: `Design.params` gives the isolated set (the whole of bootstrap.min.css
    besides), and the hook gives a part new stylesheet models where the update takes the
    document's cached ones of the same address. So the first new text of the status line sent a
    new list of stylesheets, which restyled it and made Bokeh walk every model of the document
    again (0.12-0.19 s on a 100,000-run store). Here `params` gives the page's set, and the
    hook leaves a part the document's cached models.
    """

    def params(self, viewable, doc=None):
        modifiers, child_modifiers = self._get_modifiers(viewable, theme=self.theme,
                                                         isolated=False)
        self._patch_modifiers(doc, modifiers, cached_stylesheets(doc))
        return modifiers, child_modifiers

    @classmethod
    def _apply_params(cls, viewable, mref, modifiers, document=None):
        super()._apply_params(viewable, mref, modifiers, document)
        if mref not in viewable._models:
            return
        model = viewable._models[mref][0]
        cached: dict[str, ImportedStyleSheet] = {}
        doc = model.document or document
        for sheet in (pn.state._stylesheets.get(doc, {}) if doc is not None else {}).values():
            if address := _address(sheet):
                cached.setdefault(address, sheet)
        sheets = [cached.get(_address(sheet), sheet) for sheet in model.stylesheets]
        if any(a is not b for a, b in zip(sheets, model.stylesheets)):
            model.stylesheets = sheets


def _address(sheet) -> str | None:
    """The address of an imported stylesheet model; None for text, another kind of sheet, or a
    model whose address is unset (reading it raises then)."""
    if not isinstance(sheet, ImportedStyleSheet):
        return None
    try:
        return sheet.url
    except ValueError:  # bokeh's UnsetValueError
        return None


def background_periodic(callback: Callable[[], None], period_ms: int,
                        start: bool = True) -> pn.io.callbacks.PeriodicCallback:
    """pn.state.add_periodic_callback(callback, period_ms), run in the background: Panel turns
    the page's busy indicator on and off around every other periodic callback, which tells the
    page (and whoever waits for it to be idle) that the server is busy with what nobody asked."""
    periodic = pn.state.add_periodic_callback(callback, period=period_ms, start=False)
    periodic._background = True  # what PeriodicCallback(background=True) sets
    if start:
        periodic.start()
    return periodic


@contextmanager
def frozen(doc: Document) -> Iterator[None]:
    """Change many models of `doc` with one walk over its models at the end, not one each."""
    with doc.models.freeze():
        yield


def children_patch(slot: Model, children: list[Model], page: set[Model]) -> str:
    """A JSON patch (Bokeh's document-patch format) setting `slot.children` to `children`,
    defining every model of them that `page` lacks (data inline, base64) and referring to the
    others by id; a browser applies it with Document.apply_json_patch."""
    serializer = Serializer(references=page, deferred=False)
    event = {"kind": "ModelChanged", "model": slot.ref, "attr": "children",
             "new": serializer.encode(children)}
    return serialize_json({"events": [event]})


def panel_dist_file(url: str) -> Path | None:
    """The file of the installed Panel package that `url` (a link to Panel's CDN, a query
    string allowed) names, or None: another address, a path out of Panel's dist folder, or no
    such file here."""
    if not url.startswith(CDN_DIST):
        return None
    dist = Path(DIST_DIR).resolve()
    path = (dist / url[len(CDN_DIST):].split("?")[0]).resolve()
    return path if path.is_relative_to(dist) and path.is_file() else None
