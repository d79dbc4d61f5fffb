"""Sequential studies: decide A against B after each round of studies, and stop when decided.

A round adds one study of each algorithm on each workload; after every round (a *look*) the
test below may give a verdict, so a comparison costs as many studies as its difference needs.
Repeating the fixed-sample test of workbench/compare.py after every round would not do: each
look is one more chance of a false verdict, and the chances add up (benchmarks/verdicts.py
--sequential measures by how much). The test here is valid under a look after every round.

**The test** is a group-sequential permutation test, as AdaStop (Mathieu et al. 2023, "AdaStop:
adaptive statistical testing for sound comparisons of deep RL agents", arXiv 2306.10882) builds
one, with the alpha-spending boundaries of Lan and DeMets (1983):

- Round k's studies form a *block*: per workload, the studies of A and of B that round added (the
  first look's block holds the first `first` rounds: a verdict needs 2 studies a side, as in
  compare). Under the null (A and B are the same algorithm) the labels A/B of the studies in a
  block are exchangeable, independently from block to block.
- The statistic at look k is compare's: the mean over workloads of P-hat(a study of A beats one
  of B), all pairs of the studies up to round k, ties (two misses among them) counted half.
  A *path* is a relabelling of every block; each gives a statistic at every look.
- Boundaries: at look k, with information fraction t = (studies a side at k) / (the most
  studies, N), the cumulative error spent is alpha(t) = (1 - confidence) ln(1 + (e - 1) t), the
  Pocock-type spending function (`SPENDING`); half of it for each direction. The upper
  boundary u_k is the smallest value such that the share of paths that crossed upward at a
  look before k, or stay inside until k and reach u_k there, is at most alpha(t) / 2; the lower
  boundary mirrors it. The observed labelling is one path: the verdict is "A faster" at the first
  look where its statistic reaches u_k, "B faster" where it reaches l_k.
- **Error guarantee**: the boundaries depend only on the blocks' contents, never on their
  labels, so under the null the observed path is a uniformly drawn one and the probability that
  it ever crosses, over all N looks, is the share of paths that do: at most alpha(1) = 1 -
  confidence (half each way) when every path is enumerated (up to `EXACT_PATHS` of them).
  With `PERMUTATIONS` random paths instead the observed path is one of them, and under the null
  it is exchangeable with the others (the boundaries are a symmetric function of the set of
  paths), so the probability of a false verdict is the expected share of paths that cross: at
  most 1 - confidence too, with no Monte Carlo slack (each block's relabellings are drawn from a
  seed of its own, so a look's boundaries are the same whether later rounds exist or not).
  tests/test_sequential.py checks both, by enumerating relabelled data sets.
- **Futility** (`"futile"`): at a look with at least `FUTILITY_FROM` studies a side and no
  verdict, when the speedup seen so far (the mean over workloads of log(median B / median A),
  a miss at the budget) is below `detect` either way and the spread of the studies says that N
  studies a side could not detect a `detect` speedup with 80 % power (compare's
  `studies_needed` exceeds N), the study stops without a verdict. Stopping without a verdict
  never adds a false one, so the guarantee above holds whatever this rule does; it costs
  power only when the true speedup is well above `detect` and the studies are noisy.

Koning (2025, "Sequentializing a test: anytime validity is free", arXiv 2501.03982) gives an
alternative that loses no power at N; the spending approach was chosen because its boundaries
are explicit and its exact error can be checked by enumeration on small cases.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, replace
from typing import Any, Sequence

import numpy as np
import xarray as xr
from scipy.stats import rankdata

from workbench import compare as C
from workbench.errors import UserError

__all__ = ["Look", "SequentialTest", "SequentialComparison", "spent", "rounds_of",
           "blocks_of", "sequential_test", "stopping_look", "sequential_compare", "STOP_REASONS",
           "DEFAULT_MAX_STUDIES", "DEFAULT_FIRST_ROUND", "DEFAULT_CONFIDENCE", "DEFAULT_DETECT"]

SPENDING = "pocock"          # Lan-DeMets Pocock-type: alpha ln(1 + (e - 1) t)
EXACT_PATHS = 50_000         # enumerate every path up to this many, else random paths
PERMUTATIONS = 5_000         # random paths (the observed one among them)
FUTILITY_FROM = 3            # futility is judged from this many studies a side on
DEFAULT_MAX_STUDIES = 10     # `pacebench study --until-decided`
DEFAULT_FIRST_ROUND = 2      # studies a side in the first round (a verdict needs 2)
STOP_REASONS = ("decided", "max studies", "futile")
DEFAULT_CONFIDENCE = C.DEFAULT_CONFIDENCE  # compare's, for the command line
DEFAULT_DETECT = C.DEFAULT_DETECT
_DIGITS = 10                 # statistics rounded so that equal fractions compare equal


def spent(t: float, alpha: float, kind: str = SPENDING) -> float:
    """The error spent by information fraction `t` in (0, 1]: Pocock-type (Lan and DeMets 1983)
    alpha ln(1 + (e - 1) t), or O'Brien-Fleming-type 2 - 2 Phi(z_{alpha/2} / sqrt(t))."""
    if not 0 < t <= 1 + 1e-12:
        raise ValueError(f"the information fraction must be in (0, 1], got {t}")
    t = min(t, 1.0)
    if kind == "pocock":
        return alpha * math.log(1 + (math.e - 1) * t)
    if kind == "obrien-fleming":
        from statistics import NormalDist
        z = NormalDist().inv_cdf(1 - alpha / 2)
        return 2 - 2 * NormalDist().cdf(z / math.sqrt(t))
    raise ValueError(f"unknown spending function {kind!r}: valid are pocock, obrien-fleming")


