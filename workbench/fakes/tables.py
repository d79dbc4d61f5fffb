"""In-memory inputs for scoring: a runs frame from partial rows (runs_table), a final cube from
trial outcomes (tiny_cube) and per-workload times (tiny_times)."""
from __future__ import annotations

import math
from typing import Any, Iterable, Mapping

import pandas as pd
import xarray as xr

from workbench import records as R
from workbench.fakes.runs import START


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
            "started_at": (START + pd.Timedelta(seconds=i)).isoformat(), "ended_at": None,
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
