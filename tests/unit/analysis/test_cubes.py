"""Tidy frames -> xarray: the final cube, the curve cube and curves on a grid."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from workbench import cubes, query
from workbench.testing import make_store, runs_table


def _runs(*rows):
    return runs_table(rows)


def test_final_cube_dims_coords_and_missing_cells():
    runs = _runs(
        dict(algorithm="a", workload="w1", study=0, trial=0, time=5.0, index=4),
        dict(algorithm="a", workload="w1", study=0, trial=1),  # ran, missed
        dict(algorithm="b", workload="w2", study=1, trial=0, time=7.0, index=2,
             base_workload="w1"),
    )
    cube = cubes.final_cube(runs)
    assert cube["time_to_target"].dims == cubes.FINAL_DIMS
    assert dict(cube.sizes) == {"algorithm": 2, "workload": 2, "study": 2, "trial": 2, "seed": 1}
    cell = dict(algorithm="a", workload="w1", study=0, seed=0)
    assert cube["time_to_target"].sel(**cell, trial=0) == 5.0
    assert cube["eval_index_to_target"].sel(**cell, trial=0) == 4.0
    assert cube["step_to_target"].sel(**cell, trial=0) == 50.0
    assert math.isinf(cube["time_to_target"].sel(**cell, trial=1))  # ran, missed: +inf
    assert math.isinf(cube["eval_index_to_target"].sel(**cell, trial=1))
    assert cube["reached"].sel(**cell).values.tolist() == [1.0, 0.0]
    missing = dict(algorithm="a", workload="w2", study=1, trial=0, seed=0)
    assert np.isnan(cube["time_to_target"].sel(**missing))  # never ran: NaN
    assert np.isnan(cube["reached"].sel(**missing))
    assert cube["status"].sel(**missing) == "" and cube["run_id"].sel(**missing) == ""
    assert cube["variant"].values.tolist() == ["base", "variant"]
    assert cube["base_workload"].values.tolist() == ["w1", "w1"]
    assert cube["target_validation"].values.tolist() == [0.9, 0.9]
    assert cube["time_to_target"].attrs["units"] == "s"


def test_attempt_selection_prefers_latest_done_attempt():
    cell = dict(algorithm="a", workload="w", study=0)
    runs = _runs(
        dict(cell, trial=0, attempt=1, status="complete", time=3.0, index=1),
        dict(cell, trial=0, attempt=2, status="interrupted"),   # done attempt 1 wins
        dict(cell, trial=1, attempt=1, status="failed"),
        dict(cell, trial=1, attempt=2, status="interrupted", time=9.0, index=5),  # latest wins
        dict(cell, trial=2, attempt=1, status="complete", time=4.0, index=2),
        dict(cell, trial=2, attempt=2, status="diverged"),      # latest done attempt
    )
    chosen = cubes.select_attempts(runs).set_index("trial")
    assert chosen["attempt"].to_dict() == {0: 1, 1: 2, 2: 2}
    cube = cubes.final_cube(runs).sel(algorithm="a", workload="w", study=0, seed=0)
    assert cube["status"].values.tolist() == ["complete", "interrupted", "diverged"]
    assert cube["time_to_target"].values.tolist() == [3.0, 9.0, math.inf]


def test_final_cube_rejects_two_studies_in_one_cell():
    runs = _runs(dict(algorithm="a", workload="w", study=0, trial=0, study_name="x"),
                 dict(algorithm="a", workload="w", study=0, trial=0, study_name="y"))
    with pytest.raises(ValueError, match="filter runs to one ruleset and study_name"):
        cubes.final_cube(runs)


def test_final_cube_of_a_store(tmp_path):
    store = make_store(tmp_path / "s", interrupted=1, failed=1)
    runs = query.runs_frame(store)
    cube = cubes.final_cube(runs)
    assert dict(cube.sizes) == {"algorithm": 2, "workload": 2, "study": 2, "trial": 3, "seed": 1}
    assert (cube["run_id"] != "").all()  # every trial of the grid ran
    assert set(np.unique(cube["status"].values)) == {"complete", "interrupted"}
    reached = runs[runs["reached_target"] & runs["status"].eq("complete")]
    first = reached.iloc[0]
    cell = cube["time_to_target"].sel(algorithm=first["algorithm"], workload=first["workload"],
                                      study=first["study"], trial=first["trial"], seed=0)
    assert float(cell) == first["time_to_target"]


def _curves():
    runs = _runs(dict(algorithm="a", workload="w", study=0, trial=0),
                 dict(algorithm="b", workload="w", study=0, trial=0))
    evals = pd.DataFrame({
        "run_id": ["r00000"] * 3 + ["r00001"] * 2, "eval_index": [0, 1, 2, 0, 1],
        "step": [10, 20, 30, 10, 20], "examples": [1, 2, 3, 1, 2],
        "train_seconds": [1.0, 2.0, 4.0, 3.0, 6.0], "eval_seconds": [0.1] * 5,
        "wall_seconds": [1.5, 3.0, 5.0, 4.0, 8.0],
        "validation/accuracy": [0.1, 0.5, 0.7, 0.2, np.nan], "test/accuracy": [0.0] * 5,
        "other": ["x"] * 5})
    return runs, evals


def test_curve_cube_pads_with_nan_and_keeps_run_coords():
    runs, evals = _curves()
    curves = cubes.curve_cube(runs, evals)
    assert curves["step"].dims == ("run", "eval") and dict(curves.sizes) == {"run": 2, "eval": 3}
    assert list(curves.data_vars) == ["step", "examples", "train_seconds", "eval_seconds",
                                      "wall_seconds", "validation/accuracy", "test/accuracy"]
    assert np.isnan(curves["train_seconds"].sel(run="r00001", eval=2))
    assert curves["algorithm"].values.tolist() == ["a", "b"]
    assert curves["run_id"].values.tolist() == ["r00000", "r00001"]
    assert curves["target_validation"].values.tolist() == [0.9, 0.9]
    assert curves["train_seconds"].attrs["units"] == "s"
    only = cubes.curve_cube(runs, evals, metrics=["test/accuracy"])
    assert "validation/accuracy" not in only
    with pytest.raises(ValueError, match="unknown metric columns"):
        cubes.curve_cube(runs, evals, metrics=["validation/bleu"])


def test_on_grid_is_stepwise_last_observation():
    curves = cubes.curve_cube(*_curves())
    grid = [0.0, 1.0, 1.5, 4.0, 5.0, 10.0]
    sampled = cubes.on_grid(curves, "validation/accuracy", grid=grid)
    assert sampled.dims == ("run", "grid") and sampled.attrs["axis"] == "train_seconds"
    np.testing.assert_array_equal(sampled.sel(run="r00000"), [np.nan, 0.1, 0.1, 0.7, 0.7, 0.7])
    # run b: 0.2 from 3 s; its eval at 6 s has a NaN value, which stays NaN
    np.testing.assert_array_equal(sampled.sel(run="r00001"), [np.nan, np.nan, np.nan, 0.2, 0.2,
                                                              np.nan])
    by_step = cubes.on_grid(curves, "validation/accuracy", axis="step", grid=[5, 25])
    np.testing.assert_array_equal(by_step.values, [[np.nan, 0.5], [np.nan, np.nan]])
    assert cubes.on_grid(curves, "step").sizes["grid"] == 101
    with pytest.raises(ValueError, match="unknown curve variable"):
        cubes.on_grid(curves, "validation/bleu")


# -- time axes and compilation ----------------------------------------------------------------
def test_on_time_axis_reads_time_to_target_on_each_axis_by_either_name():
    runs = _runs(dict(algorithm="a", workload="w", study=0, trial=0, time=5.0, index=2,
                      step_to_target=300, wall_to_target=7.5),
                 dict(algorithm="a", workload="w", study=0, trial=1, time=None, index=None))
    cube = cubes.final_cube(runs)
    for axis, want, unit in (("train", 5.0, "s"), ("train_seconds", 5.0, "s"),
                             ("wall", 7.5, "s"), ("wall_seconds", 7.5, "s"),
                             ("steps", 300.0, "steps"), ("step", 300.0, "steps")):
        moved = cubes.on_time_axis(cube, axis)["time_to_target"]
        assert moved.sel(algorithm="a", workload="w", study=0, seed=0).values.tolist() == \
            [want, math.inf], axis
        assert moved.attrs["units"] == unit
    assert cube["time_to_target"].values[0, 0, 0, 0, 0] == 5.0  # the cube itself is unchanged
    assert [cubes.axis_name(c) for c in cubes.TIME_TO_TARGET] == ["train", "wall", "steps"]
    with pytest.raises(ValueError, match="unknown time axis 'hours': valid are train, wall, "
                                         "steps"):
        cubes.on_time_axis(cube, "hours")


def test_excluding_compile_takes_each_runs_compilation_off_its_seconds_only():
    runs = _runs(
        dict(algorithm="a", workload="w", study=0, trial=0, time=5.0, index=2, steps=90,
             compile_seconds=2.0, train_seconds=40.0, wall_seconds=50.0, wall_to_target=6.0),
        dict(algorithm="a", workload="w", study=0, trial=1, time=5.0, index=2),  # null: none
        dict(algorithm="a", workload="w", study=0, trial=2, time=5.0, index=2,
             compile_seconds=8.0, wall_to_target=6.0),  # more than the time to target: 0 s
        dict(algorithm="a", workload="w", study=0, trial=3, time=None, compile_seconds=1.0))
    out = cubes.excluding_compile(runs)
    # 5 - 2, 5 - 0, max(0, 5 - 8); a miss has no time to target, before or after
    assert out["time_to_target"].tolist()[:3] == [3.0, 5.0, 0.0]
    assert math.isnan(out["time_to_target"].iloc[3])
    assert out["wall_to_target"].tolist()[:3] == [4.0, 5.5, 0.0]  # 6 - 2; 5 x 1.1; 6 - 8 -> 0
    assert out["train_seconds"].tolist() == [38.0, 100.0, 92.0, 99.0]
    assert out["wall_seconds"].tolist() == [48.0, 110.0, 102.0, 109.0]
    for unchanged in ("step_to_target", "steps", "eval_index_to_target", "compile_seconds"):
        assert out[unchanged].equals(runs[unchanged]), unchanged
    assert runs["time_to_target"].iloc[0] == 5.0  # a copy: the caller's table is untouched
