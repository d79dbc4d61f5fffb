"""The tuning report: was each side tuned well enough for its verdict to mean something?

An under-tuned baseline inflates every speedup over it, and a badly centred candidate hides a
real one, so every head-to-head carries, per algorithm (side) and workload:

- `trials` (every trial cell the scope holds: study name, study, trial, seed; any status),
  `finished` (those with a finished attempt), `bad_fraction` (diverged, stalled, or with no
  finished attempt: failed, interrupted, of the trials) and `planned_trials` (trials per study,
  the most of any of its studies);
- the **best trial**: the smallest time to target (the scope's time axis) pooled over the
  side's studies, or, when no trial reached the target, the best final metric
  (`best_validation`, in the target's direction);
- per hyperparameter of the recorded search space (records.SEARCH_SPACE_FIELDS) that is a
  range: the best trial's value and its `position` in the range (0 the low end, 1 the high
  end, in log10 space on a log range);
- the **edge rule** (`edge_of`), for the learning rate and the names given as `hparams`:
  "low" or "high" only when the best trial lies in the outermost EDGE_SHARE of the range at
  that end (position <= 0.1 or >= 0.9) **and** beats the best trial of the inner 80 % by more
  than the workload's noise floor (a relative gap: the inner best's time to target is more than
  (1 + floor) times the best's, or the inner best missed the target the best met, or, with no
  trial reaching it, the worse metric is more than (1 + floor) times the better, lower is
  better for a minimised metric). A sound space whose best lands near an end by chance is not
  flagged. The floor is the workload's measured noise floor (catalog.noise_floor_of: the CoV
  of the tuned baseline's time to target over the seeds that set its target), else
  DEFAULT_NOISE_FLOOR (10 %, the default the machine-speed check of compare uses for a
  workload without one), which the report says (`floor_source`). With no trial in the inner
  80 % the rule cannot be applied: no edge, and `bracketed` null with the reason;
- `bracketed`: no edge set and bad_fraction < 0.5; null, with the reason (`why`), where there is
  no range to judge (a list of points, a space of feasible points only, a self-tuning study, an
  import: no search space recorded);
- `finding`: the report in one sentence.

`fair_tuning` of two sides: false when either side's `bracketed` is false on a workload or their
planned trials per study differ; null when neither side can be judged; else true. The tuning
runs behind each side's space (`tuning_runs`: `pacebench tune` sweeps, study name "tune-<name>"
or a run document's `"phase": "tuning"`) are counted per side with where its space came from;
they do not decide it.

The ladder (workbench/ladder.py) applies the same rule to each rung's sweep
(workbench/ladder_tuning.py `ladder_entry`).
Pure functions of the run table and run documents; no store access, no torch. The report's
words and tables (compare's tuning line, the report and search-space tables) are
workbench/tuning_tables.py's.
"""
from __future__ import annotations

import json
import math
import operator
import re
from collections import namedtuple
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from workbench.errors import UserError
from workbench import records as R

__all__ = ["EDGE_SHARE", "DEFAULT_NOISE_FLOOR", "DEFAULT_JUDGED", "TUNE_PREFIX", "Outcome",
           "Range", "ranges_of", "position", "edge_of", "judged_names", "tuning_report",
           "report_entry", "fair_tuning", "tuning_warnings", "tuning_runs", "is_tuning_run",
           "check_hparam_names", "hparams_of", "value_text", "planned_trials"]

EDGE_SHARE = 0.10           # the outermost share of a range at each end that counts as its edge
DEFAULT_NOISE_FLOOR = 0.10  # the relative floor of a workload without a measured noise floor
DEFAULT_JUDGED = ("learning_rate",)  # hyperparameters whose edge is always judged
TUNE_PREFIX = "tune-"       # study name of `pacebench tune`'s runs: tune-<algorithm>
_NAME = re.compile(r"[A-Za-z0-9_.-]{1,100}")
# Statuses of a finished trial that count as bad (a trial with no finished attempt counts too).
_BAD = ("diverged", "stalled")
_TIME_COLUMNS = {"train": "time_to_target", "train_seconds": "time_to_target",
                 "wall": "wall_to_target", "wall_seconds": "wall_to_target",
                 "steps": "step_to_target", "step": "step_to_target"}


