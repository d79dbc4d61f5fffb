"""The power law L(x) = a x^(-b) + c of loss against training budget, fitted by least squares
(profiled over b, a and c linear given b), and its inverse: what workbench.ladder fits.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from workbench.errors import UserError

__all__ = ["PowerLawFit", "fit_power_law", "fit_power_laws", "invert", "B_MAX"]

B_MAX = 3.0             # largest exponent b the fit considers (language models: 0.05 to 0.6)
_B_GRID = np.geomspace(1e-3, B_MAX, 64)  # neighbours 13 % apart; golden section refines
_GOLDEN = (math.sqrt(5) - 1) / 2


def _num(value: Any, digits: int = 6) -> float | None:
    value = float(value)
    return round(value, digits) if math.isfinite(value) else None


@dataclass(frozen=True)
class PowerLawFit:
    """L(x) = a * x^(-b) + c fitted to `points` points; rmse of the fitted points."""

    a: float
    b: float
    c: float
    rmse: float
    points: int
    low: float   # the smallest and largest x fitted: outside them is extrapolation
    high: float

    def __call__(self, x):
        return self.a * np.power(np.asarray(x, float), -self.b) + self.c

    def inverse(self, loss):
        """The x at which the fit reaches `loss` (inf at or below c)."""
        return invert(np.asarray(self.a), np.asarray(self.b), np.asarray(self.c), loss)

    def to_json(self) -> dict[str, Any]:
        return {"a": _num(self.a), "b": _num(self.b), "c": _num(self.c),
                "rmse": _num(self.rmse), "points": self.points}


def invert(a, b, c, loss):
    """x with a * x^(-b) + c = loss, elementwise (broadcast): inf where loss <= c (the fit never
    gets there), 0 where a == 0 and loss > c (a flat fit is there from the start), NaN where
    any input is NaN."""
    a, b, c, loss = np.broadcast_arrays(*(np.asarray(v, float) for v in (a, b, c, loss)))
    gap = loss - c
    out = np.full(gap.shape, np.inf)
    ok = gap > 0
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        out[ok] = np.where(a[ok] > 0, np.power(a[ok] / gap[ok], 1.0 / b[ok]), 0.0)
    out[np.isnan(gap) | np.isnan(a) | np.isnan(b)] = np.nan  # no fit, or no loss: undefined
    return out


def _profile(z: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For z = x^(-b) fixed, the least-squares (a, c) with a, c >= 0 and the sum of squared
    errors, per row of y (..., points); z broadcasts against y. From the five sums of z and y
    (a regression on one variable), so that a grid of b over many draws stays cheap."""
    z = np.broadcast_to(z, np.broadcast_shapes(z.shape, y.shape))
    n = z.shape[-1]
    sz, sy, szz = z.sum(-1), y.sum(-1), (z * z).sum(-1)
    szy, syy = (z * y).sum(-1), (y * y).sum(-1)
    spread = n * szz - sz * sz
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.where(spread > 0, (n * szy - sz * sy) / spread, 0.0)
        a = np.maximum(a, 0.0)  # a < 0: the best fit is flat, a = 0 and c the mean
        c = (sy - a * sz) / n
        through_zero = c < 0    # c pinned at 0: a from the regression through the origin
        a = np.where(through_zero, np.maximum(szy / szz, 0.0), a)
    c = np.where(through_zero, 0.0, c)
    sse = syy + a * a * szz + n * c * c - 2 * a * szy - 2 * c * sy + 2 * a * c * sz
    return a, c, np.maximum(sse, 0.0)


def fit_power_laws(x, y: np.ndarray, refine: int = 25
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(a, b, c) of L = a x^(-b) + c fitted to each row of `y` (draws x points), vectorised;
    `x` is one row of points for all, or one per row. For a fixed b, a and c are linear
    (`_profile`), so b is found on a log grid and refined by `refine` golden-section steps
    between its grid neighbours. For bootstrap draws."""
    y = np.atleast_2d(np.asarray(y, float))
    x = np.broadcast_to(np.asarray(x, float), y.shape)
    scale = np.exp(np.log(x).mean(-1, keepdims=True))  # x / scale ~ 1: z well conditioned
    u = np.log(x / scale)
    sse = _profile(np.exp(-_B_GRID[:, None, None] * u), y)[2]  # grid x draws
    best = sse.argmin(0)
    lo = _B_GRID[np.maximum(best - 1, 0)]
    hi = _B_GRID[np.minimum(best + 1, len(_B_GRID) - 1)]

    def cost(b):
        return _profile(np.exp(-b[:, None] * u), y)[2]

    p, q = hi - _GOLDEN * (hi - lo), lo + _GOLDEN * (hi - lo)
    fp, fq = cost(p), cost(q)
    for _ in range(refine):
        left = fp < fq  # the minimum lies in [lo, q]: drop (q, hi]
        lo, hi = np.where(left, lo, p), np.where(left, q, hi)
        new = np.where(left, hi - _GOLDEN * (hi - lo), lo + _GOLDEN * (hi - lo))
        f_new = cost(new)
        p, fp, q, fq = (np.where(left, new, q), np.where(left, f_new, fq),
                        np.where(left, p, new), np.where(left, fp, f_new))
    b = (lo + hi) / 2
    a, c, _ = _profile(np.exp(-b[:, None] * u), y)
    return a * scale[:, 0] ** b, b, c  # back from x / scale to x


def fit_power_law(x: Sequence[float], y: Sequence[float]) -> PowerLawFit:
    """L(x) = a x^(-b) + c through (x, y) by bounded least squares (a, c >= 0, 0 < b <= B_MAX):
    for a fixed b the best a and c are linear, so the sum of squared errors is minimised over
    b alone, by scipy.optimize.minimize_scalar (bounded) between the neighbours of the best b
    on a log grid (a robust start: the grid covers every b, so a local minimum elsewhere
    cannot trap it). Needs 3 or more distinct x; rmse over the fitted points."""
    from scipy.optimize import minimize_scalar

    x, y = np.asarray(x, float), np.asarray(y, float)
    if len(x) < 3 or len(np.unique(x)) < 3:
        raise UserError(f"a 3-parameter fit needs 3 or more distinct budgets, got {len(x)}")
    scale = math.exp(np.log(x).mean())
    u = np.log(x / scale)
    sse = _profile(np.exp(-_B_GRID[:, None] * u), y[None, :])[2]
    best = int(sse.argmin())
    lo, hi = _B_GRID[max(best - 1, 0)], _B_GRID[min(best + 1, len(_B_GRID) - 1)]
    solved = minimize_scalar(lambda b: float(_profile(np.exp(-b * u), y)[2]), bounds=(lo, hi),
                             method="bounded", options={"xatol": 1e-7})
    b = float(solved.x) if solved.fun <= sse[best] else float(_B_GRID[best])
    a, c, err = _profile(np.exp(-b * u), y)
    return PowerLawFit(float(a) * scale ** b, b, float(c), float(np.sqrt(err / len(x))),
                       len(x), float(x.min()), float(x.max()))
