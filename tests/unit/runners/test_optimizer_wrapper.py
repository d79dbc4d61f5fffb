"""Any torch optimizer by import path (runners/algorithms/wrapper.py): each constructor gets the
arguments its signature takes (betas of any length, Muon's parameter groups), schedule-free
classes are switched to eval() around evals and run under no outer schedule, and a class's own
defaults stay unless a search space sweeps them. Each test here failed before the wrapper
followed these rules (issue 28)."""
from __future__ import annotations

import copy
from types import SimpleNamespace

import pytest
import torch

from runners.algorithms import get_algorithm
from runners.algorithms.sources import derived_search_space, wrap_optimizer

po = pytest.importorskip("pytorch_optimizer")

STEP_HINT = 100
WORKLOAD = SimpleNamespace(spec=SimpleNamespace(step_hint=STEP_HINT),
                           loss=lambda model, batch: torch.nn.functional.cross_entropy(
                               model(batch["inputs"]), batch["targets"]))


def _mlp(norm: bool = False) -> torch.nn.Sequential:
    """40 -> 16 -> 16 -> 10, as mnist1d_mlp but narrower (optionally with a LayerNorm)."""
    torch.manual_seed(0)
    layers = [torch.nn.Linear(40, 16), torch.nn.ReLU(), torch.nn.Linear(16, 16)]
    layers += [torch.nn.LayerNorm(16)] if norm else []
    return torch.nn.Sequential(*layers, torch.nn.ReLU(), torch.nn.Linear(16, 10))


def _batches(n: int) -> list[dict[str, torch.Tensor]]:
    generator = torch.Generator().manual_seed(1)
    return [{"inputs": torch.randn(8, 40, generator=generator),
             "targets": torch.randint(0, 10, (8,), generator=generator)} for _ in range(n)]


def _built(spec: str, hparams: dict | None = None, model: torch.nn.Module | None = None):
    algorithm = get_algorithm(spec.split(":")[1], hparams or {}, spec)
    algorithm.init(model or _mlp(), WORKLOAD)
    return algorithm


@pytest.mark.parametrize("spec", ["torch.optim:SGD", "torch.optim:RMSprop"])
def test_plain_sgd_and_rmsprop_stay_plain_unless_momentum_is_swept(spec):
    cls = wrap_optimizer(getattr(torch.optim, spec.split(":")[1]))
    assert "one_minus_beta1" not in {k for k, v in derived_search_space(cls).items()
                                     if "min" in v}  # the derived space does not sweep it
    assert _built(spec).optimizer.param_groups[0]["momentum"] == 0.0
    swept = _built(spec, {"one_minus_beta1": 0.1}).optimizer.param_groups[0]["momentum"]
    assert swept == pytest.approx(0.9)  # a search space that sweeps it turns it on


@pytest.mark.parametrize("spec, default", [("pytorch_optimizer:AdEMAMix", (0.9, 0.999, 0.9999)),
                                           ("pytorch_optimizer:Adan", (0.98, 0.92, 0.99))])
def test_three_beta_classes_get_three_betas_and_step(spec, default):
    assert tuple(_built(spec).optimizer.param_groups[0]["betas"]) == default
    algorithm = _built(spec, {"one_minus_beta1": 0.2, "beta2": 0.95})
    assert tuple(algorithm.optimizer.param_groups[0]["betas"]) == pytest.approx(
        (0.8, 0.95, default[2]))
    model = _mlp()
    algorithm.init(model, WORKLOAD)
    loss = algorithm.update(model, _batches(1)[0], 0, WORKLOAD)
    assert torch.isfinite(loss)


def test_muon_groups_follow_the_rule_and_the_schedule_keeps_their_ratio():
    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = torch.nn.Embedding(50, 40)
            self.body = _mlp(norm=True)

        def forward(self, tokens):
            return self.body(self.embed(tokens).mean(1))

    net = Net()
    algorithm = _built("pytorch_optimizer:Muon", {"learning_rate": 0.05}, net)
    groups = {g["use_muon"]: g for g in algorithm.optimizer.param_groups}
    linear = [m for m in net.body if isinstance(m, torch.nn.Linear)]
    # Muon: the hidden 16x16 weight only; AdamW: the embedding, the first and last weight
    # matrices, every bias and the LayerNorm's gain and bias
    assert [id(p) for p in groups[True]["params"]] == [id(linear[1].weight)]
    adamw = {id(p) for p in groups[False]["params"]}
    assert adamw == {id(p) for p in net.parameters()} - {id(linear[1].weight)}
    assert groups[False]["lr"] == pytest.approx(3e-4)  # the class's adamw_lr
    algorithm.update(net, {"inputs": torch.randint(0, 50, (8, 5)),
                           "targets": torch.randint(0, 10, (8,))}, STEP_HINT // 2, WORKLOAD)
    ratio = groups[False]["lr"] / groups[True]["lr"]
    assert 0 < groups[True]["lr"] < 0.05 and ratio == pytest.approx(3e-4 / 0.05)


def test_schedule_free_evals_see_the_averaged_weights_under_no_outer_schedule():
    """The wrapped ScheduleFreeAdamW driven as the loop drives it (update, and
    prepare_for_eval before each eval) matches the class used as its authors say: a constant
    learning rate after its own warmup, train() before training steps and eval() before evals."""
    hparams = {"learning_rate": 5e-3, "one_minus_beta1": 0.1, "weight_decay": 0.01}
    cls = wrap_optimizer(po.ScheduleFreeAdamW)
    assert "schedule" not in cls.defaults and "schedule" not in derived_search_space(cls)
    model = _mlp()
    reference_model = copy.deepcopy(model)
    algorithm = get_algorithm("SF", hparams, "pytorch_optimizer:ScheduleFreeAdamW")
    algorithm.init(model, WORKLOAD)
    assert {algorithm.schedule(s) for s in (0, 3, 50, 99, 500)} == {5e-3}  # no outer schedule
    reference = po.ScheduleFreeAdamW(reference_model.parameters(), lr=5e-3, betas=(0.9, 0.999),
                                     weight_decay=0.01, warmup_steps=5)  # 0.05 x step hint
    for step, batch in enumerate(_batches(12)):
        algorithm.update(model, batch, step, WORKLOAD)
        reference.train()
        reference.zero_grad()
        WORKLOAD.loss(reference_model, batch).backward()
        reference.step()
        if step % 4 == 3:  # an eval
            algorithm.prepare_for_eval(model)
            reference.eval()
            assert not any(g["train_mode"] for g in algorithm.optimizer.param_groups)
            for ours, theirs in zip(model.parameters(), reference_model.parameters()):
                torch.testing.assert_close(ours, theirs)
    algorithm.update(model, _batches(1)[0], 12, WORKLOAD)
    assert all(g["train_mode"] for g in algorithm.optimizer.param_groups)  # trains on y again
