"""Early ranking of runs from partial training-loss curves: the TSE family, the LCGA fit, training
elasticity, and rank correlations against the final result (research/methods.md, part A).

Inputs are plain arrays: a run's training-loss rows as (step, loss) pairs, from which per-window
means (epoch-like windows of a fixed number of steps) are formed for the TSE family, while LCGA
fits the per-row losses directly. Every estimator here is "lower predicts better".

Pure NumPy/SciPy: no torch, no plotting.
"""
from __future__ import annotations

import functools
import math
import warnings
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from workbench.errors import UserError

__all__ = ["window_means", "tse", "tse_e", "tse_ema", "tse_ema_recursive", "LCGAFit", "fit_lcga",
           "lcga_d1n", "lcga_d1", "elasticity", "elasticity_stop_step", "rank_correlations",
           "run_estimates", "early_ranking_table", "ESTIMATORS", "DEFAULT_FRACTIONS"]

DEFAULT_FRACTIONS = (0.05, 0.1, 0.2, 0.5)
# Estimators of the early-ranking table: all "lower predicts better".
ESTIMATORS = ("TSE", "TSE-E", "TSE-EMA", "LCGA", "LCGA-D1N")
MIN_FIT_POINTS = 4  # a 3-parameter fit needs more points than parameters


# -- the TSE family (A.1) ------------------------------------------------------------------------
def window_means(steps: Sequence[float], losses: Sequence[float], window: int,
                 up_to: float | None = None) -> np.ndarray:
    """Mean training loss of each *complete* window of `window` steps, shape (T,).

    Window t (t = 1..T) holds the rows with (t-1)*window < step <= t*window; only rows with
    step <= `up_to` (default: the last step) count, and a window counts only when `up_to` reaches
    its end (the TSE pitfall: use completed epochs only). Empty windows are skipped.
    """
    if window < 1:
        raise UserError(f"window must be >= 1 step, got {window}")
    s, v = np.asarray(steps, float), np.asarray(losses, float)
    if s.shape != v.shape:
        raise ValueError(f"steps and losses differ in shape: {s.shape} vs {v.shape}")
    if s.size == 0:
        return np.zeros(0)
    up_to = float(np.max(s)) if up_to is None else float(up_to)
    n_windows = int(math.floor(up_to / window + 1e-9))
    keep = (s > 0) & (s <= n_windows * window)
    index = np.ceil(s[keep] / window - 1e-9).astype(int) - 1
    sums = np.bincount(index, weights=v[keep], minlength=n_windows)
    counts = np.bincount(index, minlength=n_windows)
    return sums[counts > 0] / counts[counts > 0]


def tse(means: Sequence[float]) -> float:
    """TSE(T) = sum_t L_t: area under the window-mean loss curve (loss units x windows)."""
    m = np.asarray(means, float)
    return float(m.sum()) if m.size else math.nan


def tse_e(means: Sequence[float], e: int = 1) -> float:
    """TSE-E(T) = sum of the last `e` complete windows' mean losses (e=1: the last one)."""
    m = np.asarray(means, float)
    if e < 1:
        raise UserError(f"e must be >= 1 window, got {e}")
    return float(m[-e:].sum()) if m.size else math.nan


def tse_ema(means: Sequence[float], gamma: float = 0.999) -> float:
    """TSE-EMA(T) = sum_t gamma^(T-t) L_t: recent windows weigh most (gamma in (0, 1])."""
    if not 0.0 < gamma <= 1.0:
        raise UserError(f"gamma must be in (0, 1], got {gamma}")
    m = np.asarray(means, float)
    if not m.size:
        return math.nan
    weights = gamma ** np.arange(m.size - 1, -1, -1, dtype=float)
    return float(np.dot(weights, m))


def tse_ema_recursive(means: Sequence[float], new_weight: float = 0.9) -> float:
    """The "Ru-script EMA": m_t = (1 - w) m_{t-1} + w L_t with m_1 = L_1; not tse_ema."""
    m = np.asarray(means, float)
    if not m.size:
        return math.nan
    out = m[0]
    for value in m[1:]:
        out = (1.0 - new_weight) * out + new_weight * value
    return float(out)


