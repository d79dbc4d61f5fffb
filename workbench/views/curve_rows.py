"""Which runs the learning curves draw (workbench/views/curves.py) and their rows: by default
every run of a workload up to MAX_DEFAULT_CURVES, else one representative per algorithm (its
median study's chosen trial, or the closest miss), plus the runs picked in the sidebar; their
eval and training-loss rows read through Results, thinned to MAX_CURVE_POINTS per run, and
cached once per scope so that ticking algorithms costs a cut.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from workbench import records as R
from workbench.results import Results
from workbench.views.selection import Selection

__all__ = ["shown_curve_runs", "curve_evals", "curve_train", "decimate",
           "MAX_DEFAULT_CURVES", "MAX_CURVE_POINTS"]

# Runs drawn per workload by default: all of them up to this many, else one per algorithm
# (keeps a 3,700-run store readable and fast to draw); picked runs are drawn besides.
MAX_DEFAULT_CURVES = 48
# Points drawn per run and curve: a longer log (a foreign one may hold 100,000s of evals) is
# thinned to about this many evenly spaced rows, its first, last and target-hit rows kept, so that
# one pathological run cannot exhaust the server or the browser.
MAX_CURVE_POINTS = 1000


def shown_curve_runs(selection: Selection) -> pd.DataFrame:
    """Runs on the learning curves: per workload all its runs if at most MAX_DEFAULT_CURVES,
    else one per algorithm (_representatives, whether or not it met the target); and, added to
    those, the runs picked in the sidebar (Selection.curve_runs) that pass the filters."""
    def make():
        few = [w for w, n in selection.counts("workload").items()
               if n <= MAX_DEFAULT_CURVES]
        representatives = _representatives(selection)
        # only the shown runs that can be drawn are copied (not all 100,000), in table order
        runs = selection.runs_where(workload=few)
        chosen = selection.runs_where(run_id=[*representatives, *selection.curve_runs])
        runs = pd.concat([runs, chosen[~chosen.index.isin(runs.index)]]).sort_index()
        default = _default_runs(runs, representatives, few)
        picked = runs[runs["run_id"].isin(selection.curve_runs)]
        return pd.concat([default, picked[~picked["run_id"].isin(default["run_id"])]])
    return selection.cached("shown_curve_runs", make)


def _default_runs(runs: pd.DataFrame, representatives: list[str],
                  few: list[str] | None = None) -> pd.DataFrame:
    """The runs of `runs` drawn by default: per workload all of them if at most
    MAX_DEFAULT_CURVES, else those in `representatives`. `few`: the workloads with at most
    MAX_DEFAULT_CURVES runs (default: counted in `runs`)."""
    if few is None:
        counts = runs["workload"].value_counts()
        few = counts.index[counts <= MAX_DEFAULT_CURVES]
    default = runs["workload"].isin(few) | runs["run_id"].isin(representatives)
    return runs[default].groupby("workload").head(MAX_DEFAULT_CURVES)


def _every_representative(selection: Selection) -> pd.DataFrame:
    """_representatives of every algorithm and workload (run_id, algorithm, workload), found
    once per ruleset, study, hardware and time axis (a cell's choice depends on no other)."""
    def every() -> pd.DataFrame:
        # the full value the Studies tab cuts (Selection.per_cell, same name): made once
        choices = selection.full_value("study_choices", lambda: Results.study_choices(
            selection.full_cube()))[["time_to_target", "run_id"]]
        frame = choices.to_dataframe().reset_index()
        frame = frame[frame["run_id"] != ""].sort_values("time_to_target", kind="stable")
        groups = frame.groupby(["algorithm", "workload"])["run_id"]
        chosen = {key: ids.iloc[(len(ids) - 1) // 2] for key, ids in groups}
        runs = selection.full_runs()
        ids = list(chosen.values()) + _closest_misses(runs, set(chosen))
        return runs.loc[runs["run_id"].isin(ids), ["run_id", "algorithm", "workload"]]
    return selection.full_value("curves:representatives", every)


def _representatives(selection: Selection) -> list[str]:
    """Per shown (algorithm, workload): the chosen trial of its middle study (by time) among
    the studies that met the target (scoring.study_choices); where no study did, the run that
    came closest (its best validation value), so an algorithm that missed is drawn beside the
    rest. Cut from _every_representative."""
    def make() -> list[str]:
        if not selection.n_runs:
            return []
        full = _every_representative(selection)
        shown = full["algorithm"].isin(selection.algorithms) & \
            full["workload"].isin(selection.workloads)
        return full.loc[shown, "run_id"].tolist()
    return selection.cached("representatives", make)


def _closest_misses(runs: pd.DataFrame, done: set) -> list[str]:
    """Per (algorithm, workload) not in `done`: the run with the best validation value in its
    target's direction (none where no run has one)."""
    runs = runs[["algorithm", "workload", "run_id", "best_validation", "target_direction"]]
    # lists, not the columns: iterating Arrow strings costs 0.2 s per 100,000 runs
    runs = runs[[key not in done for key in zip(runs["algorithm"].tolist(),
                                                 runs["workload"].tolist())]]
    runs = runs.dropna(subset=["best_validation"])
    if runs.empty:
        return []
    sign = np.where(runs["target_direction"] == "min", 1.0, -1.0)
    ranked = runs.assign(_rank=sign * runs["best_validation"].astype(float))
    ranked = ranked.sort_values(["_rank", "run_id"], kind="stable")
    return list(ranked.drop_duplicates(["algorithm", "workload"])["run_id"])


def decimate(rows: pd.DataFrame, order: str, limit: int = MAX_CURVE_POINTS,
             keep: pd.MultiIndex | None = None) -> pd.DataFrame:
    """At most about `limit` rows per run of `rows` (which are sorted by run_id, then `order`):
    every k-th row, the first and the last, and the rows whose (run_id, order) is in `keep`."""
    if rows.empty:
        return rows
    sizes = rows.groupby("run_id", sort=False)["run_id"].transform("size").to_numpy()
    if sizes.max() <= limit:
        return rows
    position = rows.groupby("run_id", sort=False).cumcount().to_numpy()
    every = np.ceil(sizes / limit)
    mask = (position % every == 0) | (position == sizes - 1)
    if keep is not None and len(keep):
        mask |= pd.MultiIndex.from_arrays([rows["run_id"], rows[order]]).isin(keep)
    return rows[mask]


def _curve_runs_of(selection: Selection, workload: str | None) -> pd.DataFrame:
    runs = shown_curve_runs(selection)
    return runs if workload is None else runs[runs["workload"] == workload]


# The two kinds of curve rows: their reader in workbench.results.Results, columns, order within
# a run.
_KINDS = {"evals": ("evals", R.EVAL_COLUMNS, "eval_index"),
          "train": ("train_rows", R.TRAIN_COLUMNS, "step")}


def _read_curves(selection: Selection, kind: str, runs: pd.DataFrame) -> pd.DataFrame:
    """The `kind` rows ("evals", "train") of `runs` read from the store, decimated to
    MAX_CURVE_POINTS per run (the evals that first met a target kept)."""
    read, columns, order = _KINDS[kind]
    ids = runs["run_id"].tolist()
    if not ids:
        return pd.DataFrame(columns=list(columns))
    keep = None
    if kind == "evals":
        hits = runs[runs["reached_target"].fillna(False).astype(bool)]
        keep = pd.MultiIndex.from_arrays([hits["run_id"], hits["eval_index_to_target"]])
    return decimate(getattr(selection.results, read)(ids), order, keep=keep)


def _rows_of(selection: Selection, kind: str, workload: str, runs: pd.DataFrame) -> pd.DataFrame:
    """_read_curves of `runs` (of `workload`), sorted by run. The rows of the workload's
    default runs over every algorithm (_default_runs of full_runs) are read once per ruleset,
    study, hardware and time axis and cut, so that ticking algorithms reads no file; other runs
    (picked ones, or every run of a workload that has few once algorithms are unticked) are
    read now. (Decimation is per run: decimating the parts is decimating the whole.)"""
    def full_default() -> pd.DataFrame:
        every = selection.full_runs()
        return _default_runs(every[every["workload"] == workload],
                             _every_representative(selection)["run_id"].tolist())

    known = selection.full_value(f"curves:default:{workload}", full_default)
    base = selection.full_value(f"curves:{kind}:{workload}",
                                lambda: _read_curves(selection, kind, known))
    rows = base[base["run_id"].isin(runs["run_id"])]
    rest = runs[~runs["run_id"].isin(known["run_id"])]
    if not len(rest):
        return rows
    rows = pd.concat([rows, _read_curves(selection, kind, rest)], ignore_index=True)
    _, columns, order = _KINDS[kind]
    head = list(columns)
    rows = rows[head + sorted(c for c in rows.columns if c not in head)]
    return rows.sort_values(["run_id", order], kind="stable", ignore_index=True)


def _curve_rows(selection: Selection, kind: str, workload: str | None) -> pd.DataFrame:
    """The `kind` rows of shown_curve_runs (of `workload`, default every workload), cached."""
    runs = _curve_runs_of(selection, workload)
    return selection.cached(
        kind if workload is None else f"{kind}:{workload}",
        lambda: _read_curves(selection, kind, runs) if workload is None
        else _rows_of(selection, kind, workload, runs))


def curve_evals(selection: Selection, workload: str | None = None) -> pd.DataFrame:
    """Eval rows of shown_curve_runs (of `workload`, default every workload), read from the
    store on first use and decimated to MAX_CURVE_POINTS per run (the evals that first met a
    target kept). The dashboard reads one workload's: a tenth of the files on ten, and its
    default runs' once for every setting of the algorithms (_rows_of)."""
    return _curve_rows(selection, "evals", workload)


def curve_train(selection: Selection, workload: str | None = None) -> pd.DataFrame:
    """Training-loss rows of shown_curve_runs (of `workload`, default every workload), read
    from the store on first use (as curve_evals), decimated to MAX_CURVE_POINTS per run."""
    return _curve_rows(selection, "train", workload)
