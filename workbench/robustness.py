"""Variant robustness: how an algorithm's time to target changes when its workload is changed.

A variant workload (catalog `variant` != "base") restates its own target; an algorithm is robust
when it still reaches the variant's target, in about the time it needs on the base workload.
Per (algorithm, variant) this module pairs the two per-workload times (`scoring.workload_times`:
the chosen trial per study, median over studies) and gives the time ratio variant / base; per
algorithm it summarises them as a robustness score: the share of variants reached and the median
slowdown.

It also scores the benchmark with and without AlgoPerf v0.5's held-out variant rule
(research/algoperf.md 3.2: a base workload's time counts only if its held-out variant's target
is also reached within 4x of the fastest on it), through `scoring.apply_rules`, so that a view
can show what the rule changes without touching the leaderboard's own rules.
"""
from __future__ import annotations

import dataclasses
from typing import Iterable, Mapping

import numpy as np
import pandas as pd
import xarray as xr

from workbench import scoring
from workbench.errors import UserError

__all__ = ["variant_pairs", "held_out_pairs", "variant_table", "robustness_scores",
           "held_out_times", "held_out_scores", "VARIANT_COLUMNS", "ROBUSTNESS_COLUMNS",
           "HELD_OUT_COLUMNS"]

VARIANT_COLUMNS = ("algorithm", "workload", "base_workload", "variant", "base_time",
                   "variant_time", "base_reached", "variant_reached", "ratio")
ROBUSTNESS_COLUMNS = ("algorithm", "variants", "variants_reached", "reached_share",
                      "slowdowns", "median_slowdown")
HELD_OUT_COLUMNS = ("algorithm", "score_without", "score_with", "exact_without", "exact_with",
                    "reached_without", "reached_with")


def variant_pairs(cube: xr.Dataset | xr.DataArray) -> dict[str, str]:
    """{variant workload: its base workload} for each variant of the cube whose base is in it too
    (read from the `base_workload` and `variant` coordinates of the workload dim)."""
    for coord in ("base_workload", "variant"):
        if coord not in cube.coords:
            raise UserError(f"the cube lacks the {coord!r} coordinate of its workloads; build "
                            "it with workbench.cubes.final_cube")
    names = [str(w) for w in cube["workload"].values]
    bases = [str(b) for b in cube["base_workload"].values]
    variants = [str(v) for v in cube["variant"].values]
    present = set(names)
    return {w: b for w, b, v in zip(names, bases, variants)
            if v != "base" and w != b and b in present}


def held_out_pairs(cube: xr.Dataset, config: scoring.ScoringConfig | None) -> dict[str, str]:
    """The variants the held-out rule holds out, {variant: base}: the config's (an AlgoPerf
    import records which were sampled) whose base is scored, else every variant of the cube
    whose base is a scored workload. A held-out variant without runs is a miss for everyone."""
    scored = _bases(cube, config)
    if config is not None and config.held_out:
        return {v: b for v, b in config.held_out.items() if b in scored}
    return {v: b for v, b in variant_pairs(cube).items() if b in scored}


def _bases(cube: xr.Dataset, config: scoring.ScoringConfig | None) -> list[str]:
    if config is not None and config.base_workloads is not None:
        return list(config.base_workloads)
    return scoring.scored_workloads(cube)


def variant_table(cube: xr.Dataset, times: xr.DataArray | None = None) -> pd.DataFrame:
    """One row per (algorithm, variant workload) of `variant_pairs`: VARIANT_COLUMNS.

    base_time and variant_time are the per-workload times (median over studies, in the cube's
    time units; +inf: the median study missed the target; NaN: no runs); *_reached says the time
    is finite. ratio = variant_time / base_time when both are finite, +inf when the base was
    reached and the variant was not, NaN when the base was not reached or either has no runs.
    `times`: `scoring.workload_times(cube)` when the caller has it already.
    """
    pairs = variant_pairs(cube)
    if not pairs:
        return pd.DataFrame(columns=list(VARIANT_COLUMNS))
    times = (scoring.workload_times(cube) if times is None else times) \
        .transpose("algorithm", "workload")
    variant_of = dict(zip((str(w) for w in cube["workload"].values),
                          (str(v) for v in cube["variant"].values)))
    # read as a NumPy table (a .sel per cell cost 0.7 ms: 0.17 s for 20 algorithms)
    column = {str(w): i for i, w in enumerate(times["workload"].values)}
    values = times.to_numpy().astype(float)
    rows = []
    for algorithm, row in zip((str(a) for a in times["algorithm"].values), values):
        for workload, base in pairs.items():
            b, v = float(row[column[base]]), float(row[column[workload]])
            rows.append({"algorithm": algorithm, "workload": workload, "base_workload": base,
                         "variant": variant_of[workload], "base_time": b, "variant_time": v,
                         "base_reached": bool(np.isfinite(b)),
                         "variant_reached": bool(np.isfinite(v)), "ratio": _ratio(v, b)})
    return pd.DataFrame(rows, columns=list(VARIANT_COLUMNS))


