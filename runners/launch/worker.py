"""The worker: one trial in a process of its own, and the hooks a study gives it.

A worker gets a job (written by runners/launch/scheduler.py): {"config": RunConfig dict, "launch_order":
its place in the study's launch order (runners/launch/study.py), "store": path, "data_dir", "hooks",
"checkpoint_minutes", "search_space": the search space its hyperparameters were drawn from, with
its origin (runners/tuning.py ChosenSpace.fields), recorded in its run document; absent in the
job files of earlier versions}. It runs the trial with runners.run.loop.run, which
writes the trial's run folder; a failure is recorded there. Started as `python -m runners.launch.worker
JOB.json` (the "spawn" start method, torchrun's ranks, Ray tasks) or forked from the launcher's
fork server, which calls run_job; see runners/launch/processes.py.

A job may also say who launched it ("launched_by": "run" for `pacebench run`, recorded) and ask
for its eval lines on the output ("hooks": {"show_evals": true}, which `pacebench run` shows).
A worker stopped by a full disk prints one line, NO_SPACE_LINE + the folder, and exits with
NO_SPACE_EXIT: the launcher reads the line from the output it holds in memory, so the reason is
known even where the log cannot be written.

Hooks (the job's "hooks", applied through loop.run's `should_stop` and `measure`, off the clock):
  "early_stop" = {"estimator", "eta"}: the early-stopping tuner (runners/run/early_stop.py); the
      job files of earlier versions call it "prune";
  "goal" = a validation goal that ends the run (a scaling study's steps-to-result, GoalStop);
  "noise_every" = steps between gradient-noise measurements (runners/run/noise.py).
"""
from __future__ import annotations

import json
import logging
import os
import signal
import sys
from pathlib import Path
from typing import Any, Callable, Mapping, NoReturn

from runners.launch.processes import die_with, name_process
from workbench.catalog import get_workload
from workbench.records import DONE_STATUSES, metric_column
from workbench.spec import RunConfig
from workbench.store import Store, full_path, no_space

__all__ = ["worker_main", "run_job", "make_hooks", "show_eval", "GoalStop", "Hooks",
           "NO_SPACE_LINE", "NO_SPACE_EXIT"]

NO_SPACE_LINE = "pacebench: no space left on "  # + the folder: a worker's last words on a full disk
NO_SPACE_EXIT = 75  # its exit status then (sysexits' EX_TEMPFAIL: try again later)


class GoalStop:
    """should_stop hook: end the run once the validation target metric meets the goal."""

    def __init__(self, workload: str, goal: float | None) -> None:
        target = get_workload(workload).target
        self.column = metric_column("validation", target.metric)
        self.goal = target.validation if goal is None else float(goal)
        self.target = type(target)(target.metric, target.direction, self.goal, self.goal)

    def __call__(self, row: dict) -> str | None:
        if not self.target.reached(row.get(self.column)):
            return None
        sign = ">=" if self.target.direction == "max" else "<="
        return f"scaling goal {self.column} {sign} {self.goal:g} reached"


class Hooks:
    """A worker's hooks: `should_stop(row)` (None: none asks), `measure` (None: none) and the
    early-stopping tuner (to record its verdict once the run ended)."""

    def __init__(self) -> None:
        self.stops: list[Callable[[dict], str | None]] = []
        self.measure = None
        self.early_stop = None

    @property
    def should_stop(self) -> Callable[[dict], str | None] | None:
        if not self.stops:
            return None
        return lambda row: next((reason for stop in self.stops if (reason := stop(row))), None)


def make_hooks(config: RunConfig, store: Store, hooks: Mapping[str, Any]) -> Hooks:
    """The hooks of one worker from the job's `hooks` (see the module docstring)."""
    made = Hooks()
    early = hooks.get("early_stop") or hooks.get("prune")
    if early:
        from runners.run.early_stop import SuccessiveHalving
        budget = get_workload(config.workload).budget.scaled(config.budget_multiplier).steps
        budget = min(budget, config.max_steps or budget)
        made.early_stop = SuccessiveHalving(store, config, budget, early["estimator"],
                                            int(early.get("eta", 3)))
        made.stops.append(made.early_stop)
    if "goal" in hooks:
        made.stops.append(GoalStop(config.workload, hooks["goal"]))
    if hooks.get("noise_every"):
        from runners.run.noise import NoiseProbe
        batch = config.batch_size or get_workload(config.workload).batch_size
        made.measure = NoiseProbe(batch, int(hooks["noise_every"]), config.rng_seed)
    return made


def _checkpoint(job: Mapping[str, Any], store: Store, config: RunConfig, parallel) -> dict:
    """loop.run's `checkpoint` argument when the job asks for checkpoints, else nothing."""
    if job.get("checkpoint_minutes") is None:
        return {}
    from runners.run.checkpoint import Checkpoint
    return {"checkpoint": Checkpoint(store.checkpoint_path(config.trial_key),
                                     60.0 * job["checkpoint_minutes"],
                                     writes=parallel is None or parallel.rank == 0)}


