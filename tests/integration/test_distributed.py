"""Data-parallel runs: batch splitting, and 2-process gloo runs under torchrun against 1 process."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from runners.run.distributed import ShardedWorkload, shard
from runners.launch.study import run_configs
from runners.launch.processes import LaunchOptions, worker_command
from workbench import query
from workbench.spec import RunConfig
from workbench.store import open_store

from locations import FIXTURES



def test_shards_of_a_global_batch_are_its_contiguous_equal_slices():
    batch = {"inputs": torch.arange(24.0).reshape(12, 2), "targets": torch.arange(12)}
    parts = [shard(batch, r, 3) for r in range(3)]
    assert [p["targets"].tolist() for p in parts] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]
    for key in batch:
        assert torch.equal(torch.cat([p[key] for p in parts]), batch[key])
    with pytest.raises(ValueError, match="multiple of 5"):
        shard(batch, 0, 5)


class _Counting:
    """A stand-in workload whose global batches are 0..B-1, B..2B-1, ..."""

    def train_batches(self, batch_size, seed):
        start = 0
        while True:
            yield {"inputs": torch.arange(start, start + batch_size)}
            start += batch_size

    def evaluate(self, model, split):
        return {"model": model}


def test_each_rank_trains_on_its_slice_of_the_same_global_stream():
    streams = [ShardedWorkload(_Counting(), r, 2).train_batches(8, seed=0) for r in range(2)]
    first = [next(s)["inputs"].tolist() for s in streams]
    second = [next(s)["inputs"].tolist() for s in streams]
    assert first == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert second == [[8, 9, 10, 11], [12, 13, 14, 15]]
    with pytest.raises(ValueError, match="multiple of 2"):
        next(ShardedWorkload(_Counting(), 0, 2).train_batches(7, seed=0))
    wrapped = torch.nn.Module()
    wrapped.module = "inner"  # evals see the plain model, not the DDP wrapper
    assert ShardedWorkload(_Counting(), 0, 2).evaluate(wrapped, "validation") == {"model": "inner"}


def test_worker_command_uses_torchrun_only_for_several_processes():
    assert worker_command("job.json")[1:] == ["-m", "runners.launch.worker", "job.json"]
    cmd = worker_command("job.json", 2)
    assert cmd[1:3] == ["-m", "torch.distributed.run"] and "--nproc-per-node=2" in cmd
    assert cmd[-3:] == ["-m", "runners.launch.worker", "job.json"]


def _run(root: Path, config: RunConfig, nproc: int):
    store = open_store(root, create=True)
    result = run_configs([config], store, config.study_name, progress=False,
                         options=LaunchOptions(nproc_per_node=nproc))
    assert result.succeeded == 1, result.summary()
    return store


@pytest.mark.slow
def test_two_gloo_processes_match_one_process_at_the_same_global_batch(tmp_path):
    config = RunConfig(workload="digits_mlp", algorithm="adamw", study_name="dp", batch_size=64,
                       max_steps=60, eval_every=10, stop_on_target=False)
    one, two = _run(tmp_path / "one", config, 1), _run(tmp_path / "two", config, 2)
    doc = query.runs_frame(two).iloc[0]
    assert doc.hardware.endswith("x 2 processes (gloo)") and doc.batch_size == 64
    assert len(query.runs_frame(two)) == 1  # rank 1 wrote nothing
    a, b = query.evals_frame(one).sort_values("step"), query.evals_frame(two).sort_values("step")
    assert list(a.step) == list(b.step) == [10, 20, 30, 40, 50, 60]
    assert list(b.examples) == [64 * s for s in b.step]  # examples count the global batch
    worst = {}
    for column in ("validation/loss", "validation/accuracy", "test/loss", "train/loss"):
        rel = np.abs(a[column].to_numpy() - b[column].to_numpy()) / np.abs(a[column].to_numpy())
        worst[column] = float(rel.max())
        assert rel.max() <= 1e-4, (column, rel.max())
    print(f"\n1 vs 2 gloo processes, batch 64, 60 steps: largest relative differences {worst}; "
          f"train seconds {a.train_seconds.iloc[-1]:.2f} (1) vs {b.train_seconds.iloc[-1]:.2f} (2)")
    assert a["validation/loss"].iloc[-1] < a["validation/loss"].iloc[0]  # it trained
    ta, tb = query.train_frame(one).sort_values("step"), query.train_frame(two).sort_values("step")
    assert list(ta.step) == list(tb.step)  # logged losses are the mean over the ranks
    np.testing.assert_allclose(tb.loss.to_numpy(), ta.loss.to_numpy(), rtol=1e-4)


@pytest.mark.slow
def test_algoperf_submission_sees_ddp_in_a_two_process_run(tmp_path, monkeypatch):
    from runners.algoperf.adapter import algorithm_name

    probe = tmp_path / "probe"
    probe.mkdir()
    monkeypatch.setenv("PACEBENCH_PROBE_DIR", str(probe))
    hparams = json.loads((FIXTURES / "algoperf_ddp_probe" / "tuning_search_space.json")
                         .read_text())[0]
    config = RunConfig(workload="digits_mlp",
                       algorithm=algorithm_name(FIXTURES / "algoperf_ddp_probe" / "submission.py"),
                       hparams=hparams, study_name="ap", batch_size=32, max_steps=20,
                       stop_on_target=False)
    store = _run(tmp_path / "s", config, 2)
    seen = {p.name: json.loads(p.read_text()) for p in probe.glob("rank-*.json")}
    gpu = torch.cuda.is_available()
    assert seen == {f"rank-{r}.json": {"use_pytorch_ddp": True, "rank": r,
                                       "device": f"cuda:{r}" if gpu else "cpu",
                                       "n_gpus": torch.cuda.device_count()} for r in (0, 1)}
    assert query.runs_frame(store).iloc[0].status == "complete"
