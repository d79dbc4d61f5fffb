"""Leaderboard: AlgoPerf benchmark scores, and the per-workload median time to target.

Both tables come from `workbench.scoring` over the selection's final cube and scoring rules (the
store's ScoringConfig when it records one, e.g. an AlgoPerf import); this view only orders,
labels and formats them.
"""
from __future__ import annotations

import pandas as pd
import panel as pn
import param
from bokeh.models.widgets.tables import NumberFormatter

from workbench import scoring
from workbench.views.formats import MISS, NO_RUNS, duration, unit_for
from workbench.views.selection import Selection

__all__ = ["Leaderboard", "score_frame", "times_frame", "TABLE_CSS", "GROUP_TITLES",
           "wrap_title", "MISS", "NO_RUNS"]

SCORE_TITLES = {"algorithm": "Algorithm", "score": "Score (100-point grid)",
                "exact_score": "Score (exact integral)", "workloads_reached": "Workloads reached",
                "workloads_scored": "Workloads scored"}
GROUP_TITLES = {
    "scored": "Scored workloads",
    "held_out": "Held-out variants (inputs of their base workload's score, not scored alone)",
    "other": "Other variants (not scored)",
}
# Long workload names wrap in the header instead of widening every column.
TABLE_CSS = """
.tabulator .tabulator-header .tabulator-col .tabulator-col-content .tabulator-col-title {
  white-space: normal !important; overflow-wrap: anywhere; text-overflow: clip; font-size: 13px;
}
"""


def wrap_title(name: str) -> str:
    """A column title that may break after each underscore (zero-width space)."""
    return name.replace("_", "_\u200b")


def score_frame(selection: Selection) -> pd.DataFrame:
    """`scoring.score_table` of the selection under its scoring rules, best score first (an empty
    frame when there are no runs or no scored workload is shown)."""
    if not len(selection.runs) or not selection.workload_groups()["scored"]:
        return pd.DataFrame(columns=list(SCORE_TITLES))
    table = scoring.score_table(selection.cube, selection.scoring_config)
    table = table.sort_values(["score", "exact_score"], ascending=False, kind="stable")
    return table[list(SCORE_TITLES)].reset_index(drop=True)


def times_frame(selection: Selection, order: list[str],
                workloads: list[str] | None = None) -> pd.DataFrame:
    """Median time to target per algorithm (rows, in `order`) and workload (columns, default
    every shown workload), formatted ('5,043 s', '9.2 h', MISS, NO_RUNS)."""
    if not len(selection.runs):
        return pd.DataFrame(columns=["algorithm"])
    times = scoring.workload_times(selection.cube).transpose("algorithm", "workload").to_pandas()
    shown = workloads if workloads is not None else \
        [w for w in times.columns if w in selection.workloads]
    rows = [a for a in order if a in times.index] + [a for a in times.index if a not in order]
    times = times.reindex(index=rows, columns=shown)
    text = times.apply(lambda column: column.map(lambda v: duration(v, unit_for(column))))
    return text.rename_axis(index="algorithm", columns=None).reset_index()


def _table(css_class: str, layout: str = "fit_data_stretch", **options) -> pn.widgets.Tabulator:
    return pn.widgets.Tabulator(disabled=True, show_index=False, layout=layout,
                                sizing_mode="stretch_width", css_classes=[css_class],
                                stylesheets=[TABLE_CSS], **options)


class Leaderboard(pn.viewable.Viewer):
    """The score table (sorted by score) above the median time-to-target tables, one per group
    of workloads (scored, held-out variants, other variants)."""

    selection = param.ClassSelector(class_=Selection)

    def __init__(self, **params) -> None:
        super().__init__(**params)
        self._scores = _table(
            "pb-scores", sortable=True, titles=SCORE_TITLES,
            sorters=[{"field": "score", "dir": "desc"}],
            formatters={"score": NumberFormatter(format="0.0000"),
                        "exact_score": NumberFormatter(format="0.0000")})
        self._about = pn.pane.Markdown(sizing_mode="stretch_width")
        self._groups = {name: (pn.pane.Markdown(f"#### {title}"),
                               _table(f"pb-times-{name}", layout="fit_columns",
                                      widths={"algorithm": 190}, sortable=False))
                        for name, title in GROUP_TITLES.items()}
        self._times = self._groups["scored"][1]  # the scored workloads' table
        self._update()

    @param.depends("selection.version", "selection.workloads", "selection.algorithms",
                   watch=True)
    def _update(self) -> None:
        scores = score_frame(self.selection)
        self._scores.value = scores
        self._about.object = self._rules_text()
        order = list(scores["algorithm"])
        for name, workloads in self.selection.workload_groups().items():
            title, table = self._groups[name]
            frame = times_frame(self.selection, order, workloads)
            titles = {"algorithm": "Algorithm", **{w: wrap_title(w) for w in workloads}}
            table.param.update(value=frame, titles=titles,
                               text_align={w: "right" for w in workloads})
            title.visible = table.visible = bool(workloads) and len(frame) > 0

    def _rules_text(self) -> str:
        config = self.selection.store_config
        if config is None:
            return ("Scored: the shown base workloads, with the 4x cut-off (plain rules; the "
                    "store records no benchmark's rules).")
        held = " and the held-out variant rule" if config.apply_held_out else ""
        return (f"Scored with the rules this store records (AlgoPerf "
                f"v{config.benchmark_version}): its {len(config.base_workloads or ())} base "
                f"workloads, the 4x cut-off{held}. The official score uses all base workloads "
                "and all submissions; hiding workloads or algorithms recomputes the scores over "
                "what is shown (the fastest time, hence every ratio, depends on who is shown).")

    def __panel__(self) -> pn.viewable.Viewable:
        tables = [part for pair in self._groups.values() for part in pair]
        return pn.Column(
            pn.pane.Markdown(
                "### Benchmark score\nAlgoPerf score: area under the performance profile for "
                "tau in [1, 4], divided by 3 (1 = fastest on every workload). *Grid* uses the "
                "official 100 evenly spaced tau; *exact* integrates the step function."),
            self._about, self._scores,
            pn.pane.Markdown(
                "### Median time to target\nPer workload: the chosen trial of each study (the "
                "first eval meeting the validation target), median over studies, in training "
                "seconds (a column in hours when it reaches 10,000 s); "
                f"*{MISS}* when the median study did not reach "
                f"the target, *{NO_RUNS}* where there is none. These are the times before the "
                "held-out rule and the cut-off; the Studies tab shows each study."),
            *tables,
            sizing_mode="stretch_width",
        )
