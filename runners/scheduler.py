"""Running a launch's trials: up to `workers` attempts at a time on a backend, each trial claimed
in the store before it starts, every ending reaped into the study's result and the store.

A worker that dies costs its trial only: its run is marked `interrupted` (or `failed`) with how
it died (_record_death), and the study's summary gives the last line of the error that ended it
(_error_line). A worker that exits badly after its run was sealed complete or diverged (e.g. a
data-parallel rank aborting in its exit handlers) leaves its trial done: a warning in the
result, not a failure. `trial_timeout` (LaunchOptions) is the per-attempt wall-clock watchdog.
"""
from __future__ import annotations

import re
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from runners.processes import LaunchOptions, Outcome, describe_exit
from workbench.catalog import get_workload
from workbench.records import DONE_STATUSES, run_identity
from workbench.spec import RunConfig
from workbench.store import Store, utc_now

__all__ = ["Scheduler", "StudyResult", "POLL_S", "WRITER_GRACE_S"]

POLL_S = 0.1  # how often the launcher checks its workers
WRITER_GRACE_S = 10.0  # how long a dead worker's own child may take to die with it


@dataclass
class StudyResult:
    """What a launch did: how many trials were planned, skipped (resume), run, and which failed."""

    planned: int = 0
    skipped: int = 0
    succeeded: int = 0
    failed: list[str] = field(default_factory=list)  # one line per failed or killed worker
    warnings: list[str] = field(default_factory=list)  # workers that exited badly after their
                                                       # run was sealed complete (not failures)
    seconds: float = 0.0
    early_stop: dict[str, Any] | None = None  # the study summary when trials stopped early

    def summary(self) -> str:
        text = (f"{self.planned} trials planned, {self.skipped} already done, {self.succeeded} ran, "
                f"{len(self.failed)} failed, in {self.seconds:.1f} s")
        return "\n".join([text, *("  " + f for f in self.failed),
                          *("  warning: " + w for w in self.warnings), *self._early_stop_lines()])

    def _early_stop_lines(self) -> list[str]:
        if not self.early_stop:
            return []
        lines = []
        for g in self.early_stop["groups"]:
            best = g["best"] or {}
            lines.append(
                f"early stopping ({', '.join(self.early_stop['estimators'])}) {g['workload']} "
                f"{g['algorithm']}: {g['pruned']} of {g['trials']} trials stopped early; "
                f"{g['spent_train_seconds']:.1f} train s spent, {g['saved_train_seconds']:.1f} s "
                f"saved ({100 * g['saved_fraction_seconds']:.0f} %), "
                f"{g['saved_steps']:.0f} steps saved ({100 * g['saved_fraction_steps']:.0f} %); "
                f"best trial {best.get('trial')} ({best.get('best_validation')})")
        return lines


class Scheduler:
    """Keeps up to `workers` attempts running on a backend, reaps them, enforces the watchdog
    and shows progress."""

    def __init__(self, store: Store, backend, workers: int, data_dir, progress: bool,
                 hooks: Mapping[str, Any] | None, options: LaunchOptions,
                 chosen: Mapping[str, Any] | None = None) -> None:
        self.store, self.backend, self.workers = store, backend, workers
        self.data_dir, self.progress, self.options = data_dir, progress, options
        self.hooks = dict(hooks or {})
        self.chosen = dict(chosen or {})  # algorithm -> runners.tuning.ChosenSpace

    def run(self, todo: list[tuple[RunConfig, dict]], result: StudyResult) -> None:
        """Run `todo`, (config, its place in the launch order) pairs, in their order."""
        from runners.progress import StudyProgress

        queue, running = list(todo), {}  # handle -> (config, monotonic start, UTC start)
        places = {}  # handle -> its trial's place in the launch order
        claims = {}  # handle -> the claim on its trial, held while it runs
        view = StudyProgress(self.store, len(todo), enabled=self.progress)
        try:
            while queue or running:
                while queue and len(running) < self.workers:
                    config, place = queue.pop(0)
                    claim = self._claim(config, result)
                    if claim is None:
                        continue
                    started_at = utc_now()  # before its run can start
                    handle = self._start(config, place)  # the watchdog counts from here
                    running[handle], claims[handle] = (config, time.monotonic(), started_at), claim
                    places[handle] = place
                for handle, (config, started, started_at) in list(running.items()):
                    outcome = self._outcome(handle, started)
                    if outcome is not None:
                        del running[handle]
                        self._reap(outcome, config, result, started_at, places.pop(handle))
                        claims.pop(handle).release()
                view.update(result, [c for c, *_ in running.values()])
                time.sleep(POLL_S)
        finally:
            for handle in running:  # the launcher is ending early (Ctrl-C): stop the workers
                handle.kill(signal.SIGTERM)
            for handle in running:
                handle.wait()
                claims.pop(handle).release()
            view.update(result, [c for c, *_ in running.values()], force=True)
            view.close()

    def _claim(self, config: RunConfig, result: StudyResult):
        """The store's claim on `config`'s trial, or None (the trial counted as skipped) when
        another launcher runs it right now or has finished it since this launch was planned."""
        claim = self.store.claim(config.trial_key)
        if claim is not None and any(d.get("status") in DONE_STATUSES
                                     for d in self.store.attempts(config.trial_key)):
            claim.release()
            claim = None
        if claim is None:
            result.skipped += 1
        return claim

    def _outcome(self, handle, started: float) -> Outcome | None:
        """How the attempt ended, or None while it runs; an overdue attempt is killed."""
        outcome = handle.poll()
        limit = self.options.trial_timeout
        if outcome is None and limit is not None and time.monotonic() - started > limit:
            handle.kill()
            while (outcome := handle.poll()) is None:
                time.sleep(POLL_S)
            outcome.note = f"watchdog: no result after {limit:g} s wall clock, killed"
        return outcome

    def _log_path(self, config: RunConfig) -> Path:
        return self.store.log_path(config.study_name, config.trial_key)

    def _start(self, config: RunConfig, place: dict):
        job = {"config": config.to_dict(), "launch_order": place, "store": str(self.store.root),
               "data_dir": str(self.data_dir) if self.data_dir else None, "hooks": self.hooks,
               "checkpoint_minutes": self.options.checkpoint_minutes,
               "search_space": (self.chosen[config.algorithm].fields()
                                if config.algorithm in self.chosen else None)}
        return self.backend.start(job, self._log_path(config))

    def _reap(self, outcome: Outcome, config: RunConfig, result: StudyResult,
              started_at: str, place: dict | None = None) -> None:
        if outcome.returncode == 0 and not outcome.note:
            result.succeeded += 1
            return
        how = outcome.note or (f"worker {describe_exit(outcome.returncode)}"
                               if outcome.returncode is not None else "worker lost")
        sealed = [d for d in self.store.attempts(config.trial_key)
                  if (d.get("started_at") or "") >= started_at
                  and d.get("status") in DONE_STATUSES]
        if sealed:  # e.g. a data-parallel rank aborting in its exit handlers: the run is whole
            result.succeeded += 1
            result.warnings.append(f"{config.workload} {config.algorithm} study {config.study} "
                                   f"trial {config.trial}: {how} after its run "
                                   f"{sealed[-1]['run_id']} was sealed {sealed[-1]['status']}; "
                                   f"log {self._log_path(config)}")
            return
        error = _error_line(self.store, config, started_at, self._log_path(config))
        _record_death(self.store, config, how, outcome, started_at, place)
        what = f"{error} ({how})" if error else how  # the error first: it says what to fix
        result.failed.append(f"{config.workload} {config.algorithm} study {config.study} "
                             f"trial {config.trial} seed {config.seed}: {what}; "
                             f"log {self._log_path(config)}")


