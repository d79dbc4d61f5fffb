"""What the store's runs are doing: counts by status, and the latest eval of each running trial;
and what the scope left out of the numbers.

Shown above the tabs of the live dashboard, so that a study in progress is visible at a glance:
the counts change as runs start and end, and a running trial's row follows its evals (the
selection re-reads the store every few seconds). Beneath, the scope's notes (workbench/scope.py):
runs of the other ruleset and ad-hoc runs left out, study names pooled or shown apart, trials
with no finished attempt, studies under half finished dropped.
"""
from __future__ import annotations

import math
import re

import pandas as pd
import panel as pn

from workbench import records as R
from workbench.views.base import View
from workbench.views.formats import TABLE_CSS, duration, md

__all__ = ["RunStatus", "ScopeNotes", "status_counts", "running_frame", "scope_notes"]

RUNNING_TITLES = {"run_id": "Run", "algorithm": "Algorithm", "workload": "Workload",
                  "study": "Study", "trial": "Trial", "step": "Step",
                  "train_seconds": "Training time", "value": "Validation (latest)",
                  "best": "Best so far", "target": "Target"}


def status_counts(selection) -> dict[str, int]:
    """The selection's run attempts per status, in records.STATUSES order (statuses with
    none left out)."""
    counts = selection.counts("status")
    return {s: counts[s] for s in R.STATUSES if counts.get(s, 0)}


def running_frame(selection) -> pd.DataFrame:
    """One row per running run of the selection: identity, its latest eval (step, training
    time, validation value of its target metric), the best value so far and the target."""
    if not selection.counts("status").get("running") or selection.store is None:
        return pd.DataFrame(columns=list(RUNNING_TITLES))
    running = selection.runs_where(status="running")
    evals = selection.cached("running_evals",
                             lambda: selection.results.evals(running["run_id"].tolist()))
    rows = []
    for run in running.itertuples():
        mine = evals[evals["run_id"] == run.run_id].sort_values("eval_index")
        column = R.metric_column("validation", run.target_metric)
        last = mine.iloc[-1] if len(mine) else None
        value = float(last[column]) if last is not None and column in mine else math.nan
        rows.append({
            "run_id": run.run_id, "algorithm": run.algorithm, "workload": run.workload,
            "study": run.study, "trial": run.trial,
            "step": int(last["step"]) if last is not None else 0,
            "train_seconds": duration(float(last["train_seconds"])) if last is not None
            else "not yet evaluated",
            "value": f"{value:.4g}" if math.isfinite(value) else "",
            "best": f"{run.best_validation:.4g}" if math.isfinite(run.best_validation) else "",
            "target": f"{run.target_validation:.4g} ({run.target_direction})",
        })
    return pd.DataFrame(rows, columns=list(RUNNING_TITLES))


def skipped_line(skipped: dict[str, str], named: int = 3) -> str:
    """" N runs skipped ..." (Markdown, names escaped) when runs could not be read, else ""."""
    if not skipped:
        return ""
    ids = sorted(skipped)
    more = f" and {len(ids) - named:,} more" if len(ids) > named else ""
    names = ", ".join(md(r) for r in ids[:named])
    return (f" **{len(ids):,} run{'s' if len(ids) > 1 else ''} skipped:** their files "
            f"cannot be read ({names}{more}; the server log says why).")


class RunStatus(View):
    """A line of run counts by status, and a table of the running trials when there are any."""

    def __init__(self, **params) -> None:
        super().__init__(**params)
        self._line = pn.pane.Markdown(sizing_mode="stretch_width", css_classes=["pb-status"],
                                      margin=(0, 10))
        self._table = pn.widgets.Tabulator(
            disabled=True, show_index=False, layout="fit_data_stretch", titles=RUNNING_TITLES,
            sizing_mode="stretch_width", css_classes=["pb-running"], stylesheets=[TABLE_CSS],
            max_height=260, visible=False)
        self._first_draw()

    def _update(self) -> None:
        shown, skipped = self.selection.n_shown, self.selection.skipped
        if not shown and not skipped:
            self._line.object, self._table.visible = "", False
            return
        counts = status_counts(self.selection)
        parts = ", ".join(f"{n:,} {status}" for status, n in counts.items())
        reused = sum(self.selection.counts("reused_from").values())  # copies: --reuse-from
        parts += f"; {reused:,} reused from other stores" if reused else ""
        self._line.object = f"**{shown:,} runs shown:** {parts or 'none'}." + skipped_line(skipped)
        frame = running_frame(self.selection)
        if len(frame) or self._table.visible:  # no running trial now nor before: no redraw
            self._table.param.update(value=frame, visible=len(frame) > 0)

    def __panel__(self) -> pn.viewable.Viewable:
        return pn.Column(self._line, self._table, sizing_mode="stretch_width")


# The scope's notes name the command line's flags; the dashboard's sidebar has a control each.
_SIDEBAR_WORDS = (
    (re.compile(r"--with-adhoc takes them in"), 'tick "ad-hoc runs" in the sidebar to take them '
                                                "in"),
    (re.compile(r"--ruleset (\S+) reads them"), r'pick \1 under "Ruleset" to read them'),
    (re.compile(r"--study NAME reads one"), 'tick one under "Studies" to read one'),
)


def scope_notes(selection, live: bool = True) -> list[str]:
    """What the selection's scope left out or changed, one plain-text line each (Scoped.notes,
    then the trials with no finished attempt per algorithm and workload); `live`: the flags
    the notes name become the sidebar's controls."""
    scoped = selection.scoped()
    lines = list(scoped.notes)
    if live:
        for pattern, words in _SIDEBAR_WORDS:
            lines = [pattern.sub(words, line) for line in lines]
    for algorithm, workloads in scoped.failed.items():
        lines.append(f"trials of {algorithm} with no finished attempt: " + ", ".join(
            f"{n} on {w}" for w, n in workloads.items()))
    return lines


class ScopeNotes(View):
    """The scope's notes (scope_notes) as a list under the status line; hidden when there are
    none. Every name in them is escaped (formats.md)."""

    WATCHES = ("version", "ruleset", "studies", "with_adhoc", "hardware")

    def __init__(self, **params) -> None:
        super().__init__(**params)
        self._notes = pn.pane.Markdown(sizing_mode="stretch_width", margin=(0, 10),
                                       css_classes=["pb-scope-notes"], visible=False)
        self._first_draw()

    def _update(self) -> None:
        lines = scope_notes(self.selection, live=self.live)
        text = "\n".join(["**Scope of the numbers:**", ""] +
                          [f"- {md(line)}" for line in lines])
        self._notes.param.update(object=text if lines else "", visible=bool(lines))

    def __panel__(self) -> pn.viewable.Viewable:
        return self._notes
