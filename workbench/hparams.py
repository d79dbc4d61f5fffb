"""Hyperparameters of trials beside their outcomes: the table behind the Hyperparameters view.

One row per trial of the final cube (its chosen attempt, as the cube keeps it), with its outcome
(time to target in the cube's time units, +inf for a miss; best validation value) and one column
`hparams/<name>` per hyperparameter of the run's `hparams` document.

Log or linear axis, per hyperparameter (`log_axes`):
1. the algorithm's search space says so: `runners/algorithms/<algorithm>.json`, read as a data
   file (AlgoPerf's format; a range has "scaling": "log" or "linear");
2. otherwise (feasible points, list spaces, AlgoPerf imports, unknown algorithms) it is inferred
   from the values drawn: log when every value is positive and max / min >= 100 (they span at
   least LOG_DECADES = 2 decades), else linear.

Parallel coordinates (`normalise`, `axis_ticks`): each axis maps the shown trials' range to
[0, 1], in log10 space on a log axis (a constant axis sits at 0.5); tick labels carry the real
values.
"""
from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any, Iterable, Mapping

import numpy as np
import pandas as pd
import xarray as xr

from workbench.errors import UserError

__all__ = ["HPARAM_PREFIX", "SPACES_DIR", "LOG_DECADES", "OUTCOME_COLUMNS", "trial_frame",
           "hparam_columns", "numeric_axes", "fixed_hparams", "search_space_scalings",
           "infer_log", "log_axes", "normalise", "axis_ticks", "sample_trials", "hparam_name"]

HPARAM_PREFIX = "hparams/"  # column of hyperparameter h: "hparams/h"
# The AlgoPerf-format search spaces of our algorithms (shipped as package data of runners).
SPACES_DIR = Path(__file__).resolve().parents[1] / "runners" / "algorithms"
LOG_DECADES = 2.0  # values spanning at least this many decades (all positive) get a log axis
OUTCOME_COLUMNS = ("run_id", "algorithm", "workload", "study", "trial", "seed", "status",
                   "reached", "time_to_target", "best_validation")
_NAME = re.compile(r"[A-Za-z0-9_.-]+")


def hparam_name(column: str) -> str:
    """"hparams/learning_rate" -> "learning_rate"."""
    return column.removeprefix(HPARAM_PREFIX)


def hparam_columns(frame: pd.DataFrame) -> list[str]:
    """The hyperparameter columns of a trial_frame, in their order."""
    return [c for c in frame.columns if c.startswith(HPARAM_PREFIX)]


def trial_frame(cube: xr.Dataset, runs: pd.DataFrame, workload: str | None = None,
                algorithm: str | None = None) -> pd.DataFrame:
    """One row per trial of `cube` (restricted to `workload` / `algorithm` when given):
    OUTCOME_COLUMNS, then a `hparams/<name>` column per hyperparameter found in the runs'
    `hparams` (None where a run lacks it). `runs` must hold the cube's run_ids (Selection.runs
    or the runs frame it was built from). attrs["time_units"]: the units of time_to_target.
    """
    for name, value in (("workload", workload), ("algorithm", algorithm)):
        known = [str(v) for v in cube[name].values]
        if value is not None and value not in known:
            raise UserError(f"unknown {name} {value!r}: the cube has {known}")
    if workload is not None:
        cube = cube.sel(workload=[workload])
    if algorithm is not None:
        cube = cube.sel(algorithm=[algorithm])
    names = ["time_to_target", "best_validation", "reached", "run_id", "status"]
    flat = cube[names].reset_coords(drop=True).to_dataframe().reset_index()
    flat = flat[flat["run_id"] != ""]
    flat["reached"] = flat["reached"] == 1.0
    out = flat[list(OUTCOME_COLUMNS)].reset_index(drop=True)
    expanded = _expand(runs, out["run_id"])
    out = pd.concat([out, expanded], axis=1)
    out.attrs["time_units"] = cube["time_to_target"].attrs.get("units", "s")
    return out


def _expand(runs: pd.DataFrame, run_ids: pd.Series) -> pd.DataFrame:
    """The hparams documents of `run_ids` as columns hparams/<name>, in run_ids' order."""
    if "hparams" not in runs.columns or "run_id" not in runs.columns:
        raise UserError("runs lacks run_id or hparams: pass the runs frame the cube was built "
                        "from (workbench.query.runs_frame or Selection.runs)")
    docs = runs.drop_duplicates("run_id").set_index("run_id")["hparams"]
    lacking = [r for r in run_ids if r not in docs.index]
    if lacking:
        raise UserError(f"runs lacks {len(lacking)} of the cube's runs (e.g. {lacking[0]!r}); "
                        "pass the runs frame the cube was built from")
    rows = [d if isinstance(d, Mapping) else {} for d in docs.loc[list(run_ids)]]
    keys = list(dict.fromkeys(k for row in rows for k in row))
    data = {f"{HPARAM_PREFIX}{k}": [row.get(k) for row in rows] for k in keys}
    return pd.DataFrame(data, index=range(len(rows)), dtype=object)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and \
        not isinstance(value, (bool, np.bool_)) and math.isfinite(value)


def numeric_axes(frame: pd.DataFrame) -> list[str]:
    """Hyperparameter columns fit for an axis: every value present is a finite number (not a
    bool) and at least two distinct values occur."""
    axes = []
    for column in hparam_columns(frame):
        values = frame[column].dropna()
        if len(values) and all(_is_number(v) for v in values) and values.nunique() >= 2:
            axes.append(column)
    return axes


