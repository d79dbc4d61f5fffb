"""Speedups over a reference algorithm (the sidebar's choice): AlgoPerf's summary of how much less
time an algorithm needs, 1 - geometric mean over the scored workloads of t(algorithm) /
t(reference).

The numbers come from `scoring.speedup_table_with_intervals`, the one speedup policy, with the
same bootstrap draws (`workbench.results.BOOTSTRAP_DRAWS`, seed 0) as `pacebench score`: with
the budgets an AlgoPerf import records, a miss costs the workload's budget + 1 s, as the
official compute_speedups does; without budgets, workloads that one of the two has no result on
are left out. This view only picks, orders and formats.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import panel as pn

from workbench.results import BOOTSTRAP_DRAWS, INTERVAL_LEVEL, MIN_STUDIES_FOR_INTERVAL, Results
from workbench.views.formats import TABLE_CSS, md, percent
from workbench.views.base import FILTERS, View
from workbench.views.selection import Selection

__all__ = ["Speedups", "speedup_frame", "uses_budgets", "interval_label"]

TITLES = {"algorithm": "Algorithm", "faster_by": "Less time than the reference",
          "interval": f"{100 * INTERVAL_LEVEL:.0f} % interval",
          "time_ratio": "Time ratio (geometric mean)"}
_COLUMNS = ["algorithm", "faster_by", "time_ratio", "low", "high", "studies"]


def uses_budgets(selection: Selection) -> bool:
    """Whether the speedups follow AlgoPerf's budget rule (scoring.uses_budgets)."""
    return Results.uses_budgets(selection.scoring_config, selection.workload_groups()["scored"],
                                selection.time_axis)


def speedup_frame(selection: Selection) -> pd.DataFrame:
    """algorithm, faster_by (1 - time_ratio), time_ratio, and the INTERVAL_LEVEL bootstrap
    interval of faster_by (low, high: NaN below MIN_STUDIES_FOR_INTERVAL studies of the
    algorithm or the reference) with those studies (the fewer of the two):
    scoring.speedup_table_with_intervals over BOOTSTRAP_DRAWS draws of the studies, as
    `Results.score()` makes them. In leaderboard order, the reference first. Empty when there
    is no reference or no scored workload."""
    if (selection.reference not in selection.finished_algorithms()
            or not selection.workload_groups()["scored"] or not selection.n_runs):
        return pd.DataFrame(columns=_COLUMNS)
    reference = selection.reference

    def make() -> pd.DataFrame:
        return Results.speedup_table_with_intervals(
            selection.workload_times(), selection.study_times(),
            selection.bootstrap_medians(BOOTSTRAP_DRAWS), reference,
            selection.scoring_config, selection.ruleset or "external", selection.time_axis,
            INTERVAL_LEVEL)
    table = selection.cached(f"speedups:{reference}", make)
    order = [reference] + [a for a in selection.scores()["algorithm"]
                           if a != reference and a in table.index]
    return table.reindex(order).rename_axis("algorithm").reset_index()[_COLUMNS]


def interval_label(algorithm: str, reference: str | None, low: float, high: float,
                   studies: int) -> str:
    """'+24.3 % to +30.9 %'; '' for the reference; 'n/a (2 studies)' below 3 studies."""
    if algorithm == reference:
        return ""
    if pd.isna(low):
        return Results.interval_text(np.nan, np.nan, int(studies))
    return f"{percent(low)} to {percent(high)}"


def _shown(frame: pd.DataFrame) -> pd.DataFrame:
    """The frame as text: '+27.9 %' and '0.721'."""
    ratio = [f"{r:.3f}" if math.isfinite(r) else ("inf" if r > 0 else "n/a")
             for r in frame["time_ratio"]]
    reference = frame["algorithm"].iloc[0] if len(frame) else None  # listed first
    intervals = [interval_label(r.algorithm, reference, r.low, r.high, r.studies)
                 for r in frame.itertuples()]
    return frame.assign(faster_by=frame["faster_by"].map(percent), time_ratio=ratio,
                        interval=intervals)[list(TITLES)]


class Speedups(View):
    """A table of each shown algorithm's speedup over the selection's reference algorithm."""

    WATCHES = FILTERS + ("reference",)


    def __init__(self, **params) -> None:
        super().__init__(**params)
        self._about = pn.pane.Markdown(sizing_mode="stretch_width")
        self._table = pn.widgets.Tabulator(
            disabled=True, show_index=False, layout="fit_data_stretch", titles=TITLES,
            text_align={"faster_by": "right", "time_ratio": "right", "interval": "right"},
            sizing_mode="stretch_width", css_classes=["pb-speedups"], stylesheets=[TABLE_CSS])
        self._first_draw()

    def _update(self) -> None:
        frame = speedup_frame(self.selection)
        self._table.value = _shown(frame)
        self._about.object = self._text()

    def _text(self) -> str:
        reference = self.selection.reference
        if reference is None:
            return "No algorithm is shown to measure speedups against."
        how = ("A miss (and a workload without results) counts as the workload's runtime "
               "budget + 1 s, as AlgoPerf's compute_speedups does; medians over studies, "
               "before the held-out rule and the cut-off" if uses_budgets(self.selection) else
               "Workloads that one of the two has no result on are left out; a miss where the "
               "reference reached the target makes the ratio infinite (no budgets recorded)")
        pick = " (pick another in the sidebar)" if self.live else ""
        return (f"Against **{md(reference)}**{pick}: *less time* = 1 - "
                f"the geometric mean over the shown scored workloads of t(algorithm) / "
                f"t({md(reference)}); +27.9 % means 27.9 % less training time. {how}. "
                f"*{100 * INTERVAL_LEVEL:.0f} % interval*: of the speedup when each "
                f"algorithm's studies are resampled ({BOOTSTRAP_DRAWS:,} bootstrap draws, as "
                f"`pacebench score`); *n/a* below {MIN_STUDIES_FOR_INTERVAL} studies "
                "of it or of the reference.")

    def __panel__(self) -> pn.viewable.Viewable:
        return pn.Column(pn.pane.Markdown("### Speedups"), self._about, self._table,
                         sizing_mode="stretch_width")
