"""The one "meets the target" rule (workbench.spec.meets): every path that decides whether a value
meets a target agrees with it, NaN and infinities included; and the execution options."""
from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pytest
import xarray as xr

from runners.worker import GoalStop
from workbench import query, scaling
from workbench.catalog import get_workload
from workbench.spec import ExecutionOptions, RunConfig, SpecError, Target, meets
from workbench.store import open_store

GOAL = 0.9
VALUES = [0.85, 0.9, 0.95, math.nan, math.inf, -math.inf]
EXPECTED = {"max": [False, True, True, False, False, False],
            "min": [True, True, False, False, False, False]}


@pytest.mark.parametrize("direction", ["max", "min"])
def test_meets_is_at_least_as_good_and_finite(direction):
    assert meets(VALUES, GOAL, direction).tolist() == EXPECTED[direction]
    target = Target("accuracy", direction, GOAL, GOAL)
    assert [target.reached(v) for v in VALUES] == EXPECTED[direction]
    assert target.reached(None) is False
    with pytest.raises(SpecError, match="'min' or 'max'"):
        meets(VALUES, GOAL, "up")


def _store_of_single_evals(root, direction: str):
    """One run per value of VALUES, each with one eval whose validation accuracy is that value."""
    store = open_store(root, create=True)
    for i, value in enumerate(VALUES):
        doc = {"trial_key": f"k{i}", "study_name": "s", "workload": "w", "algorithm": "a",
               "status": "complete", "target_metric": "accuracy",
               "target_direction": direction, "target_validation": GOAL}
        rows = pa.Table.from_pylist([{"eval_index": 0, "step": 1, "examples": 1,
                                      "train_seconds": 1.0, "eval_seconds": 0.1,
                                      "wall_seconds": 1.2, "validation/accuracy": value}])
        store.write_sealed_run(doc, rows, f"run{i}")
    return store


@pytest.mark.parametrize("direction", ["max", "min"])
def test_every_path_agrees_with_the_rule(tmp_path, direction):
    expected = meets(VALUES, GOAL, direction).tolist()
    # the run table's SQL (time to target, the AlgoPerf first hit)
    runs = query.runs_frame(_store_of_single_evals(tmp_path / "s", direction))
    assert runs.sort_values("run_id")["reached_target"].tolist() == expected
    # a scaling study's steps-to-result
    curves = xr.Dataset({"validation/accuracy": (("run", "eval"), np.array(VALUES)[:, None]),
                         "step": (("run", "eval"), np.ones((len(VALUES), 1)))},
                        coords={"run": range(len(VALUES))})
    hits = scaling.first_hit_steps(curves, "validation/accuracy", GOAL, direction)
    assert np.isfinite(hits.values).tolist() == expected
    # the scaling goal that ends a run (digits_mlp's metric is accuracy, "max")
    if direction == get_workload("digits_mlp").target.direction:
        stop = GoalStop("digits_mlp", GOAL)
        assert [stop({"validation/accuracy": v}) is not None for v in VALUES] == expected


def test_execution_options_check_their_values_and_join_the_identity_when_they_matter():
    with pytest.raises(SpecError, match="valid are fp32, bf16"):
        ExecutionOptions(precision="fp16")
    with pytest.raises(SpecError, match="threads must be >= 1"):
        ExecutionOptions(threads=0)
    assert ExecutionOptions().identity() == {}
    assert ExecutionOptions(device="cuda", threads=4).identity() == {}  # recorded beside the run
    assert ExecutionOptions(precision="bf16", compile=True).identity() == \
        {"precision": "bf16", "compile": True}
    config = RunConfig("synthetic", "adamw", execution={"threads": 2})
    assert config.execution == ExecutionOptions(threads=2)
    assert RunConfig.from_dict(config.to_dict()) == config
    flat = {k: v for k, v in config.to_dict().items() if k != "execution"}  # schema 1's form
    assert RunConfig.from_dict({**flat, "threads": 2, "device": "cpu"}) == config
