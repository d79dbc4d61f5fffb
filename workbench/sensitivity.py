"""How much a score depends on choices a reader cannot see: the clock and the pool.

Two questions the AlgoPerf working group's 2026 analyses ask of its own leaderboard
(research/anchors-2026b.md, section 1.3), answered with the scorer of workbench.scoring:

- **Rank shift.** Each algorithm's rank when times to target are counted on one clock (the
  scope's, by default training seconds) and on another (e.g. update steps), and the probability
  of each rank over the bootstrap of studies: per clock, the BOOTSTRAP_DRAWS resamplings that
  give the score intervals (scoring.bootstrap_medians, seed 0), each scored and ranked as the
  score table is. The probabilities are marginal: one distribution per clock.
- **Pool sensitivity.** A score is relative to the pool (the fastest time on each workload sets
  every ratio): each algorithm's score with each other algorithm left out, and the largest
  change.

Pure functions of study times (algorithm, workload, study) and per-workload times.
"""
from __future__ import annotations

from typing import Mapping

import numpy as np
import pandas as pd
import xarray as xr

from workbench import scoring

__all__ = ["replicate_ranks", "rank_probabilities", "point_ranks", "rank_shift", "spearman",
           "pool_sensitivity"]


def _tied_ranks(score: np.ndarray, exact: np.ndarray) -> np.ndarray:
    """Ranks (1 = best) by score, then exact score, higher first; algorithms equal in both share
    the best rank of their tie (1, 1, 3: two algorithms that both scored 0 are not 1st and 2nd)."""
    score, exact = np.asarray(score, float), np.asarray(exact, float)
    better = (score[None, :] > score[:, None]) | ((score[None, :] == score[:, None])
                                                  & (exact[None, :] > exact[:, None]))
    return 1 + better.sum(axis=1)


def point_ranks(times: xr.DataArray, config: scoring.ScoringConfig | None = None) -> pd.Series:
    """Rank of each algorithm (1 = best; ties share a rank) in the score table of per-workload
    `times` (scoring.score_table_of_times, in its order)."""
    table = scoring.score_table_of_times(times, config)
    ranks = _tied_ranks(table["score"].to_numpy(), table["exact_score"].to_numpy())
    return pd.Series(ranks, index=list(table["algorithm"]), name="rank")


def replicate_ranks(replicas: xr.DataArray,
                    config: scoring.ScoringConfig | None = None) -> pd.DataFrame:
    """Ranks of each bootstrap replicate (scoring.bootstrap_medians), each scored as the score
    table is (scoring rules, grid score, exact score, name): rows replicates, columns
    algorithms."""
    ruled = scoring.apply_rules(replicas, config).transpose("algorithm", "replicate", "workload")
    score = scoring.benchmark_scores(ruled).transpose("replicate", "algorithm").values
    exact = scoring.exact_scores(ruled).transpose("replicate", "algorithm").values
    names = [str(a) for a in ruled["algorithm"].values]
    ranks = np.stack([_tied_ranks(s, e) for s, e in zip(score, exact)])
    return pd.DataFrame(ranks, columns=names)


def rank_probabilities(ranks: pd.DataFrame) -> pd.DataFrame:
    """Per algorithm (rows) the share of replicates at each rank (columns 1..n)."""
    n = ranks.shape[1]
    counts = {a: np.bincount(ranks[a].to_numpy() - 1, minlength=n) / len(ranks)
              for a in ranks.columns}
    return pd.DataFrame.from_dict(counts, orient="index", columns=range(1, n + 1))


def rank_shift(times: Mapping[str, xr.DataArray], replicas: Mapping[str, xr.DataArray],
               config: scoring.ScoringConfig | None = None) -> dict[str, dict]:
    """Per algorithm, for each clock of `times` (clock -> per-workload times) and `replicas`
    (clock -> their bootstrap_medians): {"rank_<clock>": rank, "p_rank_<clock>": [P(rank 1),
    P(rank 2), ...]}; algorithms in the first clock's rank order."""
    out: dict[str, dict] = {}
    for clock, per_workload in times.items():
        ranks = point_ranks(per_workload, config)
        probabilities = rank_probabilities(replicate_ranks(replicas[clock], config))
        for algorithm, rank in ranks.items():
            entry = out.setdefault(algorithm, {})
            entry[f"rank_{clock}"] = int(rank)
            entry[f"p_rank_{clock}"] = [float(p) for p in probabilities.loc[algorithm]]
    return out


def spearman(shift: Mapping[str, Mapping], first: str, second: str) -> float:
    """Spearman's rank correlation between the ranks of two clocks of a rank_shift (ties take
    their mean rank, as scipy.stats.spearmanr does); NaN below 2 algorithms or when either
    clock ties everyone."""
    pairs = [(e[f"rank_{first}"], e[f"rank_{second}"]) for e in shift.values()]
    if len(pairs) < 2 or any(len({p[k] for p in pairs}) < 2 for k in (0, 1)):
        return float("nan")
    from scipy.stats import spearmanr  # here: importing SciPy's stats takes seconds, and the
    return float(spearmanr(*zip(*pairs)).statistic)  # dashboard's first page needs none of it


def pool_sensitivity(times: xr.DataArray,
                     config: scoring.ScoringConfig | None = None) -> dict[str, dict]:
    """Per algorithm: {"score": its score, "without": {other: its score with `other` left out
    of the pool}, "largest_change": the change (without - score) of largest size, signed
    (0.0 with a single algorithm)}. `times`: per-workload times (algorithm, workload), scored
    by scoring.score_table_of_times with `config`."""
    names = [str(a) for a in times["algorithm"].values]
    scores = _pool_scores(times, config)
    out: dict[str, dict] = {a: {"score": float(scores[0, i]), "without": {}}
                            for i, a in enumerate(names)}
    for k, left in enumerate(names if len(names) > 1 else []):
        for i, a in enumerate(names):
            if i != k:
                out[a]["without"][left] = float(scores[k + 1, i])
    for entry in out.values():
        changes = [s - entry["score"] for s in entry["without"].values()]
        entry["largest_change"] = float(max(changes, key=abs)) if changes else 0.0
    return out


def _pool_scores(times: xr.DataArray, config: scoring.ScoringConfig | None) -> np.ndarray:
    """The scores (scoring.benchmark_scores after scoring.apply_rules) of every algorithm of
    `times`, shape (pool, algorithm): pool 0 the whole pool, pool k + 1 the pool without
    algorithm k, all in one call of the rules (a call per pool: 0.44 s of a `score` of the
    AlgoPerf v0.5 logs, one call 0.03 s). The left-out algorithm's times are NaN: the rules
    take each workload's best over finite times only and treat every algorithm's times apart,
    so the others score as score_table_of_times scores them without it (its own score is
    unused)."""
    ordered = times.transpose("algorithm", "workload")
    n = ordered.sizes["algorithm"]
    data = np.repeat(ordered.values[None].astype(float), n + 1, axis=0)
    data[np.arange(1, n + 1), np.arange(n), :] = np.nan
    pools = xr.DataArray(data, dims=("pool", *ordered.dims), coords=ordered.coords,
                         attrs=ordered.attrs)
    ruled = scoring.apply_rules(pools, config)
    return scoring.benchmark_scores(ruled).transpose("pool", "algorithm").values