@dataclass(frozen=True)
class Look:
    studies: int                  # studies a side so far (the most over workloads)
    statistic: float              # P(a study of A beats one of B), mean over workloads
    upper: float | None           # A faster once the statistic reaches this (None: cannot)
    lower: float | None           # B faster once it falls to this (None: cannot)
    spent: float                  # cumulative error allowed by this look (both sides)

    def to_json(self) -> dict[str, Any]:
        return {"studies": self.studies, "statistic": round(self.statistic, 6),
                "upper": None if self.upper is None else round(self.upper, 6),
                "lower": None if self.lower is None else round(self.lower, 6),
                "spent": self.spent}


@dataclass(frozen=True)
class SequentialTest:
    looks: list[Look]
    decided_at: int | None        # index into looks of the first crossing; None: none
    direction: int                # +1: A faster, -1: B faster, 0: no crossing
    paths: int                    # how many paths the boundaries were computed from
    exact: bool                   # every path enumerated (else random ones)
    error: float                  # the share of paths that cross at some look (<= alpha)

    @property
    def method(self) -> str:
        how = (f"all {self.paths} relabellings" if self.exact
               else f"{self.paths} random relabellings")
        return f"group-sequential permutation test, {SPENDING} spending, {how}"


def rounds_of(times: xr.DataArray, algorithm: str) -> list[int]:
    """The study indices of `algorithm` that hold any time (a number, or +inf for a miss), in
    order: round k of a replay takes the k-th of them."""
    values = times.sel(algorithm=algorithm).transpose("study", ...).values.astype(float)
    present = ~np.isnan(values).reshape(len(values), -1).all(axis=1)
    return [int(s) for s, ok in zip(times["study"].values, present) if ok]


def blocks_of(times: xr.DataArray, a: str, b: str, workloads: Sequence[str], rounds: int,
              first: int = DEFAULT_FIRST_ROUND) -> list[list[tuple[np.ndarray, np.ndarray]]]:
    """The blocks of the first `rounds` rounds: per look, per workload, (A's new study times,
    B's); the first block holds the first `first` rounds. NaN (no such study) is left out."""
    ra, rb = rounds_of(times, a), rounds_of(times, b)
    if rounds > min(len(ra), len(rb)):
        raise ValueError(f"{rounds} rounds asked for, but {a} has {len(ra)} studies and {b} "
                         f"{len(rb)}")
    bounds = [0, min(first, rounds), *range(min(first, rounds) + 1, rounds + 1)]
    blocks = []
    for lo, hi in zip(bounds, bounds[1:]):
        block = []
        for w in workloads:
            ta = times.sel(algorithm=a, workload=w, study=ra[lo:hi]).values.astype(float)
            tb = times.sel(algorithm=b, workload=w, study=rb[lo:hi]).values.astype(float)
            block.append((ta[~np.isnan(ta)], tb[~np.isnan(tb)]))
        blocks.append(block)
    return blocks


