"""Fake stores and tiny cubes for tests, notebooks and benchmarks of the analysis side.

`make_store` writes a synthetic but valid results store: the same files, keys and formats the
runner writes (run.json documents, sealed Parquet rows, live JSON lines for interrupted runs), with
learning curves built so that every run's time to target is known in advance (see `synthetic_run`).
`tiny_cube` and `tiny_times` build small inputs for the scoring functions in memory.
"""
from __future__ import annotations

import json
import math
import os
import re
import shutil
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd
import xarray as xr

from workbench import records as R
from workbench.catalog import get_workload
from workbench.spec import RunConfig
from workbench.store import RunWriter, Store, atomic_write_json, open_store

__all__ = ["make_store", "make_curve_store", "make_timing_store", "make_ladder_store",
           "ladder_loss", "LADDER_RUNGS",
           "ladder_replicates", "replicate_intervals", "REPLICATE_TOKENS", "make_planned_store", "make_mixed_store",
           "algorithm_after_algorithm",
           "timing_trials",
           "make_hostile_store", "hostile", "markdown_text", "live_run", "synthetic_run",
           "SyntheticRun", "tiny_cube", "tiny_times", "runs_table", "dead_process"]

STEPS_PER_EVAL = 25     # synthetic eval cadence, in update steps
BATCH_SIZE = 64
EVAL_SECONDS = 0.25     # synthetic cost of one eval, off the training clock
INFERENCE_SECONDS = 0.001  # synthetic batch-1 latency of the first algorithm; see synthetic_run
_T0 = pd.Timestamp("2026-01-01T00:00:00Z")


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
        value = _metric_value(target.direction, target.validation, k, hit)
        row = {"eval_index": k, "step": step, "examples": step * BATCH_SIZE,
               "train_seconds": (k + 1) * dt, "eval_seconds": (k + 1) * EVAL_SECONDS,
               "wall_seconds": (k + 1) * (dt + EVAL_SECONDS) + 0.5}
        loss = 2.3 * math.exp(-k / 5) + 0.05
        row.update(_metric_columns(target.metric, value, loss))
        evals.append(row)
        train.append({"step": step, "examples": step * BATCH_SIZE, "train_seconds": (k + 1) * dt,
                      "loss": loss * 0.9})
    return SyntheticRun(hit_index, dt, evals, train, INFERENCE_SECONDS * (1 + algorithm_index))


def _metric_value(direction: str, target: float, k: int, hit: int) -> float:
    """Strictly worse than `target` before eval `hit`, meeting it from `hit` on."""
    if direction == "max":
        return target - 0.2 * (hit - k) / hit if k < hit else min(1.0, target + 0.001 * (k - hit + 1))
    return target + (hit - k) / hit if k < hit else target * (1.0 - 0.5 * (k - hit + 1) / (k + 2))


def _metric_columns(metric: str, value: float, loss: float) -> dict[str, float]:
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


def _document(config: RunConfig, attempt: int, index: int) -> dict[str, Any]:
    """The run document the runner writes at the start of `config` (without status fields)."""
    spec = get_workload(config.workload)
    run_id = f"{config.workload}--{config.algorithm}--{config.trial_key}-a{attempt}"
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", f"{config.workload}{config.algorithm}"):
        raise ValueError(f"synthetic workload/algorithm names must match [A-Za-z0-9_.-]+, got "
                         f"{config.workload!r}/{config.algorithm!r}")
    started = _T0 + pd.Timedelta(seconds=10 * index + attempt)
    return {
        **R.run_identity(config, spec), "schema_version": R.SCHEMA_VERSION, "run_id": run_id,
        "attempt": attempt, "batch_size": BATCH_SIZE, "hardware": "synthetic CPU x1",
        "budget_seconds": spec.budget.seconds, "budget_steps": spec.budget.steps,
        "step_hint": spec.step_hint,
        "environment": {"python": sys.version.split()[0], "synthetic": True},
        "started_at": started.isoformat(timespec="milliseconds"), "ended_at": None,
    }


