"""Planning a study and scheduling its trials: one trial per worker process.

plan_study turns a StudySpec into RunConfigs; run_configs runs the ones not done yet, `workers`
at a time, on the backend that LaunchOptions names: the local process pool (runners/launch/processes.py)
or one Ray task per trial (runners/launch/ray_backend.py). Each worker runs runners.launch.worker.run_job on its
job and writes its own run folder. With `nproc_per_node` > 1 a trial is a data-parallel torchrun
run of that many ranks (runners/run/distributed.py). A worker dies with its launcher, so killing a
study never leaves orphans training on; the runs they were writing then read as `interrupted`.

Faults: a worker that dies (exception, OOM kill, SIGKILL, lost Ray node) costs its trial only:
its run is marked `interrupted` (or `failed`, with the traceback, when the trial raised) with the
reason, and the study goes on. Every attempt has a wall-clock watchdog (`trial_timeout`, by
default 3 x its budget in seconds + 60 s): it is killed and recorded `failed`. Ctrl-C and a full
disk stop a launch cleanly (runners/launch/scheduler.py). `checkpoint_minutes` makes each run save its
training state now and then (runners/run/checkpoint.py), so that a killed or preempted run resumes
from it.
`resume=True` runs only the trials that have no complete or diverged attempt in the store yet,
and none that another launcher is running right now; it refuses a plan that gives a trial other
settings than its runs in the store have (StudyChangedError: a trial's hyperparameters depend on
its study's design, study and index alone, so more trials, studies or seeds extend a study; a
study keeps its draw scheme: runners/launch/resume.py study_draw_scheme), and one that would
mix other execution options or hardware into the study's finished runs unless
`allow_mixed_execution` (runners/launch/resume.py). Many launchers, on many machines, may write one
store at once (workbench/store.py): each claims a trial in the store before starting it
(Store.claim), so no trial runs twice at the same time. When a launch ends, the store's run
index is refreshed (workbench/run_index.py).

Trial order: a study's trials run interleaved, never algorithm after algorithm (launch_order).
A block holds the trials of one place (workload, study, trial index, seed), one per algorithm;
the blocks run in a seeded random order and the algorithms in a seeded random order within each
block, so a change of the machine's speed during a study (another job starting, a GPU
throttling) hits every algorithm alike instead of the ones that happened to run last, and with
several workers the trials running at once are neighbours in that order. The seeds are hashes
of the study's name and the block (and algorithm), so `--resume` and a study extended with more
trials keep every planned trial's place relative to the others. Each run records its place
(`launch_position`, `launch_order` in its run document). A trial's `rng_seed` depends on its
seed, study and trial index only (and its study's name, under draw scheme 1), never on its
algorithm or its place: two algorithms' trials at one place see the same initialisation and data
order (common random numbers).
Draws: runners/tuning.py draw_seed (under draw scheme 2, by design, never by the study's name).

Hooks (`hooks` of run_configs, passed to every worker in its job): see runners/launch/worker.py.
"""
from __future__ import annotations

import contextlib
import warnings
from dataclasses import replace
from pathlib import Path
from typing import Any, Mapping, Sequence

from runners.launch.processes import LaunchOptions
from runners.launch.resume import (ExecutionChangedError, StudyChangedError, StudyExistsError,
                                   check_mix, check_same_plan, queued_on_slurm, study_draw_scheme)
from runners.launch.scheduler import Scheduler, StudyInterrupted, StudyResult, make_backend
from runners.launch.dry_run import describe_plan
from runners.tuning import ChosenSpace
from workbench.catalog import get_workload
from workbench.errors import UserError
from workbench.run_index import refresh_index
from workbench.spec import DRAW_SCHEME, RunConfig, StudySpec, stable_hash, to_plain
from workbench.store import Store

__all__ = ["choose_search_spaces", "plan_study", "describe_plan", "launch_order",
           "study_hooks", "run_study",
           "run_configs", "StudyResult", "StudyInterrupted", "StudyExistsError",
           "StudyChangedError", "ExecutionChangedError",
           "EARLY_STOP_CHOICES"]