def _labellings(n: int, n_a: int) -> list[np.ndarray]:
    """Every way to call `n_a` of `n` pooled studies A, as boolean masks, the identity first."""
    out = []
    for chosen in itertools.combinations(range(n), n_a):
        mask = np.zeros(n, dtype=bool)
        mask[list(chosen)] = True
        out.append(mask)
    return out


def _paths(blocks, seed: int) -> tuple[list[np.ndarray], int, bool]:
    """Per workload, the A-labels of its pooled studies (blocks in order) on every path, an
    array (paths, studies); path 0 is the observed labelling. Every path when there are at
    most EXACT_PATHS, else PERMUTATIONS paths with each block's relabellings drawn from a seed
    of its own (so that the first k blocks' paths do not depend on later blocks)."""
    cells = [(k, w, len(a), len(a) + len(b)) for k, block in enumerate(blocks)
             for w, (a, b) in enumerate(block)]
    total = math.prod(math.comb(n, n_a) for _, _, n_a, n in cells)
    n_work = len(blocks[0])
    if total <= EXACT_PATHS:
        options = [_labellings(n, n_a) for _, _, n_a, n in cells]
        grid = itertools.product(*[range(len(o)) for o in options])
        choice = np.array(list(grid), dtype=np.int64).reshape(total, len(cells))
        parts: list[list[np.ndarray]] = [[] for _ in range(n_work)]
        for c, (_, w, _, _) in enumerate(cells):
            parts[w].append(np.stack(options[c])[choice[:, c]])
        return [np.concatenate(p, axis=1) if p else np.zeros((total, 0), bool)
                for p in parts], total, True
    parts = [[] for _ in range(n_work)]
    for k, w, n_a, n in cells:
        rng = np.random.default_rng([seed, k, w])
        keys = rng.random((PERMUTATIONS, n))
        keys[0] = np.arange(n)  # the observed labelling: A's studies come first in a block
        ranks = np.argsort(np.argsort(keys, axis=1), axis=1)
        parts[w].append(ranks < n_a)
    return [np.concatenate(p, axis=1) for p in parts], PERMUTATIONS, False


def _statistics(blocks, labels: list[np.ndarray], min_studies: int
                ) -> tuple[np.ndarray, list[int]]:
    """(paths, looks) array of the mean over workloads of P-hat(A beats B) from the studies up
    to each look, over the workloads where both sides have `min_studies` by then (NaN where
    none has), and the studies a side at each look (the most over workloads)."""
    n_paths, n_looks = labels[0].shape[0], len(blocks)
    total, included = np.zeros((n_paths, n_looks)), np.zeros(n_looks)
    studies = np.zeros(n_looks, dtype=int)
    for w in range(len(blocks[0])):
        values = np.concatenate([np.concatenate(blk[w]) for blk in blocks])
        n_a = np.cumsum([len(blk[w][0]) for blk in blocks])
        n_b = np.cumsum([len(blk[w][1]) for blk in blocks])
        studies = np.maximum(studies, np.minimum(n_a, n_b))
        for k in range(n_looks):
            if min(n_a[k], n_b[k]) < min_studies:
                continue
            size = n_a[k] + n_b[k]
            # A's doubled wins (ties half) from the doubled midranks of the studies so far
            # (+inf ties with +inf): 2 n_a n_b - (2 R_A - n_a (n_a + 1)), R_A A's rank sum
            ranks2 = (2 * rankdata(values[:size])).astype(np.int64)
            rank_sum2 = labels[w][:, :size].astype(np.int64) @ ranks2
            doubled = 2 * n_a[k] * n_b[k] - (rank_sum2 - n_a[k] * (n_a[k] + 1))
            total[:, k] += doubled / (2 * n_a[k] * n_b[k])
            included[k] += 1
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = total / np.where(included > 0, included, np.nan)
    return np.round(mean, _DIGITS), [int(n) for n in studies]


def _threshold(values: np.ndarray, budget: float, upper: bool) -> float:
    """The least extreme value v such that at most `budget` of `values` are at or beyond v
    (>= v for the upper boundary, <= v for the lower); +-inf when not even the most extreme
    value fits (no crossing possible)."""
    none = math.inf if upper else -math.inf
    if values.size == 0:
        return none
    distinct, counts = np.unique(values, return_counts=True)  # ascending
    if upper:
        fits = np.cumsum(counts[::-1])[::-1] <= budget + 1e-9  # count >= distinct[i]
        return float(distinct[np.argmax(fits)]) if fits.any() else none
    fits = np.cumsum(counts) <= budget + 1e-9                  # count <= distinct[i]
    return float(distinct[len(fits) - 1 - np.argmax(fits[::-1])]) if fits.any() else none


