"""The Panel views over synthetic stores: they build, show the right content, follow the filters,
and explain an empty or missing store instead of failing."""
from __future__ import annotations

import json
import html
import re

import holoviews as hv
import numpy as np
import pandas as pd
import panel as pn
import pytest

from algoperf_trees import write_algoperf_tree
from workbench import scoring
from workbench.store import open_store
from workbench.testing import make_store, markdown_text
from workbench.views.curves import (Curves, curve_evals, loss_plot, run_labels, shown_curve_runs,
                                    validation_plot)
from workbench.views.leaderboard import MISS, Leaderboard, score_frame, times_frame
from workbench.views.profiles import Profiles, profile_plot
from workbench.views.selection import Selection
from workbench.views.sidebar import Filters, StoreNotice
from workbench.views.speedups import Speedups, speedup_frame, uses_budgets
from workbench.views.studies import StudyTimes, study_frame


@pytest.fixture(scope="module")
def store_path(fake_store):
    return fake_store


@pytest.fixture
def selection(store_path):
    return Selection(store_path=str(store_path))


def _renders(view) -> None:
    """The view turns into a Bokeh model without error."""
    assert pn.panel(view).get_root() is not None


def test_selection_loads_and_filters(selection):
    assert selection.message == ""
    assert selection.algorithms == ["fast", "slow"]
    assert selection.workloads == ["digits_cnn", "digits_mlp"]
    assert len(selection.runs) == 2 * 2 * 2 * 3
    selection.algorithms = ["slow"]
    assert set(selection.runs["algorithm"]) == {"slow"}
    assert list(selection.cube["algorithm"].values) == ["slow"]
    assert set(curve_evals(selection)["run_id"]) == set(selection.runs["run_id"])


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


def test_leaderboard_count_columns_say_what_they_count():
    """'Reached' / 'Scored' read as runs or studies; the columns count scored workloads, and
    one counts those within the 4x cut-off of the fastest time."""
    from workbench.views.leaderboard import SCORE_TITLES

    assert SCORE_TITLES["workloads_reached"] == "Workloads within 4x of the fastest"
    assert SCORE_TITLES["workloads_scored"] == "Workloads scored"


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


def _lines(plot) -> int:
    """Runs drawn on a curves plot (one hv.Path per algorithm, a line per run)."""
    return sum(len(path.split()) for path in plot.Path.values())


def test_curves_mark_targets_and_follow_the_time_axis(selection):
    plot = validation_plot(selection, "digits_mlp")
    runs = selection.runs.query("workload == 'digits_mlp'")
    assert [p.label for p in plot.Path.values()] == ["fast", "slow"]  # one per algorithm
    assert _lines(plot) == len(runs)
    hits, misses = [e for e in plot if isinstance(e, hv.Scatter)]
    (target,) = [e for e in plot if isinstance(e, hv.HLine)]
    assert len(hits) == int(runs["reached_target"].fillna(False).sum())
    assert len(misses) == len(runs) - len(hits)  # a cross at each missed run's best eval
    assert set(hits.dimension_values("run")) <= set(run_labels(runs).values())
    assert not any(r in label for r in runs["run_id"] for label in hits.dimension_values("run"))
    assert target.data == runs["target_validation"].iloc[0]
    reached = runs[runs["reached_target"].fillna(False).astype(bool)]
    assert np.allclose(np.sort(hits.dimension_values("train_seconds")),
                       np.sort(reached["time_to_target"].astype(float)))
    selection.time_axis = "step"
    assert validation_plot(selection, "digits_mlp").Path.values()[0].kdims[0].name == "step"
    selection.time_axis = "wall_seconds"  # training rows have no wall clock: train seconds
    assert loss_plot(selection, "digits_mlp").values()[0].kdims[0].name == "train_seconds"
    _renders(Curves(selection=selection))


