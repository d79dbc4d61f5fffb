"""Turning a StudySpec into runs, and running them: one trial per process.

The local backend keeps up to `workers` worker processes alive (`python -m runners.launch RUN.json`),
each running one trial and writing its own run folder. A worker dies with its launcher (Linux
PR_SET_PDEATHSIG), so killing a study never leaves orphans training on; the runs they were writing
then read as `interrupted`. `resume=True` runs only the trials that have no complete or diverged
attempt in the store yet.
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
from typing import Mapping

from workbench.catalog import get_workload
from workbench.spec import RunConfig, StudySpec, stable_hash
from workbench.store import Store

__all__ = ["plan_study", "run_study", "StudyResult", "StudyExistsError", "worker_main"]

POLL_S = 0.1  # how often the launcher checks its workers


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
                            stop_on_target=spec.stop_on_target))
    return configs


@dataclass
class StudyResult:
    """What a launch did: how many trials were planned, skipped (resume), run, and which failed."""

    planned: int = 0
    skipped: int = 0
    succeeded: int = 0
    failed: list[str] = field(default_factory=list)  # one line per failed or killed worker
    seconds: float = 0.0

    def summary(self) -> str:
        text = (f"{self.planned} trials planned, {self.skipped} already done, {self.succeeded} ran, "
                f"{len(self.failed)} failed, in {self.seconds:.1f} s")
        return "\n".join([text, *("  " + f for f in self.failed)])


def run_study(spec: StudySpec, store: Store, workers: int = 1, resume: bool = False,
              data_dir: str | Path | None = None, progress: bool = True,
              search_spaces: Mapping[str, str | Path] | None = None) -> StudyResult:
    """Run every planned trial that is not done yet, `workers` processes at a time.

    `search_spaces`: per-algorithm search-space overrides, as in plan_study.
    """
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    store.ensure()
    configs = plan_study(spec, search_spaces)
    existing = _runs_of_study(store, spec.name)
    if existing and not resume:
        raise StudyExistsError(
            f"store {store.root} already has {existing} runs of study {spec.name!r}: pass "
            "--resume to run only the missing trials, or --name to start a new study")
    done = store.done_trial_keys() if resume else set()
    todo = [c for c in configs if c.trial_key not in done]
    result = StudyResult(planned=len(configs), skipped=len(configs) - len(todo))
    t0 = time.perf_counter()
    _LocalPool(store, workers, data_dir, progress).run(todo, result)
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

    def __init__(self, store: Store, workers: int, data_dir, progress: bool) -> None:
        self.store, self.workers, self.data_dir, self.progress = store, workers, data_dir, progress
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
                       "data_dir": str(self.data_dir) if self.data_dir else None}, f)
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
    try:
        run_id = run(config, Store(job["store"]), data_dir=job["data_dir"])
    except Exception:
        import traceback
        traceback.print_exc()
        return 1
    status = Store(job["store"]).run_doc(run_id)["status"]
    print(f"{run_id}: {status}", flush=True)
    return 0 if status in ("complete", "diverged") else 1


if __name__ == "__main__":
    sys.exit(worker_main(sys.argv[1]))
