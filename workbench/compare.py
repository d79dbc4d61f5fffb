"""Head to head: is algorithm A faster than B, by how much, and how sure can we be?

The input is a store's study times (`scoring.study_times`): per algorithm, workload and study, the
time of the study's chosen trial (AlgoPerf's trial rule: the trial that met the target at the
smallest eval index, among trials tied there the smallest time, then the lowest trial number;
`study_times_by(..., "fastest")` takes the trial with the smallest time),
+inf when no trial of the study reached the target, NaN when there is no such study. Each
algorithm's studies on a workload are a sample of what one tuning study of it gives; two
algorithms' studies are independent samples.

- **Misses.** A miss is not a time: it is "more than the budget". The test below uses ranks only,
  where a miss ranks after every hit and ties with every other miss, so no number is made up.
  Ratios need numbers: there a miss (and only a miss: hits are never shortened) counts as the
  workload's budget (`budgets`: the longest any run on it trained, or an import's budget times
  the ruleset's factor, miss_budgets), and never less than the longest hit on the workload, a
  lower bound on its time, so a ratio involving misses is a bound towards 1.
- **Per workload**: the ratio of B's median study time to A's (> 1: A faster), with a percentile
  bootstrap interval that redraws each side's studies independently, from the exact bootstrap
  distribution (every multiset of draws, weighted by its share of the ordered resamples) while
  a side has at most EXACT_BOOTSTRAP of them, else Monte Carlo. Trials within a study are
  not redrawn: a study's time is (near) the best of its trials, and a bootstrap of a minimum is
  biased towards the slower side.
- **Overall**: the speedup of A over B, the geometric mean over workloads of those ratios, with a
  bootstrap that redraws studies within each workload (stratified; exact while the workloads'
  combinations number at most EXACT_BOOTSTRAP); the probability of improvement, the mean over
  workloads of P(a study of A is faster than a study of B), from all pairs of studies with ties
  counted half (rliable's definition, the Mann-Whitney statistic; a workload both sides missed
  in every study is all ties, 1/2); and the one-sided p-value of "A is faster than B": an exact
  stratified permutation test of that statistic (studies' labels permuted within each
  workload), so it is calibrated for any number of studies and any pattern of misses.
- **Verdict**: "<A> faster" when the one-sided p-value for A is at most (1 - confidence) / 2
  (the level read exactly as the decimal written: half_alpha, reaches), "<B> faster" when that
  of B is, else "no difference shown": a two-sided test at level 1 - confidence, so with no
  true difference it errs at most that often. The sentence names the winner (or the side the
  estimate favours) first, with its speedup above 1. When the smallest p-value the design can
  give (smallest_p_value) cannot reach the level, it says so and how many studies could
  (studies_to_reach); the studies needed to detect `detect` are estimated
  (workbench.power.studies_needed, the one power model) from the observed spread of log study
  times, or from the workloads' noise floors when there are too few studies to measure one.
Workloads where either side has no study are left out (and said), except with `absent_is_miss`
(an imported AlgoPerf store), where the absent side counts as missed in each of its studies, as
AlgoPerf's scorer counts a workload without results; workloads where both sides missed every
study carry no information on speed and are reported but left out of the speedup and the test.

`compare_runs` makes the whole head-to-head of a store's run table, as `pacebench compare` prints
it: the comparison on a time axis (training seconds, wall seconds or steps: cubes.on_time_axis),
a miss counting as the longest any run trained in that unit (`miss_budgets`), plus
- **the verdict by steps**, the same comparison on steps to target, always given. It may differ
  from the verdict in seconds (an algorithm whose steps cost more); then each side's cost per
  step (`seconds_per_step`) says by how much;
- **the machine-speed check** (`machine_speed_warnings`): every run times a fixed probe
  (`probe_seconds`); when the two sides' probes on a workload differ (geometric means) by more
  than its noise floor and by more than chance (a permutation test), the machine was not the
  same speed for both, and a verdict in seconds or wall seconds is withheld ("no difference
  shown"). Nothing else withholds a verdict; steps do not
  depend on the machine's speed;
- **fairness**: each side's search space, its origin and its trials per study (`fairness`);
  the tuning report (workbench/tuning.py: `tuning`, `fair_tuning`, `tuning_warnings`,
  `tuning_runs`), whose warnings include the one given when A's median steps to target on a
  workload exceed its tuned record's by more than the workload's noise floor
  (`under_tuned_warnings`).
"""
from __future__ import annotations

