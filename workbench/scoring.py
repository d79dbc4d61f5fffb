"""AlgoPerf scoring, exactly as the official scorer computes it, as small pure xarray functions.

The chain (research/algoperf.md sections 5.1, 5.2 and 8):

    final cube (algorithm, workload, study, trial, seed)
      -> study_times: per study, the trial with the smallest eval index at which it first met the
         validation target (among trials tied there, the smallest time to target; then the
         lowest trial number); its training seconds there; +inf if none did
      -> workload_times: median over the studies present (+inf takes part), NaN if none
      -> scored_times: the rules of a ScoringConfig: the v0.5 held-out variant rule (if it
         applies), the 4x cut-off, then the scored (base) workloads only
      -> performance_ratios: time / best time of the workload (+inf or NaN: no credit)
      -> performance_profile: share of workloads with ratio <= tau
      -> benchmark_scores: trapezoid area of the profile on 100 points of tau in [1, 4], / 3

Where the first hit comes from: the run table's `eval_index_to_target` and `time_to_target` (the
FIRST eval whose validation target metric meets the target, by spec.meets; never the best eval)
are computed from the eval rows by workbench.query (_SUMMARY_SQL), and workbench.cubes lays them
out as the final cube this module starts from.

Each step takes and returns xarray objects and keeps any extra dimension (e.g. a bootstrap
`replicate`). Times are training seconds, or wall seconds or steps on a cube whose
time_to_target was moved to that axis (cubes.on_time_axis): every rule applies unchanged on each
axis, and only the budgets of speedups are seconds (uses_budgets). A ScoringConfig says which
workloads are scored and whether the held-out rule applies; the default is the plain rules for
our own studies (the base workloads of the cube, the 4x cut-off, no held-out rule). An import
of AlgoPerf logs records its benchmark version's config in the store (Store.scoring_config).
"""
from __future__ import annotations

import warnings
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any, Mapping

import numpy as np
import pandas as pd
import xarray as xr

from workbench.errors import UserError

__all__ = ["ScoringConfig", "study_times", "study_choices", "median_over_studies",
           "workload_times", "scored_workloads", "time_cutoff", "held_out_rule", "apply_rules",
           "scored_times",
           "performance_ratios", "performance_profile", "benchmark_scores", "exact_scores",
           "score_table", "score_table_of_times", "workload_roles", "bootstrap_scores", "bootstrap_medians",
           "bootstrap_interval", "studies_per_algorithm", "interval_text",
           "score_table_with_intervals", "with_score_intervals", "all_zero_reason",
           "MIN_STUDIES_FOR_INTERVAL", "BOOTSTRAP_DRAWS", "INTERVAL_LEVEL", "scored_names",
           "speedups", "algoperf_speedups", "uses_budgets",
           "speedup_table", "speedup_table_with_intervals", "ruleset_of", "default_reference",
           "rank_scores", "TAU_MAX", "NUM_TAUS",
           "SCORE_COLUMNS", "SPEEDUP_COLUMNS"]

TAU_MAX = 4.0   # ratios above this earn nothing; also the cut-off factor on times
NUM_TAUS = 100  # points of the official tau grid, np.linspace(1, TAU_MAX, NUM_TAUS)


@dataclass(frozen=True)
class ScoringConfig:
    """Which workloads are scored and by which rules (research/algoperf.md sections 5.2 and 8).

    The default is the plain rules: score the cube's base workloads (variant == "base"), apply
    the 4x cut-off, no held-out rule. AlgoPerf v0.5 is `base_workloads` = its 8 workloads,
    `held_out` = its 6 sampled variants and `apply_held_out` = True.
    """

    base_workloads: tuple[str, ...] | None = None   # scored workloads; None: the cube's bases
    held_out: Mapping[str, str] = field(default_factory=dict)  # held-out variant -> its base
    apply_held_out: bool = False                   # the v0.5 held-out variant rule
    budgets: Mapping[str, float] = field(default_factory=dict)  # workload -> budget s (speedups)
    self_tuning_budget_factor: float = 1.0         # self-tuning budget = factor x budget
    benchmark_version: str | None = None           # e.g. "0.5"; informative

    def __post_init__(self) -> None:
        if self.base_workloads is not None:
            object.__setattr__(self, "base_workloads", tuple(self.base_workloads))
        unknown = sorted({b for b in self.held_out.values()} - set(self.base_workloads or ()))
        if self.base_workloads is not None and unknown:
            raise ValueError(f"held-out variants map to {unknown}, which are not base workloads; "
                             f"base workloads are {list(self.base_workloads)}")
        if self.apply_held_out and not self.held_out:
            raise ValueError("apply_held_out needs held_out: {held-out variant: base workload}")

    def restricted(self, shown: list[str], known: list[str]) -> "ScoringConfig":
        """These rules restricted to the `shown` workloads of a store that has runs of the
        `known` ones: scored are the base workloads shown (a base without any run stays, a
        miss for all), held out are their variants."""
        if self.base_workloads is None:
            return self
        bases = tuple(w for w in self.base_workloads if w in shown or w not in known)
        held_out = {v: b for v, b in self.held_out.items() if b in bases}
        return replace(self, base_workloads=bases, held_out=held_out,
                       apply_held_out=self.apply_held_out and bool(held_out))

    def to_dict(self) -> dict[str, Any]:
        """A JSON-safe dict (what Store.write_scoring_config records)."""
        doc = asdict(self)
        doc["held_out"], doc["budgets"] = dict(self.held_out), dict(self.budgets)
        if self.base_workloads is not None:
            doc["base_workloads"] = list(self.base_workloads)
        return doc

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> "ScoringConfig":
        """The config of a dict written by to_dict (keys beginning with "_" are comments)."""
        valid = {f.name for f in fields(cls)}
        unknown = sorted(k for k in doc if k not in valid and not str(k).startswith("_"))
        if unknown:
            raise ValueError(f"unknown scoring config keys {unknown}: valid are {sorted(valid)}")
        return cls(**{k: v for k, v in doc.items() if k in valid})