# -- the edge rule ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Outcome:
    """What one trial got: its time to target (reached), else its best metric value."""

    reached: bool
    time: float        # time to target (inf when not reached)
    metric: float      # best validation value (NaN when none)
    direction: str     # "min" or "max": the metric's better direction

    def key(self) -> tuple[int, float]:
        """Sort key, smaller is better: reached first by time, then by metric."""
        if self.reached and math.isfinite(self.time):
            return (0, self.time)
        if not math.isfinite(self.metric):
            return (2, 0.0)
        return (1, self.metric if self.direction == "min" else -self.metric)

    def beats(self, other: "Outcome", floor: float) -> bool:
        """Whether this outcome is better than `other` by more than the relative `floor`."""
        mine, theirs = self.key(), other.key()
        if mine[0] != theirs[0]:
            return mine[0] < theirs[0]
        if mine[0] == 2:
            return False
        if mine[0] == 0:
            return theirs[1] > mine[1] * (1 + floor)
        if mine[1] >= theirs[1]:
            return False
        small, large = sorted((self.metric, other.metric))
        if small > 0:  # a relative gap: of losses (minimised) or of accuracies (maximised)
            return large / small - 1 > floor
        return large - small > floor * max(abs(small), abs(large), 1e-12)


@dataclass(frozen=True)
class Range:
    """One range of a search space (AlgoPerf's {"min", "max", "scaling"})."""

    name: str
    low: float
    high: float
    scaling: str  # "log" or "linear"

    def to_json(self) -> dict[str, Any]:
        return {"low": self.low, "high": self.high, "scaling": self.scaling}


def _number(value: Any) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and \
        not isinstance(value, (bool, np.bool_)) and math.isfinite(value)


def ranges_of(space: Any) -> tuple[dict[str, Range], dict[str, list], str | None]:
    """({name: Range}, {name: feasible points}, why there is nothing to judge or None) of a
    recorded search space (hostile: anything that is not a valid range is left out)."""
    if space is None:
        return {}, {}, "no search space recorded (an import, an ad-hoc run or no search)"
    if isinstance(space, list):
        return {}, {}, "its search space is a list of points: no range to judge"
    if not isinstance(space, Mapping):
        return {}, {}, "its recorded search space is not an AlgoPerf-format object"
    ranges, points = {}, {}
    for name, spec in space.items():
        if not isinstance(spec, Mapping):
            continue
        low, high, scaling = spec.get("min"), spec.get("max"), spec.get("scaling")
        if _number(low) and _number(high) and scaling in ("log", "linear") and low < high \
                and (scaling == "linear" or low > 0):
            ranges[str(name)] = Range(str(name), float(low), float(high), scaling)
        elif isinstance(spec.get("feasible_points"), list):
            points[str(name)] = list(spec["feasible_points"])
    if not ranges:
        return {}, points, "its search space has no ranges (feasible points only)"
    return ranges, points, None


def position(value: Any, rng: Range) -> float | None:
    """Where `value` lies in `rng`: 0 the low end, 1 the high end, in log10 space on a log
    range (clipped to [0, 1]); None for a value that is not a number (or not positive on a log
    range)."""
    if not _number(value):
        return None
    if rng.scaling == "log":
        if value <= 0:
            return None
        where = (math.log10(value) - math.log10(rng.low)) / (math.log10(rng.high)
                                                              - math.log10(rng.low))
    else:
        where = (value - rng.low) / (rng.high - rng.low)
    return float(min(1.0, max(0.0, where)))