import json
import math
import warnings
from dataclasses import replace
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import pandas as pd
import xarray as xr

from workbench import records as R
from workbench import tuning as T
from workbench.bootstrap import (EXACT_BOOTSTRAP, difference_distribution, mean_distribution,
                                 percentile_interval)
from workbench.comparison import (NO_DIFFERENCE, Comparison, WorkloadComparison,  # noqa: F401
                                  _x, comparison_table, level_text)
from workbench.cubes import axis_column, axis_name, on_time_axis
from workbench.errors import UserError
from workbench.permutation import mean_difference_pvalue, permutation_pvalues, wins2
from workbench.power import (DEFAULT_CONFIDENCE, DEFAULT_DETECT, P_TOLERANCE, half_alpha,
                             reaches, smallest_p_value, studies_needed, studies_to_reach)
from workbench.scoring import (MIN_STUDIES_FOR_INTERVAL, ruleset_of, study_times,
                               uses_budgets)

__all__ = ["WorkloadComparison", "Comparison", "compare", "check_pair", "comparison_table",
           "workload_budgets", "miss_budgets", "seconds_per_step", "machine_speed_warnings",
           "compare_runs",
           "permutation_pvalues", "DEFAULT_CONFIDENCE", "DEFAULT_DETECT", "DEFAULT_SPEED_FLOOR",
           "NO_DIFFERENCE", "STUDY_TIME_RULES", "study_times_by", "under_tuned_warnings",
           "fairness", "fairness_lines", "half_alpha", "reaches", "smallest_p_value",
           "studies_to_reach", "P_TOLERANCE", "EXACT_BOOTSTRAP", "level_text"]

MIN_STUDIES_FOR_VERDICT = 2  # a side with fewer studies on a workload is out of its verdict
BOOTSTRAP_REPLICATES = 4000
DEFAULT_SPEED_FLOOR = T.DEFAULT_NOISE_FLOOR  # machine-speed check: the floor of a workload
                                            # without a noise floor (10 %)
# Run-table column of the total a run trained, per time axis (what a miss counts as in ratios).
_TRAINED = {"train_seconds": "train_seconds", "wall_seconds": "wall_seconds", "step": "steps"}


def workload_budgets(runs: pd.DataFrame, axis: str = "train_seconds") -> dict[str, float]:
    """Per workload, the time a miss counts as in ratios on `axis` (cubes.axis_column): the
    longest any of its runs trained in that unit (train_seconds, wall_seconds or steps; a run
    that misses trains until its budget, of seconds or of steps, runs out)."""
    column = _TRAINED[axis_column(axis)]
    trained = pd.to_numeric(runs[column], errors="coerce").astype(float)
    longest = trained.groupby(runs["workload"].to_numpy(object)).max()
    return {str(w): float(v) for w, v in longest.items() if math.isfinite(v) and v > 0}


def miss_budgets(runs: pd.DataFrame, axis: str = "train_seconds", config=None
                 ) -> dict[str, float]:
    """workload_budgets on `axis`, and an imported benchmark's budgets (`config`, a
    scoring.ScoringConfig, in training seconds) where scoring.uses_budgets says they apply:
    on the training-seconds axis only, never as a count of steps or of wall seconds. A
    self-tuning store's budgets are the recorded budget times the config's
    self_tuning_budget_factor (AlgoPerf gives self-tuning runs that much more time), as in
    AlgoPerf's speedups (scoring.algoperf_speedups)."""
    column = axis_column(axis)
    budgets = workload_budgets(runs, column)
    if config is not None:
        rules = runs["ruleset"] if "ruleset" in runs.columns else []
        factor = (config.self_tuning_budget_factor if ruleset_of(rules) == "self" else 1.0)
        budgets.update({w: factor * float(b) for w, b in config.budgets.items()
                        if uses_budgets(config, [w], column)})
    return budgets


