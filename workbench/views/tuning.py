"""The tuning report (workbench/tuning.py) for the dashboard's Compare and Hyperparameters tabs
and the report: one cached report of the selection, its findings in Markdown (escaped) and its
tables (text cells: Tabulator shows them as text; the column titles are fixed words).

Not a tab: the views that show it import it.
"""
from __future__ import annotations

import pandas as pd
import panel as pn

from workbench.views.formats import TABLE_CSS, md
from workbench.views.selection import Selection

__all__ = ["report_of", "runs_of", "findings", "table", "REPORT_TITLE", "SPACES_TITLE"]

REPORT_TITLE = ("Tuning per algorithm and workload (edge: the best trial in the outer 10 % of "
                "a range, beating the best trial of the inner 80 % by more than the noise "
                "floor)")
SPACES_TITLE = ("Search spaces (best: the best trial's value; position: 0 the low end, 1 the "
                "high end, in the range's scaling)")


def report_of(selection: Selection) -> dict[str, dict[str, dict]]:
    """Results.tuning_report of the selection's finished runs (every algorithm and workload of
    the scope, every attempt counted; the learning rate judged), as Results.tuning() makes it;
    cached per scope and time axis."""
    def make() -> dict[str, dict[str, dict]]:
        return selection.results.tuning_report(selection.full_runs(),
                                               selection.labelled().runs, selection.time_axis)
    return selection.full_value("tuning_report", make)


def runs_of(selection: Selection, algorithms: list[str]) -> dict[str, dict]:
    """Results.tuning_runs of `algorithms` in the selection's store (cached per scope)."""
    def make() -> dict[str, dict]:
        raw = getattr(selection, "_runs", None)
        raw = raw if isinstance(raw, pd.DataFrame) else selection.labelled().runs
        return selection.results.tuning_runs(raw, algorithms,
                                             selection.full_runs()["run_id"].astype(str))
    return selection.full_value("tuning_runs:" + "\x00".join(algorithms), make,
                                time_axis=False)


def cut(report: dict, algorithms: list[str], workloads: list[str] | None = None) -> dict:
    """The report of `algorithms` (in that order) on `workloads` (default all)."""
    return {a: {w: e for w, e in report.get(a, {}).items()
                if workloads is None or w in workloads} for a in algorithms if a in report}


def findings(report: dict) -> str:
    """Each entry's finding, a Markdown list (escaped); "" when there is none."""
    lines = [f"- {md(e['finding'])}" for per in report.values() for e in per.values()]
    return "\n".join(lines)


def table(frame: pd.DataFrame, css_class: str) -> pn.widgets.Tabulator:
    """A read-only table of text cells (tuning.report_table or tuning.space_table)."""
    return pn.widgets.Tabulator(frame, disabled=True, show_index=False,
                                layout="fit_data_stretch", stylesheets=[TABLE_CSS],
                                sizing_mode="stretch_width", css_classes=[css_class])