def edge_of(positions: Sequence[float | None], outcomes: Sequence[Outcome], best: int,
            floor: float) -> tuple[str | None, str | None]:
    """(edge, why not judged) of one hyperparameter: "low" / "high" when trial `best` lies in
    the outermost EDGE_SHARE of the range at that end and beats the best trial whose position
    is in the inner 80 % by more than `floor`; None otherwise. The second value is set (and the
    edge None) when the rule cannot be applied: the best trial has no position, or no trial
    lies in the inner 80 %."""
    where = positions[best]
    if where is None:
        return None, "the best trial has no value of it"
    inner = [i for i, p in enumerate(positions)
             if p is not None and EDGE_SHARE < p < 1 - EDGE_SHARE]
    if where <= EDGE_SHARE or where >= 1 - EDGE_SHARE:
        if not inner:
            return None, "no trial in the inner 80 % of its range to compare with"
        rival = min(inner, key=lambda i: outcomes[i].key())
        if outcomes[best].beats(outcomes[rival], floor):
            return ("low" if where <= EDGE_SHARE else "high"), None
    return None, None


def judged_names(hparams: Iterable[str] = ()) -> tuple[str, ...]:
    """The hyperparameters whose edge is judged: the learning rate and `hparams`."""
    return tuple(dict.fromkeys([*DEFAULT_JUDGED, *check_hparam_names(hparams)]))


def check_hparam_names(names: Iterable[str]) -> tuple[str, ...]:
    """`names` as given, each checked: a ValueError names a bad one and what is valid."""
    out = []
    for name in names:
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise UserError(f"--hparam {name!r}: a hyperparameter name is letters, digits, "
                             "'_', '.' or '-' (at most 100), e.g. learning_rate")
        out.append(name)
    return tuple(out)


# -- one side on one workload -------------------------------------------------------------------
def _outcome(row: Any, time_column: str) -> Outcome:
    time, metric = _numeric(getattr(row, time_column, None)), \
        _numeric(getattr(row, "best_validation", None))
    flag = getattr(row, "reached_target", False)  # a bool, or a missing value (pd.NA)
    reached = isinstance(flag, (bool, np.bool_)) and bool(flag) and pd.notna(time)
    direction = getattr(row, "target_direction", "max")
    return Outcome(reached, float(time) if reached else math.inf,
                   float(metric) if pd.notna(metric) else math.nan,
                   "min" if direction == "min" else "max")


def _numeric(value: Any) -> Any:
    """pd.to_numeric(value, errors="coerce"), a float as it is (the run table's float columns:
    3,700 calls of pd.to_numeric were a tenth of the tuning report of the v0.5 logs)."""
    return value if type(value) is float else pd.to_numeric(value, errors="coerce")


def hparams_of(value: Any) -> Mapping[str, Any]:
    """A run's hyperparameters as a mapping (the run index keeps them as JSON text; anything
    else reads {})."""
    if isinstance(value, str):  # the run index keeps hparams as JSON text
        try:
            value = json.loads(value)
        except ValueError:
            return {}
    return value if isinstance(value, Mapping) else {}


def report_entry(name: str, space: Any, hparams: Sequence[Mapping[str, Any]],
                 outcomes: Sequence[Outcome], *, trials: int, bad: int, planned: int | None,
                 floor: float | None, judged: Sequence[str] = DEFAULT_JUDGED,
                 why: str | None = None, workload: str | None = None,
                 origin: Any = None) -> dict[str, Any]:
    """The report of one side (`name`) on one workload: `hparams` and `outcomes` of its finished
    trials (one each, same order), `trials` in all and `bad` of them, `planned` trials per
    study, the relative noise `floor` (None: DEFAULT_NOISE_FLOOR), the names whose edge is
    judged; `why` forces `bracketed` null with that reason (self-tuning)."""
    ranges, points, no_range = ranges_of(space) if why is None else ({}, {}, why)
    measured = floor is not None and math.isfinite(floor)
    floor = float(floor) if measured else DEFAULT_NOISE_FLOOR
    out: dict[str, Any] = {
        "trials": int(trials), "finished": len(outcomes), "bad_fraction":
        round(bad / trials, 6) if trials else None, "planned_trials": planned,
        "origin": origin, "noise_floor": round(floor, 6),
        "floor_source": "measured" if measured else "default", "best": None, "hparams": {},
        "edge": {}, "bracketed": None, "why": no_range, "finding": ""}
    if outcomes:
        best = min(range(len(outcomes)), key=lambda i: outcomes[i].key())
        o = outcomes[best]
        out["best"] = {"reached": o.reached, "time_to_target": o.time if o.reached else None,
                       "best_validation": o.metric if math.isfinite(o.metric) else None}
        reasons = _judge(out, ranges, points, hparams, outcomes, best, floor, judged)
        if no_range is None:
            out["why"] = reasons
    elif no_range is None:
        out["why"] = "no finished trial"
    if out["why"] is None:
        out["bracketed"] = not any(out["edge"].values()) and (out["bad_fraction"] or 0) < 0.5
    out["finding"] = _finding(name, workload, out)
    return out


