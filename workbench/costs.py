"""What a result costs: DAWNBench's dollars to a target, inference latency and cost, Pareto fronts
of cost against quality, and speedup-at-quality curves (research/peers.md section 1,
research/methods.md part C).

Cost is training time x an hourly price: cost = train_seconds / 3600 x usd_per_hour, with the
price looked up by the run's `hardware` key in a PriceTable. Training time is the run's training
clock (evals off it), as DAWNBench counted. A hardware key without a price gives NaN ("n/a"),
never zero: PriceTable.missing names the keys to price.

- Cost to target follows the scoring rules exactly: per study the trial `scoring.study_choices`
  chose (first to meet the validation target), its time x its hardware's price; +inf when the
  study missed; the median over studies as `scoring.median_over_studies` takes it.
- Quality against cost comes from eval rows: at each eval of a run, the best validation value of
  the target metric so far and the cost so far (best_so_far). Curves are read for one run per
  study only (curve_runs), so a store of 100,000 runs never has all its rows read.
- Cost to quality q of a run: the cost at its first eval whose best-so-far meets q (no
  interpolation, as DAWNBench's time to accuracy); per algorithm, the median over studies.
- Speedup at quality: s(q) = C_reference(q) / C_algorithm(q), defined where both are finite
  (methods.md C.2); s(target) is the ratio of the median costs to target.
- Pareto front: the runs no other run beats on both cost (lower) and quality (better).
- Eval share of wall clock (the AlgoPerf working group's 2026 analysis): per algorithm and
  workload, the evaluation seconds over the wall seconds of its finished runs, both read from
  each run's last eval row (accumulated values; workbench.eval_clock.eval_clock) and summed over
  the runs before dividing: sum eval_seconds / sum wall_seconds. The training clock pauses
  during evals, so this is the share of the machine time that no score counts.
- Inference (DAWNBench): latency = median seconds of one batch-1 forward pass, measured at the end
  of a run (runners/run/inference.py); its cost per 10,000 examples = latency x price x 10,000.

Only numpy, pandas and xarray here: the dashboard view is workbench/views/costs.py.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Sequence

import numpy as np
import pandas as pd
import xarray as xr

from workbench.errors import UserError
from workbench import scoring
from workbench.errors import UserError

__all__ = ["Price", "PriceTable", "PRICE_RULES", "default_price", "hardware_key", "UNRECORDED",
           "SECONDS_PER_HOUR", "INFERENCE_EXAMPLES", "cost_usd", "inference_cost_usd",
           "run_costs", "study_costs", "median_costs", "cost_table", "curve_runs",
           "best_so_far", "cost_to_quality", "median_cost_to_quality", "quality_grid",
           "speedup_at_quality", "pareto_front", "eval_share"]

SECONDS_PER_HOUR = 3600.0
INFERENCE_EXAMPLES = 10_000   # DAWNBench quoted inference cost per 10,000 examples
UNRECORDED = "(hardware not recorded)"  # the price-table key of runs that record no hardware
DIRECTIONS = ("max", "min")   # a target metric improves upwards (accuracy) or downwards (loss)


def hardware_key(value: object) -> str:
    """The price-table key of a run's `hardware` value (UNRECORDED when it has none)."""
    if value is None or (isinstance(value, float) and math.isnan(value)) or not str(value).strip():
        return UNRECORDED
    return str(value)


@dataclass(frozen=True)
class Price:
    """An on-demand hourly price in US dollars and where it comes from."""

    usd_per_hour: float  # USD per hour of the whole machine the run used
    source: str          # where the number comes from (a reference, or "edited")

    def __post_init__(self) -> None:
        value = self.usd_per_hour
        if isinstance(value, bool) or not isinstance(value, (int, float)) or \
                not math.isfinite(value) or value < 0:
            raise UserError(f"a price must be a finite number of USD per hour >= 0, got "
                             f"{value!r}")
        object.__setattr__(self, "usd_per_hour", float(value))


@dataclass(frozen=True)
class _Rule:
    """A default price for every hardware key matching `pattern`: the count its first group
    captures x `usd_per_unit` (one V100, one vCPU, ...)."""

    pattern: str
    usd_per_unit: float
    source: str

    def price(self, hardware: str) -> Price | None:
        match = re.fullmatch(self.pattern, hardware)
        if not match:
            return None
        units = int(match.group(1))
        return Price(units * self.usd_per_unit,
                     f"{units} x ${self.usd_per_unit:g}/h: {self.source}")