EARLY_STOP_CHOICES = ("none", "lcga", "tse")  # --early-stop: the tuner's estimator (none: off)


def choose_search_spaces(spec: StudySpec,
                         search_spaces: Mapping[str, str | Path] | None = None,
                         sources: Mapping[str, Any] | None = None) -> dict[str, ChosenSpace]:
    """{algorithm: the search space its trials are drawn from, with its origin} of a study under
    external tuning ({} under self-tuning, which draws none): the file that `search_spaces`
    names for it, else its own (a built-in's or a submission's file; a plug-in's declared,
    file or derived space: runners/algorithms/sources.py choose_search_space)."""
    from runners.algorithms import search_space_path
    from runners.algorithms.sources import choose_search_space

    if spec.ruleset != "external":
        return {}
    chosen = {}
    for algorithm in spec.algorithms:
        source = (sources or {}).get(algorithm)
        loader = None if source is None or source.loaded_by_name else source
        path = (search_spaces or {}).get(algorithm)
        if path is None and loader is not None and loader.kind not in ("builtin", "algoperf"):
            chosen[algorithm] = choose_search_space(loader)
            continue
        chosen[algorithm] = ChosenSpace.from_file(
            path if path is not None else search_space_path(loader.spec if loader else algorithm))
    return chosen


def plan_study(spec: StudySpec,
               search_spaces: Mapping[str, str | Path] | None = None,
               sources: Mapping[str, Any] | None = None,
               chosen: Mapping[str, ChosenSpace] | None = None,
               draw_scheme: int = DRAW_SCHEME) -> list[RunConfig]:
    """Every run of the study, in plan order: algorithms x workloads x studies x trials x seeds
    (launch_order gives the order they run in).

    External tuning draws each study's trials from the algorithm's search space with scrambled
    Halton sampling (or without replacement from a list of points); self-tuning runs the
    algorithm's defaults once per study, with the budget multiplied. `search_spaces` maps an
    algorithm name to the JSON search space to use instead of its own (e.g. an AlgoPerf
    submission's --tuning-search-space). `sources` maps an algorithm's display name to its
    AlgorithmSource (runners/algorithms/sources.py) when its name alone does not load it: its
    runs record the source, and its search space is the source's unless overridden. `chosen`:
    choose_search_spaces's answer, when the caller has it. `draw_scheme`: how the trials are
    drawn (workbench/spec.py DRAW_SCHEMES; study_draw_scheme gives a study's).
    """
    from runners.plugins import with_workload_source
    from runners.tuning import study_points

    for name in spec.workloads:
        get_workload(name)  # fail before launching anything on a typo
    if chosen is None:
        chosen = choose_search_spaces(spec, search_spaces, sources)
    configs = []
    for algorithm in spec.algorithms:
        source = (sources or {}).get(algorithm)
        loader = None if source is None or source.loaded_by_name else source
        space = chosen[algorithm].search_space() if spec.ruleset == "external" else None
        design = _design(spec, space)
        for workload in spec.workloads:
            points = study_points(space, spec, algorithm, workload, draw_scheme)
            for study, trials in enumerate(points):
                for trial, hparams in enumerate(trials):
                    for seed in spec.seeds:
                        configs.append(RunConfig(
                            workload=workload, algorithm=algorithm, hparams=hparams, seed=seed,
                            algorithm_source=loader.spec if loader else None,
                            algorithm_sha256=loader.sha256 if loader else None,
                            study_name=spec.name, ruleset=spec.ruleset, study=study, trial=trial,
                            batch_size=spec.batch_size, max_steps=spec.max_steps,
                            budget_multiplier=spec.budget_multiplier,
                            stop_on_target=spec.stop_on_target, execution=spec.execution,
                            design=design, draw_scheme=draw_scheme))
    return with_workload_source(configs)