def _need(obj: xr.Dataset | xr.DataArray, dims: tuple[str, ...], what: str) -> None:
    missing = [d for d in dims if d not in obj.dims]
    if missing:
        raise ValueError(f"{what} lacks dims {missing} (has {list(obj.dims)}); "
                         "build it with workbench.cubes.final_cube")


def _units(values: xr.DataArray) -> str:
    """The units of a time variable: seconds unless it says otherwise (e.g. steps)."""
    return values.attrs.get("units", "s")


def _trials(values: xr.DataArray) -> xr.DataArray:
    """`values` with its trial and seed dims merged into one `_trial` dim (trial-major), by a
    reshape: xarray's stack would build a MultiIndex, the slowest step on a big cube."""
    other = [d for d in values.dims if d not in ("trial", "seed")]
    ordered = values.transpose(*other, "trial", "seed")
    coords = {k: c for k, c in ordered.coords.items() if set(c.dims) <= set(other)}
    data = ordered.values.reshape(ordered.shape[:-2] + (-1,))
    return xr.DataArray(data, dims=(*other, "_trial"), coords=coords, attrs=values.attrs)


def study_times(cube: xr.Dataset) -> xr.DataArray:
    """Per (algorithm, workload, study): the time of the study's chosen trial, in seconds.

    Every (trial, seed) cell is a trial. The chosen trial is the earliest eval index at which
    the target was met; among trials tied there, the smallest time to target; then the lowest
    trial number (then seed). AlgoPerf's scorer takes the first of the tied trials in its
    directory listing (`idxmin`), which differs from one file system to another; the smallest
    time reproduces every published board we hold (docs/algoperf.md). +inf when no trial met
    the target; NaN when the study has no trial at all.
    """
    _need(cube, ("trial", "seed"), "cube")
    time, _, _ = _chosen(cube)
    return time.rename("time_to_target").assign_attrs(units=_units(cube["time_to_target"]))


def _chosen(cube: xr.Dataset) -> tuple[xr.DataArray, xr.DataArray, xr.DataArray]:
    """(the chosen trial's time, its position on the merged trial dim, whether one was chosen)
    per (algorithm, workload, study): AlgoPerf's rule (study_times)."""
    index = _trials(cube["eval_index_to_target"])
    time = _trials(cube["time_to_target"])
    first = index.min("_trial", skipna=True)  # +inf when none reached, NaN when no trial
    tied = (index == first) & np.isfinite(first)  # met the target at the earliest eval index
    found = tied.any("_trial")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # no trial met it: NaN, masked below
        best = time.where(tied).min("_trial", skipna=True)  # the smallest time among them
    fastest = tied & (time == best)
    fastest = fastest | (tied & ~fastest.any("_trial"))  # (no time among them: the tie alone)
    pick = fastest.argmax("_trial")  # then the lowest trial number (trial-major order)
    taken = np.take_along_axis(time.transpose(*pick.dims, "_trial").values,
                               pick.values[..., None], axis=-1)[..., 0]
    chosen_time = pick.copy(data=taken).astype(float).where(found, np.where(
        np.isnan(first), np.nan, np.inf))
    return chosen_time, pick, found


def study_choices(cube: xr.Dataset) -> xr.Dataset:
    """Which trial study_times chose, per (algorithm, workload, study), and how many there were.

    Data vars: time_to_target (s, exactly study_times), trial and seed of the chosen trial and
    its run_id (NaN / "" when no trial met the target), trials (trials the study ran) and
    trials_reached (of them, those that met the target).
    """
    _need(cube, ("trial", "seed"), "cube")
    index = _trials(cube["eval_index_to_target"])
    _, pick, found = _chosen(cube)

    def picked(values: xr.DataArray, fill) -> xr.DataArray:
        stacked = _trials(values).transpose(*pick.dims, "_trial")
        taken = np.take_along_axis(stacked.values, pick.values[..., None], axis=-1)[..., 0]
        return pick.copy(data=taken).where(found, fill)

    trial, seed = xr.broadcast(cube["trial"], cube["seed"], cube["time_to_target"])[:2]
    return xr.Dataset({
        "time_to_target": study_times(cube),
        "trial": picked(trial.astype(float), np.nan),
        "seed": picked(seed.astype(float), np.nan),
        "run_id": picked(cube["run_id"], ""),
        "trials": index.notnull().sum("_trial"),
        "trials_reached": np.isfinite(index).sum("_trial"),
    })


