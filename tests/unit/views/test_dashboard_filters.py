"""The dashboard's selection beyond algorithms and workloads: ruleset, study, hardware and
variant filters, the time axis that time to target is measured on, views that wait while
hidden, the store fingerprint, and the live run status."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import panel as pn
import pytest
import xarray as xr

from workbench import query
from workbench import records as R
from workbench import scoring
from workbench.testing import live_run, make_store, markdown_text
from workbench.views.leaderboard import Leaderboard, ratio_styles, score_frame, times_frame
from workbench.views.profiles import profile_plot
from workbench.views.selection import Selection
from workbench.views.sidebar import Filters
from workbench.views.formats import md
from workbench.views.status import RunStatus, running_frame


@pytest.fixture(scope="module")
def two_studies(tmp_path_factory):
    """Two study campaigns (names) on different hardware, and a variant workload."""
    path = tmp_path_factory.mktemp("filters") / "store"
    make_store(path, workloads=("digits_mlp", "digits_mlp_tanh"), studies=2, trials=2)
    make_store(path, algorithms=("other",), workloads=("digits_mlp",), studies=1, trials=2,
               study_name="second")
    for doc_path in (path / R.RUNS_DIR).glob(f"*/{R.RUN_DOC}"):
        doc = json.loads(doc_path.read_text())
        if doc["study_name"] == "second":
            doc["hardware"] = "other machine"
            doc_path.write_text(json.dumps(doc))
    return path


def test_filters_offer_every_value_and_select_all_but_one_hardware(two_studies):
    """Every filter starts on all its values but the hardware, which starts on the machine with
    the most runs: times measured on two machines are pooled only when asked for."""
    sel = Selection(store_path=str(two_studies))
    assert sel.studies == ["second", "synthetic"]
    assert sel.param.hardware.objects == ["other machine", "synthetic CPU x1"]
    assert sel.hardware == ["synthetic CPU x1"]  # 16 runs, against 2 on the other machine
    assert sel.ruleset == "external" and sel.param.ruleset.objects == ["external"]
    assert set(sel.runs["algorithm"]) == {"fast", "slow"}
    from workbench.report import _filters_text
    assert _filters_text(sel) == " Shown: hardware synthetic CPU x1."  # a report says so
    sel.hardware = ["other machine", "synthetic CPU x1"]  # both, when asked for
    assert set(sel.runs["algorithm"]) == {"fast", "slow", "other"}


def test_study_and_hardware_filters_select_runs(two_studies):
    sel = Selection(store_path=str(two_studies))
    sel.hardware = ["other machine", "synthetic CPU x1"]  # both machines ticked
    sel.studies = ["second"]
    assert set(sel.runs["study_name"]) == {"second"} and set(sel.runs["algorithm"]) == {"other"}
    assert list(sel.cube["algorithm"].values) == ["other"]
    sel.studies = ["second", "synthetic"]
    sel.hardware = ["synthetic CPU x1"]
    assert set(sel.runs["algorithm"]) == {"fast", "slow"}
    assert list(score_frame(sel)["algorithm"]) == ["fast", "slow"]


def test_sidebar_splits_base_workloads_from_variants(two_studies):
    sel = Selection(store_path=str(two_studies))
    filters = Filters(selection=sel)
    assert filters._bases.options == ["digits_mlp"]
    assert filters._variants.options == ["digits_mlp_tanh"]
    filters._variants.value = []  # untick the variant: the selection follows
    assert sel.workloads == ["digits_mlp"]
    sel.workloads = ["digits_mlp", "digits_mlp_tanh"]  # and the boxes follow the selection
    assert filters._variants.value == ["digits_mlp_tanh"]


def test_time_axis_switches_time_to_target_to_steps_and_wall_seconds(two_studies):
    sel = Selection(store_path=str(two_studies))
    sel.studies = ["synthetic"]
    train = sel.workload_times().copy()
    runs = sel.runs.set_index("run_id")
    sel.time_axis = "step"
    steps = sel.workload_times()
    assert steps.attrs["units"] == "steps"
    chosen = sel.cube["run_id"].values.ravel()
    chosen = [r for r in chosen if r and runs.loc[r, "reached_target"]]
    assert chosen and all(runs.loc[r, "step_to_target"] % 25 == 0 for r in chosen)
    text = times_frame(sel, ["fast", "slow"]).drop(columns="algorithm").to_numpy().ravel()
    assert all(t.endswith(" steps") or t == "miss" for t in text)
    assert "steps" in profile_plot(sel).opts["xlabel"]
    sel.time_axis = "wall_seconds"  # wall time counts the evals too: never below training time
    wall = sel.workload_times()
    finite = np.isfinite(train.values)
    assert (wall.values[finite] > train.values[finite]).all()


def test_time_table_is_coloured_by_the_ratio_to_the_best(two_studies):
    sel = Selection(store_path=str(two_studies))
    sel.studies = ["synthetic"]
    from workbench.views.leaderboard import workload_time_table

    times = workload_time_table(sel, ["fast", "slow"])
    styles = ratio_styles(times)
    best = times["digits_mlp"].idxmin()
    row = list(times.index).index(best)
    assert styles.loc[row, "digits_mlp"] == "background-color: rgb(198, 239, 206)"  # the best


def test_leaderboard_has_studies_an_interval_and_a_speedup(two_studies, tmp_path):
    sel = Selection(store_path=str(two_studies))
    sel.studies = ["synthetic"]
    sel.reference = "slow"
    frame = score_frame(sel).set_index("algorithm")
    # two studies: resampling them is no uncertainty, so no "x to x"
    assert frame.loc["fast", "studies"] == 2
    assert frame.loc["fast", "interval"] == "n/a (2 studies)"
    assert frame.loc["slow", "speedup"] == "+0.0 %"
    assert frame.loc["fast", "speedup"].startswith("+")  # fast needs less time than slow
    make_store(tmp_path / "three", workloads=("digits_mlp", "digits_cnn"), studies=3, trials=2,
               seed=4)
    frame = score_frame(Selection(store_path=str(tmp_path / "three"))).set_index("algorithm")
    assert list(frame["studies"]) == [3, 3]
    low, high = (float(x) for x in frame.loc["fast", "interval"].split(" to "))
    assert low <= frame.loc["fast", "score"] <= high


def test_hidden_view_waits_and_redraws_when_shown(two_studies):
    sel = Selection(store_path=str(two_studies))
    view = Leaderboard(selection=sel, shown=False)
    assert view._scores.value is None or len(view._scores.value) == 0  # not drawn while hidden
    view.shown = True
    assert len(view._scores.value) > 0
    view.shown = False
    sel.algorithms = ["slow"]
    assert "fast" in list(view._scores.value["algorithm"])  # stale while hidden
    view.shown = True
    assert list(view._scores.value["algorithm"]) == ["slow"]


def test_dashboard_tabs_make_their_view_when_first_opened_and_keep_it(two_studies):
    from workbench.views.registry import MORE, VIEWS, tab_plan, view_tabs

    sel = Selection(store_path=str(two_studies))
    tabs = view_tabs(sel, dynamic=True)
    main, more = tab_plan(sel)
    assert tabs._names == [e.title for e in main] + [MORE]
    assert len(main) + len(more) == len(VIEWS) and len(tabs[0].objects) == 1
    inner = tabs[-1]  # the More tab's own tabs
    # a new page: the first tab's models only
    assert all(slot.objects == [] for slot in [*tabs[1:-1], *inner])
    compare = tabs._names.index("Compare")
    tabs.active = compare
    made = tabs[compare].objects[0]
    assert made.select(pn.widgets.Tabulator) or made.objects  # its view, made on opening
    tabs.active = len(tabs) - 1  # More: its first tab (Studies) made as it opens
    assert inner._names[0] == "Studies" and inner[0].objects
    studies_view = inner[0].objects[0]
    tabs.active = 0
    sel.algorithms = ["slow"]  # while hidden: the Studies view is stale, not redrawn
    tabs.active = len(tabs) - 1
    assert inner[0].objects[0] is studies_view  # kept, not made again
    made = studies_view
    shown = {a for t in made.select(pn.widgets.Tabulator) if t.value is not None
             and "algorithm" in t.value for a in t.value["algorithm"]}
    assert shown == {"slow"}  # redrawn for the filters set while it was hidden


def test_a_pane_updated_after_the_page_drew_keeps_the_stylesheets_the_page_gave_it(two_studies):
    """A filter change sends the status line and the curves' legend their new text only: the
    template's stylesheets stay (not Bootstrap's whole sheet) and no model is added or dropped,
    so Bokeh has no reference to walk again."""
    from bokeh.document import Document

    from workbench.app import build_app

    sel = Selection(store_path=str(two_studies))
    app, doc = build_app(two_studies, sel), Document()
    app.server_doc(doc)
    tabs = app.main[0].select(pn.Tabs)[0]
    tabs.active = tabs._names.index("Curves")

    def panes():
        return {c: m for m in doc.models for c in ("pb-status", "pb-legend")
                if c in (getattr(m, "css_classes", None) or [])}

    before = {c: (m.text, list(m.stylesheets)) for c, m in panes().items()}
    assert set(before) == {"pb-status", "pb-legend"}
    models = set(doc.models)
    sel.algorithms = ["slow"]
    after = {c: (m.text, list(m.stylesheets)) for c, m in panes().items()}
    for c in before:
        assert after[c][0] != before[c][0], f"{c}: its text did not change"
        assert after[c][1] == before[c][1], f"{c}: its stylesheets changed"
        assert not any("bootstrap.min.css" in str(getattr(s, "url", "")) for s in after[c][1])
    assert set(doc.models) == models


def test_running_trials_are_listed_with_their_latest_eval(tmp_path):
    make_store(tmp_path, algorithms=("fast",), workloads=("digits_mlp",), studies=1, trials=2)
    writer = live_run(tmp_path, n_evals=3)
    sel = Selection(store_path=str(tmp_path))
    status = RunStatus(selection=sel)
    assert "1 running" in status._line.object and "2 complete" in status._line.object
    frame = running_frame(sel)
    assert list(frame["run_id"]) == [writer.run_id] and list(frame["step"]) == [75]
    writer.append_eval({**query.evals_frame(sel.store, [writer.run_id]).iloc[-1].drop("run_id").to_dict(),
                        "eval_index": 3, "step": 100})
    assert sel.refresh()  # the live run wrote: the fingerprint changed
    assert list(running_frame(sel)["step"]) == [100]
    writer.finish("complete", stop_reason="done")
    assert sel.refresh()
    assert "3 complete" in status._line.object and not status._table.visible
    assert not sel.refresh()  # nothing changed since


def test_the_status_line_counts_runs_that_cannot_be_read(tmp_path):
    store = make_store(tmp_path, algorithms=("fast",), workloads=("digits_mlp",), studies=1,
                       trials=3)
    torn = store.run_ids()[0]
    (store.runs_dir / torn / R.RUN_DOC).write_text('{"torn')
    with pytest.warns(UserWarning, match=f"skipped run {torn}"):
        status = RunStatus(selection=Selection(store_path=str(tmp_path)))
    assert status._line.object.startswith("**2 runs shown:** 2 complete.")
    assert f"1 run skipped:** their files cannot be read ({md(torn)};" in status._line.object


def test_values_cut_from_the_full_grid_equal_those_computed_on_the_shown_cube(two_studies):
    """Study and workload times and the bootstrap draws are computed once over every
    algorithm and workload and cut to the shown ones: the cut must be what the shown cube
    gives directly, and the counts must be those of the filtered run table."""
    sel = Selection(store_path=str(two_studies))
    sel.param.update(algorithms=["fast", "other"], workloads=["digits_mlp"], time_axis="step",
                     hardware=["other machine", "synthetic CPU x1"])  # both machines ticked
    cube = sel.cube
    assert list(cube["algorithm"].values) == ["fast", "other"]
    xr.testing.assert_identical(sel.study_times(), scoring.study_times(cube))
    xr.testing.assert_equal(sel.workload_times(), scoring.workload_times(cube))
    assert sel.workload_times().attrs["units"] == "steps"
    draws = sel.bootstrap_medians(50)
    assert draws.dims == ("replicate", "algorithm", "workload") and draws.sizes["replicate"] == 50
    full = scoring.bootstrap_medians(scoring.study_times(sel.full_cube()), 50)
    xr.testing.assert_equal(draws, full.sel(algorithm=["fast", "other"],
                                            workload=["digits_mlp"]))
    runs = sel.runs
    assert sel.n_runs == len(runs) > 0
    assert sel.counts("algorithm") == runs["algorithm"].value_counts().to_dict()
    assert sel.present("workload") == {"digits_mlp"}
    assert sel.present("hardware", nulls=True) == set(runs["hardware"])
    assert list(sel.runs_where(algorithm="other")["run_id"]) == \
        list(runs.loc[runs["algorithm"] == "other", "run_id"])
    first = runs.iloc[0]
    picked = sel.runs_where(["run_id", "study"], algorithm="fast", study=first["study"])
    assert list(picked.columns) == ["run_id", "study"]
    assert list(picked["run_id"]) == list(runs.loc[(runs["algorithm"] == "fast") & (
        runs["study"] == first["study"]), "run_id"])
    assert sel.runs_where(algorithm="slow").empty  # filtered out
    assert sel.runs_where(algorithm="no such algorithm").empty
    among = sel.runs_where(algorithm=["other", "slow"], study=[first["study"]])  # lists: any
    # the run picker's rows: by id in the order asked, whatever the filters; newest first
    every = sel._runs
    ids = [every["run_id"].iloc[-1], "no such run", every["run_id"].iloc[0]]
    assert list(sel.run_rows(ids)["run_id"]) == [ids[0], ids[2]]
    newest = every.loc[sel.shown_rows()].sort_values("started_at", kind="stable")["run_id"]
    assert sel.recent_runs(3) == list(newest)[::-1][:3]
    assert list(among["run_id"]) == list(runs.loc[(runs["algorithm"] == "other") & (
        runs["study"] == first["study"]), "run_id"])
    # the tuning-budget curves, found per cell over the full cube and cut
    from workbench import budget
    from workbench.views.budget import budget_data

    trials, curves = budget_data(sel)
    expected = budget.trial_times(cube)
    assert list(trials) == list(expected) and len(trials) == 2
    assert all(np.array_equal(trials[k], expected[k]) for k in expected)
    assert curves == budget.budget_curves(expected)


def test_a_view_draws_once_when_unticking_the_reference_changes_the_reference(two_studies):
    sel = Selection(store_path=str(two_studies))
    sel.reference = "slow"
    view = Leaderboard(selection=sel)
    draws = []
    original = view._update
    view._update = lambda: (draws.append(sel.reference), original())
    sel.algorithms = ["fast", "other"]  # the reference goes too: two notifications, one draw
    assert draws == [sel.reference] and sel.reference != "slow"
    sel.algorithms = ["fast", "other"]  # nothing changed: no draw
    assert len(draws) == 1


def test_dashboard_leaderboard_hides_unticked_workloads_instead_of_dropping_columns(tmp_path):
    make_store(tmp_path, workloads=("digits_mlp", "digits_cnn"), studies=1, trials=2)
    sel = Selection(store_path=str(tmp_path))
    view = Leaderboard(selection=sel, keep_columns=True)
    table = view._groups["scored"][1]
    columns = list(table.value.columns)
    assert set(columns) == {"algorithm", "digits_mlp", "digits_cnn"} and not table.hidden_columns
    shown = table.value.set_index("algorithm")["digits_mlp"]
    sel.workloads = ["digits_mlp"]
    assert list(table.value.columns) == columns and table.hidden_columns == ["digits_cnn"]
    assert table.value.set_index("algorithm")["digits_mlp"].equals(shown)
    report = Leaderboard(selection=sel)  # the report: only the shown workloads' columns
    assert list(report._groups["scored"][1].value.columns) == ["algorithm", "digits_mlp"]


def test_the_times_tables_end_with_each_workloads_noise_floor():
    from workbench.catalog import noise_floor_of
    from workbench.views.leaderboard import NOISE_LABEL, noise_row

    row = noise_row(["mnist1d_mlp", "criteo1tb", "mnist_cnn"])
    assert row["algorithm"] == NOISE_LABEL
    assert row["mnist1d_mlp"] == f"{100 * noise_floor_of('mnist1d_mlp').cov:.1f} %"
    assert row["criteo1tb"] == row["mnist_cnn"] == "not measured"  # imported; published target
    assert noise_row(["criteo1tb", "ogbg"]) is None  # an AlgoPerf store: no row at all


def test_a_served_refresh_reaches_the_page_in_one_message(tmp_path):
    """The dashboard re-reads its store holding the page's document (app._refresh): a box's
    name and its tick, the filters' visibility and the views' new data reach the browser
    together, so a shown algorithm's box never reads unticked for a moment (a click then is
    undone by the late tick, and Playwright's uncheck() of a box that reads unticked sends
    nothing: the browser tests' "lost clicks")."""
    from bokeh.document import Document
    from panel.io.state import set_curdoc

    from workbench import app

    sel = Selection(store_path=str(tmp_path / "s"))
    make_store(tmp_path / "s", algorithms=("fast",), workloads=("digits_mlp",), studies=1,
               trials=2)
    doc, held = Document(), []
    for name in ("algorithms", "version"):
        sel.param.watch(lambda _: held.append(doc.callbacks.hold_value), name)
    with set_curdoc(doc):
        app._refresh(sel)
    assert sel.algorithms == ["fast"] and held == ["combine", "combine"]
    assert doc.callbacks.hold_value is None  # released: the held changes are sent