def _write_sealed(store: Store, doc: dict[str, Any], run: SyntheticRun, n_rows: int,
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


def _write_interrupted(store: Store, doc: dict[str, Any], run: SyntheticRun, n_rows: int,
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


def hostile(field: str) -> str:
    """Markup that, if a page ever renders it as HTML instead of text, runs a script that appends
    `field` to `window.__pwned` (a test then finds which name got through)."""
    return f"<img src=x onerror=\"(window.__pwned=window.__pwned||[]).push('{field}')\">{field}"


def markdown_text(source: str) -> str:
    """The text a reader sees of Markdown `source` (rendered, tags dropped, entities decoded)."""
    import html

    import markdown_it

    rendered = markdown_it.MarkdownIt("commonmark").render(source)
    return html.unescape(re.sub(r"<[^>]+>", "", rendered)).strip()


def make_hostile_store(path: str | os.PathLike, **kwargs: Any) -> Store:
    """make_store(path, **kwargs), then every name that a foreign store or an imported log
    supplies turned into hostile(...) markup, as a store written by someone else could hold:
    algorithm, workload, variant (of the second workload), study name, hyperparameter keys and
    values, hardware, stop reason and error (each run's document rewritten; the run index,
    derived data, is dropped)."""
    store = make_store(path, **kwargs)
    shutil.rmtree(store.root / R.INDEX_DIR, ignore_errors=True)
    workloads = list(dict.fromkeys(kwargs.get("workloads", ("digits_mlp", "digits_cnn"))))
    for doc_path in store.doc_paths(store.run_ids()):
        doc = json.loads(Path(doc_path).read_text())
        for key in ("algorithm", "study_name", "hardware", "stop_reason", "workload"):
            doc[key] = hostile(f"{key}-{doc.get(key)}")
        doc["base_workload"], doc["variant"] = doc["workload"], "base"
        if len(workloads) > 1 and doc["workload"] == hostile(f"workload-{workloads[1]}"):
            # a variant of the first workload
            doc["base_workload"] = hostile(f"workload-{workloads[0]}")
            doc["variant"] = hostile("variant")
        if doc.get("error"):
            doc["error"] = hostile("error")
        doc["config"].update(algorithm=doc["algorithm"], study_name=doc["study_name"],
                             workload=doc["workload"])
        doc["hparams"] = {**doc["hparams"], hostile("hparam-key"): hostile("hparam-value")}
        atomic_write_json(Path(doc_path), doc)
    return store


def make_store(path: str | os.PathLike, algorithms: Iterable[str] = ("fast", "slow"),
               workloads: Iterable[str] = ("digits_mlp", "digits_cnn"), studies: int = 2,
               trials: int = 3, seeds: Iterable[int] = (0,), n_evals: int = 20, seed: int = 0,
               interrupted: int = 0, failed: int = 0, diverged: int = 0,
               study_name: str = "synthetic") -> Store:
    """A synthetic store: workloads x algorithms x studies x trials x seeds, one trial each.

    Curves follow `synthetic_run` (the first algorithm is fastest). The last `interrupted` trials
    have one attempt killed half-way (live JSON lines with a torn last line, a dead process: it
    reads `interrupted`); the `failed` trials before them have a failed first attempt (half its
    rows, sealed, with a traceback) and a complete second one; the `diverged` trials before
    those diverge half-way, as the runner leaves a run whose loss blew up (_diverge: its last
    rows' losses +inf, its validation metric NaN). Every planned curve is kept in each
    document under `synthetic` ({"hit_index", "seconds_per_eval"}) for checks.
    """
    store = open_store(path, create=True)
    rng = np.random.default_rng(seed)
    configs = [RunConfig(workload=w, algorithm=a, seed=s, study_name=study_name, study=st,
                         trial=t, hparams=_hparams(rng))
               for w in workloads for a in algorithms for st in range(studies)
               for t in range(trials) for s in seeds]
    if interrupted + failed + diverged > len(configs):
        raise ValueError(f"interrupted + failed + diverged = {interrupted + failed + diverged} "
                         f"exceeds the {len(configs)} trials of this store")
    algo_index = {a: i for i, a in enumerate(dict.fromkeys(algorithms))}
    process = dead_process()
    first_failed, first_interrupted = len(configs) - interrupted - failed, len(configs) - interrupted
    first_diverged = first_failed - diverged
    for i, config in enumerate(configs):
        run = synthetic_run(config.workload, algo_index[config.algorithm], config.trial, n_evals, rng)
        doc = _document(config, 1, i)
        doc["synthetic"] = {"hit_index": run.hit_index, "seconds_per_eval": run.seconds_per_eval}
        half = n_evals // 2
        if i >= first_interrupted:
            _write_interrupted(store, doc, run, half, process)
            continue
        if first_diverged <= i < first_failed:
            run = _diverge(run, half)
            doc["synthetic"]["hit_index"] = run.hit_index
            _write_sealed(store, doc, run, half + 1, "diverged",
                          f"non-finite training loss at step {run.evals[half]['step']}", None,
                          process)
            continue
        if i >= first_failed:
            _write_sealed(store, doc, run, half, "failed", "RuntimeError: synthetic failure",
                          "Traceback (most recent call last):\nRuntimeError: synthetic failure\n",
                          process)
            doc = {**doc, **_document(config, 2, i)}
        _write_sealed(store, doc, run, n_evals, "complete",
                      f"step budget of {STEPS_PER_EVAL * n_evals} steps used", None, process)
    return store


def make_curve_store(path: str | os.PathLike,
                     curves: Mapping[tuple[str, str, int, int], Sequence[float]],
                     seconds_per_eval: Mapping[str, float] | None = None,
                     eval_seconds: Mapping[str, float] | None = None) -> Store:
    """A store of complete runs whose validation curves are given: curves[(algorithm, workload,
    study, trial)] = the target metric's value at evals 0, 1, ... For hand-computed cases.

    Eval k of algorithm a is at step 25(k+1), after (k+1) * seconds_per_eval[a] training
    seconds (default 1) and (k+1) * eval_seconds[a] eval seconds (default EVAL_SECONDS); its
    wall seconds are their sum. The workloads are catalog workloads (their targets apply).
    """
    store = open_store(path, create=True)
    process = dead_process()
    dts, costs = dict(seconds_per_eval or {}), dict(eval_seconds or {})
    for i, ((algorithm, workload, study, trial), values) in enumerate(curves.items()):
        metric = get_workload(workload).target.metric
        dt, cost = dts.get(algorithm, 1.0), costs.get(algorithm, EVAL_SECONDS)
        evals = []
        for k, value in enumerate(values):
            step = STEPS_PER_EVAL * (k + 1)
            evals.append({"eval_index": k, "step": step, "examples": step * BATCH_SIZE,
                          "train_seconds": (k + 1) * dt, "eval_seconds": (k + 1) * cost,
                          "wall_seconds": (k + 1) * (dt + cost),
                          **_metric_columns(metric, float(value), 1.0)})
        run = SyntheticRun(None, dt, evals, [])
        config = RunConfig(workload=workload, algorithm=algorithm, seed=0,
                           study_name="curves", study=study, trial=trial, hparams={})
        _write_sealed(store, _document(config, 1, i), run, len(evals), "complete",
                      "budget used", None, process)
    return store


def _diverge(run: SyntheticRun, at: int) -> SyntheticRun:
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


def timing_trials(rng: np.random.Generator, factors: Mapping[str, float],
                  workloads: Iterable[str], studies: int, trials: int, spread: float = 0.25,
                  miss_rate: float = 0.1, base: float = 10.0) -> dict[tuple, float]:
    """Trial times for calibration: {(algorithm, workload, study, trial): seconds or +inf}.

    A trial of algorithm `a` reaches the target after base * factors[a] * exp(N(0, spread))
    seconds, or misses (+inf) with probability `miss_rate`, the same for every algorithm: with
    equal factors the algorithms are exchangeable (no true difference); a factor of 1.5 makes an
    algorithm's every time 1.5 times longer.
    """
    out = {}
    for w in workloads:
        for a, factor in factors.items():
            for st in range(studies):
                for t in range(trials):
                    time = base * factor * math.exp(rng.normal(0.0, spread))
                    out[(a, w, st, t)] = math.inf if rng.random() < miss_rate else time
    return out


def make_timing_store(path: str | os.PathLike, factors: Mapping[str, float],
                      workloads: Iterable[str] = ("mnist1d_mlp",), studies: int = 5,
                      trials: int = 5, seed: int = 0, spread: float = 0.25,
                      miss_rate: float = 0.1, n_evals: int = 40) -> Store:
    """A store whose runs' times to target are `timing_trials` (to the eval grid: a run meets
    its target at eval 20 + its rank among its study's trials by time, so its time to target is
    exactly the drawn time and the study's fastest trial is the one that met it at the smallest
    eval, as AlgoPerf's trial rule needs; a miss trains for 40 evals of a tenth of the budget
    without meeting it). Every planned time is kept in the run document under `synthetic`
    (`seconds_to_target`, None for a miss) for checks."""
    store = open_store(path, create=True)
    planned = timing_trials(np.random.default_rng(seed), factors, list(workloads), studies,
                            trials, spread, miss_rate)
    rank = {key: sum(other < seconds for k, other in planned.items() if k[:3] == key[:3])
            for key, seconds in planned.items()}
    process = dead_process()
    for i, ((a, w, st, t), seconds) in enumerate(planned.items()):
        config = RunConfig(workload=w, algorithm=a, seed=0, study_name="timing", study=st,
                           trial=t, hparams={"learning_rate": 0.01})
        spec = get_workload(w)
        hit = 20 + rank[(a, w, st, t)] if math.isfinite(seconds) else n_evals + 1  # a miss: never
        per_eval = (seconds / (hit + 1) if math.isfinite(seconds)
                    else spec.budget.seconds / 10 / n_evals)
        curve = synthetic_run(w, 0, 0, n_evals, np.random.default_rng(i))
        evals = [{**row, "train_seconds": (k + 1) * per_eval,
                  **{c: v for c, v in zip(_metric_keys(spec), _values(spec, k, hit))}}
                 for k, row in enumerate(curve.evals)]
        run = SyntheticRun(hit if hit < n_evals else None, per_eval, evals, curve.train)
        doc = {**_document(config, 1, i), "synthetic": {"seconds_to_target": seconds if math.isfinite(seconds) else None}}
        _write_sealed(store, doc, run, n_evals, "complete", "synthetic", None, process)
    return store


def algorithm_after_algorithm(configs: Sequence[RunConfig]) -> list[tuple[RunConfig, dict]]:
    """The launch order before runners.launch.study.launch_order: every trial of the first algorithm,
    then every trial of the next (the plan's order), with places shaped as launch_order's
    ({"position", "block", "blocks", "seed"}; a block per trial). Kept for tests and
    benchmarks/drift.py only, to show what a change of machine speed does to a verdict when an
    algorithm's trials all run in one stretch of a study."""
    first = {a: i for i, a in reversed(list(enumerate(c.algorithm for c in configs)))}
    ordered = sorted(configs, key=lambda c: (first[c.algorithm], c.workload, c.study, c.trial,
                                             c.seed))
    return [(c, {"position": i, "block": i, "blocks": len(ordered), "seed": 0})
            for i, c in enumerate(ordered)]


def make_planned_store(path: str | os.PathLike,
                       plan: Mapping[tuple, Mapping[str, Any]],
                       n_evals: int = 10, study_name: str = "planned") -> Store:
    """A store of one run per (algorithm, workload, study, trial) of `plan` (a fifth element of
    a key names its study, else `study_name`), each on the curve planned for it, so that golden
    cases on every time axis are computed by hand.

    A plan's keys (all optional): `hit`, the first eval (0-based) meeting the validation target
    (None, the default: a miss over all `n_evals`); `seconds` training s per eval (default 1);
    `steps` per eval (default 10); `eval_seconds` off the clock per eval (default 0.5);
    `compile_seconds`, `probe_seconds` and `launch_position`, written to the run document
    (default None: not recorded). Eval k (0-based) is at step steps (k + 1), train_seconds compile + seconds (k + 1)
    and wall_seconds train_seconds + eval_seconds (k + 1): a run that hits at eval h has time to
    target compile + seconds (h + 1) s and step_to_target steps (h + 1).
    Where a run came from (records.py): `ruleset` (default external), `launched_by` ("study",
    "run" for an ad-hoc run; default None), `design` (default None), `hparams` (default a
    learning rate of 0.01), and `status` (default complete; failed: half its evals, sealed,
    with a traceback; or diverged, stalled). `doc`: more top-level run-document fields, e.g. a
    search space (records.SEARCH_SPACE_FIELDS) or `"phase": "tuning"`.
    """
    store = open_store(path, create=True)
    process = dead_process()
    for i, (key, planned) in enumerate(plan.items()):
        a, w, study, trial = key[:4]
        config = RunConfig(workload=w, algorithm=a, seed=0,
                           study_name=key[4] if len(key) > 4 else study_name, study=study,
                           trial=trial, ruleset=planned.get("ruleset", "external"),
                           design=planned.get("design"),
                           hparams=planned.get("hparams", {"learning_rate": 0.01}))
        hit = planned.get("hit")
        evals, train = _planned_rows(get_workload(w), planned, n_evals)
        run = SyntheticRun(hit, float(planned.get("seconds", 1.0)), evals, train)
        doc = {**_document(config, 1, i), "compile_seconds": planned.get("compile_seconds"),
               "probe_seconds": planned.get("probe_seconds"),
               "launch_position": planned.get("launch_position"),
               "launched_by": planned.get("launched_by"), "design": planned.get("design"),
               **planned.get("doc", {})}
        if planned.get("status", "complete") == "failed":
            _write_sealed(store, doc, run, n_evals // 2, "failed", "RuntimeError: planned",
                          "Traceback (most recent call last):\nRuntimeError: planned\n", process)
        else:
            _write_sealed(store, doc, run, n_evals, planned.get("status", "complete"),
                          "planned", None, process)
    return store


def make_mixed_store(path: str | os.PathLike) -> Store:
    """A store as everyday use leaves it (make_planned_store, mnist1d_mlp and mnist1d_cnn):
    study "main" (launched by `pacebench study`, one design per algorithm): adamw and
    heavy_ball, 3 studies x 2 trials on both workloads, adamw's trial 1 of study 0 on
    mnist1d_mlp failed; study "wide" of heavy_ball with another design (4 trials per study, 3
    studies, mnist1d_mlp); three ad-hoc runs of adamw (`pacebench run`, study name "adhoc")
    with learning rates 0.001, 0.003 and 0.01 on mnist1d_mlp; and a self-tuning study "self"
    of adamw and heavy_ball (3 studies x 1 trial, mnist1d_mlp). Times are planned so that no
    two algorithms tie."""
    plan: dict[tuple, dict[str, Any]] = {}
    for study in range(3):
        for w in ("mnist1d_mlp", "mnist1d_cnn"):
            for trial in range(2):
                for a, hit in (("adamw", 3 + study + trial), ("heavy_ball", 5 + study)):
                    plan[(a, w, study, trial, "main")] = {
                        "hit": hit, "launched_by": "study", "design": f"main-{a}",
                        **({"status": "failed"} if (a, w, study, trial) ==
                           ("adamw", "mnist1d_mlp", 0, 1) else {})}
        for trial in range(4):
            plan[("heavy_ball", "mnist1d_mlp", study, trial, "wide")] = {
                "hit": 2 + study + trial, "launched_by": "study", "design": "wide-heavy_ball"}
        for a, hit in (("adamw", 4 + study), ("heavy_ball", 6 + study)):
            plan[(a, "mnist1d_mlp", study, 0, "self")] = {
                "hit": hit, "ruleset": "self", "launched_by": "study", "design": f"self-{a}"}
    for trial, lr in enumerate((0.001, 0.003, 0.01)):
        plan[("adamw", "mnist1d_mlp", 0, trial, "adhoc")] = {
            "hit": 2 + trial, "launched_by": "run", "hparams": {"learning_rate": lr}}
    return make_planned_store(path, plan)


def _planned_rows(spec, planned: Mapping[str, Any], n_evals: int) -> tuple[list, list]:
    """(eval rows, training-loss rows) of one run of make_planned_store."""
    hit = planned.get("hit")
    never = n_evals + 1  # _metric_value meets the target from this eval on: never here
    seconds, steps = float(planned.get("seconds", 1.0)), int(planned.get("steps", 10))
    off_clock, compile_s = float(planned.get("eval_seconds", 0.5)), \
        float(planned.get("compile_seconds") or 0.0)
    evals, train = [], []
    for k in range(n_evals):
        value = _metric_value(spec.target.direction, spec.target.validation, k,
                              never if hit is None else hit)
        train_s, loss = compile_s + seconds * (k + 1), 2.3 * math.exp(-k / 5) + 0.05
        evals.append({"eval_index": k, "step": steps * (k + 1),
                      "examples": steps * (k + 1) * BATCH_SIZE, "train_seconds": train_s,
                      "eval_seconds": off_clock * (k + 1),
                      "wall_seconds": train_s + off_clock * (k + 1),
                      **_metric_columns(spec.target.metric, value, loss)})
        train.append({"step": steps * (k + 1), "examples": steps * (k + 1) * BATCH_SIZE,
                      "train_seconds": train_s, "loss": loss})
    return evals, train


def _metric_keys(spec) -> list[str]:
    return [R.metric_column(split, spec.target.metric) for split in ("validation", "test")]


def _values(spec, k: int, hit: int) -> list[float]:
    value = _metric_value(spec.target.direction, spec.target.validation, k, hit)
    return [value, value]


def live_run(path: str | os.PathLike, algorithm: str = "live", workload: str = "digits_mlp",
             trial: int = 0, n_evals: int = 3, study_name: str = "synthetic") -> RunWriter:
    """A run that is alive (this process writes it) with `n_evals` eval rows so far: the
    writer is returned for the caller to append more rows and to `finish` it."""
    store = open_store(path, create=True)
    config = RunConfig(workload=workload, algorithm=algorithm, study_name=study_name, study=0,
                       trial=trial, seed=0, hparams={"learning_rate": 0.01})
    run = synthetic_run(workload, 0, trial, max(n_evals, 1) * 4, np.random.default_rng(trial))
    doc = _document(config, 1, 0)
    writer = store.new_run({k: v for k, v in doc.items() if k not in ("run_id", "attempt")})
    for row in run.evals[:n_evals]:
        writer.append_eval(row)
    for row in run.train[:n_evals]:
        writer.append_train(row)
    return writer


def _hparams(rng: np.random.Generator) -> dict[str, float]:
    return {"learning_rate": float(10 ** rng.uniform(-4, -1)),
            "weight_decay": float(10 ** rng.uniform(-5, -2))}


# -- in-memory inputs for scoring ------------------------------------------------------------
def runs_table(rows: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """A runs frame (records.RUN_COLUMNS, query.RUN_DTYPES) from partial rows; gaps get defaults.

    Each row needs algorithm, workload, study, trial; `time` and `index` (eval index) give the
    time to target (both None: not reached). Defaults: seed 0, attempt 1, status complete,
    study_name "tiny", ruleset external, a max-accuracy target of 0.9.
    """
    from workbench.query import RUN_DTYPES

    out = []
    for i, row in enumerate(rows):
        r = dict(row)
        time, index = r.pop("time", None), r.pop("index", None)
        reached = time is not None
        base = r.get("base_workload", r["workload"])
        out.append({
            "run_id": f"r{i:05d}", "trial_key": f"k{i:05d}", "attempt": 1, "study_name": "tiny",
            "base_workload": base, "variant": "base" if base == r["workload"] else "variant",
            "ruleset": "external", "seed": 0, "rng_seed": i, "hparams": {}, "batch_size": 64,
            "status": "complete", "stop_reason": None, "hardware": "none", "source": "pacebench",
            "target_metric": "accuracy", "target_direction": "max", "target_validation": 0.9,
            "target_test": 0.9, "budget_seconds": 100.0, "budget_steps": 1000,
            "steps": 100, "train_seconds": 100.0, "wall_seconds": 110.0,
            "reached_target": reached, "time_to_target": time if reached else math.nan,
            "step_to_target": None if index is None else 10 * (index + 1),
            "wall_to_target": time * 1.1 if reached else math.nan, "inference_seconds": math.nan,
            "device": "cpu", "precision": "fp32", "peak_memory_bytes": math.nan, "mfu": math.nan,
            "energy_joules": math.nan,
            "eval_index_to_target": index, "best_validation": 0.95 if reached else 0.5,
            "started_at": (_T0 + pd.Timedelta(seconds=i)).isoformat(), "ended_at": None,
            "error": None, **r})
    frame = pd.DataFrame(out, columns=list(R.RUN_COLUMNS))
    return frame.astype(RUN_DTYPES)


def tiny_cube(trials: Mapping[tuple[str, str, int, int], tuple[int, float] | None],
              base_of: Mapping[str, str] | None = None) -> xr.Dataset:
    """A final cube from {(algorithm, workload, study, trial): (eval_index, seconds) or None}.

    None means the trial ran and never reached its target; a combination absent from `trials`
    did not run (NaN in the cube). `base_of` maps a variant workload to its base workload.
    """
    from workbench.cubes import final_cube

    base_of = base_of or {}
    rows = []
    for (algorithm, workload, study, trial), hit in trials.items():
        index, time = hit if hit is not None else (None, None)
        rows.append({"algorithm": algorithm, "workload": workload, "study": study, "trial": trial,
                     "base_workload": base_of.get(workload, workload), "time": time,
                     "index": index})
    return final_cube(runs_table(rows))


def tiny_times(table: Mapping[str, Mapping[str, float]]) -> xr.DataArray:
    """Per-workload times (algorithm, workload) from {algorithm: {workload: seconds}}; gaps NaN."""
    frame = pd.DataFrame(table, dtype=float).T  # rows: algorithms, columns: workloads
    frame.index.name, frame.columns.name = "algorithm", "workload"
    return xr.DataArray(frame.sort_index().sort_index(axis=1), name="time_to_target",
                        attrs={"units": "s"})


# A fake ladder's rungs: (name, non-embedding parameters), about 4x apart, as the GPT ladder's.
LADDER_RUNGS = (("gpt_tiny", 12_000), ("gpt_small", 48_000), ("gpt_medium", 192_000))
LADDER_EXPONENT = 0.35  # b of every fake rung's L(D)
LADDER_SEQUENCE = 64    # tokens per sequence x 8 sequences per step: tokens per step 512


def ladder_loss(non_embedding_params: float, tokens) -> np.ndarray:
    """The fake ladder's true final validation loss of the reference after `tokens` training
    tokens: L(D) = a D^-0.35 + c, with c = 1 + 20 N^-0.3 falling with size N and a set so that
    L - c = 1 at Chinchilla's 20 tokens per parameter."""
    n = float(non_embedding_params)
    a = (20 * n) ** LADDER_EXPONENT
    return a * np.power(np.asarray(tokens, float), -LADDER_EXPONENT) + 1.0 + 20 * n ** -0.3


def make_ladder_store(path: str | os.PathLike,
                      algorithms: Mapping[str, float] | None = None,
                      rungs: Sequence[tuple[str, int]] = LADDER_RUNGS,
                      budgets: Sequence[float] = (1, 2, 4, 8), seeds: int = 5,
                      noise: float = 0.01, seed: int = 0, seconds_per_token: Mapping[str, float]
                      | None = None, tuning_trials: Mapping[str, int] | None = None,
                      early: int = 0, repeated: bool = False, n_evals: int = 4,
                      study_name: str = "ladder",
                      sweeps: Mapping[str, Sequence[tuple[Mapping[str, Any], float]]]
                      | None = None) -> Store:
    """A fake model-size ladder's store: rungs x budgets x algorithms x seeds, each a complete
    run whose document's config holds the ladder record runners/procedures/ladder.py writes and whose last
    eval row holds its final validation loss.

    Algorithm `name` with factor m ends at the reference's true loss at m times its tokens
    (`ladder_loss`) plus N(0, noise): factor 0.5 is a planted speedup of 0.5, 2 one of 2. The
    first algorithm is the reference (default {"adamw": 1.0, "twin": 1.0}). Train seconds: tokens x seconds_per_token[name] (default
    1e-4). `early`: that many runs of the last algorithm stop at half their planned steps;
    `repeated`: every run records repeated_tokens. Names are written as given (hostile ones
    too): run folders are numbered. `sweeps`: {algorithm: [(hyperparameters, final validation
    loss), ...]}: that algorithm's sweep at every rung (ladder phase "tuning", study
    "<study_name>.tuning", the smallest budget, seed 0), its final runs given the sweep's best
    point (the lowest loss) as their hyperparameters."""
    store = open_store(path, create=True)
    rng = np.random.default_rng(seed)
    algorithms = dict(algorithms or {"adamw": 1.0, "twin": 1.0})
    names = list(algorithms)
    late = 0
    with store.sealed_batch(durable=False) as batch:
        for r, (rung, n) in enumerate(rungs):
            for name in names:
                for b, budget in enumerate(budgets):
                    for s in range(seeds):
                        shorten = name == names[-1] and late < early
                        late += shorten
                        doc, evals = _ladder_run(
                            rung, n, name, budget, s, b, study_name, algorithms[name],
                            noise * rng.standard_normal(),
                            (seconds_per_token or {}).get(name, 1e-4),
                            (tuning_trials or {}).get(name, 0), names[0], repeated, shorten,
                            n_evals)
                        best = min((sweeps or {}).get(name, [({}, 0.0)]), key=lambda p: p[1])[0]
                        doc["hparams"] = doc["config"]["hparams"] = dict(best)
                        batch.add(doc, evals, doc["run_id"])
                for k, (hparams, loss) in enumerate((sweeps or {}).get(name, [])):
                    batch.add(*_sweep_run(rung, n, name, budgets[0], k, study_name, names[0],
                                          hparams, loss, n_evals))
        batch.publish()
    return store


def _sweep_run(rung: str, n: int, algorithm: str, budget: float, trial: int, study_name: str,
               reference: str, hparams: Mapping[str, Any], loss: float, n_evals: int
               ) -> tuple[dict, Any, str]:
    """(document, eval rows, run id) of one fake ladder sweep run ending at `loss`."""
    import pyarrow as pa

    doc, evals = _ladder_run(rung, n, algorithm, budget, trial, 0, f"{study_name}.tuning", 1.0,
                             0.0, 1e-4, 0, reference, False, False, n_evals)
    run_id = f"sweep-{_run_number(rung, algorithm, trial)}"
    doc.update(run_id=run_id, trial_key=run_id, trial=trial, seed=0, hparams=dict(hparams))
    doc["config"].update(hparams=dict(hparams), seed=0, trial=trial)
    doc["config"]["ladder"]["phase"] = "tuning"
    rows = evals.to_pylist()
    rows = [{**r, "run_id": run_id} for r in rows]
    rows[-1]["validation/loss"] = float(loss)
    return doc, pa.Table.from_pylist(rows), run_id


def _ladder_run(rung: str, n: int, algorithm: str, budget: float, seed: int, place: int,
                study_name: str, factor: float, noise: float, seconds_per_token: float,
                tuning_trials: int, reference: str, repeated: bool, shorten: bool,
                n_evals: int) -> tuple[dict, Any]:
    """The document and eval rows (an Arrow table) of one fake ladder run."""
    import pyarrow as pa

    tokens_per_step = 8 * LADDER_SEQUENCE
    steps = max(n_evals, math.ceil(budget * 20 * n / tokens_per_step))
    tokens = steps * tokens_per_step
    ran = steps // 2 if shorten else steps
    run_id = f"ladder-{_run_number(rung, algorithm, budget, seed)}"
    record = {"rung": rung, "non_embedding_params": n, "params": 2 * n + 4096,
              "flops_per_token": 6.0 * n, "budget": float(budget), "tokens": tokens,
              "steps": steps, "data": "generated", "repeated_tokens": repeated,
              "transfer": None, "tuning_trials": tuning_trials, "phase": "final",
              "reference": reference}
    config = {"workload": rung, "algorithm": algorithm, "hparams": {}, "seed": seed,
              "study_name": study_name, "study": place, "trial": 0, "ladder": record}
    evals = []
    for k in range(1, n_evals + 1):
        step = ran * k // n_evals
        seen = step * tokens_per_step
        loss = float(ladder_loss(n, seen * factor)) + (noise if k == n_evals else 0.0)
        evals.append({"run_id": run_id, "eval_index": k - 1, "step": step,
                      "examples": step * 8, "train_seconds": seen * seconds_per_token,
                      "eval_seconds": 0.1 * k, "wall_seconds": seen * seconds_per_token + 0.1 * k,
                      "validation/loss": loss, "train/loss": loss * 0.98})
    last = evals[-1]
    doc = {"schema_version": R.SCHEMA_VERSION, "run_id": run_id, "attempt": 1,
           "trial_key": run_id, "study_name": study_name, "workload": rung,
           "base_workload": rung, "variant": "base", "algorithm": algorithm,
           "ruleset": "external", "study": place, "trial": 0, "seed": seed, "rng_seed": seed,
           "hparams": {}, "source": "pacebench", "config": config, "batch_size": 8,
           "target_metric": "loss", "target_direction": "min", "target_validation": 0.0,
           "target_test": 0.0, "budget_seconds": None, "budget_steps": steps,
           "hardware": "synthetic CPU x1", "status": "complete",
           "stop_reason": f"step budget of {steps} steps used" if not shorten else "stopped early",
           "error": None, "launched_by": "study",
           "started_at": _T0.isoformat(), "ended_at": _T0.isoformat(), "steps": last["step"],
           "train_seconds": last["train_seconds"], "wall_seconds": last["wall_seconds"],
           "eval_seconds": last["eval_seconds"]}
    return doc, pa.Table.from_pylist(evals)


def _run_number(*parts: Any) -> str:
    """A folder-safe number for a fake run from its parts (any text: hostile names too)."""
    import hashlib

    return hashlib.sha256(json.dumps([str(p) for p in parts]).encode()).hexdigest()[:16]


# Replicate one-rung ladders for calibration (tests/test_ladder.py, benchmarks/
# ladder_coverage.py): the middle fake rung at budgets 1, 2, 4, 8.
REPLICATE_TOKENS = 20.0 * LADDER_RUNGS[1][1] * np.array([1.0, 2.0, 4.0, 8.0])


def ladder_replicates(rng: np.random.Generator, factor: float, replicates: int,
                      seeds: int = 5, noise: float = 0.01) -> np.ndarray:
    """Final (loss, train seconds) of `replicates` independent arms of the middle fake rung
    (the truth at `factor` x the tokens, plus N(0, noise)): replicates x budgets x seeds x 2."""
    n = LADDER_RUNGS[1][1]
    loss = ladder_loss(n, REPLICATE_TOKENS * factor)[None, :, None] + \
        noise * rng.standard_normal((replicates, len(REPLICATE_TOKENS), seeds))
    seconds = np.broadcast_to(REPLICATE_TOKENS[None, :, None] * 1e-4, loss.shape)
    return np.stack([loss, seconds], -1)


def replicate_intervals(ref: np.ndarray, arms: Mapping[str, np.ndarray], draws: int,
                        rng: np.random.Generator, dof: int | None = None,
                        loss_noise: float | None = None) -> dict:
    """{name: [(low, high) per replicate]}: the geometric-mean speedup intervals of many
    one-rung ladders at once (arrays as ladder_replicates makes them), by the steps of
    workbench.ladder.rung_analysis (a point fit per replicate; rescaled_means, one vectorised
    refit of the reference for all replicates x draws, invert, the geometric mean, interval)
    with the replicates as a leading axis. `dof`: of the widening (default rung_analysis's,
    n_ref + n_X - 2; a huge one gives the plain percentile interval). `loss_noise`: the
    parametric bootstrap of `--loss-noise` (each mean plus N(0, loss_noise^2 / seeds), no
    widening) in place of resampling seeds."""
    from workbench import ladder

    replicates, budgets, seeds = ref.shape[:3]
    tokens = REPLICATE_TOKENS

    def drawn(values):  # replicates x draws x budgets x 2
        if loss_noise is not None:
            means = np.repeat(values.mean(2)[:, None], draws, 1)
            means[..., 0] += rng.standard_normal(means.shape[:3]) * loss_noise / math.sqrt(seeds)
            return means
        return np.stack([ladder.rescaled_means(values[:, k], draws, rng)
                         for k in range(budgets)], 2)

    points = [ladder.fit_power_law(tokens, row) for row in ref.mean(2)[..., 0]]
    refits = [v.reshape(replicates, draws, 1)
              for v in ladder.fit_power_laws(tokens, drawn(ref)[..., 0].reshape(-1, budgets))]
    out = {}
    for name, arm in arms.items():
        means = arm.mean(2)[..., 0]
        logs = np.log(ladder.invert(*refits, drawn(arm)[..., 0]) / tokens).mean(-1)
        out[name] = []
        for r, fit in enumerate(points):
            value = math.exp(np.log(fit.inverse(means[r]) / tokens).mean())
            out[name].append(ladder.interval(np.exp(logs[r]), ladder.INTERVAL_LEVEL, value,
                                             math.inf if loss_noise is not None else
                                             2 * seeds - 2 if dof is None else dof))
    return out