def test_a_diverged_run_leaves_every_curve_plot_finite_and_zoomed_on_the_race(tmp_path):
    """A run whose loss blew up to inf (a loss metric's validation value too) made the
    validation range (-inf, inf) and the loss plot's automatic range infinite: blank plots
    whose zoom did nothing. Its finite rows are drawn; the range is the other runs'."""
    from workbench.views.curves import Curves, loss_data, validation_data

    make_store(tmp_path / "s", workloads=("digits_mlp", "synthetic"), studies=1, trials=3,
               diverged=1)  # the last trial: synthetic (target metric: loss), slow
    selection = Selection(store_path=str(tmp_path / "s"))
    assert (selection.runs["status"] == "diverged").sum() == 1
    for workload in ("digits_mlp", "synthetic"):
        data = validation_data(selection, workload)
        assert np.isfinite(data["ylim"]).all(), (workload, data["ylim"])
        assert np.isfinite(data["evals"][data["y"]]).all()
        loss = loss_data(selection, workload)
        assert np.isfinite(loss["rows"]["loss"]).all() and loss["log"]
    low, high = validation_data(selection, "synthetic")["ylim"]
    assert high < 3  # the race to a loss target of about 0.1, not the blow-up
    view = Curves(selection=selection, one_workload=True)
    view.workload = "synthetic"
    for plot in (view._validation, *view._losses.values()):
        if plot._figure is not None:
            assert all(not np.isinf(ys).any() for ys in plot.source.data["ys"])


def test_run_labels_name_algorithm_study_trial_and_the_varying_hyperparameters():
    runs = pd.DataFrame({"run_id": ["x1", "x2", "y1"], "algorithm": ["a", "a", "b"],
                         "study": [0, 1, 0], "trial": [3, 4, 0], "seed": [0, 0, 0],
                         "hparams": [{"learning_rate": 0.0123456, "wd": 0.1, "warmup": 0.05},
                                     {"learning_rate": 0.2, "wd": 0.1, "warmup": 0.02},
                                     {"learning_rate": 0.1}]})
    assert run_labels(runs) == {"x1": "a, study 0, trial 3, learning_rate=0.0123, warmup=0.05",
                                "x2": "a, study 1, trial 4, learning_rate=0.2, warmup=0.02",
                                "y1": "b, study 0, trial 0"}


def test_a_run_with_184000_evals_is_drawn_with_a_thousand_points_and_its_hit(tmp_path):
    import pyarrow as pa

    from workbench import records as R
    from workbench.views.curves import MAX_CURVE_POINTS

    store = make_store(tmp_path, algorithms=("fast",), workloads=("digits_mlp",), studies=1,
                       trials=1)
    doc = store.run_doc(store.run_ids()[0])
    n, hit = 184_000, 150_001  # the first eval at the target: no multiple of the thinning step
    accuracy = np.where(np.arange(n) >= hit, 0.99, 0.5)
    evals = pa.table({"eval_index": np.arange(n), "step": np.arange(n) * 10,
                      "examples": pa.nulls(n, pa.int64()), "train_seconds": np.arange(n) * 0.1,
                      "eval_seconds": pa.nulls(n, pa.float64()),
                      "wall_seconds": np.arange(n) * 0.2, "validation/accuracy": accuracy})
    huge = {**doc, "run_id": "huge", "trial_key": "huge", "trial": 1}
    assert store.write_sealed_run(huge, evals, "huge")
    selection = Selection(store_path=str(tmp_path))
    plot = validation_plot(selection, "digits_mlp")
    (path,) = plot.Path.values()
    drawn = {r: len(line.dimension_values(0)) for r, line in zip(
        selection.runs["run_id"], path.split())}  # runs in run-id order, one line each
    assert MAX_CURVE_POINTS <= drawn["huge"] <= MAX_CURVE_POINTS + 2
    hits = next(e for e in plot if isinstance(e, hv.Scatter) and e.label == "time to target")
    assert hit * 0.1 in set(np.round(hits.dimension_values("train_seconds"), 6))
    assert len(curve_evals(selection).query("run_id == 'huge'")) == drawn["huge"]
    # the dashboard's rows of one workload: decimated once, as the rows of every workload
    pd.testing.assert_frame_equal(curve_evals(selection, "digits_mlp").reset_index(drop=True),
                                  curve_evals(selection).reset_index(drop=True))


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
    assert notice.visible and str(path) in markdown_text(notice.object)
    for view in (Leaderboard, Profiles, Curves, Filters):
        _renders(view(selection=selection))
    assert not Filters(selection=selection)._choices["algorithms"].visible


