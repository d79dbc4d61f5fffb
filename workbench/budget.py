"""Tuning-budget curves: how an algorithm's result depends on how many trials it is tuned with.

From the trials already in a store, for each algorithm and workload: with a budget of k trials
drawn without replacement from its N stored trials, the probability that at least one reaches the
target and the median of the best time to target among them, computed exactly from order
statistics (no sampling). With the trials' times sorted, t_(1) <= ... <= t_(N), and M of them
misses (+inf, last), the k drawn all lie after position j with probability C(N - j, k) / C(N, k),
so

    P(best <= t_(j)) = 1 - C(N - j, k) / C(N, k),    P(reach) = 1 - C(M, k) / C(N, k).

The median best time is the first t_(j) where that reaches 1/2 (None while P(reach) < 1/2: the
median budget-k study misses). Across algorithms, the probability that each is the fastest at
budget k (Sivaprasad et al., ICML 2020, "Optimizer benchmarking needs to account for
hyperparameter tuning") follows from the same distributions, each algorithm drawing its own k
trials; ties between algorithms (rare with measured times) count half each. And the benchmark
score as a function of k: the performance-profile score (workbench.scoring) of the median best
times at budget k, the budget-k analogue of the median over studies of the best of 5 trials.

A trial here is any (study, trial, seed) cell of the store's final cube: studies are pooled, since
every study draws its trials from the same search space. The time is the cube's time to target:
training seconds, or wall seconds or steps on a cube moved to that axis (cubes.on_time_axis);
AlgoPerf's rule within a study (the smallest eval index first; among trials tied there, the
smallest time, then the lowest trial number: scoring.study_times) can differ from the smallest
time only where a trial that met the target at a later eval index took less time.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from workbench.cubes import AXIS_LABELS, axis_column
from workbench.errors import UserError
from workbench.scoring import ScoringConfig, apply_rules, benchmark_scores

__all__ = ["BudgetCurve", "best_of_k", "budget_curves", "fastest_probabilities",
           "scores_by_budget", "trial_times", "budget_json", "budget_text"]


@dataclass(frozen=True)
class BudgetCurve:
    """One (algorithm, workload): per budget k = 1..N, P(reach) and the median best time."""

    algorithm: str
    workload: str
    k: list[int]
    p_reach: list[float]
    median_best: list[float | None]


@functools.lru_cache(maxsize=4096)
def _survival(n: int, k: int) -> np.ndarray:
    """S[j] = C(n - j, k) / C(n, k), j = 0..n: the chance that k trials drawn from n sorted ones
    all lie after position j (exact integers, then one division each)."""
    whole = math.comb(n, k)
    out = np.array([math.comb(n - j, k) / whole for j in range(n + 1)], dtype=float)
    out.setflags(write=False)
    return out


def best_of_k(times: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, float]:
    """(sorted finite times, P(best == each of them), P(no trial reaches)) for k of the trials."""
    times = np.asarray(times, dtype=float)
    times = times[~np.isnan(times)]
    n = len(times)
    if not 1 <= k <= n:
        raise UserError(f"a budget of k={k} trials needs 1 <= k <= {n} (the trials stored)")
    hits = np.sort(times[np.isfinite(times)])
    survival = _survival(n, k)
    return hits, survival[:len(hits)] - survival[1:len(hits) + 1], float(survival[len(hits)])


def trial_times(cube: xr.Dataset) -> dict[tuple[str, str], np.ndarray]:
    """Per (algorithm, workload): the time to target of each trial present (+inf: a miss)."""
    time = cube["time_to_target"].transpose("algorithm", "workload", ...)
    out = {}
    for i, a in enumerate(time["algorithm"].values):
        for j, w in enumerate(time["workload"].values):
            values = time.values[i, j].ravel().astype(float)
            values = values[~np.isnan(values)]
            if values.size:
                out[(str(a), str(w))] = values
    return out


@functools.lru_cache(maxsize=64)
def _survival_table(n: int) -> np.ndarray:
    """Rows k = 1..n of _survival(n, k): shape (n, n + 1)."""
    out = np.stack([_survival(n, k) for k in range(1, n + 1)])
    out.setflags(write=False)
    return out


def budget_curves(trials: dict[tuple[str, str], np.ndarray]) -> list[BudgetCurve]:
    """The curve of every (algorithm, workload) with trials, k = 1..N (best_of_k and its median
    for every k at once)."""
    curves = []
    for (a, w), times in trials.items():
        times = np.asarray(times, dtype=float)
        times = times[~np.isnan(times)]
        n = len(times)
        if not n:
            continue
        hits = np.sort(times[np.isfinite(times)])
        survival = _survival_table(n)                    # (k, j)
        reach = 1.0 - survival[:, len(hits)]
        cdf = 1.0 - survival[:, 1:len(hits) + 1]         # P(best <= hits[j]) at each k
        first = np.argmax(cdf >= 0.5 - 1e-12, axis=1) if len(hits) else np.zeros(n, int)
        median = [float(hits[j]) if r >= 0.5 - 1e-12 else None for j, r in zip(first, reach)]
        curves.append(BudgetCurve(a, w, list(range(1, n + 1)), reach.tolist(), median))
    return curves


def fastest_probabilities(trials: dict[tuple[str, str], np.ndarray], workload: str
                          ) -> pd.DataFrame:
    """P(each algorithm is the fastest) on `workload` at budgets k = 1..min N: rows k, columns
    the algorithms and "none" (no algorithm reaches the target)."""
    mine = {a: np.asarray(t, dtype=float) for (a, w), t in trials.items() if w == workload}
    if not mine:
        raise UserError(f"no trials on workload {workload!r}")
    top = min(len(t) for t in mine.values())
    hits = {a: np.sort(t[np.isfinite(t)]) for a, t in mine.items()}
    survival = {a: _survival_table(len(t))[:top] for a, t in mine.items()}  # (k, j), k = 1..top
    columns = {"k": np.arange(1, top + 1),
               "none": np.prod([survival[a][:, len(hits[a])] for a in mine], axis=0)}
    for a, t in hits.items():  # every k at once: arrays (k, each hit of a)
        pmf = survival[a][:, :len(t)] - survival[a][:, 1:len(t) + 1]
        others = np.ones_like(pmf)
        for b in mine:
            if b != a:  # P(best_b > t) + half of P(best_b == t)
                above = survival[b][:, np.searchsorted(hits[b], t, side="right")]
                at_or_above = survival[b][:, np.searchsorted(hits[b], t, side="left")]
                others *= above + 0.5 * (at_or_above - above)
        columns[a] = (pmf * others).sum(axis=1)
    return pd.DataFrame(columns).set_index("k")


def scores_by_budget(curves: list[BudgetCurve], config: ScoringConfig | None = None,
                     scored: list[str] | None = None) -> pd.DataFrame:
    """The benchmark score of each algorithm at budgets k = 1..K, from the median best times (a
    None median is a miss): rows k, columns the algorithms. `scored`: the scored workloads
    (default: every workload of `curves`); K is the most trials of any (algorithm, scored
    workload), and a cell with fewer trials than k counts with all of its trials (it has no
    more to draw; AlgoPerf v0.5 logs hold 5 to 25 per cell). The config's held-out variants
    take part through its rules."""
    if not curves:
        return pd.DataFrame()
    scored = list(scored) if scored is not None else list(dict.fromkeys(c.workload
                                                                         for c in curves))
    held_out = list(config.held_out) if config is not None else []
    used = [c for c in curves if c.workload in scored or c.workload in held_out]
    top = max((len(c.k) for c in used if c.workload in scored), default=0)
    algorithms = list(dict.fromkeys(c.algorithm for c in used))
    workloads = list(dict.fromkeys(c.workload for c in used))
    if not top:
        return pd.DataFrame(columns=pd.Index(algorithms), index=pd.Index([], name="k"),
                            dtype=float)
    grid = np.full((top, len(algorithms), len(workloads)), np.nan)
    for c in used:
        medians = np.array([math.inf if m is None else m for m in c.median_best])
        grid[:, algorithms.index(c.algorithm), workloads.index(c.workload)] = \
            medians[np.minimum(np.arange(top), len(medians) - 1)]
    times = xr.DataArray(grid, dims=("k", "algorithm", "workload"),
                         coords={"k": np.arange(1, top + 1), "algorithm": algorithms,
                                 "workload": workloads}, attrs={"units": "s"})
    # every k at once, as scoring.bootstrap_interval scores its replicates
    scores = benchmark_scores(apply_rules(times, config)).transpose("k", "algorithm")
    frame = pd.DataFrame(scores.values, index=pd.Index(scores["k"].values, name="k"),
                         columns=[str(a) for a in scores["algorithm"].values])
    return frame.reindex(columns=algorithms)


def budget_json(curves: list[BudgetCurve], trials: dict[tuple[str, str], np.ndarray],
                config: ScoringConfig | None = None, scored: list[str] | None = None
                ) -> dict[str, Any]:
    """What `pacebench budget --json` prints."""
    out: dict[str, Any] = {"algorithms": {}}
    for c in curves:
        out["algorithms"].setdefault(c.algorithm, {"workloads": {}})["workloads"][c.workload] = {
            "k": c.k, "p_reach": [round(p, 6) for p in c.p_reach],
            "median_best": [None if m is None else round(m, 6) for m in c.median_best]}
    workloads = list(dict.fromkeys(c.workload for c in curves))
    out["p_fastest"] = {}
    for w in workloads:
        frame = fastest_probabilities(trials, w)
        out["p_fastest"][w] = {"k": [int(k) for k in frame.index],
                               **{str(col): [round(float(v), 6) for v in frame[col]]
                                  for col in frame.columns}}
    scores = scores_by_budget(curves, config, scored)
    out["score"] = {"k": [int(k) for k in scores.index], "workloads": scored,
                    **{str(a): [round(float(v), 6) for v in scores[a]] for a in scores.columns}}
    return out


def _cell(p_reach: float, median: float | None, unit: str = "s") -> str:
    time = "miss" if median is None else (f"{median:,.0f} {unit}" if median >= 100
                                          else f"{median:.3g} {unit}")
    return f"{p_reach:.2f} / {time}"


def budget_text(curves: list[BudgetCurve], trials: dict[tuple[str, str], np.ndarray],
                config: ScoringConfig | None = None, scored: list[str] | None = None,
                axis: str = "train_seconds") -> str:
    """What `pacebench budget` prints: per workload, P(reach) and the median best time of each
    algorithm at a few budgets, P(fastest), and the score by budget. `axis`: the time axis of
    the trials' times (cubes.axis_column), which the headings and cells name."""
    column = axis_column(axis)
    unit = "steps" if column == "step" else "s"
    lines = [f"time axis: {AXIS_LABELS[column]}"]
    for w in dict.fromkeys(c.workload for c in curves):
        mine = [c for c in curves if c.workload == w]
        top = max(len(c.k) for c in mine)
        shown = sorted({k for k in (1, 2, 3, 5, 10, 15, 20, top) if k <= top})
        lines.append(f"{w}: P(at least one of k trials reaches the target) / median best "
                     f"{AXIS_LABELS[column]} to target")
        rows = {c.algorithm: [_cell(c.p_reach[k - 1], c.median_best[k - 1], unit)
                              if k <= len(c.k) else "" for k in shown] for c in mine}
        width = max(17, 2 + max(len(x) for cells in rows.values() for x in cells))
        lines.append("  " + "algorithm".ljust(24) + "".join(f"k={k}".rjust(width)
                                                            for k in shown))
        for algorithm, cells in rows.items():
            lines.append("  " + algorithm[:23].ljust(24) + "".join(x.rjust(width) for x in cells))
        fastest = fastest_probabilities(trials, w)
        for k in sorted({1, min(5, fastest.index[-1]), fastest.index[-1]}):
            row = fastest.loc[k]
            lines.append(f"  P(fastest) with k={k}: "
                         + ", ".join(f"{a} {row[a]:.2f}" for a in fastest.columns))
    scores = scores_by_budget(curves, config, scored)
    if not scores.empty:
        lines.append(f"\nbenchmark score by tuning budget k (median best of k trials on each of "
                     f"{len(scored) if scored is not None else 'the'} scored workloads):")
        lines.append(scores.T.to_string(float_format=lambda v: f"{v:.3f}"))
    return "\n".join(lines)
