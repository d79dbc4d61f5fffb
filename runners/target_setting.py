"""Setting a workload's targets from a tuned baseline, as a reproducible command.

1. Tune: `trials` quasirandom trials of each candidate algorithm, each trained for the full
   step hint with no target to stop at (or reuse the tuning of the workload's existing record).
2. Pick the trial with the best validation value.
3. Rerun its hyperparameters `reruns` times (default 10) with new seeds, for the full step hint.
4. Validation target: the value that a fraction `reach_quantile` (default 0.9) of the reruns
   attain within the first `horizon` (default 0.5) of the step hint, so the tuned baseline
   reaches it reliably and every algorithm has at least twice the steps the baseline needed. (AlgoPerf
   v0.5 gave 4/3, horizon 0.75; on our CPU workloads that put the target so near the best value
   any run reaches that a 5-trial study of AdamW or heavy-ball missed it in most studies, and
   who reached it was luck; see docs/workloads.md. AlgoPerf's own rule, the median of the reruns' best
   values over the whole run, which the baseline itself misses half the time, stays available
   as reach_quantile=None, horizon=1.) Test target = the worst test value, among the reruns
   that reach the validation target, taken at the eval where that rerun first reached it.
5. The noise floor: the reruns' times to the validation target (median, interquartile range,
   coefficient of variation) and their reach rate (workbench/noise_floor.py).
6. Steps to target: each rerun's first eval step that meets the validation target (within the
   horizon, at the reruns' eval cadence) and their median over the reruns that reach it,
   `median_steps_to_target`, which sizes the workload's eval cadence (workbench/catalog.py).
The record (every trial, every rerun, the targets, the noise floor, the steps to target, the
hardware and the command) is written to `<out_dir>/<workload>.json`; the catalog's targets and
noise floors are copied from there and a test checks them.

`measure_steps_to_target` measures the steps to target of an existing record anew, finely: it
reruns the record's tuned baseline under its reruns' seeds as a study runs them (stopping at the
targets, within the catalog's budget), evaluating every `eval_every` steps, and writes the median
and how it was measured into the record; the targets stay as they are
(benchmarks/steps_to_target.py runs it).
"""
from __future__ import annotations

import datetime as dt
import json
import math
import statistics
import sys
from pathlib import Path
from typing import Any, Mapping, Sequence

import pandas as pd

from workbench import query
from workbench.catalog import TARGETS_DIR, get_workload, plugin_source
from workbench.errors import UserError
from workbench.noise_floor import NoiseFloor, noise_floor, reach_quantile_value
from workbench.outcomes import first_hit
from workbench.records import DONE_STATUSES, metric_column
from workbench.spec import ExecutionOptions, StudySpec, Target, to_plain
from workbench.store import open_store

__all__ = ["set_targets", "check_rule", "targets_from_reruns", "lenient_round", "median_steps",
           "steps_measurement", "measure_steps_to_target", "DEFAULT_RERUNS",
           "DEFAULT_REACH_QUANTILE", "DEFAULT_HORIZON"]

DEFAULT_RERUNS = 10
DEFAULT_REACH_QUANTILE = 0.9
DEFAULT_HORIZON = 0.5  # of the step hint: every algorithm gets twice the baseline's time (see module doc)


def targets_from_reruns(target: Target, reruns: list[dict],
                        reach_quantile: float | None = None) -> tuple[float, float]:
    """(validation target, test target) from rerun summaries with best_validation and test_at.

    reach_quantile None: the median of the best values (AlgoPerf); else the value that this
    fraction of the reruns attain (workbench.noise_floor.reach_quantile_value). A rerun that
    reached nothing (diverged at once: NaN best) counts as the worst possible value.
    """
    worst_value = -math.inf if target.direction == "max" else math.inf
    best = [r["best_validation"] if math.isfinite(r["best_validation"]) else worst_value
            for r in reruns]
    validation = (statistics.median(best) if reach_quantile is None
                  else reach_quantile_value(best, target.direction, reach_quantile))
    probe = Target(target.metric, target.direction, validation, math.nan)
    tests = [r["test_at"](validation) for r in reruns if probe.reached(r["best_validation"])]
    tests = [t for t in tests if t is not None and math.isfinite(t)]
    worst = min(tests) if target.direction == "max" else max(tests)
    return validation, worst


