"""Running a launch's trials: up to `workers` attempts at a time on a backend, each trial claimed
in the store before it starts, every ending reaped into the study's result and the store.

A worker that dies costs its trial only: its run is marked `interrupted` (or `failed`) with how
it died (_record_death), and the study's summary gives the last line of the error that ended it
(_error_line). A worker that exits badly after its run was sealed complete or diverged (e.g. a
data-parallel rank aborting in its exit handlers) leaves its trial done: a warning in the
result, not a failure.

Nothing runs unbounded: every attempt has a wall-clock watchdog (watchdog_seconds: the
LaunchOptions' trial_timeout, else 3 x its training budget in seconds + 60 s, set-up, evals and
compilation included); an attempt it kills, with everything the attempt started, is `failed`
with the reason.

A launch ends early in two ways, and says so in its result (StudyResult.stopped):
- Ctrl-C (KeyboardInterrupt; SIGTERM to the launcher does the same): each worker gets SIGTERM,
  which lets it record its run `interrupted`; after STOP_GRACE_S, or at once on a second
  Ctrl-C, each worker and everything it started is SIGKILLed (runners/processes.kill_tree), and
  the runs still `running` are marked `interrupted`. The launch then raises StudyInterrupted,
  which carries the result. Out of reach: a process that made a session of its own and whose
  parent has already died.
- A full disk: the launcher holds a space reserve in the store from its start (a store with no
  room fails right there, naming it, before anything is written); when a write of its own or
  of a worker fails for lack of space, it starts no more trials, lets the running ones end,
  records the ones the disk stopped as `interrupted` with the reason "no space left on
  <folder>" (releasing the reserve to make room for that), and returns.
"""
from __future__ import annotations

import contextlib
import errno
import math
import os
import re
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Mapping

from runners.launch.processes import STOP_GRACE_S, LaunchOptions, Outcome, describe_exit
from workbench.catalog import get_workload
from workbench.records import DONE_STATUSES, run_identity
from workbench.spec import RunConfig
from workbench.store import Store, no_space, utc_now

__all__ = ["Scheduler", "StudyResult", "StudyInterrupted", "make_backend", "run_one",
           "watchdog_seconds", "INTERRUPTED", "POLL_S", "WRITER_GRACE_S", "KILL_WAIT_S", "WATCHDOG_FACTOR", "WATCHDOG_EXTRA_S"]

POLL_S = 0.1  # how often the launcher checks its workers
WRITER_GRACE_S = 10.0  # how long a dead worker's own child may take to die with it
KILL_WAIT_S = 2.0  # how long a SIGKILLed worker may take to be reaped before it is given up
WATCHDOG_FACTOR = 3.0  # the default watchdog: this many times an attempt's budget in seconds,
WATCHDOG_EXTRA_S = 60.0  # plus this (set-up, evals and compilation all count)
INTERRUPTED = "interrupted by Ctrl-C or SIGTERM"  # StudyResult.stopped of such a launch


def watchdog_seconds(config: RunConfig, options: LaunchOptions) -> float:
    """The wall-clock seconds an attempt of `config` may take before it is killed: the
    options' trial_timeout (--trial-timeout), else 3 x its training budget in seconds + 60 s."""
    if options.trial_timeout is not None:
        return options.trial_timeout
    budget = get_workload(config.workload).budget.scaled(config.budget_multiplier)
    return WATCHDOG_FACTOR * budget.seconds + WATCHDOG_EXTRA_S


