"""Model-size ladders: the reference's loss-against-data fit per rung, equal-loss speedups with
bootstrap intervals, the equal-loss time ratio, and the trend of speedup with model size.

Pure functions over a tidy frame of final losses (one row per run; `FINAL_COLUMNS`), which
workbench.ladder_reads.ladder_finals reads from a store and workbench.results.Results.ladder passes in.

Per rung (one model size), with D the planned training tokens of a budget:
  - the reference's mean final validation loss over its seeds at each budget is fitted by
    L(D) = a * D^(-b) + c (least squares; a, c >= 0, 0 < b <= B_MAX; `fit_power_law`);
  - a candidate whose mean final loss at budget D is L_X has the equal-loss speedup
    D_ref(L_X) / D, where D_ref(L) = (a / (L - c))^(1/b) inverts the fit: the tokens the
    reference would need to reach L_X. L_X <= c: no amount of reference data reaches it (the
    speedup is unbounded, reported as undefined); D_ref outside the fitted budgets: extrapolated;
  - `value` is the geometric mean of the per-budget speedups over the budgets both sides ran
    where the speedup is defined (`value_all_budgets`: over all of the candidate's budgets);
  - the time ratio is the same with the reference's L(T) fitted over its train seconds:
    T_ref(L_X) / T_X (T_X the candidate's mean train seconds at that budget), flagged
    extrapolated as speedups are;
  - intervals: a bootstrap over seeds and the fit together. Each draw resamples, per budget, the
    reference's runs and each candidate's runs with replacement, refits the reference and
    recomputes every figure (`DRAWS` draws, seed 0, the same draws on every surface; each
    candidate's stream seeded by its name). Deviations of a resampled mean from the mean are
    scaled by sqrt(n / (n - 1)): a plain bootstrap of n runs shrinks a mean's variance by
    (n - 1) / n, which with 5 seeds is 20 % too narrow. With one seed per configuration and a
    stated `loss_noise`, a parametric bootstrap (mean + N(0, loss_noise^2 / runs)) instead;
  - fragility: each candidate's speedups with each of the reference's fitted budgets left out
    of its fit in turn (4 or more budgets), and per rung the largest move;
  - verdicts: one sentence per candidate over the rungs, with the trend.
Over rungs, `slope_per_doubling` is the least-squares slope of log2(speedup) against
log2(non-embedding params), its interval from the same draws.

Tuning per rung: beside `tuning` (the trials each algorithm's sweep got), `tuning_report`
{algorithm: {"trials", "chosen", "edge", "bracketed", ...}} judges each sweep with the tuning
report's edge rule (workbench/ladder_tuning.py ladder_entry): the sweep's runs (ladder phase
"tuning", `sweep_frame`) ranked by final validation loss, the range the algorithm's shipped
search space gives (the ranges runners/procedures/ladder.py sweeps), the floor the relative spread (CoV)
of its final runs' losses over seeds at the sweep's budget, the smallest (default: the tuning
report's DEFAULT_NOISE_FLOOR below 2 seeds). A best at an edge is a rung warning.
"""
from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import pandas as pd

from workbench import tuning as T
from workbench.ladder_tuning import ladder_entry, shipped_space
from workbench.errors import UserError
from workbench.ladder_intervals import (DRAWS, FRAGILE_CHANGE, INTERVAL_LEVEL,  # noqa: F401
                                        _pair, interval, rescaled_means, trend, widening)
from workbench.ladder_records import (FINAL_COLUMNS, LOSS_COLUMN, SWEEP_COLUMNS,  # noqa: F401
                                      _is_number, finals_frame, record_problem, sweep_frame)
from workbench.ladder_text import budget_text, ladder_text, tuning_table, verdict  # noqa: F401
from workbench.power_law import (B_MAX, PowerLawFit, _num, fit_power_law,  # noqa: F401
                                 fit_power_laws, invert)