def median_over_studies(times: xr.DataArray) -> xr.DataArray:
    """np.median over the studies present (+inf takes part; NaN marks a missing study)."""
    _need(times, ("study",), "study times")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN cells: no study, stays NaN
        out = times.reduce(np.nanmedian, dim="study")
    return out.rename("time_to_target").assign_attrs(units=_units(times))


def workload_times(cube: xr.Dataset) -> xr.DataArray:
    """Per (algorithm, workload): median over studies of the study times; NaN when no study."""
    return median_over_studies(study_times(cube))


def workload_roles(names: list[str], scored: list[str],
                   config: ScoringConfig | None) -> dict[str, list[str]]:
    """Workloads by role: "scored" (as given), "held_out" (the config's held-out variants among
    `names` that are not scored: inputs of their base's score), "other" (the rest of `names`)."""
    held_out = [w for w in names if config and w in config.held_out and w not in scored]
    other = [w for w in names if w not in scored and w not in held_out]
    return {"scored": scored, "held_out": held_out, "other": other}


def scored_names(config: ScoringConfig | None, cube: xr.Dataset) -> list[str]:
    """The scored workloads that have runs: the benchmark's base workloads when its rules name
    them, else the cube's base workloads (in that order: a comparison draws in it)."""
    names = [str(w) for w in cube["workload"].values]
    bases = config.base_workloads if config and config.base_workloads else \
        scored_workloads(cube)
    return [w for w in bases if w in names]


def scored_workloads(cube: xr.Dataset | xr.DataArray) -> list[str]:
    """The base workloads (variant == "base") of the cube; every workload if none is a base."""
    names = [str(w) for w in cube["workload"].values]
    if "variant" not in cube.coords:
        return names
    base = [w for w, v in zip(names, cube["variant"].values) if v == "base"]
    return base or names


def _with_workloads(times: xr.DataArray, names: list[str]) -> xr.DataArray:
    """`times` on exactly the workloads `names` (NaN where a workload has no results)."""
    times = times.reset_coords(drop=True)  # per-workload labels would not survive the rules
    return times.reindex(workload=names, fill_value=np.nan)


