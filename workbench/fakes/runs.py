"""One synthetic run and how it lands in a store: its planned curve (synthetic_run), the run
document the runner would write (run_document) and the two ways a run ends on disk (sealed,
or killed mid-way with live rows). The building blocks of every fake store."""
from __future__ import annotations

import math
import re
import socket
import subprocess
import sys
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from workbench import records as R
from workbench.catalog import get_workload
from workbench.spec import RunConfig
from workbench.store import Store

STEPS_PER_EVAL = 25     # synthetic eval cadence, in update steps
BATCH_SIZE = 64
EVAL_SECONDS = 0.25     # synthetic cost of one eval, off the training clock
INFERENCE_SECONDS = 0.001  # synthetic batch-1 latency of the first algorithm; see synthetic_run
START = pd.Timestamp("2026-01-01T00:00:00Z")


@dataclass(frozen=True)
class SyntheticRun:
    """The planned curve of one synthetic run: its rows and the eval at which it meets its target."""

    hit_index: int | None        # first eval meeting the validation target; None: never within n_evals
    seconds_per_eval: float      # training seconds between evals
    evals: list[dict[str, Any]]  # eval rows (without run_id), records.EVAL_COLUMNS + metrics
    train: list[dict[str, Any]]  # training-loss rows (without run_id)
    inference_seconds: float = INFERENCE_SECONDS  # batch-1 latency recorded when it completes


