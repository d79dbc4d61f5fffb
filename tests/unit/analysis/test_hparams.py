"""Hyperparameters beside outcomes: the trial table, the log-axis rule (search space first, else
inferred), parallel-coordinate normalisation and ticks, the bound on drawn trials, and the view."""
from __future__ import annotations

import json
import math

import holoviews as hv
import numpy as np
import pandas as pd
import panel as pn
import pytest

from workbench import query
from workbench import hparams as H
from workbench.store import open_store
from workbench.testing import make_store, markdown_text
from workbench.views import hparams as V
from workbench.views.selection import Selection


@pytest.fixture(scope="module")
def store_path(tmp_path_factory):
    """adamw and nadamw (search spaces in runners/algorithms) on digits_mlp, 2 x 5 trials."""
    path = tmp_path_factory.mktemp("hparams") / "store"
    make_store(path, algorithms=("adamw", "nadamw"), workloads=("digits_mlp",), studies=2,
               trials=5)
    return path


def _frame(**columns) -> pd.DataFrame:
    """A trial frame with the given hyperparameter columns (and no outcomes)."""
    return pd.DataFrame({f"{H.HPARAM_PREFIX}{k}": pd.Series(v, dtype=object)
                         for k, v in columns.items()})


# -- log axes ---------------------------------------------------------------------------------
def test_infer_log_needs_positive_values_over_two_decades():
    assert H.infer_log([1e-4, 1e-3, 1e-2]) is True
    assert H.infer_log([0.01, 1.0]) is True            # exactly two decades
    assert H.infer_log([1e-3, 5e-2]) is False          # 1.7 decades
    assert H.infer_log([0.0, 1.0, 1000.0]) is False    # zero cannot be on a log axis
    assert H.infer_log([-1e-3, 1.0, 10.0]) is False
    assert H.infer_log([3e-4]) is False                # one value: nothing to span


def test_search_space_scalings_read_the_json_as_data(tmp_path):
    space = {"lr": {"min": 1e-4, "max": 1e-1, "scaling": "log"},
             "wd": {"min": 0.0, "max": 0.5, "scaling": "linear"},
             "beta2": {"feasible_points": [0.999]}}
    (tmp_path / "algo.json").write_text(json.dumps(space))
    (tmp_path / "points.json").write_text(json.dumps([{"lr": 0.1}, {"lr": 0.2}]))
    (tmp_path / "bad.json").write_text(json.dumps({"lr": {"min": 1, "max": 2,
                                                          "scaling": "cubic"}}))
    assert H.search_space_scalings("algo", tmp_path) == {"lr": "log", "wd": "linear"}
    assert H.search_space_scalings("points", tmp_path) == {}
    assert H.search_space_scalings("missing", tmp_path) == {}
    assert H.search_space_scalings("algoperf:/x/submission.py", tmp_path) == {}
    with pytest.raises(ValueError, match="scaling 'cubic'"):
        H.search_space_scalings("bad", tmp_path)
    # the shipped spaces of our algorithms (runners/algorithms/*.json)
    assert H.search_space_scalings("adamw")["learning_rate"] == "log"


def test_log_axes_search_space_first_then_inferred(tmp_path):
    space = {"lr": {"min": 1e-4, "max": 1.0, "scaling": "linear"},
             "beta": {"min": 0.9, "max": 0.99, "scaling": "log"}}
    (tmp_path / "algo.json").write_text(json.dumps(space))
    frame = _frame(lr=[1e-4, 1e-2, 1.0], beta=[0.9, 0.95, 0.99], wd=[1e-5, 1e-4, 1e-3],
                   drop=[0.0, 0.1, 0.2])
    assert H.log_axes(frame, "algo", spaces_dir=tmp_path) == {
        f"{H.HPARAM_PREFIX}lr": False,     # the space says linear although it spans 4 decades
        f"{H.HPARAM_PREFIX}beta": True,    # the space says log although it spans 0.04 decades
        f"{H.HPARAM_PREFIX}wd": True,      # not in the space: inferred (3 decades)
        f"{H.HPARAM_PREFIX}drop": False}   # not in the space: has a zero