# -- ratios and their bootstrap -----------------------------------------------------------------
def _at_budget(times: np.ndarray, cap: float) -> np.ndarray:
    """Study times with each miss (+inf) at `cap`; hits are never shortened. A hit longer than
    `cap` (a run may overrun its budget by part of an eval) lifts the misses to it, so a miss
    never counts as faster than a hit."""
    hits = times[np.isfinite(times)]
    level = max(cap, float(hits.max())) if hits.size else cap
    return np.where(np.isinf(times), level, times)


def _interval(dist: tuple[np.ndarray, np.ndarray], confidence: float) -> tuple[float, float]:
    """Percentile interval of a log-ratio distribution (workbench.bootstrap's rule), as ratios."""
    low, high = percentile_interval(dist[0], confidence, probs=dist[1])
    return math.exp(float(low)), math.exp(float(high))


def _log_spread(a: np.ndarray, b: np.ndarray) -> float | None:
    """Pooled variance of log study times within each side (misses at the budget)."""
    if len(a) < 2 or len(b) < 2:
        return None
    la, lb = np.log(a), np.log(b)
    return float(((len(a) - 1) * la.var(ddof=1) + (len(b) - 1) * lb.var(ddof=1))
                 / (len(a) + len(b) - 2))


def _present(times: xr.DataArray, algorithm: str, workload: str) -> np.ndarray:
    values = times.sel(algorithm=algorithm, workload=workload).values.astype(float)
    return values[~np.isnan(values)]


def check_pair(times: xr.DataArray, a: str, b: str) -> None:
    """ValueError unless `a` and `b` are two different algorithms of `times`."""
    names = [str(x) for x in times["algorithm"].values]
    for name in (a, b):
        if name not in names:
            raise UserError(f"unknown algorithm {name!r}: the store has {', '.join(names)}")
    if a == b:
        raise UserError(f"compare two different algorithms, got {a!r} twice")


def compare(times: xr.DataArray, a: str, b: str, workloads: Sequence[str] | None = None,
            budgets: Mapping[str, float] | None = None, confidence: float = DEFAULT_CONFIDENCE,
            detect: float = DEFAULT_DETECT, noise_cov: Mapping[str, float] | None = None,
            replicates: int = BOOTSTRAP_REPLICATES, seed: int = 0, *,
            absent_is_miss: bool = False) -> Comparison:
    """A head-to-head comparison of `a` and `b` (see the module doc) from study times
    (algorithm, workload, study). `budgets`: what a miss counts as in ratios, per workload
    (default: the largest finite study time on it, over every algorithm); `noise_cov`: the
    workloads' noise floors (CoV), used for `studies_needed` when the studies are too few.
    `absent_is_miss`: a workload where one side has no study counts as missed in each of that
    side's studies (as many as it has on its other workloads), as AlgoPerf's scorer counts a
    workload without results (imported AlgoPerf stores); otherwise it is left out. Either way
    the result says so (`counted_as_missed`, `left_out`)."""
    if not 0 < confidence < 1:
        raise UserError(f"confidence must be in (0, 1), got {confidence}")
    if not detect > 1:
        raise UserError(f"the speedup to detect must be > 1 (e.g. 1.25), got {detect}")
    check_pair(times, a, b)
    available = [str(w) for w in times["workload"].values]
    chosen = list(workloads) if workloads else available
    unknown = [w for w in chosen if w not in available]
    if unknown:
        raise UserError(f"unknown workloads {unknown}: the store has {', '.join(available)}")
    rng = np.random.default_rng(seed)
    rows, left_out, counted, samples, parts, spreads = [], {}, {}, [], [], []
    exact = True
    for w in chosen:
        ta, tb = _present(times, a, w), _present(times, b, w)
        if len(ta) == 0 or len(tb) == 0:
            absent = a if len(ta) == 0 else b
            n = _studies_of(times, absent)
            if not absent_is_miss or len(ta) + len(tb) == 0 or n == 0:
                left_out[w] = f"no study of {absent}" + (
                    "" if absent_is_miss else "; a store of our own leaves such a workload "
                    "out, where AlgoPerf's scorer (imported stores) counts it as missed")
                continue
            ta, tb = (np.full(n, np.inf), tb) if len(ta) == 0 else (ta, np.full(n, np.inf))
            counted[w] = (f"no run of {absent} on {w}: counted as missed in each of its {n} "
                          "studies, as AlgoPerf's scorer counts a workload without results")
        row, dist, spread = _workload(w, a, b, ta, tb, _budget(times, w, budgets), confidence,
                                      replicates, rng)
        rows.append(row)
        if dist is None:  # both always missed, or too few studies for the verdict
            continue
        exact = exact and dist[2]
        samples.append((ta, tb))
        parts.append(dist[:2])
        if spread is None and noise_cov and math.isfinite(noise_cov.get(w, math.nan)):
            spread = math.log1p(noise_cov[w] ** 2)
        spreads.append(spread)
    result = _overall(a, b, rows, samples, parts, spreads, left_out, confidence, detect, seed,
                      replicates, rng, exact)
    return replace(result, counted_as_missed=counted)


