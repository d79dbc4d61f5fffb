"""The early-ranking and scaling views over small synthetic stores: they build and show the
numbers workbench.curves / workbench.scaling compute."""
from __future__ import annotations

import json

import panel as pn
import pytest

from workbench import query
from workbench import records as R
from workbench.early_stopping import ranking_tables, saved_frame
from workbench.store import open_store
from workbench.testing import make_store
from workbench.views.early_ranking import EarlyRanking
from workbench.views.scaling import Scaling, scaling_results
from workbench.views.selection import Selection

BATCHES = (16, 32, 64, 128)


@pytest.fixture(scope="module")
def ranking_store(tmp_path_factory):
    path = tmp_path_factory.mktemp("ranking") / "store"
    store = make_store(path, algorithms=("fast",), workloads=("digits_mlp",), studies=2, trials=3)
    keys = sorted(doc["trial_key"] for doc in store.documents())
    for i, key in enumerate(keys):  # one trial stopped early at rung 1, as the tuner records it
        store.write_early_stop_doc("synthetic", key, {"trial_key": key, "estimator": "lcga",
                                                      "rungs": {},
                                                      "pruned_at_rung": 1 if i == 0 else None})
    return path


@pytest.fixture(scope="module")
def scaling_store(tmp_path_factory):
    """Runs at 4 batch sizes x 2 sparsities (2 trials each), written as make_store writes them."""
    path = tmp_path_factory.mktemp("scaling") / "store"
    store = make_store(path, algorithms=("fast",), workloads=("digits_mlp",), studies=8, trials=2)
    for d in store.run_dirs():
        doc = json.loads((d / R.RUN_DOC).read_text())
        doc["batch_size"] = BATCHES[doc["study"] % 4]
        doc["config"]["sparsity"] = 0.5 if doc["study"] >= 4 else 0.0
        (d / R.RUN_DOC).write_text(json.dumps(doc))
    return path


def test_ranking_tables_and_saved(ranking_store):
    store = open_store(ranking_store)
    tables = ranking_tables(store, query.runs_frame(store))
    (key, table), = tables.items()
    assert key == ("synthetic", "digits_mlp", "fast")
    assert set(table["fraction"]) == {0.05, 0.1, 0.2, 0.5}
    assert {"TSE", "TSE-EMA", "LCGA"} <= set(table["estimator"])
    saved = saved_frame(store, ["synthetic"])
    assert saved["stopped early"].tolist() == [1] and saved["trials"].tolist() == [6]


def test_early_ranking_view_renders(ranking_store):
    view = EarlyRanking(selection=Selection(store_path=str(ranking_store)))
    assert pn.panel(view).get_root() is not None
    assert [type(o).__name__ for o in view._body.objects] == ["Column"]  # the group's plots
    assert type(view._saved.objects[1]).__name__ == "DataFrame"  # the compute-saved table
    assert not view._picker.visible  # the report draws every group


def test_early_ranking_view_draws_the_picked_group_in_the_dashboard(tmp_path):
    path = tmp_path / "store"
    make_store(path, algorithms=("fast", "slow"), workloads=("digits_mlp",), studies=1,
               trials=3)
    selection = Selection(store_path=str(path))
    view = EarlyRanking(selection=selection, one_group=True)
    assert view.param.group.objects == ["synthetic / digits_mlp / fast",
                                        "synthetic / digits_mlp / slow"]
    assert view.group == "synthetic / digits_mlp / fast" and view._picker.visible
    (group,) = view._body.objects
    ranking = view._pairs[0][0]
    assert "fast (3 runs)" in ranking.figure.title.text
    view.group = "synthetic / digits_mlp / slow"  # redrawn in place
    assert view._body.objects == [group] and "slow (3 runs)" in ranking.figure.title.text
    selection.algorithms = ["fast"]  # the picked group is filtered out: the first one left
    assert view.param.group.objects == ["synthetic / digits_mlp / fast"]
    assert view.group == "synthetic / digits_mlp / fast"
    selection.algorithms = []
    assert view.group is None and "No study group" in view._body.objects[0].object


def test_scaling_results_and_view(scaling_store):
    from workbench.scaling import scaling_runs

    store = open_store(scaling_store)
    results, fits = scaling_results(store, scaling_runs(store))
    assert sorted(results["batch_size"].unique()) == list(BATCHES)
    assert sorted(fits["sparsity"]) == [0.0, 0.5]
    assert {"s_min", "b_crit", "b_simple"} <= set(fits.columns)
    view = Scaling(selection=Selection(store_path=str(scaling_store)))
    assert pn.panel(view).get_root() is not None
    assert any(type(o).__name__ == "HoloViews" for o in view._body.objects)


def test_scaling_view_explains_a_store_without_batch_sizes(ranking_store):
    view = Scaling(selection=Selection(store_path=str(ranking_store)))
    assert "No scaling study" in view._body.objects[0].object


