"""The dashboard's Ladder tab (workbench/views/ladder.py) without a browser: what it draws on a
ladder store, its figures, the sidebar's picks, and the line it shows on a store without one.
(tests/browser/test_browser.py draws it in Chromium with hostile names.)"""
from __future__ import annotations

import panel as pn
import pytest

import workbench
from workbench import testing as T
from workbench.views.ladder import NONE, Ladder, figures, ladder_of
from workbench.views.selection import Selection


@pytest.fixture(scope="module")
def ladder_store(tmp_path_factory):
    path = tmp_path_factory.mktemp("ladder-view") / "store"
    T.make_ladder_store(path, {"adamw": 1.0, "fast": 2.0, "slow": 0.5},
                        rungs=T.LADDER_RUNGS[:2], seeds=3)
    return path


def test_the_tab_draws_the_speedups_and_one_loss_plot_per_rung(ladder_store):
    selection = Selection(store_path=str(ladder_store))
    view = Ladder(selection=selection)
    assert not view.failure.visible
    kinds = [type(o).__name__ for o in view._body.objects]
    assert kinds == ["HoloViews", "DataFrame", "Markdown"] + ["HoloViews"] * 4  # loss, D_eff
    assert "pb-ladder-deff" in view._body.objects[4].css_classes
    notes = view._body.objects[2].object
    assert "fast: faster than adamw at every rung" in notes
    table = view._body.objects[1].object
    assert list(table["rung"]) == ["gpt_tiny", "gpt_tiny", "gpt_small", "gpt_small"]
    assert list(table["seeds (candidate / reference)"]) == ["3 / 3"] * 4
    # the same numbers as the API's
    api = workbench.open(ladder_store).ladder()
    assert ladder_of(selection)["rungs"] == api["rungs"]
    fast = api["rungs"][0]["speedups"]["fast"]
    assert table.iloc[0]["speedup"].startswith(f"{fast['value']:.3f}")


def test_the_sidebar_picks_rungs_and_candidates(ladder_store):
    selection = Selection(store_path=str(ladder_store))
    view = Ladder(selection=selection)
    selection.param.update(algorithms=["adamw", "slow"], workloads=["gpt_small"])
    table = view._body.objects[1].object
    assert list(table["algorithm"]) == ["slow"] and list(table["rung"]) == ["gpt_small"]
    assert len(view._body.objects) == 5  # speedups, table, verdicts, one rung's two plots


def test_figures_name_each_rung_and_the_speedups(ladder_store):
    names = set(figures(Selection(store_path=str(ladder_store))))
    assert names == {"ladder_loss_gpt_tiny", "ladder_loss_gpt_small", "ladder_speedup",
                     "ladder_deff_gpt_tiny", "ladder_deff_gpt_small"}


def test_a_store_without_ladder_runs_says_so(fake_store):
    selection = Selection(store_path=str(fake_store))
    view = Ladder(selection=selection)
    assert not view.failure.visible
    assert [o.object for o in view._body.objects] == [NONE]
    assert figures(selection) == {}
    assert "pb-ladder" in pn.panel(view).css_classes  # its layout builds


def test_a_rung_with_fewer_than_3_budgets_draws_with_the_cli_s_warning(tmp_path):
    """One budget per rung: no fit and no speedup; the tab (and the report, which renders the
    same view) draws each rung's losses, a line instead of the speedup plot, and the warning
    `pacebench ladder` prints (it failed to render: "not enough values to unpack")."""
    from workbench import ladder as L
    from workbench.views.formats import md
    from workbench.views.ladder import NO_SPEEDUP

    path = tmp_path / "store"
    T.make_ladder_store(path, rungs=T.LADDER_RUNGS[:1], budgets=(1,), seeds=2)
    view = Ladder(selection=Selection(store_path=str(path)))
    assert not view.failure.visible
    texts = [o.object for o in view._body.objects if isinstance(o, pn.pane.Markdown)]
    warning = workbench.open(path).ladder()["rungs"][0]["warnings"][0]
    assert "needs 3 or more" in warning and L.MIN_FIT_BUDGETS >= 3
    assert texts == [NO_SPEEDUP, f"warning ({md('gpt_tiny')}): {md(warning)}"]
    pn.panel(view).get_root()  # Bokeh renders every part
    out = tmp_path / "r.html"
    workbench.open(path).report(out)
    assert "No equal-loss speedup to draw here" in out.read_text()