def test_the_selection_reads_and_scores_through_results(two_studies, monkeypatch):
    """The dashboard reaches the store and the analysis through workbench.results.Results (its
    reads, the relaxed first hits, the scoring steps), one path with the commands."""
    import workbench.views.cache as cache_module
    import workbench.views.reading as reading_module
    from workbench.results import Results
    from workbench.views.cache import SharedCache

    shared = SharedCache()  # nothing read or computed yet
    monkeypatch.setattr(cache_module, "SHARED", shared)
    monkeypatch.setattr(reading_module, "SHARED", shared)
    calls = []

    def counted(name, static=False):
        original = getattr(Results, name)
        if static:
            return staticmethod(lambda *a, **k: calls.append(name) or original(*a, **k))
        return lambda self, *a, **k: calls.append(name) or original(self, *a, **k)
    for name, static in (("read_runs", False), ("first_hits", False), ("study_times", True),
                         ("score_table_of_times", True)):
        monkeypatch.setattr(Results, name, counted(name, static))
    sel = Selection(store_path=str(two_studies))
    assert calls == ["read_runs"] and isinstance(sel.results, Results)
    sel.relax_targets = 0.1
    assert len(sel.scores()) and {"first_hits", "study_times", "score_table_of_times"} <= \
        set(calls)