# Default prices, on-demand (never spot, as DAWNBench required), by the hardware keys the project
# writes: AlgoPerf imports ("8x Tesla V100-SXM2-16GB", workbench/importers/algoperf.py), our own
# CPU runs ("cpu: <model> (<n> threads)", runners/run/env.py) and the fake stores of workbench.testing.
# A key no rule matches has no price until one is typed into the dashboard's price table.
PRICE_RULES: tuple[_Rule, ...] = (
    _Rule(r"(\d+)x Tesla V100\b.*", 3.06,
          "one V100 priced as AWS p3.2xlarge (1 x V100 16 GB) on demand, the costPerHour of the "
          "DAWNBench entry davidcpage_resnet9_1v100-ec2_pytorch (research/peers.md 1.3); 8 of "
          "them, $24.48/h, is also AWS's on-demand price of p3.16xlarge (8 x V100)"),
    _Rule(r"cpu: .+ \((\d+) threads?\)", 0.0425,
          "one thread priced as one vCPU of AWS c5.2xlarge ($0.34/h on demand for 8 vCPU, "
          "us-east-1, in AWS's EC2 Auto Scaling guide, 'Spot price per unit hour example', which "
          "labels its prices as examples)"),
    _Rule(r"synthetic CPU x(\d+)", 1.0,
          "not a real price: the round $1/h of the synthetic stores of workbench.testing"),
)


def default_price(hardware: str) -> Price | None:
    """The default price of a hardware key by PRICE_RULES; None when no rule matches."""
    for rule in PRICE_RULES:
        price = rule.price(hardware)
        if price is not None:
            return price
    return None


@dataclass(frozen=True)
class PriceTable:
    """Hourly prices keyed by hardware key (`hardware_key` of a run's `hardware` column)."""

    prices: Mapping[str, Price] = field(default_factory=dict)

    @classmethod
    def defaults(cls, hardware: Iterable[object]) -> PriceTable:
        """The default price (PRICE_RULES) of each of these hardware keys that has one."""
        keys = dict.fromkeys(hardware_key(h) for h in hardware)
        found = {k: default_price(k) for k in keys}
        return cls({k: p for k, p in found.items() if p is not None})

    def usd_per_hour(self, hardware: object) -> float:
        """The price of a hardware value; NaN when the table has none."""
        price = self.prices.get(hardware_key(hardware))
        return price.usd_per_hour if price is not None else math.nan

    def missing(self, hardware: Iterable[object]) -> list[str]:
        """The hardware keys among `hardware` without a price, sorted."""
        return sorted({hardware_key(h) for h in hardware} - set(self.prices))

    def with_price(self, hardware: object, usd_per_hour: float,
                   source: str = "edited") -> PriceTable:
        """A copy with one price set (replacing any price of that key)."""
        key = hardware_key(hardware)
        return PriceTable({**self.prices, key: Price(usd_per_hour, source)})

    def to_frame(self, hardware: Iterable[object] | None = None) -> pd.DataFrame:
        """hardware, usd_per_hour, source: one row per key of `hardware` (default: the table's),
        NaN price and an empty source where the table has none."""
        keys = list(dict.fromkeys(hardware_key(h) for h in hardware)) if hardware is not None \
            else list(self.prices)
        rows = [{"hardware": k, "usd_per_hour": self.usd_per_hour(k),
                 "source": self.prices[k].source if k in self.prices else ""} for k in keys]
        return pd.DataFrame(rows, columns=["hardware", "usd_per_hour", "source"]) \
            .astype({"usd_per_hour": float})

    @classmethod
    def from_frame(cls, frame: pd.DataFrame) -> PriceTable:
        """The table of a to_frame-shaped frame; rows with an empty (NaN) price are left out."""
        missing = [c for c in ("hardware", "usd_per_hour") if c not in frame.columns]
        if missing:
            raise UserError(f"a price frame needs columns hardware and usd_per_hour; it lacks "
                             f"{missing} (has {list(frame.columns)})")
        prices = {}
        for row in frame.to_dict("records"):
            value = row["usd_per_hour"]
            if value is None or (isinstance(value, float) and math.isnan(value)):
                continue
            try:
                prices[hardware_key(row["hardware"])] = Price(float(value),
                                                              str(row.get("source") or "edited"))
            except (TypeError, ValueError):
                raise UserError(f"price of {row['hardware']!r} must be a number of USD per hour "
                                 f">= 0, got {value!r}") from None
        return cls(prices)