def fixed_hparams(frame: pd.DataFrame) -> dict[str, Any]:
    """{name: value} of the hyperparameters that take one value over all the frame's trials."""
    out = {}
    for column in hparam_columns(frame):
        values = frame[column].dropna()
        text = values.map(lambda v: json.dumps(v, sort_keys=True))
        if len(values) == len(frame) and text.nunique() == 1:
            out[hparam_name(column)] = values.iloc[0]
    return out


def search_space_scalings(algorithm: str, spaces_dir: str | Path = SPACES_DIR) -> dict[str, str]:
    """{hyperparameter: "log" | "linear"} of the ranges in `<spaces_dir>/<algorithm>.json`
    (AlgoPerf's format); {} when there is no such file (an AlgoPerf submission, an unknown name)
    or the space is a list of points. Feasible-point entries are left out (no scaling)."""
    if not _NAME.fullmatch(algorithm) or algorithm.startswith("."):
        return {}
    path = Path(spaces_dir) / f"{algorithm}.json"
    if not path.is_file():
        return {}
    try:
        space = json.loads(path.read_bytes())
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise UserError(f"{path}: not valid JSON ({err}); a search space is an AlgoPerf-format "
                        "object or list of points") from None
    if not isinstance(space, Mapping):
        return {}
    out = {}
    for name, spec in space.items():
        scaling = spec.get("scaling") if isinstance(spec, Mapping) else None
        if scaling is not None:
            if scaling not in ("log", "linear"):
                raise UserError(f"{path}: hyperparameter {name!r} has scaling {scaling!r}; "
                                "valid are log, linear")
            out[str(name)] = scaling
    return out


def infer_log(values: Iterable[float]) -> bool:
    """A log axis for values of an unknown search space: all positive, max / min >= 10**2."""
    finite = np.asarray([v for v in values if _is_number(v)], dtype=float)
    if finite.size < 2 or (finite <= 0).any():
        return False
    return bool(np.log10(finite.max() / finite.min()) >= LOG_DECADES)


def log_axes(frame: pd.DataFrame, algorithm: str, columns: Iterable[str] | None = None,
             spaces_dir: str | Path = SPACES_DIR) -> dict[str, bool]:
    """{column: log?} for hyperparameter columns (default numeric_axes): the algorithm's search
    space where it gives a scaling, else infer_log of the values (see the module docstring)."""
    scalings = search_space_scalings(algorithm, spaces_dir)
    out = {}
    for column in (numeric_axes(frame) if columns is None else columns):
        name = hparam_name(column)
        positive = bool((frame[column].dropna().astype(float) > 0).all())
        if name in scalings:
            out[column] = scalings[name] == "log" and positive
        else:
            out[column] = infer_log(frame[column].dropna())
    return out


def _scaled(values: np.ndarray, log: bool) -> np.ndarray:
    if log:
        if (values[np.isfinite(values)] <= 0).any():
            raise UserError("a log axis needs positive values; got "
                            f"{values[np.isfinite(values) & (values <= 0)][:3].tolist()}")
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.log10(values)
    return values


def _span(values: Iterable[float], log: bool) -> tuple[float, float]:
    """(low, high) of the finite values, in log10 space on a log axis."""
    scaled = _scaled(np.asarray(list(values), dtype=float), log)
    finite = scaled[np.isfinite(scaled)]
    if not finite.size:
        return (math.nan, math.nan)
    return float(finite.min()), float(finite.max())


def normalise(values: Iterable[float], log: bool) -> np.ndarray:
    """Values mapped to [0, 1] over their finite range (log10 space when `log`): the smallest
    goes to 0, the largest to 1; all equal: 0.5; NaN and infinities stay NaN."""
    values = np.asarray(list(values), dtype=float)
    values = np.where(np.isfinite(values), values, np.nan)
    low, high = _span(values, log)
    scaled = _scaled(values, log)
    if not math.isfinite(low):
        return np.full(values.shape, np.nan)
    if high == low:
        return np.where(np.isnan(scaled), np.nan, 0.5)
    return (scaled - low) / (high - low)


def _label(value: float) -> str:
    """Short text of a tick value: 3 significant digits, scientific when tiny or huge."""
    if value == 0:
        return "0"
    if abs(value) < 1e-3 or abs(value) >= 1e6:
        return f"{value:.2g}"
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.3g}"


def axis_ticks(values: Iterable[float], log: bool, count: int = 5) -> list[tuple[float, str]]:
    """(position in [0, 1] as `normalise` maps it, label in real units) for an axis over
    `values`: on a log axis every power of ten inside the range plus both ends; on a linear
    axis `count` evenly spaced values from the smallest to the largest. A constant axis has one
    tick at 0.5."""
    values = np.asarray(list(values), dtype=float)
    low, high = _span(values, log)
    if not math.isfinite(low):
        return []
    if high == low:
        return [(0.5, _label(10 ** low if log else low))]
    if log:
        decades = np.arange(math.ceil(low - 1e-9), math.floor(high + 1e-9) + 1, dtype=float)
        inner = [d for d in decades if (d - low) / (high - low) > 0.08
                 and (high - d) / (high - low) > 0.08]  # ends are labelled; keep labels apart
        points = [low, *inner, high]  # log10 values
        return [((p - low) / (high - low), _label(10 ** p)) for p in points]
    points = np.linspace(low, high, count)
    return [((p - low) / (high - low), _label(p)) for p in points]


def sample_trials(frame: pd.DataFrame, limit: int, seed: int = 0) -> pd.DataFrame:
    """At most `limit` rows: all of them when they fit, else a uniform random sample without
    replacement (numpy generator seeded with `seed`, so the same rows every time), in the
    frame's order."""
    if limit < 1:
        raise UserError(f"limit must be at least 1, got {limit}")
    if len(frame) <= limit:
        return frame
    keep = np.sort(np.random.default_rng(seed).choice(len(frame), size=limit, replace=False))
    return frame.iloc[keep]