__all__ = ["FINAL_COLUMNS", "LOSS_COLUMN", "DRAWS", "INTERVAL_LEVEL", "B_MAX", "MIN_FIT_BUDGETS", "EXTRAPOLATION_TOLERANCE",
           "PowerLawFit", "fit_power_law", "fit_power_laws", "invert", "rescaled_means", "interval", "widening",
           "rung_analysis", "trend", "ladder_analysis", "ladder_text", "record_problem",
           "finals_frame", "sweep_frame", "SWEEP_COLUMNS", "tuning_table", "budget_text",
           "name_key", "verdict", "FRAGILE_CHANGE"]

MIN_FIT_BUDGETS = 4     # fewer: a 3-parameter fit passes through the points (rmse ~ 0)
# D_ref within this fraction beyond the fitted budgets' ends still counts as inside: seed noise
# alone puts an equal algorithm's smallest and largest budget just outside half the time.
EXTRAPOLATION_TOLERANCE = 0.1


def _geo(values: np.ndarray) -> np.ndarray:
    """Geometric mean over the last axis: inf if any is inf, 0 if any is 0 (and none inf)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        logs = np.log(values)
    out = np.exp(logs.mean(-1))
    out = np.where(np.isinf(values).any(-1), np.inf, out)
    return out


@dataclass
class _Arm:
    """One algorithm's runs at one rung, per budget: (budget, tokens, runs x [loss, seconds])."""

    budgets: list[float]
    tokens: list[float]
    values: list[np.ndarray]

    @classmethod
    def of(cls, frame: pd.DataFrame) -> "_Arm":
        budget = frame["budget"].to_numpy(float)
        tokens = frame["tokens"].to_numpy(float)
        values = np.stack([frame["final_loss"].to_numpy(float),
                           frame["train_seconds"].to_numpy(float)], 1)
        levels = np.unique(budget)
        return cls([float(b) for b in levels],
                   [float(np.median(tokens[budget == b])) for b in levels],
                   [values[budget == b] for b in levels])

    def means(self) -> np.ndarray:  # budgets x [loss, seconds]
        return np.array([v.mean(0) for v in self.values]).reshape(-1, 2)

    def draws(self, draws: int, rng: np.random.Generator,
              loss_noise: float | None = None) -> np.ndarray:  # draws x budgets x 2
        """Bootstrap means per budget: resampled seeds, or with `loss_noise` (one seed per
        configuration) the mean plus normal noise of sd loss_noise / sqrt(runs), seconds as
        they are (a parametric bootstrap)."""
        if loss_noise is None:
            return np.stack([rescaled_means(v, draws, rng) for v in self.values], 1)
        means = np.repeat(self.means()[None], draws, 0)
        runs = np.array([len(v) for v in self.values], float)
        means[..., 0] += rng.standard_normal(means.shape[:2]) * loss_noise / np.sqrt(runs)
        return means

    def labels(self) -> list[str]:
        return [budget_text(b) for b in self.budgets]

    def only(self, labels: Sequence[str]) -> "_Arm":
        """The budgets whose printed label is among `labels`."""
        keep = [i for i, label in enumerate(self.labels()) if label in set(labels)]
        return _Arm([self.budgets[i] for i in keep], [self.tokens[i] for i in keep],
                    [self.values[i] for i in keep])

    def seeds(self) -> int:
        return min((len(v) for v in self.values), default=0)


def _usable(frame: pd.DataFrame) -> pd.DataFrame:
    """Runs with a finite final loss and positive train seconds (or none: an imported table
    without seconds, which gives no time ratio), of a finished status."""
    seconds = frame["train_seconds"].astype(float)
    ok = (frame["status"] == "complete") & np.isfinite(frame["final_loss"].astype(float)) & \
        ((seconds > 0) | seconds.isna())
    return frame[ok]