def test_scaling_view_skips_studies_that_ran_one_batch_size_each(tmp_path):
    """Two ordinary studies whose workloads train at different batch sizes: the store spans
    two batch sizes, but no group is a scaling study (a lone point on log axes had no ticks)."""
    from workbench.views import scaling as view

    path = tmp_path / "store"
    store = make_store(path, algorithms=("fast",), workloads=("digits_mlp", "digits_cnn"),
                       studies=1, trials=2)
    for d in store.run_dirs():
        doc = json.loads((d / R.RUN_DOC).read_text())
        doc["batch_size"] = 64 if doc["workload"] == "digits_mlp" else 128
        (d / R.RUN_DOC).write_text(json.dumps(doc))
    selection = Selection(store_path=str(path))
    assert len(selection.present("batch_size")) == 2
    assert "No scaling study" in Scaling(selection=selection)._body.objects[0].object
    assert view.figures(selection) == {}


def test_scaling_figures_leave_out_a_group_that_reached_nothing(scaling_store, monkeypatch):
    """An algorithm that reached the result at no batch size has nothing to draw on log axes
    (Matplotlib refused the figure, and the report named it as failed)."""
    import pandas as pd

    from workbench.views import scaling as view

    selection = Selection(store_path=str(scaling_store))
    results, fits = view._results(selection)
    monkeypatch.setattr(view, "_results", lambda _: (
        pd.concat([results, results.assign(algorithm="never", steps=float("nan"))]),
        pd.concat([fits, fits.assign(algorithm="never")])))
    names = list(view.figures(selection))
    assert names and all(name.endswith("_fast") for name in names)


def test_warm_up_fills_the_cache_the_early_ranking_tab_first_reads(tmp_path):
    from workbench import app
    from workbench.views import early_ranking

    path = tmp_path / "store"
    make_store(path, algorithms=("fast",), workloads=("digits_mlp",), studies=1, trials=3)
    made = []
    original = early_ranking.group_data
    early_ranking.group_data = lambda *a: made.append(a[1]) or original(*a)
    try:
        app.warm_up(path).join()
        assert made == [("synthetic", "digits_mlp", "fast")]
        assert app.warm_up(path) is None  # once per store and process
        view = EarlyRanking(selection=Selection(store_path=str(path)), one_group=True)
        assert len(made) == 1 and "fast (3 runs)" in view._pairs[0][0].figure.title.text
    finally:
        early_ranking.group_data = original


def _rank_output_before(path, study=None, fractions=(0.05, 0.1, 0.2, 0.5)) -> str:
    """What `pacebench rank` printed before it called Results.rank_result (its old body)."""
    from workbench.early_stopping import study_summary

    store = open_store(path)
    runs = query.runs_frame(store)
    if study:
        runs = runs[runs.study_name == study]
    out = []
    for (name, workload, algorithm), table in ranking_tables(store, runs, fractions).items():
        out.append(f"\n{name}: {workload} / {algorithm}")
        for stat in ("spearman", "kendall"):
            out.append(f"{stat}:\n" + table.pivot(index="estimator", columns="fraction",
                                                  values=stat).round(3).to_string())
    for name in sorted(runs.study_name.unique()):
        for g in study_summary(store, name, runs)["groups"]:
            if g["pruned_trials"]:
                out.append(f"\nearly stopping in {name} ({g['workload']} / {g['algorithm']}): "
                           f"{len(g['pruned_trials'])} trials stopped early, "
                           f"{g['saved_train_seconds']:.1f} training s saved of "
                           f"{g['saved_train_seconds'] + g['spent_train_seconds']:.1f} "
                           f"({100 * g['saved_fraction_seconds']:.0f} %); best trial "
                           f"{(g['best'] or {}).get('trial')}")
    return "".join(line + "\n" for line in out)


@pytest.mark.parametrize("extra", [[], ["--study", "synthetic", "--fractions", "0.1,0.5"],
                                   ["--study", "nothing"]])
def test_rank_prints_results_rank_as_it_did_before(ranking_store, capsys, extra):
    from runners.cli import main
    from workbench.results import Results

    assert main(["rank", "--store", str(ranking_store), *extra]) == 0
    printed = capsys.readouterr().out
    study = extra[1] if extra else None
    fractions = (0.1, 0.5) if "--fractions" in extra else (0.05, 0.1, 0.2, 0.5)
    before = _rank_output_before(ranking_store, study, fractions)
    if study == "nothing":  # it printed nothing at all; now it says why
        assert before == "" and printed.startswith("nothing to rank: early ranking needs 3 ")
    else:
        assert printed == before
    assert ("early stopping in synthetic" in printed) == (study != "nothing")
    ranked = Results(open_store(ranking_store)).rank(study, fractions)
    json.dumps(ranked)  # JSON as it is
    assert len(ranked["rankings"]) == (0 if study == "nothing" else 1)
    if ranked["rankings"]:
        assert set(ranked["rankings"][0]["spearman"]["TSE"]) == {str(f) for f in fractions}
