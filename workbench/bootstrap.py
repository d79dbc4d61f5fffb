"""The study bootstrap: one engine for every interval over studies or seeds (score, speedup,
compare, ladder), with one quantile rule.

**The quantile rule** (QUANTILE_RULE, numpy's "inverted_cdf"): the q-quantile of a sample of
draws, each with a probability (equal for Monte Carlo draws, the share of resamples for an exact
bootstrap distribution), is the smallest draw whose cumulative probability reaches q; a
cumulative sum within 1e-12 of q counts as reaching it (float sums). A percentile interval at
`level` takes the quantiles (1 - level) / 2 and (1 + level) / 2. Its ends are always draws: no
interpolation between two of them, so an infinite draw (a miss against a hit, a loss below a
fit's floor) bounds an interval instead of making it NaN, and an exact distribution and its
Monte Carlo estimate give the same kind of value.

**The resamples**: each cell's (algorithm, workload) present studies are redrawn with
replacement, as many as it has, independently of every other cell (`resample_studies`); where
the distribution of a median is small enough it is listed exactly (`median_distribution`,
every multiset of draws weighted by its share of the ordered resamples, while there are at most
EXACT_BOOTSTRAP), and independent distributions combine exactly or by Monte Carlo
(`difference_distribution`, `mean_distribution`).
"""
from __future__ import annotations

import itertools
import math

import numpy as np

from workbench.errors import UserError

__all__ = ["QUANTILE_RULE", "EXACT_BOOTSTRAP", "quantile", "percentile_interval",
           "resample_studies", "median_distribution", "merged", "difference_distribution",
           "mean_distribution"]

QUANTILE_RULE = "inverted_cdf"
EXACT_BOOTSTRAP = 100_000  # above this many resamples (multisets a side; combinations over
                            # workloads), draws are Monte Carlo instead
_TOLERANCE = 1e-12


def quantile(values: np.ndarray, q: float, probs: np.ndarray | None = None) -> float:
    """The q-quantile of `values` (1-D; `probs` their probabilities, default equal) by
    QUANTILE_RULE: the smallest value whose cumulative probability reaches q."""
    if probs is None:
        return float(_equal_quantiles(np.asarray(values, dtype=float), q))
    values = np.asarray(values, dtype=float)
    order = np.argsort(values, kind="stable")
    cdf = np.cumsum(np.asarray(probs, dtype=float)[order])
    return float(values[order][min(int(np.searchsorted(cdf, q - _TOLERANCE)), len(cdf) - 1)])


def _equal_quantiles(draws: np.ndarray, q: float) -> np.ndarray:
    """QUANTILE_RULE along the last axis of equally weighted draws: the k-th smallest of n,
    k the least with k / n >= q (within the tolerance); NaN where a slice holds a NaN."""
    n = draws.shape[-1]
    k = min(max(math.ceil(n * (q - _TOLERANCE)), 1), n)
    ordered = np.sort(draws, axis=-1)  # NaN sorts last
    return np.where(np.isnan(draws).any(axis=-1), np.nan, ordered[..., k - 1])


