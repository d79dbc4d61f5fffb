"""Tidy frames -> xarray: the final cube (one cell per trial) and the curve cube (one row per run).

Both cubes are built by scattering values into NaN-filled NumPy arrays through integer codes of
each dimension, not by a pandas unstack, so they stay fast on large stores. Every data variable
carries its units in `attrs["units"]`.

The time axes are owned here too: what "time to target" means (training seconds, wall seconds or
steps) is a swap of the final cube's `time_to_target` for another of its variables
(`on_time_axis`), which the dashboard's selection and the analysis commands both make; and
`excluding_compile` takes each run's compilation off its seconds before a cube is built.
"""
from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np
import pandas as pd
import xarray as xr

from workbench import records as R
from workbench.errors import UserError

__all__ = ["FINAL_DIMS", "TRIAL_IDENTITY", "select_attempts", "final_cube", "curve_cube", "on_grid",
           "TIME_AXIS_COLUMNS", "TIME_TO_TARGET", "AXIS_UNITS", "AXIS_LABELS", "axis_column",
           "axis_name", "on_time_axis", "excluding_compile", "COMPILE_EXCLUDED"]

FINAL_DIMS = ("algorithm", "workload", "study", "trial", "seed")
# What makes a trial: the same trial re-run (resumed) is another attempt of it.
TRIAL_IDENTITY = ("study_name", "algorithm", "workload", "ruleset", "study", "trial", "seed")
WORKLOAD_COORDS = ("base_workload", "variant", "target_metric", "target_direction",
                   "target_validation")
CURVE_COORDS = ("run_id", "algorithm", "workload", "base_workload", "variant", "study_name",
                "ruleset", "study", "trial", "seed", "attempt", "status", "target_metric",
                "target_direction", "target_validation")
CURVE_VARS = ("step", "examples", "train_seconds", "eval_seconds", "wall_seconds")
UNITS = {"time_to_target": "s", "wall_to_target": "s", "train_seconds": "s", "eval_seconds": "s", "wall_seconds": "s",
         "eval_index_to_target": "evals", "step_to_target": "steps", "step": "steps",
         "examples": "examples", "reached": "1", "status": "", "run_id": ""}


def _require(frame: pd.DataFrame, columns: Iterable[str], what: str) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise UserError(f"{what} lacks columns {missing}: pass workbench.query.runs_frame(store) "
                        "(or evals_frame) output")


def select_attempts(runs: pd.DataFrame) -> pd.DataFrame:
    """One run per trial: its latest attempt with a done status, else its latest attempt."""
    _require(runs, TRIAL_IDENTITY + ("attempt", "status"), "runs")
    key = list(TRIAL_IDENTITY)
    ordered = runs.assign(_done=runs["status"].isin(R.DONE_STATUSES).to_numpy(bool))
    ordered = ordered.sort_values(key + ["_done", "attempt"], kind="stable")
    return ordered.drop_duplicates(key, keep="last").drop(columns="_done")


def _codes(values: pd.Series, dim: str) -> tuple[np.ndarray, np.ndarray]:
    """(sorted distinct values, integer code of each value) of one dimension's column."""
    if values.isna().any():
        raise UserError(f"column {dim!r} has missing values; every run needs a {dim}")
    cat = pd.Categorical(values)
    coords = np.asarray(cat.categories)
    if coords.dtype.kind in "OUT" or isinstance(cat.categories.dtype, pd.StringDtype):
        coords = coords.astype(object)
    return coords, cat.codes.astype(np.int64)


def _scatter(shape: tuple[int, ...], flat: np.ndarray, values: np.ndarray, fill) -> np.ndarray:
    """Array of `shape` filled with `fill`, with values[i] at flat position flat[i]."""
    values = np.asarray(values)
    out = np.full(int(np.prod(shape)), fill, dtype=values.dtype)
    out[flat] = values
    return out.reshape(shape)


def _check_unique_cells(chosen: pd.DataFrame) -> None:
    dup = chosen.duplicated(list(FINAL_DIMS), keep=False)
    if dup.any():
        example = chosen.loc[dup, list(TRIAL_IDENTITY)].head(2).to_dict("records")
        raise UserError("runs hold several study names or rulesets for the same (algorithm, "
                        f"workload, study, trial, seed), e.g. {example}; filter runs to one "
                        "ruleset and study_name before building the cube")


def _workload_coords(chosen: pd.DataFrame, workloads: np.ndarray) -> dict[str, tuple]:
    """Per-workload coordinates, taken from each workload's most recently started run."""
    latest = chosen[["workload", "started_at", *WORKLOAD_COORDS]]  # not every column sorted
    latest = latest.sort_values("started_at", kind="stable").drop_duplicates("workload", keep="last")
    latest = latest.set_index("workload").loc[list(workloads)]
    coords = {}
    for c in WORKLOAD_COORDS:
        col = latest[c]
        values = col.to_numpy(float) if c == "target_validation" else col.to_numpy(object)
        coords[c] = ("workload", values)
    return coords


