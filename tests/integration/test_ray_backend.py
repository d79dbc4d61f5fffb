"""The Ray backend: the same study on a local Ray instance and on the local pool gives the same
eval rows, and a Ray task killed by the watchdog leaves its run `interrupted` with the reason."""
from __future__ import annotations

import os

import pandas as pd
import pytest

from workbench import query
from workbench import records as R
from runners.launch.study import run_configs, run_study
from runners.launch.processes import LaunchOptions
from runners.launch.ray_backend import LocalRay
from workbench.spec import RunConfig, StudySpec
from workbench.store import open_store

ray = pytest.importorskip("ray")

pytestmark = [pytest.mark.ray, pytest.mark.slow]

# Columns that measure time differ between any two runs; every other column must be identical.
# measured, so never equal between two runs: times, and the machine's readings at evals
TIME_COLUMNS = ("train_seconds", "eval_seconds", "wall_seconds", "steps_per_second")
MACHINE = tuple(c for c in R.MACHINE_COLUMNS if c not in TIME_COLUMNS)  # may be null


@pytest.fixture(scope="module")
def local_ray():
    """A small local Ray instance for this module (2 CPUs, no dashboard), stopped afterwards.
    Its processes start without jsonschema's iri grammar (conftest.NO_IRI: 2 to 7 s of import
    in each of the instance's agents and workers)."""
    from conftest import NO_IRI

    before = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join([str(NO_IRI), *filter(None, [before])])
    try:
        with LocalRay(num_cpus=2):
            yield
    finally:
        if before is None:
            os.environ.pop("PYTHONPATH")
        else:
            os.environ["PYTHONPATH"] = before


def eval_rows(store) -> pd.DataFrame:
    """Every eval row keyed by trial (run ids differ between stores), in a fixed order."""
    runs, evals = query.runs_frame(store), query.evals_frame(store)
    rows = evals.merge(runs[["run_id", "trial_key", "status"]], on="run_id").drop(columns="run_id")
    return rows.sort_values(["trial_key", "eval_index"]).reset_index(drop=True)


def test_ray_and_local_pool_give_identical_eval_rows(tmp_path, local_ray):
    spec = StudySpec(workloads=("digits_mlp",), algorithms=("adamw",), trials=2, max_steps=60,
                     name="same")  # one trial per worker, at the same time
    local = open_store(tmp_path / "local", create=True)
    on_ray = open_store(tmp_path / "ray", create=True)
    a = run_study(spec, local, workers=2, progress=False)
    b = run_study(spec, on_ray, workers=2, progress=False, options=LaunchOptions(backend="ray"))
    assert (a.succeeded, a.failed, b.succeeded, b.failed) == (2, [], 2, [])
    rows_local, rows_ray = eval_rows(local), eval_rows(on_ray)
    assert len(rows_local) >= 2 * 2 and rows_local.trial_key.nunique() == 2
    assert list(rows_local.columns) == list(rows_ray.columns)
    for column in rows_local.columns:
        if column in TIME_COLUMNS:
            assert rows_ray[column].notna().all()
            continue
        if column in MACHINE:
            continue
        pd.testing.assert_series_equal(rows_local[column], rows_ray[column], check_exact=True,
                                       obj=f"eval column {column}")


def test_ray_watchdog_kills_an_overlong_trial_and_records_why(tmp_path, local_ray):
    store = open_store(tmp_path / "s", create=True)
    endless = RunConfig(workload="digits_mlp", algorithm="adamw", study_name="slow",
                        budget_multiplier=10_000.0, stop_on_target=False)  # 8M steps
    result = run_configs([endless], store, "slow", workers=1, progress=False,
                         options=LaunchOptions(backend="ray", trial_timeout=15.0))
    assert result.succeeded == 0 and len(result.failed) == 1
    assert "watchdog" in result.failed[0]
    runs = query.runs_frame(store)
    assert list(runs.status) == ["failed"]  # a watchdog kill is failed (records.STATUS_TABLE)
    assert "watchdog" in runs.stop_reason.iloc[0]