def _ratio(variant: float, base: float) -> float:
    if not np.isfinite(base) or np.isnan(variant):
        return np.nan
    return variant / base  # +inf when the variant missed


def robustness_scores(table: pd.DataFrame, required: Iterable[str] = ()) -> pd.DataFrame:
    """Per algorithm of a `variant_table`: ROBUSTNESS_COLUMNS.

    variants: the variants counted for the algorithm, those it has runs on plus the `required`
    ones (the held-out variants: there a variant without runs is a miss, as in AlgoPerf; a
    variant that only some algorithms ran, such as the unsampled variants of the AlgoPerf v0.5
    baseline, is not held against the others); variants_reached: of them, those whose target
    it reached; reached_share = variants_reached / variants (NaN when none is counted);
    median_slowdown: median of the finite ratios variant / base, over the `slowdowns`
    variants where both targets were reached (NaN when there is none).
    """
    missing = [c for c in VARIANT_COLUMNS if c not in table.columns]
    if missing:
        raise UserError(f"table lacks columns {missing}: pass robustness.variant_table output")
    required = set(required)
    rows = []
    for algorithm, group in table.groupby("algorithm", sort=True):
        counted = group[group["variant_time"].notna() | group["workload"].isin(required)]
        finite = counted["ratio"][np.isfinite(counted["ratio"].to_numpy(float))]
        reached = int(counted["variant_reached"].sum())
        rows.append({"algorithm": str(algorithm), "variants": len(counted),
                     "variants_reached": reached,
                     "reached_share": reached / len(counted) if len(counted) else np.nan,
                     "slowdowns": len(finite),
                     "median_slowdown": float(np.median(finite)) if len(finite) else np.nan})
    return pd.DataFrame(rows, columns=list(ROBUSTNESS_COLUMNS))


def held_out_times(times: xr.DataArray, bases: list[str],
                   held_out: Mapping[str, str]) -> xr.DataArray:
    """Per-workload times -> the scored times under the held-out rule (base workloads only).

    With one held-out variant per base this is exactly `scoring.apply_rules` with AlgoPerf's
    rule. A base with several variants (our own catalog has two per base) counts only if every
    one of them passes the rule: the rule is applied in rounds, each holding out one variant
    per base (round k: the k-th variant of each base), and a base time is +inf if any round
    made it so. (A round changes only the columns of its own bases, each from its own variant,
    and the cut-off on the other columns is the same in all rounds, so this is the rule with
    "its variant" read as "each of its variants".)
    """
    per_base: dict[str, list[str]] = {}
    for variant, base in held_out.items():
        per_base.setdefault(base, []).append(variant)
    rounds = [{vs[k]: b for b, vs in per_base.items() if len(vs) > k}
              for k in range(max((len(vs) for vs in per_base.values()), default=0))]
    ruled = [scoring.apply_rules(times, scoring.ScoringConfig(
        base_workloads=tuple(bases), held_out=pairs, apply_held_out=True)) for pairs in rounds]
    if not ruled:
        return scoring.apply_rules(times, scoring.ScoringConfig(base_workloads=tuple(bases)))
    # +inf beats any finite time; NaN only where every round left NaN
    return xr.concat(ruled, dim="_round").max("_round", skipna=True) \
        .rename("time_to_target").assign_attrs(times.attrs)


def held_out_scores(cube: xr.Dataset, config: scoring.ScoringConfig | None = None,
                    times: xr.DataArray | None = None) -> tuple[pd.DataFrame, dict]:
    """The benchmark score of each algorithm without and with the held-out rule.

    Both use the scored workloads of `config` (else the cube's bases), the 4x cut-off and the
    official 100-point grid (scoring.benchmark_scores; exact_*: scoring.exact_scores);
    reached_*: scored workloads with a finite time after the rules. The held-out variants are
    `held_out_pairs`. Returns the HELD_OUT_COLUMNS frame (best score with the rule first) and
    the pairs used, {variant: base} (empty: the rule changes nothing). `times`:
    `scoring.workload_times(cube)` when the caller has it already.
    """
    bases = _bases(cube, config)
    pairs = held_out_pairs(cube, config)
    times = scoring.workload_times(cube) if times is None else times
    plain_config = dataclasses.replace(config or scoring.ScoringConfig(),
                                       base_workloads=tuple(bases), held_out={},
                                       apply_held_out=False)
    plain = scoring.apply_rules(times, plain_config).transpose("algorithm", "workload")
    ruled = held_out_times(times, bases, pairs).transpose("algorithm", "workload")
    frame = pd.DataFrame({
        "algorithm": [str(a) for a in plain["algorithm"].values],
        "score_without": scoring.benchmark_scores(plain).values,
        "score_with": scoring.benchmark_scores(ruled).values,
        "exact_without": scoring.exact_scores(plain).values,
        "exact_with": scoring.exact_scores(ruled).values,
        "reached_without": np.isfinite(plain).sum("workload").values.astype(int),
        "reached_with": np.isfinite(ruled).sum("workload").values.astype(int),
    })
    frame = frame.sort_values(["score_with", "score_without", "algorithm"],
                              ascending=[False, False, True], ignore_index=True)
    return frame, pairs