def _best(values: np.ndarray) -> np.ndarray:
    """The best (smallest) finite time of each workload over algorithms, `values` laid out
    (..., algorithm, workload); NaN where no time is finite. Shape (..., 1, workload)."""
    finite = np.where(np.isfinite(values), values, np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # nobody finite: NaN
        return np.nanmin(finite, axis=-2, keepdims=True)


def _laid_out(times: xr.DataArray) -> tuple[xr.DataArray, np.ndarray]:
    """`times` with algorithm and workload last (the NumPy layout of the functions below),
    and its values."""
    _need(times, ("algorithm", "workload"), "times")
    other = [d for d in times.dims if d not in ("algorithm", "workload")]
    ordered = times.transpose(*other, "algorithm", "workload")
    return ordered, ordered.values


def time_cutoff(times: xr.DataArray, factor: float = TAU_MAX) -> xr.DataArray:
    """Every time above `factor` x its workload's best finite time becomes +inf (NaN stays)."""
    ordered, values = _laid_out(times)
    with np.errstate(invalid="ignore"):
        over = values > factor * _best(values)
    return ordered.copy(data=np.where(over, np.inf, values)).transpose(*times.dims)


def _column_of(times: xr.DataArray, pairs: Mapping[str, str]) -> xr.DataArray:
    """For each key workload of `pairs`, the times of its paired workload, labelled by the key."""
    keys = list(pairs)
    return times.sel(workload=[pairs[k] for k in keys]).assign_coords(workload=keys)


def _replace(times: xr.DataArray, columns: xr.DataArray) -> xr.DataArray:
    """`times` with the workloads of `columns` replaced by them."""
    kept = times.drop_sel(workload=columns["workload"].values)
    out = xr.concat([kept, columns.transpose(*times.dims)], dim="workload")
    return out.sel(workload=times["workload"].values).transpose(*times.dims)


def held_out_rule(times: xr.DataArray, held_out: Mapping[str, str],
                  factor: float = TAU_MAX) -> xr.DataArray:
    """AlgoPerf v0.5's held-out variant rule, with the cut-off, on times over all workloads.

    In order: a held-out variant's time is +inf where its base's time is +inf or NaN (so the
    fastest time on a variant is taken over algorithms that are finite on its base); every time
    above `factor` x its workload's best becomes +inf (all workloads); a base's time is +inf
    where its held-out variant's time is +inf or NaN. `held_out`: {variant: base}; every
    workload named must be in `times`.
    """
    if not held_out:
        return time_cutoff(times, factor)
    variants = list(held_out)
    base_ok = np.isfinite(_column_of(times, held_out))
    times = _replace(times, times.sel(workload=variants).where(base_ok, np.inf))
    times = time_cutoff(times, factor)
    variant_of = {b: v for v, b in held_out.items()}
    variant_ok = np.isfinite(_column_of(times, variant_of))
    return _replace(times, times.sel(workload=list(variant_of)).where(variant_ok, np.inf))


def apply_rules(times: xr.DataArray, config: ScoringConfig | None = None,
                cutoff: float = TAU_MAX) -> xr.DataArray:
    """Per-workload times -> the scored times: held-out rule if it applies, the cut-off (4x the
    best time, AlgoPerf's tau_max; a profile drawn further out passes its own), bases.

    The result has exactly the scored workloads (config.base_workloads, else the base
    workloads of `times`), NaN where one has no results, so the profile's denominator is their
    count. Held-out variants without results count as missed (NaN knocks out the base).
    """
    config = config or ScoringConfig()
    base = list(config.base_workloads) if config.base_workloads is not None \
        else scored_workloads(times)
    if config.apply_held_out:
        extra = [v for v in config.held_out if v not in base]
        ruled = held_out_rule(_with_workloads(times, base + extra), config.held_out, cutoff)
    else:
        ruled = time_cutoff(_with_workloads(times, base), cutoff)
    return ruled.sel(workload=base).rename("time_to_target").assign_attrs(units=_units(times))


def scored_times(cube: xr.Dataset, config: ScoringConfig | None = None,
                 cutoff: float = TAU_MAX) -> xr.DataArray:
    """Per-workload times after the scoring rules (apply_rules): what the profile is built from."""
    return apply_rules(workload_times(cube), config, cutoff)


def _ratios(values: np.ndarray) -> np.ndarray:
    """performance_ratios on values laid out (..., algorithm, workload)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = values / _best(values)
    return np.where(np.isposinf(values), np.inf, ratios)


def performance_ratios(times: xr.DataArray) -> xr.DataArray:
    """r = time / the workload's best finite time over algorithms; +inf for a miss, NaN if missing.

    When nobody met a workload's target every ratio is +inf (or NaN where the time is missing).
    """
    ordered, values = _laid_out(times)
    return ordered.copy(data=_ratios(values)).transpose(*times.dims) \
        .rename("performance_ratio").assign_attrs(units="1")


def _num_workloads(times: xr.DataArray, num_workloads: int | None) -> int:
    n = times.sizes["workload"] if num_workloads is None else int(num_workloads)
    if n < 1:
        raise ValueError(f"cannot score over {n} workloads: times has workloads "
                         f"{list(times['workload'].values)}")
    return n


def _profile(ratios: np.ndarray, taus: np.ndarray, n: int) -> np.ndarray:
    """rho on ratios laid out (..., algorithm, workload): shape (..., algorithm, tau)."""
    return (ratios[..., None] <= taus).sum(axis=-2) / n


def _algorithm_dims(ordered: xr.DataArray, last: str | None = None) -> tuple[list[str], dict]:
    """Dims and coords of a result over `ordered`'s dims but workload, algorithm first (then
    `last`, then the others): the layout the scoring functions return."""
    other = [d for d in ordered.dims if d not in ("algorithm", "workload")]
    coords = {k: c for k, c in ordered.coords.items() if "workload" not in c.dims}
    return ["algorithm", *([last] if last else []), *other], coords


def performance_profile(times: xr.DataArray, taus: np.ndarray | None = None,
                        num_workloads: int | None = None) -> xr.DataArray:
    """rho(tau): share of the scored workloads with ratio <= tau; dims (algorithm, tau).

    Default taus: np.linspace(1, 4, 100). The denominator is the number of workloads in `times`
    (or `num_workloads`, e.g. the configured count when some have no results); NaN is a miss.
    """
    n = _num_workloads(times, num_workloads)
    taus = np.linspace(1.0, TAU_MAX, NUM_TAUS) if taus is None else np.asarray(taus, float)
    ordered, values = _laid_out(times)
    rho = np.moveaxis(_profile(_ratios(values), taus, n), -2, 0)  # (algorithm, ..., tau)
    dims, coords = _algorithm_dims(ordered, "tau")
    return xr.DataArray(np.moveaxis(rho, -1, 1), dims=dims, coords={**coords, "tau": taus},
                        name="performance_profile", attrs={"units": "1"})


def benchmark_scores(times: xr.DataArray, tau_max: float = TAU_MAX, num_points: int = NUM_TAUS,
                     num_workloads: int | None = None) -> xr.DataArray:
    """The official score: trapezoid area of rho on linspace(1, tau_max, num_points) / (tau_max - 1)."""
    if tau_max <= 1 or num_points < 2:
        raise ValueError(f"need tau_max > 1 and num_points >= 2, got {tau_max}, {num_points}")
    n = _num_workloads(times, num_workloads)
    taus = np.linspace(1.0, tau_max, num_points)
    ordered, values = _laid_out(times)
    area = np.trapezoid(_profile(_ratios(values), taus, n), x=taus, axis=-1)  # (..., algorithm)
    dims, coords = _algorithm_dims(ordered)
    return xr.DataArray(np.moveaxis(area, -1, 0) / (tau_max - 1.0), dims=dims, coords=coords,
                        name="score", attrs={"units": "1"})


def exact_scores(times: xr.DataArray, tau_max: float = TAU_MAX,
                 num_workloads: int | None = None) -> xr.DataArray:
    """The exact integral of the profile: sum over workloads of max(0, tau_max - r) / ((tau_max-1) n)."""
    n = _num_workloads(times, num_workloads)
    ordered, values = _laid_out(times)
    credit = np.nan_to_num(np.maximum(0.0, tau_max - _ratios(values)), nan=0.0)
    dims, coords = _algorithm_dims(ordered)
    return xr.DataArray(np.moveaxis(credit.sum(axis=-1), -1, 0) / ((tau_max - 1.0) * n),
                        dims=dims, coords=coords, name="exact_score", attrs={"units": "1"})


SCORE_COLUMNS = ("algorithm", "score", "exact_score", "workloads_reached", "workloads_scored")


def rank_scores(table: pd.DataFrame) -> pd.DataFrame:
    """The one order of a score table, everywhere (CLI, dashboard, report): best score first;
    ties by the exact score (higher first), then by algorithm name."""
    return table.sort_values(["score", "exact_score", "algorithm"], ascending=[False, False, True],
                             kind="stable", ignore_index=True)


def _table(times: xr.DataArray) -> pd.DataFrame:
    """Score table of per-workload times (algorithm, workload), best first (rank_scores)."""
    table = pd.DataFrame({
        "algorithm": [str(a) for a in times["algorithm"].values],
        "score": benchmark_scores(times).values,
        "exact_score": exact_scores(times).values,
        "workloads_reached": np.isfinite(times).sum("workload").values.astype(int),
        "workloads_scored": times.sizes["workload"],
    })
    return rank_scores(table)


def score_table(cube: xr.Dataset, config: ScoringConfig | None = None) -> pd.DataFrame:
    """algorithm, score, exact_score, workloads_reached, workloads_scored; best score first.

    workloads_reached counts the scored workloads whose time is finite after the rules.
    """
    return score_table_of_times(workload_times(cube), config)


def score_table_of_times(times: xr.DataArray,
                         config: ScoringConfig | None = None) -> pd.DataFrame:
    """score_table from per-workload times (workload_times of a cube) the caller has already."""
    return _table(apply_rules(times, config).transpose("algorithm", "workload"))


def _resample_studies(times: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """n bootstrap draws of each cell's present studies (NaN padded): shape (n, *times.shape)."""
    ordered = np.sort(times, axis=-1)  # present studies first (NaN sorts last)
    present = np.sum(~np.isnan(times), axis=-1, keepdims=True)
    u = rng.random((n,) + times.shape)
    picks = np.minimum((u * present).astype(np.int64), np.maximum(present - 1, 0))
    draws = np.take_along_axis(np.broadcast_to(ordered, u.shape), picks, axis=-1)
    slot = np.arange(times.shape[-1])
    return np.where(slot < present, draws, np.nan)  # k present studies: k draws