# -- one set of numbers: the dashboard reads a store as Results does ---------------------------
def assert_dashboard_equals_results(sel, res, compare_pairs=(), tol=1e-9, **scope):
    """Scores, score intervals, speedups and their intervals of `sel` (every filter open) equal
    those of `res` (workbench.results.Results) with the same scope; so do the comparisons of
    `compare_pairs` (ratio, interval, p-value, verdict, verdict by steps)."""
    from workbench.views.compare import comparison
    from workbench.views.leaderboard import score_intervals
    from workbench.views.speedups import speedup_frame

    axis = {"train_seconds": "train", "wall_seconds": "wall", "step": "steps"}[sel.time_axis]
    result = res.score_result(**scope, time_axis=axis)
    expected = result.table.set_index("algorithm")
    shown = score_intervals(sel).set_index("algorithm")
    assert list(shown.index) == list(expected.index)  # the same algorithms, in the same order
    for column in ("score", "exact_score", "low", "high"):
        np.testing.assert_allclose(shown[column].astype(float), expected[column].astype(float),
                                   rtol=0, atol=tol, err_msg=column)
    assert list(shown["studies"]) == list(expected["studies"])
    assert list(shown["interval"]) == list(expected["interval"])
    frame, reference, _ = result.speedups
    assert sel.reference == reference
    speedups = speedup_frame(sel).set_index("algorithm").reindex(frame.index)
    for column in ("faster_by", "time_ratio", "low", "high"):
        np.testing.assert_allclose(speedups[column].astype(float), frame[column].astype(float),
                                   rtol=0, atol=tol, err_msg=column)
    assert list(speedups["studies"]) == list(frame["studies"])
    for a, b in compare_pairs:
        assert_same_comparison(comparison(sel, a, b),
                               res.compare_result(a, b, **scope, time_axis=axis).comparison,
                               tol)


