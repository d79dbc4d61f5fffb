"""Pruning at init (runners/run/sparsity.py), the noise probe (runners/run/noise.py), the goal hook
(runners/launch/worker.py) and the scaling plan (runners/procedures/scaling_study.py), and the loop's hooks."""
from __future__ import annotations

import re

import numpy as np
import pytest
import torch

from runners.run.loop import run
from runners.run.noise import NoiseProbe
from runners.procedures.scaling_study import lr_factor, plan_scaling
from runners.run.sparsity import global_masks
from runners.launch.worker import GoalStop
from workbench import query
from workbench.spec import RunConfig, ScalingSpec, SpecError, stable_hash
from workbench.store import open_store


def test_global_masks_keep_the_top_entries():
    scores = [torch.tensor([[0.1, 0.9], [0.5, 0.2]]), torch.tensor([0.8, 0.3])]
    masks = global_masks(scores, 0.5)
    assert masks[0].tolist() == [[0.0, 1.0], [1.0, 0.0]] and masks[1].tolist() == [1.0, 0.0]


def test_trial_keys_of_old_configs_are_unchanged():
    old = RunConfig("synthetic", "adamw")
    c = old  # the key as computed before sparsity, prune_method and eval_every existed:
    before = stable_hash([c.study_name, c.workload, c.algorithm, c.ruleset, c.study, c.trial,
                          c.seed, dict(c.hparams), c.batch_size, c.max_steps], 12)
    assert old.trial_key == before
    assert RunConfig("synthetic", "adamw", prune_method="magnitude").trial_key == old.trial_key
    assert RunConfig("synthetic", "adamw", sparsity=0.5).trial_key != old.trial_key
    with pytest.raises(SpecError, match="valid are snip, magnitude, random"):
        RunConfig("synthetic", "adamw", sparsity=0.5, prune_method="l1")


@pytest.mark.parametrize("method", ["snip", "magnitude", "random"])
def test_sparse_run_keeps_pruned_weights_zero_and_records_noise(tmp_path, method):
    store = open_store(tmp_path / "s", create=True)
    config = RunConfig("synthetic", "sgd_nesterov", max_steps=60, stop_on_target=False,
                       sparsity=0.75, prune_method=method, eval_every=10, batch_size=16)
    probe = NoiseProbe(16, every=20, seed=1)
    models = []

    def keep_model(model, workload, step):
        models.append(model)
        return probe(model, workload, step)

    run_id = run(config, store, measure=keep_model)
    weights = torch.cat([p.detach().reshape(-1) for p in models[-1].parameters()])
    assert float((weights == 0).float().mean()) == pytest.approx(0.75, abs=0.01)
    evals = query.evals_frame(store, [run_id])
    measured = evals.dropna(subset=["noise/grad_sq"])
    assert list(measured["step"]) == [10, 30, 50]  # the first eval, then every >= 20 steps
    assert (measured["noise/b_big"] > measured["noise/b_small"]).all()
    assert store.run_doc(run_id)["config"]["sparsity"] == 0.75


def test_should_stop_ends_the_run_complete(tmp_path):
    store = open_store(tmp_path / "s", create=True)
    seen = []

    def stop(row):
        seen.append(row["run_id"])
        return "enough" if row["step"] >= 40 else None

    run_id = run(RunConfig("synthetic", "adamw", max_steps=200, stop_on_target=False), store,
                 should_stop=stop)
    doc = store.run_doc(run_id)
    assert (doc["status"], doc["stop_reason"], doc["steps"]) == ("complete", "enough", 40)
    assert set(seen) == {run_id}


def test_goal_stop_and_scaling_plan():
    goal = GoalStop("digits_mlp", 0.95)
    assert goal({"validation/accuracy": 0.96}).startswith("scaling goal validation/accuracy >= 0.95")
    assert goal({"validation/accuracy": 0.9}) is None and goal({}) is None
    spec = ScalingSpec(workloads="digits_mlp", algorithms="sgd_nesterov", batch_sizes="16,256",
                       sparsities="0,0.9", trials=3)
    configs = plan_scaling(spec)
    assert len(configs) == 2 * 2 * 3 and len({c.trial_key for c in configs}) == 12
    by = {(c.batch_size, c.sparsity, c.trial): c for c in configs}
    ratio = by[(256, 0.0, 1)].hparams["learning_rate"] / by[(16, 0.0, 1)].hparams["learning_rate"]
    assert ratio == pytest.approx(lr_factor(256, 64, "sqrt") / lr_factor(16, 64, "sqrt"))
    assert by[(16, 0.9, 0)].hparams == by[(16, 0.0, 0)].hparams  # same points in every cell
    assert len({(c.study, c.trial) for c in configs}) == 12       # distinct identities
    assert not configs[0].stop_on_target and configs[0].eval_every == 5
    assert np.isclose(lr_factor(64, 64, "sqrt"), 1.0)


def test_a_workload_that_does_not_give_its_training_set_size_is_refused_not_read_as_0():
    """Workload.num_train_examples has no default of 0: a plug-in without it is refused, naming
    it, where pruning, the noise probe or an AlgoPerf submission asks (never batch size 0)."""
    from types import SimpleNamespace

    from runners.algoperf.workload import AlgoPerfWorkload
    from runners.api import Workload
    from runners.run.sparsity import prune_scores
    from workbench.catalog import get_workload

    asked = []

    class Bare(Workload):  # a plug-in that implements only the abstract methods
        def init_model(self, seed):
            return torch.nn.Linear(2, 2)

        def train_batches(self, batch_size, seed):
            asked.append(batch_size)
            while True:
                yield {"inputs": torch.zeros(max(batch_size, 1), 2),
                       "targets": torch.zeros(max(batch_size, 1), dtype=torch.long)}

        def loss(self, model, batch):
            return torch.nn.functional.cross_entropy(model(batch["inputs"]), batch["targets"])

        def evaluate(self, model, split):
            return {}

    bare = Bare(get_workload("synthetic"), torch.device("cpu"))
    message = re.escape("workload 'synthetic' (Bare) does not give num_train_examples")
    with pytest.raises(NotImplementedError, match=message):
        prune_scores(bare.init_model(0), bare, "snip", 0)
    with pytest.raises(NotImplementedError, match=message):
        NoiseProbe(16, every=1, seed=0)(bare.init_model(0), bare, 5)
    with pytest.raises(NotImplementedError, match=message):
        AlgoPerfWorkload.num_train_examples.fget(SimpleNamespace(workload=bare))  # a submission's
    assert asked == []  # no batch of size 0 was ever asked for