@dataclass
class StudyResult:
    """What a launch did: how many trials were planned, skipped (resume), run, and which failed;
    and, when it stopped before its end, why, and what that left undone."""

    planned: int = 0
    skipped: int = 0
    succeeded: int = 0
    failed: list[str] = field(default_factory=list)  # one line per failed or killed worker
    warnings: list[str] = field(default_factory=list)  # workers that exited badly after their
                                                       # run was sealed complete (not failures)
    seconds: float = 0.0
    early_stop: dict[str, Any] | None = None  # the study summary when trials stopped early
    stopped: str | None = None  # why the launch ended early: INTERRUPTED, "no space left on X"
    no_space: str | None = None  # the folder whose full disk stopped it (X), if that is why
    interrupted: list[str] = field(default_factory=list)  # trials it stopped (`interrupted`)
    not_started: int = 0  # trials it left unstarted
    submitted: int = 0  # trials handed to a cluster's queue and left there (--detach)
    reused: int = 0  # trials copied from --reuse-from stores instead of run (runners/launch/reuse.py)
    reused_from: list[str] = field(default_factory=list)  # those stores (empty: none given)

    def check_space(self) -> "StudyResult":
        """This result, or OSError ENOSPC naming the folder when a full disk stopped the launch
        (for callers that go on to use its runs)."""
        if self.no_space:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), self.no_space)
        return self

    def summary(self) -> str:
        text = (f"{self.planned} trials planned, {self.skipped} already done, {self.succeeded} ran, "
                f"{len(self.failed)} failed")
        if self.submitted:
            text += (f", {self.submitted} submitted and left to the cluster (--detach; see "
                     "them with the same command and --resume --status)")
        if self.stopped:
            text += (f", {len(self.interrupted)} interrupted, {self.not_started} not started "
                     f"(stopped: {self.stopped}; --resume runs them)")
        text += f", in {self.seconds:.1f} s"
        if self.reused_from:
            text += (f"\nreused {self.reused} of {self.planned} trials from "
                     f"{', '.join(self.reused_from)}")
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


class StudyInterrupted(KeyboardInterrupt):
    """A launch stopped by Ctrl-C (or SIGTERM), its workers stopped and recorded; `result` says
    what it did before."""

    def __init__(self, result: StudyResult) -> None:
        super().__init__("launch stopped by Ctrl-C or SIGTERM (its .result says what it did)")
        self.result = result


@dataclass
class _Attempt:
    """A running attempt: its trial, its place in the launch order, the trial's claim, and when
    it started (monotonic seconds, for the watchdog; UTC, before its run could start)."""

    config: RunConfig
    place: dict | None
    claim: Any
    started: float
    started_at: str
    limit: float  # its watchdog, wall-clock seconds
    handle: Any = None  # the backend's handle on its worker


def make_backend(options: LaunchOptions, workers: int, threads: int, echo: int | None = None):
    """The backend `options` names; `threads`: the most torch threads one trial uses; `echo`:
    a file descriptor that the local backend's workers' output goes to besides their logs."""
    if options.backend == "ray":
        from runners.launch.ray_backend import RayBackend
        return RayBackend(options, workers, threads)
    if options.backend == "slurm":
        from runners.launch.slurm_backend import SlurmBackend
        return SlurmBackend(options, threads, lambda config: watchdog_seconds(config, options))
    from runners.launch.processes import LocalBackend
    from runners.launch.worker import run_job
    return LocalBackend(options, entry=run_job, echo=echo)


def run_one(config: RunConfig, store: Store, data_dir, options: LaunchOptions,
            show: bool = True) -> tuple[StudyResult, dict[str, Any] | None]:
    """`pacebench run`: one run of `config` in a worker process, launched as a study's trials
    are (the watchdog, Ctrl-C and a full disk alike): a new attempt of its trial even when it
    has finished ones, recorded as launched by `run`, its output (eval lines included) shown on
    this process's standard output when `show`. Returns the launch's result and the document
    of the attempt it made (None when none was recorded); a launch stopped by Ctrl-C returns
    too (result.stopped says so)."""
    echo = _stdout_fd() if show else None
    backend = make_backend(options, 1, config.execution.threads, echo)
    result, started_at = StudyResult(planned=1), utc_now()
    try:
        Scheduler(store, backend, 1, data_dir, False, {"show_evals": True} if show else {},
                  options, again=True, launched_by="run").launch([(config, None)], result)
    except StudyInterrupted:
        pass
    finally:
        backend.close()
    mine = [d for d in store.attempts(config.trial_key)
            if (d.get("started_at") or "") >= started_at]
    return result, max(mine, key=lambda d: d.get("started_at") or "") if mine else None