def test_app_builds_on_a_store_and_on_nothing(store_path, tmp_path):
    from workbench.app import build_app

    assert isinstance(build_app(store_path), pn.template.BaseTemplate)
    assert isinstance(build_app(tmp_path / "nowhere"), pn.template.BaseTemplate)


def test_report_is_self_contained(hostile_report):
    html = hostile_report.read_text()
    assert "workload-digits_mlp" in html and "algorithm-fast" in html
    tags = re.findall(r"<(?:script|link)\b[^>]*>", html)
    remote = [t for t in tags if re.search(r"""(?:src|href)=["']?(?:https?:)?//""", t)]
    assert remote == []
    assert "cdn.holoviz.org" not in html.replace("cdn.holoviz.org/panel/", "")  # no CSS links


# -- a store imported from a tiny AlgoPerf log tree (tests/algoperf_trees.py) --------------
@pytest.fixture(scope="module")
def algoperf_path(tmp_path_factory):
    from workbench.importers.algoperf import import_algoperf

    root = tmp_path_factory.mktemp("algoperf_views")
    logs, targets = write_algoperf_tree(root)
    report = import_algoperf(logs, root / "store", targets)
    assert report.problems == [] and report.imported == 36
    return root / "store"


@pytest.fixture
def imported(algoperf_path):
    return Selection(store_path=str(algoperf_path))


def test_imported_store_is_scored_by_its_own_rules(imported, algoperf_path):
    config = scoring.ScoringConfig.from_dict(open_store(algoperf_path).scoring_config())
    assert imported.scoring_config == config and config.apply_held_out
    assert imported.workload_groups() == {"scored": ["wa", "wb"], "held_out": ["wa_tanh"],
                                          "other": []}
    table = score_frame(imported)
    expected = scoring.score_table(imported.cube, config)
    assert list(table["algorithm"]) == ["fast", "baseline", "slow"]
    assert np.allclose(table["score"], expected.set_index("algorithm").loc[table["algorithm"],
                                                                         "score"])
    # By hand: fast is fastest on both; baseline's wa is a miss by the held-out rule, its wb
    # ratio is 200/120 (credit from tau = 5/3); slow only has wb at 400/120 = 10/3.
    exact = table.set_index("algorithm")["exact_score"]
    assert exact["fast"] == pytest.approx(1.0)
    assert exact["baseline"] == pytest.approx((4 - 200 / 120) / 3 / 2)
    assert exact["slow"] == pytest.approx((4 - 400 / 120) / 3 / 2)
    plain = scoring.score_table(imported.cube).set_index("algorithm")["exact_score"]
    assert plain["baseline"] > exact["baseline"]  # without the rule baseline's wa counts
    assert scoring.scored_times(imported.cube, config).sizes["workload"] == 2
    # in score order, the leader drawn thickest
    curves = profile_plot(imported).values()
    assert [c.label for c in curves] == list(table["algorithm"]) == ["fast", "baseline", "slow"]
    assert curves[0].opts.get().kwargs["line_width"] > curves[-1].opts.get().kwargs["line_width"]
    _renders(Leaderboard(selection=imported))


