"""Leaderboard: AlgoPerf benchmark scores, and the per-workload median time to target.

Both tables come from `workbench.scoring` over the selection's final cube and scoring rules (the
store's ScoringConfig when it records one, e.g. an AlgoPerf import); this view only orders,
labels and formats them. The score intervals are those of `pacebench score` and
`workbench.results.Results.score()`: scoring.with_score_intervals over the same
BOOTSTRAP_DRAWS draws (seed 0) at INTERVAL_LEVEL.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import panel as pn
import param
from bokeh.models.widgets.tables import NumberFormatter

from workbench.catalog import noise_floor_of
from workbench.holdings import LADDER_NOTE, store_holdings
from workbench.results import (AXIS_LABELS, BOOTSTRAP_DRAWS, INTERVAL_LEVEL,
                               MIN_STUDIES_FOR_INTERVAL, Results)
from workbench.views.formats import (MISS, NO_RUNS, TABLE_CSS, amount, md, percent, ratio_color,
                                     unit_for, wrap_title)
from workbench.views.sensitivity import other_clock, pool_frame, rank_shift_frame
from workbench.views.speedups import interval_label, speedup_frame
from workbench.views.base import FILTERS, View
from workbench.views.selection import Selection

__all__ = ["Leaderboard", "score_frame", "score_intervals", "times_frame", "workload_time_table", "ratio_styles",
           "noise_row", "NOISE_LABEL",
           "TABLE_CSS", "GROUP_TITLES",
           "wrap_title", "MISS", "NO_RUNS"]

SCORE_TITLES = {"algorithm": "Algorithm", "score": "Score (grid)", "studies": "Studies",
                "interval": f"{100 * INTERVAL_LEVEL:.0f} % interval",
                "exact_score": "Score (exact)",
                "workloads_reached": "Workloads within 4x of the fastest",
                "workloads_scored": "Workloads scored", "speedup": "Speedup"}
POOL_TITLES = {"algorithm": "Algorithm", "score": "Score (grid)",
               "largest_change": "Largest change, one algorithm left out",
               "without": "Left out"}
GROUP_TITLES = {
    "scored": "Scored workloads",
    "held_out": "Held-out variants (inputs of their base workload's score, not scored alone)",
    "other": "Other variants (not scored)",
}


def score_intervals(selection: Selection) -> pd.DataFrame:
    """The selection's score table (Selection.scores, best first) with each algorithm's
    studies and its score interval (low, high; NaN below MIN_STUDIES_FOR_INTERVAL
    studies; interval as text): scoring.with_score_intervals over BOOTSTRAP_DRAWS draws of the
    studies at INTERVAL_LEVEL, as `Results.score()` makes them (cached); empty when nothing
    is scored."""
    def make() -> pd.DataFrame:
        scores = selection.scores()
        if scores.empty:
            return scores.assign(studies=[], low=[], high=[], interval=[])
        return Results.with_score_intervals(scores, selection.study_times(),
                                            selection.bootstrap_medians(BOOTSTRAP_DRAWS),
                                            selection.scoring_config, INTERVAL_LEVEL)
    return selection.cached("score_intervals", make)


def score_frame(selection: Selection) -> pd.DataFrame:
    """The selection's score table (score_intervals, best first) with the interval as text
    ('0.612 to 0.701'; 'n/a (2 studies)' below MIN_STUDIES_FOR_INTERVAL) and the
    speedup over the reference (speedups.speedup_frame, '+27.9 %'); empty when nothing is
    scored."""
    scores = score_intervals(selection)
    if scores.empty:
        return pd.DataFrame(columns=list(SCORE_TITLES))
    speedups = speedup_frame(selection).set_index("algorithm")
    return scores.assign(
        speedup=[_speedup_text(speedups, a, selection.reference) for a in scores["algorithm"]],
    )[list(SCORE_TITLES)]


def workload_time_table(selection: Selection, order: list[str],
                        workloads: list[str] | None = None) -> pd.DataFrame:
    """Median time to target (on the selection's time axis) per algorithm (rows, in `order`)
    and workload (columns, default every shown workload): numbers, +inf for a miss, NaN where
    there is no run."""
    times = selection.workload_times().transpose("algorithm", "workload").to_pandas()
    shown = workloads if workloads is not None else \
        [w for w in times.columns if w in selection.workloads]
    rows = [a for a in order if a in times.index] + [a for a in times.index if a not in order]
    return times.reindex(index=rows, columns=shown).rename_axis(index="algorithm", columns=None)


def _speedup_text(speedups: pd.DataFrame, algorithm: str, reference: str | None) -> str:
    """'+27.9 % (+24.3 to +30.9)': the speedup over the reference and its interval (in
    percent too, the signs left out there so that the column stays narrow)."""
    if algorithm not in speedups.index:
        return "n/a"
    row = speedups.loc[algorithm]
    if np.isinf(row["faster_by"]):  # a miss where the reference reached the target
        return "n/a (a miss)"
    label = interval_label(algorithm, reference, row["low"], row["high"], row["studies"])
    return percent(row["faster_by"]) + (f" ({label.replace(' %', '')})" if label else "")


def times_frame(selection: Selection, order: list[str],
                workloads: list[str] | None = None) -> pd.DataFrame:
    """workload_time_table as text ('5,043 s', '9.2 h', '1,250 steps', MISS, NO_RUNS), one
    unit for the whole table (hours once any time reaches formats.HOURS_FROM seconds)."""
    if not selection.n_runs:
        return pd.DataFrame(columns=["algorithm"])
    times = workload_time_table(selection, order, workloads)
    units = selection.cube["time_to_target"].attrs.get("units", "s")
    unit = unit_for(times.to_numpy().ravel())
    text = times.apply(lambda column: column.map(lambda v: amount(v, units, unit)))
    return text.reset_index()


NOISE_LABEL = "noise floor (CoV)"
NOISE_STYLE = "color: #555; font-style: italic; border-top: 1px solid #999"


def noise_row(workloads: list[str]) -> dict[str, str] | None:
    """The times tables' last row: each workload's noise floor, the coefficient of variation of
    the tuned baseline's time to target over the seeds its target was set with ('10.0 %'; 'not
    measured' where there is none); None when no workload shown has one (an AlgoPerf store)."""
    floors = {w: noise_floor_of(w) for w in workloads}
    if not any(f is not None for f in floors.values()):
        return None
    return {"algorithm": NOISE_LABEL,
            **{w: "not measured" if f is None or not np.isfinite(f.cov)
               else f"{100 * f.cov:.1f} %" for w, f in floors.items()}}


def ratio_styles(times: pd.DataFrame) -> pd.DataFrame:
    """CSS per cell of a times_frame: its colour by the ratio to its column's best time."""
    with np.errstate(divide="ignore", invalid="ignore"):
        best = times.where(np.isfinite(times)).min()
        ratios = times / best
    styles = ratios.map(ratio_color).reset_index()
    styles["algorithm"] = ""
    return styles


def _table(css_class: str, layout: str = "fit_data_stretch", **options) -> pn.widgets.Tabulator:
    """A read-only table; a long algorithm name wraps within its column (formats.TABLE_CSS)
    instead of squeezing the other columns. No cell tooltips: Tabulator writes a tooltip as
    HTML, and names come from stores."""
    options.setdefault("widths", {"algorithm": ALGORITHM_WIDTH})
    return pn.widgets.Tabulator(disabled=True, show_index=False, layout=layout,
                                sizing_mode="stretch_width", css_classes=[css_class],
                                stylesheets=[TABLE_CSS], **options)


ALGORITHM_WIDTH = 210  # pixels of the score table's algorithm column; a longer name wraps
# the score table's columns but the last (pixels): Speedup, with its interval, gets the rest
SCORE_WIDTHS = {"algorithm": ALGORITHM_WIDTH, "score": 90, "studies": 95, "interval": 130,
                "exact_score": 95, "workloads_reached": 120, "workloads_scored": 120}


class Leaderboard(View):
    """The score table (sorted by score) above the median time-to-target tables, one per group
    of workloads (scored, held-out variants, other variants)."""

    WATCHES = FILTERS + ("reference",)
    show_sensitivity = param.Boolean(default=False, doc=(
        "Show what the clock and the pool change: each algorithm's rank on the other clock "
        "with its probabilities, and its score with each other algorithm left out "
        "(workbench/views/sensitivity.py)."))
    keep_columns = param.Boolean(default=False, doc=(
        "Keep a column for every workload of the store, the unshown ones hidden (the "
        "dashboard: ticking a workload then changes values, not the columns, whose rebuild "
        "is slow); else only the shown workloads' columns (the report)."))

    def __init__(self, **params) -> None:
        super().__init__(**params)
        self._scores = _table(
            # rows come in the one score order (scoring.rank_scores: score, exact score,
            # name); a client-side sorter would shuffle ties, so none is set
            "pb-scores", sortable=True, titles=SCORE_TITLES, widths=SCORE_WIDTHS,
            formatters={"score": NumberFormatter(format="0.0000"),
                        "exact_score": NumberFormatter(format="0.0000")})
        self._about = pn.pane.Markdown(sizing_mode="stretch_width")
        self._groups = {name: (pn.pane.Markdown(f"#### {title}"),
                               # a report's: sized by their data, not by the width their
                               # container had when drawn (drawn before the page had its width,
                               # fit_columns squeezed every column under its header)
                               _table(f"pb-times-{name}", layout="fit_columns"
                                      if self.keep_columns else "fit_data_stretch",
                                      widths={"algorithm": 190}, sortable=False,
                                      value=pd.DataFrame(columns=["algorithm"])))
                        for name, title in GROUP_TITLES.items()}
        self._styles: dict[str, pd.DataFrame] = {}  # group -> cell colours of its table
        for name, (_, table) in self._groups.items():  # a Styler exists once a value is set
            table.style.apply(lambda frame, name=name: self._style_of(name, frame), axis=None)
        self._times_about = pn.pane.Markdown(sizing_mode="stretch_width")
        self._times = self._groups["scored"][1]  # the scored workloads' table
        self._sensitivity_toggle = pn.widgets.Toggle.from_param(
            self.param.show_sensitivity, name="Show what the clock and the pool change",
            color="light", css_classes=["pb-sensitivity-toggle"], width=320)
        self._sensitivity_about = pn.pane.Markdown(sizing_mode="stretch_width", visible=False)
        self._ranks = _table("pb-rank-shift", layout="fit_columns", visible=False)
        self._pool = _table("pb-pool", visible=False, titles=POOL_TITLES, formatters={
            "score": NumberFormatter(format="0.0000"),
            "largest_change": NumberFormatter(format="+0.0000")})
        self.param.watch(lambda _event: self._selection_changed(), "show_sensitivity")
        self._first_draw()

    def _style_of(self, name: str, frame: pd.DataFrame) -> pd.DataFrame:
        styles = self._styles.get(name)
        if styles is None or styles.shape != frame.shape or list(styles.columns) != \
                list(frame.columns):
            return pd.DataFrame("", index=frame.index, columns=frame.columns)
        return styles.set_axis(frame.index)

    def _update(self) -> None:
        self._update_sensitivity()
        self._times_about.object = self._times_text()
        scores = score_frame(self.selection)
        self._scores.value = scores
        zero = Results.all_zero_reason(scores)
        if zero and store_holdings(self.selection).ladder_only:  # zeros by design: no advice
            zero = LADDER_NOTE
        self._about.object = self._rules_text() + (f"\n\n**{zero}**" if zero else "")
        order = list(scores["algorithm"])
        every = self.selection.store_workload_groups() if self.keep_columns else {}
        for name, workloads in self.selection.workload_groups().items():
            title, table = self._groups[name]
            kept = every.get(name, [])
            columns = kept + [w for w in workloads if w not in kept]
            frame = times_frame(self.selection, order, columns)
            styles = ratio_styles(workload_time_table(self.selection, order, columns)) \
                if self.selection.n_runs else None
            noise = noise_row(columns) if len(frame) else None
            if noise is not None:
                frame = pd.concat([frame, pd.DataFrame([noise])], ignore_index=True)
                styles = pd.concat([styles, pd.DataFrame([{c: NOISE_STYLE for c in
                                                           styles.columns}])],
                                   ignore_index=True)
            if styles is not None:
                self._styles[name] = styles
            titles = {"algorithm": "Algorithm", **{w: wrap_title(w) for w in columns}}
            table.param.update(value=frame, titles=titles,
                               text_align={w: "right" for w in columns},
                               hidden_columns=[w for w in columns if w not in workloads])
            title.visible = table.visible = bool(workloads) and len(frame) > 0

    def _update_sensitivity(self) -> None:
        """The rank-shift and pool tables, drawn only while show_sensitivity is on (their
        bootstrap on the second clock costs about a second on the v0.5 logs)."""
        shown = self.show_sensitivity and self.selection.n_runs > 0
        for part in (self._sensitivity_about, self._ranks, self._pool):
            part.visible = shown
        if not shown:
            return
        ranks = rank_shift_frame(self.selection)
        axis, other = self.selection.time_axis, other_clock(self.selection.time_axis)
        titles = {"algorithm": "Algorithm", "studies": "Studies"}
        widths = {"algorithm": ALGORITHM_WIDTH, "studies": 95}
        for column in (axis, other):
            key, label = Results.axis_name(column), AXIS_LABELS[column]
            titles.update({f"rank_{key}": f"Rank by {label}",
                           f"p_rank_{key}": f"P(rank) by {label}"})
            widths[f"rank_{key}"] = 110
        first, second = AXIS_LABELS[axis], AXIS_LABELS[other]
        self._ranks.param.update(  # the probabilities wrap within their columns
            value=ranks, titles=titles, widths=widths,
            formatters={c: {"type": "textarea"} for c in ranks.columns if c.startswith("p_")})
        self._pool.value = pool_frame(self.selection)
        self._sensitivity_about.object = (
            f"**Rank shift**: each algorithm's rank (the score table's order) with times to "
            f"target counted in {first} and in {second}, and how likely each rank is over "
            f"{BOOTSTRAP_DRAWS:,} bootstrap resamplings of each algorithm's studies (the draws "
            f"of the score intervals; the same count and seed on the other clock; ranks under "
            f"5 % left out). **Pool sensitivity**: a score is relative to the pool (the "
            "fastest time on each workload sets every ratio): each algorithm's score, and the "
            "largest change when one other shown algorithm is left out, and which one.")

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

    def _times_text(self) -> str:
        axis = self.selection.time_axis
        what = {"train_seconds": "training seconds (a table in hours when any time "
                                 "reaches 10,000 s)",
                "wall_seconds": "wall-clock seconds, evals included (a table in hours "
                                "when any time reaches 10,000 s)",
                "step": "update steps"}[axis]
        return (
            "Per workload: the chosen trial of each study (the "
            f"first eval meeting the validation target), median over studies, in {what}; "
            f"*{MISS}* when the median study did not reach the target, *{NO_RUNS}* where there "
            "is none. Colour: green for the fastest on the workload, white at 2x, red from 4x "
            "(grey: a miss). These are the times before the held-out rule and the cut-off; the "
            "Studies tab shows each study and its chosen trial. Last row, *noise floor* (for the "
            "catalog workloads whose target Pacebench set): how "
            "much the tuned baseline's time to target varies with the seed alone on this "
            "workload (coefficient of variation over the seeded reruns that set its target, "
            "*workbench/targets/&lt;workload&gt;.json*; *pacebench noise* measures it for any "
            "setting): a "
            "difference in time well inside it is not evidence of a faster algorithm.")

    def __panel__(self) -> pn.viewable.Viewable:
        tables = [part for pair in self._groups.values() for part in pair]
        return pn.Column(
            pn.pane.Markdown(
                "### Benchmark score\nAlgoPerf score: area under the performance profile for "
                "tau in [1, 4], divided by 3 (1 = fastest on every workload). *Grid* uses the "
                "official 100 evenly spaced tau; *exact* integrates the step function. "
                f"*{100 * INTERVAL_LEVEL:.0f} % interval*: of the grid score when each "
                f"algorithm's studies are resampled ({BOOTSTRAP_DRAWS:,} bootstrap draws, as "
                "`pacebench score`); with fewer than "
                f"{MIN_STUDIES_FOR_INTERVAL} studies it reads *n/a*: resampling one or "
                "two studies gives them back, not an uncertainty (run more `--studies`). "
                "*Studies*: the algorithm's studies with a run on a shown workload. "
                "*Workloads within 4x of the fastest*: of the *workloads scored*, those "
                "where the algorithm's median study reached the target in at most 4x the "
                "fastest algorithm's time (after the held-out rule, where the store's rules "
                "have one): the workloads that earn it score. "
                "*Speedup*: less time than the reference algorithm ("
                + ("picked in the sidebar" if self.live else
                   f"here {md(self.selection.reference or 'none')}")
                + "), geometric mean over the scored workloads, as in the Speedups tab."),
            self._about, self._scores,
            # the heading in a pane of its own: one re-rendered on a time-axis change grew to
            # the page theme's heading size
            pn.pane.Markdown("### Median time to target"), self._times_about, *tables,
            *([pn.pane.Markdown("### What the clock and the pool change"),
               self._sensitivity_toggle, self._sensitivity_about, self._ranks, self._pool]
              if self.live else []),
            sizing_mode="stretch_width",
        )