def _outside(x: np.ndarray, low: float, high: float) -> np.ndarray:
    return (x < low * (1 - EXTRAPOLATION_TOLERANCE)) | (x > high * (1 + EXTRAPOLATION_TOLERANCE))


def _speedups(fits: tuple, time_fits: tuple, means: np.ndarray, tokens: np.ndarray,
              low: float, high: float, time_range: tuple[float, float] = (math.nan, math.nan)
              ) -> dict[str, np.ndarray]:
    """Per budget (last axis): speedup and whether extrapolated (D_ref outside [low, high]),
    time ratio and whether extrapolated (T_ref outside `time_range`); draws broadcast."""
    a, b, c = (np.asarray(v, float)[..., None] for v in fits)
    ta, tb, tc = (np.asarray(v, float)[..., None] for v in time_fits)
    loss, seconds = means[..., 0], means[..., 1]
    d_ref = invert(a, b, c, loss)
    t_ref = invert(ta, tb, tc, loss)
    with np.errstate(invalid="ignore"):
        timed = _outside(t_ref, *time_range) & np.isfinite(t_ref / seconds)
    return {"speedup": d_ref / tokens, "time_ratio": t_ref / seconds,
            "extrapolated": _outside(d_ref, low, high), "time_extrapolated": timed}


def name_key(name: str) -> int:
    """A stable 63-bit number of a name: its candidate's random stream, so adding or removing
    another candidate moves none of its draws."""
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big") >> 1


@dataclass
class _Reference:
    """The reference's fit at a rung and its bootstrap refits (what every candidate reads)."""

    arm: _Arm          # all of its budgets
    fit_arm: _Arm      # the budgets fitted
    fit: PowerLawFit
    time_fit: PowerLawFit | None
    fits: tuple        # refits per draw: (a, b, c), each (draws,)
    time_fits: tuple
    left_out: dict[str, tuple] | None  # {budget label: (a, b, c) without it}; None: < 4 budgets


def _reference(ref: _Arm, fit_budgets: Sequence[str] | None, draws: int,
               rng: np.random.Generator, loss_noise: float | None,
               warnings: list[str]) -> _Reference | None:
    """The reference's fits at a rung, or None (and a warning) when it has under 3 budgets."""
    fit_arm = ref.only(fit_budgets) if fit_budgets else ref
    if fit_budgets:
        lacking = sorted(set(fit_budgets) - set(fit_arm.labels()), key=float)
        if lacking:
            warnings.append(f"--fit-budgets {', '.join(lacking)}: the reference has no run at "
                            "that budget here")
    if len(fit_arm.budgets) < 3:
        warnings.append(f"the reference has {len(fit_arm.budgets)} budgets to fit here; the fit "
                        "L(D) = a D^-b + c needs 3 or more: no speedup")
        return None
    if len(fit_arm.budgets) < MIN_FIT_BUDGETS:
        warnings.append(f"the fit passes through the reference's {len(fit_arm.budgets)} budgets "
                        f"(3 parameters): its rmse says nothing of its error; use "
                        f"{MIN_FIT_BUDGETS} or more budgets")
    means, tokens = fit_arm.means(), np.array(fit_arm.tokens)
    fit = fit_power_law(tokens, means[:, 0])
    time_fit = _time_fit(means, warnings)
    drawn = fit_arm.draws(draws, rng, loss_noise)
    fits = fit_power_laws(tokens, drawn[..., 0])
    time_fits = fit_power_laws(drawn[..., 1], drawn[..., 0]) if time_fit else \
        (np.nan, np.nan, np.nan)
    left_out = None
    if len(fit_arm.budgets) >= MIN_FIT_BUDGETS:
        keep = np.ones(len(tokens), bool)
        left_out = {}
        for j, label in enumerate(fit_arm.labels()):
            keep[:] = True
            keep[j] = False
            f = fit_power_law(tokens[keep], means[keep, 0])
            left_out[label] = (f.a, f.b, f.c)
    return _Reference(ref, fit_arm, fit, time_fit, fits, time_fits, left_out)