def assert_same_comparison(shown, expected, tol=1e-9):
    assert shown is not None
    for field in ("a", "b", "verdict", "verdict_by_steps", "withheld", "warnings",
                  "studies_needed", "left_out", "method"):
        assert getattr(shown, field) == getattr(expected, field), field
    for field in ("speedup", "low", "high", "p_value", "p_value_b",
                  "probability_of_improvement"):
        assert getattr(shown, field) == pytest.approx(getattr(expected, field), abs=tol,
                                                      nan_ok=True), field
    assert [r.workload for r in shown.per_workload] == [r.workload for r in expected.per_workload]
    for mine, theirs in zip(shown.per_workload, expected.per_workload):
        for field in ("ratio", "low", "high", "probability_of_improvement"):
            assert getattr(mine, field) == pytest.approx(getattr(theirs, field), abs=tol), field


def test_the_dashboard_shows_the_numbers_of_results_on_the_imported_v05_logs(algoperf_v05):
    import workbench

    sel = Selection(store_path=str(algoperf_v05.path))
    assert sel.scope.studies == () and not sel.with_adhoc
    assert_dashboard_equals_results(sel, workbench.open(algoperf_v05.path),
                                    [("shampoo_submission", "baseline")])


@pytest.fixture(scope="module")
def own_study(tmp_path_factory):
    """A small study of our own: three algorithms, 3 studies x 3 trials on two workloads and a
    variant, one interrupted and one failed-then-resumed trial."""
    path = tmp_path_factory.mktemp("own") / "store"
    make_store(path, algorithms=("adamw", "heavy_ball", "nadamw"),
               workloads=("digits_mlp", "digits_cnn", "digits_mlp_tanh"), studies=3, trials=3,
               interrupted=1, failed=1, seed=3)
    return path