def _studies_of(times: xr.DataArray, algorithm: str) -> int:
    """The most studies `algorithm` has on any workload of `times`."""
    mine = times.sel(algorithm=algorithm)
    return int(mine.notnull().sum("study").max()) if mine.size else 0


def _workload(w: str, a: str, b: str, ta: np.ndarray, tb: np.ndarray, cap: float,
              confidence: float, replicates: int, rng: np.random.Generator
              ) -> tuple[WorkloadComparison, tuple | None, float | None]:
    """One workload's row, the bootstrap distribution of log(median B / median A) (values,
    probabilities, whether exact) and the pooled log spread; the distribution None when the
    workload stays out of the test (both sides always missed, or a side has fewer than
    MIN_STUDIES_FOR_VERDICT studies)."""
    miss_a, miss_b = int(np.isinf(ta).sum()), int(np.isinf(tb).sum())
    if miss_a == len(ta) and miss_b == len(tb):  # every pair of studies ties: P = 1/2 (rliable)
        return WorkloadComparison(w, None, None, None, len(ta), len(tb), miss_a, miss_b, 0.5,
                                  "both missed the target in every study"), None, None
    ca, cb = _at_budget(ta, cap), _at_budget(tb, cap)
    ratio = float(np.median(cb) / np.median(ca))
    dist = difference_distribution(ca, cb, replicates, rng)
    low = high = None
    fewest = min(len(ta), len(tb))
    note = ""
    if fewest >= MIN_STUDIES_FOR_INTERVAL:
        low, high = _interval(dist[:2], confidence)
    else:
        note = (f"no interval: {fewest} {'study' if fewest == 1 else 'studies'} on one side "
                f"(needs {MIN_STUDIES_FOR_INTERVAL})")
    poi = wins2(ta, tb) / (2 * len(ta) * len(tb))
    if fewest < MIN_STUDIES_FOR_VERDICT:
        few = a if len(ta) < len(tb) else b
        note = (f"out of the verdict: {fewest} {'study' if fewest == 1 else 'studies'} of {few} "
                f"(a verdict needs {MIN_STUDIES_FOR_VERDICT} a side)")
        return WorkloadComparison(w, ratio, low, high, len(ta), len(tb), miss_a, miss_b, poi,
                                  note), None, None
    return (WorkloadComparison(w, ratio, low, high, len(ta), len(tb), miss_a, miss_b, poi, note),
            dist, _log_spread(ca, cb))


def _budget(times: xr.DataArray, workload: str, budgets: Mapping[str, float] | None) -> float:
    if budgets and workload in budgets:
        return float(budgets[workload])
    values = times.sel(workload=workload).values.astype(float)
    finite = values[np.isfinite(values)]
    return float(finite.max()) if finite.size else 1.0


