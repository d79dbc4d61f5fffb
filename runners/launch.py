"""Turning a StudySpec into runs, and running them: one trial per worker process.

A worker is `python -m runners.launch JOB.json` (worker_command): it runs one trial and writes
its own run folder. Where workers run is the backend (LaunchOptions.backend): the local process
pool (default) keeps up to `workers` of them alive as children of the launcher; the Ray backend
(runners/ray_backend.py) runs the same command inside one Ray task per trial. With
`nproc_per_node` > 1 the command is torchrun's, and the trial is a data-parallel run of that many
ranks (runners/distributed.py). A worker dies with its parent (Linux PR_SET_PDEATHSIG), so
killing a study never leaves orphans training on; the runs they were writing then read as
`interrupted`.

Faults: a worker that dies (exception, OOM kill, SIGKILL, lost Ray node) costs its trial only:
its run is marked `interrupted` (or `failed`, with the traceback, when the trial raised) with the
reason, and the study goes on. `trial_timeout` is a per-attempt wall-clock watchdog (the attempt
is killed and recorded as such). `checkpoint_minutes` makes each run save its training state
now and then (runners/checkpoint.py), so that a killed or preempted run resumes from it.
`resume=True` runs only the trials that have no complete or diverged attempt in the store yet.
Many launchers, on many machines, may write one store at once (workbench/store.py).

Hooks (`hooks` of run_configs, passed to every worker in its job file, applied with
runners.loop.run's `should_stop` / `measure`): "prune" = {"estimator", "eta"} (runners/pruning.py),
"goal" = a validation goal that ends a run (runners/scaling_study.py), "noise_every" = steps
between gradient-noise measurements (runners/noise.py).
"""
from __future__ import annotations

import ctypes
import functools
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from workbench.catalog import get_workload
from workbench.spec import RunConfig, StudySpec, stable_hash
from workbench.store import Store, utc_now

__all__ = ["plan_study", "run_study", "run_configs", "StudyResult", "StudyExistsError",
           "LaunchOptions", "BACKENDS", "Outcome", "worker_command", "write_job", "describe_exit",
           "worker_main", "PRUNE_CHOICES"]

POLL_S = 0.1  # how often the launcher checks its workers
PRUNE_CHOICES = ("none", "lcga", "tse")  # --prune: the early-stopping tuner's estimator


class StudyExistsError(RuntimeError):
    """The store already holds runs of a study with this name and resume was not asked for."""


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
                            budget_multiplier=spec.budget_multiplier, threads=spec.threads,
                            stop_on_target=spec.stop_on_target, device=spec.device,
                            precision=spec.precision, compile=spec.compile,
                            channels_last=spec.channels_last))
    return configs


@dataclass
class StudyResult:
    """What a launch did: how many trials were planned, skipped (resume), run, and which failed."""

    planned: int = 0
    skipped: int = 0
    succeeded: int = 0
    failed: list[str] = field(default_factory=list)  # one line per failed or killed worker
    seconds: float = 0.0
    pruning: dict[str, Any] | None = None  # the study summary when the tuner pruned (run_study)

    def summary(self) -> str:
        text = (f"{self.planned} trials planned, {self.skipped} already done, {self.succeeded} ran, "
                f"{len(self.failed)} failed, in {self.seconds:.1f} s")
        return "\n".join([text, *("  " + f for f in self.failed), *self._pruning_lines()])

    def _pruning_lines(self) -> list[str]:
        if not self.pruning:
            return []
        lines = []
        for g in self.pruning["groups"]:
            best = g["best"] or {}
            lines.append(
                f"pruning ({', '.join(self.pruning['estimators'])}) {g['workload']} "
                f"{g['algorithm']}: {g['pruned']} of {g['trials']} trials pruned; "
                f"{g['spent_train_seconds']:.1f} train s spent, {g['saved_train_seconds']:.1f} s "
                f"saved ({100 * g['saved_fraction_seconds']:.0f} %), "
                f"{g['saved_steps']:.0f} steps saved ({100 * g['saved_fraction_steps']:.0f} %); "
                f"best trial {best.get('trial')} ({best.get('best_validation')})")
        return lines


