"""Batch-size scaling: steps-to-result per batch size, the S(B) = S_min (1 + B_crit/B) fit, the
scaling regimes, and the gradient noise scale B_simple (research/methods.md, part B).

Steps-to-result follows Shallue et al.: for each batch size (and sparsity), the minimum over trials
of the first eval step whose validation metric meets the goal, ties broken by trial id. The fit is
least squares on log S, which is the same curve as McCandlish et al.'s S(B) (E_min = S_min B_crit).
Pure NumPy/SciPy/pandas: no torch, no plotting.
"""
from __future__ import annotations

import math
from typing import Mapping, Sequence

import numpy as np
import pandas as pd
import xarray as xr

from workbench.errors import UserError
from workbench.outcomes import first_hit_positions

__all__ = ["first_hit_steps", "steps_to_result", "fit_steps_to_result", "predicted_steps",
           "scaling_exponent", "regime", "REGIMES", "fit_by_group", "noise_components",
           "b_simple", "b_simple_series", "scaling_runs", "noise_estimate"]

REGIMES = ("perfect scaling", "diminishing returns", "maximal data parallelism")
PERFECT_ALPHA, MAXIMAL_ALPHA = 0.9, 0.1  # thresholds on alpha(B) = B_crit / (B + B_crit), B.3


# -- steps-to-result (B.1) -------------------------------------------------------------------------
def first_hit_steps(curves: xr.Dataset, metric: str, goal: float, direction: str) -> xr.DataArray:
    """Per run of a curve cube (workbench.cubes.curve_cube): the step of the first eval whose
    `metric` (e.g. "validation/accuracy") meets `goal` by the one first-hit rule
    (workbench.outcomes; a row counts with a finite training time >= 0); NaN when no eval
    does. Dims ("run",)."""
    if metric not in curves.data_vars:
        raise UserError(f"unknown metric {metric!r}: the cube has {list(curves.data_vars)}")
    values = curves[metric].transpose("run", "eval").to_numpy()
    steps = curves["step"].transpose("run", "eval").to_numpy()
    seconds = curves["train_seconds"].transpose("run", "eval").to_numpy() \
        if "train_seconds" in curves.data_vars else None
    first = first_hit_positions(values, goal, direction, seconds).reshape(len(values))
    out = np.where(first >= 0, steps[np.arange(len(first)), np.maximum(first, 0)], np.nan) \
        if steps.shape[1] else np.full(len(values), np.nan)
    return xr.DataArray(out, dims=("run",), coords={"run": curves["run"].values}, name="steps",
                        attrs={"units": "steps", "goal": goal, "metric": metric})


def steps_to_result(runs: pd.DataFrame, evals: pd.DataFrame, goal: float, metric: str,
                    direction: str = "max",
                    by: Sequence[str] = ("batch_size", "sparsity")) -> pd.DataFrame:
    """Steps-to-result per group of `by`: the minimum over the group's trials of the first eval
    step meeting `goal` (ties: smaller trial id, then run_id).

    `runs` needs run_id, trial and the `by` columns; `evals` the eval rows (query.evals_frame).
    Returns one row per group: the `by` values, steps (NaN: no trial reached the goal), examples
    (steps x batch_size when batch_size is a `by` column), run_id and trial of the winner,
    trials (runs in the group) and reached (runs that met the goal), sorted by `by`.
    """
    from workbench.cubes import curve_cube

    missing = [c for c in ("run_id", "trial", *by) if c not in runs.columns]
    if missing:
        raise ValueError(f"runs lacks columns {missing}: add them (see query.run_configs)")
    hits = first_hit_steps(curve_cube(runs[["run_id"]], evals, [metric]), metric, goal, direction)
    table = runs[["run_id", "trial", *by]].assign(steps=hits.to_numpy())
    rows = []
    for key, group in table.groupby(list(by), sort=True):
        reached = group.dropna(subset=["steps"]).sort_values(["steps", "trial", "run_id"])
        best = reached.iloc[0] if len(reached) else None
        row = dict(zip(by, key if isinstance(key, tuple) else (key,)))
        row.update(steps=float(best["steps"]) if best is not None else math.nan,
                   run_id=best["run_id"] if best is not None else None,
                   trial=int(best["trial"]) if best is not None else None,
                   trials=len(group), reached=len(reached))
        rows.append(row)
    out = pd.DataFrame(rows, columns=[*by, "steps", "run_id", "trial", "trials", "reached"])
    if "batch_size" in by:
        out.insert(len(by) + 1, "examples", out["steps"] * out["batch_size"].astype(float))
    return out