def rung_analysis(frame: pd.DataFrame, reference: str, rung_index: int = 0,
                  draws: int = DRAWS, level: float = INTERVAL_LEVEL, seed: int = 0,
                  sweeps: pd.DataFrame | None = None, loss_noise: float | None = None,
                  fit_budgets: Sequence[str] | None = None) -> dict[str, Any]:
    """The analysis of one rung (`frame`: its runs, FINAL_COLUMNS) as the JSON of one entry of
    "rungs", plus "_draws": {algorithm: bootstrap draws of the rung's speedup} for `trend`.
    Draws come from default_rng([seed, name_key(rung), 0]) for the reference and
    default_rng([seed, name_key(rung), name_key(candidate)]) for a candidate, so adding a
    candidate moves no other figure (`rung_index` is kept for callers; it does not matter).
    `loss_noise`: the sd of one run's final loss (nats), for a parametric bootstrap when each
    configuration has one seed. `fit_budgets`: the budget labels (as they print) the
    reference's fit uses; default all of its budgets.
    `sweeps`: the rung's sweep runs (sweep_frame), behind its `tuning_report`."""
    first = frame.iloc[0]
    out: dict[str, Any] = {"name": str(first["rung"]),
                           "non_embedding_params": int(first["non_embedding_params"]),
                           "params": int(first["params"]) if pd.notna(first["params"]) else None,
                           "fit": None, "time_fit": None, "losses": {}, "speedups": {},
                           "seeds": {}, "tuning": {}, "tuning_report": {}, "transfer": {},
                           "fragility": None, "fragility_note": None, "warnings": [],
                           "_draws": {}}
    warnings = out["warnings"]
    used = _usable(frame)
    _describe(out, frame, used, reference)
    _tuning_report(out, frame, sweeps)
    ref_runs = used[used["algorithm"] == reference]
    if ref_runs.empty:
        warnings.append(f"the reference {reference} has no finished run at this rung: "
                        "no fit, no speedup")
        return out
    key = name_key(out["name"])
    ref = _reference(_Arm.of(ref_runs), fit_budgets, draws,
                     np.random.default_rng([seed, key, 0]), loss_noise, warnings)
    if ref is None:
        return out
    out["fit"] = ref.fit.to_json()
    out["time_fit"] = ref.time_fit.to_json() if ref.time_fit else None
    if ref.left_out is None:
        out["fragility_note"] = (f"leaving one budget out of the fit needs {MIN_FIT_BUDGETS} or "
                                 f"more reference budgets; this rung fits "
                                 f"{len(ref.fit_arm.budgets)}")
    else:
        out["fragility"] = {}
    for algorithm in sorted(set(used["algorithm"]) - {reference}):
        arm = _Arm.of(used[used["algorithm"] == algorithm])
        rng = np.random.default_rng([seed, key, name_key(str(algorithm))])
        result = _candidate(arm, ref, arm.draws(draws, rng, loss_noise), level, loss_noise)
        out["_draws"][algorithm] = (result.pop("_draws"), result.pop("_dof"))
        fragility = result.pop("_fragility")
        if out["fragility"] is not None:
            out["fragility"][algorithm] = fragility
        warnings += [f"{algorithm}: {w}" for w in result.pop("_warnings")]
        out["speedups"][algorithm] = result
    return out