def run_study(spec: StudySpec, store: Store, workers: int = 1, resume: bool = False,
              data_dir: str | Path | None = None, progress: bool = True,
              search_spaces: Mapping[str, str | Path] | None = None,
              prune: str = "none", eta: int = 3,
              options: LaunchOptions | None = None) -> StudyResult:
    """Run every planned trial that is not done yet, `workers` processes at a time.

    `search_spaces`: per-algorithm search-space overrides, as in plan_study. `prune`: the
    early-stopping tuner's estimator (PRUNE_CHOICES; "none" = off), halving rate `eta`; with it
    on, the study's summary (compute spent and saved, best trial) is written to the store
    (records.study_summary_path) and returned in result.pruning. `options`: the backend and the
    fault handling (LaunchOptions; default: the local pool, no watchdog).
    """
    if prune not in PRUNE_CHOICES:
        raise ValueError(f"unknown --prune {prune!r}: valid are {', '.join(PRUNE_CHOICES)}")
    hooks = {"prune": {"estimator": prune, "eta": eta}} if prune != "none" else {}
    result = run_configs(plan_study(spec, search_spaces), store, spec.name, workers, resume,
                         data_dir, progress, hooks, options)
    if prune != "none":
        from workbench.early_stopping import write_study_summary
        result.pruning = write_study_summary(store, spec.name, {"kind": "study", "prune": prune,
                                                                "eta": eta,
                                                                "wall_seconds": result.seconds})
    return result


def run_configs(configs: list[RunConfig], store: Store, name: str, workers: int = 1,
                resume: bool = False, data_dir: str | Path | None = None, progress: bool = True,
                hooks: Mapping[str, Any] | None = None,
                options: LaunchOptions | None = None) -> StudyResult:
    """Run the `configs` of study `name` not done yet (resume), with the workers' `hooks`,
    `workers` trials at a time on the backend that `options` names (default: the local pool)."""
    options = options or LaunchOptions()
    options.check()
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    store.ensure()
    existing = _runs_of_study(store, name)
    if existing and not resume:
        raise StudyExistsError(
            f"store {store.root} already has {existing} runs of study {name!r}: pass "
            "--resume to run only the missing trials, or --name to start a new study")
    # resume: not the trials already done, nor those another launcher is running right now
    done = store.done_trial_keys() | _live_trial_keys(store) if resume else set()
    todo = [c for c in configs if c.trial_key not in done]
    result = StudyResult(planned=len(configs), skipped=len(configs) - len(todo))
    t0 = time.perf_counter()
    if todo:
        backend = _make_backend(options, workers, max(c.threads for c in todo))
        try:
            scheduler = _Scheduler(store, backend, workers, data_dir, progress, hooks, options)
            scheduler.run(todo, result)
        finally:
            backend.close()
    result.seconds = time.perf_counter() - t0
    return result


def _runs_of_study(store: Store, name: str) -> int:
    count = 0
    for d in store.run_dirs():
        doc = json.loads((d / "run.json").read_text())
        count += doc.get("study_name") == name
    return count


def _live_trial_keys(store: Store) -> set[str]:
    """Trial keys with an attempt whose process is alive (this host) or whose heartbeat is fresh
    (another host): running in some launcher now, so not missing."""
    keys = set()
    for d in store.run_dirs():
        doc = json.loads((d / "run.json").read_text())
        if doc.get("status") == "running" and store.run_doc(doc["run_id"])["status"] == "running":
            keys.add(doc.get("trial_key"))
    return keys


@dataclass(frozen=True)
class LaunchOptions:
    """Where and how each trial runs; the defaults are the local process pool, one process each."""

    backend: str = "local"              # BACKENDS: "local" (process pool) or "ray" (one task each)
    address: str | None = None          # Ray cluster address; None: start a local Ray instance
    nproc_per_node: int = 1             # > 1: each trial is a torchrun data-parallel run
    gpus_per_trial: float = 0.0         # Ray `num_gpus` of each trial's task
    trial_timeout: float | None = None  # wall-clock seconds an attempt may take (watchdog)
    checkpoint_minutes: float | None = None  # save training state this often (runners/checkpoint)

    def check(self) -> None:
        """Raise ValueError naming the bad option and what is valid."""
        if self.backend not in BACKENDS:
            raise ValueError(f"unknown backend {self.backend!r}: valid are {', '.join(BACKENDS)}")
        if self.address and self.backend != "ray":
            raise ValueError("--address goes with --backend ray")
        if self.nproc_per_node < 1:
            raise ValueError(f"--nproc-per-node must be >= 1, got {self.nproc_per_node}")
        if self.gpus_per_trial < 0:
            raise ValueError(f"--gpus-per-trial must be >= 0, got {self.gpus_per_trial}")
        if self.trial_timeout is not None and self.trial_timeout <= 0:
            raise ValueError(f"--trial-timeout must be > 0 seconds, got {self.trial_timeout}")
        if self.checkpoint_minutes is not None and self.checkpoint_minutes < 0:
            raise ValueError(f"--checkpoint-every must be >= 0 minutes (0: at every eval), got "
                             f"{self.checkpoint_minutes}")