# The run-table columns final_cube reads.
_CUBE_COLUMNS = frozenset((*TRIAL_IDENTITY, *FINAL_DIMS, *WORKLOAD_COORDS, "attempt", "status",
                           "run_id", "started_at", "reached_target", "time_to_target",
                           "eval_index_to_target", "step_to_target", "wall_to_target",
                           "best_validation"))


def final_cube(runs: pd.DataFrame) -> xr.Dataset:
    """Per-trial results as a Dataset with dims FINAL_DIMS (see select_attempts for attempts).

    time_to_target (training s), wall_to_target (wall s), eval_index_to_target and
    step_to_target are +inf when the trial ran and
    missed its target and NaN when there is no such trial; reached is 1/0 (NaN: no trial);
    best_validation is the best validation value of the target metric; status and run_id are ""
    where there is no trial.
    """
    _require(runs, R.RUN_COLUMNS, "runs")
    # only the columns the cube is made of travel through the sort (each costs an Arrow take)
    chosen = select_attempts(runs[[c for c in runs.columns if c in _CUBE_COLUMNS]])
    _check_unique_cells(chosen)
    coords, codes = {}, []
    for dim in FINAL_DIMS:
        coords[dim], code = _codes(chosen[dim], dim)
        codes.append(code)
    shape = tuple(len(coords[d]) for d in FINAL_DIMS)
    flat = np.ravel_multi_index(codes, shape) if len(chosen) else np.zeros(0, np.int64)
    reached = chosen["reached_target"].to_numpy(bool)

    def missed_inf(column: str) -> np.ndarray:
        values = chosen[column].to_numpy(float, na_value=np.nan)
        return np.where(reached, values, np.inf)

    data = {
        "time_to_target": missed_inf("time_to_target"),
        "eval_index_to_target": missed_inf("eval_index_to_target"),
        "step_to_target": missed_inf("step_to_target"),
        "wall_to_target": missed_inf("wall_to_target"),
        "best_validation": chosen["best_validation"].to_numpy(float, na_value=np.nan),
        "reached": reached.astype(float),
    }
    variables = {k: (FINAL_DIMS, _scatter(shape, flat, v, np.nan), {"units": UNITS.get(k, "")})
                 for k, v in data.items()}
    for k in ("status", "run_id"):
        values = chosen[k].to_numpy(object, na_value="")
        variables[k] = (FINAL_DIMS, _scatter(shape, flat, values, ""), {"units": ""})
    variables["best_validation"][2]["units"] = "target metric"
    ds = xr.Dataset(variables, coords={**coords, **_workload_coords(chosen, coords["workload"])})
    ds.attrs["description"] = ("one cell per trial; +inf: ran and missed the validation target; "
                               "NaN: no such trial")
    return ds


def _run_coords(runs: pd.DataFrame) -> dict[str, tuple]:
    coords = {}
    for c in CURVE_COORDS:
        if c not in runs.columns:
            continue
        col = runs[c]
        if pd.api.types.is_numeric_dtype(col) and not pd.api.types.is_bool_dtype(col):
            values = col.to_numpy(float, na_value=np.nan) if col.isna().any() else col.to_numpy()
        else:
            values = col.to_numpy(object)
        coords[c] = ("run", values)
    return coords


def curve_cube(runs: pd.DataFrame, evals: pd.DataFrame,
               metrics: Sequence[str] | None = None) -> xr.Dataset:
    """Learning curves with dims ("run", "eval"): one row per run of `runs`, in its order.

    `eval` is the eval_index; values are NaN where a run has no such eval. Data vars: step,
    examples, train_seconds, eval_seconds, wall_seconds and each metric column (default: every
    `<split>/<metric>` column of `evals`). Run coordinates: run_id, algorithm, workload, study,
    trial, seed, status, targets, ...
    """
    _require(runs, ("run_id",), "runs")
    _require(evals, R.EVAL_COLUMNS, "evals")
    if metrics is None:
        metrics = [c for c in evals.columns if R.split_of(c)]
    unknown = [m for m in metrics if m not in evals.columns]
    if unknown:
        known = [c for c in evals.columns if R.split_of(c)]
        raise UserError(f"unknown metric columns {unknown}: evals has {known}")
    run_ids = runs["run_id"].to_numpy(object)
    if len(set(run_ids)) != len(run_ids):
        raise UserError("runs has repeated run_id values; pass one row per run attempt")
    row_code = pd.Index(run_ids).get_indexer(evals["run_id"].to_numpy(object))
    rows = evals[row_code >= 0]
    row_code = row_code[row_code >= 0]
    index = rows["eval_index"].to_numpy(np.int64)
    n_eval = int(index.max()) + 1 if len(index) else 0
    shape = (len(run_ids), n_eval)
    flat = row_code * n_eval + index
    variables = {}
    for c in list(CURVE_VARS) + list(metrics):
        values = rows[c].to_numpy(float, na_value=np.nan)
        variables[c] = (("run", "eval"), _scatter(shape, flat, values, np.nan),
                        {"units": UNITS.get(c, "")})
    coords = {"run": run_ids, "eval": np.arange(n_eval), **_run_coords(runs)}
    return xr.Dataset(variables, coords=coords)