def cost_usd(seconds, usd_per_hour):
    """seconds / 3600 x usd_per_hour, elementwise; +inf seconds (a miss) stays +inf whatever the
    price, a NaN price gives NaN for finite seconds."""
    seconds = np.asarray(seconds, dtype=float)
    price = np.asarray(usd_per_hour, dtype=float)
    with np.errstate(invalid="ignore"):
        cost = seconds / SECONDS_PER_HOUR * price
    return np.where(np.isposinf(seconds), np.inf, cost)


def inference_cost_usd(inference_seconds, usd_per_hour, examples: int = INFERENCE_EXAMPLES):
    """Cost of `examples` batch-1 inferences at a latency of `inference_seconds` each (USD)."""
    return np.asarray(inference_seconds, float) * examples / SECONDS_PER_HOUR * \
        np.asarray(usd_per_hour, float)


def _column(runs: pd.DataFrame, name: str) -> np.ndarray:
    """A float column of the run table, all NaN when the table lacks it (older stores)."""
    if name not in runs.columns:
        return np.full(len(runs), np.nan)
    return pd.to_numeric(runs[name], errors="coerce").to_numpy(float, na_value=np.nan)


def _hardware_keys(hardware: pd.Series) -> pd.Series:
    """hardware_key of each value, computed once per distinct value (large run tables)."""
    values = hardware.astype(object).where(hardware.notna(), None)
    keys = {v: hardware_key(v) for v in values.unique()}
    return values.map(keys)


def run_costs(runs: pd.DataFrame, prices: PriceTable) -> pd.DataFrame:
    """Per run: run_id, algorithm, workload, study, hardware (key), usd_per_hour, train_cost_usd
    (the whole run), cost_to_target_usd (+inf: ran and missed), inference_seconds,
    inference_usd_per_10k and energy_joules (GPU energy of the whole run, NaN: not measured). Costs are NaN where the hardware has no price."""
    keys = _hardware_keys(runs["hardware"])
    price = keys.map({k: prices.usd_per_hour(k) for k in keys.unique()}).to_numpy(float) \
        if len(runs) else np.zeros(0)
    reached = runs["reached_target"].fillna(False).to_numpy(bool)
    to_target = np.where(reached, _column(runs, "time_to_target"), np.inf)
    latency = _column(runs, "inference_seconds")
    return pd.DataFrame({
        "run_id": runs["run_id"].to_numpy(object),
        "algorithm": runs["algorithm"].to_numpy(object),
        "workload": runs["workload"].to_numpy(object),
        "study": runs["study"].to_numpy(object),
        "hardware": keys.to_numpy(object),
        "usd_per_hour": price,
        "train_cost_usd": cost_usd(_column(runs, "train_seconds"), price),
        "cost_to_target_usd": cost_usd(to_target, price),
        "inference_seconds": latency,
        "inference_usd_per_10k": inference_cost_usd(latency, price),
        "energy_joules": _column(runs, "energy_joules"),
    })


def study_costs(cube: xr.Dataset, runs: pd.DataFrame, prices: PriceTable) -> xr.Dataset:
    """Per (algorithm, workload, study): the cost to target of the trial scoring.study_choices
    chose. Data vars: cost_to_target (USD; +inf when the study missed, NaN when there is no study
    or its chosen trial's hardware has no price), time_to_target (s), run_id, hardware and
    unpriced (the chosen trial's hardware has no price)."""
    choices = scoring.study_choices(cube)
    hardware_of = dict(zip(runs["run_id"], _hardware_keys(runs["hardware"])))
    ids = choices["run_id"]
    flat = [hardware_of.get(r, UNRECORDED) if r else "" for r in ids.values.ravel()]
    keys = np.array(flat, dtype=object).reshape(ids.shape)
    price = np.array([prices.usd_per_hour(k) if k else np.nan for k in flat],
                     dtype=float).reshape(ids.shape)
    time = choices["time_to_target"].values
    chosen = ids.values != ""
    return xr.Dataset({
        "cost_to_target": (ids.dims, cost_usd(time, price), {"units": "USD"}),
        "time_to_target": choices["time_to_target"],
        "run_id": ids,
        "hardware": (ids.dims, keys),
        "unpriced": (ids.dims, chosen & np.isnan(price)),
    })


