"""The timed loop: records, stop rules, time accounting, determinism, failures."""
from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest
import torch

from workbench import query
from runners.api import Algorithm, TrainingComplete
from runners.run.loop import run
from workbench import records as R
from workbench.catalog import get_workload
from workbench.spec import RunConfig
from workbench.store import open_store


@pytest.fixture()
def store(tmp_path):
    return open_store(tmp_path / "store", create=True)


def _metrics(store, run_id):
    evals = query.evals_frame(store, [run_id])
    cols = [c for c in evals.columns if R.split_of(c)]
    return evals[["step", *cols]].to_dict("records")


def test_run_records_evals_train_rows_and_summary(store):
    cfg = RunConfig("synthetic", "adamw", max_steps=100, stop_on_target=False)
    run_id = run(cfg, store)
    doc = store.run_doc(run_id)
    assert doc["status"] == "complete" and doc["steps"] == 100
    assert "step budget" in doc["stop_reason"]
    evals = query.evals_frame(store, [run_id])
    assert list(evals.columns[: len(R.EVAL_COLUMNS)]) == list(R.EVAL_COLUMNS)
    every = get_workload("synthetic").eval_every.steps  # the catalog's cadence
    assert list(evals.step) == list(range(every, 101, every))
    for split in R.SPLITS:
        assert f"{split}/loss" in evals.columns
    assert (evals.train_seconds.diff().dropna() > 0).all()
    assert (evals.eval_seconds.diff().dropna() > 0).all()
    last = evals.iloc[-1]
    # evals are off the training clock: wall time covers training plus evals
    assert last.wall_seconds >= last.train_seconds + last.eval_seconds * 0.99
    train = query.train_frame(store, [run_id])
    assert list(train.step) == list(range(5, 101, 5))
    assert doc["environment"]["torch"] == torch.__version__
    assert doc["hardware"].startswith("cpu:")
    assert (store.root / R.RUNS_DIR / run_id / R.EVALS_SEALED).exists()
    assert not (store.root / R.RUNS_DIR / run_id / R.EVALS_LIVE).exists()


def test_same_seed_same_metrics_in_another_process(store, tmp_path):
    cfg = RunConfig("synthetic", "adamw", seed=3, max_steps=60, stop_on_target=False)
    here = run(cfg, store)
    spec = tmp_path / "job.json"
    spec.write_text(json.dumps({"config": cfg.to_dict(), "store": str(store.root), "data_dir": None}))
    subprocess.run([sys.executable, "-m", "runners.launch.worker", str(spec)], check=True)
    other = [r for r in query.runs_frame(store).run_id if r != here][0]
    assert _metrics(store, here) == _metrics(store, other)
    assert store.run_doc(here)["trial_key"] == store.run_doc(other)["trial_key"]
    assert store.run_doc(other)["attempt"] == 2


def test_different_seed_different_metrics(store):
    a = run(RunConfig("synthetic", "adamw", seed=0, max_steps=40), store)
    b = run(RunConfig("synthetic", "adamw", seed=1, max_steps=40), store)
    assert _metrics(store, a) != _metrics(store, b)


def test_non_finite_loss_is_diverged(store):
    cfg = RunConfig("synthetic", "sgd_nesterov", hparams={"learning_rate": 1e6}, max_steps=200)
    doc = store.run_doc(run(cfg, store))
    assert doc["status"] == "diverged"
    assert "non-finite" in doc["stop_reason"]


class _StopsAt(Algorithm):
    name = "stops_at_7"

    def init(self, model, workload):
        self.opt = torch.optim.SGD(model.parameters(), lr=0.01)

    def update(self, model, batch, step, workload):
        if step == 7:
            raise TrainingComplete
        self.opt.zero_grad()
        loss = workload.loss(model, batch)
        loss.backward()
        self.opt.step()
        return loss.detach()


class _Raises(_StopsAt):
    def update(self, model, batch, step, workload):
        if step == 3:
            raise RuntimeError("boom inside update")
        return super().update(model, batch, step, workload)


def test_algorithm_can_end_training(store):
    # evals every 50 steps: the one at step 7 is the one the stop request adds
    run_id = run(RunConfig("synthetic", "custom", eval_every=50), store, algorithm=_StopsAt({}))
    doc = store.run_doc(run_id)
    assert doc["status"] == "complete" and doc["steps"] == 7
    assert doc["stop_reason"] == "algorithm requested the end of training"
    assert list(query.evals_frame(store, [run_id]).step) == [7]


def test_exception_in_update_gives_failed_run_with_traceback(store):
    with pytest.raises(RuntimeError, match="boom"):
        run(RunConfig("synthetic", "custom"), store, algorithm=_Raises({}))
    runs = query.runs_frame(store)
    assert list(runs.status) == ["failed"]
    assert "boom inside update" in runs.error.iloc[0] and "Traceback" in runs.error.iloc[0]


def test_stops_when_both_targets_reached(store, monkeypatch):
    import dataclasses
    from workbench import catalog
    from workbench.spec import Target
    easy = Target("loss", "min", validation=0.3, test=0.3)  # well within reach of the defaults
    monkeypatch.setitem(catalog.CATALOG, "synthetic",
                        dataclasses.replace(catalog.CATALOG["synthetic"], target=easy))
    run_id = run(RunConfig("synthetic", "adamw"), store)
    doc = store.run_doc(run_id)
    assert doc["status"] == "complete"
    assert doc["stop_reason"] == "validation and test targets reached"
    row = query.runs_frame(store).iloc[0]
    assert row.reached_target and math.isfinite(row.time_to_target)
    assert doc["steps"] < doc["budget_steps"]


