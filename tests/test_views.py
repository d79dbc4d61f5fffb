"""The Panel views over synthetic stores: they build, show the right content, follow the filters,
and explain an empty or missing store instead of failing."""
from __future__ import annotations

import re
import subprocess
import sys

import holoviews as hv
import numpy as np
import panel as pn
import pytest

from workbench import scoring
from workbench.store import open_store
from workbench.testing import make_store
from workbench.views.curves import Curves, loss_plot, validation_plot
from workbench.views.leaderboard import MISS, Leaderboard, score_frame, times_frame
from workbench.views.profiles import Profiles, profile_plot
from workbench.views.selection import Filters, Selection, StoreNotice


@pytest.fixture(scope="module")
def store_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("views") / "store"
    make_store(path)
    return path


@pytest.fixture
def selection(store_path):
    return Selection(store_path=str(store_path))


def _renders(view) -> None:
    """The view turns into a Bokeh model without error."""
    assert pn.panel(view).get_root() is not None


def test_import_workbench_does_not_import_panel():
    code = ("import sys, workbench, workbench.cubes, workbench.scoring, workbench.testing; "
            "assert 'panel' not in sys.modules and 'bokeh' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_selection_loads_and_filters(selection):
    assert selection.message == ""
    assert selection.algorithms == ["fast", "slow"]
    assert selection.workloads == ["digits_cnn", "digits_mlp"]
    assert len(selection.runs) == 2 * 2 * 2 * 3
    selection.algorithms = ["slow"]
    assert set(selection.runs["algorithm"]) == {"slow"}
    assert list(selection.cube["algorithm"].values) == ["slow"]
    assert set(selection.curve_evals()["run_id"]) == set(selection.runs["run_id"])


def test_refresh_only_rereads_a_changed_store(tmp_path):
    path = tmp_path / "store"
    open_store(path, create=True)
    selection = Selection(store_path=str(path))
    assert "no runs" in selection.message
    assert selection.refresh() is False
    make_store(path, algorithms=("a", "b"), workloads=("digits_mlp",), studies=1, trials=2)
    assert selection.refresh() is True
    assert selection.message == "" and selection.algorithms == ["a", "b"]
    assert len(selection.runs) == 4


def test_leaderboard_matches_scoring(selection):
    table = score_frame(selection)
    expected = scoring.score_table(selection.cube)
    assert list(table["algorithm"]) == ["fast", "slow"]  # make_store: first algorithm is fastest
    assert np.allclose(table.set_index("algorithm")["score"],
                       expected.set_index("algorithm").loc[table["algorithm"], "score"])
    times = times_frame(selection, list(table["algorithm"]))
    assert list(times["algorithm"]) == ["fast", "slow"]
    assert set(times.columns) == {"algorithm", "digits_cnn", "digits_mlp"}
    cells = times.drop(columns="algorithm").to_numpy().ravel()
    assert all(c == MISS or re.fullmatch(r"[\d,]+\.\d s", c) for c in cells)
    view = Leaderboard(selection=selection)
    _renders(view)
    selection.algorithms = ["slow"]  # the widget follows the filter
    assert list(view._scores.value["algorithm"]) == ["slow"]


def test_profile_plot_is_a_step_line_per_algorithm(selection):
    plot = profile_plot(selection)
    curves = plot.values()
    assert [c.label for c in curves] == ["fast", "slow"]
    assert all(hv.Store.lookup_options("bokeh", c, "plot").kwargs["interpolation"] == "steps-post"
               for c in curves)
    tau = curves[0].dimension_values("tau")
    assert tau.min() == 1.0 and tau.max() == 4.0
    assert curves[0].dimension_values("rho")[-1] == 1.0  # the fastest algorithm solves all
    _renders(Profiles(selection=selection))


def test_curves_mark_targets_and_follow_the_time_axis(selection):
    plot = validation_plot(selection, "digits_mlp")
    runs = selection.runs.query("workload == 'digits_mlp'")
    assert len(plot.Curve.values()) == len(runs)
    (hits,) = [e for e in plot if isinstance(e, hv.Scatter)]
    (target,) = [e for e in plot if isinstance(e, hv.HLine)]
    assert len(hits) == int(runs["reached_target"].fillna(False).sum())
    assert target.data == runs["target_validation"].iloc[0]
    reached = runs[runs["reached_target"].fillna(False).astype(bool)]
    assert np.allclose(np.sort(hits.dimension_values("train_seconds")),
                       np.sort(reached["time_to_target"].astype(float)))
    selection.time_axis = "step"
    assert validation_plot(selection, "digits_mlp").Curve.values()[0].kdims[0].name == "step"
    selection.time_axis = "wall_seconds"  # training rows have no wall clock: train seconds
    assert loss_plot(selection, "digits_mlp").values()[0].kdims[0].name == "train_seconds"
    selection.curve_runs = list(runs["run_id"][:2])
    assert len(validation_plot(selection, "digits_mlp").Curve.values()) == 2
    _renders(Curves(selection=selection))


@pytest.mark.parametrize("kind", ["missing", "empty"])
def test_missing_or_empty_store_shows_a_message(tmp_path, kind):
    path = tmp_path / "store"
    if kind == "empty":
        open_store(path, create=True)
    selection = Selection(store_path=str(path))
    assert ("not a Pacebench store" if kind == "missing" else "no runs yet") in selection.message
    assert len(selection.runs) == 0 and score_frame(selection).empty
    assert profile_plot(selection) is None
    notice = pn.panel(StoreNotice(selection=selection))
    assert notice.visible and str(path) in notice.object
    for view in (Leaderboard, Profiles, Curves, Filters):
        _renders(view(selection=selection))
    assert not Filters(selection=selection)._choices["algorithms"].visible


def test_app_builds_on_a_store_and_on_nothing(store_path, tmp_path):
    from workbench.app import build_app

    assert isinstance(build_app(store_path), pn.template.BaseTemplate)
    assert isinstance(build_app(tmp_path / "nowhere"), pn.template.BaseTemplate)


def test_report_is_self_contained(store_path, tmp_path):
    from workbench.report import write_report

    out = write_report(store_path, tmp_path / "r" / "report.html", title="Views report")
    html = out.read_text()
    assert "Views report" in html and "digits_mlp" in html
    tags = re.findall(r"<(?:script|link)\b[^>]*>", html)
    remote = [t for t in tags if re.search(r"""(?:src|href)=["']?(?:https?:)?//""", t)]
    assert remote == []
    assert "cdn.holoviz.org" not in html.replace("cdn.holoviz.org/panel/", "")  # no CSS links