@pytest.mark.parametrize("axis", ["train_seconds", "step", "wall_seconds"])
def test_the_dashboard_shows_the_numbers_of_results_on_a_study_of_our_own(own_study, axis):
    import workbench

    sel = Selection(store_path=str(own_study))
    sel.time_axis = axis
    assert_dashboard_equals_results(sel, workbench.open(own_study),
                                    [("adamw", "heavy_ball"), ("nadamw", "adamw")])
    assert "interrupted" in sel.counts("status")  # shown in the status line, not scored
    assert sel.n_shown == sel.n_runs + 2  # the interrupted run, the failed first attempt


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    from workbench.testing import make_mixed_store

    path = tmp_path_factory.mktemp("mixed") / "store"
    make_mixed_store(path)
    return path


def test_a_mixed_store_is_read_through_its_scope(mixed):
    from workbench.views.status import ScopeNotes, scope_notes

    sel = Selection(store_path=str(mixed))
    assert sel.ruleset == "external" and sel.param.ruleset.objects == ["external", "self"]
    assert sel.studies == ["main", "wide"] and not sel.with_adhoc  # "adhoc": with_adhoc's
    assert sel.algorithms == ["adamw", "heavy_ball [main]", "heavy_ball [wide]"]
    assert set(sel.runs["ruleset"]) == {"external"} and "run" not in set(sel.runs["launched_by"])
    assert sel.counts("status") == {"complete": 35, "failed": 1}  # the status line's
    notes = scope_notes(sel)
    assert any("left out 6 runs of the self ruleset" in n and 'pick self under "Ruleset"' in n
               for n in notes)
    assert any('left out 3 ad-hoc runs' in n and 'tick "ad-hoc runs"' in n for n in notes)
    assert any("shown apart as heavy_ball [main], heavy_ball [wide]" in n for n in notes)
    assert "trials of adamw with no finished attempt: 1 on mnist1d_mlp" in notes
    shown = ScopeNotes(selection=sel, live=True)._notes
    assert shown.visible and md("heavy_ball [main]") in shown.object  # escaped
    assert "heavy_ball [main]" in markdown_text(shown.object)  # and read as written
    report = markdown_text(ScopeNotes(selection=sel)._notes.object)
    assert "--with-adhoc takes them in" in report  # a report names the flags