def on_grid(curves: xr.Dataset, var: str, axis: str = "train_seconds",
            grid: Sequence[float] | np.ndarray | None = None) -> xr.DataArray:
    """`var` of each run sampled on `grid` points of `axis`: dims ("run", "grid").

    Step-wise: the value at the last eval with axis value <= the grid point (a NaN value stays
    NaN); NaN before a run's first eval. Default grid: 101 points from 0 to the largest `axis`.
    """
    for name in (var, axis):
        if name not in curves.data_vars:
            raise UserError(f"unknown curve variable {name!r}: valid are {list(curves.data_vars)}")
    x = curves[axis].transpose("run", "eval").to_numpy()
    y = curves[var].transpose("run", "eval").to_numpy()
    if grid is None:
        top = np.nanmax(x) if np.isfinite(x).any() else 0.0
        grid = np.linspace(0.0, top, 101)
    grid = np.asarray(grid, dtype=float)
    out = np.full((x.shape[0], grid.size), np.nan)
    for i in range(x.shape[0]):
        seen = ~np.isnan(x[i])  # evals that happened
        xs, ys = x[i][seen], y[i][seen]
        order = np.argsort(xs, kind="stable")
        pos = np.searchsorted(xs[order], grid, side="right") - 1
        out[i] = np.where(pos >= 0, ys[order][np.maximum(pos, 0)], np.nan) if xs.size else np.nan
    run_coords = {k: v for k, v in curves.coords.items() if v.dims == ("run",)}
    return xr.DataArray(out, dims=("run", "grid"), coords={**run_coords, "grid": grid}, name=var,
                        attrs={"units": curves[var].attrs.get("units", ""), "axis": axis,
                               "axis_units": curves[axis].attrs.get("units", "")})


# -- time axes ---------------------------------------------------------------------------------
# The time axes by the command line's names -> the eval-row column the dashboard names them by.
TIME_AXIS_COLUMNS = {"train": "train_seconds", "wall": "wall_seconds", "steps": "step"}
# The final cube's variable that time to target is read from, per time axis.
TIME_TO_TARGET = {"train_seconds": "time_to_target", "wall_seconds": "wall_to_target",
                  "step": "step_to_target"}
# What a time on each axis is counted in (JSON "unit"), and how a heading names it.
AXIS_UNITS = {"train_seconds": "seconds", "wall_seconds": "seconds", "step": "steps"}
AXIS_LABELS = {"train_seconds": "training seconds", "wall_seconds": "wall seconds",
               "step": "steps"}


def axis_column(axis: str) -> str:
    """The column of a time axis named by the command line (train, wall, steps) or by its
    column (train_seconds, wall_seconds, step)."""
    column = TIME_AXIS_COLUMNS.get(axis, axis)
    if column not in TIME_TO_TARGET:
        raise UserError(f"unknown time axis {axis!r}: valid are "
                        f"{', '.join(TIME_AXIS_COLUMNS)} (or {', '.join(TIME_TO_TARGET)})")
    return column


def axis_name(axis: str) -> str:
    """The command line's name (train, wall, steps) of a time axis named either way."""
    column = axis_column(axis)
    return next(name for name, c in TIME_AXIS_COLUMNS.items() if c == column)


def on_time_axis(cube: xr.Dataset, axis: str) -> xr.Dataset:
    """The final cube with `time_to_target` read on `axis` (axis_column's names): training
    seconds (the cube itself), wall seconds (wall_to_target) or steps (step_to_target), its
    units in attrs. Every scoring rule reads `time_to_target`, so it applies unchanged on each
    axis; the trial choice still goes by the eval index (eval_index_to_target)."""
    column = axis_column(axis)
    if column == "train_seconds":
        return cube
    times = cube[TIME_TO_TARGET[column]]
    return cube.assign(time_to_target=times.assign_attrs(units=times.attrs.get("units", "s")))


# Run-table columns that count training or wall seconds including compilation.
COMPILE_EXCLUDED = ("time_to_target", "wall_to_target", "train_seconds", "wall_seconds")


def excluding_compile(runs: pd.DataFrame) -> pd.DataFrame:
    """A copy of the run table with each run's `compile_seconds` (null: 0, as in runs recorded
    before it was measured) taken off its COMPILE_EXCLUDED seconds, each clipped at 0 s.

    Compilation happens on the first step, before any eval, so it is inside every time to target
    and every total. Steps are untouched: compiling takes no step.
    """
    _require(runs, ("compile_seconds", *COMPILE_EXCLUDED), "runs")
    compile_s = pd.to_numeric(runs["compile_seconds"], errors="coerce").fillna(0.0).clip(lower=0)
    return runs.assign(**{c: (pd.to_numeric(runs[c], errors="coerce") - compile_s).clip(lower=0.0)
                          for c in COMPILE_EXCLUDED})
