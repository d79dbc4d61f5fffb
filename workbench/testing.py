"""Fake stores and tiny cubes for tests, notebooks and benchmarks of the analysis side.

`make_store` writes a synthetic but valid results store: the same files, keys and formats the
runner writes (run.json documents, sealed Parquet rows, live JSON lines for interrupted runs), with
learning curves built so that every run's time to target is known in advance (see `synthetic_run`).
`tiny_cube` and `tiny_times` build small inputs for the scoring functions in memory.
This module is the public face: the planned stores, the in-memory tables and the fake ladders
live in workbench/fakes/ (one concern each) and are imported from here.
"""
from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from workbench import records as R
from workbench.catalog import get_workload
from workbench.fakes.ladders import (LADDER_RUNGS, REPLICATE_TOKENS, ladder_loss,
                                     ladder_replicates, make_ladder_store, replicate_intervals)
from workbench.fakes.planned import (algorithm_after_algorithm, live_run, make_mixed_store,
                                     make_planned_store, make_timing_store, timing_trials)
from workbench.fakes.runs import (BATCH_SIZE, EVAL_SECONDS, INFERENCE_SECONDS, STEPS_PER_EVAL,
                                  SyntheticRun, dead_process, diverge, metric_columns,
                                  random_hparams, run_document, synthetic_run, write_interrupted,
                                  write_sealed)
from workbench.fakes.tables import runs_table, tiny_cube, tiny_times
from workbench.spec import RunConfig
from workbench.store import Store, atomic_write_json, open_store

__all__ = ["make_store", "make_curve_store", "make_timing_store", "make_ladder_store",
           "ladder_loss", "LADDER_RUNGS",
           "ladder_replicates", "replicate_intervals", "REPLICATE_TOKENS", "make_planned_store", "make_mixed_store",
           "algorithm_after_algorithm",
           "timing_trials",
           "make_hostile_store", "hostile", "markdown_text", "live_run", "synthetic_run",
           "SyntheticRun", "tiny_cube", "tiny_times", "runs_table", "dead_process",
           "STEPS_PER_EVAL", "BATCH_SIZE", "EVAL_SECONDS", "INFERENCE_SECONDS"]


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
    those diverge half-way, as the runner leaves a run whose loss blew up (diverge: its last
    rows' losses +inf, its validation metric NaN). Every planned curve is kept in each
    document under `synthetic` ({"hit_index", "seconds_per_eval"}) for checks.
    """
    store = open_store(path, create=True)
    rng = np.random.default_rng(seed)
    configs = [RunConfig(workload=w, algorithm=a, seed=s, study_name=study_name, study=st,
                         trial=t, hparams=random_hparams(rng))
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
        doc = run_document(config, 1, i)
        doc["synthetic"] = {"hit_index": run.hit_index, "seconds_per_eval": run.seconds_per_eval}
        half = n_evals // 2
        if i >= first_interrupted:
            write_interrupted(store, doc, run, half, process)
            continue
        if first_diverged <= i < first_failed:
            run = diverge(run, half)
            doc["synthetic"]["hit_index"] = run.hit_index
            write_sealed(store, doc, run, half + 1, "diverged",
                          f"non-finite training loss at step {run.evals[half]['step']}", None,
                          process)
            continue
        if i >= first_failed:
            write_sealed(store, doc, run, half, "failed", "RuntimeError: synthetic failure",
                          "Traceback (most recent call last):\nRuntimeError: synthetic failure\n",
                          process)
            doc = {**doc, **run_document(config, 2, i)}
        write_sealed(store, doc, run, n_evals, "complete",
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
                          **metric_columns(metric, float(value), 1.0)})
        run = SyntheticRun(None, dt, evals, [])
        config = RunConfig(workload=workload, algorithm=algorithm, seed=0,
                           study_name="curves", study=study, trial=trial, hparams={})
        write_sealed(store, run_document(config, 1, i), run, len(evals), "complete",
                      "budget used", None, process)
    return store
