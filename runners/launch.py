"""Turning a StudySpec into runs, and running them: one trial per process.

The local backend keeps up to `workers` worker processes alive (`python -m runners.launch RUN.json`),
each running one trial and writing its own run folder. A worker dies with its launcher (Linux
PR_SET_PDEATHSIG), so killing a study never leaves orphans training on; the runs they were writing
then read as `interrupted`. `resume=True` runs only the trials that have no complete or diverged
attempt in the store yet.

Hooks (`hooks` of run_configs, passed to every worker in its job file, applied with
runners.loop.run's `should_stop` / `measure`): "prune" = {"estimator", "eta"} (runners/pruning.py),
"goal" = a validation goal that ends a run (runners/scaling_study.py), "noise_every" = steps
between gradient-noise measurements (runners/noise.py).
"""
from __future__ import annotations

import ctypes
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from workbench.catalog import get_workload
from workbench.spec import RunConfig, StudySpec, stable_hash
from workbench.store import Store

__all__ = ["plan_study", "run_study", "run_configs", "StudyResult", "StudyExistsError",
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
              prune: str = "none", eta: int = 3) -> StudyResult:
    """Run every planned trial that is not done yet, `workers` processes at a time.

    `search_spaces`: per-algorithm search-space overrides, as in plan_study. `prune`: the
    early-stopping tuner's estimator (PRUNE_CHOICES; "none" = off), halving rate `eta`; with it
    on, the study's summary (compute spent and saved, best trial) is written to the store
    (records.study_summary_path) and returned in result.pruning.
    """
    if prune not in PRUNE_CHOICES:
        raise ValueError(f"unknown --prune {prune!r}: valid are {', '.join(PRUNE_CHOICES)}")
    hooks = {"prune": {"estimator": prune, "eta": eta}} if prune != "none" else {}
    result = run_configs(plan_study(spec, search_spaces), store, spec.name, workers, resume,
                         data_dir, progress, hooks)
    if prune != "none":
        from workbench.early_stopping import write_study_summary
        result.pruning = write_study_summary(store, spec.name, {"kind": "study", "prune": prune,
                                                                "eta": eta,
                                                                "wall_seconds": result.seconds})
    return result


def run_configs(configs: list[RunConfig], store: Store, name: str, workers: int = 1,
                resume: bool = False, data_dir: str | Path | None = None, progress: bool = True,
                hooks: Mapping[str, Any] | None = None) -> StudyResult:
    """Run the `configs` of study `name` not done yet (resume), with the workers' `hooks`."""
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    store.ensure()
    existing = _runs_of_study(store, name)
    if existing and not resume:
        raise StudyExistsError(
            f"store {store.root} already has {existing} runs of study {name!r}: pass "
            "--resume to run only the missing trials, or --name to start a new study")
    done = store.done_trial_keys() if resume else set()
    todo = [c for c in configs if c.trial_key not in done]
    result = StudyResult(planned=len(configs), skipped=len(configs) - len(todo))
    t0 = time.perf_counter()
    _LocalPool(store, workers, data_dir, progress, hooks).run(todo, result)
    result.seconds = time.perf_counter() - t0
    return result


def _runs_of_study(store: Store, name: str) -> int:
    count = 0
    for d in store.run_dirs():
        doc = json.loads((d / "run.json").read_text())
        count += doc.get("study_name") == name
    return count


class _LocalPool:
    """Up to `workers` child processes, one trial each, with a progress bar."""

    def __init__(self, store: Store, workers: int, data_dir, progress: bool,
                 hooks: Mapping[str, Any] | None = None) -> None:
        self.store, self.workers, self.data_dir, self.progress = store, workers, data_dir, progress
        self.hooks = dict(hooks or {})
        self.log_dir = store.root / "logs"

    def run(self, todo: list[RunConfig], result: StudyResult) -> None:
        from tqdm import tqdm

        self.log_dir.mkdir(parents=True, exist_ok=True)
        queue, running = list(todo), {}
        bar = tqdm(total=len(todo), unit="trial", disable=not self.progress, dynamic_ncols=True)
        try:
            while queue or running:
                while queue and len(running) < self.workers:
                    config = queue.pop(0)
                    running[self._start(config)] = config
                for proc in [p for p in running if p.poll() is not None]:
                    config = running.pop(proc)
                    self._reap(proc, config, result)
                    bar.update(1)
                    bar.set_postfix(running=len(running), failed=len(result.failed))
                time.sleep(POLL_S)
        finally:
            for proc in running:  # the launcher is ending early (Ctrl-C): stop the workers
                proc.send_signal(signal.SIGTERM)
            for proc in running:
                proc.wait()
            bar.close()

    def _start(self, config: RunConfig) -> subprocess.Popen:
        fd, path = tempfile.mkstemp(prefix="pacebench-run-", suffix=".json")
        with os.fdopen(fd, "w") as f:
            json.dump({"config": config.to_dict(), "store": str(self.store.root),
                       "data_dir": str(self.data_dir) if self.data_dir else None,
                       "hooks": self.hooks}, f)
        log = open(self.log_dir / f"{config.study_name}-{config.trial_key}.log", "a")
        env = {**os.environ, "PACEBENCH_PARENT_PID": str(os.getpid())}
        proc = subprocess.Popen([sys.executable, "-m", "runners.launch", path], stdout=log,
                                stderr=subprocess.STDOUT, env=env)
        proc.log_path, proc.spec_path = log.name, path
        log.close()
        return proc

    def _reap(self, proc: subprocess.Popen, config: RunConfig, result: StudyResult) -> None:
        os.unlink(proc.spec_path)
        if proc.returncode == 0:
            result.succeeded += 1
            return
        how = (f"killed by signal {-proc.returncode}" if proc.returncode < 0
               else f"exited with code {proc.returncode}")
        for d in self.store.run_dirs():  # the run folder the dead worker was writing, if any
            doc = json.loads((d / "run.json").read_text())
            if doc.get("trial_key") == config.trial_key and \
                    (doc.get("process") or {}).get("pid") == proc.pid:
                self.store.mark_interrupted(doc["run_id"], f"worker {how}")
        result.failed.append(f"{config.workload} {config.algorithm} study {config.study} "
                             f"trial {config.trial} seed {config.seed}: worker {how}; "
                             f"log {proc.log_path}")


def _die_with_parent() -> None:
    """Ask Linux to SIGKILL this process when its launcher dies; exit if it is already gone."""
    parent = int(os.environ.get("PACEBENCH_PARENT_PID", "0"))
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # 1 = PR_SET_PDEATHSIG
    if parent and os.getppid() != parent:
        os._exit(1)


def worker_main(spec_path: str) -> int:
    """Entry point of a worker process: run one trial; a failure is recorded in its run."""
    from runners.loop import run

    _die_with_parent()
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # SIGTERM -> `interrupted`
    job = json.loads(Path(spec_path).read_text())
    config = RunConfig.from_dict(job["config"])
    store = Store(job["store"])
    should_stop, measure, pruner = _hooks(config, store, job.get("hooks") or {})
    try:
        run_id = run(config, store, data_dir=job["data_dir"], should_stop=should_stop,
                     measure=measure)
    except Exception:
        import traceback
        traceback.print_exc()
        return 1
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
