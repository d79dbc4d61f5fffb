"""Model-size ladders: the reference's loss-against-data fit per rung, equal-loss speedups with
bootstrap intervals, the equal-loss time ratio, and the trend of speedup with model size.

Pure functions over a tidy frame of final losses (one row per run; `FINAL_COLUMNS`), which
workbench.query.ladder_finals reads from a store and workbench.results.Results.ladder passes in.

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
report's edge rule (workbench/tuning.py ladder_entry): the sweep's runs (ladder phase
"tuning", `sweep_frame`) ranked by final validation loss, the range the algorithm's shipped
search space gives (the ranges runners/procedures/ladder.py sweeps), the floor the relative spread (CoV)
of its final runs' losses over seeds at the sweep's budget, the smallest (default: the tuning
report's DEFAULT_NOISE_FLOOR below 2 seeds). A best at an edge is a rung warning.
"""
from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from workbench import tuning as T
from workbench.errors import UserError

__all__ = ["FINAL_COLUMNS", "LOSS_COLUMN", "DRAWS", "INTERVAL_LEVEL", "B_MAX", "MIN_FIT_BUDGETS", "EXTRAPOLATION_TOLERANCE",
           "PowerLawFit", "fit_power_law", "fit_power_laws", "invert", "rescaled_means", "interval", "widening",
           "rung_analysis", "trend", "ladder_analysis", "ladder_text", "record_problem",
           "finals_frame", "sweep_frame", "SWEEP_COLUMNS", "tuning_table", "budget_text",
           "name_key", "verdict", "FRAGILE_CHANGE"]

# Columns of the frame the analysis reads: one row per run.
FINAL_COLUMNS = (
    "run_id", "rung", "non_embedding_params", "params", "algorithm", "budget",  # budget: x 20
    "tokens",          # planned training tokens D                            # tokens/param
    "seed", "final_loss",  # the last eval row's validation loss
    "train_seconds",   # accumulated train seconds at that eval
    "status", "early",  # early: read before its schedule ended (step < planned, or not complete)
    "repeated_tokens", "transfer", "tuning_trials",
)
# Columns of a ladder's sweep runs (phase "tuning"): one row per run (`sweep_frame`).
SWEEP_COLUMNS = ("run_id", "rung", "algorithm", "hparams", "status", "final_loss", "study_name")
LOSS_COLUMN = "validation/loss"  # the eval rows' column whose last value is a run's final loss
DRAWS = 1000            # bootstrap draws behind every ladder interval
INTERVAL_LEVEL = 0.95   # two-sided; percentile intervals of the draws
B_MAX = 3.0             # largest exponent b the fit considers (language models: 0.05 to 0.6)
MIN_FIT_BUDGETS = 4     # fewer: a 3-parameter fit passes through the points (rmse ~ 0)
# D_ref within this fraction beyond the fitted budgets' ends still counts as inside: seed noise
# alone puts an equal algorithm's smallest and largest budget just outside half the time.
EXTRAPOLATION_TOLERANCE = 0.1
FRAGILE_CHANGE = 0.05   # without an interval: a leave-one-out move beyond 5 % is flagged
_B_GRID = np.geomspace(1e-3, B_MAX, 64)  # neighbours 13 % apart; golden section refines
_GOLDEN = (math.sqrt(5) - 1) / 2
_HUGE = 1e300


@dataclass(frozen=True)
class PowerLawFit:
    """L(x) = a * x^(-b) + c fitted to `points` points; rmse of the fitted points."""

    a: float
    b: float
    c: float
    rmse: float
    points: int
    low: float   # the smallest and largest x fitted: outside them is extrapolation
    high: float

    def __call__(self, x):
        return self.a * np.power(np.asarray(x, float), -self.b) + self.c

    def inverse(self, loss):
        """The x at which the fit reaches `loss` (inf at or below c)."""
        return invert(np.asarray(self.a), np.asarray(self.b), np.asarray(self.c), loss)

    def to_json(self) -> dict[str, Any]:
        return {"a": _num(self.a), "b": _num(self.b), "c": _num(self.c),
                "rmse": _num(self.rmse), "points": self.points}