# -- the S(B) fit and regimes (B.3, B.4) ---------------------------------------------------------
def predicted_steps(batch_sizes: Sequence[float] | float, s_min: float,
                    b_crit: float) -> np.ndarray:
    """S(B) = S_min (1 + B_crit / B) (steps)."""
    b = np.asarray(batch_sizes, float)
    return s_min * (1.0 + b_crit / b)


def fit_steps_to_result(batch_sizes: Sequence[float], steps: Sequence[float]) -> dict:
    """Least squares on log S of S(B) = S_min (1 + B_crit/B), S_min, B_crit > 0.

    Points with a non-finite or non-positive S (goal never reached) are left out. Returns
    {"s_min" (steps), "b_crit" (examples), "e_min" = S_min B_crit (examples), "n" (points used),
    "residuals" (log S - log fit, per used point), "rmse_log"}; NaN values with fewer than 2 points.
    """
    b, s = np.asarray(batch_sizes, float), np.asarray(steps, float)
    keep = np.isfinite(b) & np.isfinite(s) & (s > 0) & (b > 0)
    b, s = b[keep], s[keep]
    if b.size < 2:
        return {"s_min": math.nan, "b_crit": math.nan, "e_min": math.nan, "n": int(b.size),
                "residuals": np.zeros(0), "rmse_log": math.nan}

    def resid(theta: np.ndarray) -> np.ndarray:  # theta = (ln S_min, ln B_crit)
        return np.log(s) - (theta[0] + np.log1p(np.exp(theta[1]) / b))

    from scipy import optimize  # here: scipy takes 0.6 s to import, a dashboard seldom fits

    best = None
    for b0 in np.geomspace(b.min() / 4, b.max() * 4, 7):  # several starts: the surface is flat-ish
        fit = optimize.least_squares(resid, x0=[math.log(s.min()) - 0.1, math.log(b0)])
        if best is None or fit.cost < best.cost:
            best = fit
    s_min, b_crit = float(np.exp(best.x[0])), float(np.exp(best.x[1]))
    r = resid(best.x)
    return {"s_min": s_min, "b_crit": b_crit, "e_min": s_min * b_crit, "n": int(b.size),
            "residuals": r, "rmse_log": float(np.sqrt(np.mean(r ** 2)))}


def scaling_exponent(batch_sizes: Sequence[float] | float, b_crit: float) -> np.ndarray:
    """alpha(B) = -d ln S / d ln B = B_crit / (B + B_crit): 1 perfect scaling, 0 none."""
    b = np.asarray(batch_sizes, float)
    return b_crit / (b + b_crit)


def regime(batch_sizes: Sequence[float] | float, b_crit: float) -> np.ndarray:
    """Regime label per batch size: alpha >= 0.9 perfect scaling (B <= B_crit/9), alpha <= 0.1
    maximal data parallelism (B >= 9 B_crit), else diminishing returns (methods B.3);
    "unknown" when B_crit is NaN."""
    alpha = np.atleast_1d(scaling_exponent(batch_sizes, b_crit))
    labels = np.where(alpha >= PERFECT_ALPHA, REGIMES[0],
                      np.where(alpha <= MAXIMAL_ALPHA, REGIMES[2], REGIMES[1])).astype(object)
    labels[~np.isfinite(alpha)] = "unknown"  # no fit (B_crit NaN)
    return labels


def fit_by_group(results: pd.DataFrame, by: str = "sparsity") -> pd.DataFrame:
    """fit_steps_to_result per value of `by` on a steps_to_result table: columns `by`, s_min,
    b_crit, e_min, n, rmse_log."""
    rows = []
    for key, group in results.groupby(by, sort=True):
        fit = fit_steps_to_result(group["batch_size"], group["steps"])
        rows.append({by: key, **{k: fit[k] for k in ("s_min", "b_crit", "e_min", "n", "rmse_log")}})
    return pd.DataFrame(rows, columns=[by, "s_min", "b_crit", "e_min", "n", "rmse_log"])