def median_costs(costs: xr.Dataset) -> xr.Dataset:
    """Per (algorithm, workload): the median over studies of study_costs' cost_to_target and
    time_to_target (misses as +inf, as scoring.median_over_studies); the cost is NaN (n/a) when
    any study's chosen trial is unpriced. Also: studies (present), studies_reached, unpriced."""
    present = costs["time_to_target"].notnull()
    unpriced = costs["unpriced"].any("study")
    cost = scoring.median_over_studies(costs["cost_to_target"]).where(~unpriced)
    return xr.Dataset({
        "cost_to_target": cost.rename("cost_to_target").assign_attrs(units="USD"),
        "time_to_target": scoring.median_over_studies(costs["time_to_target"]),
        "studies": present.sum("study"),
        "studies_reached": np.isfinite(costs["time_to_target"]).sum("study"),
        "unpriced": unpriced,
    })


def cost_table(cube: xr.Dataset, runs: pd.DataFrame, prices: PriceTable) -> pd.DataFrame:
    """One row per (algorithm, workload) that has runs: hardware (the keys of its runs, joined by
    ', '), usd_per_hour (NaN when unpriced or mixed), time_to_target (s) and cost_to_target (USD)
    medians over studies, studies, studies_reached, unpriced, and the inference columns:
    inference_seconds (median over its runs that measured it), inference_usd_per_10k (median of
    their per-run costs) and inference_runs (how many measured); energy_joules: the median GPU
    energy of a whole run over the runs that measured it (NVML; NaN on CPU)."""
    medians = median_costs(study_costs(cube, runs, prices)).to_dataframe().reset_index()
    medians = medians[medians["studies"] > 0]
    per_run = run_costs(runs, prices)
    groups = per_run.groupby(["algorithm", "workload"], sort=False)
    hardware = groups["hardware"].agg(lambda k: ", ".join(sorted(set(k)))).rename("hardware")
    price = groups["usd_per_hour"].agg(lambda p: p.iloc[0] if p.nunique(dropna=False) == 1
                                       else np.nan).rename("usd_per_hour")
    measured = per_run.dropna(subset=["inference_seconds"]).groupby(["algorithm", "workload"])
    inference = pd.DataFrame({
        "inference_seconds": measured["inference_seconds"].median(),
        "inference_usd_per_10k": measured["inference_usd_per_10k"].median(),
        "inference_runs": measured.size()})
    table = medians.join(pd.concat([hardware, price], axis=1), on=["algorithm", "workload"],
                         how="inner") \
        .join(inference, on=["algorithm", "workload"])
    table["inference_runs"] = table["inference_runs"].fillna(0).astype(int)
    energy = per_run.dropna(subset=["energy_joules"]).groupby(["algorithm", "workload"])
    table = table.join(energy["energy_joules"].median(), on=["algorithm", "workload"])
    columns = ["algorithm", "workload", "hardware", "usd_per_hour", "time_to_target",
               "cost_to_target", "studies", "studies_reached", "unpriced", "inference_seconds",
               "inference_usd_per_10k", "inference_runs", "energy_joules"]
    return table[columns].reset_index(drop=True)


# -- quality against cost, from eval rows ------------------------------------------------------
def _check_direction(direction: str) -> None:
    if direction not in DIRECTIONS:
        raise UserError(f"unknown target direction {direction!r}: valid are {DIRECTIONS}")


