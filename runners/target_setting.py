"""Setting a workload's targets the AlgoPerf way, as a reproducible command.

1. Tune: `trials` quasirandom trials of each candidate algorithm, each trained for the full
   step hint with no target to stop at.
2. Pick the trial with the best validation value.
3. Rerun its hyperparameters `reruns` times with new seeds.
4. Validation target = the median over reruns of each rerun's best validation value.
   Test target = the worst test value, among the reruns that reach the validation target, taken at
   the eval where that rerun first reached it.
The record (every trial, every rerun, the targets, the hardware and the command) is written to
`<out_dir>/<workload>.json`; the catalog's targets are copied from there and a test checks them.
"""
from __future__ import annotations

import datetime as dt
import json
import math
import statistics
import sys
from pathlib import Path

import pandas as pd

from workbench import query
from workbench.catalog import get_workload
from workbench.records import metric_column
from workbench.spec import ExecutionOptions, RunConfig, StudySpec, Target
from workbench.store import open_store

__all__ = ["set_targets", "targets_from_reruns", "lenient_round"]


def targets_from_reruns(target: Target, reruns: list[dict]) -> tuple[float, float]:
    """(validation target, test target) from rerun summaries with best_validation and test_at.

    A rerun that reached nothing (diverged at once: NaN best) counts as the worst possible value.
    """
    worst_value = -math.inf if target.direction == "max" else math.inf
    validation = statistics.median(r["best_validation"] if math.isfinite(r["best_validation"])
                                   else worst_value for r in reruns)
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


def _best(values: pd.Series, direction: str) -> float:
    """Best finite value of a metric column (NaN when it has none)."""
    return float(values.max() if direction == "max" else values.min())


def _summarise(run: pd.Series, evals: pd.DataFrame, target: Target) -> dict:
    """One run's best validation value, and a function giving its test value at a val target."""
    val, test = metric_column("validation", target.metric), metric_column("test", target.metric)
    rows = evals[evals.run_id == run.run_id].sort_values("eval_index")

    def test_at(goal: float) -> float | None:
        probe = Target(target.metric, target.direction, goal, math.nan)
        hit = rows[[probe.reached(v) for v in rows[val]]]
        return None if hit.empty else float(hit.iloc[0][test])

    def time_at(goal: float) -> float | None:
        probe = Target(target.metric, target.direction, goal, math.nan)
        hit = rows[[probe.reached(v) for v in rows[val]]]
        return None if hit.empty else float(hit.iloc[0]["train_seconds"])

    return {"run_id": run.run_id, "algorithm": run.algorithm, "seed": int(run.seed),
            "hparams": run.hparams, "best_validation": _best(rows[val], target.direction),
            "train_seconds": float(run.train_seconds), "test_at": test_at, "time_at": time_at}


def _study(store, name: str, workload: str, algorithms: list[str], trials: int, seeds: tuple,
           max_steps: int, workers: int, data_dir, hparams: dict | None = None,
           execution: ExecutionOptions | None = None) -> pd.DataFrame:
    """Run (or resume) the planned runs; return their finished attempts, one per trial.

    `execution`: the execution options of every run (device, precision, ...)."""
    from runners.launch import plan_study, run_study
    from runners.loop import run

    execution = execution or ExecutionOptions()
    if hparams is None:
        spec = StudySpec(workloads=(workload,), algorithms=tuple(algorithms), trials=trials,
                         name=name, max_steps=max_steps, stop_on_target=False,
                         execution=execution)
        keys = {c.trial_key for c in plan_study(spec)}
        run_study(spec, store, workers=workers, resume=True, data_dir=data_dir)
    else:
        keys = set()
        for seed in seeds:  # reruns of one configuration: few, so in this process
            cfg = RunConfig(workload=workload, algorithm=algorithms[0], hparams=hparams, seed=seed,
                            study_name=name, max_steps=max_steps, stop_on_target=False,
                            execution=execution)
            keys.add(cfg.trial_key)
            if cfg.trial_key not in store.done_trial_keys():
                run(cfg, store, data_dir=data_dir)
    runs = query.runs_frame(store)  # diverged runs count: a configuration that diverges is part of the record
    done = runs[runs.trial_key.isin(keys) & runs.status.isin(["complete", "diverged"])]
    return done.sort_values("attempt").drop_duplicates("trial_key", keep="last")


def set_targets(workload: str, algorithms: str | list[str], trials: int = 8, reruns: int = 3,
                out_dir: Path = Path("targets"), store_path: Path = Path("results"),
                workers: int = 2, data_dir=None, execution: ExecutionOptions | None = None
                ) -> dict:
    """Run the target-setting procedure for `workload` and write its record; returns the record."""
    spec = get_workload(workload)
    algorithms = algorithms.split(",") if isinstance(algorithms, str) else list(algorithms)
    store = open_store(Path(store_path), create=True)
    steps = spec.step_hint
    tag = f"targets-{workload}"

    tuned = _study(store, f"{tag}-tuning", workload, algorithms, trials, (0,), steps, workers,
                   data_dir, execution=execution)
    evals = query.evals_frame(store, list(tuned.run_id))
    tuning = [_summarise(r, evals, spec.target) for r in tuned.itertuples()]
    key = (lambda t: t["best_validation"]) if spec.target.direction == "max" \
        else (lambda t: -t["best_validation"])
    best = max((t for t in tuning if math.isfinite(t["best_validation"])), key=key)
    print(f"best tuning trial: {best['algorithm']} {best['hparams']} -> {best['best_validation']:.4f}")

    rerun_runs = _study(store, f"{tag}-reruns", workload, [best["algorithm"]], 1,
                        tuple(range(1, reruns + 1)), steps, workers, data_dir, best["hparams"],
                        execution=execution)
    evals = query.evals_frame(store, list(rerun_runs.run_id))
    rerun = [_summarise(r, evals, spec.target) for r in rerun_runs.itertuples()]
    validation, test = targets_from_reruns(spec.target, rerun)
    times = [t for t in (r["time_at"](validation) for r in rerun) if t is not None]
    record = {
        "workload": workload, "metric": spec.target.metric, "direction": spec.target.direction,
        "validation_target": lenient_round(validation, spec.target.direction),
        "test_target": lenient_round(test, spec.target.direction),
        "procedure": __doc__.strip().splitlines()[0], "steps_per_run": steps,
        "algorithms": algorithms, "best_algorithm": best["algorithm"],
        "best_hparams": best["hparams"],
        "tuning": [_public(t) for t in tuning], "reruns": [_public(r, validation) for r in rerun],
        "median_time_to_target_s": statistics.median(times) if times else None,
        "hardware": store.run_doc(rerun[0]["run_id"])["hardware"],
        "date": dt.date.today().isoformat(),
        "command": "pacebench " + " ".join(sys.argv[1:]) if sys.argv[0].endswith("pacebench") else None,
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / f"{workload}.json").write_text(json.dumps(record, indent=1) + "\n")
    print(f"{workload}: validation {spec.target.metric} target {record['validation_target']}, "
          f"test target {record['test_target']}; median time to target "
          f"{record['median_time_to_target_s']} s -> {out_dir / (workload + '.json')}")
    return record


def _public(summary: dict, goal: float | None = None) -> dict:
    """A run summary without its closures, for the JSON record."""
    out = {k: v for k, v in summary.items() if not callable(v)}
    if goal is not None:
        out["test_at_target"] = summary["test_at"](goal)
        out["time_to_target_s"] = summary["time_at"](goal)
    return out