def bootstrap_medians(times: xr.DataArray, n: int = 1000, seed: int = 0) -> xr.DataArray:
    """n bootstrap replicates of the per-workload times: dims (replicate, algorithm, workload).

    `times`: study_times (algorithm, workload, study). Each replicate redraws, independently
    for every (algorithm, workload), as many studies as it has, with replacement, and takes
    their median (median_over_studies). Cells are independent, so the replicates of a subset
    of algorithms and workloads are the matching slice.
    """
    if n < 1:
        raise ValueError(f"need n >= 1 bootstrap replicates, got {n}")
    _need(times, ("algorithm", "workload", "study"), "study times")
    st = times.transpose("algorithm", "workload", "study")
    draws = _resample_studies(st.values, n, np.random.default_rng(seed))
    return st.isel(study=0, drop=True).expand_dims(replicate=n).copy(
        data=_nanmedian_last(draws))


def bootstrap_interval(replicas: xr.DataArray, level: float = 0.9,
                       config: ScoringConfig | None = None) -> pd.DataFrame:
    """Percentile interval (algorithm, low, high) of the score over bootstrap_medians
    replicates, each scored as score_table scores (same `config`)."""
    if not 0 < level < 1:
        raise ValueError(f"need 0 < level < 1, got level={level}")
    scores = benchmark_scores(apply_rules(replicas, config).transpose("algorithm", ...))
    tail = (1.0 - level) / 2
    low, high = np.quantile(scores.transpose("replicate", ...).values, [tail, 1.0 - tail],
                            axis=0)
    return pd.DataFrame({"algorithm": [str(a) for a in scores["algorithm"].values],
                         "low": low, "high": high})


MIN_STUDIES_FOR_INTERVAL = 3  # below this a bootstrap over studies is degenerate or nearly so
# The score and speedup intervals of every surface (workbench.results, `pacebench score`, the
# dashboard, the report): BOOTSTRAP_DRAWS resamplings of the studies, seed 0, INTERVAL_LEVEL.
BOOTSTRAP_DRAWS = 1000
INTERVAL_LEVEL = 0.9


def studies_per_algorithm(times: xr.DataArray) -> pd.Series:
    """Per algorithm: how many studies have a time on at least one workload (study_times)."""
    _need(times, ("algorithm", "workload", "study"), "study times")
    present = times.notnull().any("workload").sum("study")
    return pd.Series(present.values.astype(int), index=[str(a) for a in times.algorithm.values],
                     name="studies")


