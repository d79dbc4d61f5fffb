"""Live progress of a study while it runs: trials done, running and failed, and the latest eval of
each running trial.

The launcher (runners/launch/study.py) calls `StudyProgress.update` every poll; the view is refreshed at
most once per `REFRESH_S`. The latest evals are read from the store (Store.latest_eval), where
every running trial appends its eval rows as they are computed, so the view needs nothing from
the workers, whichever backend runs them. In a terminal the view is a tqdm bar plus one line per
running trial (the bar alone when stderr is not a terminal); in a notebook (an IPython kernel)
it is one text block updated in place (a display handle), which also ends up in an executed
notebook's record.
"""
from __future__ import annotations

import math
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Iterable

from workbench import records as R
from workbench.catalog import get_workload
from workbench.spec import RunConfig
from workbench.store import Store

__all__ = ["StudyProgress", "Snapshot", "RunningTrial", "in_notebook"]

REFRESH_S = 1.0  # seconds between two refreshes of the view


@dataclass
class RunningTrial:
    """One running trial and its latest eval row (None before its first eval)."""

    label: str
    latest: dict[str, Any] | None = None
    metric: str | None = None  # the eval row's column of the workload's validation target metric

    def text(self) -> str:
        if not self.latest:
            return f"{self.label}: no eval yet"
        value = self.latest.get(self.metric) if self.metric else None
        shown = f"{self.metric}={value:.4g}  " if isinstance(value, (int, float)) and \
            math.isfinite(value) else ""
        return (f"{self.label}: step {self.latest.get('step')}  {shown}"
                f"train {self.latest.get('train_seconds') or 0.0:.1f} s")


@dataclass
class Snapshot:
    """Counts of a study's trials at one moment, and its running trials."""

    total: int
    done: int
    failed: int
    running: list[RunningTrial] = field(default_factory=list)

    def headline(self) -> str:
        return (f"{self.done + self.failed}/{self.total} trials finished: {self.done} done, "
                f"{len(self.running)} running, {self.failed} failed")

    def text(self) -> str:
        return "\n".join([self.headline(), *("  " + r.text() for r in self.running)])


def _label(config: RunConfig) -> str:
    return (f"{config.workload} {config.algorithm} s{config.study} t{config.trial} "
            f"seed {config.seed}")


def _metric_column(config: RunConfig) -> str | None:
    try:
        return R.metric_column("validation", get_workload(config.workload).target.metric)
    except KeyError:
        return None


def in_notebook() -> bool:
    """True inside a Jupyter kernel (where a display handle can be updated in place)."""
    shell = sys.modules.get("IPython") and sys.modules["IPython"].get_ipython()
    return bool(shell) and type(shell).__name__ == "ZMQInteractiveShell"


class StudyProgress:
    """The live view of one launch. `update(result, running)` takes the launcher's StudyResult
    (succeeded and failed so far) and the configs of the running trials."""

    def __init__(self, store: Store, total: int, enabled: bool = True) -> None:
        self.store, self.total, self.enabled = store, total, enabled
        self._last = -math.inf
        self._bar = self._lines = self._handle = None
        self.snapshot = Snapshot(total, 0, 0)
        if enabled and in_notebook():
            from IPython.display import display
            self._handle = display(self._pre(self.snapshot.text()), display_id=True)
        elif enabled:
            from tqdm import tqdm
            self._bar = tqdm(total=total, unit="trial", dynamic_ncols=True)
            self._lines = []

    def update(self, result: Any, running: Iterable[RunConfig], force: bool = False) -> Snapshot:
        """Refresh the counts (cheap) and, at most once per REFRESH_S, the latest evals."""
        running = list(running)
        now = time.monotonic()
        if not (force or now - self._last >= REFRESH_S):
            return self.snapshot
        self._last = now
        self.snapshot = Snapshot(self.total, result.succeeded, len(result.failed), [
            RunningTrial(_label(c), self.store.latest_eval(c.trial_key), _metric_column(c))
            for c in running])
        self._render()
        return self.snapshot

    def _render(self) -> None:
        s = self.snapshot
        if self._handle is not None:
            self._handle.update(self._pre(s.text()))
        elif self._bar is not None:
            self._bar.n = s.done + s.failed
            self._bar.set_postfix(running=len(s.running), failed=s.failed, refresh=False)
            self._bar.refresh()
            if sys.stderr.isatty():  # cursor-positioned lines would garble a log file
                self._show_lines([r.text() for r in s.running])

    def _show_lines(self, texts: list[str]) -> None:
        """One tqdm line per running trial, below the bar (lines are reused, not re-created)."""
        from tqdm import tqdm

        while len(self._lines) < len(texts):
            self._lines.append(tqdm(total=0, position=len(self._lines) + 1, bar_format="{desc}",
                                    dynamic_ncols=True, leave=False))
        for i, line in enumerate(self._lines):
            line.set_description_str("  " + texts[i] if i < len(texts) else "", refresh=True)

    @staticmethod
    def _pre(text: str):
        from IPython.display import HTML
        import html
        return HTML(f"<pre>{html.escape(text)}</pre>")

    def close(self) -> None:
        if self._bar is not None:
            for line in self._lines:
                line.close()
            self._bar.n = self.snapshot.done + self.snapshot.failed
            self._bar.close()
        elif self._handle is not None:
            self._handle.update(self._pre(self.snapshot.text()))