def _design(spec: StudySpec, space) -> str:
    """What makes one algorithm's studies of two names poolable (workbench/scope.py): its
    trials per study, its search space (None: self-tuning's defaults), every execution option
    and the step cap, batch size and stop rule of its runs, hashed."""
    return stable_hash([spec.ruleset, spec.trials_per_study, repr(space), to_plain(spec.execution),
                        spec.max_steps, spec.batch_size, spec.stop_on_target], 12)


_BLOCK = ("workload", "study", "trial", "seed")  # a block: one place, one trial per algorithm


def launch_order(configs: list[RunConfig], name: str) -> list[tuple[RunConfig, dict]]:
    """`configs` in the order they run, each with its place {"position", "block", "blocks",
    "seed"}: blocks of one place (_BLOCK) holding one trial per algorithm, the blocks and the
    algorithms within each in a random order seeded by the study's `name` (see the module doc).
    A config's place depends only on the study's name and on which places are planned."""
    blocks: dict[tuple, list[RunConfig]] = {}
    for config in configs:
        blocks.setdefault(tuple(getattr(config, k) for k in _BLOCK), []).append(config)
    seed = int(stable_hash(["launch order", name], 8), 16)

    def key(*parts) -> str:
        return stable_hash([seed, *parts], 12)

    ordered = sorted(blocks.items(), key=lambda item: key(*item[0]))
    out = []
    for b, (place, members) in enumerate(ordered):
        for config in sorted(members, key=lambda c: key(*place, c.algorithm, c.trial_key)):
            out.append((config, {"position": len(out), "block": b, "blocks": len(ordered),
                                 "seed": seed}))
    return out


def study_hooks(early_stop: str, eta: int) -> dict[str, Any]:
    """The workers' hooks of a study (runners/launch/worker.py): the early-stopping tuner's, if on."""
    return {"early_stop": {"estimator": early_stop, "eta": eta}} if early_stop != "none" else {}


def run_study(spec: StudySpec, store: Store, workers: int = 1, resume: bool = False,
              data_dir: str | Path | None = None, progress: bool = True,
              search_spaces: Mapping[str, str | Path] | None = None,
              early_stop: str = "none", eta: int = 3,
              options: LaunchOptions | None = None, prune: str | None = None,
              sources: Mapping[str, Any] | None = None,
              allow_mixed_execution: bool = False,
              reuse_from: Sequence[Store] = ()) -> StudyResult:
    """Run every planned trial that is not done yet, `workers` processes at a time.

    `search_spaces` and `sources`: as in plan_study. `early_stop`: the
    early-stopping tuner's estimator (EARLY_STOP_CHOICES; "none" = off), halving rate `eta`;
    with it on, the study's summary (compute spent and saved, best trial) is written to the
    store (Store.write_study_summary) and returned in result.early_stop. `options`: the backend
    and the fault handling (LaunchOptions; default: the local pool, the default watchdog). `prune`:
    the old name of `early_stop` (deprecated). `allow_mixed_execution` and `reuse_from`: see
    run_configs.
    """
    if prune is not None:
        warnings.warn("run_study(prune=...) is now early_stop=...", DeprecationWarning,
                      stacklevel=2)
        early_stop = prune
    if early_stop not in EARLY_STOP_CHOICES:
        raise UserError(f"unknown --early-stop {early_stop!r}: valid are "
                        f"{', '.join(EARLY_STOP_CHOICES)}")
    hooks = study_hooks(early_stop, eta)
    chosen = choose_search_spaces(spec, search_spaces, sources)
    scheme = study_draw_scheme(store, spec.name)  # a resumed study keeps its draws
    result = run_configs(plan_study(spec, search_spaces, sources, chosen, scheme), store,
                         spec.name, workers, resume, data_dir, progress, hooks, options, chosen,
                         allow_mixed_execution, reuse_from)
    if early_stop != "none" and not result.no_space:
        from workbench.early_stopping import write_study_summary
        result.early_stop = write_study_summary(
            store, spec.name, {"kind": "study", "early_stop": early_stop, "eta": eta,
                               "wall_seconds": result.seconds})
    return result


