"""workbench.curves: golden cases for the TSE family, the LCGA fit, elasticity and ranking."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from workbench import curves as C

TRUE = (0.5, 0.02, 0.1)  # b1 (1/loss), b2 (1/(loss step)), b3 (loss floor)


def _curve(k: np.ndarray, noise: float = 0.0, seed: int = 0) -> np.ndarray:
    b1, b2, b3 = TRUE
    clean = 1.0 / (b1 + b2 * k) + b3
    return clean * (1.0 + noise * np.random.default_rng(seed).standard_normal(k.size))


def test_window_means_use_complete_windows_only():
    steps = [5, 10, 15, 20, 25]
    losses = [4.0, 2.0, 3.0, 1.0, 7.0]
    # windows of 10 steps: (0,10] -> 3.0, (10,20] -> 2.0; (20,30] is not complete at step 25
    assert C.window_means(steps, losses, 10).tolist() == [3.0, 2.0]
    assert C.window_means(steps, losses, 10, up_to=12).tolist() == [3.0]
    assert C.window_means([], [], 10).size == 0


def test_tse_family_hand_computed():
    means = [3.0, 2.0, 1.0]
    assert C.tse(means) == 6.0
    assert C.tse_e(means) == 1.0 and C.tse_e(means, 2) == 3.0
    assert C.tse_ema(means, 0.5) == pytest.approx(0.25 * 3 + 0.5 * 2 + 1.0)
    assert C.tse_ema(means, 1.0) == C.tse(means)
    # recursive: m1 = 3; m2 = 0.1*3 + 0.9*2 = 2.1; m3 = 0.1*2.1 + 0.9*1 = 1.11
    assert C.tse_ema_recursive(means) == pytest.approx(1.11)
    assert math.isnan(C.tse([]))
    with pytest.raises(ValueError, match="gamma"):
        C.tse_ema(means, 1.5)


def test_lcga_recovers_and_extrapolates_a_clean_curve():
    k = np.arange(1, 201, dtype=float)
    fit = C.fit_lcga(k, _curve(k))
    assert fit.ok
    assert fit.params == pytest.approx(TRUE, rel=1e-4)
    assert fit.floor == pytest.approx(0.1, rel=1e-4)
    far = np.array([1000.0, 5000.0])
    assert fit.predict(far) == pytest.approx(_curve(far), rel=1e-4)


def test_lcga_with_five_percent_noise():
    k = np.arange(1, 401, dtype=float)
    fit = C.fit_lcga(k, _curve(k, noise=0.05, seed=1))
    assert fit.ok
    assert fit.floor == pytest.approx(0.1, abs=0.01)
    assert float(fit.predict(2000.0)) == pytest.approx(float(_curve(np.array([2000.0]))[0]), rel=0.1)


def test_lcga_failures_are_nan_not_zero():
    fit = C.fit_lcga([1, 2, 3], [1.0, 0.9, 0.8])
    assert not fit.ok and all(math.isnan(p) for p in fit.params)
    assert np.isnan(fit.predict([10.0])).all()
    assert math.isnan(C.lcga_d1n(fit, [1, 2, 3]))
    assert not C.fit_lcga([1, 2, 3, 4, 5], [1, np.nan, 1, 1, 1]).ok
    flat = C.fit_lcga(np.arange(1, 50), np.ones(49))  # no descent: all in the floor
    assert flat.floor == pytest.approx(1.0, abs=1e-6)
    assert float(flat.predict(1e4)) == pytest.approx(1.0, abs=1e-6)


def test_d1n_closed_form_matches_the_derivatives():
    k = np.arange(1, 201, dtype=float)
    fit = C.fit_lcga(k, _curve(k))
    b1, b2, _ = fit.params
    d1 = -b2 / (b1 + b2 * k) ** 2
    d2 = 2 * b2 ** 2 / (b1 + b2 * k) ** 3
    after = k > 20
    assert C.lcga_d1n(fit, k, burn_in=20) == pytest.approx(np.mean(d1[after] / np.sqrt(d2[after])))
    assert C.lcga_d1(fit, k, burn_in=20) == pytest.approx(np.mean(d1[after]))


def test_elasticity_closed_form_vs_numerical_derivative():
    fit = C.LCGAFit(*TRUE, scale=1.0, n_points=0)
    k = np.array([3.0, 30.0, 300.0, 3000.0])
    h = 1e-6
    numeric = (np.log(fit.predict(k * (1 + h))) - np.log(fit.predict(k * (1 - h)))) / \
              (np.log(1 + h) - np.log(1 - h))
    assert C.elasticity(fit, k) == pytest.approx(numeric, rel=1e-6)
    assert (np.abs(C.elasticity(fit, k)) < 1).all()


def test_stop_step_solves_abs_eps_equals_tau_on_the_decreasing_branch():
    fit = C.LCGAFit(*TRUE, scale=1.0, n_points=0)
    b1, _, b3 = TRUE
    u_peak = b1 + math.sqrt(b1 ** 2 + b1 / b3)
    k_peak = (u_peak - b1) / fit.b2
    for tau in (0.3, 0.1, 0.02):
        k = C.elasticity_stop_step(fit, tau)
        assert k > k_peak
        assert abs(float(C.elasticity(fit, k))) == pytest.approx(tau, rel=1e-9)
    assert C.elasticity_stop_step(C.LCGAFit(0.5, 0.02, 0.0, 1.0, 0), 0.1) is None  # no floor
    assert C.elasticity_stop_step(fit, 0.99) == 0.0  # |eps| never reaches 0.99
    assert C.elasticity_stop_step(C.fit_lcga([1, 2], [1, 1]), 0.1) is None


def test_rank_correlations_signed():
    finals = [0.9, 0.8, 0.7, 0.6]
    perfect = C.rank_correlations([1.0, 2.0, 3.0, 4.0], finals, "max")  # lower loss, better acc
    assert perfect["spearman"] == pytest.approx(1.0) and perfect["kendall"] == pytest.approx(1.0)
    wrong = C.rank_correlations([4.0, 3.0, 2.0, 1.0], finals, "max")
    assert wrong["spearman"] == pytest.approx(-1.0)
    assert C.rank_correlations([1.0, 2.0, 3.0, 4.0], [1, 2, 3, 4], "min")["spearman"] == \
        pytest.approx(1.0)
    nan = C.rank_correlations([1.0, np.nan, 3.0], [1.0, 2.0, 3.0], "min")
    assert nan["n"] == 2 and math.isnan(nan["spearman"])
    with pytest.raises(ValueError, match="direction"):
        C.rank_correlations([1], [1], "up")


def test_early_ranking_table_on_synthetic_runs():
    k = np.arange(5, 801, 5, dtype=float)
    rows, finals = [], {}
    for i, b2 in enumerate([0.005, 0.01, 0.02, 0.04, 0.08]):  # faster descent = better final
        loss = 1.0 / (0.5 + b2 * k) + 0.1
        rows.append(pd.DataFrame({"run_id": f"r{i}", "step": k, "loss": loss}))
        finals[f"r{i}"] = 1.0 - loss[-1]
    table = C.early_ranking_table(pd.concat(rows), finals, direction="max")
    assert set(table["estimator"]) == set(C.ESTIMATORS)
    assert sorted(table["fraction"].unique()) == [0.05, 0.1, 0.2, 0.5]
    for name in ("TSE", "TSE-EMA", "LCGA"):
        rho = table.query("estimator == @name")["spearman"]
        assert np.allclose(rho.to_numpy(), 1.0)