def _describe(out: dict[str, Any], frame: pd.DataFrame, used: pd.DataFrame,
              reference: str) -> None:
    """Per algorithm of a rung (into `out`): final losses, seeds, tuning trials, transfer rule,
    the warnings about its runs, and whether the reference was tuned less than a candidate."""
    for algorithm, part in frame.groupby("algorithm", sort=True):
        mine = used[used["algorithm"] == algorithm]
        out["losses"][str(algorithm)] = _loss_rows(mine)
        out["seeds"][str(algorithm)] = int(mine["seed"].nunique())
        trials = pd.to_numeric(part["tuning_trials"], errors="coerce").dropna()
        out["tuning"][str(algorithm)] = int(trials.max()) if len(trials) else None
        rules = [str(t) for t in part["transfer"].dropna().unique()]
        out["transfer"][str(algorithm)] = rules[0] if len(rules) == 1 else (rules or None)
        out["warnings"] += _run_flags(str(algorithm), part)
    ref_trials = out["tuning"].get(reference)
    for algorithm, trials in out["tuning"].items():
        if algorithm != reference and trials is not None and ref_trials is not None \
                and ref_trials < trials:
            out["warnings"].append(f"the reference {reference} got {ref_trials} tuning "
                                   f"trials, {algorithm} got {trials}: its speedup is "
                                   "inflated by tuning")


def _tuning_report(out: dict[str, Any], frame: pd.DataFrame,
                   sweeps: pd.DataFrame | None) -> None:
    """Per algorithm of a rung (into out["tuning_report"]): its sweep judged by the tuning
    report's edge rule (ladder_tuning.ladder_entry; see the module doc); a warning for each edge."""
    sweeps = sweeps if sweeps is not None else pd.DataFrame(columns=list(SWEEP_COLUMNS))
    for algorithm, part in frame.groupby("algorithm", sort=True):
        name = str(algorithm)
        first = part[part["budget"] == part["budget"].min()]
        losses = pd.to_numeric(first["final_loss"], errors="coerce").to_numpy(float)
        losses = losses[np.isfinite(losses)]
        floor = float(np.std(losses, ddof=1) / np.mean(losses)) \
            if len(losses) >= 2 and np.mean(losses) > 0 else None
        chosen = T.hparams_of(part["hparams"].iloc[0]) if "hparams" in part.columns else {}
        entry = ladder_entry(name, shipped_space(name),
                               sweeps[sweeps["algorithm"] == algorithm], chosen, floor)
        out["tuning_report"][name] = entry
        if any(entry["edge"].values()):
            out["warnings"].append(f"tuning at rung {out['name']}: {entry['finding']}")


def _time_fit(means: np.ndarray, warnings: list[str]) -> PowerLawFit | None:
    """The reference's L(T) over its mean train seconds per budget; None (and a warning) when
    they are not 3 or more distinct positive times."""
    seconds = means[:, 1]
    if np.isnan(seconds).all():
        warnings.append("the reference's runs give no train seconds (an imported table without "
                        "them): no time ratio")
        return None
    if len(np.unique(seconds)) < 3 or not (seconds > 0).all():
        warnings.append("the reference's train seconds are not 3 or more distinct times: no "
                        "time ratio")
        return None
    return fit_power_law(seconds, means[:, 0])