def _stdout_fd() -> int | None:
    """This process's standard output as a file descriptor (flushed), or None (e.g. captured)."""
    try:
        sys.stdout.flush()
        return sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):
        return None


class Scheduler:
    """Keeps up to `workers` attempts running on a backend, reaps them, enforces the watchdog,
    shows progress, and stops cleanly on Ctrl-C or a full disk (see the module doc). `again`:
    a trial that has a finished attempt runs anyway (`pacebench run` makes a new attempt);
    `launched_by`: recorded in each run (records.py)."""

    def __init__(self, store: Store, backend, workers: int, data_dir, progress: bool,
                 hooks: Mapping[str, Any] | None, options: LaunchOptions,
                 chosen: Mapping[str, Any] | None = None, again: bool = False,
                 launched_by: str | None = None) -> None:
        self.store, self.backend, self.workers = store, backend, workers
        self.data_dir, self.progress, self.options = data_dir, progress, options
        self.hooks = dict(hooks or {})
        self.chosen = dict(chosen or {})  # algorithm -> runners.tuning.ChosenSpace
        self.again, self.launched_by = again, launched_by
        self.reserve = None  # the store's SpaceReserve, held while the launch runs

    def launch(self, todo: list[tuple[RunConfig, dict]], result: StudyResult) -> StudyResult:
        """Run `todo` (see run) holding the store's space reserve, taken first: OSError ENOSPC
        naming the store when it has no room, before anything is written. Ctrl-C or SIGTERM:
        StudyInterrupted, once every worker is stopped and recorded."""
        t0 = time.perf_counter()
        self.reserve = self.store.reserve_space()
        try:
            with _sigterm_interrupts():
                self.run(todo, result)
        except KeyboardInterrupt:
            raise StudyInterrupted(result) from None
        finally:
            result.seconds = time.perf_counter() - t0
            self.reserve.release()
        return result

    def run(self, todo: list[tuple[RunConfig, dict]], result: StudyResult) -> None:
        """Run `todo`, (config, its place in the launch order) pairs, in their order."""
        from runners.launch.progress import StudyProgress

        queue, running = list(todo), {}  # handle -> _Attempt
        if getattr(self.backend, "queues_all", False):  # a cluster's queue holds them all
            self.workers = max(len(queue), 1)
        if getattr(self.backend, "detach", False):
            return self._submit(queue, result)
        view = StudyProgress(self.store, len(todo), enabled=self.progress)
        try:
            while queue or running:
                self._fill(queue, running, result)
                for handle, attempt in list(running.items()):
                    outcome = self._outcome(handle, attempt)
                    if outcome is not None:
                        del running[handle]
                        self._end(attempt, outcome, result)
                view.update(result, [a.config for a in running.values()])
                if queue or running:
                    time.sleep(POLL_S)
        except BaseException as err:  # Ctrl-C, or the launcher's own error: stop the workers
            result.stopped = result.stopped or (INTERRUPTED if isinstance(err, KeyboardInterrupt)
                                                else f"{type(err).__name__}: {err}")
            result.not_started += len(queue)
            self._stop_all(running, result)
            raise
        finally:
            view.update(result, [], force=True)
            view.close()

    def _submit(self, queue: list, result: StudyResult) -> None:
        """--detach: hand every trial of `queue` to the backend's queue and return, releasing
        the claims (the cluster's queue, registered in the store, keeps them from running
        twice: runners/launch/slurm_backend.py queued_trial_keys)."""
        running: dict = {}
        try:
            self._fill(queue, running, result)
            self.backend.flush()
        finally:
            for attempt in running.values():
                attempt.claim.release()
        result.submitted = len(running)

    def _fill(self, queue: list, running: dict, result: StudyResult) -> None:
        """Start trials from `queue` while a worker is free and the launch goes on; once it has
        stopped (a full disk), what is left is not started."""
        while queue and len(running) < self.workers and result.stopped is None:
            config, place = queue.pop(0)
            try:
                attempt = self._launch(config, place, result)
            except OSError as err:
                if no_space(err) is None:
                    raise
                queue.insert(0, (config, place))
                _out_of_space(result, self.store.no_space_path(no_space(err)))
                break
            if attempt is not None:
                running[attempt.handle] = attempt
        if result.stopped is not None and queue:
            result.not_started += len(queue)
            queue.clear()

    def _launch(self, config: RunConfig, place: dict | None,
                result: StudyResult) -> _Attempt | None:
        """Claim `config`'s trial and start its attempt; None when it is not to run now."""
        claim = self._claim(config, result)
        if claim is None:
            return None
        try:
            started_at = utc_now()  # before its run can start
            handle = self._start(config, place)
        except BaseException:
            claim.release()
            raise
        # the watchdog counts from here (a fork server's own start, on first use, is not the
        # attempt's)
        limit = math.inf if getattr(self.backend, "enforces_time_limit", False) else \
            watchdog_seconds(config, self.options)  # (Slurm: the job's own time limit)
        return _Attempt(config, place, claim, time.monotonic(), started_at, limit, handle)

    def _claim(self, config: RunConfig, result: StudyResult):
        """The store's claim on `config`'s trial, or None (the trial counted as skipped) when
        another launcher runs it right now or has finished it since this launch was planned
        (unless `again`)."""
        claim = self.store.claim(config.trial_key)
        if claim is not None and not self.again and any(
                d.get("status") in DONE_STATUSES for d in self.store.attempts(config.trial_key)):
            claim.release()
            claim = None
        if claim is None:
            result.skipped += 1
        return claim

    def _outcome(self, handle, attempt: _Attempt) -> Outcome | None:
        """How the attempt ended, or None while it runs; an overdue attempt is killed, with
        everything it started, and its run recorded `failed`."""
        outcome = handle.poll()
        if outcome is None and time.monotonic() - attempt.started > attempt.limit:
            handle.kill()
            while (outcome := handle.poll()) is None:
                time.sleep(POLL_S)
            default = "" if self.options.trial_timeout is not None else \
                " (the default: 3 x its budget in seconds + 60 s; --trial-timeout sets another)"
            outcome.note = (f"watchdog: no result after {attempt.limit:g} s wall clock{default}, "
                            "killed")
            outcome.status = "failed"
        return outcome

    def _stop_all(self, running: dict, result: StudyResult) -> None:
        """Stop every running attempt (see the module doc: SIGTERM, then after STOP_GRACE_S, or
        at once on a second Ctrl-C, SIGKILL of each worker and all it started) and record it."""
        with _second_interrupt() as hurry:
            for handle in running:
                handle.kill(signal.SIGTERM)
            deadline = time.monotonic() + STOP_GRACE_S
            while any(h.poll() is None for h in running) and not hurry.is_set() and \
                    time.monotonic() < deadline:
                time.sleep(POLL_S)
            for handle in running:
                handle.kill()  # (nothing to kill where the worker has ended)
            for handle, attempt in running.items():
                outcome = handle.poll() if handle.wait(KILL_WAIT_S) else None
                outcome = outcome or Outcome(None, note="not seen to end")
                outcome.note = f"stopped: {result.stopped}"
                self._end(attempt, outcome, result, grace=0.0)
            running.clear()

    def _end(self, attempt: _Attempt, outcome: Outcome, result: StudyResult,
             grace: float = WRITER_GRACE_S) -> None:
        """Reap an attempt that ended: record it, count it, release its trial."""
        full = _no_space_line(outcome.output)
        if full is None and outcome.returncode == _no_space_exit():
            full = str(self.store.root)
        if full is not None:  # a full disk stopped it: the launch starts nothing more
            outcome.note = outcome.note or f"no space left on {full}"
            _out_of_space(result, full)
        try:
            self._recording(lambda: self._reap(outcome, attempt.config, result,
                                               attempt.started_at, attempt.place, grace), result)
        finally:
            attempt.claim.release()

    def _recording(self, record, result: StudyResult) -> None:
        """Call `record`; on a full disk, release the space reserve and try once more, and if
        that fails too, say so in the result (the run then reads as `interrupted`, its process
        being gone)."""
        try:
            record()
            return
        except OSError as err:
            if no_space(err) is None:
                raise
            _out_of_space(result, self.store.no_space_path(no_space(err)))
        if self.reserve is not None and self.reserve.release():
            with contextlib.suppress(OSError):
                record()
                return
        result.warnings.append(f"could not record an attempt's end ({result.stopped})")

    def _log_path(self, config: RunConfig) -> Path:
        return self.store.log_path(config.study_name, config.trial_key)

    def _start(self, config: RunConfig, place: dict | None):
        job = {"config": config.to_dict(), "launch_order": place, "store": str(self.store.root),
               "data_dir": str(self.data_dir) if self.data_dir else None, "hooks": self.hooks,
               "checkpoint_minutes": self.options.checkpoint_minutes,
               "search_space": (self.chosen[config.algorithm].fields()
                                if config.algorithm in self.chosen else None),
               "launched_by": self.launched_by}
        return self.backend.start(job, self._log_path(config))

    def _reap(self, outcome: Outcome, config: RunConfig, result: StudyResult,
              started_at: str, place: dict | None = None, grace: float = WRITER_GRACE_S) -> None:
        unreported = _unreported(self.store, config, started_at, outcome)
        if outcome.returncode == 0 and not outcome.note and unreported is None:
            result.succeeded += 1
            return
        if unreported is not None:
            outcome.status = "failed"
        how = unreported or outcome.note or (f"worker {describe_exit(outcome.returncode)}"
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
        error = _error_line(self.store, config, started_at, self._log_path(config),
                            outcome.output)
        stopped = outcome.note.startswith(("stopped: ", "no space left on "))
        _record_death(self.store, config, how, outcome, started_at, place, grace)
        what = f"{error} ({how})" if error and not stopped else how  # the error says what to fix
        line = (f"{config.workload} {config.algorithm} study {config.study} trial "
                f"{config.trial} seed {config.seed}: {what}; log {self._log_path(config)}")
        (result.interrupted if stopped else result.failed).append(line)


def _out_of_space(result: StudyResult, folder: str) -> None:
    """A full disk at `folder` stops the launch (unless something stopped it first)."""
    if result.stopped is None:
        result.stopped, result.no_space = f"no space left on {folder}", folder


def _no_space_exit() -> int:
    from runners.launch.worker import NO_SPACE_EXIT
    return NO_SPACE_EXIT


def _no_space_line(output: str) -> str | None:
    """The folder of a worker's last words on a full disk (runners/worker.NO_SPACE_LINE)."""
    from runners.launch.worker import NO_SPACE_LINE

    found = [line[len(NO_SPACE_LINE):] for line in output.splitlines()
             if line.startswith(NO_SPACE_LINE)]
    return found[-1].strip() if found else None


@contextlib.contextmanager
def _sigterm_interrupts() -> Iterator[None]:
    """SIGTERM to the launcher stops the launch as Ctrl-C does (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextlib.contextmanager
def _second_interrupt() -> Iterator[threading.Event]:
    """While the workers are being stopped, a further Ctrl-C (or SIGTERM) sets the event (kill
    them now) instead of raising in the middle of the recording."""
    hurry = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield hurry
        return
    signals = (signal.SIGINT, signal.SIGTERM)
    previous = {s: signal.signal(s, lambda *_: hurry.set()) for s in signals}
    try:
        yield hurry
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


# The last line of a Python traceback: "ValueError: ...", "KeyboardInterrupt",
# "torch.OutOfMemoryError: ..." (a dotted name needs its message, to tell it from other lines).
_EXCEPTION_LINE = re.compile(r"[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt)(: .*)?"
                             r"|[A-Za-z_][\w.]*\.[A-Z]\w*: .+")


def _error_line(store: Store, config: RunConfig, started_at: str, log: Path,
                output: str = "") -> str | None:
    """The last line of the error that ended this attempt: from its run's record (`error`, the
    traceback, else `stop_reason`), else the last exception line of the worker's output (as the
    launcher holds it, else as its log has it); None when neither tells (e.g. a worker killed
    by a signal)."""
    failed = [d for d in store.attempts(config.trial_key)
              if (d.get("started_at") or "") >= started_at and d.get("status") == "failed"]
    for doc in failed[-1:]:
        for text in (doc.get("error"), doc.get("stop_reason")):
            lines = [line.strip() for line in str(text or "").splitlines() if line.strip()]
            if lines:
                return lines[-1][:300]
    try:
        lines = (output or log.read_text(errors="replace")).splitlines()[-200:]
    except OSError:
        return None
    found = [line.strip() for line in lines if _EXCEPTION_LINE.fullmatch(line.strip())]
    return found[-1][:300] if found else None


def _unreported(store: Store, config: RunConfig, started_at: str,
                outcome: Outcome) -> str | None:
    """'worker exited with code N before reporting' when a worker ended of itself (no note
    from the launcher) without a result: an exit, whatever its code, that left its run
    unsealed or started none (e.g. os._exit at a plug-in's import), or a kill before its
    first eval row; such an attempt is `failed`. None otherwise: it recorded its own end, or
    a kill (preemption, the OOM killer) met a run that had evals, which stays `interrupted`
    and resumable."""
    if outcome.note or outcome.returncode is None:
        return None
    mine = [d for d in store.attempts(config.trial_key)
            if (d.get("started_at") or "") >= started_at]
    if any(d.get("status") != "running" for d in mine):
        return None
    if outcome.returncode < 0 and any(store.live_rows(d["run_id"], "evals") for d in mine):
        return None
    return f"worker {describe_exit(outcome.returncode)} before reporting"


def _record_death(store: Store, config: RunConfig, how: str, outcome: Outcome,
                  started_at: str, place: dict | None = None,
                  grace: float = WRITER_GRACE_S) -> None:
    """Record a dead worker in the store. The still-`running` attempts of its trial that it was
    writing are marked `interrupted` (or outcome.status) with `how`: the one with its pid and
    host, or any whose process is visibly gone (under torchrun or Ray the writer is a
    grandchild, whose pid the launcher does not know; it gets `grace` seconds to die). A worker
    that died before it started its run (e.g. killed while importing) gets an attempt of its
    own, so that every death is visible in the store."""
    attempts = store.attempts(config.trial_key)
    deadline = time.monotonic() + grace
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
            store.mark_interrupted(doc["run_id"], how, outcome.status or "interrupted")
    if not any((doc.get("started_at") or "") >= started_at for doc in attempts):
        killed = outcome.note or outcome.returncode is None or outcome.returncode < 0
        spec = get_workload(config.workload)
        doc = {**run_identity(config, spec), "launch_position": (place or {}).get("position"),
               "launch_order": place}
        with store.new_run(doc) as writer:
            writer.finish(outcome.status or ("interrupted" if killed else "failed"),
                          stop_reason=how if how.endswith(" before reporting")
                          else f"{how} before its run started")