def lenient_round(value: float, direction: str, decimals: int = 4) -> float:
    """Round a target to `decimals` places towards the easy side, so the value it came from
    still meets it (0.986667 -> 0.9866 for a max metric, not 0.9867, which it would miss)."""
    scale = 10 ** decimals
    step = math.floor if direction == "max" else math.ceil
    return step(value * scale + (1e-9 if direction == "max" else -1e-9)) / scale


def median_steps(steps: Sequence[float | None]) -> float | None:
    """Median steps to target over the reruns that reached it (None or NaN: a miss, left out, as
    the noise floor leaves out a miss's time); None when none reached it."""
    hit = [float(s) for s in steps if s is not None and math.isfinite(s)]
    return statistics.median(hit) if hit else None


def steps_measurement(seeds: Sequence[int], steps: Sequence[float | None],
                      eval_every: Mapping[str, Any], stop: str, **provenance: Any) -> dict:
    """The record's `steps_to_target` block: each seed's steps to the validation target (None: a
    miss), their median over the reruns that reached it, and how they were measured (the eval
    cadence the first hit is read at, what stopped a run, and `provenance`: command, date,
    hardware, ...)."""
    steps = [None if s is None or not math.isfinite(s) else int(s) for s in steps]
    return {"median": median_steps(steps), "runs": len(steps),
            "reached": sum(s is not None for s in steps), "seeds": [int(x) for x in seeds],
            "steps": steps, "eval_every": dict(eval_every), "stop": stop, **provenance}


def _best(values: pd.Series, direction: str) -> float:
    """Best finite value of a metric column (NaN when it has none)."""
    return float(values.max() if direction == "max" else values.min())


def _summarise(run: pd.Series, evals: pd.DataFrame, target: Target,
               max_step: int | None = None) -> dict:
    """One run's best validation value, and functions giving its test value, time and step at
    its first hit of a validation target (workbench.outcomes.first_hit); only the evals up to
    `max_step` count when it is given."""
    val, test = metric_column("validation", target.metric), metric_column("test", target.metric)
    rows = evals[evals.run_id == run.run_id].sort_values("eval_index")
    if max_step is not None:
        rows = rows[rows.step <= max_step]

    def at_first_hit(goal: float, column: str) -> float | None:
        at = first_hit(rows[val].to_numpy(float), goal, target.direction,
                       rows["train_seconds"].to_numpy(float))
        return None if at is None else float(rows[column].iloc[at])

    return {"run_id": run.run_id, "algorithm": run.algorithm, "seed": int(run.seed),
            "hparams": run.hparams, "best_validation": _best(rows[val], target.direction),
            "train_seconds": float(run.train_seconds),
            "test_at": lambda goal: at_first_hit(goal, test),
            "time_at": lambda goal: at_first_hit(goal, "train_seconds"),
            "step_at": lambda goal: at_first_hit(goal, "step")}


def _tune(store, name: str, workload: str, algorithms: list[str], trials: int, max_steps: int,
          workers: int, data_dir, execution: ExecutionOptions | None,
          sources: Mapping[str, Any] | None = None, options: Any = None) -> pd.DataFrame:
    """Run (or resume) the tuning study; return its finished attempts, one per trial."""
    from runners.launch.study import plan_study, run_study
    from runners.launch.resume import study_draw_scheme

    spec = StudySpec(workloads=(workload,), algorithms=tuple(algorithms), trials=trials,
                     name=name, max_steps=max_steps, stop_on_target=False,
                     execution=execution or ExecutionOptions())
    scheme = study_draw_scheme(store, name)  # the one run_study draws with
    keys = {c.trial_key for c in plan_study(spec, sources=sources, draw_scheme=scheme)}
    run_study(spec, store, workers=workers, resume=True, data_dir=data_dir,
              sources=sources, options=options).check_space()
    runs = query.runs_frame(store)  # diverged runs count: a configuration that diverges is part of the record
    done = runs[runs.trial_key.isin(keys) & runs.status.isin(DONE_STATUSES)]
    return done.sort_values("attempt").drop_duplicates("trial_key", keep="last")


def _recorded_tuning(path: Path, workload: str) -> tuple[list[dict], dict]:
    """(tuning trials, best trial) of the existing record at `path`, for --reuse-tuning."""
    if not path.is_file():
        raise FileNotFoundError(f"--reuse-tuning: no record at {path} to take the tuning from")
    old = json.loads(path.read_text())
    if old.get("workload") != workload or not old.get("tuning") or not old.get("best_hparams"):
        raise UserError(f"--reuse-tuning: {path} holds no tuning of {workload!r} "
                        "(workload, tuning and best_hparams are needed)")
    best = {"algorithm": old["best_algorithm"], "hparams": old["best_hparams"]}
    return old["tuning"], best


