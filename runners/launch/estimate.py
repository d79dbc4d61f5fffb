"""How long a procedure will take, said before it starts: a short measured probe of the workload
on the run's own execution options, times the procedure's runs and steps.

Each run is its own process: the probe times starting one (a fresh interpreter importing the
worker) and preparing the run (data, model, optimizer state), both per run. It then runs
`warmup` updates (compilation and autotuning happen here; their time is kept apart), then times
`steps` updates with the device synchronised at both ends, and one eval. A run of S steps with an
eval every E steps then takes about start_s + setup_s + warmup_s + S x step_s + (S / E) x eval_s,
and R runs on W
workers take ceil(R / W) such runs back to back. The probe runs alone: W workers sharing a CPU
each step slower than it measured, so on a CPU with fewer cores than workers the estimate is low
(it says so).
"""
from __future__ import annotations

import math
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from workbench.spec import ExecutionOptions, RunConfig

__all__ = ["Probe", "probe", "run_seconds", "describe_plan"]


@dataclass(frozen=True)
class Probe:
    """What one probe measured, in seconds."""

    start_seconds: float   # a worker process: a fresh interpreter importing runners.launch.worker
    setup_seconds: float   # preparing the run: data, model, optimizer state (before the clock)
    warmup_seconds: float  # the first `warmup` updates, compilation included
    step_seconds: float    # one update after the warm-up
    eval_seconds: float    # one eval
    warmup: int
    steps: int
    device: str


def probe(workload: str, algorithm: str, hparams=None, execution: ExecutionOptions | None = None,
          data_dir: str | Path | None = None, warmup: int = 5, steps: int = 20,
          batch_size: int | None = None) -> Probe:
    """Measure one update and one eval of `workload` under `algorithm` (nothing is recorded)."""
    from runners.run.loop import _evaluate, prepare
    from runners.run.timing import DeviceClock

    config = RunConfig(workload=workload, algorithm=algorithm, hparams=dict(hparams or {}),
                       execution=execution or ExecutionOptions(), batch_size=batch_size)
    began = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import runners.launch.worker"], check=True,
                   cwd=Path(__file__).resolve().parents[2])
    started = time.perf_counter()
    p = prepare(config, data_dir=data_dir)
    prepared = time.perf_counter()
    p.accelerator.start()
    clock = DeviceClock(p.device)
    batches = p.workload.train_batches(p.batch_size, config.rng_seed)
    start = clock.now()
    for step in range(warmup):
        p.algorithm.update(p.model, next(batches), step, p.workload)
    warm = clock.now()
    for step in range(warmup, warmup + steps):
        p.algorithm.update(p.model, next(batches), step, p.workload)
    timed = clock.now()
    _evaluate(p.workload, p.model)
    evaluated = clock.now()
    return Probe(started - began, prepared - started, warm - start, (timed - warm) / steps,
                 evaluated - timed, warmup, steps, str(p.device))


def run_seconds(measured: Probe, steps: int, eval_every: int | None) -> float:
    """About how long one run of `steps` updates with an eval every `eval_every` steps takes."""
    evals = math.ceil(steps / eval_every) if eval_every else 1
    return (measured.start_seconds + measured.setup_seconds + measured.warmup_seconds
            + max(steps - measured.warmup, 0) * measured.step_seconds
            + evals * measured.eval_seconds)


def describe_plan(measured: Probe, phases: list[tuple[str, int]], steps: int,
                  eval_every: int | None, workers: int) -> tuple[float, str]:
    """(seconds, one line): `phases` [(name, runs)] run one after the other on `workers`."""
    per_run = run_seconds(measured, steps, eval_every)
    waves = sum(math.ceil(runs / workers) for _, runs in phases if runs)
    total = waves * per_run
    runs = " + ".join(f"{n} {name}" for name, n in phases if n)
    line = (f"estimate: {runs} runs x {steps} steps x {1e3 * measured.step_seconds:.3g} ms/step"
            f" (+ {measured.start_seconds + measured.setup_seconds:.2g} s start and set-up and "
            f"{measured.warmup_seconds:.2g} s warm-up and compilation per run, "
            f"{1e3 * measured.eval_seconds:.3g} ms per eval) on {workers} worker(s) on "
            f"{measured.device}: about {_duration(total)}")
    cores = os.cpu_count() or 1
    if measured.device == "cpu" and workers > 1 and workers >= cores:
        line += f" (measured alone: {workers} workers on {cores} cores step slower)"
    return total, line


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 2 * 3600:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
