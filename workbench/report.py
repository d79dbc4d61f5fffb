"""A static, self-contained HTML report of a store: the dashboard's views in one file, and
optionally each view's plots as PNG and SVG figures for papers (`workbench.figures`).

Bokeh's and Panel's JavaScript and CSS are inlined, so the file opens from disk with no network.
The report reads the store as every analysis does (workbench/scope.py: one ruleset, the study
names asked for, ad-hoc runs only when asked) and says what that left out; it can be narrowed to
some workloads and algorithms. Each value must be one the store holds. Its numbers are the
dashboard's, which are `pacebench score`'s and `pacebench compare`'s (workbench/views/).
"""
from __future__ import annotations

import base64
import contextlib
import datetime as _dt
import os
import re
import warnings
from pathlib import Path
from typing import Iterable

import panel as pn
from bokeh.document import Document
from bokeh.model import Model
from bokeh.models import ImportedStyleSheet, InlineStyleSheet, UIElement
from bokeh.resources import INLINE

from workbench.errors import UserError
from workbench.figures import FORMATS, check_formats, write_figures
from workbench.lazy_tabs import defer_tabs, outer_tabs
from workbench.views.formats import md
from workbench.views.registry import view_tabs
from workbench.views.narrowed import names, selection_of
from workbench.views.panel_internals import panel_dist_file
from workbench.views.selection import Selection
from workbench.views.sidebar import StoreNotice
from workbench.views.status import ScopeNotes

__all__ = ["write_report", "save_report", "report_selection", "report_layout", "names",
           "one_ruleset"]

# Panel's page template links its favicon from a CDN; an inline icon keeps the file offline.
_FAVICON = ("data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 16 16'%3E"
            "%3Crect width='16' height='16' rx='3' fill='%231f77b4'/%3E%3C/svg%3E")


_DATA_TYPES = {".woff2": "font/woff2", ".svg": "image/svg+xml", ".png": "image/png"}
_CSS_URL = re.compile(r"url\(\s*['\"]?([^'\")]+)['\"]?\s*\)")


def _embed_urls(css: str, folder: Path) -> str:
    """CSS with each relative url() of a font or image that the browser would fetch inlined."""
    def embed(match: re.Match) -> str:
        target = folder / match.group(1).split("?")[0].split("#")[0]
        kind = _DATA_TYPES.get(target.suffix)
        if match.group(1).startswith(("data:", "http")) or kind is None or not target.is_file():
            return match.group(0)
        return f"url(data:{kind};base64,{base64.b64encode(target.read_bytes()).decode()})"
    return _CSS_URL.sub(embed, css)


def _inline_stylesheets(root: Model) -> None:
    """Swap Panel's stylesheet links to its CDN for the same CSS from the installed package."""
    inlined: dict[str, InlineStyleSheet | None] = {}  # url -> its sheet (None: not Panel's)

    def local(sheet):
        url = getattr(sheet, "url", "") if isinstance(sheet, ImportedStyleSheet) else ""
        if not url:
            return sheet
        if url not in inlined:  # each address looked up once, not once per model
            path = panel_dist_file(url)
            inlined[url] = (None if path is None else
                            InlineStyleSheet(css=_embed_urls(path.read_text(), path.parent)))
        return inlined[url] or sheet

    # (only UI elements have style sheets; asking any other model costs Bokeh a search for
    # the nearest property name)
    document = root.document
    every = document.models if document is not None else root.references()  # (no new walk)
    models = [m for m in every if isinstance(m, UIElement) and m.stylesheets]
    # each assignment would re-walk every model of the document: walk once, at the end
    with document.models.freeze() if document is not None else contextlib.nullcontext():
        for model in models:
            sheets = [local(sheet) for sheet in model.stylesheets]
            if any(new is not old for new, old in zip(sheets, model.stylesheets)):
                model.stylesheets = sheets


def report_selection(store_path: str | os.PathLike, ruleset: str | None = None,
                     studies: str | Iterable[str] | None = None, with_adhoc: bool = False,
                     workloads: str | Iterable[str] | None = None,
                     algorithms: str | Iterable[str] | None = None, *,
                     rulesets: str | Iterable[str] | None = None,
                     reference: str | None = None) -> Selection:
    """The selection of the store read with `ruleset`, `studies` and `with_adhoc`
    (workbench/scope.py; None, None, False: the store's default ruleset, every study, no ad-hoc
    run) and narrowed to the given workloads and algorithms (None: all).

    A name the store does not hold is an error that lists the ones it does; so is a filter
    that leaves nothing (say, an empty list). `reference`: the algorithm speedups are measured
    against (None: scoring.default_reference). `rulesets`: the deprecated spelling of
    `ruleset` (one name), kept for one release.
    """
    if rulesets is not None:
        warnings.warn("rulesets= is deprecated and goes in the next release; use ruleset= (one "
                      "ruleset: rulesets never share a score)", FutureWarning, stacklevel=2)
        ruleset = one_ruleset(rulesets, ruleset)
    try:
        return selection_of(store_path, ruleset=ruleset, studies=studies, with_adhoc=with_adhoc,
                            workloads=workloads, algorithms=algorithms, reference=reference)
    except ValueError as exc:
        if str(exc).startswith("nothing to show: "):
            raise UserError(f"nothing to report: {str(exc)[len('nothing to show: '):]}") \
                from None
        raise