def _design(sizes: Sequence[tuple[int, int]]) -> str:
    """The design in words: "3 + 3 studies" (on each of W workloads), else "these studies"."""
    kinds = set(sizes)
    if len(kinds) != 1:
        return f"these studies on {len(sizes)} workloads"
    (x, y), = kinds
    return f"{x} + {y} studies" + (f" on each of {len(sizes)} workloads" if len(sizes) > 1
                                   else "")


def _overall(a, b, rows, samples, parts, spreads, left_out, confidence, detect, seed,
             replicates, rng, exact) -> Comparison:
    scored = [r for r in rows if r.ratio is not None]
    judged = [r.probability_of_improvement for r in rows
              if r.probability_of_improvement is not None]
    poi = float(np.mean(judged)) if judged else None  # both-always-missed workloads count 1/2
    if not scored:
        return Comparison(a, b, NO_DIFFERENCE, confidence, None, None, None, None, None,
                          poi, None, detect, rows, left_out, "no workload with a time")
    speedup = math.exp(float(np.mean([math.log(r.ratio) for r in scored])))
    if not samples:  # every workload has fewer than 2 studies on a side: no test can decide
        return Comparison(a, b, NO_DIFFERENCE, confidence, speedup, None, None, None,
                          None, poi, None, detect, rows, left_out,
                          f"no verdict: fewer than {MIN_STUDIES_FOR_VERDICT} studies a side on "
                          "every workload")
    low = high = None
    interval_method = ""
    if all(r.low is not None for r in scored) and len(parts) == len(scored):
        dist, whole = mean_distribution(parts, replicates, rng)
        low, high = _interval(dist, confidence)
        interval_method = ("exact bootstrap (every resample)" if exact and whole else
                           f"bootstrap, {replicates} Monte Carlo replicates")
    p_a, p_b, method = permutation_pvalues(samples, seed)
    verdict = (f"{a} faster" if reaches(p_a, confidence) else
               f"{b} faster" if reaches(p_b, confidence) else NO_DIFFERENCE)
    needed = None
    if verdict == NO_DIFFERENCE and all(s is not None for s in spreads):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            needed = studies_needed(float(np.mean(spreads)), len(spreads), detect,
                                    confidence)
    sizes = [(len(x), len(y)) for x, y in samples]
    return Comparison(a, b, verdict, confidence, speedup, low, high, p_a, p_b, poi, needed,
                      detect, rows, left_out, method, float(smallest_p_value(sizes)),
                      interval_method=interval_method, design=_design(sizes),
                      studies_to_reach=studies_to_reach(sizes, confidence))


def _of(runs: pd.DataFrame, algorithm: str, workload: str, column: str) -> np.ndarray:
    """`column` of the runs of `algorithm` on `workload`, as floats, the finite positive ones."""
    mine = ((runs["algorithm"] == algorithm) & (runs["workload"] == workload)).to_numpy(bool)
    # the one column taken, not every column of the rows (the run table has dozens)
    values = pd.to_numeric(runs[column][mine], errors="coerce").to_numpy(float, na_value=np.nan)
    return values[np.isfinite(values) & (values > 0)]


def seconds_per_step(runs: pd.DataFrame, a: str, b: str, workloads: Sequence[str]
                     ) -> tuple[dict[str, float | None], float | None]:
    """({a: s, b: s}, ratio a / b): each side's training seconds per step, the median over its
    finished runs (records.DONE_STATUSES) of train_seconds / steps on each workload, then the
    geometric mean over those of `workloads` where both sides have one (None: no such workload)."""
    done = runs.loc[runs["status"].isin(R.DONE_STATUSES).to_numpy(bool),
                    ["algorithm", "workload", "train_seconds", "steps"]]
    done = done.assign(_per_step=pd.to_numeric(done["train_seconds"], errors="coerce")
                       / pd.to_numeric(done["steps"], errors="coerce").astype(float))
    logs: dict[str, list[float]] = {a: [], b: []}
    for w in workloads:
        medians = {x: _of(done, x, w, "_per_step") for x in (a, b)}
        if all(len(v) for v in medians.values()):
            for x, values in medians.items():
                logs[x].append(math.log(float(np.median(values))))
    if not logs[a]:
        return {a: None, b: None}, None
    cost = {x: math.exp(float(np.mean(v))) for x, v in logs.items()}
    return cost, cost[a] / cost[b]


