"""Planning studies, the local process pool, resume, and surviving a killed study."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter

import pytest

from runners.launch import StudyExistsError, plan_study, run_study
from workbench import records as R
from workbench.spec import StudySpec
from workbench.store import open_store


def test_plan_is_the_full_grid_with_distinct_trials():
    spec = StudySpec(workloads=("synthetic", "digits_mlp"), algorithms=("adamw", "sgd_nesterov"),
                     studies=2, trials=3, seeds=(0, 1))
    configs = plan_study(spec)
    assert len(configs) == 2 * 2 * 2 * 3 * 2
    assert len({c.trial_key for c in configs}) == len(configs)
    adamw_study0 = [c for c in configs if c.algorithm == "adamw" and c.study == 0
                    and c.workload == "synthetic" and c.seed == 0]
    assert len({json.dumps(dict(c.hparams), sort_keys=True) for c in adamw_study0}) == 3
    # the same search-space points for every workload, and the plan is reproducible
    again = plan_study(spec)
    assert [c.trial_key for c in again] == [c.trial_key for c in configs]


def test_self_tuning_is_one_default_run_per_study_with_more_budget():
    spec = StudySpec(workloads=("synthetic",), algorithms=("adamw",), ruleset="self", studies=3,
                     trials=5)
    configs = plan_study(spec)
    assert len(configs) == 3
    assert all(c.budget_multiplier == 1.5 and dict(c.hparams) == {} for c in configs)


def test_unknown_workload_fails_before_launching():
    with pytest.raises(KeyError, match="known are"):
        plan_study(StudySpec(workloads=("cifar",), algorithms=("adamw",)))


def test_pool_runs_every_trial_and_resume_runs_nothing_more(tmp_path):
    store = open_store(tmp_path / "s", create=True)
    spec = StudySpec(workloads=("synthetic",), algorithms=("adamw", "sgd_nesterov"), trials=2,
                     max_steps=40, name="t")
    result = run_study(spec, store, workers=2, progress=False)
    assert result.succeeded == 4 and not result.failed
    runs = store.runs()
    assert len(runs) == 4 and set(runs.status) <= {"complete", "diverged"}  # a high lr may diverge
    with pytest.raises(StudyExistsError, match="--resume"):
        run_study(spec, store, workers=2, progress=False)
    again = run_study(spec, store, workers=2, resume=True, progress=False)
    assert again.skipped == 4 and again.succeeded == 0
    assert len(store.runs()) == 4


def _wait_for_live_eval(store_root, timeout=120.0):
    """Block until some run is running and has at least one eval row flushed."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        for doc_path in (store_root / R.RUNS_DIR).glob(f"*/{R.RUN_DOC}"):
            live = doc_path.parent / R.EVALS_LIVE
            try:
                doc = json.loads(doc_path.read_text())
            except (OSError, json.JSONDecodeError):
                continue
            if doc.get("status") == "running" and live.exists() and live.read_text().count("\n") >= 1:
                return doc["run_id"]
        time.sleep(0.02)
    raise AssertionError("no run produced an eval row in time")


@pytest.mark.slow
def test_sigkill_mid_study_then_resume_completes_each_trial_once(tmp_path):
    root = tmp_path / "store"
    cmd = [sys.executable, "-m", "runners.cli", "study", "--workloads", "digits_cnn",
           "--algorithms", "adamw", "--trials", "4", "--workers", "2", "--max-steps", "400",
           "--name", "chaos", "--store", str(root), "--quiet"]
    parent = subprocess.Popen(cmd)
    killed_run = _wait_for_live_eval(root)
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    time.sleep(1.0)  # the workers die with their launcher (PR_SET_PDEATHSIG)

    store = open_store(root)
    runs = store.runs()
    assert runs.set_index("run_id").loc[killed_run, "status"] == "interrupted"
    assert len(store.evals([killed_run])) >= 1
    assert "running" not in set(runs.status)

    subprocess.run(cmd + ["--resume"], check=True)
    runs = store.runs()
    complete = runs[runs.status == "complete"]
    assert len(complete) == 4
    assert Counter(complete.trial_key).most_common(1)[0][1] == 1
    assert runs.set_index("run_id").loc[killed_run, "status"] == "interrupted"
    assert len(store.evals([killed_run])) >= 1  # nothing written is lost