def test_filters_rescore_over_what_is_shown(imported):
    imported.workloads = ["wa", "wa_tanh"]  # wb hidden: scored over wa alone
    assert imported.scoring_config.base_workloads == ("wa",)
    table = score_frame(imported).set_index("algorithm")["score"]
    assert table.to_dict() == {"fast": 1.0, "baseline": 0.0, "slow": 0.0}
    imported.workloads = ["wa", "wb"]  # a hidden held-out variant still feeds its base's score
    assert score_frame(imported).set_index("algorithm")["score"]["baseline"] < 0.5
    assert "wa_tanh" in imported.cube["workload"].values
    assert list(times_frame(imported, ["fast"]).columns) == ["algorithm", "wa", "wb"]
    imported.workloads = ["wa_tanh"]  # no scored workload shown
    assert score_frame(imported).empty and profile_plot(imported) is None


def test_per_study_table_names_the_chosen_trials(imported):
    frame = study_frame(imported).set_index(["workload", "algorithm"])
    assert list(frame.columns) == ["role", "median", "study 0", "study 1"]
    fast_wa = frame.loc[("wa", "fast")]
    assert fast_wa["median"] == "60.0 s"  # median of 50 and 70
    assert fast_wa["study 0"] == "50.0 s (t1, 2/2)"
    assert fast_wa["study 1"] == "70.0 s (t1, 1/2)"
    assert frame.loc[("wa", "baseline"), "study 1"] == "120 s (t2, 1/2)"
    assert frame.loc[("wa", "slow"), "study 0"] == "miss (0/2)"
    assert frame.loc[("wa_tanh", "fast"), "role"] == "held-out variant"
    assert list(study_frame(imported)["workload"].unique()) == ["wa", "wb", "wa_tanh"]
    choices = scoring.study_choices(imported.cube)
    assert choices["trial"].sel(algorithm="baseline", workload="wa").values.tolist() == [1.0, 2.0]
    _renders(StudyTimes(selection=imported))
    imported.time_axis = "step"  # steps read as steps, never as seconds or hours
    stepped = study_frame(imported).set_index(["workload", "algorithm"])
    assert stepped.loc[("wa", "fast"), "median"].endswith(" steps")
    assert stepped.loc[("wa", "fast"), "study 0"].endswith(" steps (t1, 2/2)")


def test_speedups_use_the_budgets_and_the_reference(imported):
    assert imported.reference == "baseline"  # the default when the store has it
    assert uses_budgets(imported)
    frame = speedup_frame(imported).set_index("algorithm")
    assert list(frame.index) == ["baseline", "fast", "slow"]
    assert frame.loc["baseline", "faster_by"] == pytest.approx(0.0)
    # AlgoPerf: 1 - gmean over wa, wb of t(fast) / t(baseline), medians over studies.
    assert frame.loc["fast", "faster_by"] == pytest.approx(1 - np.sqrt(60 / 110 * 120 / 200))
    expected = scoring.algoperf_speedups(imported.cube, imported.scoring_config, "baseline")
    assert frame.loc["slow", "faster_by"] == pytest.approx(float(expected.sel(algorithm="slow")))
    imported.reference = "slow"
    assert speedup_frame(imported)["algorithm"].iloc[0] == "slow"
    imported.reference = "baseline"
    imported.algorithms = ["fast", "slow"]  # the reference is hidden: the first name takes over
    assert imported.reference == "fast" and imported.param.reference.objects == ["fast", "slow"]
    _renders(Speedups(selection=imported))
    _renders(Filters(selection=imported))


def test_speedups_without_budgets_are_plain_geometric_means(selection):
    assert not uses_budgets(selection) and selection.reference == "fast"  # no baseline: first
    frame = speedup_frame(selection).set_index("algorithm")
    times = scoring.workload_times(selection.cube)
    ratio = float(np.exp(np.log(times.sel(algorithm="slow") / times.sel(algorithm="fast"))
                         .mean()))
    assert frame.loc["slow", "time_ratio"] == pytest.approx(ratio)