# -- the LCGA fit (A.2) ---------------------------------------------------------------------------
def _hyperbola(k: np.ndarray, b1: float, b2: float, b3: float) -> np.ndarray:
    return 1.0 / (b1 + b2 * k) + b3


@dataclass(frozen=True)
class LCGAFit:
    """L(k) = 1/(b1 + b2 k) + b3 fitted to (step, loss); params in original loss units.

    b1 (1/loss), b2 (1/(loss*step)) and b3 (loss, the fitted floor) are NaN when the fit failed
    (too few points, non-finite losses, no convergence, or b2 -> 0: no descent).
    `scale` is the max-normalisation M used in the fit (1.0 when not normalised).
    """

    b1: float
    b2: float
    b3: float
    scale: float
    n_points: int
    message: str = ""

    @property
    def params(self) -> tuple[float, float, float]:
        return (self.b1, self.b2, self.b3)

    @property
    def ok(self) -> bool:
        return all(math.isfinite(p) for p in self.params)

    @property
    def floor(self) -> float:
        """The fitted loss floor L_inf = M * b3_normalised (loss units)."""
        return self.b3

    def predict(self, steps: Sequence[float] | float) -> np.ndarray:
        """Fitted loss at `steps` (same shape); NaN where the fit failed."""
        k = np.asarray(steps, float)
        return _hyperbola(k, *self.params) if self.ok else np.full(k.shape, np.nan)

    def excess(self, steps: Sequence[float] | float) -> np.ndarray:
        """e(k) = L(k) - L_inf = 1/(b1 + b2 k): fitted loss still above the floor (loss units)."""
        k = np.asarray(steps, float)
        return 1.0 / (self.b1 + self.b2 * k) if self.ok else np.full(k.shape, np.nan)


def _failed(scale: float, n: int, message: str) -> LCGAFit:
    return LCGAFit(math.nan, math.nan, math.nan, scale, n, message)


def fit_lcga(steps: Sequence[float], losses: Sequence[float], normalise: bool = True) -> LCGAFit:
    """Bounded least squares of L(k) = 1/(b1 + b2 k) + b3, b1, b2, b3 >= 0 (LCGA, A.2).

    `steps` (n,) are the step indices k (>= 1), `losses` (n,) the minibatch training losses.
    With `normalise`, y = loss / M with M = max loss is fitted from p0 = (1, 1, 1) (scipy's TRF
    under bounds, maxfev 2000), then mapped back: b1/M, b2/M, M*b3. Failures give NaN params.
    The last FIT_MEMO fits are remembered by their inputs' values (a fit takes about 10 ms, and
    the dashboard fits the same runs again for each session and filter setting); a fit is a
    frozen value, so sharing it changes nothing.
    """
    k, y = np.asarray(steps, float), np.asarray(losses, float)
    return _fit_memo(k.tobytes(), y.tobytes(), bool(normalise))


FIT_MEMO = 4096  # fits remembered (each keeps its inputs: 16 bytes a point)


@functools.lru_cache(maxsize=FIT_MEMO)
def _fit_memo(k: bytes, y: bytes, normalise: bool) -> LCGAFit:
    return _fit_lcga(np.frombuffer(k), np.frombuffer(y), normalise)


