"""Tabs of a static page whose contents the browser builds when each tab is first opened.

A Bokeh page builds a view for every model of its document when it loads, hidden tabs
included: a report of the imported AlgoPerf v0.5 store (12 tabs, 8.4 MB) stayed blank for 46 s
(median of 2) in headless Chromium, most of it building and drawing tabs nobody had opened yet;
with its later tabs deferred (and the plots on a canvas, the curves as one multi-line each) its
first tab shows in 1.4 s, a later tab in 0.2 to 3.7 s when first opened (benchmarks/
report_load.py, 2 shared cores, load average 4 to 6). Here the
page's document keeps every tab's outer layout but not what it holds; each later tab's contents
are kept, serialized, as a JSON patch of that document (the message a Bokeh server sends when
a layout gets new children), and a CustomJS callback on the tabs applies it the first time its
tab is opened. The page stays one file that works offline, and every model the first tab
shares with a later one (style sheets, say) is written once: a patch refers to the page's
models by id and holds only what the page lacks. Bokeh's serializer and patch format are used
through workbench/views/panel_internals.py.
"""
from __future__ import annotations

from bokeh.document import Document
from bokeh.model import Model
from bokeh.models import CustomJS, Div, Tabs

from workbench.views.panel_internals import APPLY_PATCH_JS, children_patch, frozen

__all__ = ["defer_tabs", "outer_tabs", "LOAD_TAB_JS", "NOTE"]

# Runs in the browser when a tab is opened: `patches[i]` holds tab i's contents (a JSON patch
# of the document), applied once, after the browser has shown the tab's note (a big tab takes
# seconds to build).
LOAD_TAB_JS = """
const i = cb_obj.active
const patch = patches[i]
if (patch != null) {
  patches[i] = null
  const doc = cb_obj.document
  requestAnimationFrame(() => setTimeout(() => """ + APPLY_PATCH_JS + """, 0))
}
"""
NOTE = "Drawing this tab\N{HORIZONTAL ELLIPSIS}"  # what a deferred tab shows until it is built


def outer_tabs(root: Model) -> Tabs | None:
    """The Bokeh Tabs model of `root` that holds every other one: the one nearest to `root`,
    looked for level by level through layouts' children and tab panels (None when it has
    none). Plots are never entered: walking every model of a 3,700-run report took 2 s."""
    level = [root]
    while level:
        for model in level:
            if isinstance(model, Tabs):
                return model
        level = [child for model in level for child in _held(model)]
    return None


def _held(model: Model) -> list[Model]:
    """The models a layout model holds as its children, a tab panel its child, tabs their
    panels; [] for any other model."""
    names = type(model).properties()
    held = []
    for name in ("children", "tabs", "child"):
        if name in names:
            value = getattr(model, name)
            for item in value if isinstance(value, (list, tuple)) else [value]:
                item = item[0] if isinstance(item, tuple) else item  # a grid's (child, row, col)
                if isinstance(item, Model):
                    held.append(item)
    return held


def defer_tabs(doc: Document, tabs: Tabs) -> int:
    """Take the contents of every tab of `tabs` but the active one out of `doc`, and give
    `tabs` a callback that puts them back when their tab is first opened; returns how many
    tabs were deferred. A tab whose model is no layout with children stays as it is.

    Call it once the document is complete (its style sheets inlined), just before it is
    written out: a later change to a deferred model would not reach the page.
    """
    slots, held = [], []
    with frozen(doc):  # one walk over the document at the end, not one per tab
        for index, panel in enumerate(tabs.tabs):
            slot = panel.child
            if index == tabs.active or not getattr(slot, "children", None):
                slots.append(None)
                held.append([])
                continue
            slots.append(slot)
            held.append(list(slot.children))
            # a note, not an empty layout (which Bokeh warns of, W-1002)
            slot.children = [Div(text=NOTE, styles={"color": "#666", "padding": "1em"})]
    # Each patch refers to the models the page will have, never to another patch's: tabs
    # are opened in any order. A model two tabs share (not the page) is in both patches; the
    # second to arrive updates the first's (the same values).
    page = set(doc.models)
    patches = [None if slot is None else children_patch(slot, children, page)
               for slot, children in zip(slots, held)]
    tabs.js_on_change("active", CustomJS(args={"patches": patches}, code=LOAD_TAB_JS))
    return sum(p is not None for p in patches)

