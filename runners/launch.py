"""Planning a study and scheduling its trials: one trial per worker process.

plan_study turns a StudySpec into RunConfigs; run_configs runs the ones not done yet, `workers`
at a time, on the backend that LaunchOptions names: the local process pool (runners/processes.py)
or one Ray task per trial (runners/ray_backend.py). Each worker runs runners.worker.run_job on its
job and writes its own run folder. With `nproc_per_node` > 1 a trial is a data-parallel torchrun
run of that many ranks (runners/distributed.py). A worker dies with its launcher, so killing a
study never leaves orphans training on; the runs they were writing then read as `interrupted`.

Faults: a worker that dies (exception, OOM kill, SIGKILL, lost Ray node) costs its trial only:
its run is marked `interrupted` (or `failed`, with the traceback, when the trial raised) with the
reason, and the study goes on. `trial_timeout` is a per-attempt wall-clock watchdog (the attempt
is killed and recorded as such). `checkpoint_minutes` makes each run save its training state
now and then (runners/checkpoint.py), so that a killed or preempted run resumes from it.
`resume=True` runs only the trials that have no complete or diverged attempt in the store yet,
and none that another launcher is running right now; it refuses a plan that gives a trial other
settings than its runs in the store have (StudyChangedError: a trial's hyperparameters depend on
its study and index alone, so more trials, studies or seeds extend a study). Many launchers, on
many machines, may write one store at once (workbench/store.py): each claims a trial in the
store before starting it (Store.claim), so no trial runs twice at the same time. When a launch
ends, the store's run index is refreshed (workbench/run_index.py).

Hooks (`hooks` of run_configs, passed to every worker in its job): see runners/worker.py.
"""
from __future__ import annotations

import contextlib
import signal
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from runners.processes import LaunchOptions, LocalBackend, Outcome, describe_exit
from runners.worker import run_job
from workbench.catalog import get_workload
from workbench.records import DONE_STATUSES, run_identity
from workbench.run_index import refresh_index
from workbench.spec import RunConfig, StudySpec, stable_hash
from workbench.store import Store, utc_now

__all__ = ["plan_study", "run_study", "run_configs", "StudyResult", "StudyExistsError",
           "StudyChangedError", "EARLY_STOP_CHOICES"]

POLL_S = 0.1  # how often the launcher checks its workers
WRITER_GRACE_S = 10.0  # how long a dead worker's own child may take to die with it
EARLY_STOP_CHOICES = ("none", "lcga", "tse")  # --early-stop: the tuner's estimator (none: off)


class StudyExistsError(RuntimeError):
    """The store already holds runs of a study with this name and resume was not asked for."""


class StudyChangedError(StudyExistsError):
    """--resume of a study whose plan gives some trial other settings than its runs in the store
    have (another search space, budget, batch size...): resuming would mix two studies."""


def plan_study(spec: StudySpec,
               search_spaces: Mapping[str, str | Path] | None = None) -> list[RunConfig]:
    """Every run of the study, in launch order: workloads x algorithms x studies x trials x seeds.

    External tuning draws each study's trials from the algorithm's search space with scrambled
    Halton sampling (or without replacement from a list of points); self-tuning runs the
    algorithm's defaults once per study, with the budget multiplied. `search_spaces` maps an
    algorithm name to the JSON search space to use instead of its own (e.g. an AlgoPerf
    submission's --tuning-search-space).
    """
    from runners.algorithms import search_space_path
    from runners.tuning import SearchSpace, study_trials

    for name in spec.workloads:
        get_workload(name)  # fail before launching anything on a typo
    configs = []
    for algorithm in spec.algorithms:
        if spec.ruleset == "external":
            path = (search_spaces or {}).get(algorithm) or search_space_path(algorithm)
            space = SearchSpace.from_json(path)
            draw_seed = int(stable_hash([spec.name, algorithm], 8), 16)
            points = study_trials(space, spec.studies, spec.trials, draw_seed)
        else:
            points = [[{}] for _ in range(spec.studies)]
        for workload in spec.workloads:
            for study, trials in enumerate(points):
                for trial, hparams in enumerate(trials):
                    for seed in spec.seeds:
                        configs.append(RunConfig(
                            workload=workload, algorithm=algorithm, hparams=hparams, seed=seed,
                            study_name=spec.name, ruleset=spec.ruleset, study=study, trial=trial,
                            batch_size=spec.batch_size, max_steps=spec.max_steps,
                            budget_multiplier=spec.budget_multiplier,
                            stop_on_target=spec.stop_on_target, execution=spec.execution))
    return configs


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