def _judge(out: dict, ranges: Mapping[str, Range], points: Mapping[str, list],
           hparams: Sequence[Mapping[str, Any]], outcomes: Sequence[Outcome], best: int,
           floor: float, judged: Sequence[str]) -> str | None:
    """Fill out["hparams"] and out["edge"]; the reason no judged hyperparameter could be
    judged, or None."""
    reasons = []
    for hp, rng in ranges.items():
        positions = [position(h.get(hp), rng) for h in hparams]
        entry = {**rng.to_json(), "value": _plain(hparams[best].get(hp)),
                 "position": None if positions[best] is None else round(positions[best], 4)}
        if hp in judged:
            edge, reason = edge_of(positions, outcomes, best, floor)
            out["edge"][hp] = edge
            if reason:
                reasons.append(f"{hp}: {reason}")
                entry["why"] = reason
        out["hparams"][hp] = entry
    for hp, values in points.items():
        out["hparams"][hp] = {"points": [_plain(v) for v in values],
                              "value": _plain(hparams[best].get(hp)), "position": None}
    if not any(hp in ranges for hp in judged):
        return f"no range of {' or '.join(judged)} in its search space"
    judged_ok = [hp for hp in judged if hp in ranges and not any(
        r.startswith(f"{hp}:") for r in reasons)]
    return None if judged_ok else "; ".join(reasons)


def _plain(value: Any) -> Any:
    """A JSON-ready copy of a hyperparameter value (numbers as floats, text as is)."""
    if isinstance(value, (np.integer, np.floating)):
        return value.item()
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return json.loads(json.dumps(value, default=str))


def _short(value: Any) -> str:
    return f"{value:.2g}" if _number(value) else str(value)


_WHERE = {"low": "at the bottom of its range", "high": "at the top of its range"}
_ADVICE = {"low": "widen the range downward", "high": "widen the range upward"}


def _finding(name: str, workload: str | None, entry: Mapping[str, Any]) -> str:
    """The entry in one sentence (the issue's example: "cautious: best learning rate 9.6e-3 at
    the top of its range (1e-4 to 1e-2); 13 of 40 trials stalled: widen the range upward")."""
    where = f"{name}" + (f" on {workload}" if workload else "")
    parts = []
    for hp, edge in entry["edge"].items():
        info = entry["hparams"].get(hp, {})
        value = _short(info.get("value"))
        span = f"({_short(info.get('low'))} to {_short(info.get('high'))})"
        if edge:
            parts.append(f"best {hp} {value} {_WHERE[edge]} {span} (edge {edge}), beating the "
                         f"best trial inside by more than the noise floor of "
                         f"{100 * entry['noise_floor']:.1f} %")
        elif info.get("position") is not None:
            parts.append(f"best {hp} {value} at {100 * info['position']:.0f} % of its range "
                         f"{span}")
    trials, bad = entry["trials"], entry["bad_fraction"]
    if trials and bad:
        parts.append(f"{round(bad * trials)} of {trials} trials diverged, stalled or failed")
    text = f"{where}: " + ("; ".join(parts) if parts else f"{entry['finished']} of {trials} "
                           "trials finished")
    edges = [e for e in entry["edge"].values() if e]
    if edges:
        return text + f": {_ADVICE[edges[0]]} (`pacebench tune`)"
    if entry["bracketed"] is None:
        return text + f"; not judged: {entry['why']}"
    if entry["bracketed"] is False:
        return text + ": half or more of its trials are bad; re-centre the range (`pacebench tune`)"
    return text + "; bracketed"


