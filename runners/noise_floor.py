"""Measuring a noise floor: one algorithm with one set of hyperparameters, run under N seeds.

`run_seeds` runs the reruns as one study in the store (a trial per seed, `workers` at a time, on
the local process pool); `measure_noise_floor` adds up their times to target
(workbench.noise_floor). `pacebench noise` and `pacebench set-targets` use them.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Mapping, Sequence

import pandas as pd

from runners.launch.study import run_configs
from runners.plugins import with_workload_source
from workbench import query
from workbench.records import DONE_STATUSES
from workbench.catalog import get_workload
from workbench.noise_floor import NoiseFloor, noise_floor
from workbench.power import (DEFAULT_CONFIDENCE, DEFAULT_DETECT, POWER, fewest_studies,
                             log_variance, min_detectable_speedup, studies_needed)
from workbench.spec import ExecutionOptions, RunConfig
from workbench.store import Store

__all__ = ["run_seeds", "measure_noise_floor", "noise_report"]


def run_seeds(store: Store, name: str, workload: str, algorithm: str,
              hparams: Mapping[str, Any], seeds: Sequence[int], workers: int = 2,
              stop_on_target: bool = True, max_steps: int | None = None,
              data_dir: str | Path | None = None, execution: ExecutionOptions | None = None,
              progress: bool = True, source: Any = None,
              eval_every: int | None = None, options: Any = None) -> pd.DataFrame:
    """Run (or resume) one setting under `seeds` as study `name`; its runs, one row per seed.

    Each seed is a trial of its own (trial index = position in `seeds`). Runs already complete
    or diverged in the store are not run again; a diverged run is part of the record.
    `source`: the algorithm's AlgorithmSource (runners/algorithms/sources.py) when its name
    alone does not load it. `eval_every`: the runs' eval cadence in steps (default: the
    catalog's). `options`: where the runs run (runners.launch.processes.LaunchOptions; default: the
    local pool).
    """
    loader = None if source is None or source.loaded_by_name else source
    configs = [RunConfig(workload=workload, algorithm=algorithm, hparams=dict(hparams),
                         seed=int(seed), study_name=name, trial=i, max_steps=max_steps,
                         stop_on_target=stop_on_target, eval_every=eval_every,
                         execution=execution or ExecutionOptions(),
                         algorithm_source=loader.spec if loader else None,
                         algorithm_sha256=loader.sha256 if loader else None)
               for i, seed in enumerate(seeds)]
    configs = with_workload_source(configs)  # a plug-in workload: its runs record the source
    run_configs(configs, store, name, workers, resume=True, data_dir=data_dir,
                progress=progress, options=options).check_space()
    keys = {c.trial_key for c in configs}
    runs = query.runs_frame(store)
    done = runs[runs.trial_key.isin(keys) & runs.status.isin(DONE_STATUSES)]
    return done.sort_values("attempt").drop_duplicates("trial_key", keep="last") \
        .sort_values("seed").reset_index(drop=True)


def measure_noise_floor(store: Store, workload: str, algorithm: str, hparams: Mapping[str, Any],
                        seeds: Sequence[int], name: str | None = None, workers: int = 2,
                        data_dir: str | Path | None = None,
                        execution: ExecutionOptions | None = None,
                        progress: bool = True, source: Any = None, options: Any = None
                        ) -> tuple[NoiseFloor, pd.DataFrame]:
    """(noise floor, runs) of `algorithm` with `hparams` on `workload` under `seeds`.

    Every run stops at the workload's targets, as in a study, and is timed as in a study; a run
    that misses (or diverges) counts against the reach rate. `source` and `options`: as in
    run_seeds.
    """
    get_workload(workload)
    name = name or f"noise-{workload}-{algorithm}"
    runs = run_seeds(store, name, workload, algorithm, hparams, seeds, workers, data_dir=data_dir,
                     execution=execution, progress=progress, source=source, options=options)
    return noise_floor(_times(runs)), runs


def noise_report(floor: NoiseFloor, runs: pd.DataFrame, studies: Sequence[int] = (1, 3, 5, 10),
                 detect: float = DEFAULT_DETECT, confidence: float = DEFAULT_CONFIDENCE
                 ) -> dict[str, Any]:
    """The JSON form of a measurement: the floor, each run's time, and by compare's power
    model (workbench.power), from the variance of the reruns' log times, the speedup `studies`
    studies a side can detect (None: that design can never reach `confidence`) and the
    studies a side needed to detect `detect`."""
    spread = log_variance(_times(runs))
    return {"noise_floor": floor.to_dict(),
            "runs": [{"run_id": r.run_id, "seed": int(r.seed), "status": r.status,
                      "reached_target": bool(r.reached_target),
                      "time_to_target_s": (float(r.time_to_target) if r.reached_target
                                           and math.isfinite(r.time_to_target) else None)}
                     for r in runs.itertuples()],
            "log_variance": _none_if_nan(spread), "confidence": confidence, "power": POWER,
            "min_detectable_speedup": {str(k): _none_if_nan(min_detectable_speedup(
                spread, k, confidence=confidence)) for k in studies},
            "fewest_studies": fewest_studies(1, confidence), "detect": detect,
            "studies_needed": studies_needed(spread, 1, detect, confidence)}


def _times(runs: pd.DataFrame) -> list[float | None]:
    """The runs' times to target, None for a miss (the noise floor's input)."""
    return [float(t) if reached else None
            for t, reached in zip(runs.time_to_target, runs.reached_target)]


def _none_if_nan(x: float | None) -> float | None:
    return None if x is None or math.isnan(x) else x
