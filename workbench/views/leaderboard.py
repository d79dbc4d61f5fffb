"""Leaderboard: AlgoPerf benchmark scores, and the per-workload median time to target.

Both tables come from `workbench.scoring` over the selection's final cube; this view only orders,
labels and formats them.
"""
from __future__ import annotations

import math

import pandas as pd
import panel as pn
import param
from bokeh.models.widgets.tables import NumberFormatter

from workbench import scoring
from workbench.views.selection import Selection

__all__ = ["Leaderboard", "score_frame", "times_frame"]

SCORE_TITLES = {"algorithm": "Algorithm", "score": "Score (100-point grid)",
                "exact_score": "Score (exact integral)", "workloads_reached": "Workloads reached",
                "workloads_scored": "Workloads scored"}
MISS = "miss"  # shown for a workload whose median over studies did not reach the target
NO_RUNS = "no runs"  # shown where an algorithm has no run of a workload


def score_frame(selection: Selection) -> pd.DataFrame:
    """`scoring.score_table` of the selection, best score first (empty frame when no runs)."""
    if not len(selection.runs):
        return pd.DataFrame(columns=list(SCORE_TITLES))
    table = scoring.score_table(selection.cube)
    table = table.sort_values(["score", "exact_score"], ascending=False, kind="stable")
    return table[list(SCORE_TITLES)].reset_index(drop=True)


def _seconds(value: float) -> str:
    if math.isnan(value):
        return NO_RUNS
    return MISS if math.isinf(value) else f"{value:,.1f} s"


def times_frame(selection: Selection, order: list[str]) -> pd.DataFrame:
    """Median time to target (s) per algorithm (rows, in `order`) and workload (columns)."""
    if not len(selection.runs):
        return pd.DataFrame(columns=["algorithm"])
    times = scoring.workload_times(selection.cube).transpose("algorithm", "workload").to_pandas()
    times = times.reindex([a for a in order if a in times.index])
    shown = times.apply(lambda column: column.map(_seconds))
    return shown.rename_axis(index="algorithm", columns=None).reset_index()


class Leaderboard(pn.viewable.Viewer):
    """The score table (sorted by score) above the per-workload median time-to-target table."""

    selection = param.ClassSelector(class_=Selection)

    def __init__(self, **params) -> None:
        super().__init__(**params)
        self._scores = pn.widgets.Tabulator(
            disabled=True, show_index=False, layout="fit_data_stretch", sortable=True,
            titles=SCORE_TITLES, sorters=[{"field": "score", "dir": "desc"}],
            formatters={"score": NumberFormatter(format="0.000"),
                        "exact_score": NumberFormatter(format="0.000")},
            sizing_mode="stretch_width", css_classes=["pb-scores"])
        self._times = pn.widgets.Tabulator(disabled=True, show_index=False,
                                           titles={"algorithm": "Algorithm"},
                                           layout="fit_data_stretch", sizing_mode="stretch_width",
                                           css_classes=["pb-times"])
        self._update()

    @param.depends("selection.version", "selection.workloads", "selection.algorithms",
                   watch=True)
    def _update(self) -> None:
        scores = score_frame(self.selection)
        self._scores.value = scores
        self._times.value = times_frame(self.selection, list(scores["algorithm"]))

    def __panel__(self) -> pn.viewable.Viewable:
        return pn.Column(
            pn.pane.Markdown(
                "### Benchmark score\nAlgoPerf score: area under the performance profile for "
                "tau in [1, 4], divided by 3 (1 = fastest on every workload). *Grid* uses the "
                "official 100 evenly spaced tau; *exact* integrates the step function."),
            self._scores,
            pn.pane.Markdown(
                "### Median time to target\nPer workload: the best trial of each study (first "
                "eval meeting the validation target), median over studies, in train seconds; "
                f"*{MISS}* when the median study did not reach the target."),
            self._times,
            sizing_mode="stretch_width",
        )