def set_targets(workload: str, algorithms: str | list[str], trials: int = 8,
                reruns: int = DEFAULT_RERUNS,
                reach_quantile: float | None = DEFAULT_REACH_QUANTILE,
                horizon: float = DEFAULT_HORIZON, out_dir: Path = TARGETS_DIR, store_path: Path = Path("results"),
                workers: int = 2, data_dir=None, execution: ExecutionOptions | None = None,
                reuse_tuning: bool = False, sources: Mapping[str, Any] | None = None,
                rerun_eval_every: int | None = None, estimate_only: bool = False,
                options=None) -> dict | None:
    """Run the target-setting procedure for `workload` and write its record; returns the record.

    reach_quantile None: AlgoPerf's median rule; horizon: the share of the step hint within which
    the reruns' values count (1: the whole run). reuse_tuning: take the tuning trials and the best
    trial from the workload's existing record in `out_dir` and only rerun (the tuning is not
    repeated; the record keeps it). sources: {display name: AlgorithmSource} of the algorithms
    that their names alone do not load (runners/algorithms/sources.py); the record names them.
    rerun_eval_every: the reruns' eval cadence in steps (default: the catalog's). options:
    LaunchOptions (default: the local pool). estimate_only: print the time estimate only.
    """
    spec = get_workload(workload)
    algorithms = algorithms.split(",") if isinstance(algorithms, str) else list(algorithms)
    check_rule(reruns, reach_quantile, horizon)
    _print_estimate(spec, algorithms, reruns, workers, data_dir, execution, sources,
                    rerun_eval_every, tuning_runs=0 if reuse_tuning else trials * len(algorithms))
    if estimate_only:  # nothing written
        return None
    store = open_store(Path(store_path), create=True)
    steps = spec.step_hint
    tag = f"targets-{workload}"
    record_path = out_dir / f"{workload}.json"
    if reuse_tuning:
        tuning, best = _recorded_tuning(record_path, workload)
        algorithms = sorted({t["algorithm"] for t in tuning})
        print(f"tuning reused from {record_path}: best trial {best['algorithm']} "
              f"{best['hparams']}")
    else:
        tuning, best = _tuning(store, f"{tag}-tuning", spec, algorithms, trials, workers,
                               data_dir, execution, sources, options)

    from runners.procedures.noise_floor import run_seeds

    rerun_runs = run_seeds(store, f"{tag}-reruns", workload, best["algorithm"], best["hparams"],
                           range(1, reruns + 1), workers, stop_on_target=False, max_steps=steps,
                           data_dir=data_dir, execution=execution,
                           source=(sources or {}).get(best["algorithm"]),
                           eval_every=rerun_eval_every, options=options)
    evals = query.evals_frame(store, list(rerun_runs.run_id))
    until = int(horizon * steps)
    rerun = [_summarise(r, evals, spec.target, until) for r in rerun_runs.itertuples()]
    provenance = _provenance(store, rerun[0]["run_id"])
    record = {**_targets_record(spec, rerun, reach_quantile), "horizon": horizon,
              "horizon_steps": until,
              "algorithms": algorithms, "best_algorithm": best["algorithm"],
              "best_hparams": best["hparams"], "tuning": tuning, "tuning_reused": reuse_tuning,
              **_sources(workload, sources), **provenance}
    record["steps_to_target"] = _procedure_steps(spec, record["reruns"], rerun_eval_every,
                                                 until, provenance)
    out_dir.mkdir(parents=True, exist_ok=True)
    record_path.write_text(json.dumps(record, indent=1) + "\n")
    _announce(spec, record, record_path)
    return record


def _announce(spec, record: dict, path: Path) -> None:
    """The one line that says what the procedure set."""
    print(f"{spec.name}: validation {spec.target.metric} target {record['validation_target']} "
          f"(reached by {record['reach_rate']:.0%} of {len(record['reruns'])} reruns), test "
          f"target {record['test_target']}; noise floor: "
          f"{NoiseFloor.from_dict(record['noise_floor']).describe()} -> {path}")