def invert(a, b, c, loss):
    """x with a * x^(-b) + c = loss, elementwise (broadcast): inf where loss <= c (the fit never
    gets there), 0 where a == 0 and loss > c (a flat fit is there from the start), NaN where
    any input is NaN."""
    a, b, c, loss = np.broadcast_arrays(*(np.asarray(v, float) for v in (a, b, c, loss)))
    gap = loss - c
    out = np.full(gap.shape, np.inf)
    ok = gap > 0
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        out[ok] = np.where(a[ok] > 0, np.power(a[ok] / gap[ok], 1.0 / b[ok]), 0.0)
    out[np.isnan(gap) | np.isnan(a) | np.isnan(b)] = np.nan  # no fit, or no loss: undefined
    return out


def _profile(z: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For z = x^(-b) fixed, the least-squares (a, c) with a, c >= 0 and the sum of squared
    errors, per row of y (..., points); z broadcasts against y. From the five sums of z and y
    (a regression on one variable), so that a grid of b over many draws stays cheap."""
    z = np.broadcast_to(z, np.broadcast_shapes(z.shape, y.shape))
    n = z.shape[-1]
    sz, sy, szz = z.sum(-1), y.sum(-1), (z * z).sum(-1)
    szy, syy = (z * y).sum(-1), (y * y).sum(-1)
    spread = n * szz - sz * sz
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.where(spread > 0, (n * szy - sz * sy) / spread, 0.0)
        a = np.maximum(a, 0.0)  # a < 0: the best fit is flat, a = 0 and c the mean
        c = (sy - a * sz) / n
        through_zero = c < 0    # c pinned at 0: a from the regression through the origin
        a = np.where(through_zero, np.maximum(szy / szz, 0.0), a)
    c = np.where(through_zero, 0.0, c)
    sse = syy + a * a * szz + n * c * c - 2 * a * szy - 2 * c * sy + 2 * a * c * sz
    return a, c, np.maximum(sse, 0.0)


def fit_power_laws(x, y: np.ndarray, refine: int = 25
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(a, b, c) of L = a x^(-b) + c fitted to each row of `y` (draws x points), vectorised;
    `x` is one row of points for all, or one per row. For a fixed b, a and c are linear
    (`_profile`), so b is found on a log grid and refined by `refine` golden-section steps
    between its grid neighbours. For bootstrap draws."""
    y = np.atleast_2d(np.asarray(y, float))
    x = np.broadcast_to(np.asarray(x, float), y.shape)
    scale = np.exp(np.log(x).mean(-1, keepdims=True))  # x / scale ~ 1: z well conditioned
    u = np.log(x / scale)
    sse = _profile(np.exp(-_B_GRID[:, None, None] * u), y)[2]  # grid x draws
    best = sse.argmin(0)
    lo = _B_GRID[np.maximum(best - 1, 0)]
    hi = _B_GRID[np.minimum(best + 1, len(_B_GRID) - 1)]

    def cost(b):
        return _profile(np.exp(-b[:, None] * u), y)[2]

    p, q = hi - _GOLDEN * (hi - lo), lo + _GOLDEN * (hi - lo)
    fp, fq = cost(p), cost(q)
    for _ in range(refine):
        left = fp < fq  # the minimum lies in [lo, q]: drop (q, hi]
        lo, hi = np.where(left, lo, p), np.where(left, q, hi)
        new = np.where(left, hi - _GOLDEN * (hi - lo), lo + _GOLDEN * (hi - lo))
        f_new = cost(new)
        p, fp, q, fq = (np.where(left, new, q), np.where(left, f_new, fq),
                        np.where(left, p, new), np.where(left, fp, f_new))
    b = (lo + hi) / 2
    a, c, _ = _profile(np.exp(-b[:, None] * u), y)
    return a * scale[:, 0] ** b, b, c  # back from x / scale to x


def fit_power_law(x: Sequence[float], y: Sequence[float]) -> PowerLawFit:
    """L(x) = a x^(-b) + c through (x, y) by bounded least squares (a, c >= 0, 0 < b <= B_MAX):
    for a fixed b the best a and c are linear, so the sum of squared errors is minimised over
    b alone, by scipy.optimize.minimize_scalar (bounded) between the neighbours of the best b
    on a log grid (a robust start: the grid covers every b, so a local minimum elsewhere
    cannot trap it). Needs 3 or more distinct x; rmse over the fitted points."""
    from scipy.optimize import minimize_scalar

    x, y = np.asarray(x, float), np.asarray(y, float)
    if len(x) < 3 or len(np.unique(x)) < 3:
        raise ValueError(f"a 3-parameter fit needs 3 or more distinct budgets, got {len(x)}")
    scale = math.exp(np.log(x).mean())
    u = np.log(x / scale)
    sse = _profile(np.exp(-_B_GRID[:, None] * u), y[None, :])[2]
    best = int(sse.argmin())
    lo, hi = _B_GRID[max(best - 1, 0)], _B_GRID[min(best + 1, len(_B_GRID) - 1)]
    solved = minimize_scalar(lambda b: float(_profile(np.exp(-b * u), y)[2]), bounds=(lo, hi),
                             method="bounded", options={"xatol": 1e-7})
    b = float(solved.x) if solved.fun <= sse[best] else float(_B_GRID[best])
    a, c, err = _profile(np.exp(-b * u), y)
    return PowerLawFit(float(a) * scale ** b, b, float(c), float(np.sqrt(err / len(x))),
                       len(x), float(x.min()), float(x.max()))


def rescaled_means(values: np.ndarray, draws: int, rng: np.random.Generator) -> np.ndarray:
    """`draws` bootstrap means of `values` (..., runs, columns: a run's loss and seconds are
    resampled as a pair), deviations from the mean scaled by sqrt(n / (n - 1)) (see the module
    doc): (..., draws, columns); leading axes are independent sets (replicates in tests). One
    run: its values every time."""
    values = np.asarray(values, float)
    n = values.shape[-2]
    mean = values.mean(-2, keepdims=True)
    if n < 2:
        return np.repeat(mean, draws, axis=-2)
    picks = rng.integers(0, n, size=(*values.shape[:-2], draws, n))
    drawn = np.take_along_axis(values[..., None, :, :], picks[..., None], axis=-2).mean(-2)
    return mean + math.sqrt(n / (n - 1)) * (drawn - mean)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and \
        math.isfinite(value)


def _is_count(value: Any, low: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= low


MAX_NAME = 200  # characters of a rung name, a transfer rule or a reference


def _is_name(value: Any) -> bool:
    return isinstance(value, str) and 0 < len(value) <= MAX_NAME


# A ladder record's keys (runners/procedures/ladder.py writes them into the run's config.ladder): what
# each must be, and whether it may be missing or null.
_RECORD_RULES: dict[str, tuple[Callable[[Any], bool], str, bool]] = {
    "rung": (_is_name, f"a name of 1 to {MAX_NAME} characters", False),
    "non_embedding_params": (lambda v: _is_count(v, 1), "a whole number >= 1", False),
    "params": (lambda v: _is_count(v, 1), "a whole number >= 1", True),
    "budget": (lambda v: _is_number(v) and v > 0, "a number > 0 (a multiple of Chinchilla's "
               "20 tokens per non-embedding parameter)", False),
    "tokens": (lambda v: _is_number(v) and v > 0, "a number of tokens > 0", False),
    "steps": (lambda v: _is_count(v, 1), "a whole number of steps >= 1", True),
    "repeated_tokens": (lambda v: isinstance(v, bool), "true or false", True),
    "transfer": (_is_name, f"a rule's name of 1 to {MAX_NAME} characters", True),
    "tuning_trials": (lambda v: _is_count(v, 0), "a whole number >= 0", True),
    "phase": (_is_name, "a name", True),
    "reference": (_is_name, f"a name of 1 to {MAX_NAME} characters", True),
    "eval_windows": (lambda v: _is_count(v, 1), "a whole number of windows >= 1", True),
}


def record_problem(record: Any) -> str | None:
    """Why a run's ladder record (config.ladder) cannot be read, in one line saying what is
    valid; None when it can. Unknown keys are ignored (a newer runner may add some)."""
    if not isinstance(record, Mapping):
        return f"its ladder record is {type(record).__name__}, not an object"
    for key, (valid, what, optional) in _RECORD_RULES.items():
        value = record.get(key)
        if value is None and optional:
            continue
        if not valid(value):
            shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
            return f"its ladder record's {key} is {shown}; valid is {what}"
    return None


def finals_frame(runs: pd.DataFrame, records: Mapping[str, Any], last: pd.DataFrame,
                 loss_column: str) -> tuple[pd.DataFrame, dict[str, str]]:
    """(FINAL_COLUMNS, one row per final ladder run; {run_id: why it was skipped}) from the run
    table `runs`, the runs' ladder records ({run_id: config.ladder}) and their last eval rows
    `last` (run_id, step, train_seconds, `loss_column`). Tuning runs (phase "tuning") are left
    out: a ladder compares its final runs. A record that fails record_problem skips its run."""
    skipped, rows = {}, []
    by_run = last.set_index("run_id") if len(last) else None
    for run in runs.itertuples(index=False):
        record = records.get(run.run_id)
        if record is None:
            continue
        problem = record_problem(record)
        if problem:
            skipped[run.run_id] = problem
            continue
        if record.get("phase") == "tuning":
            continue
        row = by_run.loc[run.run_id] if by_run is not None and run.run_id in by_run.index \
            else None
        loss = float(row[loss_column]) if row is not None else math.nan
        step = row["step"] if row is not None else None
        planned = record.get("steps")
        early = run.status != "complete" or step is None or pd.isna(step) or \
            (planned is not None and int(step) < planned)
        rows.append({
            "run_id": run.run_id, "rung": record["rung"],
            "non_embedding_params": record["non_embedding_params"],
            "params": record.get("params"), "algorithm": run.algorithm,
            "budget": float(record["budget"]), "tokens": float(record["tokens"]),
            "seed": run.seed, "final_loss": loss,
            "train_seconds": float(row["train_seconds"]) if row is not None else math.nan,
            "status": run.status, "early": bool(early),
            "repeated_tokens": bool(record.get("repeated_tokens") or False),
            "transfer": record.get("transfer"), "tuning_trials": record.get("tuning_trials"),
            "reference": record.get("reference"), "study_name": run.study_name,
            "hparams": getattr(run, "hparams", None),
            "origin": _origin_label(record.get("origin"))})
    columns = list(FINAL_COLUMNS) + ["reference", "study_name", "hparams", "origin"]
    return pd.DataFrame(rows, columns=columns), skipped


def sweep_frame(runs: pd.DataFrame, records: Mapping[str, Any], last: pd.DataFrame,
                loss_column: str) -> pd.DataFrame:
    """(SWEEP_COLUMNS, one row per sweep run: ladder phase "tuning") from the same inputs as
    finals_frame; a run whose record fails record_problem is left out (finals_frame says so)."""
    by_run = last.set_index("run_id") if len(last) else None
    rows = []
    for run in runs.itertuples(index=False):
        record = records.get(run.run_id)
        if record is None or record_problem(record) or record.get("phase") != "tuning":
            continue
        has = by_run is not None and run.run_id in by_run.index
        rows.append({"run_id": run.run_id, "rung": record["rung"], "algorithm": run.algorithm,
                     "hparams": getattr(run, "hparams", None), "status": run.status,
                     "final_loss": float(by_run.loc[run.run_id][loss_column]) if has
                     else math.nan, "study_name": run.study_name})
    return pd.DataFrame(rows, columns=list(SWEEP_COLUMNS))


def _origin_label(origin: Any) -> str | None:
    """"<kind> table <name> (<file>)" for an imported run's record origin; None for runs
    Pacebench ran (or an origin that is not an object)."""
    if not isinstance(origin, Mapping):
        return None
    kind, name, file = (str(origin.get(k, "?"))[:MAX_NAME] for k in ("kind", "name", "file"))
    return f"{kind} table {name!r} ({file})"


def _num(value: Any, digits: int = 6) -> float | None:
    value = float(value)
    return round(value, digits) if math.isfinite(value) else None


def widening(level: float, dof: int) -> float:
    """t_{dof, (1 + level)/2} / z_{(1 + level)/2}: how much wider a percentile interval is made
    when its spread comes from few seeds (see `interval`); nan below 1 degree of freedom."""
    from scipy.stats import norm, t

    if dof < 1:
        return math.nan
    if math.isinf(dof):  # a stated noise (--loss-noise), not one estimated from seeds
        return 1.0
    q = (1 + level) / 2
    return float(t.ppf(q, dof) / norm.ppf(q))


def interval(draws: np.ndarray, level: float, point: float, dof: int,
             log: bool = True) -> tuple[float, float]:
    """The bootstrap interval of a figure whose estimate is `point`: the percentile interval
    of the draws (NaN draws, undefined, left out; none when they are half or more), its ends
    moved away from `point` by widening(level, dof) (in log scale when `log`: speedups and
    ratios). The draws' spread is estimated from few seeds, and the plain percentile interval
    is as short of its level as a normal interval used in place of a t interval (measured:
    91 % instead of 95 % with 5 seeds per arm; docs/ladder.md); dof = n_ref + n_X - 2, a
    two-sample comparison's, restores it."""
    kept = draws[~np.isnan(draws)]
    factor = widening(level, dof)
    if len(kept) == 0 or len(kept) < len(draws) / 2 or math.isnan(factor):
        return math.nan, math.nan
    tail = (1 - level) / 2
    with np.errstate(divide="ignore", invalid="ignore"):
        values = np.log(kept) if log else kept
        # infinite draws (a loss below the fit's floor) clipped for the interpolation, which
        # would make inf - inf = NaN between two of them, and given back as infinite after
        low, high = (v if abs(v) < _HUGE / 2 else math.copysign(math.inf, v) for v in
                     np.quantile(np.clip(values, -_HUGE, _HUGE), [tail, 1 - tail]))
        centre = math.log(point) if log and point > 0 else point
    if math.isfinite(centre):  # else no estimate to widen about: the plain percentiles
        low, high = centre + factor * (low - centre), centre + factor * (high - centre)
    return (float(np.exp(low)), float(np.exp(high))) if log else (float(low), float(high))


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
    report's edge rule (tuning.ladder_entry; see the module doc); a warning for each edge."""
    sweeps = sweeps if sweeps is not None else pd.DataFrame(columns=list(SWEEP_COLUMNS))
    for algorithm, part in frame.groupby("algorithm", sort=True):
        name = str(algorithm)
        first = part[part["budget"] == part["budget"].min()]
        losses = pd.to_numeric(first["final_loss"], errors="coerce").to_numpy(float)
        losses = losses[np.isfinite(losses)]
        floor = float(np.std(losses, ddof=1) / np.mean(losses)) \
            if len(losses) >= 2 and np.mean(losses) > 0 else None
        chosen = T.hparams_of(part["hparams"].iloc[0]) if "hparams" in part.columns else {}
        entry = T.ladder_entry(name, T.shipped_space(name),
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


def _pair(low: float, high: float) -> list | None:
    """[low, high] for JSON (an infinite end: null), or None when there is no interval."""
    if math.isnan(low) or math.isnan(high):
        return None
    return [_num(low), _num(high)]


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


def trend(rungs: Sequence[Mapping[str, Any]], level: float = INTERVAL_LEVEL
          ) -> dict[str, dict[str, Any]]:
    """Per candidate: slope_per_doubling, the least-squares slope of log2(speedup) against
    log2(non-embedding params) over the rungs where its speedup is finite and positive, with
    the interval of the same slope over the rungs' bootstrap draws (each rung's draws are
    independent: its runs are), widened as `interval` does with the smallest rung's dof.
    Needs 2 or more rungs."""
    names = sorted({a for r in rungs for a in r["speedups"]})
    out = {}
    for name in names:
        points = [(math.log2(r["non_embedding_params"]), r["speedups"][name], r["_draws"].get(name))
                  for r in rungs if name in r["speedups"]]
        points = [(x, s, d) for x, s, (d, dof) in points
                  if s["value"] is not None and s["value"] > 0]
        dof = min((r["_draws"][name][1] for r in rungs if name in r["_draws"]), default=0)
        entry: dict[str, Any] = {"slope_per_doubling": None, "interval": None,
                                 "rungs": len(points)}
        if len(points) >= 2 and len({x for x, _, _ in points}) >= 2:
            x = np.array([p[0] for p in points])
            y = np.log2([p[1]["value"] for p in points])
            slope = float(_slope(x, y[None, :])[0])
            entry["slope_per_doubling"] = _num(slope)
            if all(p[2] is not None for p in points):
                with np.errstate(divide="ignore", invalid="ignore"):
                    ys = np.log2(np.stack([p[2] for p in points], 1))
                slopes = _slope(x, np.where(np.isfinite(ys), ys, np.nan))
                entry["interval"] = _pair(*interval(slopes, level, slope, dof, log=False))
        out[name] = entry
    return out


def _slope(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Least-squares slopes of each row of y against x (NaN where a row has a NaN)."""
    xc = x - x.mean()
    return ((y - y.mean(-1, keepdims=True)) * xc).sum(-1) / (xc ** 2).sum()


def ladder_analysis(finals: pd.DataFrame, reference: str | None = None, draws: int = DRAWS,
                    level: float = INTERVAL_LEVEL, seed: int = 0,
                    sweeps: pd.DataFrame | None = None, loss_noise: float | None = None,
                    fit_budgets: Sequence[float] | None = None) -> dict[str, Any]:
    """The ladder's JSON (see the module doc) from its runs' final losses (FINAL_COLUMNS) and
    its sweep runs (`sweeps`, sweep_frame; default finals.attrs["sweeps"], as
    query.ladder_finals leaves it; none: every tuning_report says "not swept").
    `reference`: default the one the runs name (a `reference` column, from the ladder's
    record), else adamw when present, else the first name. A ValueError names the valid names
    for an unknown reference. `loss_noise` (nats, > 0): intervals by a parametric bootstrap
    when every configuration has one seed (refused with 2 or more: their spread is used).
    `fit_budgets`: the reference's budgets its fit uses (default all)."""
    missing = [c for c in FINAL_COLUMNS if c not in finals.columns]
    if missing:
        raise ValueError(f"ladder frame lacks {', '.join(missing)}")
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


def verdict(name: str, rungs: Sequence[Mapping[str, Any]], trend_entry: Mapping[str, Any],
            reference: str, level: float = INTERVAL_LEVEL) -> str:
    """One sentence on a candidate over the rungs: "faster ... at every rung", "slower ...",
    "not shown" (no interval excludes 1, or no intervals), with its speedups and the trend."""
    shown = [(r["name"], r["speedups"][name]) for r in rungs
             if name in r["speedups"] and r["speedups"][name]["value"] is not None]
    if not shown:
        return f"{name}: not shown (no rung with a speedup over {reference})"
    above = [n for n, s in shown if s["interval"] and s["interval"][0] is not None
             and s["interval"][0] > 1]
    below = [n for n, s in shown if s["interval"] and s["interval"][1] is not None
             and s["interval"][1] < 1]
    if len(above) == len(shown):
        head = f"faster than {reference} at every rung"
    elif len(below) == len(shown):
        head = f"slower than {reference} at every rung"
    elif above or below:
        parts = ([f"faster at {', '.join(above)}"] if above else []) + \
            ([f"slower at {', '.join(below)}"] if below else [])
        head = " and ".join(parts) + \
            (", not shown at the others" if len(above) + len(below) < len(shown) else "")
    else:
        head = "not shown" + ("" if any(s["interval"] for _, s in shown) else
                              " (no intervals: one seed; give --loss-noise)")
    values = ", ".join(f"{s['value']:.3f}x at {n}" for n, s in shown)
    return f"{name}: {head} ({values}){_trend_words(trend_entry, level)}."


def _trend_words(t: Mapping[str, Any], level: float) -> str:
    slope = t.get("slope_per_doubling")
    if slope is None:
        return "; no trend (one rung)"
    change = 100 * (2 ** slope - 1)
    words = f"; the speedup {'grows' if change >= 0 else 'shrinks'} by {abs(change):.1f} % " \
            "per doubling of model size"
    pair = t.get("interval")
    if pair is None:
        return words + " (no interval)"
    low, high = (100 * (2 ** v - 1) if v is not None else math.copysign(math.inf, k)
                 for v, k in zip(pair, (-1, 1)))
    sure = "" if low > 0 or high < 0 else ", not shown to change"
    return words + f" ({100 * level:.0f} % interval {low:+.1f} % to {high:+.1f} %{sure})"


def _default_reference(finals: pd.DataFrame, names: list[str]) -> str:
    recorded = finals["reference"].dropna() if "reference" in finals.columns else pd.Series([])
    recorded = [r for r in recorded.astype(str) if r in names]
    if recorded:
        return pd.Series(recorded).value_counts().index[0]
    return "adamw" if "adamw" in names else names[0]


def budget_text(budget: float) -> str:
    """A budget as it prints (JSON keys, tables): 3 significant digits, no trailing zeros:
    "16", "0.5", "1.23"."""
    return f"{float(f'{float(budget):.3g}'):g}"


def _budget_label(budget: float) -> str:
    return f"{budget_text(budget)}x"


def _value_text(value: float | None, below_floor: bool = False, digits: int = 3) -> str:
    if below_floor:
        return "undefined (below c)"
    return "n/a" if value is None else f"{value:.{digits}f}"


def _interval_text(pair: list | None, seeds: int, reference_seeds: int) -> str:
    if pair is None:
        return f"n/a ({min(seeds, reference_seeds)} seed)"
    low, high = ("inf" if v is None else f"{v:.3f}" for v in pair)
    return f"{low} to {high}"


def _loss_table(rung: Mapping[str, Any]) -> pd.DataFrame:
    budgets = sorted({row["budget"] for rows in rung["losses"].values() for row in rows})
    table = {}
    for algorithm, rows in rung["losses"].items():
        by = {row["budget"]: row for row in rows}
        table[algorithm] = [
            "-" if b not in by else
            f"{by[b]['mean']:.4f} ± {by[b]['sd']:.4f} ({by[b]['seeds']})" if by[b]["sd"]
            is not None else f"{by[b]['mean']:.4f} ({by[b]['seeds']})" for b in budgets]
    return pd.DataFrame(table, index=[_budget_label(b) for b in budgets]).T


def _speedup_table(rung: Mapping[str, Any]) -> pd.DataFrame:
    """One row per candidate: rung speedup, interval, time ratio, seeds, then one column per
    budget ("-" where the candidate has no run)."""
    rows, budgets = [], set()
    for algorithm, s in rung["speedups"].items():
        row = {"algorithm": algorithm,
               "speedup": _value_text(s["value"]) + (" *" if s["extrapolated"] else ""),
               "interval": _interval_text(s["interval"], s["seeds"], s["reference_seeds"]),
               "time ratio": _value_text(s["time_ratio"]) +
               (" *" if s.get("time_ratio_extrapolated") else ""),
               "time interval": "n/a" if s["time_ratio"] is None else
               _interval_text(s["time_ratio_interval"], s["seeds"], s["reference_seeds"]),
               "seeds": f"{s['seeds']} vs {s['reference_seeds']}"}
        for p in s["per_budget"]:
            budgets.add(p["budget"])
            row[_budget_label(p["budget"])] = _value_text(p["value"], p["below_floor"]) + \
                (" *" if p["extrapolated"] else "") + ("" if p.get("shared", True) else " (no ref)")
        rows.append(row)
    columns = list(rows[0])[:6] + [_budget_label(b) for b in sorted(budgets)] if rows else []
    return pd.DataFrame(rows, columns=columns).fillna("-")


def _fragility_lines(rung: Mapping[str, Any], ref: str) -> list[str]:
    """The leave-one-out line per candidate (flagged when fragile), or why there is none."""
    if rung.get("fragility") is None:
        return [f"fit fragility: n/a ({rung['fragility_note']})"] if rung.get("fragility_note") \
            else []
    lines = []
    for name, f in rung["fragility"].items():
        if f is None:
            continue
        value = rung["speedups"][name]["value"]
        moved = "undefined" if f["value_without"] is None else f"{f['value_without']:.3f}"
        change = "inf" if f["largest_log2_change"] is None else \
            f"{f['largest_log2_change']:.3f}"
        line = (f"fit fragility: {name} {value:.3f} -> {moved} with budget {f['budget']} left "
                f"out of {ref}'s fit (|log2 change| {change})")
        if f["fragile"]:
            line = "warning: fragile " + line[len("fit fragility: "):] + \
                (": more than its interval's half-width" if rung["speedups"][name]["interval"]
                 else f": more than {100 * FRAGILE_CHANGE:.0f} %")
        lines.append(line)
    return lines


def ladder_text(result: Mapping[str, Any]) -> str:
    """What `pacebench ladder --summary` prints: per rung the final losses, the fit, the
    speedups and time ratios with their intervals, the warnings; then the trend."""
    level = f"{100 * result['interval_level']:.0f} %"
    ref = result["reference"]
    lines = [f"ladder: reference {ref}; {level} bootstrap intervals over seeds and the fit "
             f"({result['draws']} draws, seed {result['bootstrap_seed']}); budgets in multiples "
             "of 20 tokens per non-embedding parameter"]
    for rung in result["rungs"]:
        params = f"{rung['non_embedding_params']:,} non-embedding parameters" + (
            f" ({rung['params']:,} in all)" if rung.get("params") else "")
        lines += ["", f"rung {rung['name']}: {params}",
                  "final validation loss, mean ± sd over seeds (seeds):",
                  _indent(_loss_table(rung).to_string())]
        fit = rung["fit"]
        if fit is not None:
            lines.append(f"fit of {ref}: L(D) = {fit['a']:.4g} D^-{fit['b']:.4f} + "
                         f"{fit['c']:.4f}, rmse {fit['rmse']:.4f} over {fit['points']} budgets")
        if rung["speedups"]:
            lines += [f"equal-loss speedup over {ref}: D_ref(L_X) / D, geometric mean over "
                      "budgets (* extrapolated beyond the fitted budgets); time ratio "
                      "T_ref(L_X) / T_X:",
                      _indent(_speedup_table(rung).to_string(index=False))]
        lines += _fragility_lines(rung, ref)
        lines += _tuning_lines(rung)
        lines += [f"warning: {w}" for w in rung["warnings"]]
    lines += _header_notes(result)
    if result["trend"]:
        lines += ["", "trend: change of log2(speedup) per doubling of non-embedding parameters"
                  " (least squares over rungs):"]
        for name, t in result["trend"].items():
            if t["slope_per_doubling"] is None:
                lines.append(f"  {name}: n/a ({t['rungs']} "
                             f"{'rung' if t['rungs'] == 1 else 'rungs'} with a finite "
                             "speedup; needs 2)")
                continue
            interval = "n/a" if t["interval"] is None else \
                _interval_text(t["interval"], 2, 2)
            lines.append(f"  {name}: {t['slope_per_doubling']:+.4f} per doubling ({level} "
                         f"interval {interval}; {t['rungs']} rungs)")
    if result.get("verdicts"):
        lines += ["", "verdicts:"] + [f"  {v}" for v in result["verdicts"].values()]
    return "\n".join(lines)


def tuning_table(rung: Mapping[str, Any]) -> pd.DataFrame:
    """The rung's tuning report as a table (text cells): per algorithm its sweep's trials, the
    chosen value of each hyperparameter, edges and bracketed."""
    rows = []
    for algorithm, e in rung.get("tuning_report", {}).items():
        edges = ", ".join(f"{hp} {v}" for hp, v in e["edge"].items() if v)
        rows.append({"algorithm": algorithm, "trials": e["trials"],
                     "chosen": ", ".join(f"{hp} {T.value_text(v)}"
                                         for hp, v in e["chosen"].items()) or "defaults",
                     "edge": edges or "none",
                     "bracketed": {True: "yes", False: "no", None: "n/a"}[e["bracketed"]]})
    return pd.DataFrame(rows, columns=["algorithm", "trials", "chosen", "edge", "bracketed"])


def _tuning_lines(rung: Mapping[str, Any]) -> list[str]:
    table = tuning_table(rung)
    if table.empty or not (table["trials"] > 0).any():  # no sweep at this rung: nothing judged
        return []
    return ["tuning (each sweep's best at an edge of its range, beyond the seeds' spread?):",
            _indent(table.to_string(index=False))]


def _header_notes(result: Mapping[str, Any]) -> list[str]:
    """Where the runs came from, the fit's budgets, the stated loss noise, the one-seed note."""
    lines = [""]
    origins = result.get("origins") or {}
    if set(origins) - {"pacebench"}:
        lines.append("runs: " + "; ".join(f"{n} from {k}" for k, n in origins.items()) +
                     " (imported rows: no steps or schedules to check)")
    if result.get("fit_budgets"):
        lines.append(f"the reference's fit uses budgets {', '.join(result['fit_budgets'])} "
                     "(--fit-budgets)")
    if result.get("loss_noise") is not None:
        lines.append(f"intervals: a parametric bootstrap with a stated loss noise of "
                     f"{result['loss_noise']:g} nats per run (--loss-noise)")
    if result.get("interval_note"):
        lines.append(result["interval_note"])
    return lines if len(lines) > 1 else []


def _indent(text: str) -> str:
    return "\n".join("  " + line for line in text.splitlines())