def run_study(spec: StudySpec, store: Store, workers: int = 1, resume: bool = False,
              data_dir: str | Path | None = None, progress: bool = True,
              search_spaces: Mapping[str, str | Path] | None = None,
              early_stop: str = "none", eta: int = 3,
              options: LaunchOptions | None = None, prune: str | None = None) -> StudyResult:
    """Run every planned trial that is not done yet, `workers` processes at a time.

    `search_spaces`: per-algorithm search-space overrides, as in plan_study. `early_stop`: the
    early-stopping tuner's estimator (EARLY_STOP_CHOICES; "none" = off), halving rate `eta`;
    with it on, the study's summary (compute spent and saved, best trial) is written to the
    store (Store.write_study_summary) and returned in result.early_stop. `options`: the backend
    and the fault handling (LaunchOptions; default: the local pool, no watchdog). `prune`: the
    old name of `early_stop` (deprecated).
    """
    if prune is not None:
        warnings.warn("run_study(prune=...) is now early_stop=...", DeprecationWarning,
                      stacklevel=2)
        early_stop = prune
    if early_stop not in EARLY_STOP_CHOICES:
        raise ValueError(f"unknown --early-stop {early_stop!r}: valid are "
                         f"{', '.join(EARLY_STOP_CHOICES)}")
    hooks = {"early_stop": {"estimator": early_stop, "eta": eta}} if early_stop != "none" else {}
    result = run_configs(plan_study(spec, search_spaces), store, spec.name, workers, resume,
                         data_dir, progress, hooks, options)
    if early_stop != "none":
        from workbench.early_stopping import write_study_summary
        result.early_stop = write_study_summary(
            store, spec.name, {"kind": "study", "early_stop": early_stop, "eta": eta,
                               "wall_seconds": result.seconds})
    return result


def run_configs(configs: list[RunConfig], store: Store, name: str, workers: int = 1,
                resume: bool = False, data_dir: str | Path | None = None, progress: bool = True,
                hooks: Mapping[str, Any] | None = None,
                options: LaunchOptions | None = None) -> StudyResult:
    """Run the `configs` of study `name` not done yet (resume), with the workers' `hooks`,
    `workers` trials at a time on the backend that `options` names (default: the local pool).
    Refreshes the store's run index at the end."""
    options = options or LaunchOptions()
    options.check()
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    store.ensure()
    existing = sum(1 for _ in store.documents(study_name=name))
    if existing and not resume:
        raise StudyExistsError(
            f"store {store.root} already has {existing} runs of study {name!r}: pass "
            "--resume to run only the missing trials, or --name to start a new study")
    if existing:
        _check_same_plan(store, name, configs)
    # resume: not the trials already done, nor those another launcher is running right now
    done = store.done_trial_keys() | store.live_trial_keys() if resume else set()
    todo = [c for c in configs if c.trial_key not in done]
    result = StudyResult(planned=len(configs), skipped=len(configs) - len(todo))
    t0 = time.perf_counter()
    if todo:
        backend = _make_backend(options, workers, max(c.execution.threads for c in todo))
        try:
            _Scheduler(store, backend, workers, data_dir, progress, hooks, options).run(todo,
                                                                                     result)
        finally:
            backend.close()
            refresh_index(store)
    result.seconds = time.perf_counter() - t0
    return result


_PLACE = ("workload", "algorithm", "ruleset", "study", "trial", "seed")  # a trial's place