def _print_estimate(spec, algorithms: list[str], reruns: int, workers: int,
                    data_dir, execution: ExecutionOptions | None,
                    sources: Mapping[str, Any] | None, rerun_eval_every: int | None,
                    tuning_runs: int) -> float:
    """Probe the workload under the first candidate and print how long the procedure takes."""
    from runners.launch.estimate import describe_plan, probe

    first = algorithms[0]
    source = (sources or {}).get(first)
    if source is not None and not source.loaded_by_name:
        first = "adamw"  # a plug-in's file is loaded by the runs; a built-in stands in for timing
    measured = probe(spec.name, first, execution=execution, data_dir=data_dir)
    eval_every = rerun_eval_every or spec.eval_every.steps
    seconds, line = describe_plan(measured, [("tuning", tuning_runs), ("rerun", reruns)],
                                  spec.step_hint, eval_every, workers)
    print(f"{spec.name}: {line}", flush=True)
    return seconds


def _provenance(store, run_id: str) -> dict:
    """Where, when and by what command a record was made (the command: None unless run as
    `pacebench`)."""
    return {"hardware": store.run_doc(run_id)["hardware"], "date": dt.date.today().isoformat(),
            "command": "pacebench " + " ".join(sys.argv[1:])
            if sys.argv[0].endswith("pacebench") else None}


def check_rule(reruns: int, reach_quantile: float | None, horizon: float) -> None:
    """ValueError unless the procedure's numbers make sense."""
    if reruns < 2:
        raise UserError(f"--reruns must be >= 2 (a spread needs two runs), got {reruns}")
    if reach_quantile is not None and not 0 < reach_quantile <= 1:
        raise UserError(f"--reach-quantile must be in (0, 1], got {reach_quantile}")
    if not 0 < horizon <= 1:
        raise UserError(f"--horizon must be in (0, 1], got {horizon}")


def _procedure_steps(spec, reruns: list[dict], eval_every: int | None, until: int,
                     provenance: Mapping[str, Any]) -> dict:
    """The `steps_to_target` block of the procedure's reruns (public summaries): read at their
    eval cadence (`eval_every`, else the catalog's), within the horizon (`until` steps)."""
    cadence = ({"steps": eval_every} if eval_every
               else {k: v for k, v in to_plain(spec.eval_every).items() if v is not None})
    return steps_measurement(
        [r["seed"] for r in reruns], [r["steps_to_target"] for r in reruns], cadence,
        f"the procedure's reruns ({spec.step_hint} steps, no stop at the targets); evals within "
        f"the horizon ({until} steps) count", **provenance)


def _sources(workload: str, sources: Mapping[str, Any] | None) -> dict:
    """Where the record's plug-ins come from: the algorithms that their names alone do not
    load, and a plug-in workload's factory."""
    plugin = plugin_source(workload)
    return {"algorithm_sources": {n: s.spec for n, s in (sources or {}).items()
                                  if not s.loaded_by_name},
            "workload_source": plugin[0] if plugin else None}


def _tuning(store, name: str, spec, algorithms: list[str], trials: int, workers: int, data_dir,
            execution: ExecutionOptions | None, sources: Mapping[str, Any] | None,
            options: Any = None) -> tuple[list[dict], dict]:
    """(every tuning trial's summary, the best trial) of a fresh (or resumed) tuning study."""
    tuned = _tune(store, name, spec.name, algorithms, trials, spec.step_hint, workers, data_dir,
                  execution, sources, options)
    evals = query.evals_frame(store, list(tuned.run_id))
    summaries = [_summarise(r, evals, spec.target) for r in tuned.itertuples()]
    sign = 1 if spec.target.direction == "max" else -1
    best = max((t for t in summaries if math.isfinite(t["best_validation"])),
               key=lambda t: sign * t["best_validation"])
    print(f"best tuning trial: {best['algorithm']} {best['hparams']} -> "
          f"{best['best_validation']:.4f}")
    return [_public(t) for t in summaries], best


def _targets_record(spec, rerun: list[dict], reach_quantile: float | None) -> dict:
    """The targets, the rule, the reach rate and the noise floor of the reruns' summaries."""
    validation, test = targets_from_reruns(spec.target, rerun, reach_quantile)
    direction = spec.target.direction
    validation_target = lenient_round(validation, direction)
    probe = Target(spec.target.metric, direction, validation_target, math.nan)
    floor = noise_floor([r["time_at"](validation_target) for r in rerun])
    return {
        "workload": spec.name, "metric": spec.target.metric, "direction": direction,
        "validation_target": validation_target, "test_target": lenient_round(test, direction),
        "procedure": __doc__.strip().splitlines()[0], "steps_per_run": spec.step_hint,
        "rule": ("median of the reruns' best validation values (AlgoPerf)"
                 if reach_quantile is None else
                 f"reach quantile {reach_quantile:g}: the value at least {reach_quantile:.0%} of "
                 "the reruns' best validation values (within the horizon) attain"),
        "reach_quantile": reach_quantile,
        "reach_rate": sum(probe.reached(r["best_validation"]) for r in rerun) / len(rerun),
        "noise_floor": floor.to_dict(),
        "reruns": [_public(r, validation_target) for r in rerun],
        "median_time_to_target_s": None if math.isnan(floor.median_s) else floor.median_s,
        "median_steps_to_target": median_steps([r["step_at"](validation_target) for r in rerun]),
    }