SPEED_LEVEL = 0.05  # the machine-speed check warns only on a difference this unlikely by chance


def machine_speed_warnings(runs: pd.DataFrame, a: str, b: str, workloads: Sequence[str],
                           noise_cov: Mapping[str, float] | None = None) -> dict[str, str]:
    """{workload: a one-line warning} for each of `workloads` where the machine's speed differed
    between the two sides: the geometric means of `probe_seconds` over a's runs and over b's
    (the runs that have one, at least 2 on each side; else no check) differ by more than the
    workload's noise floor (`noise_cov`, a CoV; DEFAULT_SPEED_FLOOR where it has none or it is
    NaN, which the line says), and by more than chance: a permutation test of the log probes
    gives p <= SPEED_LEVEL. (Under the interleaved launch order both sides meet the same mix of
    loaded and quiet stretches, and a median of such a mix jumps between its two modes: a null
    study under a load for its first half gave medians 1.22x apart with means alike.) The
    ratio is taken the slower side over the faster, so swapping a and b gives the same
    warnings."""
    out = {}
    for w in workloads:
        probe_a, probe_b = _of(runs, a, w, "probe_seconds"), _of(runs, b, w, "probe_seconds")
        if len(probe_a) < 2 or len(probe_b) < 2:
            continue
        la, lb = np.log(probe_a), np.log(probe_b)
        mean_a, mean_b = math.exp(la.mean()), math.exp(lb.mean())
        cov = (noise_cov or {}).get(w)
        measured = cov is not None and math.isfinite(cov)
        floor = float(cov) if measured else DEFAULT_SPEED_FLOOR
        if max(mean_a, mean_b) / min(mean_a, mean_b) - 1 <= floor:
            continue
        p = mean_difference_pvalue(la, lb)
        if p > SPEED_LEVEL:
            continue
        out[w] = (f"machine speed differed on {w}: probe {mean_a:.4g} s (geometric mean) over "
                  f"{len(probe_a)} runs of {a}, {mean_b:.4g} s over {len(probe_b)} runs of "
                  f"{b}, ratio {mean_a / mean_b:.3f}, beyond the noise floor of "
                  f"{100 * floor:.1f} %" + ("" if measured else
                                            " (the default: the workload has no measured "
                                            "noise floor)")
                  + f" (permutation test p = {p:.2g})")
    return out


STUDY_TIME_RULES = ("algoperf", "fastest")  # how a study's time is taken from its trials