def test_curves_default_to_one_chosen_trial_per_algorithm(imported, monkeypatch):
    import workbench.views.curve_rows as curve_rows
    import workbench.views.curves as curves_module

    monkeypatch.setattr(curve_rows, "MAX_DEFAULT_CURVES", 3)  # wa has 12 runs: pick
    shown = shown_curve_runs(imported)
    wa = shown.query("workload == 'wa'").set_index("algorithm")
    assert sorted(wa.index) == ["baseline", "fast", "slow"]
    # slow never met the target on wa: its closest run stands for it
    slow = imported.runs.query("workload == 'wa' and algorithm == 'slow'")
    assert wa.loc["slow", "best_validation"] == slow["best_validation"].max()
    assert len(curve_evals(imported)) == 2 * len(shown)
    picked = imported.runs.query("workload == 'wa'").run_id.iloc[:2].tolist()
    imported.curve_runs = picked  # picks are drawn besides the defaults, never instead of them
    shown_now = shown_curve_runs(imported).query("workload == 'wa'")
    assert set(wa.run_id) | set(picked) == set(shown_now.run_id)
    assert loss_plot(imported, "wa").opts.get().kwargs["title"] == "wa: training loss at evals"
    curves = Curves(selection=imported, one_workload=True)
    assert curves.workload == "wa" and len(curves.plots()) == 1
    # the dashboard's live plot: by default a median line (and band) per algorithm; with
    # every_run a line per shown run; a dot per run that met the target and a cross per run
    # that missed
    assert len(curves._validation.source.data["xs"]) == shown_now["algorithm"].nunique()
    assert len(curves._validation.bands.data["xs"]) == shown_now["algorithm"].nunique()
    curves.every_run = True
    assert len(curves._validation.source.data["xs"]) == len(shown_now)
    reached = shown_now["reached_target"].astype(bool)
    assert sorted(curves._validation.points.data["marker"]) == sorted(
        ["circle"] * int(reached.sum()) + ["x"] * int((~reached).sum()))
    imported.algorithms = []
    assert curves._body.objects == [curves._nothing]


def test_curve_rows_are_read_once_for_every_setting_of_the_algorithms(imported, monkeypatch):
    from workbench import query
    import workbench.views.curve_rows as curve_rows
    import workbench.views.curves as curves_module

    import workbench.views.reading as reading_module
    from workbench.views.cache import SharedCache

    monkeypatch.setattr(curve_rows, "MAX_DEFAULT_CURVES", 3)  # wa: one run per algorithm
    monkeypatch.setattr(reading_module, "SHARED", SharedCache())  # nothing computed yet
    reads = []

    def counted(read):
        def wrapper(store, run_ids=None):
            reads.append(list(run_ids))
            return read(store, run_ids)
        return wrapper
    evals_frame = query.evals_frame  # the reads the test compares with are not counted
    for name in ("evals_frame", "train_frame"):
        monkeypatch.setattr(query, name, counted(getattr(query, name)))
    every = curves_module.curve_evals(imported, "wa")
    assert len(reads) == 1
    for shown in (["fast"], ["baseline", "slow"], ["baseline", "fast", "slow"]):
        imported.algorithms = shown
        rows = curves_module.curve_evals(imported, "wa")
        ids = shown_curve_runs(imported).query("workload == 'wa'")["run_id"].tolist()
        assert set(rows["run_id"]) == set(ids) and len(reads) == 1  # cut, no file read
        pd.testing.assert_frame_equal(rows.reset_index(drop=True),
                                      evals_frame(imported.store, ids))
    assert len(every) == len(rows)
    # a picked run beyond the defaults is read on its own, and merged in the rows' order
    picked = imported.runs.query("workload == 'wa'")["run_id"]
    picked = [r for r in picked if r not in set(ids)][:1]
    imported.curve_runs = picked
    ids = shown_curve_runs(imported).query("workload == 'wa'")["run_id"].tolist()
    rows = curves_module.curve_evals(imported, "wa")
    assert picked[0] in ids and reads[-1] == picked
    pd.testing.assert_frame_equal(rows, evals_frame(imported.store, ids))
    assert set(curves_module.curve_train(imported, "wa")["run_id"]) <= set(ids)


