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
  (`noise_floor.studies_needed`) from the observed spread of log study times, or from the
  workloads' noise floors when there are too few studies to measure one.
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

import itertools
import json
import math
import warnings
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import pandas as pd
import xarray as xr
from scipy.special import gammaln

from workbench import records as R
from workbench import tuning as T
from workbench.cubes import AXIS_UNITS, axis_column, axis_name, on_time_axis
from workbench.errors import UserError
from workbench.noise_floor import studies_needed
from workbench.scoring import (MIN_STUDIES_FOR_INTERVAL, ruleset_of, study_times,
                               uses_budgets)

__all__ = ["WorkloadComparison", "Comparison", "compare", "check_pair", "comparison_table",
           "workload_budgets", "miss_budgets", "seconds_per_step", "machine_speed_warnings",
           "compare_runs",
           "permutation_pvalues", "DEFAULT_CONFIDENCE", "DEFAULT_DETECT", "DEFAULT_SPEED_FLOOR",
           "NO_DIFFERENCE", "STUDY_TIME_RULES", "study_times_by", "under_tuned_warnings",
           "fairness", "fairness_lines", "half_alpha", "reaches", "smallest_p_value",
           "studies_to_reach", "P_TOLERANCE", "EXACT_BOOTSTRAP", "level_text"]

DEFAULT_CONFIDENCE = 0.95
MIN_STUDIES_FOR_VERDICT = 2  # a side with fewer studies on a workload is out of its verdict
DEFAULT_DETECT = 1.25       # the speedup `studies_needed` is sized for
BOOTSTRAP_REPLICATES = 4000
_EXACT_GRID = 2_000_000     # above this many cells of the null distribution, Monte Carlo instead
_MONTE_CARLO = 40_000
EXACT_BOOTSTRAP = 100_000  # above this many resamples (multisets a side; combinations over
                            # workloads), the bootstrap draws Monte Carlo replicates instead
DEFAULT_SPEED_FLOOR = T.DEFAULT_NOISE_FLOOR  # machine-speed check: the floor of a workload
                                            # without a noise floor (10 %)
NO_DIFFERENCE = "no difference shown"
# Run-table column of the total a run trained, per time axis (what a miss counts as in ratios).
_TRAINED = {"train_seconds": "train_seconds", "wall_seconds": "wall_seconds", "step": "steps"}


@dataclass(frozen=True)
class WorkloadComparison:
    workload: str
    ratio: float | None               # median study time of B / of A; None: both always missed
    low: float | None                 # bootstrap interval of the ratio; None: too few studies
    high: float | None
    studies_a: int
    studies_b: int
    misses_a: int                     # studies in which no trial reached the target
    misses_b: int
    probability_of_improvement: float | None  # P(a study of A beats one of B), ties half
    note: str = ""                    # why a number is missing

    def to_json(self) -> dict[str, Any]:
        return {"ratio": _num(self.ratio), "low": _num(self.low), "high": _num(self.high),
                "studies": min(self.studies_a, self.studies_b), "studies_a": self.studies_a,
                "studies_b": self.studies_b, "misses_a": self.misses_a,
                "misses_b": self.misses_b,
                "probability_of_improvement": _num(self.probability_of_improvement),
                **({"note": self.note} if self.note else {})}