def _fit_lcga(k: np.ndarray, y: np.ndarray, normalise: bool) -> LCGAFit:
    good = np.isfinite(k) & np.isfinite(y)
    k, y = k[good], y[good]
    if k.size < MIN_FIT_POINTS or good.size != int(good.sum()):
        reason = "non-finite losses" if good.size != int(good.sum()) else "too few points"
        return _failed(math.nan, int(k.size), f"{reason} ({k.size} usable)")
    scale = float(np.max(np.abs(y))) if normalise else 1.0
    if not scale > 0:
        return _failed(scale, int(k.size), "all losses are zero")
    from scipy import optimize  # here: scipy takes 0.6 s to import, a dashboard seldom fits

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            p, _ = optimize.curve_fit(_hyperbola, k, y / scale, p0=(1.0, 1.0, 1.0),
                                      bounds=(0.0, np.inf), maxfev=2000)
    except (RuntimeError, ValueError, optimize.OptimizeWarning) as exc:
        return _failed(scale, int(k.size), f"no convergence: {exc}")
    b1, b2, b3 = (float(v) for v in p)
    if not b2 > 1e-12 or not all(math.isfinite(v) for v in p):
        return _failed(scale, int(k.size), "no descent (b2 -> 0)")
    return LCGAFit(b1 / scale, b2 / scale, b3 * scale, scale, int(k.size))


def lcga_d1n(fit: LCGAFit, steps: Sequence[float], burn_in: float = 0.0) -> float:
    """D1N = mean_k M f'(k) / sqrt(M f''(k)) = -mean_k sqrt(e(k)/2) over steps > burn_in (A.2).

    e(k) is the fitted excess loss (loss units), so D1N is in sqrt(loss) units; NaN on a failed
    fit or when no step is past the burn-in.
    """
    k = np.asarray(steps, float)
    k = k[k > burn_in]
    if not fit.ok or not k.size:
        return math.nan
    return float(-np.mean(np.sqrt(fit.excess(k) / 2.0)))


def lcga_d1(fit: LCGAFit, steps: Sequence[float], burn_in: float = 0.0) -> float:
    """D1 = mean_k dL/dk = mean_k -b2/(b1 + b2 k)^2 over steps > burn_in (loss per step)."""
    k = np.asarray(steps, float)
    k = k[k > burn_in]
    if not fit.ok or not k.size:
        return math.nan
    return float(np.mean(-fit.b2 / (fit.b1 + fit.b2 * k) ** 2))


# -- training elasticity (A.3) ----------------------------------------------------------------------
def elasticity(fit: LCGAFit, steps: Sequence[float] | float) -> np.ndarray:
    """eps(k) = d ln L / d ln k = -b2 k / (u (1 + b3 u)), u = b1 + b2 k (dimensionless, <= 0)."""
    k = np.asarray(steps, float)
    if not fit.ok:
        return np.full(k.shape, np.nan)
    u = fit.b1 + fit.b2 * k
    return -fit.b2 * k / (u * (1.0 + fit.b3 * u))


def elasticity_stop_step(fit: LCGAFit, tau: float) -> float | None:
    """Predicted step k* where |eps| falls to `tau` on its decreasing branch (A.3).

    k* = (u* - b1)/b2 with u* the larger root of tau b3 u^2 + (tau - 1) u + b1 = 0. Returns None
    when |eps| never falls to tau (a failed fit, or no floor: b3 = 0 makes |eps| -> 1 > tau), and
    0.0 when |eps| never exceeds tau (stop at once; also when k* would be negative).
    """
    if not 0.0 < tau < 1.0:
        raise UserError(f"tau must be in (0, 1), got {tau}")
    if not fit.ok or fit.b3 <= 0.0:
        return None
    disc = (1.0 - tau) ** 2 - 4.0 * tau * fit.b1 * fit.b3
    if disc < 0.0:
        return 0.0
    u_star = ((1.0 - tau) + math.sqrt(disc)) / (2.0 * tau * fit.b3)
    return max(0.0, (u_star - fit.b1) / fit.b2)