def interval_text(low: float, high: float, studies: int, digits: int = 3) -> str:
    """'0.612 to 0.701'; 'n/a (2 studies)' when fewer than MIN_STUDIES_FOR_INTERVAL studies
    stand behind it (resampling 1 study always gives it back: 'x to x' would claim certainty)."""
    if studies < MIN_STUDIES_FOR_INTERVAL:
        return f"n/a ({studies} {'study' if studies == 1 else 'studies'})"
    if not (np.isfinite(low) and np.isfinite(high)):
        return "n/a"
    return f"{low:.{digits}f} to {high:.{digits}f}"


def all_zero_reason(table: pd.DataFrame) -> str | None:
    """Why every score of a score_table is 0 and what to change, or None when some is not."""
    if table.empty or (table["score"] > 0).any():
        return None
    reached = int(table["workloads_reached"].max())
    why = ("no algorithm's median study reached the validation target on any scored workload"
           if reached == 0 else "no time is within 4x of the fastest on a scored workload")
    return (f"Every score is 0: {why}, so every performance profile is 0 from tau = 1 to 4. "
            "Look at the Curves (how far from the target the runs ended), then run more "
            "trials per study (--trials), more studies (--studies; the median of one study "
            "that missed is a miss), or the full budget (no --max-steps); `pacebench list` "
            "shows each workload's target and budget.")


def score_table_with_intervals(cube: xr.Dataset, config: ScoringConfig | None = None,
                               n: int = 1000, level: float = 0.9, seed: int = 0,
                               times: xr.DataArray | None = None,
                               replicas: xr.DataArray | None = None) -> pd.DataFrame:
    """score_table plus, per algorithm, its studies, the bootstrap interval of its score over
    them (low, high; NaN below MIN_STUDIES_FOR_INTERVAL studies) and that interval as text.
    `times`, `replicas`: study_times(cube) and bootstrap_medians(times, n, seed), when the
    caller has them already (workbench.results shares them with the speedups)."""
    times = study_times(cube) if times is None else times
    table = score_table_of_times(median_over_studies(times), config)
    if table.empty:
        return table.assign(studies=[], low=[], high=[], interval=[])
    replicas = bootstrap_medians(times, n, seed) if replicas is None else replicas
    return with_score_intervals(table, times, replicas, config, level)


def with_score_intervals(table: pd.DataFrame, times: xr.DataArray, replicas: xr.DataArray,
                         config: ScoringConfig | None = None, level: float = 0.9
                         ) -> pd.DataFrame:
    """A score table (score_table_of_times of `times`' medians, non-empty) with each algorithm's
    studies, the `level` interval of its score over `replicas` (bootstrap_medians of the study
    times `times`; low, high: NaN below MIN_STUDIES_FOR_INTERVAL studies) and that interval as
    text. score_table_with_intervals and the dashboard's leaderboard both make theirs here."""
    studies = studies_per_algorithm(times).reindex(table.algorithm).fillna(0).astype(int).values
    bounds = bootstrap_interval(replicas, level, config)
    low, high = (bounds.set_index("algorithm")[k].reindex(table.algorithm).values
                 for k in ("low", "high"))
    enough = studies >= MIN_STUDIES_FOR_INTERVAL
    return table.assign(studies=studies, low=np.where(enough, low, np.nan),
                        high=np.where(enough, high, np.nan),
                        interval=[interval_text(lo, hi, k)
                                  for lo, hi, k in zip(low, high, studies)])


def bootstrap_scores(cube: xr.Dataset, n: int = 1000, seed: int = 0, level: float = 0.9,
                     config: ScoringConfig | None = None) -> pd.DataFrame:
    """Percentile interval (algorithm, low, high) of the score when studies are resampled.

    Each replicate redraws, independently for every (algorithm, workload), as many studies as it
    has, with replacement, then scores exactly as score_table does (same `config`).
    """
    if not 0 < level < 1 or n < 1:
        raise ValueError(f"need 0 < level < 1 and n >= 1, got level={level}, n={n}")
    return bootstrap_interval(bootstrap_medians(study_times(cube), n, seed), level, config)