@dataclass(frozen=True)
class Comparison:
    a: str
    b: str
    verdict: str                      # "<a> faster", "<b> faster" or "no difference shown"
    confidence: float
    speedup: float | None             # geometric mean over workloads of t_B / t_A (> 1: A faster)
    low: float | None
    high: float | None
    p_value: float | None             # one-sided, "A is faster than B"
    p_value_b: float | None           # one-sided, "B is faster than A"
    probability_of_improvement: float | None
    studies_needed: int | None        # per side, to detect `detect` with 80 % power
    detect: float
    per_workload: list[WorkloadComparison]
    left_out: dict[str, str] = field(default_factory=dict)  # workload -> why
    method: str = ""                  # how the p-value was computed
    smallest_p: float = 0.0           # the smallest one-sided p-value the design allows
    time_axis: str = "train"          # what the times are: train, wall or steps (cubes)
    verdict_by_steps: str | None = None  # the same comparison on steps to target (compare_runs)
    seconds_per_step: dict[str, float | None] = field(default_factory=dict)  # algorithm -> s
    step_cost_ratio: float | None = None  # seconds_per_step of a / of b
    warnings: tuple[str, ...] = ()    # cautions, one line each (machine speed, under-tuning)
    withheld: str | None = None       # why the verdict in time was withheld; None: it was not
    measured_verdict: str | None = None  # the verdict the times gave, when it was withheld
    interval_method: str = ""         # exact bootstrap, or Monte Carlo replicates
    design: str = ""                  # the studies the test had, in words ("3 + 3 studies")
    studies_to_reach: int | None = None  # k + k studies could reach the confidence; None: these can
    counted_as_missed: dict[str, str] = field(default_factory=dict)  # workload -> why (imports)
    study_time: str = "algoperf"      # the study-time rule (STUDY_TIME_RULES)
    search_spaces: dict[str, dict[str, Any]] = field(default_factory=dict)  # compare.fairness
    tuning: dict[str, dict[str, Any]] = field(default_factory=dict)  # tuning.tuning_report
    fair_tuning: bool | None = None   # tuning.fair_tuning of a and b
    tuning_warnings: tuple[str, ...] = ()  # tuning.tuning_warnings (under-tuning included)
    tuning_runs: dict[str, dict[str, Any]] = field(default_factory=dict)  # tuning.tuning_runs

    @property
    def unit(self) -> str:
        """What the times are counted in: "seconds" or "steps"."""
        return AXIS_UNITS[axis_column(self.time_axis)]

    def to_json(self) -> dict[str, Any]:
        return {"a": self.a, "b": self.b, "verdict": self.verdict,
                "verdict_by_steps": self.verdict_by_steps, "sentence": self.sentence(),
                "warnings": list(self.warnings), "withheld": self.withheld,
                "time_axis": self.time_axis, "unit": self.unit, "study_time": self.study_time,
                "confidence": self.confidence,
                "speedup": {"estimate": _num(self.speedup), "low": _num(self.low),
                            "high": _num(self.high)},
                "interval_method": self.interval_method,
                "p_value": _num(self.p_value), "p_value_b_faster": _num(self.p_value_b),
                "probability_of_improvement": _num(self.probability_of_improvement),
                "studies_needed": self.studies_needed, "detect": self.detect,
                "seconds_per_step": {k: _num(v) for k, v in self.seconds_per_step.items()},
                "step_cost_ratio": _num(self.step_cost_ratio),
                "per_workload": {w.workload: w.to_json() for w in self.per_workload},
                "left_out": dict(self.left_out),
                "counted_as_missed": dict(self.counted_as_missed), "method": self.method,
                "smallest_possible_p_value": self.smallest_p,
                "can_reach_confidence": self.p_value is not None
                and self.studies_to_reach is None,
                "studies_to_reach": self.studies_to_reach,
                "search_spaces": {k: dict(v) for k, v in self.search_spaces.items()},
                "tuning": {k: dict(v) for k, v in self.tuning.items()},
                "fair_tuning": self.fair_tuning, "tuning_warnings": list(self.tuning_warnings),
                "tuning_runs": {k: dict(v) for k, v in self.tuning_runs.items()}}

    def withheld_line(self) -> str | None:
        """Why the verdict in time was withheld, one line of its own (shown before the verdict,
        never inside it); None when it was not."""
        if not self.withheld:
            return None
        return (f"verdict in time withheld ({self.verdict}): {self.withheld}, so time cannot "
                "separate them; rerun with the interleaved order or compare by steps")

    def sentence(self) -> str:
        """The verdict in words, with its numbers (when the verdict was withheld: what the times
        measured say, as measurements, not as a verdict; withheld_line says why); the verdict
        by steps when it differs, with what a step costs each side."""
        text = self._measured(labelled=not self.withheld)
        if self.withheld:
            text = f"The times measured, not a verdict (withheld, see above): {text}"
        if self.verdict_by_steps is not None and self.verdict_by_steps != self.verdict:
            text += f". By steps to target: {self.verdict_by_steps}"
            if self.step_cost_ratio is not None:
                text += f"; {self.a}'s steps cost {_x(self.step_cost_ratio)} {self.b}'s"
                by_steps, by_time = self.verdict_by_steps, self.verdict
                for x, y in ((self.a, self.b), (self.b, self.a)):
                    if by_steps == f"{x} faster" and by_time == f"{y} faster":
                        text += f": {x} is faster per step, slower per second"
        return text

    def _sides(self, verdict: str) -> tuple[str, str, float, float | None, float | None]:
        """(named first, the other, its speedup, interval): the winner of the verdict, else
        the side the estimate favours, so the factor is above 1 whenever it can be."""
        b_first = verdict == f"{self.b} faster" or (verdict != f"{self.a} faster"
                                                    and self.speedup < 1)
        if not b_first:
            return self.a, self.b, self.speedup, self.low, self.high
        low = None if self.high is None else 1 / self.high
        high = None if self.low is None else 1 / self.low
        return self.b, self.a, 1 / self.speedup, low, high

    def _measured(self, labelled: bool = True) -> str:
        """The sentence of the verdict the times gave; `labelled`: led by the verdict (else
        the test's reading comes after the numbers, so no verdict is nested in another)."""
        verdict = self.measured_verdict or self.verdict
        level = level_text(self.confidence)
        if self.speedup is None:
            return (f"{verdict}: " if labelled else "") + \
                f"no workload where both {self.a} and {self.b} have a time"
        first, other, factor, low, high = self._sides(verdict)
        how = " in steps to target" if self.unit == "steps" else ""
        if factor == 1:
            claim = f"{first} and {other} are equally fast{how} by median study times"
        elif factor > 1:
            claim = f"{first} is {_x(factor)} faster than {other}{how}"
        else:  # the test's winner, though its median ratio is below 1
            claim = (f"{first} wins more studies than it loses, though its median ratio is "
                     f"{_x(factor)}{how} against {other}")
        if self.p_value is None:  # out of a verdict: too few studies on every workload
            why = self.method.removeprefix("no verdict: ")
            return (f"{verdict}: " if labelled else "") + \
                f"{why}, so no test; {claim} in the studies there are"
        interval = (f" ({_x(low)} to {_x(high)}, {level} interval)" if low is not None
                    else " (no interval: too few studies)")
        p_first = self.p_value if first == self.a else self.p_value_b
        poi = (self.probability_of_improvement if first == self.a
               else 1 - self.probability_of_improvement)
        lead = f"{verdict} at {level} confidence: " if labelled else ""
        text = (f"{lead}{claim}{interval}; p = {p_first:.3g} for "
                f"'{first} is faster' ({self.method}")
        if p_first <= self.smallest_p * (1 + P_TOLERANCE):
            text += ", the smallest p-value these studies can give"
        text += f"); P({first} faster in a study) = {poi:.2f}"
        if (factor - 1) * (poi - 0.5) < 0:  # the two numbers seem to disagree: say what each is
            text += (f" (no contradiction: {_x(factor)} is the ratio of the median studies' "
                     f"times, {poi:.2f} the chance that one study of {first} beats one of "
                     f"{other}; they point different ways when the two sides' studies overlap "
                     "and a few differ most)")
        tied = [r.workload for r in self.per_workload if r.ratio is None
                and r.probability_of_improvement is not None]
        if tied:
            text += (f" (counting {', '.join(tied)}, missed by both in every study, as 1/2: "
                     "rliable's definition)")
        if self.studies_to_reach is not None:
            k = self.studies_to_reach
            text += (f"; this design cannot reach {level} (the smallest p-value of "
                     f"{self.design} is {self.smallest_p:.3g}); {k} + {k} studies"
                     f"{' on each workload' if ' on ' in self.design else ''} could")
        text += self._studies_text()
        if not labelled:
            text += f"; the test on these times alone: '{verdict}' at {level} confidence"
        return text


    def _studies_text(self) -> str:
        """The studies a verdict would need, or why the spread of studies is not what hides a
        difference ("" when no estimate was made)."""
        scored = [r for r in self.per_workload if r.ratio is not None]
        have = min((min(r.studies_a, r.studies_b) for r in scored), default=0)
        if self.studies_needed is None:
            return ""
        if self.studies_needed > have:
            return (f"; to detect a {_x(self.detect)} speedup with 80 % power, about "
                    f"{self.studies_needed} studies per algorithm")
        faster = sum(r.ratio > 1 for r in scored)
        slower = sum(r.ratio < 1 for r in scored)
        return (f"; {have} studies would detect a {_x(self.detect)} speedup on every "
                f"workload alike, so the spread of studies is not what hides a "
                f"difference: {self.a} is faster on {faster} of {len(scored)} workloads "
                f"and slower on {slower}")