def _algorithm(config: RunConfig, job: Mapping[str, Any]):
    """The trial's algorithm carrying the job's search space (Algorithm.searched), or None when
    the job has none or the algorithm cannot be built: loop.run then builds it, and records why
    it failed as the run's set-up failure."""
    if not job.get("search_space"):
        return None
    from runners.algorithms import get_algorithm
    try:
        algorithm = get_algorithm(config.algorithm, config.hparams, config.algorithm_source,
                                  config.algorithm_sha256)
    except Exception:  # noqa: BLE001 - recorded by loop.run's set-up, with its traceback
        return None
    algorithm.searched = dict(job["search_space"])
    return algorithm


def _reuse_context(job: Mapping[str, Any]) -> dict[str, Any]:
    """The launcher's part of the run's reuse key (runners/run/reuse_key.py): the job's hooks and the
    data-parallel width."""
    from runners.run.reuse_key import reuse_context

    torchrun = "TORCHELASTIC_RUN_ID" in os.environ
    return reuse_context(job.get("hooks"), int(os.environ.get("WORLD_SIZE", "1")) if torchrun
                         else 1)


def show_eval(row: dict) -> None:
    """Print an eval row as `pacebench run` shows it: step, training seconds, metrics."""
    metrics = "  ".join(f"{k}={v:.4g}" for k, v in row.items() if "/" in k and v is not None)
    print(f"step {row['step']:>6}  train {row['train_seconds']:8.2f}s  {metrics}", flush=True)


def _stopped(signum, frame) -> None:
    """SIGTERM in a worker: the run ends `interrupted`, saying why."""
    raise KeyboardInterrupt("SIGTERM: the launcher stopped this run")


def run_job(job: Mapping[str, Any]) -> int:
    """Run the job's trial; 0 when it ended complete or diverged, NO_SPACE_EXIT when a full disk
    stopped it, else 1 (its record says why)."""
    from runners.run.loop import run

    signal.signal(signal.SIGTERM, _stopped)  # SIGTERM -> `interrupted`
    config = RunConfig.from_dict(job["config"])
    store = Store(job["store"])
    parallel, extra = None, {}
    if "TORCHELASTIC_RUN_ID" in os.environ and int(os.environ.get("WORLD_SIZE", "1")) > 1:
        from runners.run.distributed import DataParallel
        parallel = DataParallel()
        store = parallel.store(store)  # only rank 0 writes
        extra = {"parallel": parallel, "device": parallel.device}
    extra.update(_checkpoint(job, store, config, parallel))
    try:  # a plug-in workload, for the hooks; a failure is recorded by the run's set-up
        from runners.plugins import use_workload_source
        use_workload_source(config)
    except Exception:  # noqa: BLE001 - loop.run records it as the run's set-up failure
        pass
    hooks = make_hooks(config, store, job.get("hooks") or {})
    should_stop = hooks.should_stop
    if parallel is not None and should_stop is not None:
        should_stop = parallel.agree(should_stop)
    show = (job.get("hooks") or {}).get("show_evals")
    try:
        run_id = run(config, store, data_dir=job["data_dir"], should_stop=should_stop,
                     measure=hooks.measure, launch_order=job.get("launch_order"),
                     algorithm=_algorithm(config, job), on_eval=show_eval if show else None,
                     launched_by=job.get("launched_by"), reuse_context=_reuse_context(job),
                     **extra)
    except Exception as err:
        import traceback
        full = no_space(err)
        if full is not None:  # not the run's fault; the launcher records it (see the doc)
            print(f"{NO_SPACE_LINE}{full_path(full, job['store'])}", flush=True)
            return NO_SPACE_EXIT
        traceback.print_exc()
        return 1
    finally:
        if parallel is not None:
            parallel.close()
    if parallel is not None and parallel.rank != 0:
        return 0  # rank 0 reports the run
    if hooks.early_stop is not None:
        hooks.early_stop.record_verdict(run_id)
    status = store.run_doc(run_id)["status"]
    if job.get("launched_by") != "run":  # (`pacebench run` says it itself)
        print(f"{run_id}: {status}", flush=True)
    return 0 if status in DONE_STATUSES else 1


def worker_main(job_path: str) -> NoReturn:
    """Entry point of `python -m runners.launch.worker JOB.json`: run the job's trial and exit
    with run_job's code."""
    # under torchrun the parent is the torchrun agent, which itself dies with the launcher
    die_with(0 if "TORCHELASTIC_RUN_ID" in os.environ else
             int(os.environ.get("PACEBENCH_PARENT_PID", "0")))
    name_process()
    code = run_job(json.loads(Path(job_path).read_text()))
    # The run is sealed (rank 0's, under torchrun) and its output written by now. Exit without
    # the interpreter's teardown: freeing torch's modules took 1.2 to 1.6 s of a 5 s worker
    # (tests/README.md), and under torchrun the collective library's threads can abort the
    # process there ("terminate called without an active exception") after a clean run.
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    sys.exit(worker_main(sys.argv[1]))