def sequential_test(blocks: Sequence[Sequence[tuple[np.ndarray, np.ndarray]]],
                    max_studies: int, confidence: float = C.DEFAULT_CONFIDENCE,
                    seed: int = 0, spending: str = SPENDING) -> SequentialTest:
    """The group-sequential permutation test (module doc) of `blocks` (blocks_of: per look,
    per workload, A's and B's new study times, +inf for a miss) planned for up to `max_studies`
    studies a side. Returns every look's statistic and boundaries and the first crossing."""
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if not blocks or not blocks[0]:
        raise ValueError("no studies to test")
    alpha = 1 - confidence
    labels, n_paths, exact = _paths(blocks, seed)
    stats, studies = _statistics(blocks, labels, C.MIN_STUDIES_FOR_VERDICT)
    if studies[-1] > max_studies:
        raise ValueError(f"{studies[-1]} studies a side exceed the planned {max_studies}")
    alive = np.ones(n_paths, dtype=bool)
    crossed_up = crossed_low = 0
    looks, decided, direction = [], None, 0
    for k, n in enumerate(studies):
        allowed = spent(n / max_studies, alpha, spending)
        column = stats[:, k]
        if np.isnan(column[0]):  # too few studies for a verdict at this look
            looks.append(Look(n, math.nan, None, None, allowed))
            continue
        upper = _threshold(column[alive], allowed / 2 * n_paths - crossed_up, True)
        lower = _threshold(column[alive], allowed / 2 * n_paths - crossed_low, False)
        up, low = alive & (column >= upper), alive & (column <= lower)
        crossed_up += int(up.sum())
        crossed_low += int(low.sum())
        alive &= ~(up | low)
        looks.append(Look(n, float(column[0]), None if math.isinf(upper) else upper,
                          None if math.isinf(lower) else lower, allowed))
        if decided is None and (up[0] or low[0]):
            decided, direction = k, 1 if up[0] else -1
    return SequentialTest(looks, decided, direction, n_paths, exact,
                          (crossed_up + crossed_low) / n_paths)


def _spread_and_effect(blocks, budgets: Sequence[float]) -> tuple[float | None, float]:
    """(the mean over workloads of the pooled variance of log study times within each side,
    compare's spread for `studies_needed`: None when a side has fewer than 2 studies on some
    workload; the mean over workloads of log(median B / median A)), from every block given, a
    miss at its workload's budget."""
    spreads, effects = [], []
    for w, cap in enumerate(budgets):
        a = np.minimum(np.concatenate([blk[w][0] for blk in blocks]), cap)
        b = np.minimum(np.concatenate([blk[w][1] for blk in blocks]), cap)
        if len(a) < 2 or len(b) < 2:
            return None, 0.0
        la, lb = np.log(a), np.log(b)
        spreads.append(((len(a) - 1) * la.var(ddof=1) + (len(b) - 1) * lb.var(ddof=1))
                       / (len(a) + len(b) - 2))
        effects.append(float(np.median(lb) - np.median(la)))
    return (float(np.mean(spreads)), float(np.mean(effects))) if spreads else (None, 0.0)


def stopping_look(test: SequentialTest, blocks, budgets: Sequence[float], max_studies: int,
                  detect: float = C.DEFAULT_DETECT, confidence: float = C.DEFAULT_CONFIDENCE
                  ) -> tuple[int, str | None]:
    """(index of the look the study stops at, why: one of STOP_REASONS, or None when it goes
    on: no verdict, not futile, fewer than `max_studies` studies a side so far). Futility is
    judged at each look without a verdict from FUTILITY_FROM studies a side on (module doc):
    the speedup seen so far is below `detect` either way, and at the spread seen `max_studies`
    studies a side could not detect `detect` with 80 % power."""
    from workbench.noise_floor import studies_needed

    last = test.decided_at if test.decided_at is not None else len(test.looks) - 1
    for k, look in enumerate(test.looks[:last + 1]):
        if k == test.decided_at:
            return k, "decided"
        if look.studies < FUTILITY_FROM or look.studies >= max_studies:
            continue
        spread, effect = _spread_and_effect(blocks[:k + 1], budgets)
        if spread is None or abs(effect) >= math.log(detect):
            continue
        needed = studies_needed(spread, len(budgets), detect, 1 - confidence)
        if needed is not None and needed > max_studies:
            return k, "futile"
    return last, "max studies" if test.looks[last].studies >= max_studies else None


