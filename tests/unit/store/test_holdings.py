"""What a store holds (workbench/holdings.py) and what follows from it: the tabs the dashboard and
the report show first (workbench/views/registry.py tab_plan), `score`'s pointer on a ladder-only
store, the Leaderboard's note there; and the one default reference, `report --reference`,
`view().save()`, the Curves' target and tick rules."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from runners.cli import main
from workbench import holdings, query
from workbench.testing import make_ladder_store, make_store

RUNGS = (("gpt_tiny", 12_000), ("gpt_small", 48_000))


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    """An optimizer study: adamw, heavy_ball and zeta on digits_mlp, 2 studies x 2 trials."""
    path = tmp_path_factory.mktemp("study") / "store"
    make_store(path, algorithms=("zeta", "adamw", "heavy_ball"), workloads=("digits_mlp",),
               studies=2, trials=2)
    return path


@pytest.fixture(scope="module")
def ladder(tmp_path_factory):
    """A fake model-size ladder: two rungs, two budgets, adamw and a twin, 2 seeds."""
    path = tmp_path_factory.mktemp("ladder") / "store"
    make_ladder_store(path, rungs=RUNGS, budgets=(1, 2), seeds=2)
    return path


def _plan(path) -> tuple[list[str], list[str]]:
    from workbench.views.registry import tab_plan
    from workbench.views.selection import Selection

    main_tabs, more = tab_plan(Selection(store_path=str(path)))
    return [e.title for e in main_tabs], [e.title for e in more]


def test_an_optimizer_study_shows_its_tabs_and_the_others_under_more(study):
    shown, more = _plan(study)
    assert shown == ["Leaderboard", "Compare", "Curves", "Tuning budget", "Hyperparameters",
                     "Profiles", "Costs"]
    assert {"Scaling", "Ladder", "Early ranking", "Studies", "Speedups"} <= set(more)


def test_a_ladder_store_opens_on_the_ladder_and_score_points_to_it(ladder, capsys):
    from workbench.holdings import LADDER_NOTE
    from workbench.views.leaderboard import Leaderboard
    from workbench.views.selection import Selection

    assert _plan(ladder)[0] == ["Ladder", "Curves"]
    assert main(["score", "--store", str(ladder)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: store {ladder} holds a model-size "
                                               "ladder") and "pacebench ladder --summary" in err[0]
    board = Leaderboard(selection=Selection(store_path=str(ladder)), shown=True)
    assert LADDER_NOTE in board._about.object and "Every score is 0" not in board._about.object


def test_study_kinds_read_the_ladder_record_and_the_scaling_summary(study, ladder, tmp_path):
    from workbench.store import open_store

    store = open_store(ladder)
    assert set(holdings.study_kinds(store, query.runs_frame(store)).values()) == {"ladder"}
    store = open_store(study)
    runs = query.runs_frame(store)
    assert holdings.holdings(store, runs) == holdings.Holdings(
        frozenset({"time_to_target"}), False, False)
    copy = tmp_path / "scaling"
    make_store(copy, algorithms=("a",), workloads=("digits_mlp",), studies=1, trials=1)
    scaled = open_store(copy)
    name = str(query.runs_frame(scaled)["study_name"].iloc[0])
    scaled.write_study_summary(name, {"study_name": name, "kind": "scaling"})
    scaled.write_early_stop_doc(name, "t0", {"trial_key": "t0"})
    held = holdings.holdings(scaled, query.runs_frame(scaled))
    assert held.kinds == frozenset({"scaling"}) and held.early_stopping


def test_the_default_reference_and_report_reference(study, capsys):
    from workbench import open as open_results
    from workbench.report import _summary, report_selection

    assert open_results(study).score()["speedups"]["reference"] == "adamw"
    default = report_selection(study)
    assert default.reference == "adamw"
    assert "against **adamw** (the default: baseline, else adamw" in _summary(default, "t")
    chosen = report_selection(study, reference="zeta")
    assert chosen.reference == "zeta"
    assert _summary(chosen, "t", chosen=True).endswith("against **zeta**.")
    with pytest.raises(ValueError, match="unknown reference 'nope': the shown algorithms"):
        report_selection(study, reference="nope")
    assert main(["report", "--store", str(study), "--out", "/nonexistent/x.html",
                 "--reference", "nope"]) == 2
    assert capsys.readouterr().err.startswith("error: unknown reference 'nope'")


def test_a_view_saves_as_one_static_html_file(study, tmp_path):
    from workbench import open as open_results

    out = open_results(study).view("Studies", reference="heavy_ball").save(
        tmp_path / "views" / "studies.html", title="<b>studies</b>")
    text = out.read_text()
    assert text.startswith("<!DOCTYPE html>") and "<title>&lt;b&gt;studies&lt;/b&gt;</title>" \
        in text
    assert "<table" in text and "heavy_ball" in text and "<script" not in text


def test_an_unreachable_target_is_a_labelled_line_at_the_edge_not_an_axis_limit(ladder):
    from workbench.views import curves
    from workbench.views.selection import Selection

    ylim, line, label = curves._fit_target(2.0, 3.0, 0.0, reached=False)
    assert ylim[0] > 1.9 and ylim[0] < line < 2.0 and label.startswith("target 0 (below")
    ylim, line, label = curves._fit_target(2.0, 3.0, 1.8, reached=False)  # near: in range
    assert ylim[0] < 1.8 and line == 1.8 and label == ""
    ylim, line, label = curves._fit_target(2.0, 3.0, 0.5, reached=True)  # reached: in range
    assert ylim[0] < 0.5 and label == ""
    selection = Selection(store_path=str(ladder))
    data = curves.validation_data(selection, selection.workloads[0])
    assert data["x"] == "tokens" and data["xlabel"] == "training tokens"
    assert data["ylim"][0] > 1.0 and data["target_label"]  # losses ~2 to 3.2; target 0


def test_curves_draw_the_median_and_band_per_algorithm_and_loss_axes_with_ticks():
    from workbench.views import curves

    rows = pd.DataFrame({"algorithm": ["a"] * 6, "run_id": ["r1"] * 3 + ["r2"] * 3,
                         "x": [0.0, 1.0, 2.0] * 2, "y": [1.0, 2.0, 3.0, 3.0, 4.0, 5.0]})
    [(name, grid, median, q1, q3, runs)] = curves.median_bands(rows, "x", "y", points=3)
    assert (name, runs) == ("a", 2) and grid.tolist() == [0.0, 1.0, 2.0]
    assert median.tolist() == [2.0, 3.0, 4.0] and q1.tolist() == [1.5, 2.5, 3.5]
    assert q3.tolist() == [2.5, 3.5, 4.5]
    assert np.isfinite(median).all()


def test_the_bands_quartiles_are_nanpercentiles_to_the_last_bit():
    from workbench.views.curves import _quartiles

    rng = np.random.default_rng(0)
    for case in range(200):  # runs x grid points, some not covered by a run (NaN)
        values = rng.lognormal(size=(rng.integers(1, 30), rng.integers(1, 80)))
        values *= 10.0 ** rng.integers(-5, 5)
        values = np.round(values, 1) if case % 3 == 0 else values  # ties
        values[rng.random(values.shape) < rng.random()] = np.nan
        if case % 10 == 0:
            values[rng.random(values.shape) < 0.1] = np.inf  # (never in median_bands)
        values = values[:, (~np.isnan(values)).any(axis=0)]  # (median_bands keeps these)
        if values.shape[1]:  # (inf - inf between two ranks gives NaN in both)
            expected = np.nanpercentile(values, [25, 50, 75], axis=0)
            assert np.array_equal(_quartiles(values), expected, equal_nan=True), case


def test_costs_read_in_a_unit_that_fits():
    from workbench import costs
    from workbench.views.costs import EDITED, cost_text, energy_text, significant

    cpu = "cpu: AMD EPYC (4 threads)"
    prices = costs.PriceTable.defaults([cpu])
    assert cost_text(5.9e-5, 2.5, cpu, prices) == "10.0 core-s"  # not "$0.0000590"
    typed = prices.with_price(cpu, 0.17, EDITED)
    assert cost_text(5.9e-5, 2.5, cpu, typed) == "$0.0000590"
    assert cost_text(1234.5, 1.0, "8x Tesla V100-SXM2-16GB", prices) == "$1,230"
    assert [energy_text(j) for j in (12.0, 4500.0, 7.2e6, float("nan"))] == [
        "12.0 J", "4.50 kJ", "2.00 kWh", "n/m"]
    assert significant(0.000123456) == "0.000123" and significant(999.7) == "1,000"
    assert significant(12.345) == "12.3"