def test_the_cli_and_the_dashboard_rank_and_speed_up_alike(store_path, capsys):
    """One score order and one speedup policy: `pacebench score` says what the dashboard shows."""
    import json

    from runners.cli import main

    assert main(["score", "--store", str(store_path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    selection = Selection(store_path=str(store_path))
    assert list(out["scores"]) == list(selection.scores()["algorithm"])
    frame = speedup_frame(selection).set_index("algorithm")
    assert out["speedups"]["reference"] == selection.reference == "fast"
    for algorithm, faster in out["speedups"]["faster_by"].items():
        shown = frame.loc[algorithm, "faster_by"]
        if faster is None:  # JSON has no infinity: a miss where the reference reached the target
            assert not np.isfinite(shown)
        else:
            assert faster == pytest.approx(shown, abs=1e-6)


def test_md_turns_any_name_into_literal_markdown_text():
    import markdown_it

    from workbench.views.formats import md

    for name in ["<img src=x onerror=\"alert(1)\">", "<script>x()</script>", "a_b*c*`d`[e](f)",
                 "# heading", "&amp; & \\ |t|"]:
        rendered = markdown_it.MarkdownIt("commonmark").render(md(name))
        assert "<img" not in rendered and "<script" not in rendered and "<em>" not in rendered
        assert html.unescape(re.sub(r"</?p>\n?", "", rendered)) == name


def test_the_run_picker_labels_runs_by_what_they_are_never_by_a_hash():
    from workbench.views.formats import picker_labels

    runs = pd.DataFrame({"run_id": ["h1", "h2", "h3"], "algorithm": ["a", "a", "a"],
                         "workload": ["w", "w", "w"], "study": [0, 0, 0], "trial": [1, 1, 2],
                         "seed": [0, 0, 0], "attempt": [1, 2, 1], "study_name": ["s", "s", "s"],
                         "hparams": [{"learning_rate": 0.1}, {"learning_rate": 0.1},
                                     {"learning_rate": 0.3}]})
    assert picker_labels(runs) == {
        "a, study 0, trial 1, learning_rate=0.1 (w)": "h1",
        "a, study 0, trial 1, learning_rate=0.1 (w, attempt 2)": "h2",
        "a, study 0, trial 2, learning_rate=0.3 (w)": "h3"}


def test_log_ticks_label_ranges_under_a_decade_without_crowding():
    from workbench.views.formats import log_ticks

    assert log_ticks(pd.Series([1e-4, 10.0])) == [1e-4, 1e-3, 0.01, 0.1, 1.0, 10.0]
    assert log_ticks(pd.Series([0.045, 0.29])) == [0.05, 0.1, 0.2]
    assert log_ticks(pd.Series([0.31, 0.9])) == [0.3, 0.5, 0.7]
    assert log_ticks(pd.Series([0.04, 0.1])) == [0.05, 0.1]  # not seven labels in 150 px
    assert log_ticks(pd.Series([0.031, 0.045])) == [0.03, 0.04]
    assert log_ticks(pd.Series([float("nan"), -1.0])) == []


def test_every_view_with_tables_downloads_them_as_csv(selection):
    import base64
    import csv
    import io

    from workbench.views.registry import tables_csv, view_tabs

    tabs = view_tabs(selection)  # a report's tabs: the file is embedded as the page is drawn
    buttons = {b.filename: b for b in tabs.select(pn.widgets.FileDownload)}
    assert {"pacebench_leaderboard.csv", "pacebench_speedups.csv", "pacebench_studies.csv",
            "pacebench_costs.csv"} <= set(buttons)
    text = tables_csv(tabs[0])
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[0][0] == "algorithm"
    assert {"fast", "slow"} <= {cell for row in rows for cell in row}
    button = buttons["pacebench_leaderboard.csv"]
    assert base64.b64decode(button.data.split(",", 1)[1]).decode() == text


def test_live_plots_redraw_in_place_with_step_corners_and_stacked_areas():
    from workbench.views.live import LivePlot, stacked_areas, steps

    x, y = steps([1, 2, 3], [0.0, 0.5, 1.0])  # each value holds until the next x
    assert x.tolist() == [1, 2, 2, 3, 3] and y.tolist() == [0, 0, 0.5, 0.5, 1]
    x, y = steps([1, 2, 3], [4.0, 5.0, 6.0], mid=True)  # from halfway to halfway
    assert x.tolist() == [1, 1.5, 1.5, 2.5, 2.5, 3] and y.tolist() == [4, 4, 5, 5, 6, 6]
    (_, _, xa, ya), (_, _, xb, yb) = stacked_areas([0, 1], [("a", "red", [0.2, 0.4]),
                                                            ("b", "blue", [0.3, np.nan])])
    assert xa.tolist() == [0, 1, 1, 0] and ya.tolist() == [0.2, 0.4, 0, 0]
    assert yb.tolist() == [0.5, 0.4, 0.4, 0.2]  # b on top of a; NaN adds nothing

    plot = LivePlot(xlabel="k", ylabel="score", points=True)
    assert plot.pane.objects == []  # the figure is made at the first draw
    plot.draw([("a", "red", [1, 2], [0.1, 0.2])], "first", hline=(0.5, "dashed"),
              points=[("a", "red", 1.0, 0.1, "run 1")])
    figure, source = plot.figure, plot.source
    plot.draw([("b", "blue", [1, 2, 3], [0.3, 0.2, 0.1]), ("c", "green", [1], [0.4])], "second")
    assert plot.figure is figure and plot.source is source  # the same models, new data
    assert source.data["label"] == ["b", "c"] and figure.title.text == "second"
    assert plot.points.data["group"] == [] and not plot._rules["width"].visible
    assert len(plot.pane.objects) == 1
    losses = LivePlot(xlabel="s", ylabel="loss", y_log=True)  # each decade printed as itself
    losses.draw([("a", "red", [1, 2], [1.0, 1e-4])], "loss", yticks=[1e-4, 0.01, 1.0])
    assert losses.figure.yaxis[0].major_label_overrides == {1e-4: "0.0001", 0.01: "0.01",
                                                             1.0: "1"}


# -- a dashboard that cannot draw says why on the page ---------------------------------------
class _Broken(Leaderboard):
    """A view whose drawing raises (with markup in its message, as a store's name could)."""

    def _update(self) -> None:
        raise RuntimeError("cube <b>exploded</b>\nsecond line")


def test_a_view_that_raises_shows_one_line_why_and_logs_the_traceback(selection, caplog,
                                                                      monkeypatch):
    from workbench.views.registry import with_csv_download

    monkeypatch.delenv("PACEBENCH_DEBUG", raising=False)
    with caplog.at_level("ERROR", logger="workbench.views"):
        view = _Broken(selection=selection)
    assert view.failure.visible and view.failure.alert_type == "danger"
    text = markdown_text(view.failure.object)
    assert text.startswith("The _Broken view could not be drawn: RuntimeError: cube "
                           "<b>exploded</b>. Try other filters") and "\n" not in text
    assert "second line" not in text and "Traceback" not in text
    assert "<b>" not in view.failure.object  # the message is escaped
    assert "Traceback" in caplog.text and "_Broken could not be drawn" in caplog.text
    assert any(a is view.failure for a in
               with_csv_download("Broken", view, embed=False).select(pn.pane.Alert))
    monkeypatch.setenv("PACEBENCH_DEBUG", "1")
    view = _Broken(selection=selection)
    assert "Traceback (most recent call last)" in view.failure.object
    assert "&lt;b&gt;exploded" in view.failure.object


def test_a_view_that_cannot_be_made_leaves_the_other_tabs(selection, monkeypatch, caplog):
    from workbench.views import registry

    def broken(**_):
        raise ValueError("no such thing")
    entries = list(registry.VIEWS)
    at = [e.key for e in entries].index("compare")  # the second tab of a time-to-target store
    entries[at] = registry.ViewEntry("compare", "Compare", broken)
    monkeypatch.setattr(registry, "VIEWS", tuple(entries))
    with caplog.at_level("ERROR", logger="workbench.views"):
        tabs = registry.view_tabs(selection)  # a report: every view made now
    alert = tabs[1]
    assert isinstance(alert, pn.pane.Alert)
    assert markdown_text(alert.object).startswith(
        "The Compare view could not be drawn: ValueError: no such thing.")
    assert tabs[0].select(pn.widgets.Tabulator)  # the leaderboard drew
    dynamic = registry.view_tabs(selection, dynamic=True)
    dynamic.active = 1  # opening the tab shows the alert; going back still works
    assert isinstance(dynamic[1].objects[0], pn.pane.Alert)
    dynamic.active = 0
    assert "ValueError: no such thing" in caplog.text


def test_a_page_that_cannot_be_built_is_an_alert_not_a_blank_page(store_path, monkeypatch,
                                                                  caplog):
    import workbench.app as app

    def fail(*_args, **_kwargs):
        raise KeyError("algorithm")
    monkeypatch.setattr(app, "Selection", fail)
    with caplog.at_level("ERROR", logger="workbench.views"):
        page = app.serve_page(store_path)
    alert = page.select(pn.pane.Alert)[0]
    text = markdown_text(alert.object)
    assert text.startswith(f"The dashboard over {store_path} could not be drawn: KeyError: "
                           "'algorithm'.") and f"pacebench score --store {store_path}" in text
    assert "Traceback" in caplog.text


# -- a view in a notebook ----------------------------------------------------------------------
def test_a_notebook_view_carries_a_static_copy_of_its_tables_and_plots(tmp_path):
    import workbench
    from workbench.testing import hostile, make_hostile_store

    make_hostile_store(tmp_path / "h", workloads=("digits_mlp",), studies=1, trials=2)
    res = workbench.open(tmp_path / "h")
    view = res.view("Leaderboard")
    data, metadata = view._repr_mimebundle_()
    page = data["text/html"]
    assert "application/vnd.holoviews_exec.v0+json" in data  # still live in JupyterLab
    static = page[page.index('class="pb-static"'):]
    name = html.escape(hostile("algorithm-fast"), quote=False)
    assert f"<td>{name}</td>" in static and "<img src=x" not in static  # escaped everywhere
    assert "<table" in static
    profiles = res.view("profiles", time_axis="steps")._repr_mimebundle_()[0]["text/html"]
    assert "data:image/png;base64," in profiles  # the plot, drawn by Matplotlib
    with pytest.raises(ValueError, match="unknown view 'Leader': valid are 'Leaderboard'"):
        res.view("Leader")
    with pytest.raises(TypeError, match="unknown filter colour: valid are ruleset"):
        res.view("Leaderboard", colour="red")
    with pytest.raises(ValueError, match="unknown algorithms 'nope'"):
        res.view("Leaderboard", algorithms="nope")


def test_every_view_opens_in_a_notebook_by_its_title_or_key(store_path):
    from workbench.views.registry import VIEWS, find_view, notebook_view

    for entry in VIEWS:  # made as a report makes them; the static copy is drawn on display
        view = notebook_view(store_path, entry.title, algorithms="fast", time_axis="wall")
        failures = [a.object for a in view.layout.select(pn.pane.Alert)
                    if a.visible and a.alert_type == "danger"]
        assert not failures, (entry.title, failures)
        assert find_view(entry.key.upper()) is find_view(f" {entry.title.lower()} ") is entry
    with pytest.raises(ValueError) as err:
        notebook_view(store_path, "Leaderbord")
    message = str(err.value)
    assert "\n" not in message and message.startswith("unknown view 'Leaderbord': valid are")
    assert all(repr(entry.title) in message and entry.key in message for entry in VIEWS)
