"""The permutation tests (workbench/permutation.py) against scipy.stats.permutation_test, and
the bootstrap engine's quantile rule (workbench/bootstrap.py)."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy.stats import permutation_test

from workbench.bootstrap import percentile_interval, quantile
from workbench.permutation import mean_difference_pvalue, permutation_pvalues, wins2

INF = math.inf


@pytest.mark.parametrize("a, b", [
    ([1.0, 2.0, 3.0], [4.0, 5.0, 6.0]),
    ([1.0, 2.0, INF], [2.0, INF, INF]),         # ties, misses tying with misses
    ([3.0, 1.0, 4.0, 1.0, 5.0], [9.0, 2.0, 6.0]),
    ([INF, INF], [INF, 1.0]),
])
def test_the_stratified_test_on_one_workload_is_scipys(a, b):
    """On one workload the stratified exact test is scipy's exact independent permutation
    test of the same statistic (A's doubled Mann-Whitney wins, ties half)."""
    a, b = np.array(a), np.array(b)

    def statistic(x, y):
        return wins2(x, y)

    ours = permutation_pvalues([(a, b)])
    for alternative, p in (("greater", ours[0]), ("less", ours[1])):
        theirs = permutation_test((a, b), statistic, permutation_type="independent",
                                  vectorized=False, n_resamples=math.inf,
                                  alternative=alternative).pvalue
        assert p == pytest.approx(theirs, rel=1e-9)


def _old_speed_pvalue(la: np.ndarray, lb: np.ndarray) -> float:
    """The hand-written test mean_difference_pvalue replaced (exact branch)."""
    pooled, n_a = np.concatenate([la, lb]), len(la)
    observed = abs(la.mean() - lb.mean()) - 1e-12
    total = pooled.sum()
    sums = np.array([pooled[list(c)].sum()
                     for c in itertools.combinations(range(len(pooled)), n_a)])
    return float(np.mean(np.abs(sums / n_a - (total - sums) / (len(pooled) - n_a))
                         >= observed))


def test_the_machine_speed_test_is_scipys_and_the_old_one():
    rng = np.random.default_rng(0)
    for n_a, n_b in ((3, 3), (4, 6), (2, 5)):
        la, lb = rng.normal(size=n_a), rng.normal(0.8, size=n_b)
        assert mean_difference_pvalue(la, lb) == pytest.approx(_old_speed_pvalue(la, lb))
    same = np.array([0.1, 0.2, 0.3])
    assert mean_difference_pvalue(same, same) == 1.0
    big = mean_difference_pvalue(rng.normal(size=12), rng.normal(3, size=12))  # Monte Carlo
    assert big == pytest.approx(1 / 10_001)


def test_sequentials_paths_at_one_look_are_the_exact_test():
    """workbench.sequential's paths at a single look give the stratified test's p-value."""
    from workbench.sequential import _paths, _statistics

    a1, b1 = np.array([1.0, 2.5, INF]), np.array([2.0, 3.0, 4.0])
    a2, b2 = np.array([5.0, 6.0]), np.array([7.0, INF])
    blocks = [[(a1, b1), (a2, b2)]]
    labels, n, exact = _paths(blocks, 0)
    stats, _ = _statistics(blocks, labels, 2)
    assert exact and n == math.comb(6, 3) * math.comb(4, 2)
    greater = float(np.mean(stats[:, 0] >= stats[0, 0] - 1e-9))
    assert greater == pytest.approx(permutation_pvalues([(a1, b1), (a2, b2)])[0])


def test_one_quantile_rule_weighted_or_not():
    """The engine's rule: the smallest draw whose cumulative probability reaches q, the level
    read as written (2.5 % of 1,000 draws is the 25th); weighted and equal draws agree."""
    draws = np.arange(1.0, 1001.0)
    low, high = percentile_interval(draws, 0.95)
    assert (float(low), float(high)) == (25.0, 975.0)
    tail = (1 - 0.95) / 2  # 0.025000000000000022 in floats: numpy takes the 26th
    assert np.quantile(draws, tail, method="inverted_cdf") == 26.0
    rng = np.random.default_rng(1)
    for n in (1, 3, 40, 999):
        x = rng.normal(size=n)
        for q in (0.025, 0.05, 0.5, 0.95):
            assert quantile(x, q) == quantile(x, q, np.full(n, 1 / n))
    assert percentile_interval(np.array([1.0, 2.0, INF, INF]), 0.5) == (1.0, INF)
    with pytest.raises(ValueError, match="level"):
        percentile_interval(draws, 1.5)
