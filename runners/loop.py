"""The one timed training loop.

Time is accounted as AlgoPerf does: building the workload, the model and the optimizer state
happens before the clock starts; data selection, the update and `prepare_for_eval` run on the
clock; evals, logging and record writes run off it. The clock is read, with the device
synchronised (runners/run/timing.py), only at boundaries: every `train_loss_every` steps (where the
loss is logged, divergence and the seconds budget are checked), at evals and at the step budget.
Between boundaries the steps are queued on the device with no host synchronisation, as the
fastest GPU trainers run; the seconds budget (and a cadence in seconds) is therefore checked
every `train_loss_every` steps. A run stops at its budget (training seconds or steps), once both
validation and test targets are reached, when the algorithm raises TrainingComplete, on a
non-finite loss (status `diverged`), or when it stalls (runners/run/stall.py; status `stalled`; runs
that do not stop on their target record `stalled_at_step` and go on). Every eval row lands in the
store as soon as it is computed, with the steps per training second since the previous eval and
the machine's load (runners/run/machine.py); the machine's probe is timed before the clock starts
and after the run, off every clock.

Two optional hooks run off the clock at each eval: `measure(model, workload, step)` returns extra
columns for the eval row (e.g. the gradient noise scale, runners/run/noise.py), and `should_stop(row)`
(row with its run_id) returns a reason to end the run early (e.g. the early-stopping tuner,
runners/run/early_stop.py),
which then ends `complete` with that stop_reason. After the loop, off every clock, a complete run
measures its batch-1 inference latency (runners/run/inference.py) into run.json's `inference_seconds`.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping

import torch

from runners.api import Algorithm, TrainingComplete, Workload
from runners.run.checkpoint import RunPosition
from runners.run.device import Accelerator, resolve_device
from runners.run.env import capture_environment, device_class, hardware_string
from runners.run.inference import measure_after_run
from runners.run.machine import PROBE, MachineMonitor
from runners.run.stall import StallRule
from runners.run.timing import DeviceClock
from workbench.catalog import get_workload
from workbench.records import metric_column, run_identity, slurm_job_id
from workbench.spec import Budget, EvalCadence, RunConfig, WorkloadSpec
from workbench.store import Store

if TYPE_CHECKING:
    from runners.run.checkpoint import Checkpoint
    from runners.run.distributed import DataParallel
    from workbench.store import RunWriter

__all__ = ["run", "Prepared", "prepare", "run_document", "ladder_workload"]

EVAL_SPLITS = ("train", "validation", "test")


@dataclass
class Prepared:
    """A run set up and ready for the clock to start."""

    config: RunConfig
    spec: WorkloadSpec
    workload: Workload
    algorithm: Algorithm
    model: torch.nn.Module
    batch_size: int
    budget: Budget
    device: torch.device
    accelerator: Accelerator  # precision, compile, memory format; FLOPs, peak memory, energy


def prepare(config: RunConfig, device: str | torch.device | None = None,
            data_dir: str | Path | None = None, algorithm: Algorithm | None = None,
            parallel: "DataParallel | None" = None) -> Prepared:
    """Everything before the clock: threads, seeds, data, model and optimizer state.

    `device` overrides `config.execution.device` ("cpu", "cuda", "cuda:<i>", "auto").
    `parallel` (runners/run/distributed.py): this rank of a data-parallel run; the model is wrapped
    and the workload sharded before the accelerator and the algorithm see them.
    """
    from runners.algorithms import get_algorithm
    from runners.plugins import use_workload_source
    from runners.workloads import build_workload

    options = config.execution
    use_workload_source(config)  # a plug-in workload: its factory, loaded in this process
    device = resolve_device(options.device if device is None else device)
    torch.set_num_threads(options.threads)  # fixed per run: reductions (and so results) depend on it
    spec = ladder_workload(get_workload(config.workload), config.ladder)
    if config.step_hint is not None:  # `pacebench tune`: the schedule over the run's own steps
        spec = replace(spec, step_hint=int(config.step_hint))
    algorithm = algorithm or get_algorithm(config.algorithm, config.hparams,
                                           config.algorithm_source, config.algorithm_sha256)
    if config.sparsity:  # pruning at init: masks chosen in init (before the clock), kept fixed
        from runners.run.sparsity import MaskedAlgorithm
        algorithm = MaskedAlgorithm(algorithm, config.sparsity, config.prune_method,
                                    config.rng_seed)
    workload = build_workload(spec, device=device, data_dir=data_dir)
    torch.manual_seed(config.rng_seed)
    model = workload.init_model(config.rng_seed)
    if parallel is not None:
        workload, model = parallel.wrap(workload, model)
    batch_size = config.batch_size or algorithm.batch_size(spec)
    accelerator = Accelerator(device, options.precision, options.compile, options.channels_last,
                              options.compile_mode)
    model = accelerator.prepare(model, workload, batch_size, config.rng_seed)
    algorithm.init(model, workload)
    budget = spec.budget.scaled(config.budget_multiplier)
    if config.max_steps is not None:
        budget = Budget(seconds=budget.seconds, steps=min(budget.steps, config.max_steps))
    return Prepared(config, spec, workload, algorithm, model, batch_size, budget, device,
                    accelerator)


def ladder_workload(spec: WorkloadSpec, ladder: Mapping | None) -> WorkloadSpec:
    """The workload a ladder run trains (runners/procedures/ladder.py): the catalog entry with its step
    hint set to the run's planned steps, so that every schedule laid over the step hint decays
    to its end exactly at the run's last step, and its `data` knob set to the ladder's data and
    its `eval_windows` knob to the plan's (a workload without a `data` knob keeps its own; a
    record without eval_windows, from before the plan sized them, keeps the workload's default).
    Not a ladder run (None): `spec` unchanged."""
    if ladder is None:
        return spec
    model = spec.model
    if "data" in model:
        windows = ladder.get("eval_windows")
        model = {**model, "data": ladder["data"],
                 **({"eval_windows": int(windows)} if windows is not None else {})}
    return replace(spec, step_hint=int(ladder["steps"]), model=model)


def run_document(p: Prepared, launch_order: Mapping[str, int] | None = None,
                 machine: Mapping[str, float | None] | None = None,
                 launched_by: str | None = None,
                 reuse_context: Mapping[str, Any] | None = None) -> dict:
    """The run's identity, config and environment, as written to run.json when it starts:
    `launch_order` its place in its study's launch order, `machine` the machine's reading
    before the clock (runners/run/machine.py), `launched_by` what started it (records.py; default:
    "study" when it has a launch order), `reuse_context` the launcher's part of its reuse key
    (runners/launch/reuse.py; None: no key, never reused)."""
    from runners.run.reuse_key import reuse_record

    c, s, threads = p.config, p.spec, p.config.execution.threads
    return {
        **run_identity(c, s),
        "hparams": dict(p.algorithm.hparams),  # as the algorithm filled them in
        "batch_size": p.batch_size, "hardware": hardware_string(p.device, threads),
        "budget_seconds": p.budget.seconds, "budget_steps": p.budget.steps,
        "step_hint": s.step_hint, "workload_spec": s.to_dict(),
        "data": _data_record(p.workload),
        "environment": capture_environment(p.device, threads),
        "algorithm_source": p.algorithm.provenance() or None,
        **p.algorithm.search_space_fields(),  # the space its hparams were drawn from, if any
        "launch_position": (launch_order or {}).get("position"),
        "launch_order": dict(launch_order) if launch_order else None,
        "launched_by": launched_by or ("study" if launch_order else None),
        "design": c.design, "slurm_job_id": slurm_job_id(os.environ),
        "execution": c.execution.label(str(p.device)), "mixed_execution": c.mixed_execution,
        "probe_seconds": (machine or {}).get("probe_seconds"),  # the mean of both at the end
        "machine": {"probe": PROBE, "start": dict(machine)} if machine else None,
        **p.accelerator.document(),
        **reuse_record(c, s, device_class(p.device), reuse_context),  # reuse_key, its inputs
        "reused_from": None,  # made here (a run copied from another store names it)
        "phase": c.phase,  # "tuning": a `pacebench tune` sweep run (records.py PHASES)
    }


def _data_record(workload: Workload) -> dict | None:
    """What data the run trained on, for workloads that say (a ladder rung: kind, seed or path,
    sha256, tokens available; runners/workloads/ladder.py), else None."""
    record = getattr(workload, "data_record", None)
    return record() if callable(record) else None


def _record_setup_failure(config: RunConfig, store: Store) -> None:
    """A run that failed before its clock started still leaves a `failed` record with the traceback."""
    import sys
    import traceback

    try:
        spec = get_workload(config.workload)
    except KeyError:
        spec = None
    exc = sys.exc_info()[1]
    with store.new_run(run_identity(config, spec)) as writer:
        writer.finish("failed", stop_reason=f"set-up failed: {type(exc).__name__}: {exc}"[:500],
                      error=traceback.format_exc())


def _evaluate(workload: Workload, model: torch.nn.Module) -> dict[str, float]:
    metrics = {}
    for split in EVAL_SPLITS:
        for name, value in workload.evaluate(model, split).items():
            metrics[metric_column(split, name)] = float(value)
    return metrics


def run(config: RunConfig, store: Store, device: str | torch.device | None = None,
        data_dir: str | Path | None = None, algorithm: Algorithm | None = None,
        on_eval: Callable[[dict], None] | None = None,
        should_stop: Callable[[dict], str | None] | None = None,
        measure: Callable[[torch.nn.Module, Workload, int], Mapping[str, float]] | None = None,
        parallel: "DataParallel | None" = None, checkpoint: "Checkpoint | None" = None,
        launch_order: Mapping[str, int] | None = None, launched_by: str | None = None,
        reuse_context: Mapping[str, Any] | None = None) -> str:
    """Train one run to a stop condition, recording it in `store`; returns its run_id.

    `should_stop` and `measure`: optional hooks called off the clock at each eval (see above).
    `parallel`: this rank of a data-parallel run (runners/run/distributed.py): its clock reads the
    same time on every rank and logged losses are averaged over ranks. `checkpoint`
    (runners/run/checkpoint.py): resume a preempted attempt's state, and save it now and then.
    `launch_order`: the run's place in its study's launch order (runners/launch/study.py), recorded;
    `launched_by`: what started the run ("run": `pacebench run`; records.py), recorded.
    `reuse_context`: the launcher's part of the run's reuse key (runners/launch/reuse.py); None: the
    run has no key unless it has no hooks (a plain library call), which is keyed as such.
    """
    monitor = MachineMonitor()  # other processes' CPU use is read from here on
    try:
        p = prepare(config, device, data_dir, algorithm, parallel)
    except Exception:
        _record_setup_failure(config, store)
        raise
    started = monitor.reading(p.device)  # the machine's speed before the clock
    if reuse_context is None and should_stop is None and measure is None and parallel is None:
        from runners.run.reuse_key import reuse_context as plain_context
        reuse_context = plain_context({})
    hooks = _Hooks(on_eval, should_stop, measure)
    with store.new_run(run_document(p, launch_order, started, launched_by,
                                    reuse_context)) as writer:
        timed = _TimedRun(p, writer, monitor, hooks, parallel, checkpoint)
        timed.start(store)
        timed.train()
        wall_s = timed.clock.now() - timed.start_time
        # --- off every clock: batch-1 inference latency of the trained model (DAWNBench), and
        # the machine's speed after the run
        inference_s, inference_note = measure_after_run(p.model, p.workload, p.device,
                                                        timed.status)
        ended = monitor.reading(p.device)
        steps, train_s = timed.step, timed.train_s
        writer.finish(timed.status, stop_reason=timed.reason, steps=steps,
                      examples=steps * p.batch_size, train_seconds=train_s,
                      eval_seconds=timed.eval_s, wall_seconds=wall_s,
                      reached_validation=timed.reached, inference_seconds=inference_s,
                      inference_note=inference_note, stalled_at_step=timed.stalled_at,
                      probe_seconds=(started["probe_seconds"] + ended["probe_seconds"]) / 2,
                      machine={"probe": PROBE, "start": started, "end": ended},
                      **p.accelerator.finish(steps, train_s))
        if checkpoint is not None:
            checkpoint.discard()
        return writer.run_id


@dataclass
class _Hooks:
    """run()'s optional callbacks, each called off the clock at every eval."""

    on_eval: Callable[[dict], None] | None = None
    should_stop: Callable[[dict], str | None] | None = None
    measure: Callable[[torch.nn.Module, Workload, int], Mapping[str, float]] | None = None


