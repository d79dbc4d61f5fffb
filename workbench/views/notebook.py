"""A dashboard view in a notebook: live in JupyterLab, and still there in an exported copy.

Panel shows a view in JupyterLab through its own output type, which runs the view's script in
the page; `jupyter nbconvert --to html` keeps that output's HTML, but the script finds no
BokehJS in the exported page (Panel loads it from a CDN, and only in a live kernel's page), so
the view's place stays empty. A NotebookView's output therefore carries, after Panel's own, a
static copy of the view: its text and tables as HTML, its plots as PNG drawn by Matplotlib
(workbench/views/mpl.py). A short script hides the copy as soon as the live view has drawn, so
JupyterLab shows the view once; where no script runs or the live view never draws (an export,
an untrusted notebook) the copy stays. Every name in it is escaped.
"""
from __future__ import annotations

import base64
import html
import logging
import os
import re
import uuid
from pathlib import Path
from typing import Any, Callable

import pandas as pd
import panel as pn
import param
from markdown_it import MarkdownIt

__all__ = ["NotebookView", "static_html"]

LOG = logging.getLogger("workbench.views")
# Markdown as the panes write it: their names are already escaped (formats.md), HTML entities
# and all, so the inline HTML they hold is ours.
_MARKDOWN = MarkdownIt("commonmark", {"html": True}).enable("table")
_PANES = (pn.pane.Markdown, pn.pane.Alert)
# Hides the static copy once the live view's root element holds what BokehJS drew (it polls:
# Panel draws a moment after its script runs); gives up after a minute.
_HIDE_WHEN_LIVE = """<script>(function() {{
  var copy = document.getElementById("{copy}"), tries = 0;
  function drawn() {{
    var root = document.querySelector('[data-root-id="{root}"]');
    return root !== null && (root.shadowRoot !== null || root.children.length > 0);
  }}
  (function check() {{
    if (copy === null) return;
    if (drawn()) {{ copy.style.display = "none"; return; }}
    if (tries++ < 240) setTimeout(check, 250);
  }})();
}})();</script>"""
_STYLE = ("<style>.pb-static table {border-collapse: collapse; margin: 0.5em 0;} "
          ".pb-static th, .pb-static td {border: 1px solid #ccc; padding: 2px 6px; "
          "text-align: right;} .pb-static img {max-width: 100%;}</style>")


def _table_html(table: pn.widgets.Tabulator) -> str:
    """The table as the view shows it: its visible columns under their titles (which are
    HTML: read back as text, then escaped again with the cells)."""
    frame = table.value if isinstance(table.value, pd.DataFrame) else pd.DataFrame()
    frame = frame.drop(columns=[c for c in table.hidden_columns or [] if c in frame.columns])
    if frame.empty:
        return ""
    titles = {c: html.unescape(re.sub(r"<[^>]*>", "", str(table.titles.get(c, c))))
              .replace("\u200b", "") for c in frame.columns}
    return frame.rename(columns=titles).to_html(index=False, escape=True, na_rep="", border=0)


def _parts(obj: Any) -> list[str]:
    """HTML of the visible text and tables of a layout, in order (plots are left out: they
    come from the view's figures)."""
    if not getattr(obj, "visible", True):
        return []
    if isinstance(obj, _PANES):
        text = obj.object if isinstance(obj.object, str) else ""
        return [_MARKDOWN.render(text)] if text.strip() else []
    if isinstance(obj, pn.widgets.Tabulator):
        return [_table_html(obj)]
    if isinstance(obj, pn.viewable.Viewer):
        return _parts(obj.__panel__())
    if isinstance(obj, pn.layout.ListLike) or isinstance(obj, pn.layout.Tabs):
        return [part for child in obj.objects for part in _parts(child)]
    return []


def static_html(layout: pn.viewable.Viewable, figures: dict[str, Any] | None = None) -> str:
    """The text and tables of `layout` and the `figures` ({name: HoloViews plot}) as PNG, as
    one block of HTML (every store name in it escaped)."""
    from workbench.views.mpl import png_bytes  # Matplotlib: seconds to import, here only

    parts = [p for p in _parts(layout) if p]
    for name, plot in (figures or {}).items():
        try:
            data = base64.b64encode(png_bytes(plot)).decode()
        except Exception as exc:  # a plot Matplotlib cannot draw: the rest still shows
            LOG.warning("plot %s of a notebook view could not be drawn: %s", name, exc)
            continue
        parts.append(f'<img alt="{html.escape(name)}" src="data:image/png;base64,{data}">')
    return _STYLE + "".join(parts)


class NotebookView(pn.viewable.Viewer):
    """A view's layout for a notebook: shown live by Panel, with a static copy for exports
    (see the module doc). `figures` gives the view's plots ({name: HoloViews object})."""

    layout = param.Parameter(doc="The view's layout (what the dashboard's tab shows).")
    figures = param.Callable(default=None, allow_None=True,
                             doc="() -> {name: HoloViews plot} of the view (None: no plots).")

    def __init__(self, layout, figures: Callable[[], dict] | None = None, **params) -> None:
        super().__init__(layout=layout, figures=figures, **params)

    def __panel__(self) -> pn.viewable.Viewable:
        return self.layout

    def static_html(self) -> str:
        """The static copy: text, tables and plots."""
        return static_html(self.layout, self.figures() if self.figures else None)

    def save(self, path: str | os.PathLike, title: str = "Pacebench view") -> Path:
        """Write the view as one static, self-contained HTML file (its text, tables and plots
        as PNG: static_html) to `path`, its folder made if missing; returns the path. It
        opens from disk with no network and no server."""
        out = Path(path)
        out.parent.mkdir(parents=True, exist_ok=True)
        page = (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
                f"<title>{html.escape(title)}</title></head>\n<body style=\"font-family: "
                f'sans-serif; margin: 1.5em\"><div class="pb-static">{self.static_html()}'
                "</div></body></html>\n")
        out.write_text(page, encoding="utf-8")
        return out

    def _repr_mimebundle_(self, include=None, exclude=None):
        data, metadata = self.layout._repr_mimebundle_(include, exclude)
        root = (metadata.get("application/vnd.holoviews_exec.v0+json") or {}).get("id", "")
        copy = f"pb-static-{uuid.uuid4().hex}"
        data = dict(data)
        data["text/html"] = (data.get("text/html", "") +
                             f'<div class="pb-static" id="{copy}">{self.static_html()}</div>' +
                             _HIDE_WHEN_LIVE.format(copy=copy, root=html.escape(str(root))))
        return data, metadata