def _plan(store: Store, name: str, configs: list[RunConfig], resume: bool,
          allow_mixed_execution: bool, here: bool) -> tuple[list[RunConfig], dict[str, str]]:
    """Check the plan `configs` of study `name` against the study's runs and the plans other
    launches recorded (runners/launch/resume.py; `here`: the trials run on this machine), then record
    it; call under the store's planning lock. Returns the configs (marked with any execution mix
    allowed) and {planned trial key: the key of its place's trial, differing in execution only}."""
    docs = list(store.documents(study_name=name))
    if docs and not resume:
        raise StudyExistsError(
            f"store {store.root} already has {len(docs)} runs of study {name!r}: pass "
            "--resume to run only the missing trials, or --name to start a new study")
    planned = [{"config": c} for c in store.planned(name)]  # a launch whose runs are not yet
    same = {}                                               # in the store has planned them
    if docs or planned:
        mixed = check_mix(docs, name, configs, allow_mixed_execution, here) if docs else None
        same = check_same_plan(store.root, name, configs, docs + planned, allow_mixed_execution)
        if mixed:
            configs = [replace(c, mixed_execution=mixed) for c in configs]
    store.record_plan(name, [c.to_dict() for c in configs])
    return configs, same


def run_configs(configs: list[RunConfig], store: Store, name: str, workers: int = 1,
                resume: bool = False, data_dir: str | Path | None = None, progress: bool = True,
                hooks: Mapping[str, Any] | None = None,
                options: LaunchOptions | None = None,
                chosen: Mapping[str, ChosenSpace] | None = None,
                allow_mixed_execution: bool = False,
                reuse_from: Sequence[Store] = ()) -> StudyResult:
    """Run the `configs` of study `name` not done yet (resume), with the workers' `hooks`,
    `workers` trials at a time on the backend that `options` names (default: the local pool);
    each run records the search space that `chosen` gives its algorithm (choose_search_spaces).
    A resume that would mix other execution options or hardware into the study's finished runs
    is refused (runners/launch/resume.py ExecutionChangedError) unless `allow_mixed_execution`.
    A trial whose finished run, of the same reuse key, one of the `reuse_from` stores holds is
    copied from there instead of run (runners/launch/reuse.py). Refreshes the store's run index at the
    end."""
    from runners.plugins import with_workload_source

    configs = with_workload_source(configs)  # plug-in workloads: their runs record the source
    options = options or LaunchOptions()
    options.check()
    if workers < 1:
        raise UserError(f"workers must be >= 1, got {workers}")
    store.ensure()
    with store.planning_lock():  # launches plan one at a time (records.PLANNING_LOCK)
        configs, same = _plan(store, name, configs, resume, allow_mixed_execution,
                              options.backend == "local")
    # resume: not the trials already done, nor those another launcher is running right now
    done = store.done_trial_keys() | store.live_trial_keys() if resume else set()
    if resume:  # and not those Slurm still has pending or running (runners/launch/slurm_backend.py)
        done |= queued_on_slurm(store, name)
    todo = [(c, place) for c, place in launch_order(configs, name)
            if c.trial_key not in done and same.get(c.trial_key) not in done]
    reused: set[str] = set()
    if reuse_from and todo:
        from runners.launch.reuse import reuse_finished
        from runners.run.reuse_key import reuse_context
        reused = reuse_finished([c for c, _ in todo], store, list(reuse_from),
                                reuse_context(hooks, options.nproc_per_node))
        todo = [(c, place) for c, place in todo if c.trial_key not in reused]
    result = StudyResult(planned=len(configs), skipped=len(configs) - len(todo) - len(reused),
                         reused=len(reused), reused_from=[str(s.root) for s in reuse_from])
    if todo:  # (a full disk or Ctrl-C: see runners/launch/scheduler.py)
        backend = make_backend(options, workers, max(c.execution.threads for c, _ in todo))
        try:
            Scheduler(store, backend, workers, data_dir, progress, hooks, options,
                      chosen).launch(todo, result)
        finally:
            backend.close()
        with contextlib.suppress(OSError):  # derived data, rebuilt by readers (a full disk)
            refresh_index(store)
    return result
