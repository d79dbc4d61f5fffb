"""The AlgoPerf score, exactly as the official scorer computes it, as small pure xarray functions
(workbench.scoring adds its intervals and speedups, and is where callers import all of it from).

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
FIRST eval whose validation target metric meets the target; never the best eval: the rule of
workbench.outcomes) are computed from the eval rows by workbench.query (_SUMMARY_SQL, checked
against that rule), and workbench.cubes lays them out as the final cube this module starts from.

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

__all__ = ["ScoringConfig", "study_times", "study_choices", "median_over_studies", "workload_times",
           "scored_workloads", "time_cutoff", "held_out_rule", "apply_rules", "scored_times",
           "performance_ratios", "performance_profile", "benchmark_scores", "exact_scores", "score_table",
           "score_table_of_times", "workload_roles", "scored_names", "rank_scores", "TAU_MAX",
           "NUM_TAUS", "SCORE_COLUMNS"]

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
            raise UserError(f"held-out variants map to {unknown}, which are not base workloads; "
                            f"base workloads are {list(self.base_workloads)}")
        if self.apply_held_out and not self.held_out:
            raise UserError("apply_held_out needs held_out: {held-out variant: base workload}")

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
            raise UserError(f"unknown scoring config keys {unknown}: valid are {sorted(valid)}")
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
    per (algorithm, workload, study): AlgoPerf's rule (study_times). In NumPy on the merged
    trial axis (the same steps in xarray took 20 ms on the v0.5 cube, called per comparison)."""
    index = _trials(cube["eval_index_to_target"])
    time = _trials(cube["time_to_target"]).transpose(*index.dims)
    steps, seconds = index.values.astype(float), time.values.astype(float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a cell without any trial: NaN
        first = np.nanmin(steps, axis=-1)  # +inf when none reached, NaN when no trial
        tied = (steps == first[..., None]) & np.isfinite(first)[..., None]  # at the earliest
        best = np.nanmin(np.where(tied, seconds, np.nan), axis=-1)  # the smallest time there
    found = tied.any(axis=-1)
    fastest = tied & (seconds == best[..., None])
    fastest |= tied & ~fastest.any(axis=-1)[..., None]  # (no time among them: the tie alone)
    pick = fastest.argmax(axis=-1)  # then the lowest trial number (trial-major order)
    taken = np.take_along_axis(seconds, pick[..., None], axis=-1)[..., 0]
    chosen = np.where(found, taken, np.where(np.isnan(first), np.nan, np.inf))
    dims = index.dims[:-1]
    coords = {k: c for k, c in index.coords.items() if "_trial" not in c.dims}

    def cells(values: np.ndarray) -> xr.DataArray:
        return xr.DataArray(values, dims=dims, coords=coords)
    return cells(chosen), cells(pick), cells(found)


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


def held_out_rule(times: xr.DataArray, held_out: Mapping[str, str],
                  factor: float = TAU_MAX) -> xr.DataArray:
    """AlgoPerf v0.5's held-out variant rule, with the cut-off, on times over all workloads.

    In order: a held-out variant's time is +inf where its base's time is +inf or NaN (so the
    fastest time on a variant is taken over algorithms that are finite on its base); every time
    above `factor` x its workload's best becomes +inf (all workloads); a base's time is +inf
    where its held-out variant's time is +inf or NaN (of two variants of one base, the last
    named). `held_out`: {variant: base}; every workload named must be in `times`.
    """
    if not held_out:
        return time_cutoff(times, factor)
    ordered, values = _laid_out(times)  # NumPy by position: xarray's label ops were most of it
    where = {str(w): i for i, w in enumerate(ordered["workload"].values)}
    missing = [w for w in (*held_out, *held_out.values()) if w not in where]
    if missing:
        raise KeyError(f"held-out rule: workload {missing[0]!r} is not in the times")
    variants = [where[v] for v in held_out]
    bases = [where[b] for b in held_out.values()]
    values = values.copy()
    values[..., variants] = np.where(np.isfinite(values[..., bases]), values[..., variants],
                                     np.inf)
    with np.errstate(invalid="ignore"):
        values = np.where(values > factor * _best(values), np.inf, values)
    variant_of = {where[b]: where[v] for v, b in held_out.items()}
    bases, variants = list(variant_of), list(variant_of.values())
    values[..., bases] = np.where(np.isfinite(values[..., variants]), values[..., bases], np.inf)
    return ordered.copy(data=values).transpose(*times.dims)


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
        raise UserError(f"cannot score over {n} workloads: times has workloads "
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
        raise UserError(f"need tau_max > 1 and num_points >= 2, got {tau_max}, {num_points}")
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