# -- the gradient noise scale (B.4) --------------------------------------------------------------
def noise_components(g_small_sq: Sequence[float] | float, g_big_sq: Sequence[float] | float,
                     b_small: float, b_big: float) -> tuple[np.ndarray, np.ndarray]:
    """Unbiased two-batch estimates (|G|^2, tr Sigma) from squared gradient norms at two batch
    sizes of the same step (McCandlish et al.): b_small < b_big, examples.

    |G|^2 = (B_big |g_big|^2 - B_small |g_small|^2) / (B_big - B_small)
    tr S  = (|g_small|^2 - |g_big|^2) / (1/B_small - 1/B_big)
    """
    if not 0 < b_small < b_big:
        raise UserError(f"need 0 < b_small < b_big, got {b_small} and {b_big}")
    gs, gb = np.asarray(g_small_sq, float), np.asarray(g_big_sq, float)
    g2 = (b_big * gb - b_small * gs) / (b_big - b_small)
    trace = (gs - gb) / (1.0 / b_small - 1.0 / b_big)
    return g2, trace


def b_simple(g_small_sq: Sequence[float], g_big_sq: Sequence[float], b_small: float,
             b_big: float) -> float:
    """B_simple = mean(tr Sigma) / mean(|G|^2) over the measurements: a ratio of means, never a
    mean of ratios (examples). NaN when the mean |G|^2 is not positive."""
    g2, trace = noise_components(g_small_sq, g_big_sq, b_small, b_big)
    mean_g2 = float(np.mean(g2)) if g2.size else math.nan
    return float(np.mean(trace)) / mean_g2 if mean_g2 > 0 else math.nan


def b_simple_series(g2: Sequence[float], trace: Sequence[float], decay: float = 0.9) -> np.ndarray:
    """B_simple after each measurement: EMA(tr Sigma) / EMA(|G|^2), the two EMAs kept apart and
    bias-corrected (decay in [0, 1)); NaN while the |G|^2 EMA is not positive. Shape (n,)."""
    if not 0.0 <= decay < 1.0:
        raise UserError(f"decay must be in [0, 1), got {decay}")
    g2, trace = np.asarray(g2, float), np.asarray(trace, float)
    out = np.full(g2.shape, np.nan)
    m_g2 = m_tr = 0.0
    for i, (a, t) in enumerate(zip(g2, trace)):
        m_g2, m_tr = decay * m_g2 + (1 - decay) * a, decay * m_tr + (1 - decay) * t
        # The bias corrections (1 - decay^(i+1)) cancel in the ratio.
        out[i] = m_tr / m_g2 if m_g2 > 0 else np.nan
    return out


# -- reading a scaling study back ----------------------------------------------------------------
def scaling_runs(store, study_name: str | None = None) -> pd.DataFrame:
    """The runs frame (query.runs_frame) with the sparsity and prune_method of each run's config
    (0.0 / "snip" for runs that predate them), optionally of one study only."""
    from workbench import query

    runs = query.runs_frame(store)
    if study_name is not None:
        runs = runs[runs["study_name"] == study_name]
    wanted = set(runs["run_id"])
    filters = {} if study_name is None else {"study_name": study_name}
    configs = {doc["run_id"]: doc.get("config") or {} for doc in store.documents(**filters)
               if doc["run_id"] in wanted}
    settings = {run_id: (float(c.get("sparsity") or 0.0), c.get("prune_method") or "snip")
                for run_id, c in configs.items()}
    default = (0.0, "snip")
    return runs.assign(sparsity=[settings.get(r, default)[0] for r in runs["run_id"]],
                       prune_method=[settings.get(r, default)[1] for r in runs["run_id"]])


def noise_estimate(evals: pd.DataFrame, run_ids: Sequence[str],
                   up_to_step: Mapping[str, float] | None = None) -> float:
    """B_simple over the noise measurements of `run_ids` (records.NOISE_COLUMNS in eval rows):
    mean(tr Sigma) / mean(|G|^2), a ratio of means (examples); only measurements at steps <=
    up_to_step[run_id] when given (e.g. each run's steps-to-result). NaN without measurements."""
    cols = ("noise/grad_sq", "noise/trace_sigma")
    if not all(c in evals.columns for c in cols):
        return math.nan
    rows = evals[evals["run_id"].isin(list(run_ids))].dropna(subset=list(cols))
    if up_to_step:
        limit = rows["run_id"].map(up_to_step).astype(float).fillna(np.inf)
        rows = rows[rows["step"] <= limit]
    g2 = float(rows[cols[0]].mean()) if len(rows) else math.nan
    return float(rows[cols[1]].mean()) / g2 if g2 > 0 else math.nan
