"""What the store's runs are doing: counts by status, and the latest eval of each running trial.

Shown above the tabs of the live dashboard, so that a study in progress is visible at a glance:
the counts change as runs start and end, and a running trial's row follows its evals (the
selection re-reads the store every few seconds).
"""
from __future__ import annotations

import math

import pandas as pd
import panel as pn

from workbench import query
from workbench import records as R
from workbench.views.base import View
from workbench.views.formats import TABLE_CSS, duration, md

__all__ = ["RunStatus", "status_counts", "running_frame"]

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
    evals = selection.cached("running_evals", lambda: query.evals_frame(
        selection.store, list(running["run_id"])))
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
        shown, skipped = self.selection.n_runs, self.selection.skipped
        if not shown and not skipped:
            self._line.object, self._table.visible = "", False
            return
        counts = status_counts(self.selection)
        parts = ", ".join(f"{n:,} {status}" for status, n in counts.items())
        self._line.object = f"**{shown:,} runs shown:** {parts or 'none'}." + skipped_line(skipped)
        frame = running_frame(self.selection)
        if len(frame) or self._table.visible:  # no running trial now nor before: no redraw
            self._table.param.update(value=frame, visible=len(frame) > 0)

    def __panel__(self) -> pn.viewable.Viewable:
        return pn.Column(self._line, self._table, sizing_mode="stretch_width")