def percentile_interval(draws: np.ndarray, level: float, axis: int = 0,
                        probs: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(low, high): the (1 - level) / 2 and (1 + level) / 2 quantiles of `draws` along `axis`
    by QUANTILE_RULE (`probs`: the draws' probabilities, 1-D draws only; default equal)."""
    if not 0 < level < 1:
        raise UserError(f"need 0 < level < 1, got level={level}")
    tail = (1.0 - level) / 2
    if probs is not None:
        return (np.asarray(quantile(draws, tail, probs)),
                np.asarray(quantile(draws, 1.0 - tail, probs)))
    moved = np.moveaxis(np.asarray(draws, dtype=float), axis, -1)
    return _equal_quantiles(moved, tail), _equal_quantiles(moved, 1.0 - tail)


def resample_studies(times: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """n bootstrap draws of each cell's present studies (last axis, NaN padded): shape
    (n, *times.shape); a cell of k present studies gets k draws, NaN after them."""
    ordered = np.sort(times, axis=-1)  # present studies first (NaN sorts last)
    present = np.sum(~np.isnan(times), axis=-1, keepdims=True)
    u = rng.random((n,) + times.shape)
    picks = np.minimum((u * present).astype(np.int64), np.maximum(present - 1, 0))
    draws = np.take_along_axis(np.broadcast_to(ordered, u.shape), picks, axis=-1)
    slot = np.arange(times.shape[-1])
    return np.where(slot < present, draws, np.nan)


def _multisets(n: int) -> np.ndarray:
    """Every multiset of n draws from n items, as sorted index rows: C(2n - 1, n) x n."""
    return np.array(list(itertools.combinations_with_replacement(range(n), n)), dtype=np.int64)


def median_distribution(values: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """The exact bootstrap distribution of the median of `values` (a resample draws len(values)
    of them with replacement): (distinct medians, their probabilities). Each multiset of draws
    has probability n! / (prod of multiplicities! x n^n), the share of ordered resamples that
    give it. None when there are more than EXACT_BOOTSTRAP multisets."""
    n = len(values)
    if math.comb(2 * n - 1, n) > EXACT_BOOTSTRAP:
        return None
    ordered = np.sort(values)
    rows = _multisets(n)  # indices into `ordered`, sorted within a row: its order statistics
    medians = (ordered[rows[:, (n - 1) // 2]] + ordered[rows[:, n // 2]]) / 2
    counts = (rows[:, :, None] == np.arange(n)).sum(axis=1)
    # in integers, exactly: n <= 10 here (EXACT_BOOTSTRAP), so n! and each product fit int64
    factorials = np.array([math.factorial(k) for k in range(n + 1)], dtype=np.int64)
    ways = math.factorial(n) // factorials[counts].prod(axis=1)
    return merged(medians, ways / float(n ** n))


def merged(values: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(sorted distinct values, their summed weights, normalised to 1)."""
    support, where = np.unique(values, return_inverse=True)
    probs = np.bincount(where.ravel(), weights=weights.ravel(), minlength=len(support))
    return support, probs / probs.sum()


def difference_distribution(a: np.ndarray, b: np.ndarray, n: int, rng: np.random.Generator
                            ) -> tuple[np.ndarray, np.ndarray, bool]:
    """The bootstrap distribution of log(median B / median A), each side's studies redrawn
    independently: (values, probabilities, whether exact). Exact (every resample, weighted)
    when each side has at most EXACT_BOOTSTRAP multisets of draws; else `n` Monte Carlo
    replicates, equally weighted."""
    dist_a, dist_b = median_distribution(a), median_distribution(b)
    if dist_a is not None and dist_b is not None:
        values = np.log(dist_b[0])[None, :] - np.log(dist_a[0])[:, None]
        return (*merged(values, dist_a[1][:, None] * dist_b[1][None, :]), True)
    draw_a = rng.integers(0, len(a), (n, len(a)))
    draw_b = rng.integers(0, len(b), (n, len(b)))
    draws = np.log(np.median(b[draw_b], axis=-1)) - np.log(np.median(a[draw_a], axis=-1))
    return draws, np.full(n, 1.0 / n), False


def mean_distribution(parts: list[tuple[np.ndarray, np.ndarray]], n: int,
                      rng: np.random.Generator) -> tuple[tuple[np.ndarray, np.ndarray], bool]:
    """The distribution of the mean of independent distributions `parts` ((values, probs)
    each; a bootstrap stratified by workload), and whether it is exact: every combination of
    their values, weighted, when there are at most EXACT_BOOTSTRAP; else `n` Monte Carlo
    draws from each."""
    if math.prod(len(v) for v, _ in parts) <= EXACT_BOOTSTRAP:
        values, probs = np.zeros(1), np.ones(1)
        for v, p in parts:
            values = (values[:, None] + v[None, :]).ravel()
            probs = (probs[:, None] * p[None, :]).ravel()
        return merged(values / len(parts), probs), True
    total = np.zeros(n)
    for v, p in parts:
        total += rng.choice(v, size=n, p=p)
    return (total / len(parts), np.full(n, 1.0 / n)), False