def _verdict(direction: int, a: str, b: str) -> str:
    return f"{a} faster" if direction > 0 else f"{b} faster" if direction < 0 else C.NO_DIFFERENCE


@dataclass(frozen=True)
class SequentialComparison:
    """A replayed (or ongoing) sequential comparison: the fixed-design comparison of the studies
    used (its verdict replaced by the sequential one), the test and why it stopped."""

    comparison: C.Comparison
    test: SequentialTest
    studies_used: int                 # studies a side at the stopping look
    stopped_because: str | None       # STOP_REASONS; None: it goes on (a study under way)
    max_studies: int
    first_round: int
    studies_available: int            # rounds the store holds for both
    sequential_verdict: str           # what the test says before any machine-speed withholding

    def to_json(self) -> dict[str, Any]:
        look = self.test.looks[self.stop_index]
        return {**self.comparison.to_json(), "sentence": self.sentence(),
                "studies_used": self.studies_used, "stopped_because": self.stopped_because,
                "sequential": {
                    "method": self.test.method, "spending": SPENDING,
                    "max_studies": self.max_studies, "first_round": self.first_round,
                    "studies_available": self.studies_available,
                    "boundary_error": self.test.error,
                    "statistic": _num(look.statistic),
                    "looks": [x.to_json() for x in self.test.looks[:self.stop_index + 1]]}}

    @property
    def stop_index(self) -> int:
        return next(i for i, x in enumerate(self.test.looks) if x.studies == self.studies_used)

    def sentence(self) -> str:
        c, look = self.comparison, self.test.looks[self.stop_index]
        level = C.level_text(c.confidence)
        why = {"decided": "decided", "max studies": f"reached the most studies, "
               f"{self.max_studies}", "futile": f"futile: {self.max_studies} studies a side "
               f"could not detect a {_x(c.detect)} speedup with 80 % power at the spread "
               f"seen", None: f"not decided yet, {self.max_studies} studies at most"}
        text = (f"{self.sequential_verdict} by the sequential test at {level} after "
                f"{self.studies_used} studies a side ({why[self.stopped_because]}): "
                f"P({c.a} faster in a study) = {look.statistic:.3f}")
        bounds = [f"{c.a} faster from {look.upper:.3f}" if look.upper is not None else "",
                  f"{c.b} faster from {look.lower:.3f}" if look.lower is not None else ""]
        bounds = [x for x in bounds if x]
        text += (f", boundaries at this look: {' and '.join(bounds)}" if bounds
                 else ", no verdict possible at this look")
        if c.withheld:
            text += f"; withheld: {c.withheld}"
        if c.speedup is not None:  # as compare names them: the winner (else the favoured) first
            first, other, factor, low, high = c._sides(self.sequential_verdict)
            interval = (f" ({_x(low)} to {_x(high)}, {level} interval, not adjusted "
                        f"for the looks)" if low is not None else "")
            how = " in steps to target" if c.unit == "steps" else ""
            text += (f"; with these studies {first} is {_x(factor)} faster than {other}{how}"
                     f"{interval}")
        if c.verdict_by_steps is not None and c.verdict_by_steps != c.verdict:
            text += f"; by steps to target: {c.verdict_by_steps}"
        return text


_x = C._x  # factors as compare writes them: enough digits that a bound near 1 shows


def _largest(times: xr.DataArray, workload: str) -> float:
    """The largest finite study time on `workload` (compare's budget when none is known)."""
    values = times.sel(workload=workload).values.astype(float)
    finite = values[np.isfinite(values)]
    return float(finite.max()) if finite.size else 1.0


def _num(value: float) -> float | None:
    return None if value is None or not math.isfinite(value) else float(value)


def _first_rounds(runs, times: xr.DataArray, a: str, b: str, rounds: int):
    """`runs` with A's and B's runs cut to their first `rounds` studies (rounds_of); the other
    algorithms' runs kept (they set the workloads' miss budgets, as in compare)."""
    keep = np.ones(len(runs), dtype=bool)
    for name in (a, b):
        chosen = rounds_of(times, name)[:rounds]
        mine = (runs["algorithm"] == name).to_numpy(bool)
        keep &= ~mine | runs["study"].isin(chosen).to_numpy(bool)
    return runs[keep]