def test_ticking_ad_hoc_runs_adds_each_as_a_trial_and_rulesets_never_mix(mixed):
    import workbench

    res = workbench.open(mixed)
    sel = Selection(store_path=str(mixed))
    assert_dashboard_equals_results(sel, res, [("adamw", "heavy_ball [main]")])
    sel.with_adhoc = True
    assert "adamw [adhoc]" in sel.algorithms and "adamw [main]" in sel.algorithms
    trials = sel.cube["reached"].sel(algorithm="adamw [adhoc]", workload="mnist1d_mlp")
    assert int(trials.notnull().sum()) == 3 and int(trials.sum()) == 3  # three trials, all hit
    assert sel.counts("launched_by")["run"] == 3
    assert_dashboard_equals_results(sel, res, [("adamw [adhoc]", "adamw [main]")],
                                    with_adhoc=True)
    sel.ruleset = "self"
    assert sel.studies == ["self"] and sel.algorithms == ["adamw", "heavy_ball"]
    assert set(sel.runs["ruleset"]) == {"self"} and set(sel.full_runs()["ruleset"]) == {"self"}
    assert_dashboard_equals_results(sel, res, ruleset="self", with_adhoc=True)
    sel.ruleset = "external"
    assert set(sel.full_runs()["ruleset"]) == {"external"}
    sel.studies = ["wide"]  # one study name: heavy_ball is one algorithm again, ad-hoc runs too
    assert sel.algorithms == ["adamw", "heavy_ball"]
    assert set(sel.full_runs()["study_name"]) == {"wide", "adhoc"}
    assert_dashboard_equals_results(sel, res, studies=("wide", "adhoc"), with_adhoc=True)
    sel.studies = []
    assert sel.n_runs == 0 and sel.scores().empty