def _nanmedian_last(values: np.ndarray) -> np.ndarray:
    """np.nanmedian over the last axis (NaN where a slice is all NaN), computed as numpy does it
    for a short axis, the sum of the sorted slice's two middle values halved (one value twice
    for an odd count), but without its masked arrays and its warning per all-NaN slice: 90,000
    of them in a score of the v0.5 logs, which took most of its time (0.4 of 0.6 s here)."""
    ordered = np.sort(values, axis=-1)  # NaN last
    count = np.sum(~np.isnan(values), axis=-1, keepdims=True)
    high = count // 2
    low = np.where(count % 2 == 1, high, np.maximum(high - 1, 0))
    middle = np.take_along_axis(ordered, np.concatenate([low, high], axis=-1), axis=-1)
    out = np.true_divide(0.0 + middle[..., 0] + middle[..., 1], 2.0)  # numpy's sum starts at +0
    out[count[..., 0] == 0] = np.nan
    return out


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
        raise UserError(f"unknown reference algorithm {reference!r}: valid are {names}")
    if budgets is not None:
        workloads = [str(w) for w in times["workload"].values]
        lacking = [w for w in workloads if w not in budgets]
        if lacking:
            raise ValueError(f"budgets lack workloads {lacking}: give seconds for each of {workloads}")
        cap = xr.DataArray([budgets[w] + 1.0 for w in workloads], dims="workload",
                           coords={"workload": times["workload"].values})
        times = times.where(~np.isposinf(times), cap)
    values = times.transpose("algorithm", "workload").values  # NumPy: small arrays, no alignment
    with np.errstate(divide="ignore", invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # no common workload: NaN
        logs = np.log(values[names.index(reference)][None, :] / values)
        out = np.exp(np.nanmean(logs, axis=1))
    return xr.DataArray(out, dims="algorithm", coords={"algorithm": times["algorithm"].values},
                        name="speedup", attrs={"units": "1", "reference": reference})


def _base_workloads(times: xr.DataArray, config: ScoringConfig | None) -> list[str]:
    """The workloads speedups are taken over: the config's base workloads, else the scored
    workloads of `times` (its bases)."""
    if config is not None and config.base_workloads is not None:
        return list(config.base_workloads)
    return scored_workloads(times)


def _algoperf_faster(times: xr.DataArray, config: ScoringConfig, reference: str,
                     ruleset: str) -> xr.DataArray:
    """AlgoPerf's speedups (see algoperf_speedups) from per-workload times."""
    base = _base_workloads(times, config)
    times = _with_workloads(times, base)
    factor = config.self_tuning_budget_factor if ruleset == "self" else 1.0
    budgets = {w: factor * float(config.budgets[w]) for w in base if w in config.budgets}
    lacking = [w for w in base if w not in budgets]
    if lacking:
        raise ValueError(f"the scoring config has no budgets for {lacking}: speedups need the "
                         "runtime budget of every base workload")
    times = times.fillna(np.inf)  # no results: a miss
    ratio = speedups(times, reference, budgets)  # gmean of t(reference) / t(algorithm)
    return (1.0 - 1.0 / ratio).rename("faster_by").assign_attrs(units="1", reference=reference)


def algoperf_speedups(cube: xr.Dataset, config: ScoringConfig, reference: str,
                      ruleset: str = "external") -> xr.DataArray:
    """AlgoPerf's speedups: 1 - gmean over base workloads of t(algorithm) / t(reference).

    As compute_speedups (research/algoperf.md 5.2 item 10): medians over studies without the
    held-out rule or the cut-off; a miss, and a workload without results, counts as the
    workload's budget + 1 s (the budget x config.self_tuning_budget_factor for the self-tuning
    ruleset). 0.279 means 27.9 % less time than the reference. (Counting a workload without
    results as a miss is what reproduces the published v0.5 speedups of CASPR Adaptive, 24.3 %,
    and Schedule Free Prodigy, -15.7 %, which have no Criteo runs.)
    """
    return _algoperf_faster(workload_times(cube), config, reference, ruleset)


# -- the one speedup policy --------------------------------------------------------------------
SPEEDUP_COLUMNS = ("algorithm", "faster_by", "time_ratio")


def uses_budgets(config: ScoringConfig | None, scored: list[str],
                 axis: str = "train_seconds") -> bool:
    """Whether speedups follow AlgoPerf's rule (misses cost the budget + 1 s): the store's rules
    give a budget for every scored workload, and times are training seconds."""
    return (config is not None and bool(scored) and axis == "train_seconds"
            and all(w in config.budgets for w in scored))


def speedup_table(times: xr.DataArray, reference: str, config: ScoringConfig | None = None,
                  ruleset: str = "external", axis: str = "train_seconds") -> pd.DataFrame:
    """Speedups over `reference` (SPEEDUP_COLUMNS, in the order of `times`' algorithms), the one
    policy of the CLI, the dashboard and the report. `times`: per-workload times (algorithm,
    workload; workload_times), on `axis` ("train_seconds", "wall_seconds" or "step").

    time_ratio is the geometric mean over the scored workloads (the config's base workloads,
    else the bases of `times`) of t(algorithm) / t(reference); faster_by = 1 - time_ratio
    (0.279: 27.9 % less time). When uses_budgets, a miss counts as the workload's budget + 1 s
    (AlgoPerf's compute_speedups, algoperf_speedups); otherwise workloads that both missed or
    where either has no result are left out, and a miss against a hit gives an infinite (or
    zero) ratio. `attrs["budgets"]` of the table says whether the budgets were used.
    """
    scored = _base_workloads(times, config)
    budgets = uses_budgets(config, scored, axis)
    if budgets:
        ratio = 1.0 - _algoperf_faster(times, config, reference, ruleset)
    else:
        shown = times.sel(workload=[w for w in scored if w in times["workload"].values])
        with np.errstate(divide="ignore"):
            ratio = 1.0 / speedups(shown, reference)
    table = pd.DataFrame({"algorithm": [str(a) for a in ratio["algorithm"].values],
                          "faster_by": 1.0 - ratio.values, "time_ratio": ratio.values})
    table.attrs["budgets"] = budgets  # which rule gave the ratios
    return table


def speedup_replicates(replicas: xr.DataArray, reference: str,
                       config: ScoringConfig | None = None, ruleset: str = "external",
                       axis: str = "train_seconds") -> xr.DataArray:
    """time_ratio of speedup_table for every bootstrap replicate of the per-workload times
    (bootstrap_medians: dims replicate, algorithm, workload), computed at once: dims
    (replicate, algorithm). The same policy as speedup_table, replicate by replicate."""
    _need(replicas, ("replicate", "algorithm", "workload"), "replicates")
    names = [str(a) for a in replicas["algorithm"].values]
    if reference not in names:
        raise UserError(f"unknown reference algorithm {reference!r}: valid are {names}")
    scored = _base_workloads(replicas, config)
    if uses_budgets(config, scored, axis):
        factor = config.self_tuning_budget_factor if ruleset == "self" else 1.0
        lacking = [w for w in scored if w not in config.budgets]
        if lacking:
            raise ValueError(f"the scoring config has no budgets for {lacking}")
        times = _with_workloads(replicas, scored).fillna(np.inf)
        caps = np.array([factor * float(config.budgets[w]) + 1.0 for w in scored])
        values = times.transpose("replicate", "algorithm", "workload").values
        values = np.where(np.isposinf(values), caps[None, None, :], values)
    else:
        present = [w for w in scored if w in replicas["workload"].values]
        values = replicas.sel(workload=present).transpose(
            "replicate", "algorithm", "workload").values
    with np.errstate(divide="ignore", invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # no common workload: NaN
        logs = np.log(values / values[:, [names.index(reference)], :])
        ratio = np.exp(np.nanmean(logs, axis=-1))
    return xr.DataArray(ratio, dims=("replicate", "algorithm"),
                        coords={"algorithm": replicas["algorithm"].values}, name="time_ratio")


def speedup_interval(replicas: xr.DataArray, reference: str, config: ScoringConfig | None = None,
                     ruleset: str = "external", axis: str = "train_seconds",
                     level: float = 0.9) -> pd.DataFrame:
    """Percentile interval (algorithm, low, high) of faster_by (1 - time_ratio) over the
    bootstrap replicates (speedup_replicates). Quantiles are taken without interpolation, so
    an infinite ratio (a miss against a hit) bounds the interval instead of making it NaN."""
    if not 0 < level < 1:
        raise ValueError(f"need 0 < level < 1, got level={level}")
    faster = 1.0 - speedup_replicates(replicas, reference, config, ruleset, axis).values
    tail = (1.0 - level) / 2
    low, high = np.quantile(faster, [tail, 1.0 - tail], axis=0, method="inverted_cdf")
    return pd.DataFrame({"algorithm": [str(a) for a in replicas["algorithm"].values],
                         "low": low, "high": high})


def speedup_table_with_intervals(times: xr.DataArray, study: xr.DataArray,
                                 replicas: xr.DataArray, reference: str,
                                 config: ScoringConfig | None = None, ruleset: str = "external",
                                 axis: str = "train_seconds", level: float = 0.9
                                 ) -> pd.DataFrame:
    """speedup_table over `reference` indexed by algorithm (faster_by, time_ratio), with the
    `level` bootstrap interval of faster_by over `replicas` (bootstrap_medians of the study
    times `study`; low, high: NaN below MIN_STUDIES_FOR_INTERVAL studies of the algorithm or of
    the reference) and `studies`, the fewer of the two. `times`: median_over_studies(study).
    `attrs["budgets"]`: whether misses cost the budget (speedup_table). What `pacebench score`
    and the dashboard's speedups both show."""
    speedup = speedup_table(times, reference, config, ruleset, axis)
    frame = speedup.set_index("algorithm")
    bounds = speedup_interval(replicas, reference, config, ruleset, axis,
                              level).set_index("algorithm")
    studies = studies_per_algorithm(study)
    fewer = studies.clip(upper=studies.get(reference, 0))  # the fewer of its and the reference's
    enough = (fewer >= MIN_STUDIES_FOR_INTERVAL).reindex(bounds.index, fill_value=False)
    frame["low"] = bounds["low"].where(enough)
    frame["high"] = bounds["high"].where(enough)
    frame["studies"] = fewer.reindex(frame.index).fillna(0).astype(int)
    frame.attrs["budgets"] = speedup.attrs["budgets"]
    return frame


def ruleset_of(rulesets) -> str:
    """The AlgoPerf ruleset of runs with these rulesets: "self" or "external" (external when
    mixed or unknown), which sets the self-tuning budget factor of speedups."""
    found = {r for r in rulesets if isinstance(r, str)}
    return found.pop() if len(found) == 1 else "external"


DEFAULT_REFERENCES = ("baseline", "adamw")  # the default reference: the first present


def default_reference(algorithms: list[str], preferred: tuple[str, ...] = DEFAULT_REFERENCES
                      ) -> str | None:
    """The reference of speedups when none is chosen, the same on every surface (`score`,
    `report`, the dashboard): the first of `preferred` present ("baseline", else "adamw"),
    else the first name in sorted order; None when there are none. Never the top scorer: a
    reference that follows the scores changes between runs of one study."""
    if not algorithms:
        return None
    for name in preferred:
        if name in algorithms:
            return name
    return sorted(algorithms)[0]