BACKENDS = ("local", "ray")


def worker_command(job_path: str | Path, nproc_per_node: int = 1) -> list[str]:
    """The command that runs one trial from its job file: this module's worker_main, under
    torchrun (one process per rank, on this node) when `nproc_per_node` > 1."""
    if nproc_per_node == 1:
        return [sys.executable, "-m", "runners.launch", str(job_path)]
    return [sys.executable, "-m", "torch.distributed.run", "--standalone",
            f"--nproc-per-node={nproc_per_node}", "-m", "runners.launch", str(job_path)]


def write_job(job: Mapping[str, Any]) -> str:
    """Write a worker's job to a fresh temporary file; returns its path (the caller removes it)."""
    fd, path = tempfile.mkstemp(prefix="pacebench-run-", suffix=".json")
    with os.fdopen(fd, "w") as f:
        json.dump(job, f)
    return path


def describe_exit(returncode: int) -> str:
    """'killed by signal 9 (SIGKILL)' or 'exited with code 1'."""
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = "unknown signal"
        return f"killed by signal {-returncode} ({name})"
    return f"exited with code {returncode}"


@dataclass
class Outcome:
    """How an attempt ended: the worker's exit code (None when it is unknown, e.g. a Ray task
    that was lost with its node), where it ran, and a note on what happened."""

    returncode: int | None
    pid: int | None = None
    host: str | None = None
    note: str = ""


class _LocalProcess:
    """One worker process of the local pool."""

    def __init__(self, job: Mapping[str, Any], log_path: Path, nproc_per_node: int) -> None:
        self.job_path = write_job(job)
        self.proc = spawn_worker(self.job_path, nproc_per_node, log_path)

    def poll(self) -> Outcome | None:
        if self.proc.poll() is None:
            return None
        Path(self.job_path).unlink(missing_ok=True)
        return Outcome(self.proc.returncode, self.proc.pid, socket.gethostname())

    def kill(self, sig: int = signal.SIGKILL) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)

    def wait(self) -> None:
        self.proc.wait()
        Path(self.job_path).unlink(missing_ok=True)


class _LocalBackend:
    """The default backend: each trial a child process of the launcher."""

    def __init__(self, options: LaunchOptions) -> None:
        self.options = options

    def start(self, job: Mapping[str, Any], log_path: Path) -> _LocalProcess:
        return _LocalProcess(job, log_path, self.options.nproc_per_node)

    def close(self) -> None:
        pass


def _make_backend(options: LaunchOptions, workers: int, threads: int):
    """The backend `options` names; `threads`: the most torch threads one trial uses."""
    if options.backend == "ray":
        from runners.ray_backend import RayBackend
        return RayBackend(options, workers, threads)
    return _LocalBackend(options)