def curve_runs(cube: xr.Dataset) -> pd.DataFrame:
    """The run whose curve stands for each (algorithm, workload, study): the trial
    scoring.study_choices chose, or, when no trial met the target, the trial with the best
    best_validation (direction of the workload's target). Columns algorithm, workload, study,
    run_id, chosen (whether it met the target); studies without any run are left out."""
    choices = scoring.study_choices(cube)["run_id"].to_dataframe().reset_index()
    best = cube["best_validation"].stack(_trial=("trial", "seed"))
    ids = cube["run_id"].stack(_trial=("trial", "seed"))
    sign = xr.DataArray([1.0 if d == "max" else -1.0 for d in cube["target_direction"].values],
                        dims="workload", coords={"workload": cube["workload"].values})
    score = (best * sign).fillna(-np.inf).where(ids != "", np.nan)
    pick = score.fillna(-np.inf).argmax("_trial")
    fallback = ids.isel(_trial=pick).where(score.notnull().any("_trial"), "")
    fallback = fallback.reset_coords(drop=True).rename("fallback").to_dataframe().reset_index()
    frame = choices.merge(fallback, on=["algorithm", "workload", "study"])
    frame["chosen"] = frame["run_id"] != ""
    frame["run_id"] = frame["run_id"].where(frame["chosen"], frame["fallback"])
    frame = frame[frame["run_id"] != ""]
    return frame[["algorithm", "workload", "study", "run_id", "chosen"]].reset_index(drop=True)


def best_so_far(evals: pd.DataFrame, runs: pd.DataFrame, prices: PriceTable, metric: str,
                direction: str) -> pd.DataFrame:
    """Per eval row of `evals` (one workload): run_id, algorithm, study, eval_index,
    train_seconds, cost_usd (train seconds so far x the run's price) and quality (the best value
    of column `metric` so far; NaN before the first value), ordered by run and eval_index."""
    _check_direction(direction)
    if metric not in evals.columns:
        raise UserError(f"eval rows have no column {metric!r}: metric columns are "
                         f"{[c for c in evals.columns if '/' in c]}")
    info = runs[["run_id", "algorithm", "study", "hardware"]].drop_duplicates("run_id")
    rows = evals[["run_id", "eval_index", "train_seconds", metric]].merge(info, on="run_id")
    rows = rows.sort_values(["run_id", "eval_index"], kind="stable").reset_index(drop=True)
    value = rows[metric].astype(float)
    grouped = value.groupby(rows["run_id"])
    best = grouped.cummax() if direction == "max" else grouped.cummin()
    rows["quality"] = best.groupby(rows["run_id"]).ffill()
    price = rows["hardware"].map(lambda h: prices.usd_per_hour(h)).astype(float)
    rows["cost_usd"] = cost_usd(rows["train_seconds"].astype(float), price)
    return rows[["run_id", "algorithm", "study", "eval_index", "train_seconds", "cost_usd",
                 "quality"]]


def cost_to_quality(curves: pd.DataFrame, thresholds: Sequence[float],
                    direction: str) -> xr.DataArray:
    """Per run of `curves` (best_so_far rows) and threshold q: the cost at the run's first eval
    whose best-so-far quality meets q (>= q for "max", <= q for "min"); +inf if none did; NaN
    when the run is unpriced. Dims (run, quality); run coords algorithm and study."""
    _check_direction(direction)
    q = np.asarray(thresholds, dtype=float)
    sign = 1.0 if direction == "max" else -1.0
    run_ids, rows, algorithms, studies = [], [], [], []
    for run_id, part in curves.groupby("run_id", sort=True):
        part = part.sort_values("eval_index", kind="stable")
        better = (sign * part["quality"].to_numpy(float))
        better = np.where(np.isnan(better), -np.inf, better)  # monotone non-decreasing
        cost = part["cost_usd"].to_numpy(float)
        first = np.searchsorted(better, sign * q, side="left")
        hit = first < len(better)
        rows.append(np.where(hit, cost[np.minimum(first, len(cost) - 1)], np.inf))
        run_ids.append(run_id)
        algorithms.append(part["algorithm"].iloc[0])
        studies.append(part["study"].iloc[0])
    data = np.vstack(rows) if rows else np.zeros((0, q.size))
    return xr.DataArray(data, dims=("run", "quality"),
                        coords={"run": run_ids, "quality": q,
                                "algorithm": ("run", np.asarray(algorithms, dtype=object)),
                                "study": ("run", np.asarray(studies, dtype=object))},
                        name="cost_to_quality", attrs={"units": "USD"})


def median_cost_to_quality(per_run: xr.DataArray) -> xr.DataArray:
    """Per algorithm and threshold: the median over its runs (one per study, curve_runs) of
    cost_to_quality; misses (+inf) take part; any unpriced run (NaN) makes the median NaN.
    Dims (algorithm, quality)."""
    names = sorted(set(per_run["algorithm"].values.tolist()))
    medians = [np.median(per_run.values[per_run["algorithm"].values == a], axis=0)
               for a in names]
    data = np.vstack(medians) if medians else np.zeros((0, per_run.sizes["quality"]))
    return xr.DataArray(data, dims=("algorithm", "quality"),
                        coords={"algorithm": names, "quality": per_run["quality"].values},
                        name="cost_to_quality", attrs={"units": "USD"})


