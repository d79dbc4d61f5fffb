"""workbench.scaling: steps-to-result, the S(B) fit, regimes and the noise-scale estimator."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from workbench import scaling as S

BATCHES = np.array([8, 16, 32, 64, 128, 256, 512, 1024], float)


def test_fit_recovers_known_s_min_and_b_crit():
    steps = S.predicted_steps(BATCHES, 100.0, 64.0)
    fit = S.fit_steps_to_result(BATCHES, steps)
    assert fit["s_min"] == pytest.approx(100.0, rel=1e-6)
    assert fit["b_crit"] == pytest.approx(64.0, rel=1e-6)
    assert fit["e_min"] == pytest.approx(6400.0, rel=1e-6)
    assert fit["rmse_log"] < 1e-8 and fit["n"] == 8


def test_fit_with_noise_and_misses():
    rng = np.random.default_rng(0)
    steps = S.predicted_steps(BATCHES, 100.0, 64.0) * np.exp(0.05 * rng.standard_normal(8))
    steps[2] = np.nan  # goal never reached at one batch size
    fit = S.fit_steps_to_result(BATCHES, steps)
    assert fit["n"] == 7
    assert fit["b_crit"] == pytest.approx(64.0, rel=0.25)
    assert math.isnan(S.fit_steps_to_result([8], [100])["b_crit"])


def test_at_b_crit_steps_double():
    assert float(S.predicted_steps(64.0, 100.0, 64.0)) == pytest.approx(200.0)
    assert float(S.scaling_exponent(64.0, 64.0)) == pytest.approx(0.5)


def test_regimes():
    labels = S.regime([1, 7, 8, 64, 576, 577, 10_000], 64.0)
    assert list(labels) == ["perfect scaling", "perfect scaling", "diminishing returns",
                            "diminishing returns", "maximal data parallelism",
                            "maximal data parallelism", "maximal data parallelism"]


def test_noise_scale_on_synthetic_gaussian_gradients():
    """Per-example gradients ~ N(G, Sigma): B_simple = tr(Sigma) / |G|^2 is recovered."""
    rng = np.random.default_rng(0)
    d, b_small, b_big, draws = 50, 8, 64, 4000
    g = rng.standard_normal(d) * 0.2
    sd = rng.uniform(0.5, 1.5, d)
    true = float((sd ** 2).sum() / (g ** 2).sum())
    small_sq, big_sq = [], []
    for _ in range(draws):
        examples = g + sd * rng.standard_normal((b_big, d))
        small_sq.append(float((examples[:b_small].mean(0) ** 2).sum()))
        big_sq.append(float((examples.mean(0) ** 2).sum()))
    assert S.b_simple(small_sq, big_sq, b_small, b_big) == pytest.approx(true, rel=0.1)
    g2, trace = S.noise_components(small_sq, big_sq, b_small, b_big)
    series = S.b_simple_series(g2, trace, decay=0.999)
    assert series[-1] == pytest.approx(true, rel=0.25)
    with pytest.raises(ValueError, match="b_small < b_big"):
        S.noise_components(1.0, 1.0, 64, 8)


def _evals(run_id: str, hit_step: int | None, n: int = 10) -> list[dict]:
    rows = []
    for i in range(n):
        step = 10 * (i + 1)
        acc = 0.99 if hit_step is not None and step >= hit_step else 0.5
        rows.append({"run_id": run_id, "eval_index": i, "step": step, "examples": step,
                     "train_seconds": float(i), "eval_seconds": 0.0, "wall_seconds": float(i),
                     "validation/accuracy": acc})
    return rows


def test_steps_to_result_min_over_trials_ties_by_trial():
    runs = pd.DataFrame({"run_id": ["a", "b", "c", "d", "e"], "trial": [0, 1, 2, 0, 1],
                         "batch_size": [8, 8, 8, 16, 16], "sparsity": [0.0] * 5})
    evals = pd.DataFrame(_evals("a", 50) + _evals("b", 30) + _evals("c", 30) + _evals("d", None)
                         + _evals("e", None))
    out = S.steps_to_result(runs, evals, goal=0.95, metric="validation/accuracy")
    first = out.iloc[0]
    assert (first["batch_size"], first["steps"], first["trial"], first["run_id"]) == (8, 30, 1, "b")
    assert first["examples"] == 240 and first["reached"] == 3 and first["trials"] == 3
    assert math.isnan(out.iloc[1]["steps"]) and out.iloc[1]["reached"] == 0
    fits = S.fit_by_group(out.assign(steps=[30.0, 20.0]))
    assert list(fits.columns[:3]) == ["sparsity", "s_min", "b_crit"]


def test_regime_without_a_fit_is_unknown():
    assert list(S.regime([8, 64], math.nan)) == ["unknown", "unknown"]