class _Scheduler:
    """Keeps up to `workers` attempts running on a backend, reaps them, enforces the watchdog
    and shows progress."""

    def __init__(self, store: Store, backend, workers: int, data_dir, progress: bool,
                 hooks: Mapping[str, Any] | None, options: LaunchOptions) -> None:
        self.store, self.backend, self.workers = store, backend, workers
        self.data_dir, self.progress, self.options = data_dir, progress, options
        self.hooks = dict(hooks or {})
        self.log_dir = store.root / "logs"

    def run(self, todo: list[RunConfig], result: StudyResult) -> None:
        from runners.progress import StudyProgress

        self.log_dir.mkdir(parents=True, exist_ok=True)
        queue, running = list(todo), {}  # handle -> (config, monotonic start, UTC start)
        view = StudyProgress(self.store, len(todo), enabled=self.progress)
        try:
            while queue or running:
                while queue and len(running) < self.workers:
                    config = queue.pop(0)
                    running[self._start(config)] = (config, time.monotonic(), utc_now())
                for handle, (config, started, started_at) in list(running.items()):
                    outcome = handle.poll()
                    if outcome is None and self._overdue(started):
                        handle.kill()
                        outcome = self._wait_killed(handle)
                        outcome.note = (f"watchdog: no result after {self.options.trial_timeout:g}"
                                        " s wall clock, killed")
                    if outcome is not None:
                        del running[handle]
                        self._reap(outcome, config, result, started_at)
                view.update(result, [c for c, *_ in running.values()])
                time.sleep(POLL_S)
        finally:
            for handle in running:  # the launcher is ending early (Ctrl-C): stop the workers
                handle.kill(signal.SIGTERM)
            for handle in running:
                handle.wait()
            view.update(result, [c for c, *_ in running.values()], force=True)
            view.close()

    def _overdue(self, started: float) -> bool:
        limit = self.options.trial_timeout
        return limit is not None and time.monotonic() - started > limit

    @staticmethod
    def _wait_killed(handle) -> Outcome:
        while (outcome := handle.poll()) is None:
            time.sleep(POLL_S)
        return outcome

    def _log_path(self, config: RunConfig) -> Path:
        return self.log_dir / f"{config.study_name}-{config.trial_key}.log"

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
        _mark_dead_attempts(self.store, config.trial_key, how, outcome)
        if not _attempt_started(self.store, config.trial_key, started_at):
            killed = outcome.note or outcome.returncode is None or outcome.returncode < 0
            _record_unstarted(self.store, config, "interrupted" if killed else "failed",
                              f"{how} before its run started")
        result.failed.append(f"{config.workload} {config.algorithm} study {config.study} "
                             f"trial {config.trial} seed {config.seed}: {how}; "
                             f"log {self._log_path(config)}")


def _mark_dead_attempts(store: Store, trial_key: str, reason: str, outcome: Outcome) -> None:
    """Record `reason` in the still-`running` attempts of `trial_key` that this dead worker was
    writing: the one with its pid and host, or any whose process is visibly gone (under torchrun
    or Ray the writer is a grandchild, whose pid the launcher does not know)."""
    for d in store.run_dirs():
        doc = json.loads((d / "run.json").read_text())
        if doc.get("trial_key") != trial_key or doc.get("status") != "running":
            continue
        process = doc.get("process") or {}
        ours = process.get("pid") == outcome.pid and process.get("host") == outcome.host
        if ours or store.run_doc(doc["run_id"])["status"] == "interrupted":
            store.mark_interrupted(doc["run_id"], reason)


def _attempt_started(store: Store, trial_key: str, started_at: str) -> bool:
    """Does `trial_key` have an attempt that started at or after `started_at` (UTC ISO time)?"""
    for d in store.run_dirs():
        doc = json.loads((d / "run.json").read_text())
        if doc.get("trial_key") == trial_key and (doc.get("started_at") or "") >= started_at:
            return True
    return False


def _record_unstarted(store: Store, config: RunConfig, status: str, reason: str) -> None:
    """Record an attempt whose worker died before it started its run (e.g. killed while
    importing), so that every dead attempt is visible in the store, not only in the logs."""
    spec, c = get_workload(config.workload), config
    doc = {"trial_key": c.trial_key, "study_name": c.study_name, "workload": spec.name,
           "base_workload": spec.base, "variant": spec.variant, "algorithm": c.algorithm,
           "ruleset": c.ruleset, "study": c.study, "trial": c.trial, "seed": c.seed,
           "rng_seed": c.rng_seed, "hparams": dict(c.hparams), "source": "pacebench",
           "target_metric": spec.target.metric, "target_direction": spec.target.direction,
           "target_validation": spec.target.validation, "target_test": spec.target.test,
           "config": c.to_dict()}
    with store.new_run(doc) as writer:
        writer.finish(status, stop_reason=reason)


@functools.cache
def _prctl():
    """libc's prctl, loaded in the launcher (loading it in a freshly forked child could block)."""
    return ctypes.CDLL(None).prctl if sys.platform.startswith("linux") else None


