"""Workload builders: shapes, determinism of init and batches, evals, and that training helps."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch

from runners.workloads import build_workload
from workbench.catalog import CATALOG, get_workload
from workbench.spec import WorkloadSpec

from conftest import shared_data_dir

needs_shakespeare = pytest.mark.usefixtures("shared_data")  # fails, never skips, without the data
# datasets that need no file: the downloaded ones are tested on generated files in
# tests/unit/runners/test_image_workloads.py
LOCAL = [n for n, w in CATALOG.items() if w.dataset in ("digits", "synthetic")]


@pytest.fixture(autouse=True)
def _one_thread(one_thread):
    """Every test here trains tiny models: one torch thread (see conftest.one_thread)."""


def _data_dir() -> Path:
    return shared_data_dir()


def _build(name: str):
    spec = get_workload(name)
    data_dir = _data_dir() if spec.dataset == "tinyshakespeare" else None
    return spec, build_workload(spec, data_dir=data_dir)


def _params(model: torch.nn.Module) -> list[torch.Tensor]:
    return [p.detach().clone() for p in model.parameters()]


def _short_training(workload, spec, steps: int, lr: float) -> tuple[float, float]:
    """Validation loss before and after `steps` of Adam at `lr`."""
    model = workload.init_model(0)
    before = workload.evaluate(model, "validation")["loss"]
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    batches = workload.train_batches(spec.batch_size, 0)
    for _ in range(steps):
        opt.zero_grad(set_to_none=True)
        workload.loss(model, next(batches)).backward()
        opt.step()
    return before, workload.evaluate(model, "validation")["loss"]


@pytest.mark.parametrize("name", LOCAL)
def test_every_local_catalog_entry_builds_and_reports_its_target_metric(name):
    spec, w = _build(name)
    model = w.init_model(0)
    batch = next(w.train_batches(spec.batch_size, 0))
    assert batch["inputs"].shape[0] == spec.batch_size == batch["targets"].shape[0]
    loss = w.loss(model, batch)
    assert loss.shape == () and torch.isfinite(loss)
    for split in ("train", "validation", "test"):
        metrics = w.evaluate(model, split)
        assert spec.target.metric in metrics and model.training  # train mode restored


def test_digits_shapes_and_split_sizes():
    spec, w = _build("digits_cnn")
    assert w.num_train_examples == 1197
    batch = next(w.train_batches(64, 0))
    assert batch["inputs"].shape == (64, 1, 8, 8) and batch["targets"].dtype == torch.int64
    assert w.init_model(0)(batch["inputs"]).shape == (64, 10)
    assert w.eval_split("train")[0].shape[0] == 300 and w.eval_split("test")[0].shape[0] == 300


@pytest.mark.parametrize("name", ["digits_mlp", "digits_cnn", "synthetic"])
def test_same_seed_same_init_and_batches_other_seed_differs(name):
    spec, w = _build(name)
    a, b, c = (_params(w.init_model(s)) for s in (3, 3, 4))
    assert all(torch.equal(x, y) for x, y in zip(a, b))
    assert not all(torch.equal(x, y) for x, y in zip(a, c))
    s1, s2, s3 = (w.train_batches(spec.batch_size, s) for s in (7, 7, 8))
    for _ in range(40):  # crosses an epoch boundary for every workload here
        x, y = next(s1), next(s2)
        assert torch.equal(x["inputs"], y["inputs"]) and torch.equal(x["targets"], y["targets"])
    assert not torch.equal(next(s1)["inputs"], next(s3)["inputs"])


def test_init_model_leaves_the_global_rng_alone():
    _, w = _build("digits_mlp")
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    w.init_model(0)
    assert torch.equal(torch.rand(3), expected)


def test_an_epoch_visits_distinct_examples():
    _, w = _build("synthetic")
    batches = w.train_batches(256, 0)
    seen = torch.cat([next(batches)["inputs"] for _ in range(8)])  # 8 x 256 = one epoch of 2048
    assert torch.unique(seen, dim=0).shape[0] == 2048


def test_init_scale_multiplies_the_weights():
    base = get_workload("synthetic")
    scaled = WorkloadSpec(**{**base.to_dict(), "model": {**base.model, "init_scale": 3.0},
                             "target": base.target, "budget": base.budget,
                             "eval_every": base.eval_every})
    w1, w3 = build_workload(base), build_workload(scaled)
    for (n, p1), p3 in zip(w1.init_model(0).named_parameters(), w3.init_model(0).parameters()):
        factor = 1.0 if n.endswith("bias") else 3.0
        assert torch.allclose(p1 * factor, p3)


def test_synthetic_data_is_independent_of_the_run_seed_and_trains():
    spec, w = _build("synthetic")
    _, again = _build("synthetic")
    assert torch.equal(w.eval_split("validation")[1], again.eval_split("validation")[1])
    before, after = _short_training(w, spec, steps=150, lr=3e-3)
    assert after < 0.3 * before


@pytest.mark.parametrize("name", ["digits_mlp", "digits_cnn"])
def test_digits_short_training_lowers_loss(name):
    spec, w = _build(name)
    before, after = _short_training(w, spec, steps=40, lr=3e-3)
    assert after < 0.5 * before


def test_unknown_arch_lists_the_known_builders():
    base = get_workload("digits_mlp")
    spec = WorkloadSpec(**{**base.to_dict(), "model": {**base.model, "arch": "resnet"},
                           "target": base.target, "budget": base.budget,
                           "eval_every": base.eval_every})
    with pytest.raises(KeyError, match="digits/mlp"):
        build_workload(spec)


def test_bad_knob_value_names_the_valid_ones():
    base = get_workload("digits_mlp")
    spec = WorkloadSpec(**{**base.to_dict(), "model": {**base.model, "activation": "swish"},
                           "target": base.target, "budget": base.budget,
                           "eval_every": base.eval_every})
    with pytest.raises(ValueError, match="relu, tanh, gelu, silu"):
        build_workload(spec)


@needs_shakespeare
@pytest.mark.parametrize("name", ["shakespeare_char", "shakespeare_char_post_ln"])
def test_shakespeare_shapes_determinism_and_eval(name):
    import time
    spec, w = _build(name)
    assert len(w.vocab) == 65
    block = spec.model["block_size"]
    batch = next(w.train_batches(spec.batch_size, 0))
    assert batch["inputs"].shape == (spec.batch_size, block) == batch["targets"].shape
    # targets are the inputs shifted by one character
    assert torch.equal(batch["inputs"][:, 1:], batch["targets"][:, :-1])
    a, b = next(w.train_batches(8, 5)), next(w.train_batches(8, 5))
    assert torch.equal(a["inputs"], b["inputs"])
    model = w.init_model(0)
    assert model(batch["inputs"]).shape == (spec.batch_size, block, 65)
    assert all(torch.equal(x, y) for x, y in zip(_params(model), _params(w.init_model(0))))
    start = time.perf_counter()
    metrics = w.evaluate(model, "validation")
    assert time.perf_counter() - start < 0.5
    # an untrained model is close to uniform over 65 characters: loss ~ ln 65 = 4.17 nats
    assert abs(metrics["loss"] - 4.17) < 0.3 and set(metrics) == {"loss", "accuracy"}
    assert metrics == w.evaluate(model, "validation")  # fixed eval windows


@needs_shakespeare
def test_shakespeare_causality_and_short_training():
    spec, w = _build("shakespeare_char")
    model = w.init_model(0).eval()
    ids = next(w.train_batches(2, 0))["inputs"]
    changed = ids.clone()
    changed[:, 40:] = 0
    with torch.no_grad():  # changing later characters must not change earlier predictions
        assert torch.allclose(model(ids)[:, :40], model(changed)[:, :40], atol=1e-5)
    before, after = _short_training(w, spec, steps=40, lr=3e-3)
    assert after < before - 0.8
