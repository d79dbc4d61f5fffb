"""The one "meets the target" rule (workbench.spec.meets): every path that decides whether a value
meets a target agrees with it, NaN and infinities included; the execution options; the names and
numbers a run or a study refuses."""
from __future__ import annotations

import math
import re

import numpy as np
import pyarrow as pa
import pytest
import xarray as xr

from runners.launch.worker import GoalStop
from workbench import query, scaling
from workbench.catalog import get_workload
from workbench.spec import ExecutionOptions, RunConfig, SpecError, StudySpec, Target, meets
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


@pytest.mark.parametrize("fields, message", [
    ({"study_name": "../../x"}, "bad study name '../../x'"),
    ({"study_name": "a/b"}, "bad study name 'a/b'"),
    ({"study_name": ""}, "bad study name ''"),
    ({"study_name": ".hidden"}, "bad study name '.hidden'"),
    ({"max_steps": -5}, "max_steps must be a number >= 1, got -5"),
    ({"batch_size": 0}, "batch_size must be a number >= 1, got 0"),
    ({"seed": -1}, "seed must be a number >= 0, got -1"),
    ({"trial": 1.5e308 * 10}, "trial must be a number >= 0, got inf"),
    ({"budget_multiplier": float("nan")}, "budget_multiplier must be a number"),
])
def test_a_run_config_refuses_bad_names_and_numbers(fields, message):
    with pytest.raises(SpecError, match=re.escape(message)):
        RunConfig(workload="synthetic", algorithm="adamw", **fields)


def test_names_and_numbers_of_studies_are_checked_too():
    good = StudySpec(workloads=("synthetic",), algorithms=("adamw",), name="my-study_2.v1")
    assert good.name == "my-study_2.v1"
    for bad in ({"name": "x y"}, {"name": "..", "trials": 2}, {"max_steps": 0}, {"seeds": (-3,)}):
        with pytest.raises(SpecError):
            StudySpec(workloads=("synthetic",), algorithms=("adamw",), **bad)