def _candidate(arm: _Arm, ref: _Reference, arm_draws: np.ndarray, level: float,
               loss_noise: float | None) -> dict[str, Any]:
    """One candidate's speedups at a rung: point values from the reference's fits, intervals
    from the draws (the reference's refits and the candidate's `arm_draws`), leave-one-out
    values. The rung's `value` is the geometric mean over the budgets both sides ran where
    the speedup is defined (`value_all_budgets`: over all of the candidate's budgets)."""
    fit, time_fit = ref.fit, ref.time_fit
    tokens = np.array(arm.tokens)
    time_point = (time_fit.a, time_fit.b, time_fit.c) if time_fit else (np.nan,) * 3
    time_range = (time_fit.low, time_fit.high) if time_fit else (math.nan, math.nan)
    point = _speedups((fit.a, fit.b, fit.c), time_point, arm.means(), tokens, fit.low,
                      fit.high, time_range)
    drawn = _speedups(ref.fits, ref.time_fits, arm_draws, tokens, fit.low, fit.high)
    seeds = arm.seeds()
    resampled = loss_noise is not None or (seeds >= 2 and ref.arm.seeds() >= 2)
    dof = math.inf if loss_noise is not None else seeds + ref.arm.seeds() - 2
    labels, shared_labels = arm.labels(), set(ref.arm.labels())
    shared = np.array([label in shared_labels for label in labels], bool)
    defined = np.isfinite(point["speedup"]) & (point["speedup"] > 0)
    use = shared & defined
    warnings = _use_warnings(labels, shared, defined)
    loo = _leave_one_out(ref.left_out, arm.means(), tokens)
    per_budget = []
    for j, budget in enumerate(arm.budgets):
        value = float(point["speedup"][j])
        low, high = interval(drawn["speedup"][:, j], level, value, dof) if resampled \
            else (math.nan,) * 2
        per_budget.append({"budget": budget, "tokens": _num(tokens[j], 1),
                           "value": _num(value), "interval": _pair(low, high),
                           "extrapolated": bool(point["extrapolated"][j]),
                           "below_floor": bool(np.isinf(value)),
                           "shared": bool(shared[j]),
                           "time_ratio": _num(point["time_ratio"][j]),
                           "time_ratio_extrapolated": bool(point["time_extrapolated"][j]),
                           "leave_one_out": None if loo is None else
                           {k: _num(v[j]) for k, v in loo.items()},
                           "seeds": len(arm.values[j])})
    if use.any():
        geo, geo_draws = _geo(point["speedup"][use]), _geo(drawn["speedup"][:, use])
        time_geo, time_draws = _geo(point["time_ratio"][use]), _geo(drawn["time_ratio"][:, use])
    else:  # no budget both sides ran with a defined speedup: no rung value
        geo, time_geo = math.nan, math.nan
        geo_draws = time_draws = np.full(len(arm_draws), math.nan)
    low, high = interval(geo_draws, level, float(geo), dof) if resampled else (math.nan,) * 2
    t_low, t_high = interval(time_draws, level, float(time_geo), dof) if resampled \
        else (math.nan,) * 2
    return {"value": _num(geo), "interval": _pair(low, high),
            "value_all_budgets": _num(_geo(point["speedup"])),
            "budgets_used": [labels[j] for j in np.flatnonzero(use)],
            "extrapolated": bool(point["extrapolated"][use].any()),
            "below_floor": bool(np.isinf(point["speedup"]).any()),
            "time_ratio": _num(time_geo), "time_ratio_interval": _pair(t_low, t_high),
            "time_ratio_extrapolated": bool(point["time_extrapolated"][use].any()),
            "seeds": seeds, "reference_seeds": ref.arm.seeds(), "budgets": len(arm.budgets),
            "per_budget": per_budget, "_draws": geo_draws if resampled else None,
            "_dof": dof, "_warnings": warnings,
            "_fragility": _fragility(loo, use, geo, (low, high))}


def _use_warnings(labels: list[str], shared: np.ndarray, defined: np.ndarray) -> list[str]:
    """Why some budgets are left out of a candidate's rung value."""
    out = []
    alone = [label for label, s in zip(labels, shared) if not s]
    if alone:
        out.append(f"budget {', '.join(alone)} has no reference run: shown, left out of the "
                   "rung's speedup (value_all_budgets keeps it)")
    below = [label for label, s, d in zip(labels, shared, defined) if s and not d]
    if below:
        out.append(f"at budget {', '.join(below)} the loss is at or below the reference fit's "
                   "floor c: no speedup there; the rung's speedup uses the other budgets")
    return out


def _leave_one_out(left_out: dict[str, tuple] | None, means: np.ndarray,
                   tokens: np.ndarray) -> dict[str, np.ndarray] | None:
    """{budget label: per-budget speedups with that budget left out of the reference's fit}."""
    if left_out is None:
        return None
    return {label: invert(a, b, c, means[:, 0]) / tokens for label, (a, b, c) in left_out.items()}