# -- normalisation and ticks ------------------------------------------------------------------
def test_normalise_linear_and_log():
    assert np.allclose(H.normalise([2.0, 4.0, 6.0], log=False), [0.0, 0.5, 1.0])
    assert np.allclose(H.normalise([1e-4, 1e-3, 1e-2], log=True), [0.0, 0.5, 1.0])
    assert np.allclose(H.normalise([1e-4, 1e-3, 1e-2], log=False), [0.0, 0.0909, 1.0],
                       atol=1e-4)
    assert np.allclose(H.normalise([3.0, 3.0], log=True), [0.5, 0.5])
    out = H.normalise([1.0, np.nan, np.inf, 3.0], log=False)
    assert out[0] == 0.0 and out[3] == 1.0 and np.isnan(out[1]) and np.isnan(out[2])
    with pytest.raises(ValueError, match="positive"):
        H.normalise([0.0, 1.0], log=True)


def test_axis_ticks_in_real_units():
    ticks = H.axis_ticks([1e-4, 3e-3, 1e-1], log=True)
    assert [label for _, label in ticks] == ["0.0001", "0.001", "0.01", "0.1"]
    assert np.allclose([p for p, _ in ticks], [0.0, 1 / 3, 2 / 3, 1.0])
    assert H.axis_ticks([0.0, 10.0], log=False) == [
        (0.0, "0"), (0.25, "2.5"), (0.5, "5"), (0.75, "7.5"), (1.0, "10")]
    assert H.axis_ticks([7208.0, 7230.0], log=False)[-1] == (1.0, "7,230")
    assert H.axis_ticks([0.5, 0.5], log=False) == [(0.5, "0.5")]


def test_numeric_axes_and_fixed_values():
    frame = _frame(lr=[0.1, 0.2, 0.3], beta2=[0.999] * 3, kind=["a", "b", "a"],
                   flag=[True, False, True], part=[0.1, None, 0.2])
    assert H.numeric_axes(frame) == [f"{H.HPARAM_PREFIX}lr", f"{H.HPARAM_PREFIX}part"]
    assert H.fixed_hparams(frame) == {"beta2": 0.999}


def test_sample_trials_is_bounded_and_reproducible():
    frame = pd.DataFrame({"i": np.arange(5000)})
    first, again = H.sample_trials(frame, 2000), H.sample_trials(frame, 2000)
    assert len(first) == 2000 and first["i"].is_unique and first["i"].is_monotonic_increasing
    assert first["i"].equals(again["i"])
    assert H.sample_trials(frame.head(10), 2000) is not None and len(
        H.sample_trials(frame.head(10), 2000)) == 10
    with pytest.raises(ValueError, match="at least 1"):
        H.sample_trials(frame, 0)


# -- the trial table --------------------------------------------------------------------------
def test_trial_frame_joins_outcomes_and_hparams(store_path):
    from workbench import cubes

    runs = query.runs_frame(open_store(store_path))
    frame = H.trial_frame(cubes.final_cube(runs), runs, "digits_mlp", "adamw")
    assert len(frame) == 10 and set(frame["algorithm"]) == {"adamw"}
    assert H.hparam_columns(frame) == ["hparams/learning_rate", "hparams/weight_decay"]
    assert frame.attrs["time_units"] == "s"
    by_run = runs.set_index("run_id")
    for row in frame.to_dict("records"):
        run = by_run.loc[row["run_id"]]
        assert row["hparams/learning_rate"] == run["hparams"]["learning_rate"]
        expected = run["time_to_target"] if run["reached_target"] else math.inf
        assert row["time_to_target"] == expected and row["reached"] == run["reached_target"]
    with pytest.raises(ValueError, match="unknown workload 'nope'"):
        H.trial_frame(cubes.final_cube(runs), runs, "nope")


# -- the view ---------------------------------------------------------------------------------
def _segments(plot) -> list[hv.Segments]:
    return plot.traverse(lambda e: e, [hv.Segments])