def quality_grid(curves: pd.DataFrame, direction: str, num: int = 50,
                 include: Iterable[float] = ()) -> np.ndarray:
    """Thresholds for speedup-at-quality curves, ascending: `num` evenly spaced values from the
    median over runs of their first recorded quality (one every run passes early) to the best
    quality any run reached, plus the values of `include` (e.g. the target) inside that range."""
    _check_direction(direction)
    quality = curves.dropna(subset=["quality"])
    if not len(quality):
        return np.zeros(0)
    first = quality.sort_values("eval_index").groupby("run_id")["quality"].first().median()
    best = quality["quality"].max() if direction == "max" else quality["quality"].min()
    low, high = sorted((float(first), float(best)))
    grid = np.linspace(low, high, num) if high > low else np.array([high])
    extra = [v for v in include if v is not None and low <= v <= high]
    return np.unique(np.concatenate([grid, np.asarray(extra, dtype=float)]))


def speedup_at_quality(costs: xr.DataArray, reference: str) -> xr.DataArray:
    """s(q) = cost of `reference` to reach q / cost of each algorithm to reach q, from
    median_cost_to_quality; NaN where either cost is not finite and positive (outside the
    qualities both reach, or unpriced). 2 means half the reference's cost."""
    names = [str(a) for a in costs["algorithm"].values]
    if reference not in names:
        raise UserError(f"unknown reference algorithm {reference!r}: valid are {names}")
    ref = costs.sel(algorithm=reference, drop=True)
    usable = np.isfinite(costs) & (costs > 0) & np.isfinite(ref) & (ref > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = ref / costs
    out = ratio.where(usable).transpose("algorithm", "quality")
    return out.rename("speedup_at_quality").assign_attrs(units="1", reference=reference)


def pareto_front(cost: Sequence[float], quality: Sequence[float], direction: str) -> np.ndarray:
    """Mask of the points on the Pareto front of (cost, quality): those that no other point
    matches or beats on both lower cost and better quality (of equal points, the first in cost
    order is kept). Points with a non-finite cost or quality are never on it."""
    _check_direction(direction)
    cost = np.asarray(cost, dtype=float)
    better = np.asarray(quality, dtype=float) * (1.0 if direction == "max" else -1.0)
    if cost.shape != better.shape:
        raise ValueError(f"cost and quality differ in length: {cost.shape} vs {better.shape}")
    ok = np.flatnonzero(np.isfinite(cost) & np.isfinite(better))
    order = ok[np.lexsort((-better[ok], cost[ok]))]  # cheapest first; of equal cost, best first
    so_far = np.maximum.accumulate(better[order]) if order.size else order
    previous = np.concatenate([[-np.inf], so_far[:-1]]) if order.size else order
    on = np.zeros(cost.shape, dtype=bool)
    on[order[better[order] > previous]] = True
    return on


def eval_share(runs: pd.DataFrame, clock: pd.DataFrame) -> pd.DataFrame:
    """Eval share of wall clock per (algorithm, workload) of `runs` (run-table rows): columns
    algorithm, workload, runs (those with an eval clock), eval_seconds, wall_seconds (their
    sums) and share = eval_seconds / wall_seconds (NaN when the wall seconds sum to 0).
    `clock`: eval_clock.eval_clock of the runs (run_id, eval_seconds, wall_seconds)."""
    joined = runs[["run_id", "algorithm", "workload"]].astype({"run_id": str}).merge(
        clock, on="run_id", how="inner")
    sums = joined.groupby(["algorithm", "workload"], sort=True).agg(
        runs=("run_id", "size"), eval_seconds=("eval_seconds", "sum"),
        wall_seconds=("wall_seconds", "sum")).reset_index()
    with np.errstate(divide="ignore", invalid="ignore"):
        share = sums["eval_seconds"].to_numpy(float) / sums["wall_seconds"].to_numpy(float)
    sums["share"] = np.where(sums["wall_seconds"].to_numpy(float) > 0, share, np.nan)
    return sums
