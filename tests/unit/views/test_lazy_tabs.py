"""Tabs whose contents the browser builds when first opened (workbench.lazy_tabs). The page
itself is opened by tests/browser/test_browser.py (every tab of the hostile report is visited)."""
from __future__ import annotations

import json

from bokeh.document import Document
from bokeh.models import Column, CustomJS, Div, GridBox, InlineStyleSheet, Row, TabPanel, Tabs

from workbench.lazy_tabs import NOTE, defer_tabs, outer_tabs


def _page() -> tuple[Document, Tabs, InlineStyleSheet, list[Div]]:
    """A page of three tabs, each a Column holding a Div; all Divs share one style sheet."""
    sheet = InlineStyleSheet(css=".x { color: red }")
    divs = [Div(text=f"tab {i}", stylesheets=[sheet]) for i in range(3)]
    tabs = Tabs(tabs=[TabPanel(title=f"t{i}", child=Column(children=[d]))
                      for i, d in enumerate(divs)], active=0)
    doc = Document()
    doc.add_root(Column(children=[Div(text="summary"), tabs]))
    return doc, tabs, sheet, divs


def test_outer_tabs_is_the_one_holding_the_others():
    inner = Tabs(tabs=[TabPanel(title="a", child=Div())])
    outer = Tabs(tabs=[TabPanel(title="b", child=Column(children=[inner]))])
    assert outer_tabs(Column(children=[outer])) is outer
    assert outer_tabs(Column(children=[Div()])) is None
    # found through rows, grids and panels; a deeper one is never taken for it
    deep = Row(children=[Column(children=[Div(), GridBox(children=[(outer, 0, 0)])])])
    assert outer_tabs(Column(children=[Div(), deep])) is outer


def test_later_tabs_leave_the_page_and_come_back_as_patches():
    doc, tabs, sheet, divs = _page()
    assert defer_tabs(doc, tabs) == 2
    # the active tab is whole; the others show a note, their contents out of the document
    assert tabs.tabs[0].child.children == [divs[0]]
    for panel in tabs.tabs[1:]:
        assert [c.text for c in panel.child.children] == [NOTE]
    ids = {m.id for m in doc.models}
    assert divs[0].id in ids and divs[1].id not in ids and divs[2].id not in ids
    assert sheet.id in ids  # shared with the first tab: stays on the page
    callback = tabs.js_property_callbacks["change:active"][0]
    assert isinstance(callback, CustomJS)
    patches = callback.args["patches"]
    assert patches[0] is None
    for i in (1, 2):
        event, = json.loads(patches[i])["events"]
        assert event["kind"] == "ModelChanged" and event["attr"] == "children"
        assert event["model"]["id"] == tabs.tabs[i].child.id
        text = patches[i]
        assert divs[i].id in text and f"tab {i}" in text
        # the page's style sheet is referred to by id, never defined again
        assert text.count(sheet.id) == 1 and ".x { color: red }" not in text


def test_a_tab_that_is_no_layout_stays_as_it_is():
    div = Div(text="plain")
    tabs = Tabs(tabs=[TabPanel(title="a", child=Column(children=[Div()])),
                      TabPanel(title="b", child=div)], active=0)
    doc = Document()
    doc.add_root(tabs)
    assert defer_tabs(doc, tabs) == 0
    assert tabs.tabs[1].child is div and div.id in {m.id for m in doc.models}