def _check_same_plan(store: Store, name: str, configs: list[RunConfig]) -> None:
    """StudyChangedError when a planned trial of study `name` has other settings than the
    store's runs in its place, naming what differs; new places (more trials, studies or seeds)
    are welcome. Runs that are not ours (e.g. imported logs) have no plan to differ from."""
    recorded = {}
    for doc in store.documents(study_name=name):
        with contextlib.suppress(KeyError, TypeError, ValueError):
            old = RunConfig.from_dict(doc["config"])
            recorded.setdefault(tuple(getattr(old, k) for k in _PLACE), old)
    changed = [(config, old) for config in configs
               if (old := recorded.get(tuple(getattr(config, k) for k in _PLACE))) is not None
               and old.trial_key != config.trial_key]
    if changed:
        config, old = changed[0]
        where = ", ".join(f"{k} {getattr(config, k)}" for k in _PLACE)
        what = "; ".join(f"{field}: {stored!r} in the store, {planned!r} now"
                         for field, stored, planned in old.differences(config))
        raise StudyChangedError(
            f"study {name!r} in {store.root} was planned with other settings: at {where}, "
            f"{what} ({len(changed)} trials differ). Resume with the study's own settings "
            "(more --trials, --studies or --seeds are fine), or use --name for a new study")


def _make_backend(options: LaunchOptions, workers: int, threads: int):
    """The backend `options` names; `threads`: the most torch threads one trial uses."""
    if options.backend == "ray":
        from runners.ray_backend import RayBackend
        return RayBackend(options, workers, threads)
    return LocalBackend(options, entry=run_job)


class _Scheduler:
    """Keeps up to `workers` attempts running on a backend, reaps them, enforces the watchdog
    and shows progress."""

    def __init__(self, store: Store, backend, workers: int, data_dir, progress: bool,
                 hooks: Mapping[str, Any] | None, options: LaunchOptions) -> None:
        self.store, self.backend, self.workers = store, backend, workers
        self.data_dir, self.progress, self.options = data_dir, progress, options
        self.hooks = dict(hooks or {})

    def run(self, todo: list[RunConfig], result: StudyResult) -> None:
        from runners.progress import StudyProgress

        queue, running = list(todo), {}  # handle -> (config, monotonic start, UTC start)
        claims = {}  # handle -> the claim on its trial, held while it runs
        view = StudyProgress(self.store, len(todo), enabled=self.progress)
        try:
            while queue or running:
                while queue and len(running) < self.workers:
                    config = queue.pop(0)
                    claim = self._claim(config, result)
                    if claim is None:
                        continue
                    started_at = utc_now()  # before its run can start
                    handle = self._start(config)  # the watchdog counts from here
                    running[handle], claims[handle] = (config, time.monotonic(), started_at), claim
                for handle, (config, started, started_at) in list(running.items()):
                    outcome = self._outcome(handle, started)
                    if outcome is not None:
                        del running[handle]
                        self._reap(outcome, config, result, started_at)
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

    def _start(self, config: RunConfig):
        job = {"config": config.to_dict(), "store": str(self.store.root),
               "data_dir": str(self.data_dir) if self.data_dir else None, "hooks": self.hooks,
               "checkpoint_minutes": self.options.checkpoint_minutes}
        return self.backend.start(job, self._log_path(config))

    def _reap(self, outcome: Outcome, config: RunConfig, result: StudyResult,
              started_at: str) -> None:
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
        _record_death(self.store, config, how, outcome, started_at)
        result.failed.append(f"{config.workload} {config.algorithm} study {config.study} "
                             f"trial {config.trial} seed {config.seed}: {how}; "
                             f"log {self._log_path(config)}")


def _record_death(store: Store, config: RunConfig, how: str, outcome: Outcome,
                  started_at: str) -> None:
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
        with store.new_run(run_identity(config, spec)) as writer:
            writer.finish("interrupted" if killed else "failed",
                          stop_reason=f"{how} before its run started")