# -- the report of a run table ------------------------------------------------------------------
def is_tuning_run(runs: pd.DataFrame) -> np.ndarray:
    """Which rows are tuning runs (`pacebench tune`'s: study name "tune-<name>", or a `phase`
    column of "tuning" where the run table has one)."""
    names = runs["study_name"].astype(object).fillna("").astype(str)
    mask = np.array(names.str.startswith(TUNE_PREFIX).to_numpy(bool), dtype=bool)  # a copy
    if "phase" in runs.columns:
        mask = mask | runs["phase"].astype(object).eq("tuning").to_numpy(bool, na_value=False)
    return mask


def _space_doc(run_ids: Iterable[str], read_doc: Callable[[str], Mapping[str, Any]]
               ) -> Mapping[str, Any]:
    """The first readable run document of `run_ids` ({} when none is)."""
    for run_id in run_ids:
        try:
            doc = read_doc(str(run_id))
        except (OSError, ValueError, KeyError):
            continue
        if isinstance(doc, Mapping):
            return doc
    return {}


def _origin(doc: Mapping[str, Any]) -> str | None:
    origin = doc.get("search_space_origin")
    return origin if origin in ("declared", "file", "signature", "tuned") else \
        (None if origin is None else "unknown")


def tuning_report(finished: pd.DataFrame, read_doc: Callable[[str], Mapping[str, Any]], *,
                  attempts: pd.DataFrame | None = None, algorithms: Sequence[str] | None = None,
                  hparams: Iterable[str] = (), floors: Mapping[str, float] | None = None,
                  time_axis: str = "train") -> dict[str, dict[str, dict[str, Any]]]:
    """{algorithm: {workload: report_entry}} of the finished runs of a scope (`finished`:
    scope.Scoped.runs, the trials' finished attempts) and every attempt of it (`attempts`:
    scope.labelled_runs; default `finished`), for `algorithms` (default all), judging the
    learning rate and `hparams`, against the workloads' relative noise `floors` (CoV; missing:
    DEFAULT_NOISE_FLOOR), times on `time_axis` (train, wall or steps). `read_doc`: run_id ->
    run document (Store.run_doc), read for one run per side and workload (its search space).
    Tuning runs (is_tuning_run) are left out: they are counted by tuning_runs."""
    judged = judged_names(hparams)
    column = _TIME_COLUMNS.get(time_axis)
    if column is None:
        raise ValueError(f"unknown time axis {time_axis!r}: valid are train, wall, steps")
    finished = _narrow(finished[~is_tuning_run(finished)], column)
    attempts = finished if attempts is None else \
        _narrow(attempts[~is_tuning_run(attempts)], column)
    names = list(algorithms) if algorithms is not None else \
        sorted(set(finished["algorithm"].astype(str)))
    done_by = _by_side(finished)
    tried_by = done_by if attempts is finished or attempts["run_id"].equals(finished["run_id"]) \
        else _by_side(attempts)  # (every attempt finished: the v0.5 logs' 3,700 runs)
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for name in names:
        out[name] = {}
        workloads = done_by.get(name, {}).keys() | tried_by.get(name, {}).keys()
        for w in sorted(workloads):
            out[name][w] = _side_entry(name, w, done_by.get(name, {}).get(w, {}).get("rows", []),
                                       tried_by.get(name, {}).get(w, {}).get("rows", []),
                                       read_doc, judged, (floors or {}).get(w), column)
    return out


_CELL = ["study_name", "study", "trial", "seed"]