def _fragility(loo: dict[str, np.ndarray] | None, use: np.ndarray, value: float,
               pair: tuple[float, float]) -> dict[str, Any] | None:
    """The largest |log2 change| of the rung's speedup when one reference budget is left out
    of the fit, the budget causing it, and whether it moves more than the interval's
    half-width on a log scale (more than 5 % without an interval)."""
    if loo is None or not use.any() or not (math.isfinite(value) and value > 0):
        return None
    changes = {}
    for label, values in loo.items():
        moved = _geo(values[use])
        changes[label] = (abs(math.log2(moved / value)) if math.isfinite(moved) and moved > 0
                          else math.inf, moved)
    label = max(changes, key=lambda k: changes[k][0])
    change, moved = changes[label]
    low, high = pair
    bound = (math.log2(high) - math.log2(low)) / 2 if math.isfinite(low) and low > 0 and \
        math.isfinite(high) else math.log2(1 + FRAGILE_CHANGE)
    return {"largest_log2_change": _num(change), "budget": label, "value_without": _num(moved),
            "fragile": bool(change > bound), "threshold_log2": _num(bound)}


def _loss_rows(runs: pd.DataFrame) -> list[dict[str, Any]]:
    """Per budget: mean and spread (sample standard deviation) of final loss, seeds, mean
    train seconds and tokens."""
    rows = []
    for budget, part in runs.groupby("budget", sort=True):
        loss = part["final_loss"].astype(float)
        rows.append({"budget": float(budget), "tokens": _num(part["tokens"].median(), 1),
                     "mean": _num(loss.mean()),
                     "sd": _num(loss.std(ddof=1)) if len(loss) > 1 else None,
                     "seeds": int(len(loss)),
                     "train_seconds": _num(part["train_seconds"].astype(float).mean(), 3)})
    return rows


def _run_flags(algorithm: str, runs: pd.DataFrame) -> list[str]:
    """Warnings about one algorithm's runs at a rung: runs left out (not complete, no finite
    loss), runs read before their schedule ended, runs that saw tokens twice."""
    out = []
    used = _usable(runs)
    left = len(runs) - len(used)
    if left:
        statuses = ", ".join(f"{n} {s}" for s, n in
                             runs.loc[~runs.index.isin(used.index), "status"].value_counts()
                             .sort_index().items())
        out.append(f"{algorithm}: {left} runs left out, without a finished final loss "
                   f"({statuses})")
    early = int((used["early"].astype(bool)).sum())
    if early:
        out.append(f"{algorithm}: {early} runs read before their schedule ended (last step "
                   "short of the planned steps): their loss is not end-of-decay")
    repeated = int(runs["repeated_tokens"].fillna(False).astype(bool).sum())
    if repeated:
        out.append(f"{algorithm}: {repeated} runs saw training tokens more than once "
                   "(repeated data): their loss is not fresh-data loss")
    return out


