"""Per-study times to target: for each workload and algorithm, every study's time and the trial
that AlgoPerf's rule chose in it, beside the median the leaderboard shows.

The choices are `workbench.scoring.study_choices`; this view only formats and groups them.
"""
from __future__ import annotations

import math

import pandas as pd
import panel as pn

from workbench.results import Results
from workbench.views.formats import MISS, amount, group_header, unit_for
from workbench.views.leaderboard import TABLE_CSS
from workbench.views.base import View
from workbench.views.selection import Selection

__all__ = ["StudyTimes", "study_frame"]

ROLE_TITLES = {"scored": "scored", "held_out": "held-out variant", "other": "variant, not scored"}


def _cell(time: float, trial: float, seed: float, trials: int, reached: int, seeds: bool,
          units: str, unit: str) -> str:
    """'5,043 s (t3, 2/5)': the chosen trial's time, the trial (t3, or t3 s1 with its seed) and
    how many of the study's trials met the target; 'miss (0/5)'; '' when the study is absent."""
    if trials == 0:
        return ""
    counts = f"({reached}/{trials})"
    if math.isinf(time) or math.isnan(trial):
        return f"{MISS} {counts}"
    which = f"t{int(trial)}" + (f" s{int(seed)}" if seeds else "")
    return f"{amount(time, units, unit)} ({which}, {reached}/{trials})"


def study_frame(selection: Selection) -> pd.DataFrame:
    """One row per shown (workload, algorithm) with runs: workload, role, algorithm, median, and
    one column per study (`study <k>`) naming its time and chosen trial. Workloads in leaderboard
    groups (scored, held out, other), algorithms in leaderboard order."""
    columns = ["workload", "role", "algorithm", "median"]
    if not selection.n_runs:
        return pd.DataFrame(columns=columns)
    # a study's choice depends on its own trials: made over the full cube once, then cut
    choices = selection.per_cell("study_choices",
                                 lambda: Results.study_choices(selection.full_cube()))
    long = choices.drop_vars([c for c in choices.coords if c not in choices.dims]).to_dataframe()
    seeds = selection.cube.sizes["seed"] > 1
    units = selection.cube["time_to_target"].attrs.get("units", "s")  # or "steps"
    unit = unit_for(long["time_to_target"])  # one unit for the whole table (seconds or hours)
    long["text"] = [_cell(*values, seeds, units, unit) for values in zip(
        long["time_to_target"], long["trial"], long["seed"], long["trials"],
        long["trials_reached"])]
    wide = long["text"].unstack("study")
    wide.columns = [f"study {k}" for k in wide.columns]
    medians = Results.median_over_studies(choices["time_to_target"]).to_series()
    medians = medians.reindex(wide.index)
    wide.insert(0, "median", [amount(v, units, unit) for v in medians.values])
    wide = wide[long.groupby(level=["algorithm", "workload"])["trials"].sum() > 0]
    role = {w: ROLE_TITLES[r] for r, ws in selection.workload_groups().items() for w in ws}
    rank = {a: i for i, a in enumerate(selection.scores()["algorithm"])}  # leaderboard order
    frame = wide.reset_index()
    frame = frame[frame["workload"].isin(role)].assign(role=frame["workload"].map(role))
    frame["_w"] = frame["workload"].map(list(role).index)
    frame["_a"] = frame["algorithm"].map(lambda a: rank.get(a, len(rank)))
    frame = frame.sort_values(["_w", "_a", "algorithm"], kind="stable")
    studies = [c for c in frame.columns if c.startswith("study ")]
    return frame[columns + studies].reset_index(drop=True)


class StudyTimes(View):
    """A table of every study's time to target and chosen trial, grouped by workload."""

    def __init__(self, **params) -> None:
        super().__init__(**params)
        self._table = pn.widgets.Tabulator(
            disabled=True, show_index=False, layout="fit_columns", groupby=["workload"],
            hidden_columns=["workload"], widths={"algorithm": 190},
            titles={"algorithm": "Algorithm", "median": "Median"},
            sizing_mode="stretch_width", height=640, css_classes=["pb-studies"],
            stylesheets=[TABLE_CSS])
        self._first_draw()

    def _update(self) -> None:
        frame = study_frame(self.selection)
        # the group header names the workload and its role; the rows need not repeat it
        header = group_header(frame["workload"] + " (" + frame["role"] + ")")
        frame = frame.assign(workload=header).drop(columns="role")
        self._table.param.update(value=frame, text_align={c: "right" for c in frame.columns
                                                          if c.startswith("study") or
                                                          c == "median"})

    def __panel__(self) -> pn.viewable.Viewable:
        return pn.Column(
            pn.pane.Markdown(
                "### Time to target per study\nEach study tunes its own trials; AlgoPerf "
                "keeps, per study, the trial that met the validation target at the earliest "
                "eval (ties: less time). A cell gives that trial's training time, which trial "
                "it was (*t3*: trial 3; *s1*: seed 1 where trials have seeds) and how many of "
                "the study's trials met the target (*2/5*: 2 of 5); *median* is the "
                "leaderboard's number. One unit for the whole table (hours once any time "
                "reaches 10,000 s). Click a workload's header to fold it."),
            self._table, sizing_mode="stretch_width")
