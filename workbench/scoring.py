"""AlgoPerf scoring, exactly as the official scorer computes it, as small pure xarray functions.

The chain (research/algoperf.md sections 5.1, 5.2 and 8):

    final cube (algorithm, workload, study, trial, seed)
      -> study_times: per study, the trial with the smallest eval index at which it first met the
         validation target (ties: smaller time); its training seconds there; +inf if none did
      -> workload_times: median over the studies present (+inf takes part), NaN if none
      -> scored_times: the workloads that are scored (base workloads)
      -> performance_ratios: time / best time of the workload (+inf or NaN: no credit)
      -> performance_profile: share of workloads with ratio <= tau
      -> benchmark_scores: trapezoid area of the profile on 100 points of tau in [1, 4], / 3

Each step takes and returns xarray objects and keeps any extra dimension (e.g. a bootstrap
`replicate`), so rules such as the held-out variant filter and the 4x cut-off slot in between
workload_times and the ratios without changing the others. Times are training seconds.
"""
from __future__ import annotations

import warnings
from typing import Mapping

import numpy as np
import pandas as pd
import xarray as xr

__all__ = ["study_times", "median_over_studies", "workload_times", "scored_workloads",
           "scored_times", "performance_ratios", "performance_profile", "benchmark_scores",
           "exact_scores", "score_table", "bootstrap_scores", "speedups", "TAU_MAX", "NUM_TAUS"]

TAU_MAX = 4.0   # ratios above this earn nothing
NUM_TAUS = 100  # points of the official tau grid, np.linspace(1, TAU_MAX, NUM_TAUS)


def _need(obj: xr.Dataset | xr.DataArray, dims: tuple[str, ...], what: str) -> None:
    missing = [d for d in dims if d not in obj.dims]
    if missing:
        raise ValueError(f"{what} lacks dims {missing} (has {list(obj.dims)}); "
                         "build it with workbench.cubes.final_cube")


def study_times(cube: xr.Dataset) -> xr.DataArray:
    """Per (algorithm, workload, study): the time of the study's chosen trial, in seconds.

    Every (trial, seed) cell is a trial. The chosen trial is the one that met the validation
    target at the smallest eval index, ties broken by the smaller time; +inf when no trial met
    it; NaN when the study has no trial at all.
    """
    _need(cube, ("trial", "seed"), "cube")
    index = cube["eval_index_to_target"].stack(_trial=("trial", "seed"))
    time = cube["time_to_target"].stack(_trial=("trial", "seed"))
    first = index.min("_trial", skipna=True)  # +inf when none reached, NaN when no trial
    out = time.where(index == first).min("_trial", skipna=True)
    return out.rename("time_to_target").assign_attrs(units="s")


def median_over_studies(times: xr.DataArray) -> xr.DataArray:
    """np.median over the studies present (+inf takes part; NaN marks a missing study)."""
    _need(times, ("study",), "study times")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN cells: no study, stays NaN
        out = times.reduce(np.nanmedian, dim="study")
    return out.rename("time_to_target").assign_attrs(units="s")


def workload_times(cube: xr.Dataset) -> xr.DataArray:
    """Per (algorithm, workload): median over studies of the study times; NaN when no study."""
    return median_over_studies(study_times(cube))


def scored_workloads(cube: xr.Dataset | xr.DataArray) -> list[str]:
    """The base workloads (variant == "base") of the cube; every workload if none is a base."""
    names = [str(w) for w in cube["workload"].values]
    if "variant" not in cube.coords:
        return names
    base = [w for w, v in zip(names, cube["variant"].values) if v == "base"]
    return base or names


def scored_times(cube: xr.Dataset) -> xr.DataArray:
    """Per-workload times restricted to the scored workloads: what the profile is built from."""
    times = workload_times(cube)
    return times.sel(workload=scored_workloads(times))


