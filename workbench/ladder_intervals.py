"""A ladder's intervals: a bootstrap over seeds and the fit together (workbench.ladder), each
interval the percentile interval of its draws by workbench.bootstrap's one quantile rule,
widened for the few seeds its spread is estimated from; and the trend of speedup with size.
"""
from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np

from workbench.bootstrap import percentile_interval
from workbench.power_law import _num

__all__ = ["DRAWS", "INTERVAL_LEVEL", "FRAGILE_CHANGE", "rescaled_means", "widening",
           "interval", "trend"]

DRAWS = 1000            # bootstrap draws behind every ladder interval
INTERVAL_LEVEL = 0.95   # two-sided; percentile intervals of the draws
FRAGILE_CHANGE = 0.05   # without an interval: a leave-one-out move beyond 5 % is flagged


def rescaled_means(values: np.ndarray, draws: int, rng: np.random.Generator) -> np.ndarray:
    """`draws` bootstrap means of `values` (..., runs, columns: a run's loss and seconds are
    resampled as a pair), deviations from the mean scaled by sqrt(n / (n - 1)) (see the module
    doc): (..., draws, columns); leading axes are independent sets (replicates in tests). One
    run: its values every time."""
    values = np.asarray(values, float)
    n = values.shape[-2]
    mean = values.mean(-2, keepdims=True)
    if n < 2:
        return np.repeat(mean, draws, axis=-2)
    picks = rng.integers(0, n, size=(*values.shape[:-2], draws, n))
    drawn = np.take_along_axis(values[..., None, :, :], picks[..., None], axis=-2).mean(-2)
    return mean + math.sqrt(n / (n - 1)) * (drawn - mean)


def widening(level: float, dof: int) -> float:
    """t_{dof, (1 + level)/2} / z_{(1 + level)/2}: how much wider a percentile interval is made
    when its spread comes from few seeds (see `interval`); nan below 1 degree of freedom."""
    from scipy.stats import norm, t

    if dof < 1:
        return math.nan
    if math.isinf(dof):  # a stated noise (--loss-noise), not one estimated from seeds
        return 1.0
    q = (1 + level) / 2
    return float(t.ppf(q, dof) / norm.ppf(q))


def interval(draws: np.ndarray, level: float, point: float, dof: int,
             log: bool = True) -> tuple[float, float]:
    """The bootstrap interval of a figure whose estimate is `point`: the percentile interval
    (workbench.bootstrap.percentile_interval) of the draws (NaN draws, undefined, left out;
    none when they are half or more), its ends
    moved away from `point` by widening(level, dof) (in log scale when `log`: speedups and
    ratios). The draws' spread is estimated from few seeds, and the plain percentile interval
    is as short of its level as a normal interval used in place of a t interval (measured:
    91 % instead of 95 % with 5 seeds per arm; docs/ladder.md); dof = n_ref + n_X - 2, a
    two-sample comparison's, restores it."""
    kept = draws[~np.isnan(draws)]
    factor = widening(level, dof)
    if len(kept) == 0 or len(kept) < len(draws) / 2 or math.isnan(factor):
        return math.nan, math.nan
    with np.errstate(divide="ignore", invalid="ignore"):
        values = np.log(kept) if log else kept
        # workbench.bootstrap's quantile rule: the ends are draws, so an infinite draw (a loss
        # below the fit's floor) bounds the interval as infinite, never NaN
        low, high = (float(v) for v in percentile_interval(values, level))
        centre = math.log(point) if log and point > 0 else point
    if math.isfinite(centre):  # else no estimate to widen about: the plain percentiles
        low, high = centre + factor * (low - centre), centre + factor * (high - centre)
    return (float(np.exp(low)), float(np.exp(high))) if log else (float(low), float(high))


def _pair(low: float, high: float) -> list | None:
    """[low, high] for JSON (an infinite end: null), or None when there is no interval."""
    if math.isnan(low) or math.isnan(high):
        return None
    return [_num(low), _num(high)]


def trend(rungs: Sequence[Mapping[str, Any]], level: float = INTERVAL_LEVEL
          ) -> dict[str, dict[str, Any]]:
    """Per candidate: slope_per_doubling, the least-squares slope of log2(speedup) against
    log2(non-embedding params) over the rungs where its speedup is finite and positive, with
    the interval of the same slope over the rungs' bootstrap draws (each rung's draws are
    independent: its runs are), widened as `interval` does with the smallest rung's dof.
    Needs 2 or more rungs."""
    names = sorted({a for r in rungs for a in r["speedups"]})
    out = {}
    for name in names:
        points = [(math.log2(r["non_embedding_params"]), r["speedups"][name], r["_draws"].get(name))
                  for r in rungs if name in r["speedups"]]
        points = [(x, s, d) for x, s, (d, dof) in points
                  if s["value"] is not None and s["value"] > 0]
        dof = min((r["_draws"][name][1] for r in rungs if name in r["_draws"]), default=0)
        entry: dict[str, Any] = {"slope_per_doubling": None, "interval": None,
                                 "rungs": len(points)}
        if len(points) >= 2 and len({x for x, _, _ in points}) >= 2:
            x = np.array([p[0] for p in points])
            y = np.log2([p[1]["value"] for p in points])
            slope = float(_slope(x, y[None, :])[0])
            entry["slope_per_doubling"] = _num(slope)
            if all(p[2] is not None for p in points):
                with np.errstate(divide="ignore", invalid="ignore"):
                    ys = np.log2(np.stack([p[2] for p in points], 1))
                slopes = _slope(x, np.where(np.isfinite(ys), ys, np.nan))
                entry["interval"] = _pair(*interval(slopes, level, slope, dof, log=False))
        out[name] = entry
    return out


def _slope(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Least-squares slopes of each row of y against x (NaN where a row has a NaN)."""
    xc = x - x.mean()
    return ((y - y.mean(-1, keepdims=True)) * xc).sum(-1) / (xc ** 2).sum()