def one_ruleset(rulesets: str | Iterable[str], ruleset: str | None = None) -> str:
    """The one ruleset that the deprecated `rulesets` (--rulesets) names; UserError for
    several, none, or one other than `ruleset` (rulesets never share a score)."""
    given = names(rulesets) or []
    if len(given) != 1 or (ruleset is not None and ruleset != given[0]):
        raise UserError(f"rulesets {', '.join(map(repr, given)) or '(none given)'}: a report "
                        "reads one ruleset (rulesets never share a score); give ruleset= "
                        "(--ruleset) one of external, self")
    return given[0]


def _filters_text(selection: Selection) -> str:
    """"Shown: algorithms a, b." for each narrowed filter, and the ruleset and studies read;
    empty when everything is shown (a store of several machines shows the one with the most
    runs: Selection.refresh)."""
    parts = []
    if len(selection.param.ruleset.objects) > 1:
        parts.append(f"ruleset {md(selection.ruleset)}")
    for name in ("studies", "workloads", "algorithms", "hardware"):
        chosen, known = getattr(selection, name), selection.param[name].objects
        if len(chosen) < len(known):
            parts.append(f"{name} {', '.join(map(md, chosen))}")
    if selection.with_adhoc:
        parts.append("ad-hoc runs taken in")
    return f" Shown: {'; '.join(parts)}." if parts else ""


def _summary(selection: Selection, title: str, chosen: bool = False) -> str:
    runs = selection.runs
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")  # runs: any status
    text = (f"# {md(title)}\nStore {md(selection.store_path)}, written {stamp}: {len(runs)} runs of "
            f"{runs['algorithm'].nunique()} algorithms on {runs['workload'].nunique()} workloads."
            f"{_filters_text(selection)}")
    if selection.reference is not None:
        text += f" Speedups are measured against **{md(selection.reference)}**" + (
            "." if chosen else " (the default: baseline, else adamw, else the first name; "
            "`--reference` chooses another).")
    return text


def report_layout(selection: Selection, title: str, chosen: bool = False) -> pn.Column:
    """The report page: a summary line (`chosen`: the reference was chosen, not the
    default), any store notice, what the scope left out (its notes) and the views in tabs."""
    notes = ScopeNotes(selection=selection)
    return pn.Column(
        pn.pane.Markdown(_summary(selection, title, chosen)),
        StoreNotice(selection=selection), notes.failure, notes,
        view_tabs(selection),
        sizing_mode="stretch_width", styles={"padding": "0 1.5em"},
    )


def save_report(selection: Selection, out_path: str | os.PathLike, title: str | None = None,
                figures: str | os.PathLike | None = None,
                formats: str | Iterable[str] = FORMATS, chosen: bool = False) -> Path:
    """Write the report of `selection` to `out_path` (HTML) and, when `figures` names a folder,
    each view's plots there as files of `formats` ("png", "svg"); returns the HTML's path.
    `chosen`: the selection's reference was chosen by the user (the summary says so)."""
    formats = check_formats(formats)
    out = Path(out_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    pn.extension("tabulator")
    title = title or f"Pacebench report: {Path(selection.store_path).name}"
    layout = report_layout(selection, title, chosen)
    doc = Document()
    root = layout.get_root(doc)
    doc.add_root(root)
    _inline_stylesheets(root)
    # later tabs are built by the browser when first opened (workbench.lazy_tabs): the first
    # shows in seconds, not after every plot of the report is drawn
    if (tabs := outer_tabs(root)) is not None:
        defer_tabs(doc, tabs)
    pn.io.save.save(doc, out, title=title, resources=INLINE,
                    template_variables={"app_favicon": _FAVICON, "apple_icon": ""})
    if figures is not None:  # after the HTML: a figure that fails leaves the report written
        write_figures(selection, figures, formats)
    return out


def write_report(store_path: str | os.PathLike, out_path: str | os.PathLike,
                 title: str | None = None, ruleset: str | None = None,
                 studies: str | Iterable[str] | None = None, with_adhoc: bool = False,
                 workloads: str | Iterable[str] | None = None,
                 algorithms: str | Iterable[str] | None = None,
                 figures: str | os.PathLike | None = None,
                 formats: str | Iterable[str] = FORMATS,
                 rulesets: str | Iterable[str] | None = None,
                 reference: str | None = None) -> Path:
    """Write the report of the store at `store_path` to `out_path` (HTML); returns its path.

    ruleset, studies, with_adhoc: what is read (workbench/scope.py: the store's default
    ruleset, every study, no ad-hoc run). workloads, algorithms: show only these (names, or
    "a,b"; None: all), each one the store holds. figures: a folder that also receives each
    view's plots as files of `formats`. reference: the algorithm speedups are measured
    against (default: baseline, else adamw, else the first name; stated in the report).
    rulesets: deprecated, one release: use ruleset.
    """
    check_formats(formats)  # before the store is read: a typo fails fast
    selection = report_selection(store_path, ruleset, studies, with_adhoc, workloads,
                                 algorithms, rulesets=rulesets, reference=reference)
    return save_report(selection, out_path, title, figures, formats,
                       chosen=reference is not None)
