"""Permutation tests: is one side's sample faster than the other's by more than relabelling
would give?

- `permutation_pvalues`: the stratified exact test behind every verdict (workbench.compare,
  and at each look workbench.sequential's paths): per workload, the Mann-Whitney statistic
  P-hat(a study of A beats one of B), ties half, a miss (+inf) tying with every other miss;
  summed over workloads; labels permuted within each workload. Exact by dynamic programming
  and convolution; scipy has no stratified permutation test, so this one stays ours, and on one
  workload it is checked against `scipy.stats.permutation_test` (tests/test_permutation.py).
- `mean_difference_pvalue`: the two-sided test of a difference of two means (the machine-speed
  check's log probe times), which is `scipy.stats.permutation_test` with
  permutation_type="independent", and so is computed by it.
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

__all__ = ["permutation_pvalues", "mean_difference_pvalue", "doubled_midranks", "wins2",
           "EXACT_RELABELLINGS"]

_EXACT_GRID = 2_000_000     # above this many cells of the null distribution, Monte Carlo instead
_MONTE_CARLO = 40_000
EXACT_RELABELLINGS = 20_000  # mean_difference_pvalue: every relabelling up to this many
_RANDOM_RELABELLINGS = 10_000


def doubled_midranks(values: np.ndarray) -> np.ndarray:
    """2 x the midranks of `values` (ascending; +inf ties with +inf): integers."""
    order = np.argsort(values, kind="stable")
    ranks = np.empty(len(values), dtype=np.int64)
    sorted_values = values[order]
    start = 0
    while start < len(values):
        stop = start
        while stop + 1 < len(values) and sorted_values[stop + 1] == sorted_values[start]:
            stop += 1
        ranks[order[start:stop + 1]] = start + stop + 2  # 2 x mean of ranks start+1..stop+1
        start = stop + 1
    return ranks


def wins2(a: np.ndarray, b: np.ndarray) -> int:
    """2 x (pairs where A's time < B's + half the ties): twice the Mann-Whitney U of A's wins."""
    less = (a[:, None] < b[None, :]).sum()
    ties = (a[:, None] == b[None, :]).sum()
    return int(2 * less + ties)


def _wins2_null(ranks2: np.ndarray, n_a: int) -> np.ndarray:
    """Counts of each value of 2 x A's wins over all ways to label `n_a` of the pooled studies A
    (index = doubled wins, 0 .. 2 n_a n_b), from the subsets' rank sums (dynamic programming)."""
    n_b = len(ranks2) - n_a
    top = int(ranks2.sum())
    counts = np.zeros((n_a + 1, top + 1))  # counts[k, s]: subsets of k studies, 2 x rank sum s
    counts[0, 0] = 1.0
    for r in ranks2:
        counts[1:, r:] = counts[1:, r:] + counts[:-1, :top + 1 - r]
    sums = counts[n_a]
    # U_B = R_A - n_a (n_a + 1) / 2 is B's wins, so 2 W_A = 2 n_a n_b - (2 R_A - n_a (n_a + 1))
    wins = np.zeros(2 * n_a * n_b + 1)
    for s in np.nonzero(sums)[0]:
        wins[2 * n_a * n_b - (s - n_a * (n_a + 1))] += sums[s]
    return wins


def permutation_pvalues(samples: Sequence[tuple[np.ndarray, np.ndarray]],
                        seed: int = 0) -> tuple[float, float, str]:
    """One-sided p-values (A faster, B faster) of the stratified permutation test.

    `samples`: per workload, (A's study times, B's study times), +inf for a miss. Statistic: the
    sum over workloads of P-hat(a study of A beats one of B) (ties half); A's and B's labels are
    permuted within each workload. Exact (the null distribution by dynamic programming and
    convolution) unless it would need more than `_EXACT_GRID` cells, then `_MONTE_CARLO` random
    permutations; the third value says which.
    """
    if not samples:
        return math.nan, math.nan, "no data"
    pairs = [len(a) * len(b) for a, b in samples]
    scale = math.lcm(*pairs)  # a common grid: workload w's doubled wins count scale / pairs_w
    observed = sum(wins2(a, b) * (scale // p) for (a, b), p in zip(samples, pairs))
    if 2 * scale * len(samples) + 1 <= _EXACT_GRID:
        null = np.ones(1)
        for (a, b), p in zip(samples, pairs):
            wins = _wins2_null(doubled_midranks(np.concatenate([a, b])), len(a))
            wins /= wins.sum()
            step = scale // p
            grown = np.zeros(len(null) + (len(wins) - 1) * step)
            for value in np.nonzero(wins)[0]:  # a sparse convolution: few values, wide steps
                grown[value * step:value * step + len(null)] += wins[value] * null
            null = grown
        greater = float(null[observed:].sum())
        less = float(null[:observed + 1].sum())
        return min(greater, 1.0), min(less, 1.0), "exact permutation test"
    rng = np.random.default_rng(seed)
    total = np.zeros(_MONTE_CARLO)
    for (a, b), p in zip(samples, pairs):
        ranks2 = doubled_midranks(np.concatenate([a, b])).astype(float)
        perms = rng.permuted(np.broadcast_to(ranks2, (_MONTE_CARLO, len(ranks2))), axis=1)
        rank_sum = perms[:, :len(a)].sum(axis=1)
        total += (2 * p - (rank_sum - len(a) * (len(a) + 1))) * (scale // p)
    greater = (1 + np.sum(total >= observed - 1e-9)) / (1 + _MONTE_CARLO)
    less = (1 + np.sum(total <= observed + 1e-9)) / (1 + _MONTE_CARLO)
    return float(greater), float(less), f"permutation test, {_MONTE_CARLO} random permutations"


def mean_difference_pvalue(la: np.ndarray, lb: np.ndarray, seed: int = 0) -> float:
    """Two-sided permutation p-value of the difference of the means of `la` and `lb`:
    P(|mean A - mean B| under relabelling >= the observed), by scipy.stats.permutation_test
    (permutation_type="independent"): exact over every relabelling up to
    EXACT_RELABELLINGS of them, else _RANDOM_RELABELLINGS random ones (p = (1 + k) / (1 + n))."""
    from scipy.stats import permutation_test  # 1 s to import: only when the machine-speed check runs

    def distance(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
        return np.abs(np.mean(x, axis=axis) - np.mean(y, axis=axis))

    exact = math.comb(len(la) + len(lb), len(la)) <= EXACT_RELABELLINGS
    result = permutation_test((np.asarray(la, float), np.asarray(lb, float)), distance,
                              permutation_type="independent", vectorized=True,
                              n_resamples=EXACT_RELABELLINGS if exact else _RANDOM_RELABELLINGS,
                              alternative="greater", random_state=np.random.default_rng(seed))
    return float(result.pvalue)