def die_with(parent: int) -> None:
    """Ask Linux to SIGKILL this process when its parent dies; exit if `parent` (a pid; 0 =
    do not check) is already gone. Safe in a Popen preexec_fn once _prctl() has been called."""
    prctl = _prctl()
    if prctl is not None:
        prctl(1, signal.SIGKILL)  # 1 = PR_SET_PDEATHSIG
    if parent and os.getppid() != parent:
        os._exit(1)


def spawn_worker(job_path: str | Path, nproc_per_node: int, log_path: Path) -> subprocess.Popen:
    """Start the worker command of `job_path`, its output appended to `log_path`; it dies with
    this process (and under torchrun its ranks die with the torchrun agent)."""
    _prctl()
    parent = os.getpid()
    env = {**os.environ, "PACEBENCH_PARENT_PID": str(parent)}
    with open(log_path, "a") as log:
        return subprocess.Popen(worker_command(job_path, nproc_per_node), stdout=log,
                                stderr=subprocess.STDOUT, env=env,
                                preexec_fn=functools.partial(die_with, parent))


def worker_main(spec_path: str) -> int:
    """Entry point of a worker process: run one trial; a failure is recorded in its run."""
    from runners.loop import run

    # under torchrun the parent is the torchrun agent, which itself dies with the launcher
    die_with(0 if "TORCHELASTIC_RUN_ID" in os.environ else
             int(os.environ.get("PACEBENCH_PARENT_PID", "0")))
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # SIGTERM -> `interrupted`
    job = json.loads(Path(spec_path).read_text())
    config = RunConfig.from_dict(job["config"])
    store = Store(job["store"])
    parallel, extra = None, {}
    if "TORCHELASTIC_RUN_ID" in os.environ and int(os.environ.get("WORLD_SIZE", "1")) > 1:
        from runners.distributed import DataParallel
        parallel = DataParallel()
        store = parallel.store(store)  # only rank 0 writes
        extra = {"parallel": parallel, "device": parallel.device}
    if job.get("checkpoint_minutes") is not None:
        from runners.checkpoint import Checkpoint, checkpoint_path
        extra["checkpoint"] = Checkpoint(checkpoint_path(job["store"], config.trial_key),
                                         60.0 * job["checkpoint_minutes"],
                                         writes=parallel is None or parallel.rank == 0)
    should_stop, measure, pruner = _hooks(config, store, job.get("hooks") or {})
    if parallel is not None and should_stop is not None:
        should_stop = parallel.agree(should_stop)
    try:
        run_id = run(config, store, data_dir=job["data_dir"], should_stop=should_stop,
                     measure=measure, **extra)
    except Exception:
        import traceback
        traceback.print_exc()
        return 1
    finally:
        if parallel is not None:
            parallel.close()
    if parallel is not None and parallel.rank != 0:
        return 0  # rank 0 reports the run
    if pruner is not None:
        from runners.pruning import mark_pruned
        mark_pruned(store, run_id, pruner)
    status = store.run_doc(run_id)["status"]
    print(f"{run_id}: {status}", flush=True)
    return 0 if status in ("complete", "diverged") else 1


def _hooks(config: RunConfig, store: Store, hooks: Mapping[str, Any]):
    """(should_stop, measure, pruner) for one worker from the job's hooks (see module doc)."""
    stops, measure, pruner = [], None, None
    if hooks.get("prune"):
        from runners.pruning import Pruner
        budget = get_workload(config.workload).budget.scaled(config.budget_multiplier).steps
        budget = min(budget, config.max_steps or budget)
        pruner = Pruner(store, config, budget, hooks["prune"]["estimator"],
                        int(hooks["prune"].get("eta", 3)))
        stops.append(pruner)
    if "goal" in hooks:
        from runners.scaling_study import GoalStop
        stops.append(GoalStop(config.workload, hooks["goal"]))
    if hooks.get("noise_every"):
        from runners.noise import NoiseProbe
        batch = config.batch_size or get_workload(config.workload).batch_size
        measure = NoiseProbe(batch, int(hooks["noise_every"]), config.rng_seed)

    def should_stop(row: dict) -> str | None:
        return next((reason for stop in stops if (reason := stop(row))), None)

    return (should_stop if stops else None), measure, pruner


if __name__ == "__main__":
    sys.exit(worker_main(sys.argv[1]))