# -- ranking quality (A.4) ------------------------------------------------------------------------
def rank_correlations(estimates: Sequence[float], finals: Sequence[float],
                      direction: str) -> dict[str, float]:
    """Signed Spearman rho and Kendall tau between early estimates and final results.

    `estimates` are "lower predicts better"; `finals` are final metric values whose better side is
    `direction` ("max" or "min"). +1 means the estimator ranks the runs exactly as they finish.
    Pairs with a NaN are dropped; fewer than 3 pairs (or a constant side) give NaN. Never |rho|.
    """
    if direction not in ("min", "max"):
        raise UserError(f"direction must be 'min' or 'max', got {direction!r}")
    e, f = np.asarray(estimates, float), np.asarray(finals, float)
    if e.shape != f.shape:
        raise ValueError(f"estimates and finals differ in shape: {e.shape} vs {f.shape}")
    keep = np.isfinite(e) & np.isfinite(f)
    e = -e[keep]  # higher = predicted better
    f = f[keep] if direction == "max" else -f[keep]  # higher = better
    n = int(keep.sum())
    if n < 3 or np.ptp(e) == 0 or np.ptp(f) == 0:
        return {"spearman": math.nan, "kendall": math.nan, "n": n}
    from scipy import stats  # here: scipy takes 0.6 s to import, a dashboard seldom ranks

    rho = stats.spearmanr(e, f).statistic
    tau = stats.kendalltau(e, f).statistic
    return {"spearman": float(rho), "kendall": float(tau), "n": n}


def run_estimates(steps: Sequence[float], losses: Sequence[float], cutoff: float, window: int,
                  end_step: float, gamma: float = 0.9, burn_in: float = 0.0) -> dict[str, float]:
    """Every estimator of ESTIMATORS for one run, from its rows with step <= `cutoff`.

    TSE family on `window`-step means; LCGA = the fitted loss at `end_step` (the full budget),
    LCGA-D1N from the same fit after `burn_in` steps (sign uncalibrated, see methods A.2).
    """
    s, v = np.asarray(steps, float), np.asarray(losses, float)
    seen = s <= cutoff
    means = window_means(s[seen], v[seen], window, up_to=cutoff)
    fit = fit_lcga(s[seen], v[seen])
    return {"TSE": tse(means), "TSE-E": tse_e(means), "TSE-EMA": tse_ema(means, gamma),
            "LCGA": float(fit.predict(end_step)), "LCGA-D1N": lcga_d1n(fit, s[seen], burn_in)}


def early_ranking_table(train_rows: pd.DataFrame, finals: Mapping[str, float] | pd.Series,
                        direction: str = "max", fractions: Sequence[float] = DEFAULT_FRACTIONS,
                        budget_steps: float | None = None, window: int | None = None,
                        gamma: float = 0.9) -> pd.DataFrame:
    """Spearman and Kendall of each estimator vs the final ranking, per budget fraction.

    `train_rows`: columns run_id, step, loss (workbench.query.train_frame). `finals`: run_id ->
    final validation metric (better = `direction`). The cutoff of fraction f is f*budget_steps
    (default: the largest step seen); `window` (steps per TSE window, default budget/50);
    LCGA's burn-in is 20 % of the cutoff. Returns columns estimator, fraction, cutoff_step,
    spearman, kendall, n (runs with a finite estimate and a final value).
    """
    for c in ("run_id", "step", "loss"):
        if c not in train_rows.columns:
            raise ValueError(f"train_rows lacks column {c!r}: pass workbench.query.train_frame rows")
    finals = pd.Series(finals, dtype=float)
    rows = train_rows[train_rows["run_id"].isin(finals.index)]
    budget = float(budget_steps or rows["step"].max())
    window = window or max(1, int(round(budget / 50)))
    out = []
    for f in fractions:
        cutoff = f * budget
        est = {rid: run_estimates(g["step"], g["loss"], cutoff, window, budget, gamma, 0.2 * cutoff)
               for rid, g in rows.groupby("run_id", sort=True)}
        ids = sorted(est)
        for name in ESTIMATORS:
            corr = rank_correlations([est[r][name] for r in ids], finals.loc[ids].to_numpy(),
                                     direction)
            out.append({"estimator": name, "fraction": f, "cutoff_step": cutoff, **corr})
    return pd.DataFrame(out, columns=["estimator", "fraction", "cutoff_step", "spearman",
                                      "kendall", "n"])