def _narrow(runs: pd.DataFrame, time_column: str) -> pd.DataFrame:
    """`runs` with only the columns the side entries read: each filter, drop_duplicates and
    itertuples over the run table's 60-odd columns took most of a `score` of the v0.5 logs."""
    wanted = (*_CELL, "algorithm", "workload", "status", "run_id", "ruleset", "hparams",
              time_column, "reached_target", "best_validation", "target_direction")
    return runs[[c for c in dict.fromkeys(wanted) if c in runs.columns]]


def _by_side(runs: pd.DataFrame) -> dict[str, dict[str, dict[str, list]]]:
    """{algorithm: {workload: {"rows": the runs' rows (namedtuples), in table order}}}: one pass
    over the narrowed table instead of a pandas filter per side and workload (most of a
    `score` of the v0.5 logs). The workload keys are `astype(str)`'s texts, as before; a row
    whose algorithm or workload is missing matches no side (a filter `== name` never
    matched it), but its workload's text is still listed."""
    out: dict[str, dict[str, dict[str, list]]] = {}
    texts = runs["workload"].astype(str).tolist()
    row_type = namedtuple("Row", runs.columns, rename=True)  # as itertuples, from columns
    rows = map(row_type._make, zip(*(runs[c].tolist() for c in runs.columns)))
    for row, text in zip(rows, texts):
        algorithm, workload = row.algorithm, row.workload
        if not isinstance(algorithm, str):
            continue
        entry = out.setdefault(algorithm, {}).setdefault(text, {"rows": []})
        if isinstance(workload, str) and workload == text:
            entry["rows"].append(row)
    return out


def _key(values: Iterable[Any]) -> tuple:
    """A trial cell's key with every missing value (None, NaN, pd.NA) as None: equal cells
    compare equal, as pandas' drop_duplicates and groupby(dropna=False) see them. (`v != v`
    holds for a NaN only; pd.NA is caught before it.)"""
    return tuple(None if v is None or v is pd.NA or v != v else v for v in values)


_cell_of = operator.attrgetter(*_CELL)  # a row's trial cell, as a tuple


def _last_per_cell(rows: Sequence[Any]) -> list[Any]:
    """`rows` without repeated trial cells, each cell's last row kept, in table order
    (DataFrame.drop_duplicates(_CELL, keep="last"))."""
    last = {_key(_cell_of(r)): i for i, r in enumerate(rows)}
    kept = set(last.values())
    return [r for i, r in enumerate(rows) if i in kept]


def _planned(rows: Sequence[Any]) -> int | None:
    """The most distinct trials (missing ones not counted) of any (study name, study) of
    `rows`; None without rows (groupby(..., dropna=False)["trial"].nunique().max())."""
    trials: dict[tuple, set] = {}
    for r in rows:
        trial = _key([r.trial])[0]
        seen = trials.setdefault(_key([r.study_name, r.study]), set())
        if trial is not None:
            seen.add(trial)
    return max(len(t) for t in trials.values()) if trials else None


def _side_entry(name: str, workload: str, mine: Sequence[Any], tried: Sequence[Any],
                read_doc, judged, floor, column) -> dict[str, Any]:
    """report_entry of one side on one workload from its finished runs and all its attempts
    (rows of the narrowed run table, _by_side)."""
    done = _last_per_cell(mine)
    finished_cells = len(done)
    cells = len({_key(_cell_of(r)) for r in tried}) if tried else finished_cells
    trials = max(cells, finished_cells)
    bad = sum(1 for r in done if isinstance(r.status, str) and r.status in _BAD) + \
        (trials - finished_cells)
    source = tried if tried else done
    planned = _planned(source)
    doc = _space_doc([r.run_id for r in done] or [r.run_id for r in tried], read_doc)
    rulesets = {str(r.ruleset) for r in source if _key([r.ruleset])[0] is not None}
    why = "self-tuning: no search space to judge" if rulesets == {"self"} else None
    return report_entry(name, doc.get("search_space"),
                        [hparams_of(getattr(r, "hparams", None)) for r in done],
                        [_outcome(r, column) for r in done], trials=trials, bad=bad,
                        planned=planned, floor=floor, judged=judged, why=why,
                        workload=workload, origin=_origin(doc))


