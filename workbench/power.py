"""What a design can detect: the one power model behind `compare`, `study --until-decided`
(workbench/sequential.py's futility rule) and `noise` (runners/procedures/noise_floor.py).

The test is compare's: a stratified exact permutation test of P(a study of A beats one of B),
two-sided at level 1 - confidence (workbench/permutation.py). Two facts size a design:

- **The floor.** With n_A + n_B studies on each of W workloads, the smallest one-sided p-value
  that test can give is 1 / prod C(n_A + n_B, n_A) (every study of one side beating every
  study of the other), so a design below the floor can never decide, whatever the speedup:
  3 + 3 studies on one workload give at best 1/20 = 0.05, above the 0.025 a 95 % verdict needs,
  and 4 + 4 (1/70) is the fewest that can (`fewest_studies`).
- **The spread.** Log study times with variance v on every workload and the same speedup s on
  each: the mean over workloads of log ratios has variance 2 v / (W n), which gives n for a z
  test at level alpha = 1 - confidence and the power asked for; the rank test needs pi / 3
  times as many (its efficiency relative to the t test on normal data is 3 / pi).

`studies_needed` is the larger of the two (and at least 2); `min_detectable_speedup` is its
inverse: the smallest speedup n studies a side detect, None below the floor.
"""
from __future__ import annotations

import math
import statistics
from fractions import Fraction
from typing import Sequence

import numpy as np

from workbench.errors import UserError

__all__ = ["P_TOLERANCE", "POWER", "DEFAULT_CONFIDENCE", "DEFAULT_DETECT", "half_alpha", "reaches",
           "smallest_p_value", "studies_to_reach", "fewest_studies", "studies_needed",
           "min_detectable_speedup", "log_variance"]

DEFAULT_CONFIDENCE = 0.95
DEFAULT_DETECT = 1.25  # the speedup (t_B / t_A) a studies-needed figure is sized for
POWER = 0.8         # the power every studies-needed figure is sized for
P_TOLERANCE = 1e-9  # a p-value within this relative distance of the level reaches it (p-values
                    # are sums of floats: 1/20 may come out as 0.05000000000000001)


def half_alpha(confidence: float) -> Fraction:
    """(1 - confidence) / 2 exactly, the confidence read as the decimal it is written as
    (0.9 is 9/10, not the float below it): the one-sided level of the two-sided test."""
    return (1 - Fraction(repr(float(confidence)))) / 2


def reaches(p: float, confidence: float) -> bool:
    """Whether a one-sided p-value decides at `confidence` (two-sided): p <= (1 - c) / 2, up to
    P_TOLERANCE."""
    return p <= float(half_alpha(confidence)) * (1 + P_TOLERANCE)


def smallest_p_value(sizes: Sequence[tuple[int, int]]) -> Fraction:
    """The smallest one-sided p-value the stratified permutation test can give with these
    studies per workload ((studies of A, studies of B) each): every study of one side beating
    every study of the other on every workload, 1 / prod C(n_a + n_b, n_a), exactly."""
    return Fraction(1, math.prod(math.comb(x + y, x) for x, y in sizes))


def fewest_studies(workloads: int, confidence: float = DEFAULT_CONFIDENCE) -> int:
    """The fewest studies k a side (k + k on each of `workloads`) whose smallest p-value
    reaches `confidence` (the floor, module doc)."""
    k = 1
    while smallest_p_value([(k, k)] * workloads) > half_alpha(confidence):
        k += 1
    return k


def studies_to_reach(sizes: Sequence[tuple[int, int]], confidence: float) -> int | None:
    """The fewest studies k a side (k + k on each of these workloads) whose smallest p-value
    reaches `confidence`; None when these studies already can."""
    if smallest_p_value(sizes) <= half_alpha(confidence) * (1 + Fraction(1, 10 ** 9)):
        return None
    return max(max(max(x, y) for x, y in sizes), fewest_studies(len(sizes), confidence))


def _spread_factor(log_var: float, workloads: int, confidence: float, power: float) -> float:
    """n * ln(s)^2 that the spread alone asks for (module doc), rank test included."""
    z = statistics.NormalDist().inv_cdf
    alpha = 1 - confidence
    return (z(1 - alpha / 2) + z(power)) ** 2 * 2 * log_var / workloads * math.pi / 3


def _check(workloads: int, confidence: float) -> None:
    if workloads < 1:
        raise UserError(f"workloads must be >= 1, got {workloads}")
    if not 0 < confidence < 1:
        raise UserError(f"confidence must be in (0, 1), got {confidence}")


def studies_needed(log_var: float, workloads: int, speedup: float,
                   confidence: float = DEFAULT_CONFIDENCE, power: float = POWER) -> int | None:
    """Studies a side for compare's test at `confidence` to detect `speedup` (t_B / t_A, e.g.
    1.25) with `power` over `workloads` workloads whose log study times have variance
    `log_var` (module doc): never fewer than the floor, nor than 2. None when the variance is
    unknown."""
    _check(workloads, confidence)
    if not speedup > 1:
        raise UserError(f"the speedup to detect must be > 1, got {speedup}")
    if not math.isfinite(log_var) or log_var < 0:
        return None
    n = math.ceil(_spread_factor(log_var, workloads, confidence, power)
                  / math.log(speedup) ** 2 - 1e-9)
    return max(n, fewest_studies(workloads, confidence), 2)


def min_detectable_speedup(log_var: float, studies: int, workloads: int = 1,
                           confidence: float = DEFAULT_CONFIDENCE,
                           power: float = POWER) -> float | None:
    """The smallest speedup, as the fraction of time saved (1 - t_A / t_B), that `studies`
    studies a side detect (the inverse of studies_needed: the least s with
    studies_needed(log_var, workloads, s) <= studies); None when `studies` is below the floor
    or 2 (no speedup can be detected); NaN when the variance is unknown."""
    _check(workloads, confidence)
    if studies < 1:
        raise UserError(f"studies must be >= 1, got {studies}")
    if not math.isfinite(log_var) or log_var < 0:
        return math.nan
    if studies < max(fewest_studies(workloads, confidence), 2):
        return None
    log_speedup = math.sqrt(_spread_factor(log_var, workloads, confidence, power) / studies)
    return 1 - math.exp(-log_speedup)


def log_variance(times: Sequence[float | None]) -> float:
    """The sample variance of the log times (None, NaN, +inf and times <= 0 left out): the
    spread compare pools from its sides' study times; NaN below two times."""
    values = np.array([t for t in times if t is not None], dtype=float)
    values = values[np.isfinite(values) & (values > 0)]
    return float(np.log(values).var(ddof=1)) if len(values) >= 2 else math.nan
