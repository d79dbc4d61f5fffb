"""Checkpoints: a run preempted mid-way resumes from its saved state with its accumulated time and
trains exactly as an uninterrupted run (CPU, same threads)."""
from __future__ import annotations

import pandas as pd
import pytest

from runners.run.checkpoint import Checkpoint
from runners.run.loop import run
from workbench import query
from workbench import records as R
from workbench.spec import RunConfig
from workbench.store import open_store

TIME_COLUMNS = ("train_seconds", "eval_seconds", "wall_seconds")


class Preempted(KeyboardInterrupt):
    """What SIGTERM becomes in a worker (runners/launch/worker.py): the run ends `interrupted`."""


@pytest.mark.slow
def test_preempted_run_resumes_where_it_was_and_matches_an_uninterrupted_one(tmp_path, one_thread):
    config = RunConfig(workload="synthetic", algorithm="adamw", study_name="ck", max_steps=200,
                       eval_every=20, stop_on_target=False)
    plain = open_store(tmp_path / "plain", create=True)
    run(config, plain)

    store = open_store(tmp_path / "ck", create=True)
    path = store.checkpoint_path(config.trial_key)

    def preempt_at_step_120(row):
        if row["step"] == 120:
            raise Preempted("preempted")

    with pytest.raises(Preempted):  # saved after the evals at 20..100; killed at the one at 120
        run(config, store, on_eval=preempt_at_step_120, checkpoint=Checkpoint(path, every_s=0))
    assert path.exists()
    first = query.runs_frame(store).iloc[0]
    assert first.status == "interrupted"

    resumed_id = run(config, store, checkpoint=Checkpoint(path, every_s=0))
    assert not path.exists()  # removed when the run ended
    doc = store.run_doc(resumed_id)
    assert doc["status"] == "complete" and doc["steps"] == 200
    assert (doc["preemptions"], doc["resumed_from"], doc["resumed_at_step"]) == \
        (1, first.run_id, 100)

    a = query.evals_frame(plain).sort_values("step").reset_index(drop=True)
    b = query.evals_frame(store, [resumed_id]).sort_values("step").reset_index(drop=True)
    assert list(b.step) == list(a.step) == list(range(20, 201, 20))  # the whole curve
    for column in a.columns.drop(["run_id", *TIME_COLUMNS, *R.MACHINE_COLUMNS]):
        pd.testing.assert_series_equal(a[column], b[column], check_exact=True, obj=column)
    copied = query.evals_frame(store, [first.run_id]).set_index("step")
    for column in TIME_COLUMNS:  # rows up to the checkpoint are the first attempt's, times too
        assert list(b[b.step <= 100][column]) == list(copied.loc[20:100, column])
    assert b.train_seconds.is_monotonic_increasing and b.wall_seconds.is_monotonic_increasing
    assert doc["train_seconds"] > copied.loc[100, "train_seconds"]  # time accumulates
    train = query.train_frame(store, [resumed_id])
    assert train.step.is_unique and train.step.min() <= 20 and train.step.max() == 200


def test_no_checkpoint_means_a_fresh_start(tmp_path, one_thread):
    config = RunConfig(workload="synthetic", algorithm="adamw", study_name="ck2", max_steps=40)
    store = open_store(tmp_path / "s", create=True)
    path = store.checkpoint_path(config.trial_key)
    run_id = run(config, store, checkpoint=Checkpoint(path, every_s=3600))
    doc = store.run_doc(run_id)
    assert doc["status"] == "complete" and "preemptions" not in doc and not path.exists()