def performance_ratios(times: xr.DataArray) -> xr.DataArray:
    """r = time / the workload's best finite time over algorithms; +inf for a miss, NaN if missing.

    When nobody met a workload's target every ratio is +inf (or NaN where the time is missing).
    """
    _need(times, ("algorithm", "workload"), "times")
    best = times.where(np.isfinite(times)).min("algorithm", skipna=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = times / best
    ratios = ratios.where(~np.isposinf(times), np.inf)
    return ratios.rename("performance_ratio").assign_attrs(units="1")


def _num_workloads(times: xr.DataArray, num_workloads: int | None) -> int:
    n = times.sizes["workload"] if num_workloads is None else int(num_workloads)
    if n < 1:
        raise ValueError(f"cannot score over {n} workloads: times has workloads "
                         f"{list(times['workload'].values)}")
    return n


def performance_profile(times: xr.DataArray, taus: np.ndarray | None = None,
                        num_workloads: int | None = None) -> xr.DataArray:
    """rho(tau): share of the scored workloads with ratio <= tau; dims (algorithm, tau).

    Default taus: np.linspace(1, 4, 100). The denominator is the number of workloads in `times`
    (or `num_workloads`, e.g. the configured count when some have no results); NaN is a miss.
    """
    n = _num_workloads(times, num_workloads)
    taus = np.linspace(1.0, TAU_MAX, NUM_TAUS) if taus is None else np.asarray(taus, float)
    tau = xr.DataArray(taus, dims="tau", coords={"tau": taus})
    rho = (performance_ratios(times) <= tau).sum("workload") / n
    order = ["algorithm", "tau"] + [d for d in rho.dims if d not in ("algorithm", "tau")]
    return rho.transpose(*order).rename("performance_profile").assign_attrs(units="1")


def benchmark_scores(times: xr.DataArray, tau_max: float = TAU_MAX, num_points: int = NUM_TAUS,
                     num_workloads: int | None = None) -> xr.DataArray:
    """The official score: trapezoid area of rho on linspace(1, tau_max, num_points) / (tau_max - 1)."""
    if tau_max <= 1 or num_points < 2:
        raise ValueError(f"need tau_max > 1 and num_points >= 2, got {tau_max}, {num_points}")
    taus = np.linspace(1.0, tau_max, num_points)
    rho = performance_profile(times, taus, num_workloads)
    area = xr.apply_ufunc(np.trapezoid, rho, input_core_dims=[["tau"]], kwargs={"x": taus})
    return (area / (tau_max - 1.0)).rename("score").assign_attrs(units="1")


def exact_scores(times: xr.DataArray, tau_max: float = TAU_MAX,
                 num_workloads: int | None = None) -> xr.DataArray:
    """The exact integral of the profile: sum over workloads of max(0, tau_max - r) / ((tau_max-1) n)."""
    n = _num_workloads(times, num_workloads)
    credit = np.maximum(0.0, tau_max - performance_ratios(times)).fillna(0.0)
    return (credit.sum("workload") / ((tau_max - 1.0) * n)).rename("exact_score") \
        .assign_attrs(units="1")


def _table(times: xr.DataArray) -> pd.DataFrame:
    """Score table of per-workload times (algorithm, workload), best first."""
    table = pd.DataFrame({
        "algorithm": [str(a) for a in times["algorithm"].values],
        "score": benchmark_scores(times).values,
        "exact_score": exact_scores(times).values,
        "workloads_reached": np.isfinite(times).sum("workload").values.astype(int),
        "workloads_scored": times.sizes["workload"],
    })
    return table.sort_values(["score", "algorithm"], ascending=[False, True], ignore_index=True)


def score_table(cube: xr.Dataset) -> pd.DataFrame:
    """algorithm, score, exact_score, workloads_reached, workloads_scored; best score first."""
    return _table(scored_times(cube).transpose("algorithm", "workload"))


def _resample_studies(times: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """n bootstrap draws of each cell's present studies (NaN padded): shape (n, *times.shape)."""
    ordered = np.sort(times, axis=-1)  # present studies first (NaN sorts last)
    present = np.sum(~np.isnan(times), axis=-1, keepdims=True)
    u = rng.random((n,) + times.shape)
    picks = np.minimum((u * present).astype(np.int64), np.maximum(present - 1, 0))
    draws = np.take_along_axis(np.broadcast_to(ordered, u.shape), picks, axis=-1)
    slot = np.arange(times.shape[-1])
    return np.where(slot < present, draws, np.nan)  # k present studies: k draws


def bootstrap_scores(cube: xr.Dataset, n: int = 1000, seed: int = 0,
                     level: float = 0.9) -> pd.DataFrame:
    """Percentile interval (algorithm, low, high) of the score when studies are resampled.

    Each replicate redraws, independently for every (algorithm, workload), as many studies as it
    has, with replacement, then scores exactly as score_table does.
    """
    if not 0 < level < 1 or n < 1:
        raise ValueError(f"need 0 < level < 1 and n >= 1, got level={level}, n={n}")
    st = study_times(cube).transpose("algorithm", "workload", "study")
    draws = _resample_studies(st.values, n, np.random.default_rng(seed))
    replicas = st.isel(study=0, drop=True).expand_dims(replicate=n).copy(
        data=_nanmedian_last(draws))
    scores = benchmark_scores(replicas.sel(workload=scored_workloads(replicas)))
    tail = (1.0 - level) / 2
    low = scores.quantile(tail, dim="replicate").values
    high = scores.quantile(1.0 - tail, dim="replicate").values
    return pd.DataFrame({"algorithm": [str(a) for a in scores["algorithm"].values],
                         "low": low, "high": high})


def _nanmedian_last(values: np.ndarray) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmedian(values, axis=-1)


def speedups(times: xr.DataArray, reference: str,
             budgets: Mapping[str, float] | None = None) -> xr.DataArray:
    """Geometric mean over workloads of t(reference) / t(algorithm); > 1 means faster than it.

    With `budgets` ({workload: seconds}) a miss (+inf) counts as its budget + 1 s, as AlgoPerf's
    compute_speedups does; without, a miss gives a ratio of 0 or +inf. NaN (no result) and
    both-missed workloads are left out of the mean.
    """
    _need(times, ("algorithm", "workload"), "times")
    names = [str(a) for a in times["algorithm"].values]
    if reference not in names:
        raise ValueError(f"unknown reference algorithm {reference!r}: valid are {names}")
    if budgets is not None:
        workloads = [str(w) for w in times["workload"].values]
        lacking = [w for w in workloads if w not in budgets]
        if lacking:
            raise ValueError(f"budgets lack workloads {lacking}: give seconds for each of {workloads}")
        cap = xr.DataArray([budgets[w] + 1.0 for w in workloads], dims="workload",
                           coords={"workload": times["workload"].values})
        times = times.where(~np.isposinf(times), cap)
    with np.errstate(divide="ignore", invalid="ignore"):
        logs = np.log(times.sel(algorithm=reference, drop=True) / times)
        out = np.exp(logs.mean("workload", skipna=True))
    return out.rename("speedup").assign_attrs(units="1", reference=reference)