def test_the_sidebar_offers_the_scope_only_where_there_is_a_choice(mixed, two_studies):
    sel = Selection(store_path=str(mixed))
    filters = Filters(selection=sel)
    shown = {name: column.visible for name, column in filters._choices.items()}
    assert shown["ruleset"] and shown["studies"] and shown["with_adhoc"]
    sel.ruleset = "self"  # one study name and no ad-hoc run under it
    assert not filters._choices["studies"].visible and not filters._choices["with_adhoc"].visible
    other = Filters(selection=Selection(store_path=str(two_studies)))
    assert not other._choices["ruleset"].visible and not other._choices["with_adhoc"].visible


# -- one set of numbers on every surface: the CLI's JSON, Results, the dashboard, the report ---
def _cli_json(capsys, *argv: str) -> dict:
    from runners.cli import main

    capsys.readouterr()
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def _interval(low, high):
    """An interval as the JSON gives it (rounded; None when there is none)."""
    return None if not np.isfinite(low) else [round(float(low), 6), round(float(high), 6)]


def assert_every_surface_agrees(path, pairs, capsys, ruleset=None, with_adhoc=False):
    """`pacebench score --json` and `compare --json` print what Results gives, and the numbers
    they print are those of the dashboard's Leaderboard and Compare tabs (a Selection with the
    sidebar set to the same scope) and of the report's (report_selection, drawn as a report
    draws them): scores, studies, intervals, speedups, and each comparison of `pairs`."""
    import workbench
    from workbench.compare import comparison_table
    from workbench.report import report_selection
    from workbench.views.compare import Compare, comparison
    from workbench.views.leaderboard import score_intervals
    from workbench.views.speedups import speedup_frame

    scope = {"ruleset": ruleset, "with_adhoc": with_adhoc}
    argv = ["--store", str(path)] + (["--ruleset", ruleset] if ruleset else []) \
        + (["--with-adhoc"] if with_adhoc else [])
    res = workbench.open(path)
    score = _cli_json(capsys, "score", *argv)
    assert score == res.score(**scope)
    compared = {}
    for a, b in pairs:
        compared[a, b] = _cli_json(capsys, "compare", "--algorithms", f"{a},{b}", *argv)
        assert compared[a, b] == res.compare(a, b, **scope)
    dashboard = Selection(store_path=str(path))
    dashboard.param.update(**{k: v for k, v in scope.items() if v})
    report = report_selection(path, **scope)
    for sel, options in ((dashboard, {"keep_columns": True, "live": True}), (report, {})):
        board = Leaderboard(selection=sel, **options)._scores.value.set_index("algorithm")
        assert list(board.index) == list(score["scores"])  # best first, everywhere
        assert {a: round(float(v), 6) for a, v in board["score"].items()} == score["scores"]
        assert {a: int(v) for a, v in board["studies"].items()} == score["studies"]
        shown = score_intervals(sel).set_index("algorithm")  # what the interval column says
        assert {a: _interval(r.low, r.high) for a, r in shown.iterrows()} == score["intervals"]
        speedups = speedup_frame(sel).set_index("algorithm")
        assert sel.reference == score["speedups"]["reference"]
        assert {a: None if not np.isfinite(v) else round(float(v), 6)
                for a, v in speedups["faster_by"].items()} == score["speedups"]["faster_by"]
        assert {a: _interval(r.low, r.high) for a, r in speedups.iterrows()} == \
            score["speedups"]["intervals"]
        for (a, b), expected in compared.items():
            result = comparison(sel, a, b)
            assert {k: expected[k] for k in result.to_json()} == result.to_json()
        if sel is dashboard:  # the Compare tab, with A and B picked, shows that comparison
            for a, b in pairs:
                view = Compare(selection=sel, a=a, b=b, live=True)
                assert view._text.object and (view.a, view.b) == (a, b)
                pd.testing.assert_frame_equal(view._table.value, comparison_table(
                    res.compare_result(a, b, **scope).comparison, names=False))


def test_every_surface_shows_one_set_of_numbers_on_the_imported_v05_logs(algoperf_v05, capsys):
    assert_every_surface_agrees(algoperf_v05.path, [("shampoo_submission", "baseline")],
                                capsys)


def test_every_surface_shows_one_set_of_numbers_on_a_study_of_our_own(own_study, capsys):
    assert_every_surface_agrees(own_study, [("adamw", "heavy_ball")], capsys)


def test_every_surface_shows_one_set_of_numbers_read_with_the_scope_flags(mixed, capsys):
    assert_every_surface_agrees(mixed, [("heavy_ball", "adamw")], capsys, ruleset="self",
                                with_adhoc=True)