def _plan(times: xr.DataArray, a: str, b: str, max_studies: int | None, first: int,
          ongoing: bool) -> tuple[int, int]:
    """(the studies the store holds for both a and b, the N the test is planned for), checked;
    ValueError saying what is wrong and what is valid."""
    C.check_pair(times, a, b)
    have = min(len(rounds_of(times, a)), len(rounds_of(times, b)))
    planned = have if max_studies is None else int(max_studies)
    if planned < C.MIN_STUDIES_FOR_VERDICT:
        raise UserError(f"--max-studies {planned}: a sequential comparison needs at least "
                        f"{C.MIN_STUDIES_FOR_VERDICT} studies a side"
                        + ("" if max_studies else f" ({a} and {b} share {have})"))
    if planned > have and not ongoing:
        raise UserError(f"--max-studies {planned}: the store holds {have} studies of both {a} "
                        f"and {b}; a replay can look at no more (give at most {have})")
    if have < min(first, planned):
        raise UserError(f"{a} and {b} share {have} studies: the first look needs "
                        f"{min(first, planned)}")
    return have, planned


def sequential_compare(runs, cube: xr.Dataset, a: str, b: str, *, time_axis: str = "train",
                       workloads: Sequence[str] | None = None, config=None,
                       confidence: float = C.DEFAULT_CONFIDENCE,
                       detect: float = C.DEFAULT_DETECT, noise_cov=None,
                       max_studies: int | None = None, first: int = DEFAULT_FIRST_ROUND,
                       replicates: int = C.BOOTSTRAP_REPLICATES, seed: int = 0,
                       ongoing: bool = False, **options) -> SequentialComparison:
    """`pacebench compare --sequential`: A against B replayed round by round over a run table
    and its final cube (as compare_runs takes them), round k taking the k lowest-numbered
    studies of each; the first look after `first` rounds. `max_studies`: the N the test was
    planned for (default: every study the store holds for both); more than the store holds is
    an error unless `ongoing` (a study under way: `stopped_because` may then be None).
    `options`: passed on to compare.compare_runs for the comparison of the studies used."""
    from workbench.cubes import axis_column, final_cube, on_time_axis

    if not 0 < confidence < 1:
        raise UserError(f"--confidence must be in (0, 1), got {confidence}")
    mine = runs[runs["algorithm"].isin([a, b]).to_numpy(bool)]
    names = sorted({str(n) for n in mine["study_name"].dropna()})
    if len(names) > 1:
        raise UserError(f"the studies of {a} and {b} come from several study names "
                        f"({', '.join(names)}): a replay goes through one; pick it with "
                        f"--study NAME")
    column = axis_column(time_axis)
    rule = options.get("study_time", "algoperf")  # compare's study-time rule, the same here
    times = C.study_times_by(on_time_axis(cube, column), rule)
    have, planned = _plan(times, a, b, max_studies, first, ongoing)
    rounds = min(have, planned)
    available = [str(w) for w in times["workload"].values]
    chosen = [w for w in (workloads or available) if w in available]
    budgets = C.miss_budgets(runs, column, config)

    def run_test(on: xr.DataArray):
        blocks = blocks_of(on, a, b, chosen, rounds, first)
        return blocks, sequential_test(blocks, planned, confidence, seed)

    blocks, test = run_test(times)
    caps = [budgets.get(w, _largest(times, w)) for w in chosen]
    stop, why = stopping_look(test, blocks, caps, planned, detect, confidence)
    used = test.looks[stop].studies
    by_steps = test if column == "step" else run_test(
        C.study_times_by(on_time_axis(cube, "step"), rule))[1]
    steps_verdict = _verdict(by_steps.direction if by_steps.decided_at is not None
                             and by_steps.decided_at <= stop else 0, a, b)
    verdict = _verdict(test.direction if why == "decided" else 0, a, b)
    cut = _first_rounds(runs, times, a, b, used)
    result = C.compare_runs(cut, final_cube(cut), a, b, time_axis=time_axis,
                            workloads=chosen, config=config, confidence=confidence,
                            detect=detect, noise_cov=noise_cov, replicates=replicates,
                            seed=seed, **options)
    shown = C.NO_DIFFERENCE if result.withheld else verdict
    result = replace(result, verdict=shown, verdict_by_steps=steps_verdict,
                     measured_verdict=verdict if result.withheld else None)
    return SequentialComparison(result, test, used, why, planned, first, have, verdict)
