"""The early-stopping tuner: the rung rule, the hook's records, and compute saved."""
from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from runners.run.early_stop import SuccessiveHalving, estimate
from workbench import records as R
from workbench.early_stopping import compute_saved, rung_decision
from workbench.spec import RunConfig
from workbench.store import open_store


def test_rung_decision_keeps_the_best_third():
    assert rung_decision(1.0, [], eta=3) == (True, 1, 1)           # too few seen: keep
    assert rung_decision(5.0, [1.0], eta=3) == (True, 2, 2)
    assert rung_decision(1.0, [2.0, 3.0], eta=3) == (True, 1, 3)
    assert rung_decision(2.0, [1.0, 3.0], eta=3) == (False, 2, 3)
    assert rung_decision(2.0, [1.0, 3.0, 4.0], eta=3) == (True, 2, 4)   # ceil(4/3) = 2
    assert rung_decision(math.nan, [1.0, 2.0, 3.0])[0]               # no estimate: keep
    assert rung_decision(2.0, [1.0, math.nan, 3.0]) == (False, 2, 3)  # NaNs are not counted
    with pytest.raises(ValueError, match="eta"):
        rung_decision(1.0, [], eta=1)


def test_estimators_lower_is_better():
    k = np.arange(5, 101, 5, dtype=float)
    fast, slow = 1 / (0.5 + 0.05 * k) + 0.1, 1 / (0.5 + 0.005 * k) + 0.1
    for name in ("lcga", "tse"):
        assert estimate(name, k, fast, 100, 800) < estimate(name, k, slow, 100, 800)
    with pytest.raises(ValueError, match="valid are lcga, tse"):
        estimate("nope", k, fast, 100, 800)


def _trial(store, trial: int, b2: float) -> str | None:
    """A fake run of a 90-step budget whose loss falls at rate b2; returns the hook's reason."""
    config = RunConfig("synthetic", "adamw", study_name="s", trial=trial)
    run_id = f"run{trial}"
    folder = store.run_path(run_id)
    folder.mkdir(parents=True)
    with open(folder / R.TRAIN_LIVE, "w") as f:
        for step in range(5, 91, 5):
            f.write(json.dumps({"run_id": run_id, "step": step, "loss": 1 / (0.5 + b2 * step)}) + "\n")
    pruner = SuccessiveHalving(store, config, budget_steps=90, estimator="tse")
    reason = None
    for step in (10, 30, 60, 90):
        reason = reason or pruner({"run_id": run_id, "step": step})
    return reason


def test_successive_halving_records_and_stops_the_worse(tmp_path):
    store = open_store(tmp_path / "store", create=True)
    assert _trial(store, 0, 0.05) is None
    assert _trial(store, 1, 0.04) is None   # two seen: never pruned on so little
    reason = _trial(store, 2, 0.001)         # worst of three at rung 1
    assert reason.startswith("pruned at rung 1 by tse")
    docs = {d["trial"]: d for d in store.early_stop_docs("s")}
    assert docs[2]["pruned_at_rung"] == 1 and docs[0]["pruned_at_rung"] is None
    assert set(docs[0]["rungs"]) == {"1", "2"} and docs[0]["rungs"]["1"]["step"] == 10


def test_compute_saved():
    runs = pd.DataFrame({"trial_key": ["a", "b", "c"], "steps": [100, 25, 100],
                         "budget_steps": [100, 100, 100], "train_seconds": [10.0, 2.0, 10.0]})
    saved = compute_saved(runs, {"b"})
    assert saved["pruned"] == 1 and saved["saved_steps"] == 75
    assert saved["saved_train_seconds"] == pytest.approx(6.0)  # 2 s per 25 steps -> 8 s full
    assert saved["saved_fraction_seconds"] == pytest.approx(6.0 / 28.0)


@pytest.mark.slow
def test_early_stopped_study_end_to_end(tmp_path):
    from runners.launch.study import run_study
    from workbench.spec import StudySpec

    store = open_store(tmp_path / "store", create=True)
    spec = StudySpec(workloads="synthetic", algorithms="sgd_nesterov", trials=4, name="p",
                     max_steps=90, stop_on_target=False)
    result = run_study(spec, store, workers=2, progress=False, early_stop="lcga")
    assert result.succeeded == 4 and result.early_stop["groups"][0]["trials"] == 4
    assert store.study_summary("p")["early_stop"] == "lcga"
    docs = [json.loads((d / R.RUN_DOC).read_text()) for d in store.run_dirs()]
    assert all("pruned" in d for d in docs)
    assert "early stopping (lcga)" in result.summary()
