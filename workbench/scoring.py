"""Scoring: the AlgoPerf score (workbench/algoperf_score.py, re-exported here, where callers
import it from), its bootstrap intervals over studies, and speedups with the one speedup policy.

Intervals are workbench.bootstrap's: each cell's studies resampled with replacement
(BOOTSTRAP_DRAWS draws, seed 0, on every surface) and its one quantile rule (INTERVAL_LEVEL).
A speedup is the geometric mean over workloads of time ratios to a reference (`speedups`,
`speedup_table`); AlgoPerf's imports count a miss as its budget (`uses_budgets`).
"""
from __future__ import annotations

import warnings
from typing import Mapping

import numpy as np
import pandas as pd
import xarray as xr

from workbench.algoperf_score import (NUM_TAUS, SCORE_COLUMNS, TAU_MAX, ScoringConfig, _need,
                                      _with_workloads, apply_rules, benchmark_scores,
                                      exact_scores, held_out_rule, median_over_studies,
                                      performance_profile, performance_ratios, rank_scores,
                                      score_table, score_table_of_times, scored_names,
                                      scored_times, scored_workloads, study_choices,
                                      study_times, time_cutoff, workload_roles,
                                      workload_times)
from workbench.bootstrap import percentile_interval, resample_studies
from workbench.errors import UserError

__all__ = ["ScoringConfig", "study_times", "study_choices", "median_over_studies",
           "workload_times", "scored_workloads", "time_cutoff", "held_out_rule", "apply_rules",
           "scored_times", "performance_ratios", "performance_profile", "benchmark_scores",
           "exact_scores", "score_table", "score_table_of_times", "workload_roles",
           "scored_names", "rank_scores", "TAU_MAX", "NUM_TAUS", "SCORE_COLUMNS",
           "bootstrap_scores", "bootstrap_medians",
           "bootstrap_interval", "studies_per_algorithm", "interval_text",
           "score_table_with_intervals", "with_score_intervals", "all_zero_reason",
           "MIN_STUDIES_FOR_INTERVAL", "BOOTSTRAP_DRAWS", "INTERVAL_LEVEL",
           "speedups", "algoperf_speedups", "uses_budgets",
           "speedup_table", "speedup_table_with_intervals", "ruleset_of", "default_reference",
           "SPEEDUP_COLUMNS"]


def bootstrap_medians(times: xr.DataArray, n: int = 1000, seed: int = 0) -> xr.DataArray:
    """n bootstrap replicates of the per-workload times: dims (replicate, algorithm, workload).

    `times`: study_times (algorithm, workload, study). Each replicate redraws, independently
    for every (algorithm, workload), as many studies as it has, with replacement, and takes
    their median (median_over_studies). Cells are independent, so the replicates of a subset
    of algorithms and workloads are the matching slice.
    """
    if n < 1:
        raise UserError(f"need n >= 1 bootstrap replicates, got {n}")
    _need(times, ("algorithm", "workload", "study"), "study times")
    st = times.transpose("algorithm", "workload", "study")
    draws = resample_studies(st.values, n, np.random.default_rng(seed))
    return st.isel(study=0, drop=True).expand_dims(replicate=n).copy(
        data=_nanmedian_last(draws))


def bootstrap_interval(replicas: xr.DataArray, level: float = 0.9,
                       config: ScoringConfig | None = None) -> pd.DataFrame:
    """Percentile interval (algorithm, low, high; workbench.bootstrap's quantile rule) of the
    score over bootstrap_medians replicates, each scored as score_table scores (same
    `config`)."""
    if not 0 < level < 1:
        raise UserError(f"need 0 < level < 1, got level={level}")
    scores = benchmark_scores(apply_rules(replicas, config).transpose("algorithm", ...))
    low, high = percentile_interval(scores.transpose("replicate", ...).values, level)
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
        raise UserError(f"need 0 < level < 1 and n >= 1, got level={level}, n={n}")
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
            raise UserError(f"budgets lack workloads {lacking}: give seconds for each of {workloads}")
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
        raise UserError(f"the scoring config has no budgets for {lacking}: speedups need the "
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
            raise UserError(f"the scoring config has no budgets for {lacking}")
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
    bootstrap replicates (speedup_replicates), by workbench.bootstrap's quantile rule: no
    interpolation, so an infinite ratio (a miss against a hit) bounds the interval instead of
    making it NaN."""
    if not 0 < level < 1:
        raise UserError(f"need 0 < level < 1, got level={level}")
    faster = 1.0 - speedup_replicates(replicas, reference, config, ruleset, axis).values
    low, high = percentile_interval(faster, level)
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