# The last line of a Python traceback: "ValueError: ...", "KeyboardInterrupt",
# "torch.OutOfMemoryError: ..." (a dotted name needs its message, to tell it from other lines).
_EXCEPTION_LINE = re.compile(r"[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt)(: .*)?"
                             r"|[A-Za-z_][\w.]*\.[A-Z]\w*: .+")


def _error_line(store: Store, config: RunConfig, started_at: str, log: Path) -> str | None:
    """The last line of the error that ended this attempt: from its run's record (`error`, the
    traceback, else `stop_reason`), else the last exception line of the worker's log; None when
    neither tells (e.g. a worker killed by a signal)."""
    failed = [d for d in store.attempts(config.trial_key)
              if (d.get("started_at") or "") >= started_at and d.get("status") == "failed"]
    for doc in failed[-1:]:
        for text in (doc.get("error"), doc.get("stop_reason")):
            lines = [line.strip() for line in str(text or "").splitlines() if line.strip()]
            if lines:
                return lines[-1][:300]
    try:
        lines = log.read_text(errors="replace").splitlines()[-200:]
    except OSError:
        return None
    found = [line.strip() for line in lines if _EXCEPTION_LINE.fullmatch(line.strip())]
    return found[-1][:300] if found else None


def _record_death(store: Store, config: RunConfig, how: str, outcome: Outcome,
                  started_at: str, place: dict | None = None) -> None:
    """Record a dead worker in the store. The still-`running` attempts of its trial that it was
    writing are marked `interrupted` with `how`: the one with its pid and host, or any whose
    process is visibly gone (under torchrun or Ray the writer is a grandchild, whose pid the
    launcher does not know). A worker that died before it started its run (e.g. killed while
    importing) gets an attempt of its own, so that every death is visible in the store."""
    attempts = store.attempts(config.trial_key)
    deadline = time.monotonic() + WRITER_GRACE_S
    for doc in attempts:
        if doc.get("status") != "running":
            continue
        process = doc.get("process") or {}
        ours = process.get("pid") == outcome.pid and process.get("host") == outcome.host
        if not ours and (doc.get("started_at") or "") >= started_at:
            # its writer is this worker's child (torchrun, Ray): it dies a moment after it
            while store.run_doc(doc["run_id"])["status"] == "running" and \
                    time.monotonic() < deadline:
                time.sleep(POLL_S)
        if ours or store.run_doc(doc["run_id"])["status"] == "interrupted":
            store.mark_interrupted(doc["run_id"], how)
    if not any((doc.get("started_at") or "") >= started_at for doc in attempts):
        killed = outcome.note or outcome.returncode is None or outcome.returncode < 0
        spec = get_workload(config.workload)
        doc = {**run_identity(config, spec), "launch_position": (place or {}).get("position"),
               "launch_order": place}
        with store.new_run(doc) as writer:
            writer.finish("interrupted" if killed else "failed",
                          stop_reason=f"{how} before its run started")
