"""Baseline algorithms: schedule golden values, NAdamW against a hand-computed update, training."""
from __future__ import annotations

import json
import math

import pytest
import torch

from runners.algorithms import (ALGORITHMS, HparamError, NAdamWOptimizer, algorithm_names,
                                get_algorithm, search_space_path)
from runners.algorithms.schedules import cosine_warmup, linear_warmup_decay, warmup_steps
from runners.tuning import SearchSpace
from runners.workloads import build_workload
from workbench.catalog import get_workload


@pytest.fixture(autouse=True)
def _one_thread(one_thread):
    """Every test here trains tiny models: one torch thread (see conftest.one_thread)."""


# --- schedules: lr = 1, step_hint = 100, warmup_factor = 0.1 -> W = 10
@pytest.mark.parametrize("t, expected", [
    (0, 0.0), (5, 0.5), (10, 1.0),
    (40, 0.75),                                     # 0.5 * (1 + cos(pi * 30 / 90)) = 0.5 * 1.5
    (55, 0.5),                                      # halfway through the 90 decay steps
    (99, 0.5 * (1 + math.cos(math.pi * 89 / 90))),  # ~3.05e-4
    (100, 0.0), (1000, 0.0),
])
def test_cosine_warmup_golden(t, expected):
    assert cosine_warmup(t, 1.0, 100, 0.1) == pytest.approx(expected, abs=1e-12)


def test_cosine_warmup_edges():
    assert warmup_steps(0.05, 30) == 1            # floor(1.5)
    assert cosine_warmup(0, 2.0, 30, 0.0) == 2.0  # no warmup: starts at lr
    assert cosine_warmup(0, 2.0, 1, 1.0) == 0.0   # W = step_hint: warmup only, then 0


# --- lr = 2, step_hint = 100, W = 10, decay over D = 0.5 * 90 = 45 steps to 0.1 * lr = 0.2
@pytest.mark.parametrize("t, expected", [
    (0, 0.0), (5, 1.0), (10, 2.0),
    (19, 1.64),   # 2 * (1 - 0.9 * 9/45)
    (37, 0.92),   # 2 * (1 - 0.9 * 27/45)
    (55, 0.2), (100, 0.2), (5000, 0.2),
])
def test_linear_warmup_decay_golden(t, expected):
    assert linear_warmup_decay(t, 2.0, 100, 0.1, 0.1, 0.5) == pytest.approx(expected, abs=1e-12)


# --- NAdamW: two steps with a constant gradient, worked by hand
def test_nadamw_matches_hand_computed_two_steps():
    """lr 0.1, b1 0.9, b2 0.99, wd 0.1, constant g = (0.5, -1); theta0 = (1, -2).

    Step 1: m = 0.1 g, v = 0.01 g^2, m~ = 0.19 g, m^ = 1.9 g, v^ = g^2
            theta1 = theta0 - 0.1 (1.9 sign(g) + 0.1 theta0) = (0.8, -1.79)
    Step 2: m = 0.19 g, v = 0.0199 g^2, m~ = 0.271 g, m^ = 0.271/0.19 g, v^ = g^2
            theta2 = theta1 - 0.1 (0.271/0.19 sign(g) + 0.1 theta1)
    """
    theta = torch.tensor([1.0, -2.0], dtype=torch.float64, requires_grad=True)
    g = torch.tensor([0.5, -1.0], dtype=torch.float64)
    opt = NAdamWOptimizer([theta], lr=0.1, betas=(0.9, 0.99), eps=1e-8, weight_decay=0.1)
    expected = [[0.8, -1.79],
                [0.8 - 0.1 * (0.271 / 0.19 + 0.08), -1.79 - 0.1 * (-0.271 / 0.19 - 0.179)]]
    for want in expected:
        opt.zero_grad()
        (theta * g).sum().backward()  # d/dtheta = g
        opt.step()
        assert theta.detach().tolist() == pytest.approx(want, abs=1e-7)
    assert expected[1] == pytest.approx([0.6493684210526316, -1.6294684210526316], abs=1e-12)


def test_nadamw_skips_parameters_without_gradients():
    a, b = torch.ones(2, requires_grad=True), torch.ones(2, requires_grad=True)
    opt = NAdamWOptimizer([a, b], lr=0.1, weight_decay=0.5)
    a.sum().backward()
    opt.step()
    assert torch.equal(b.detach(), torch.ones(2)) and not torch.equal(a.detach(), torch.ones(2))


# --- algorithms on a real workload
@pytest.fixture(scope="module")
def digits():
    spec = get_workload("digits_mlp")
    return spec, build_workload(spec)


@pytest.mark.parametrize("name", algorithm_names())
def test_every_algorithm_reduces_digits_mlp_loss_in_50_steps(name, digits):
    spec, workload = digits
    model = workload.init_model(0)
    algo = get_algorithm(name)
    algo.init(model, workload)
    before = workload.evaluate(model, "validation")["loss"]
    batches = workload.train_batches(algo.batch_size(spec), 0)
    for step in range(50):
        loss = algo.update(model, next(batches), step, workload)
        assert loss.shape == () and not loss.requires_grad
    assert algo.current_lr() == pytest.approx(algo.schedule(49))
    assert workload.evaluate(model, "validation")["loss"] < 0.5 * before


def test_defaults_are_filled_and_given_values_kept():
    algo = get_algorithm("adamw", {"learning_rate": 0.01})
    assert algo.hparams["learning_rate"] == 0.01
    assert set(algo.hparams) == set(ALGORITHMS["adamw"].defaults)
    assert get_algorithm("heavy_ball").hparams == dict(ALGORITHMS["heavy_ball"].defaults)


def test_unknown_hparam_and_algorithm_errors_list_valid_names():
    with pytest.raises(HparamError, match="learning_rat.*valid are learning_rate"):
        get_algorithm("nadamw", {"learning_rat": 1e-3})
    with pytest.raises(KeyError, match="known are adamw, nadamw"):
        get_algorithm("lion")


def test_grad_clip_bounds_the_gradient_norm(digits):
    spec, workload = digits
    model = workload.init_model(0)
    algo = get_algorithm("sgd_nesterov", {"grad_clip": 1e-3})
    algo.init(model, workload)
    algo.update(model, next(workload.train_batches(64, 0)), 0, workload)
    norm = torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in model.parameters()]))
    assert float(norm) <= 1e-3 * (1 + 1e-5)


def test_nesterov_and_heavy_ball_differ_only_in_nesterov():
    sgd, hb = (get_algorithm(n) for n in ("sgd_nesterov", "heavy_ball"))
    opts = [a.make_optimizer([torch.nn.Parameter(torch.ones(1))]) for a in (sgd, hb)]
    assert [o.defaults["nesterov"] for o in opts] == [True, False]
    assert opts[0].defaults["momentum"] == pytest.approx(1 - sgd.hparams["one_minus_beta1"])


@pytest.mark.parametrize("name", algorithm_names())
def test_shipped_search_spaces_parse_and_name_known_hparams(name):
    path = search_space_path(name)
    assert path.is_file() and isinstance(json.loads(path.read_text()), dict)
    space = SearchSpace.from_json(path)
    assert set(space.names) <= set(ALGORITHMS[name].defaults)
