"""Batch-size and sparsity scaling studies (Shallue et al.; Lee et al.; methods.md B.5).

Per (batch size, sparsity) cell, `trials` quasirandom points of the scaling search space are run
until the validation goal is met (the worker's "goal" hook, runners.launch.worker.GoalStop) or the step
budget is used; evals are
frequent (`eval_every` steps) so steps-to-result is resolved finely, and the gradient noise scale
is measured every `noise_every` steps off the clock (runners/run/noise.py).

Search space: `<algorithm>_scaling.json` beside the algorithm (for sgd_nesterov: learning rate and
1 - momentum tuned, a constant learning rate with no warmup and no weight decay, so that the
schedule, laid over the workload's step hint, cannot decide the result at small batches). The same
unit Halton points are used in every cell (as Lee et al. reuse their Sobol points); the learning
rate range is shifted by (B / B_ref)^p, p = 1/2 for lr_scaling "sqrt". Why shift: in the
perfect-scaling regime the best learning rate grows with B (linearly for plain SGD, less with
momentum), so a fixed window would spend trials on rates far from the optimum at the ends of the
grid; the window spans two decades, so it still holds the optimum if the truth is anywhere from
no growth to linear growth over a 4x range of B.
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from runners.launch.study import StudyResult, run_configs
from runners.plugins import with_workload_source
from workbench.catalog import get_workload
from workbench.spec import RunConfig, ScalingSpec, stable_hash, to_plain
from workbench.store import Store

__all__ = ["plan_scaling", "scaling_space_path", "lr_factor", "run_scaling"]

LR_POWER = {"none": 0.0, "sqrt": 0.5, "linear": 1.0}


def scaling_space_path(algorithm: str) -> Path:
    """`<algorithm>_scaling.json` beside the algorithm's own search space."""
    from runners.algorithms import search_space_path

    own = search_space_path(algorithm)
    path = own.with_name(f"{algorithm}_scaling.json")
    if not path.is_file():
        raise FileNotFoundError(f"no scaling search space for {algorithm}: {path} does not exist; "
                                "pass search_space (--search-space) explicitly")
    return path


def lr_factor(batch_size: int, reference: int, lr_scaling: str) -> float:
    """(B / B_ref)^p: how much the learning-rate range moves at batch size B."""
    return (batch_size / reference) ** LR_POWER[lr_scaling]


def _cell_space(space, factor: float):
    """The search space with its learning_rate range multiplied by `factor`."""
    params = tuple(replace(p, low=p.low * factor, high=p.high * factor)
                   if p.name == "learning_rate" and hasattr(p, "low") else p
                   for p in space.params)
    return replace(space, params=params)


def plan_scaling(spec: ScalingSpec) -> list[RunConfig]:
    """Every run of the scaling study: workloads x algorithms x batch sizes x sparsities x trials.

    Cell c = (batch size, sparsity) is study c; its trials share unit Halton points with every
    other cell. Runs do not stop on the catalog targets (the goal hook stops them).
    """
    from runners.tuning import SearchSpace, draw_trials

    configs = []
    for algorithm in spec.algorithms:
        space = SearchSpace.from_json(spec.search_space or scaling_space_path(algorithm))
        draw_seed = int(stable_hash([spec.name, algorithm], 8), 16)
        for workload in spec.workloads:
            reference = get_workload(workload).batch_size
            cells = [(b, s) for s in spec.sparsities for b in spec.batch_sizes]
            for study, (batch, sparsity) in enumerate(cells):
                cell = _cell_space(space, lr_factor(batch, reference, spec.lr_scaling))
                for trial, hparams in enumerate(draw_trials(cell, spec.trials, draw_seed)):
                    configs.append(RunConfig(
                        workload=workload, algorithm=algorithm, hparams=hparams, seed=spec.seed,
                        study_name=spec.name, study=study, trial=trial, batch_size=batch,
                        max_steps=spec.max_steps, execution=spec.execution, stop_on_target=False,
                        sparsity=sparsity, prune_method=spec.prune_method,
                        eval_every=spec.eval_every))
    return with_workload_source(configs)


def run_scaling(spec: ScalingSpec, store: Store, workers: int = 1, resume: bool = False,
                data_dir=None, progress: bool = True,
                allow_mixed_execution: bool = False, options=None) -> StudyResult:
    """Run the scaling study's missing runs; returns the launch's StudyResult (and writes the
    study's summary document with the spec and wall time). `allow_mixed_execution`: as in
    runners.launch.study.run_configs; `options`: where the runs run (runners.launch.processes.LaunchOptions;
    default: the local pool)."""
    hooks = {"goal": spec.goal, "noise_every": spec.noise_every}
    doc = {"study_name": spec.name, "kind": "scaling", "spec": to_plain(spec)}
    store.ensure()
    store.write_study_summary(spec.name, doc)  # the goal is readable while the study runs
    result = run_configs(plan_scaling(spec), store, spec.name, workers, resume, data_dir,
                         progress, hooks, options=options,
                         allow_mixed_execution=allow_mixed_execution)
    if result.no_space:  # the summary is written by the --resume that completes the study
        return result
    store.write_study_summary(spec.name, {**doc, "wall_seconds": result.seconds,
                                          "planned": result.planned, "ran": result.succeeded,
                                          "failed": len(result.failed)})
    return result