class _TimedRun:
    """The clocked part of one run: the steps, the boundaries where the clock is read, the evals
    and the stop rules. Its position (step, train_s, eval_s, eval_index, last_eval_train_s,
    reached: runners/run/checkpoint.py RunPosition's fields) and `status`, `reason` and `stalled_at`
    are what run() records when train() returns.

    The steps between boundaries run in train()'s tight loop on local variables; everything
    done at a boundary lives in the methods below, called only there."""

    def __init__(self, p: Prepared, writer: RunWriter, monitor: MachineMonitor, hooks: _Hooks,
                 parallel: "DataParallel | None", checkpoint: "Checkpoint | None") -> None:
        self.p, self.writer, self.monitor, self.hooks = p, writer, monitor, hooks
        self.parallel, self.checkpoint = parallel, checkpoint
        config, spec = p.config, p.spec
        self.cadence = EvalCadence(steps=config.eval_every) if config.eval_every \
            else spec.eval_every
        self.batches = p.workload.train_batches(p.batch_size, config.rng_seed)
        self.val_col, self.test_col = (metric_column(s, spec.target.metric)
                                       for s in ("validation", "test"))
        self.stall = StallRule(p.budget, spec.target)
        self.status, self.reason, self.stalled_at = "complete", None, None

    def start(self, store: Store) -> None:
        """Start the clock (`last`: the end of the last timed interval) at a fresh run's
        position, or at a preempted attempt's saved one (restored off the clock)."""
        p = self.p
        self.clock = self.parallel.clock(p.device) if self.parallel else DeviceClock(p.device)
        p.accelerator.start()
        self.start_time = self.last = self.clock.now()
        at = RunPosition()
        if self.checkpoint is not None:
            at = self.checkpoint.restore(p, self.writer, self.batches, store)
            self.start_time = self.clock.now() - at.wall_seconds
            self.last = self.clock.now()
        self.step, self.train_s, self.eval_s = at.step, at.train_seconds, at.eval_seconds
        self.eval_index, self.reached = at.eval_index, at.reached
        self.last_eval_train_s, self.last_eval_step = at.last_eval_train_seconds, at.step

    def train(self) -> None:
        """Steps until a stop rule ends the run. Timed: data selection and the update, queued
        on the device with no host sync; the clock is read only at boundaries."""
        algo, model, workload, batches = self.p.algorithm, self.p.model, self.p.workload, \
            self.batches
        log_every, every, max_steps = self.p.spec.train_loss_every, self.cadence.steps, \
            self.p.budget.steps
        step, loss = self.step, None
        while True:
            stop_requested = False
            try:
                loss = algo.update(model, next(batches), step, workload)
            except TrainingComplete:
                stop_requested = True
            else:
                step += 1
            out_of_steps = step >= max_steps
            due = every is not None and step % every == 0
            if not (step % log_every == 0 or due or out_of_steps or stop_requested):
                continue
            self.step = step
            if self._boundary(loss, due, out_of_steps, stop_requested):
                return

    def _boundary(self, loss: torch.Tensor | None, due: bool, out_of_steps: bool,
                  stop_requested: bool) -> bool:
        """A boundary: read the clock (device synchronised), log the training loss, then
        evaluate when due. True: the run ends here."""
        budget, clock = self.p.budget, self.clock
        now = clock.now()
        self.train_s += now - self.last
        self.last = now
        # --- untimed: training-loss rows and the divergence check
        if not stop_requested and loss is not None and \
                self.step % self.p.spec.train_loss_every == 0:
            self._log_loss(loss)
            self.last = clock.now()  # logging stays off the clock
        # --- stop rules that skip the eval: diverged, or training time used up (AlgoPerf)
        if self.status == "diverged" or self.train_s >= budget.seconds:
            self.reason = self.reason or \
                f"time budget of {budget.seconds:g} training seconds used"
            return True
        due = due or (self.cadence.seconds is not None and
                      self.train_s - self.last_eval_train_s >= self.cadence.seconds)
        if not (due or out_of_steps or stop_requested):
            return False
        row = self._evaluate()
        if self._stops_after_eval(row, out_of_steps, stop_requested):
            return True
        if self.checkpoint is not None:
            self.checkpoint.maybe_save(self.p, self.writer, RunPosition(
                self.step, self.train_s, self.eval_s, self.eval_index, self.last_eval_train_s,
                self.reached, row["wall_seconds"]))
        self.last = clock.now()  # the eval, its logging and checkpoints stay off the clock
        return False

    def _log_loss(self, loss: torch.Tensor) -> None:
        """A training-loss row; a non-finite loss marks the run diverged."""
        step = self.step
        value = self.parallel.mean(loss) if self.parallel else float(loss)
        self.writer.append_train({"step": step, "examples": step * self.p.batch_size,
                                  "train_seconds": self.train_s, "loss": value})
        if not math.isfinite(value):
            self.status, self.reason = "diverged", f"non-finite training loss at step {step}"

    def _evaluate(self) -> dict[str, Any]:
        """prepare_for_eval on the clock, the eval and its row off it; the row, recorded."""
        p, clock = self.p, self.clock
        p.algorithm.prepare_for_eval(p.model)
        now = clock.now()
        self.train_s += now - self.last
        metrics = _evaluate(p.workload, p.model)
        if self.hooks.measure:
            metrics.update(self.hooks.measure(p.model, p.workload, self.step))
        after = clock.now()
        self.eval_s += after - now
        row = {"eval_index": self.eval_index, "step": self.step,
               "examples": self.step * p.batch_size,
               "train_seconds": self.train_s, "eval_seconds": self.eval_s,
               "wall_seconds": after - self.start_time, **metrics,
               "steps_per_second": _rate(self.step - self.last_eval_step,
                                         self.train_s - self.last_eval_train_s),
               **self.monitor.read()}
        self.writer.append_eval(row)
        p.algorithm.observe_eval(row)
        if self.hooks.on_eval:
            self.hooks.on_eval(row)
        self.eval_index += 1
        self.last_eval_train_s, self.last_eval_step = self.train_s, self.step
        return row

    def _stops_after_eval(self, row: dict[str, Any], out_of_steps: bool,
                          stop_requested: bool) -> bool:
        """The stop rules checked at an eval (off the clock); True: the run ends, with
        `status` and `reason` set."""
        target, config = self.p.spec.target, self.p.config
        value = row.get(self.val_col, math.nan)
        self.reached = self.reached or target.reached(value)
        if not math.isfinite(value):
            self.status = "diverged"
            self.reason = f"non-finite validation {target.metric} at step {self.step}"
        elif config.stop_on_target and self.reached and \
                target.reached(row.get(self.test_col), "test"):
            self.reason = "validation and test targets reached"
        elif stop_requested:
            self.reason = "algorithm requested the end of training"
        elif self.hooks.should_stop and (hook := self.hooks.should_stop(
                {"run_id": self.writer.run_id, **row})):
            self.reason = hook
        elif self._stalled(row):
            self.status, self.reason = "stalled", self._stalled_reason
        elif out_of_steps:
            self.reason = f"step budget of {self.p.budget.steps} steps used"
        else:
            return False
        return True

    def _stalled(self, row: dict[str, Any]) -> bool:
        """Whether the stall rule ends the run at this row (runners/run/stall.py); a run that does
        not stop on its target records the step where it stalled and trains on."""
        stalled = self.stall.check(row) if self.stalled_at is None else None
        if not stalled:
            return False
        self.stalled_at, self._stalled_reason = self.step, stalled
        return bool(self.p.config.stop_on_target)


def _rate(steps: int, seconds: float) -> float | None:
    """Steps per second of an interval; None for an empty one."""
    return steps / seconds if steps > 0 and seconds > 0 else None