def test_time_budget_stops_without_a_free_eval(store, monkeypatch):
    from workbench import catalog
    from workbench.spec import Budget
    import dataclasses
    spec = dataclasses.replace(catalog.CATALOG["synthetic"], budget=Budget(seconds=0.05, steps=10**6))
    monkeypatch.setitem(catalog.CATALOG, "synthetic", spec)
    run_id = run(RunConfig("synthetic", "adamw", stop_on_target=False), store)
    doc = store.run_doc(run_id)
    assert "time budget" in doc["stop_reason"]
    assert doc["train_seconds"] >= 0.05
    assert (query.evals_frame(store, [run_id]).train_seconds < 0.05 + 0.05).all()


class _InitFails(_StopsAt):
    def init(self, model, workload):
        raise RuntimeError("cannot build optimizer state")


def test_failure_before_the_clock_still_leaves_a_failed_record(store):
    with pytest.raises(RuntimeError, match="optimizer state"):
        run(RunConfig("synthetic", "custom"), store, algorithm=_InitFails({}))
    row = query.runs_frame(store).iloc[0]
    assert row.status == "failed" and "set-up failed" in row.stop_reason
    assert "cannot build optimizer state" in row.error


# -- no host synchronisation between boundaries -----------------------------------------------
class _Counting(Algorithm):
    """Wraps a baseline; knows whether a step (data selection + update) is running."""

    def __init__(self, inner):
        super().__init__(dict(inner.hparams))
        self.inner, self.in_step, self.steps = inner, False, 0

    def batch_size(self, spec):
        return self.inner.batch_size(spec)

    def init(self, model, workload):
        self.inner.init(model, workload)

    def update(self, model, batch, step, workload):
        self.in_step = True
        try:
            return self.inner.update(model, batch, step, workload)
        finally:
            self.in_step, self.steps = False, self.steps + 1


def test_no_host_sync_and_no_clock_reading_inside_the_steps(store, monkeypatch):
    """Between boundaries (loss logging every 5 steps, evals every 20, the step budget) the loop
    reads no clock and nothing in the step forces the host to wait for the device: no .item(),
    .cpu(), float(tensor), bool(tensor) or synchronize from our code (torch's own optimizer
    internals read their CPU step counters, which costs no device sync, and are not counted)."""
    import os
    import runners.run.loop as loop
    from runners.run import timing
    from runners.algorithms import get_algorithm

    algorithm = _Counting(get_algorithm("adamw", {}))
    torch_dir = os.path.dirname(torch.__file__)
    syncs, clock_steps = [], []

    def counted(name, original):
        def call(*args, **kwargs):
            caller = sys._getframe(1).f_code.co_filename
            if algorithm.in_step and not caller.startswith(torch_dir):
                syncs.append((name, caller, sys._getframe(1).f_lineno))
            return original(*args, **kwargs)
        return call

    for name in ("item", "cpu", "__float__", "__bool__", "tolist"):
        monkeypatch.setattr(torch.Tensor, name, counted(name, getattr(torch.Tensor, name)))
    monkeypatch.setattr(torch.cuda, "synchronize", counted("synchronize", torch.cuda.synchronize))
    monkeypatch.setattr(timing, "synchronize", counted("synchronize", timing.synchronize))

    class Clock(timing.DeviceClock):
        def now(self):
            assert not algorithm.in_step
            clock_steps.append(algorithm.steps)
            return super().now()

    monkeypatch.setattr(loop, "DeviceClock", Clock)
    run(RunConfig("synthetic", "custom", max_steps=100, stop_on_target=False), store,
        algorithm=algorithm)
    assert algorithm.steps == 100 and syncs == []
    boundaries = {0, *range(5, 101, 5)}  # the start, loss rows every 5 steps (evals every 20)
    assert set(clock_steps) <= boundaries and len(set(clock_steps)) == len(boundaries)


def test_run_exits_0_for_every_finished_run_and_says_whether_the_target_was_met(
        tmp_path, capsys, one_thread):
    from runners.cli import main

    from workbench.catalog import tuned_baseline

    algorithm, hparams = tuned_baseline("digits_mlp")
    argv = ["run", "--workload", "digits_mlp", "--algorithm", algorithm, "--quiet",
            "--store", str(tmp_path / "s"), "--hparams"]
    assert main(argv + [json.dumps({**hparams, "learning_rate": 0.0})]) == 0
    out = capsys.readouterr().out.splitlines()
    assert ": stalled (stalled:" in out[-2] and out[-1].startswith("target not met: validation")
    assert main(argv + [json.dumps(hparams), "--seed", "1"]) == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith("target met: validation accuracy")


def test_run_exits_1_for_a_failed_run(tmp_path, capsys, one_thread):
    from runners.cli import main

    plugin = tmp_path / "bad.py"
    plugin.write_text("import torch\nclass Bad(torch.optim.SGD):\n"
                      "    def step(self, closure=None):\n        raise RuntimeError('boom')\n")
    assert main(["run", "--workload", "synthetic", "--algorithm", f"{plugin}:Bad", "--quiet",
                 "--store", str(tmp_path / "s")]) == 1
    err = capsys.readouterr().err
    assert ": failed (RuntimeError: boom)" in err