def _side_verdict(entries: Mapping[str, Mapping[str, Any]]) -> bool | None:
    values = [e["bracketed"] for e in entries.values()]
    if any(v is False for v in values):
        return False
    return True if any(v is True for v in values) else None


def planned_trials(entries: Mapping[str, Mapping[str, Any]]) -> int | None:
    """The most trials per study any of a side's `entries` (workload -> report entry) planned;
    None when none says."""
    values = [e["planned_trials"] for e in entries.values() if e["planned_trials"] is not None]
    return max(values) if values else None


def fair_tuning(report: Mapping[str, Mapping[str, Mapping[str, Any]]], a: str, b: str
                ) -> bool | None:
    """Whether a and b were tuned comparably (see the module doc): false when either side's
    bracketed is false on a workload or their planned trials per study differ; null when
    neither side can be judged; else true."""
    sides = [_side_verdict(report.get(x, {})) for x in (a, b)]
    if False in sides:
        return False
    planned = [planned_trials(report.get(x, {})) for x in (a, b)]
    if None not in planned and planned[0] != planned[1]:
        return False
    return None if sides == [None, None] else True


def tuning_warnings(report: Mapping[str, Mapping[str, Mapping[str, Any]]], a: str, b: str,
                    extra: Iterable[str] = ()) -> list[str]:
    """The sentences behind a fair_tuning of false: each side's findings where its bracketed is
    false (an edge, or half its trials bad), unequal planned trials per study, then `extra`
    (compare's under-tuned-baseline warnings)."""
    out = [e["finding"] for x in (a, b) for e in report.get(x, {}).values()
           if e["bracketed"] is False]
    planned = {x: planned_trials(report.get(x, {})) for x in (a, b)}
    if None not in planned.values() and planned[a] != planned[b]:
        out.append(f"unequal tuning: {a} had {planned[a]} trials per study, {b} "
                   f"{planned[b]}: the side with more trials is favoured")
    return out + list(extra)


def tuning_runs(runs: pd.DataFrame, algorithms: Sequence[str],
                read_doc: Callable[[str], Mapping[str, Any]],
                scoped_ids: Iterable[str] = ()) -> dict[str, dict[str, Any]]:
    """{algorithm: {"runs", "finished", "study_names", "origin", "file"}}: the tuning runs
    behind each side's search space in the whole run table `runs` (records.RUN_COLUMNS; a side
    shown apart as "name [study]" is matched by its name), and where the space its scored runs
    were drawn from came from (the first readable document of its runs in `scoped_ids`).
    Tuning runs: is_tuning_run, or a run outside the scope whose document says
    "phase": "tuning"."""
    inside = set(map(str, scoped_ids))
    out = {}
    for side in algorithms:
        base = side.split(" [", 1)[0]
        mine = runs[runs["algorithm"].astype(str).isin([side, base]).to_numpy(bool)]
        flagged = is_tuning_run(mine).copy()
        for i, run_id in enumerate(mine["run_id"].astype(str)):
            if not flagged[i] and run_id not in inside:
                flagged[i] = _space_doc([run_id], read_doc).get("phase") == "tuning"
        sweep = mine[flagged]
        doc = _space_doc([r for r in mine["run_id"].astype(str) if r in inside], read_doc)
        out[side] = {"runs": int(len(sweep)),
                     "finished": int(sweep["status"].isin(R.DONE_STATUSES).sum()),
                     "study_names": sorted(set(sweep["study_name"].dropna().astype(str))),
                     "origin": _origin(doc), "file": doc.get("search_space_file")
                     if isinstance(doc.get("search_space_file"), str) else None}
    return out


# -- words -------------------------------------------------------------------------------------
def value_text(value: Any) -> str:
    """A hyperparameter value in a table cell: 3 significant digits, "-" for none."""
    if value is None:
        return "-"
    return f"{value:.3g}" if _number(value) else str(value)