def study_times_by(cube: xr.Dataset, rule: str = "algoperf") -> xr.DataArray:
    """Study times (algorithm, workload, study) of a final cube by `rule`: "algoperf", the trial
    that met the target at the smallest eval index, ties by the smaller time, then the lower
    trial number (scoring.study_times, AlgoPerf's scorer);
    "fastest", the smallest time to target over the study's trials (the two differ when evals
    are not evenly spaced in time, or a trial's evals cost more). +inf: no trial met the
    target; NaN: no trial."""
    if rule == "algoperf":
        return study_times(cube)
    if rule != "fastest":
        raise UserError(f"unknown study-time rule {rule!r}: valid are "
                        f"{', '.join(STUDY_TIME_RULES)}")
    time = cube["time_to_target"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a study without trials: NaN
        fastest = time.min(["trial", "seed"], skipna=True)
    return fastest.rename("time_to_target").assign_attrs(units=time.attrs.get("units", "s"))


def under_tuned_warnings(times_in_steps: xr.DataArray, reference: str,
                         workloads: Sequence[str], tuned_steps: Mapping[str, float],
                         noise_cov: Mapping[str, float] | None) -> dict[str, str]:
    """{workload: a one-line warning} where the reference's median steps to target over its
    studies (study times on the steps axis) exceed its workload's tuned record
    (`tuned_steps`: catalog.median_steps_to_target) by more than the workload's noise floor
    (`noise_cov`, a CoV): the reference looks under-tuned, and the speedups over it are
    overstated. Steps, so a slower machine does not set it off; no floor, no check."""
    out = {}
    for w in workloads:
        tuned, cov = tuned_steps.get(w), (noise_cov or {}).get(w)
        if tuned is None or cov is None or not math.isfinite(cov) or w not in \
                times_in_steps["workload"].values:
            continue
        steps = _present(times_in_steps, reference, w)
        if not len(steps):
            continue
        median = float(np.median(steps))
        if median / tuned - 1 <= cov:
            continue
        shown = "a miss" if math.isinf(median) else f"{median:,.0f} steps"
        out[w] = (f"{reference} looks under-tuned on {w}: its median study took {shown} to "
                  f"target over {len(steps)} studies, "
                  + (f"{median / tuned:.3g}x " if math.isfinite(median) else "against ")
                  + f"the {tuned:,.0f} steps of the workload's tuned baseline (its target "
                  f"record), beyond the noise floor of {100 * cov:.1f} %; speedups over "
                  f"{reference} may be overstated")
    return out


SPACE_ORIGINS = ("declared", "file", "signature", "tuned")  # records.SEARCH_SPACE_FIELDS


def fairness(runs: pd.DataFrame, algorithms: Sequence[str],
             read_doc: Callable[[str], Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """{algorithm: {"origin", "space", "trials"}}: each side's search space and where it came
    from (records.SEARCH_SPACE_FIELDS of its run documents; None for runs recorded without,
    e.g. imports; an origin that is not one of SPACE_ORIGINS reads "unknown", a space that is
    not JSON of one reads None), and its trials per study (the most finished (trial, seed)
    cells of any study of it). `read_doc`: run_id -> run document (Store.run_doc), read for one
    run per (algorithm, workload), an unreadable one skipped; a space that differs between
    workloads is given per workload."""
    keys = ["workload", "study_name", "study", "trial", "seed"]
    done = runs.loc[runs["status"].isin(R.DONE_STATUSES).to_numpy(bool),
                    ["algorithm", "run_id", *keys]]
    out = {}
    for name in algorithms:
        mine = done[(done["algorithm"] == name).to_numpy(bool)]
        cells = mine[keys].drop_duplicates().groupby(keys[:3], dropna=False).size()
        spaces, origins = {}, set()
        for w, run_id in zip(*mine.drop_duplicates("workload")[["workload", "run_id"]].T.values):
            try:
                doc = read_doc(str(run_id))
            except (OSError, ValueError, KeyError):
                continue
            space = doc.get("search_space")  # a document's fields are hostile
            spaces[str(w)] = space if isinstance(space, (dict, list)) else None
            origin = doc.get("search_space_origin")
            origins.add(origin if origin in SPACE_ORIGINS or origin is None else "unknown")
        distinct = {json.dumps(v, sort_keys=True, default=str) for v in spaces.values()}
        space = (next(iter(spaces.values())) if len(distinct) == 1 else spaces or None)
        origin = origins.pop() if len(origins) == 1 else sorted(map(str, origins)) or None
        out[name] = {"origin": origin, "space": space,
                     "trials": int(cells.max()) if len(cells) else 0}
    return out


_ORIGIN_WORDS = {"declared": "declared by the algorithm", "file": "from a file",
                 "signature": "derived from the optimizer's signature (automatic)",
                 "tuned": "written by `pacebench tune`"}


def fairness_lines(spaces: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """One line per algorithm: its trials per study, where its search space came from and the
    space (compare.fairness)."""
    lines = []
    for name, info in spaces.items():
        space, origin = info.get("space"), info.get("origin")
        where = (_ORIGIN_WORDS.get(origin, f"of origin {origin}") if isinstance(origin, str)
                 else "of mixed origins " + ", ".join(map(str, origin)) if origin
                 else "of unrecorded origin")
        lines.append(f"{name}: {info.get('trials')} trials per study, search space "
                     + (f"{where}: {json.dumps(space, default=str)}" if space is not None
                        else "not recorded (an import, or no search)"))
    return lines


def compare_runs(runs: pd.DataFrame, cube: xr.Dataset, a: str, b: str, *,
                 time_axis: str = "train", workloads: Sequence[str] | None = None,
                 config=None, confidence: float = DEFAULT_CONFIDENCE,
                 detect: float = DEFAULT_DETECT, noise_cov: Mapping[str, float] | None = None,
                 replicates: int = BOOTSTRAP_REPLICATES, seed: int = 0,
                 study_time: str = "algoperf", tuned_steps: Mapping[str, float] | None = None,
                 search_spaces: Mapping[str, Mapping[str, Any]] | None = None,
                 tuning: Mapping[str, Mapping[str, Any]] | None = None,
                 tuning_runs: Mapping[str, Mapping[str, Any]] | None = None) -> Comparison:
    """`compare` of a and b on `time_axis` (train, wall or steps), from a run table and its
    final cube (cubes.final_cube(runs)), misses at miss_budgets; with the verdict by steps,
    each side's seconds per step, and the machine-speed check, which withholds a verdict in
    seconds (train or wall axis) when it warns. `config`: the store's scoring.ScoringConfig (an
    imported AlgoPerf store's, with a benchmark_version, counts a workload without runs of a
    side as missed). `study_time`: the study-time rule (study_times_by). `tuned_steps`: the
    workloads' tuned median steps to target, for the under-tuned check of each side
    (under_tuned_warnings); `search_spaces`: fairness() of both, shown as given; `tuning`:
    the tuning report of both (workbench.tuning.tuning_report), from which `fair_tuning` and
    `tuning_warnings` (the under-tuned warnings last) are made; `tuning_runs`: tuning.tuning_runs
    of both, shown as given."""
    imported = config is not None and getattr(config, "benchmark_version", None) is not None

    times: dict[str, xr.DataArray] = {}

    def study_times_on(axis: str) -> xr.DataArray:  # the step axis serves twice
        if axis not in times:
            times[axis] = study_times_by(on_time_axis(cube, axis), study_time)
        return times[axis]

    def on(axis: str) -> Comparison:
        return compare(study_times_on(axis), a, b, workloads, miss_budgets(runs, axis, config),
                       confidence, detect, noise_cov, replicates, seed, absent_is_miss=imported)

    column = axis_column(time_axis)
    result = on(column)
    by_steps = result if column == "step" else on("step")
    compared = [r.workload for r in result.per_workload]
    cost, ratio = seconds_per_step(runs, a, b, compared)
    cautions = machine_speed_warnings(runs, a, b, compared, noise_cov)
    in_steps = study_times_on("step")
    under = [w for side in (a, b)  # either side may be the baseline a reader measures against
             for w in under_tuned_warnings(in_steps, side, compared, tuned_steps or {},
                                           noise_cov).values()]
    report = {k: {w: e for w, e in v.items() if w in compared}  # the workloads compared
              for k, v in (tuning or {}).items() if k in (a, b)}
    result = replace(result, time_axis=axis_name(column), verdict_by_steps=by_steps.verdict,
                     seconds_per_step=cost, step_cost_ratio=ratio,
                     warnings=tuple(cautions.values()), study_time=study_time,
                     search_spaces={k: dict(v) for k, v in (search_spaces or {}).items()},
                     tuning={k: dict(v) for k, v in (report or {}).items()},
                     fair_tuning=T.fair_tuning(report or {}, a, b),
                     tuning_warnings=tuple(T.tuning_warnings(report or {}, a, b,
                                                             under)),
                     tuning_runs={k: dict(v) for k, v in (tuning_runs or {}).items()})
    if cautions and column != "step":  # steps do not depend on the machine's speed
        where = ", ".join(cautions)
        result = replace(result, verdict=NO_DIFFERENCE, measured_verdict=result.verdict,
                         withheld=f"the machine's speed differed between the two sides by more "
                                  f"than the noise floor (on {where})")
    return result