def test_parallel_plot_lines_are_the_normalised_values(store_path):
    sel = Selection(store_path=str(store_path))
    frame = V.trials_for(sel, "digits_mlp", "adamw")
    frame.loc[frame.index[0], "time_to_target"] = math.inf  # one miss: drawn grey, on top
    plot = V.parallel_plot(frame, "adamw")
    missed, hits = (s.dframe() for s in _segments(plot))
    # three axes (learning_rate, weight_decay, time): two segments per trial
    assert len(missed) == 2 and len(hits) == 2 * (len(frame) - 1)
    assert set(missed["run_id"]) == {frame["run_id"].iloc[0]}
    lr = H.normalise(frame["hparams/learning_rate"].astype(float), log=True)  # adamw.json: log
    wd = H.normalise(frame["hparams/weight_decay"].astype(float), log=True)
    times = frame["time_to_target"].astype(float)
    t = H.normalise(times.where(np.isfinite(times)), H.infer_log(times[np.isfinite(times)]))
    i = 3
    line = hits[hits["run_id"] == frame["run_id"].iloc[i]].sort_values("x0")
    assert line["y0"].tolist() == pytest.approx([lr[i], wd[i]])
    assert line["y1"].tolist() == pytest.approx([wd[i], t[i]])
    assert missed["y1"].max() == V.MISS_LEVEL
    labels = plot.traverse(lambda e: e, [hv.Labels])[0]
    assert "miss" in list(labels.dimension_values("text"))
    assert "0.001" in list(labels.dimension_values("text"))  # a decade tick of learning_rate


def test_one_hit_gets_a_colour_range_around_it_not_below_zero():
    assert V._clim(np.array([12.0])) == pytest.approx((10.8, 13.2))
    assert V._clim(np.array([3.0, 5.0])) == (3.0, 5.0)


def test_time_axis_units_label_the_plots(store_path):
    sel = Selection(store_path=str(store_path))
    frame = V.trials_for(sel, "digits_mlp", "adamw")
    frame.attrs["time_units"] = "steps"
    plot = V.parallel_plot(frame, "adamw")
    assert plot.opts.get().kwargs["xticks"][-1] == (2, "time to target (steps)")


def test_view_picks_bounds_and_renders(store_path, monkeypatch):
    sel = Selection(store_path=str(store_path))
    view = V.Hyperparameters(selection=sel)
    assert (view.workload, view.algorithm) == ("digits_mlp", "adamw")
    assert view.param.algorithm.objects == ["adamw", "nadamw"]
    assert "all 10 trials drawn" in view._about.object
    assert "learning_rate (log), weight_decay (log)" in markdown_text(view._about.object)
    assert pn.panel(view).get_root() is not None
    monkeypatch.setattr(V, "MAX_TRIALS", 3)
    view.algorithm = "nadamw"
    assert "3 of 10 trials drawn" in view._about.object
    drawn = pd.concat(s.dframe() for s in _segments(view._parallel.object))
    assert drawn["run_id"].nunique() == 3
    view.outcome = "best_validation"
    panes = view._scatter.objects  # one pane per hyperparameter, of a LivePlot made once
    plots = [p for p in view._scatters.values() if p.pane in panes]
    assert len(panes) == 2 and {(p.pane.min_width, p.figure.height) for p in plots} == {
        V.SCATTER_SIZE}
    assert "best validation accuracy" in plots[0].figure.yaxis[0].axis_label
    # the toggle drives the parallel plot too: its last axis and colours are the outcome
    assert view._parallel.object.opts.get().kwargs["xticks"][-1] == (
        2, "best validation accuracy")
    assert set(V.figures(sel)) == {"hparams_scatter", "hparams_parallel"}
    sel.algorithms = []  # nothing left to show
    assert view.algorithm is None and "No runs" in view._about.object
    assert V.figures(sel) == {}


def test_scatter_points_put_a_miss_above_the_slowest_hit(store_path):
    frame = V.trials_for(Selection(store_path=str(store_path)), "digits_mlp", "adamw")
    frame.loc[frame.index[0], "time_to_target"] = np.inf
    (lr, _wd) = V.scatter_points(frame, "adamw")
    assert lr["name"] == "learning_rate" and lr["x_log"]
    misses = [p for p in lr["points"] if p[0] == "miss"]
    hits = [p for p in lr["points"] if p[0] == "reached"]
    assert len(misses) == 1 and len(hits) == len(frame) - 1
    slowest = max(p[3] for p in hits)
    assert misses[0][3] == pytest.approx(slowest * (1.5 if lr["y_log"] else 1.1))
    assert misses[0][5] == "x" and frame["run_id"].iloc[0] in misses[0][4]
