"""Panel's and Bokeh's insides behind workbench/views/panel_internals.py, each exercised against
the installed versions: what each override corrects is checked to still need correcting (plain
Panel side by side), and what each reads or writes to still mean what it meant."""
from __future__ import annotations

import ast
import asyncio
import json
import pathlib

import panel as pn
from bokeh.document import Document
from bokeh.models import Column, Div, InlineStyleSheet

from workbench.views.panel_internals import (APPLY_PATCH_JS, PageDesign, background_periodic,
                                             children_patch, frozen, panel_dist_file)

from locations import REPO

ROOT = REPO


def _update_a_pane(design) -> dict:
    """A template of `design` drawn into a document; a pane's text changed afterwards: what
    its model's stylesheets and the document's models did."""
    pn.extension(sizing_mode="stretch_width", notifications=False)
    pane = pn.pane.Markdown("first", css_classes=["probe"])
    template = pn.template.BootstrapTemplate(title="t", main=[pn.Column(pane)], design=design)
    doc = Document()
    template.server_doc(doc)
    model = next(m for m in doc.models if "probe" in (getattr(m, "css_classes", None) or []))
    before, models = list(model.stylesheets), set(doc.models)
    pane.object = "second"
    after = list(model.stylesheets)
    return {"text": "second" in model.text,
            "same sheets": len(after) == len(before) and all(a is b for a, b in zip(before, after)),
            "whole bootstrap": any("bootstrap.min.css" in str(getattr(s, "url", "")) for s in after),
            "same models": set(doc.models) == models}


def test_page_design_sends_an_updated_pane_its_text_alone():
    """With PageDesign a pane's new text leaves its stylesheet models as the page gave them;
    with Panel's own Bootstrap design it gets a new list holding all of bootstrap.min.css and
    the document new models (what PageDesign is for: if Panel stops doing so, drop it)."""
    assert _update_a_pane(PageDesign) == {"text": True, "same sheets": True,
                                          "whole bootstrap": False, "same models": True}
    assert _update_a_pane(pn.theme.Bootstrap) == {"text": True, "same sheets": False,
                                                  "whole bootstrap": True, "same models": False}


def test_a_background_periodic_callback_leaves_the_page_idle():
    """Panel marks the server busy around each periodic callback, but not a background one."""
    busy: dict[str, list[bool]] = {}

    async def tick_both() -> None:
        for name, make in (("background", lambda cb: background_periodic(cb, 40)),
                           ("plain", lambda cb: pn.state.add_periodic_callback(cb, period=40))):
            periodic = make(lambda name=name: busy.setdefault(name, []).append(pn.state.busy))
            await asyncio.sleep(0.25)
            periodic.stop()

    asyncio.run(tick_both())
    assert busy["background"] and not any(busy["background"]), busy
    assert busy["plain"] and all(busy["plain"]), busy


def test_a_children_patch_applies_to_the_page_in_bokehs_own_format():
    """The patch, applied as a browser applies it (Document.apply_json_patch), gives the slot
    its children again: new models defined, the page's shared stylesheet taken by id."""
    sheet = InlineStyleSheet(css=".x { color: red }")
    kept, moved = Div(text="kept", stylesheets=[sheet]), Div(text="moved", stylesheets=[sheet])
    slot = Column(children=[moved])
    doc = Document()
    doc.add_root(Column(children=[kept, slot]))
    with frozen(doc):
        slot.children = [Div(text="note")]
    patch = children_patch(slot, [moved], set(doc.models))
    assert json.loads(patch)["events"][0]["kind"] == "ModelChanged"
    assert patch.count(sheet.id) == 1 and ".x { color: red }" not in patch
    page = Document.from_json(doc.to_json())  # the page as a browser holds it
    page.apply_json_patch(json.loads(patch))
    (shown,) = page.get_model_by_id(slot.id).children
    assert shown.text == "moved" and shown.id == moved.id
    assert shown.stylesheets[0] is page.get_model_by_id(sheet.id)


def test_the_patch_line_calls_a_method_the_pinned_bokehjs_has():
    """APPLY_PATCH_JS calls Document.apply_json_patch of the BokehJS the page embeds (the
    installed bokeh's own bundle); the report's browser test applies it for real."""
    import bokeh.resources

    bundle = (pathlib.Path(bokeh.resources.__file__).parent / "server" / "static" / "js"
              / "bokeh.min.js").read_text(encoding="utf-8")
    method = APPLY_PATCH_JS.split("(")[0].split(".")[-1]
    assert method == "apply_json_patch" and f"{method}(" in bundle


def test_panel_cdn_links_of_a_page_name_files_of_the_installed_panel():
    """Every link to Panel's CDN that a Bootstrap page's models carry names a file the report
    can inline; any other address names none."""
    from bokeh.models import ImportedStyleSheet

    pn.extension(notifications=False)
    doc = Document()
    pn.template.BootstrapTemplate(title="t", main=[pn.pane.Markdown("x")]).server_doc(doc)
    urls = {s.url for m in doc.models for s in (getattr(m, "stylesheets", None) or [])
            if isinstance(s, ImportedStyleSheet)}
    cdn = [u for u in urls if panel_dist_file(u) is not None]
    assert cdn, urls  # the page links Panel's CDN, and those files are installed here
    assert all(panel_dist_file(u).suffix == ".css" for u in cdn)
    assert panel_dist_file("https://example.org/x.css") is None
    assert panel_dist_file(cdn[0].split("?")[0] + "/../" * 12 + "etc/passwd") is None


def test_the_dashboard_and_the_report_reach_panel_internals_only_through_the_adapter():
    """app.py, lazy_tabs.py and report.py use no private attribute (pn.state._stylesheets, x._background),
    override no private method and import no serializer of Bokeh's (bokeh.core)."""
    for name in ("workbench/app.py", "workbench/lazy_tabs.py", "workbench/report.py"):
        tree = ast.parse((ROOT / name).read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("bokeh"):
                assert not node.module.startswith("bokeh.core"), f"{name}: {node.module}"
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("panel.io"):
                assert False, f"{name} imports {node.module}"
            if isinstance(node, ast.Attribute) and node.attr.startswith("_") \
                    and not node.attr.startswith("__"):
                assert False, f"{name} uses a private attribute {node.attr}"
            if isinstance(node, ast.ClassDef):  # no override of a library's private method
                private = [f.name for f in node.body if isinstance(f, ast.FunctionDef)
                           and f.name.startswith("_") and not f.name.startswith("__")]
                assert not private, f"{name}: {node.name} overrides {private}"