def _num(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(value) else float(value)


def _digits(value: float) -> str:
    """`value` to 3 significant digits, more when that would round a number near 1 to "1"
    (1.001 is "1.001", never "1")."""
    for digits in range(3, 16):
        text = f"{value:.{digits}g}"
        if value == 1 or float(text) != 1:
            return text
    return text


def _x(value: float | None) -> str:
    return "n/a" if value is None else f"{_digits(value)}x"


def level_text(confidence: float) -> str:
    """A confidence level as a percentage, with the digits it has (95%, 99.9%)."""
    for digits in range(0, 6):
        text = f"{100 * confidence:.{digits}f}"
        if abs(float(text) - 100 * confidence) < 1e-9:
            return f"{text}%"
    return f"{100 * confidence:g}%"


def workload_budgets(runs: pd.DataFrame, axis: str = "train_seconds") -> dict[str, float]:
    """Per workload, the time a miss counts as in ratios on `axis` (cubes.axis_column): the
    longest any of its runs trained in that unit (train_seconds, wall_seconds or steps; a run
    that misses trains until its budget, of seconds or of steps, runs out)."""
    column = _TRAINED[axis_column(axis)]
    out = {}
    for workload, group in runs.groupby("workload"):
        value = pd.to_numeric(group[column], errors="coerce").astype(float).max()
        if math.isfinite(value) and value > 0:
            out[str(workload)] = float(value)
    return out


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


# -- the rank statistic and its exact permutation distribution ---------------------------------
def _doubled_midranks(values: np.ndarray) -> np.ndarray:
    """2 x the midranks of `values` (ascending; +inf ties with +inf): integers."""
    order = np.argsort(values, kind="stable")
    ranks = np.empty(len(values), dtype=np.int64)
    sorted_values = values[order]
    start = 0
    while start < len(values):
        stop = start
        while stop + 1 < len(values) and sorted_values[stop + 1] == sorted_values[start]:
            stop += 1
        ranks[order[start:stop + 1]] = start + stop + 2  # 2 x mean of ranks start+1..stop+1
        start = stop + 1
    return ranks


def _wins2(a: np.ndarray, b: np.ndarray) -> int:
    """2 x (pairs where A's time < B's + half the ties): twice the Mann-Whitney U of A's wins."""
    less = (a[:, None] < b[None, :]).sum()
    ties = (a[:, None] == b[None, :]).sum()
    return int(2 * less + ties)


def _wins2_null(ranks2: np.ndarray, n_a: int) -> np.ndarray:
    """Counts of each value of 2 x A's wins over all ways to label `n_a` of the pooled studies A
    (index = doubled wins, 0 .. 2 n_a n_b), from the subsets' rank sums (dynamic programming)."""
    n_b = len(ranks2) - n_a
    top = int(ranks2.sum())
    counts = np.zeros((n_a + 1, top + 1))  # counts[k, s]: subsets of k studies, 2 x rank sum s
    counts[0, 0] = 1.0
    for r in ranks2:
        counts[1:, r:] = counts[1:, r:] + counts[:-1, :top + 1 - r]
    sums = counts[n_a]
    # U_B = R_A - n_a (n_a + 1) / 2 is B's wins, so 2 W_A = 2 n_a n_b - (2 R_A - n_a (n_a + 1))
    wins = np.zeros(2 * n_a * n_b + 1)
    for s in np.nonzero(sums)[0]:
        wins[2 * n_a * n_b - (s - n_a * (n_a + 1))] += sums[s]
    return wins


def permutation_pvalues(samples: Sequence[tuple[np.ndarray, np.ndarray]],
                        seed: int = 0) -> tuple[float, float, str]:
    """One-sided p-values (A faster, B faster) of the stratified permutation test.

    `samples`: per workload, (A's study times, B's study times), +inf for a miss. Statistic: the
    sum over workloads of P-hat(a study of A beats one of B) (ties half); A's and B's labels are
    permuted within each workload. Exact (the null distribution by dynamic programming and
    convolution) unless it would need more than `_EXACT_GRID` cells, then `_MONTE_CARLO` random
    permutations; the third value says which.
    """
    if not samples:
        return math.nan, math.nan, "no data"
    pairs = [len(a) * len(b) for a, b in samples]
    scale = math.lcm(*pairs)  # a common grid: workload w's doubled wins count scale / pairs_w
    observed = sum(_wins2(a, b) * (scale // p) for (a, b), p in zip(samples, pairs))
    if 2 * scale * len(samples) + 1 <= _EXACT_GRID:
        null = np.ones(1)
        for (a, b), p in zip(samples, pairs):
            wins = _wins2_null(_doubled_midranks(np.concatenate([a, b])), len(a))
            wins /= wins.sum()
            step = scale // p
            grown = np.zeros(len(null) + (len(wins) - 1) * step)
            for value in np.nonzero(wins)[0]:  # a sparse convolution: few values, wide steps
                grown[value * step:value * step + len(null)] += wins[value] * null
            null = grown
        greater = float(null[observed:].sum())
        less = float(null[:observed + 1].sum())
        return min(greater, 1.0), min(less, 1.0), "exact permutation test"
    rng = np.random.default_rng(seed)
    total = np.zeros(_MONTE_CARLO)
    for (a, b), p in zip(samples, pairs):
        ranks2 = _doubled_midranks(np.concatenate([a, b])).astype(float)
        perms = rng.permuted(np.broadcast_to(ranks2, (_MONTE_CARLO, len(ranks2))), axis=1)
        rank_sum = perms[:, :len(a)].sum(axis=1)
        total += (2 * p - (rank_sum - len(a) * (len(a) + 1))) * (scale // p)
    greater = (1 + np.sum(total >= observed - 1e-9)) / (1 + _MONTE_CARLO)
    less = (1 + np.sum(total <= observed + 1e-9)) / (1 + _MONTE_CARLO)
    return float(greater), float(less), f"permutation test, {_MONTE_CARLO} random permutations"


# -- ratios and their bootstrap -----------------------------------------------------------------
def _at_budget(times: np.ndarray, cap: float) -> np.ndarray:
    """Study times with each miss (+inf) at `cap`; hits are never shortened. A hit longer than
    `cap` (a run may overrun its budget by part of an eval) lifts the misses to it, so a miss
    never counts as faster than a hit."""
    hits = times[np.isfinite(times)]
    level = max(cap, float(hits.max())) if hits.size else cap
    return np.where(np.isinf(times), level, times)


def _multisets(n: int) -> np.ndarray:
    """Every multiset of n draws from n items, as sorted index rows: C(2n - 1, n) x n."""
    return np.array(list(itertools.combinations_with_replacement(range(n), n)), dtype=np.int64)


def _median_distribution(values: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """The exact bootstrap distribution of the median of `values` (a resample draws len(values)
    of them with replacement): (distinct medians, their probabilities). Each multiset of draws
    has probability n! / (prod of multiplicities! x n^n), the share of ordered resamples that
    give it. None when there are more than EXACT_BOOTSTRAP multisets."""
    n = len(values)
    if math.comb(2 * n - 1, n) > EXACT_BOOTSTRAP:
        return None
    ordered = np.sort(values)
    rows = _multisets(n)  # indices into `ordered`, sorted within a row: its order statistics
    medians = (ordered[rows[:, (n - 1) // 2]] + ordered[rows[:, n // 2]]) / 2
    counts = (rows[:, :, None] == np.arange(n)).sum(axis=1)
    log_weight = math.lgamma(n + 1) - gammaln(counts + 1).sum(axis=1) - n * math.log(n)
    return _merged(medians, np.exp(log_weight))


def _merged(values: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(sorted distinct values, their summed weights, normalised to 1)."""
    support, where = np.unique(values, return_inverse=True)
    probs = np.bincount(where.ravel(), weights=weights.ravel(), minlength=len(support))
    return support, probs / probs.sum()


def _ratio_distribution(a: np.ndarray, b: np.ndarray, n: int, rng: np.random.Generator
                        ) -> tuple[np.ndarray, np.ndarray, bool]:
    """The bootstrap distribution of log(median B / median A), each side's studies redrawn
    independently: (values, probabilities, whether exact). Exact (every resample, weighted)
    when each side has at most EXACT_BOOTSTRAP multisets of draws; else `n` Monte Carlo
    replicates, equally weighted."""
    dist_a, dist_b = _median_distribution(a), _median_distribution(b)
    if dist_a is not None and dist_b is not None:
        values = np.log(dist_b[0])[None, :] - np.log(dist_a[0])[:, None]
        return (*_merged(values, dist_a[1][:, None] * dist_b[1][None, :]), True)
    draw_a = rng.integers(0, len(a), (n, len(a)))
    draw_b = rng.integers(0, len(b), (n, len(b)))
    draws = np.log(np.median(b[draw_b], axis=-1)) - np.log(np.median(a[draw_a], axis=-1))
    return draws, np.full(n, 1.0 / n), False


def _mean_distribution(parts: list[tuple[np.ndarray, np.ndarray]], n: int,
                       rng: np.random.Generator) -> tuple[tuple[np.ndarray, np.ndarray], bool]:
    """The distribution of the mean over workloads of independent per-workload log ratios
    (a bootstrap stratified by workload), and whether it is exact: every combination of their
    values, weighted, when there are at most EXACT_BOOTSTRAP; else `n` Monte Carlo draws from
    each workload's distribution."""
    if math.prod(len(v) for v, _ in parts) <= EXACT_BOOTSTRAP:
        values, probs = np.zeros(1), np.ones(1)
        for v, p in parts:
            values = (values[:, None] + v[None, :]).ravel()
            probs = (probs[:, None] * p[None, :]).ravel()
        return _merged(values / len(parts), probs), True
    total = np.zeros(n)
    for v, p in parts:
        total += rng.choice(v, size=n, p=p)
    return (total / len(parts), np.full(n, 1.0 / n)), False


def _quantile(values: np.ndarray, probs: np.ndarray, q: float) -> float:
    """The smallest value whose cumulative probability reaches q (numpy's "inverted_cdf" of a
    weighted sample); cumulative sums within 1e-12 of q count as reaching it (float sums)."""
    order = np.argsort(values, kind="stable")
    cdf = np.cumsum(probs[order])
    return float(values[order][min(int(np.searchsorted(cdf, q - 1e-12)), len(cdf) - 1)])


def _interval(dist: tuple[np.ndarray, np.ndarray], confidence: float) -> tuple[float, float]:
    """Percentile interval of a log-ratio distribution, as ratios."""
    values, probs = dist
    tail = (1 - confidence) / 2
    return (math.exp(_quantile(values, probs, tail)),
            math.exp(_quantile(values, probs, 1 - tail)))


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
    dist = _ratio_distribution(ca, cb, replicates, rng)
    low = high = None
    fewest = min(len(ta), len(tb))
    note = ""
    if fewest >= MIN_STUDIES_FOR_INTERVAL:
        low, high = _interval(dist[:2], confidence)
    else:
        note = (f"no interval: {fewest} {'study' if fewest == 1 else 'studies'} on one side "
                f"(needs {MIN_STUDIES_FOR_INTERVAL})")
    poi = _wins2(ta, tb) / (2 * len(ta) * len(tb))
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


# -- confidence levels, compared exactly -----------------------------------------------------------
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


def studies_to_reach(sizes: Sequence[tuple[int, int]], confidence: float) -> int | None:
    """The fewest studies k a side (k + k on each of these workloads) whose smallest p-value
    reaches `confidence`; None when these studies already can."""
    if smallest_p_value(sizes) <= half_alpha(confidence) * (1 + Fraction(1, 10 ** 9)):
        return None
    k = max(max(x, y) for x, y in sizes)
    while smallest_p_value([(k, k)] * len(sizes)) > half_alpha(confidence):
        k += 1
    return k


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
        dist, whole = _mean_distribution(parts, replicates, rng)
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
                                    1 - confidence)
    sizes = [(len(x), len(y)) for x, y in samples]
    return Comparison(a, b, verdict, confidence, speedup, low, high, p_a, p_b, poi, needed,
                      detect, rows, left_out, method, float(smallest_p_value(sizes)),
                      interval_method=interval_method, design=_design(sizes),
                      studies_to_reach=studies_to_reach(sizes, confidence))


def comparison_table(result: Comparison, names: bool = True) -> pd.DataFrame:
    """The per-workload rows of a comparison, formatted. `names`: headers name the algorithms
    (a terminal); else they say A and B (a web table, whose headers are HTML: names from a store
    never go there)."""
    a, b = (result.a, result.b) if names else ("A", "B")
    rows = []
    for r in result.per_workload:
        interval = (f"{r.low:.3g} to {r.high:.3g}" if r.low is not None
                    else r.note or "n/a")
        rows.append({"workload": r.workload,
                     f"t_{b} / t_{a}": "n/a" if r.ratio is None else f"{r.ratio:.3g}",
                     f"{result.confidence:.0%} interval": interval if r.ratio is not None
                     else r.note,
                     "studies": f"{r.studies_a} + {r.studies_b}",
                     "misses": f"{r.misses_a} + {r.misses_b}",
                     f"P({a} faster)": "n/a" if r.probability_of_improvement is None
                     else f"{r.probability_of_improvement:.2f}"})
    return pd.DataFrame(rows)


# -- the whole head-to-head of a run table: verdict by steps, step costs, machine speed -----------
def _of(runs: pd.DataFrame, algorithm: str, workload: str, column: str) -> np.ndarray:
    """`column` of the runs of `algorithm` on `workload`, as floats, the finite positive ones."""
    mine = runs[(runs["algorithm"] == algorithm) & (runs["workload"] == workload)]
    values = pd.to_numeric(mine[column], errors="coerce").to_numpy(float, na_value=np.nan)
    return values[np.isfinite(values) & (values > 0)]


def seconds_per_step(runs: pd.DataFrame, a: str, b: str, workloads: Sequence[str]
                     ) -> tuple[dict[str, float | None], float | None]:
    """({a: s, b: s}, ratio a / b): each side's training seconds per step, the median over its
    finished runs (records.DONE_STATUSES) of train_seconds / steps on each workload, then the
    geometric mean over those of `workloads` where both sides have one (None: no such workload)."""
    done = runs[runs["status"].isin(R.DONE_STATUSES).to_numpy(bool)]
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


def _speed_pvalue(la: np.ndarray, lb: np.ndarray, seed: int = 0) -> float:
    """Two-sided permutation p-value of the difference of the means of `la` and `lb` (log probe
    times): exact over every relabelling up to 20,000 of them, else 10,000 random ones."""
    pooled, n_a = np.concatenate([la, lb]), len(la)
    observed = abs(la.mean() - lb.mean()) - 1e-12
    total = pooled.sum()
    def extreme(sums: np.ndarray) -> np.ndarray:
        return np.abs(sums / n_a - (total - sums) / (len(pooled) - n_a)) >= observed

    if math.comb(len(pooled), n_a) <= 20_000:
        from itertools import combinations
        sums = np.array([pooled[list(c)].sum() for c in combinations(range(len(pooled)), n_a)])
        return float(np.mean(extreme(sums)))
    rng = np.random.default_rng(seed)
    draws = rng.permuted(np.broadcast_to(pooled, (10_000, len(pooled))), axis=1)
    return float((1 + extreme(draws[:, :n_a].sum(axis=1)).sum()) / (1 + len(draws)))


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
        p = _speed_pvalue(la, lb)
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
    done = runs[runs["status"].isin(R.DONE_STATUSES).to_numpy(bool)]
    out = {}
    for name in algorithms:
        mine = done[done["algorithm"] == name]
        cells = mine.groupby(["workload", "study_name", "study"], dropna=False)[
            ["trial", "seed"]].apply(lambda g: len(g.drop_duplicates()))
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

    def on(axis: str) -> Comparison:
        return compare(study_times_by(on_time_axis(cube, axis), study_time), a, b, workloads,
                       miss_budgets(runs, axis, config), confidence, detect, noise_cov,
                       replicates, seed, absent_is_miss=imported)

    column = axis_column(time_axis)
    result = on(column)
    by_steps = result if column == "step" else on("step")
    compared = [r.workload for r in result.per_workload]
    cost, ratio = seconds_per_step(runs, a, b, compared)
    cautions = machine_speed_warnings(runs, a, b, compared, noise_cov)
    in_steps = study_times_by(on_time_axis(cube, "step"), study_time)
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
