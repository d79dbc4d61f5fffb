"""The dashboard's selection beyond algorithms and workloads: ruleset, study, hardware and
variant filters, the time axis that time to target is measured on, views that wait while
hidden, the store fingerprint, and the live run status."""
from __future__ import annotations

import json

import numpy as np
import panel as pn
import pytest
import xarray as xr

from workbench import query
from workbench import records as R
from workbench import scoring
from workbench.testing import live_run, make_store
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
    assert sel.rulesets == ["external"]
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
    from workbench.views.registry import VIEWS, view_tabs

    sel = Selection(store_path=str(two_studies))
    tabs = view_tabs(sel, dynamic=True)
    assert len(tabs) == len(VIEWS) and len(tabs[0].objects) == 1
    assert all(slot.objects == [] for slot in tabs[1:])  # a new page: the first tab's models only
    studies = [e.title for e in VIEWS].index("Studies")
    tabs.active = studies
    made = tabs[studies].objects[0]
    assert made.select(pn.widgets.Tabulator)  # its view, drawn on opening
    tabs.active = 0
    sel.algorithms = ["slow"]  # while hidden: the Studies view is stale, not redrawn
    tabs.active = studies
    assert tabs[studies].objects[0] is made  # kept, not made again
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