def synthetic_run(workload: str, algorithm_index: int, trial: int, n_evals: int,
                  rng: np.random.Generator) -> SyntheticRun:
    """Curve of one run: eval k happens at step 25(k+1) after (k+1)*seconds_per_eval training s.

    seconds_per_eval = (1 + algorithm_index / 2) * (1 + trial / 10); the validation target metric is
    strictly worse than the target before eval `hit_index` and meets it from there on, where
    hit_index = U[n_evals/5, n_evals) + algorithm_index * n_evals/4 (no hit if >= n_evals).
    A complete run records inference_seconds = INFERENCE_SECONDS * (1 + algorithm_index).
    """
    target = get_workload(workload).target
    hit = int(rng.integers(max(1, n_evals // 5), max(2, n_evals))) + algorithm_index * (n_evals // 4)
    hit_index = hit if hit < n_evals else None
    dt = (1.0 + algorithm_index / 2) * (1.0 + trial / 10)
    evals, train = [], []
    for k in range(n_evals):
        step = STEPS_PER_EVAL * (k + 1)
        value = metric_value(target.direction, target.validation, k, hit)
        row = {"eval_index": k, "step": step, "examples": step * BATCH_SIZE,
               "train_seconds": (k + 1) * dt, "eval_seconds": (k + 1) * EVAL_SECONDS,
               "wall_seconds": (k + 1) * (dt + EVAL_SECONDS) + 0.5}
        loss = 2.3 * math.exp(-k / 5) + 0.05
        row.update(metric_columns(target.metric, value, loss))
        evals.append(row)
        train.append({"step": step, "examples": step * BATCH_SIZE, "train_seconds": (k + 1) * dt,
                      "loss": loss * 0.9})
    return SyntheticRun(hit_index, dt, evals, train, INFERENCE_SECONDS * (1 + algorithm_index))


def metric_value(direction: str, target: float, k: int, hit: int) -> float:
    """Strictly worse than `target` before eval `hit`, meeting it from `hit` on."""
    if direction == "max":
        return target - 0.2 * (hit - k) / hit if k < hit else min(1.0, target + 0.001 * (k - hit + 1))
    return target + (hit - k) / hit if k < hit else target * (1.0 - 0.5 * (k - hit + 1) / (k + 2))


def metric_columns(metric: str, value: float, loss: float) -> dict[str, float]:
    cols = {R.metric_column("validation", metric): value, R.metric_column("test", metric): value,
            R.metric_column("train", "loss"): loss * 0.8}
    if metric != "loss":
        cols[R.metric_column("validation", "loss")] = loss
        cols[R.metric_column("test", "loss")] = loss * 1.05
    return cols


def dead_process() -> dict[str, Any]:
    """A run document's `process` entry for a process that has exited (liveness reads it dead)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    pid = child.pid
    # a start before the boot never matches a live process, even if the pid has been reused since
    return {"host": socket.gethostname(), "pid": pid, "started_after_boot": -1.0}


def run_document(config: RunConfig, attempt: int, index: int) -> dict[str, Any]:
    """The run document the runner writes at the start of `config` (without status fields)."""
    spec = get_workload(config.workload)
    run_id = f"{config.workload}--{config.algorithm}--{config.trial_key}-a{attempt}"
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", f"{config.workload}{config.algorithm}"):
        raise ValueError(f"synthetic workload/algorithm names must match [A-Za-z0-9_.-]+, got "
                         f"{config.workload!r}/{config.algorithm!r}")
    started = START + pd.Timedelta(seconds=10 * index + attempt)
    return {
        **R.run_identity(config, spec), "schema_version": R.SCHEMA_VERSION, "run_id": run_id,
        "attempt": attempt, "batch_size": BATCH_SIZE, "hardware": "synthetic CPU x1",
        "budget_seconds": spec.budget.seconds, "budget_steps": spec.budget.steps,
        "step_hint": spec.step_hint,
        "environment": {"python": sys.version.split()[0], "synthetic": True},
        "started_at": started.isoformat(timespec="milliseconds"), "ended_at": None,
    }


def write_sealed(store: Store, doc: dict[str, Any], run: SyntheticRun, n_rows: int,
                  status: str, stop_reason: str, error: str | None, process: dict) -> None:
    """A finished run exactly as RunWriter.finish leaves it: document plus sealed Parquet rows."""
    import pyarrow as pa

    run_id = doc["run_id"]
    evals, train = (pa.Table.from_pylist([{"run_id": run_id, **r} for r in rows]) if rows
                    else None for rows in (run.evals[:n_rows], run.train[:n_rows]))
    last = run.evals[n_rows - 1] if n_rows else {"step": 0, "train_seconds": 0.0,
                                                 "eval_seconds": 0.0, "wall_seconds": 0.0}
    ended = pd.Timestamp(doc["started_at"]) + pd.Timedelta(seconds=last["wall_seconds"])
    doc = {**doc, "status": status, "stop_reason": stop_reason, "error": error, "process": process,
           "ended_at": ended.isoformat(timespec="milliseconds"), "steps": last["step"],
           "examples": last["step"] * BATCH_SIZE, "train_seconds": last["train_seconds"],
           "eval_seconds": last["eval_seconds"], "wall_seconds": last["wall_seconds"],
           "reached_validation": run.hit_index is not None and run.hit_index < n_rows,
           "inference_seconds": run.inference_seconds if status == "complete" else None}
    # no fsync: nobody reads a fake store while it is being made
    if not store.write_sealed_run(doc, evals, run_id, train, durable=False):
        raise ValueError(f"run {run_id} is already in {store.root}")


def write_interrupted(store: Store, doc: dict[str, Any], run: SyntheticRun, n_rows: int,
                       process: dict) -> str:
    """A run killed mid-way, through the real writer: live JSON lines, a torn last line, a dead pid."""
    writer = store.new_run({k: v for k, v in doc.items() if k not in ("run_id", "attempt")})
    for row in run.evals[:n_rows]:
        writer.append_eval(row)
    for row in run.train[:n_rows]:
        writer.append_train(row)
    writer._evals.write('{"run_id": "' + writer.run_id + '", "eval_index": ')  # killed mid-write
    writer._stop.set()
    writer._evals.close()
    writer._train.close()
    writer.update(process=process)
    return writer.run_id


def diverge(run: SyntheticRun, at: int) -> SyntheticRun:
    """`run` blown up at eval `at`: from there on every loss is +inf (training rows and eval
    columns) and every other metric NaN; no target met from there on."""
    def blown(row: dict) -> dict:
        return {k: (math.inf if k == "loss" or k.endswith("loss") else math.nan)
                if k == "loss" or "/" in k else v for k, v in row.items()}
    hit = run.hit_index if run.hit_index is not None and run.hit_index < at else None
    return SyntheticRun(hit, run.seconds_per_eval,
                        run.evals[:at] + [blown(r) for r in run.evals[at:]],
                        run.train[:at] + [blown(r) for r in run.train[at:]],
                        run.inference_seconds)


def random_hparams(rng: np.random.Generator) -> dict[str, float]:
    return {"learning_rate": float(10 ** rng.uniform(-4, -1)),
            "weight_decay": float(10 ** rng.uniform(-5, -2))}
