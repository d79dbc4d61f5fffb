"""Stores whose runs' times to target are planned, for golden cases and calibration: drawn
trial times (timing_trials, make_timing_store), curves planned run by run (make_planned_store),
a store as everyday use leaves it (make_mixed_store), a run still being written (live_run), and
the old launch order (algorithm_after_algorithm)."""
from __future__ import annotations

import math
import os
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from workbench import records as R
from workbench.catalog import get_workload
from workbench.fakes.runs import (BATCH_SIZE, SyntheticRun, dead_process, metric_columns,
                                  metric_value, run_document, synthetic_run, write_sealed)
from workbench.spec import RunConfig
from workbench.store import RunWriter, Store, open_store


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
        doc = {**run_document(config, 1, i), "synthetic": {"seconds_to_target": seconds if math.isfinite(seconds) else None}}
        write_sealed(store, doc, run, n_evals, "complete", "synthetic", None, process)
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
        doc = {**run_document(config, 1, i), "compile_seconds": planned.get("compile_seconds"),
               "probe_seconds": planned.get("probe_seconds"),
               "launch_position": planned.get("launch_position"),
               "launched_by": planned.get("launched_by"), "design": planned.get("design"),
               **planned.get("doc", {})}
        if planned.get("status", "complete") == "failed":
            write_sealed(store, doc, run, n_evals // 2, "failed", "RuntimeError: planned",
                          "Traceback (most recent call last):\nRuntimeError: planned\n", process)
        else:
            write_sealed(store, doc, run, n_evals, planned.get("status", "complete"),
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
    never = n_evals + 1  # metric_value meets the target from this eval on: never here
    seconds, steps = float(planned.get("seconds", 1.0)), int(planned.get("steps", 10))
    off_clock, compile_s = float(planned.get("eval_seconds", 0.5)), \
        float(planned.get("compile_seconds") or 0.0)
    evals, train = [], []
    for k in range(n_evals):
        value = metric_value(spec.target.direction, spec.target.validation, k,
                              never if hit is None else hit)
        train_s, loss = compile_s + seconds * (k + 1), 2.3 * math.exp(-k / 5) + 0.05
        evals.append({"eval_index": k, "step": steps * (k + 1),
                      "examples": steps * (k + 1) * BATCH_SIZE, "train_seconds": train_s,
                      "eval_seconds": off_clock * (k + 1),
                      "wall_seconds": train_s + off_clock * (k + 1),
                      **metric_columns(spec.target.metric, value, loss)})
        train.append({"step": steps * (k + 1), "examples": steps * (k + 1) * BATCH_SIZE,
                      "train_seconds": train_s, "loss": loss})
    return evals, train


def _metric_keys(spec) -> list[str]:
    return [R.metric_column(split, spec.target.metric) for split in ("validation", "test")]


def _values(spec, k: int, hit: int) -> list[float]:
    value = metric_value(spec.target.direction, spec.target.validation, k, hit)
    return [value, value]


def live_run(path: str | os.PathLike, algorithm: str = "live", workload: str = "digits_mlp",
             trial: int = 0, n_evals: int = 3, study_name: str = "synthetic") -> RunWriter:
    """A run that is alive (this process writes it) with `n_evals` eval rows so far: the
    writer is returned for the caller to append more rows and to `finish` it."""
    store = open_store(path, create=True)
    config = RunConfig(workload=workload, algorithm=algorithm, study_name=study_name, study=0,
                       trial=trial, seed=0, hparams={"learning_rate": 0.01})
    run = synthetic_run(workload, 0, trial, max(n_evals, 1) * 4, np.random.default_rng(trial))
    doc = run_document(config, 1, 0)
    writer = store.new_run({k: v for k, v in doc.items() if k not in ("run_id", "attempt")})
    for row in run.evals[:n_evals]:
        writer.append_eval(row)
    for row in run.train[:n_evals]:
        writer.append_train(row)
    return writer