def ladder_analysis(finals: pd.DataFrame, reference: str | None = None, draws: int = DRAWS,
                    level: float = INTERVAL_LEVEL, seed: int = 0,
                    sweeps: pd.DataFrame | None = None, loss_noise: float | None = None,
                    fit_budgets: Sequence[float] | None = None) -> dict[str, Any]:
    """The ladder's JSON (see the module doc) from its runs' final losses (FINAL_COLUMNS) and
    its sweep runs (`sweeps`, sweep_frame; default finals.attrs["sweeps"], as
    ladder_reads.ladder_finals leaves it; none: every tuning_report says "not swept").
    `reference`: default the one the runs name (a `reference` column, from the ladder's
    record), else adamw when present, else the first name. A ValueError names the valid names
    for an unknown reference. `loss_noise` (nats, > 0): intervals by a parametric bootstrap
    when every configuration has one seed (refused with 2 or more: their spread is used).
    `fit_budgets`: the reference's budgets its fit uses (default all)."""
    missing = [c for c in FINAL_COLUMNS if c not in finals.columns]
    if missing:
        raise UserError(f"ladder frame lacks {', '.join(missing)}")
    if finals.empty:
        raise UserError("no ladder runs: run `pacebench ladder --sizes ...` first")
    names = sorted(set(finals["algorithm"]))
    reference = reference or _default_reference(finals, names)
    if reference not in names:
        raise UserError(f"unknown reference {reference!r}: the ladder's algorithms are "
                        f"{', '.join(names)}")
    _check_loss_noise(finals, loss_noise)
    labels = _fit_labels(fit_budgets)
    order = finals.groupby("rung")["non_embedding_params"].max().sort_values(kind="stable")
    sweeps = sweeps if sweeps is not None else finals.attrs.get("sweeps")
    rungs = [rung_analysis(finals[finals["rung"] == rung], reference, i, draws, level, seed,
                           None if sweeps is None else sweeps[sweeps["rung"] == rung],
                           loss_noise, labels)
             for i, rung in enumerate(order.index)]
    out = {"reference": reference, "rungs": rungs, "trend": trend(rungs, level),
           "interval_level": level, "draws": draws, "bootstrap_seed": seed,
           "loss_noise": loss_noise, "fit_budgets": labels, "interval_note": None,
           "origins": _origins(finals)}
    one_seed = any(s["interval"] is None and s["value"] is not None and
                   min(s["seeds"], s["reference_seeds"]) < 2
                   for r in rungs for s in r["speedups"].values())
    if one_seed:
        out["interval_note"] = ("intervals n/a: one seed per configuration; give --loss-noise "
                                "SIGMA (the sd of one run's final loss in nats, e.g. a measured "
                                "noise floor) for a parametric bootstrap")
    out["verdicts"] = {name: verdict(name, rungs, out["trend"][name], reference, level)
                       for name in out["trend"]}
    for rung in rungs:
        rung.pop("_draws")
    return out


def _check_loss_noise(finals: pd.DataFrame, loss_noise: float | None) -> None:
    if loss_noise is None:
        return
    if not _is_number(loss_noise) or loss_noise <= 0:
        raise UserError(f"--loss-noise {loss_noise!r} is not valid; valid is a loss sd in "
                        "nats > 0, e.g. 0.0015")
    used = _usable(finals)
    counts = used.groupby(["rung", "algorithm", "budget"]).size()
    if len(counts) and counts.max() >= 2:
        (rung, algorithm, budget), n = counts.idxmax(), int(counts.max())
        raise UserError(f"--loss-noise is for one seed per configuration; {algorithm} has {n} "
                        f"seeds at rung {rung}, budget {budget_text(budget)}: their spread "
                        "gives the intervals (drop --loss-noise)")


def _fit_labels(fit_budgets: Sequence[float] | None) -> list[str] | None:
    if fit_budgets is None:
        return None
    if not fit_budgets or not all(_is_number(b) and b > 0 for b in fit_budgets):
        raise UserError(f"--fit-budgets {fit_budgets!r} is not valid; valid are budgets > 0, "
                        "e.g. 1,2,4,8")
    return sorted({budget_text(b) for b in fit_budgets}, key=float)


def _origins(finals: pd.DataFrame) -> dict[str, int]:
    """{where runs came from: how many}: "pacebench" or an imported table's label."""
    if "origin" not in finals.columns:
        return {"pacebench": len(finals)}
    labels = finals["origin"].where(finals["origin"].notna(), "pacebench").astype(str)
    return {k: int(v) for k, v in labels.value_counts().sort_index().items()}


def _default_reference(finals: pd.DataFrame, names: list[str]) -> str:
    recorded = finals["reference"].dropna() if "reference" in finals.columns else pd.Series([])
    recorded = [r for r in recorded.astype(str) if r in names]
    if recorded:
        return pd.Series(recorded).value_counts().index[0]
    return "adamw" if "adamw" in names else names[0]
