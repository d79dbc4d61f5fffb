"""The Leaderboard's "what the clock and the pool change" tables (workbench/sensitivity.py).

- Rank shift: each shown algorithm's rank with times to target on the selection's time axis and
  on the other clock (update steps; training seconds when the axis is steps), with the
  probability of its likeliest ranks over the BOOTSTRAP_DRAWS resamplings of the studies (those
  of the score intervals on the selection's axis; the same count and seed on the other).
- Pool sensitivity: each algorithm's score with each other shown algorithm left out, and the
  largest change.

Both come from the selection's per-workload times and scoring rules, as `pacebench score
--rank-shift` and `score --json`'s "pool_sensitivity" compute them with every filter open.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from workbench.results import BOOTSTRAP_DRAWS, Results
from workbench.views.selection import Selection

__all__ = ["other_clock", "rank_shift_frame", "pool_frame", "probabilities_text", "SHOWN_FROM"]

SHOWN_FROM = 0.05  # ranks at least this likely are listed in a probability cell


def other_clock(axis: str) -> str:
    """The clock a rank shift compares `axis` (a time-axis column) with: steps, or training
    seconds when `axis` is steps."""
    return "train_seconds" if Results.axis_column(axis) == "step" else "step"


def probabilities_text(p: list[float]) -> str:
    """'1st 75 %, 2nd 15 %, 3rd 9 %': the ranks with probability >= SHOWN_FROM, by rank (a
    no-break space before each '%', so that a wrapped cell never splits a share)."""
    def ordinal(k: int) -> str:
        suffix = "th" if 10 <= k % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(k % 10, "th")
        return f"{k}{suffix}"
    return ", ".join(f"{ordinal(k)} {100 * q:.0f}\u00a0%" for k, q in enumerate(p, 1)
                     if q >= SHOWN_FROM)


def _other_study_times(selection: Selection, axis: str):
    return selection.cut(selection.full_value(
        f"sensitivity:study_times:{axis}",
        lambda: Results.study_times(selection.full_cube(axis)), time_axis=False))


def _other_replicas(selection: Selection, axis: str):
    full = selection.full_value(
        f"sensitivity:bootstrap:{axis}:{BOOTSTRAP_DRAWS}",
        lambda: Results.bootstrap_medians(Results.study_times(selection.full_cube(axis)),
                                          BOOTSTRAP_DRAWS), time_axis=False)
    return selection.cut(full)


def rank_shift_frame(selection: Selection) -> pd.DataFrame:
    """Per shown algorithm, in the score table's order: algorithm, studies, rank and rank
    probabilities (text) on the selection's axis and on other_clock's (columns named by the
    axes' command-line names, e.g. rank_train, p_rank_steps); empty when nothing is scored."""
    scores = selection.scores()
    if scores.empty:
        return pd.DataFrame(columns=["algorithm"])
    axis, other = selection.time_axis, other_clock(selection.time_axis)
    first, second = Results.axis_name(axis), Results.axis_name(other)

    def make():
        study = _other_study_times(selection, other)
        return Results.rank_shift(
            {first: selection.workload_times(), second: Results.median_over_studies(study)},
            {first: selection.bootstrap_medians(BOOTSTRAP_DRAWS),
             second: _other_replicas(selection, other)}, selection.scoring_config)
    shift = selection.cached("sensitivity:rank_shift", make)
    studies = Results.studies_per_algorithm(selection.study_times())
    rows = [{"algorithm": a, "studies": int(studies.get(a, 0)),
             f"rank_{first}": e[f"rank_{first}"],
             f"p_rank_{first}": probabilities_text(e[f"p_rank_{first}"]),
             f"rank_{second}": e[f"rank_{second}"],
             f"p_rank_{second}": probabilities_text(e[f"p_rank_{second}"])}
            for a, e in shift.items()]
    return pd.DataFrame(rows)


def pool_frame(selection: Selection) -> pd.DataFrame:
    """Per shown algorithm, in the score table's order: algorithm, score, the largest change
    of its score when one other shown algorithm is left out (signed, 4 decimals) and who
    (text); empty when nothing is scored."""
    scores = selection.scores()
    if scores.empty:
        return pd.DataFrame(columns=["algorithm", "score", "largest_change", "without"])
    pool = selection.cached("sensitivity:pool", lambda: Results.pool_sensitivity(
        selection.workload_times(), selection.scoring_config))
    rows = []
    for algorithm in scores["algorithm"]:
        entry = pool[algorithm]
        change = entry["largest_change"]
        who = [b for b, s in entry["without"].items()
               if np.isclose(s - entry["score"], change)] if change else []
        rows.append({"algorithm": algorithm, "score": entry["score"], "largest_change": change,
                     "without": ", ".join(who) if who else "nobody changes it"})
    return pd.DataFrame(rows)