def _public(summary: dict, goal: float | None = None) -> dict:
    """A run summary without its closures, for the JSON record."""
    out = {k: v for k, v in summary.items() if not callable(v)}
    if goal is not None:
        out["test_at_target"] = summary["test_at"](goal)
        out["time_to_target_s"] = summary["time_at"](goal)
        step = summary["step_at"](goal)
        out["steps_to_target"] = None if step is None else int(step)
    return out


def measure_steps_to_target(workload: str, out_dir: Path = TARGETS_DIR,
                            store_path: Path = Path("results/steps-to-target"),
                            eval_every: int = 1, workers: int = 2, data_dir=None,
                            execution: ExecutionOptions | None = None,
                            command: str | None = None) -> dict:
    """Measure the steps to target of `workload`'s tuned baseline anew and write them into its
    record `<out_dir>/<workload>.json` (`median_steps_to_target` and the `steps_to_target`
    block); returns the block. The targets and everything else in the record stay as they are.

    The record's best trial is rerun under its reruns' seeds as study `targets-<workload>-reruns`
    with the same trial indices (so each run draws the same initialisation and data order as the
    procedure's rerun of that seed), as a study runs it: stopping once both targets are met,
    within the catalog's budget, evaluating every `eval_every` steps. A run's steps to target is
    its first eval step that meets the validation target; a run that never meets it is a miss.
    """
    if eval_every < 1:
        raise UserError(f"eval_every must be >= 1 step, got {eval_every}")
    record_path = out_dir / f"{workload}.json"
    record = json.loads(record_path.read_text())
    spec = get_workload(workload)
    if record.get("workload") != workload or not record.get("reruns") \
            or not record.get("best_algorithm"):
        raise UserError(f"{record_path} names no tuned baseline with reruns (a published "
                        "target?): there is nothing to rerun")
    algorithm = record["best_algorithm"]
    seeds = sorted(int(r["seed"]) for r in record["reruns"])
    from runners.procedures.noise_floor import run_seeds

    store = open_store(Path(store_path), create=True)
    runs = run_seeds(store, f"targets-{workload}-reruns", workload, algorithm,
                     record["best_hparams"], seeds, workers, stop_on_target=True,
                     data_dir=data_dir, execution=execution, eval_every=eval_every,
                     source=_recorded_source(record, algorithm))
    by_seed = {int(r.seed): (float(r.step_to_target) if r.reached_target else None)
               for r in runs.itertuples()}
    unfinished = [s for s in seeds if s not in by_seed]
    if unfinished:  # a failed run is neither a hit nor a miss: measure again, never guess
        raise RuntimeError(f"{workload}: the runs of seeds {unfinished} did not finish (see the "
                           f"store {store_path}); run this again to resume them")
    block = steps_measurement(
        seeds, [by_seed.get(s) for s in seeds], {"steps": eval_every},
        f"as a study: stopped once the validation and test targets were both met, within the "
        f"catalog's budget ({spec.budget.steps} steps, {spec.budget.seconds:g} training seconds)",
        algorithm=algorithm, study_name=f"targets-{workload}-reruns",
        statuses=sorted(set(runs.status)),
        hardware=store.run_doc(runs.run_id.iloc[0])["hardware"],
        date=dt.date.today().isoformat(), command=command)
    record["steps_to_target"] = block
    record["median_steps_to_target"] = block["median"]
    record_path.write_text(json.dumps(record, indent=1) + "\n")
    return block


def _recorded_source(record: Mapping[str, Any], algorithm: str) -> Any:
    """The AlgorithmSource of a record's best algorithm when its name alone does not load it."""
    spec = (record.get("algorithm_sources") or {}).get(algorithm)
    if not spec:
        return None
    from runners.algorithms import algorithm_names
    from runners.algorithms.sources import parse_algorithms

    return parse_algorithms([f"{algorithm}={spec}"], algorithm_names())[algorithm]
