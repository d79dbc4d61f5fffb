"""Variant robustness: base/variant ratios, the robustness score and the held-out rule's effect on
the benchmark score, on hand-made cubes with hand-computed answers; then the view over a synthetic
store with variants, over a tiny AlgoPerf import, and (slow) over the real v0.5 logs."""
from __future__ import annotations

import dataclasses
import math

import holoviews as hv
import numpy as np
import panel as pn
import pytest

from workbench import robustness, scoring
from workbench.testing import make_store, tiny_cube
from workbench.views.robustness import (BASE_MISS, Robustness, figures, pair_frame,
                                        summary_frame)
from workbench.views.selection import Selection

# Workloads: w with variants w_t and w_n; x with none. One study, one trial: (eval index, s).
CUBE = {
    ("a", "w", 0, 0): (1, 100.0), ("a", "w_t", 0, 0): (1, 200.0),
    ("a", "w_n", 0, 0): (1, 150.0), ("a", "x", 0, 0): (1, 10.0),
    ("b", "w", 0, 0): (1, 150.0), ("b", "w_t", 0, 0): None,
    ("b", "w_n", 0, 0): (1, 300.0), ("b", "x", 0, 0): (1, 20.0),
    ("c", "w", 0, 0): None, ("c", "w_t", 0, 0): (1, 100.0), ("c", "x", 0, 0): (1, 20.0),
}
BASE_OF = {"w_t": "w", "w_n": "w"}


@pytest.fixture
def cube():
    return tiny_cube(CUBE, BASE_OF)


def _rows(table, key="workload"):
    return {(r["algorithm"], r[key]): r for r in table.to_dict("records")}


def test_variant_pairs_come_from_the_cube_coordinates(cube):
    assert robustness.variant_pairs(cube) == {"w_n": "w", "w_t": "w"}
    alone = tiny_cube({("a", "w_t", 0, 0): (1, 1.0)}, {"w_t": "w"})  # its base is not there
    assert robustness.variant_pairs(alone) == {}
    assert robustness.variant_table(alone).empty


def test_variant_table_ratio_is_variant_over_base(cube):
    rows = _rows(robustness.variant_table(cube))
    assert rows[("a", "w_t")]["ratio"] == 2.0 and rows[("a", "w_n")]["ratio"] == 1.5
    assert math.isinf(rows[("b", "w_t")]["ratio"])       # base reached, variant missed
    assert rows[("b", "w_n")]["ratio"] == 2.0
    assert math.isnan(rows[("c", "w_t")]["ratio"])       # base missed: no ratio
    assert rows[("c", "w_t")]["variant_reached"] and not rows[("c", "w_t")]["base_reached"]
    assert math.isnan(rows[("c", "w_n")]["variant_time"])  # no runs


def test_robustness_score_by_hand(cube):
    table = robustness.variant_table(cube)
    scores = robustness.robustness_scores(table).set_index("algorithm")
    assert scores.loc["a", "reached_share"] == 1.0 and scores.loc["a", "median_slowdown"] == 1.75
    assert scores.loc["b", "variants_reached"] == 1 and scores.loc["b", "variants"] == 2
    assert scores.loc["b", "reached_share"] == 0.5
    assert scores.loc["b", "median_slowdown"] == 2.0 and scores.loc["b", "slowdowns"] == 1
    # c never ran w_n: not counted unless it is required (held out)
    assert scores.loc["c", "variants"] == 1 and scores.loc["c", "reached_share"] == 1.0
    assert scores.loc["c", "slowdowns"] == 0 and math.isnan(scores.loc["c", "median_slowdown"])
    required = robustness.robustness_scores(table, ["w_t", "w_n"]).set_index("algorithm")
    assert required.loc["c", "variants"] == 2 and required.loc["c", "reached_share"] == 0.5


def test_held_out_rule_one_variant_per_base_matches_scoring_and_hand(cube):
    config = scoring.ScoringConfig(base_workloads=("w", "x"), held_out={"w_t": "w"},
                                   apply_held_out=True)
    frame, pairs = robustness.held_out_scores(cube, config)
    assert pairs == {"w_t": "w"}
    frame = frame.set_index("algorithm")
    # Without: w best 100 (a); x best 10. b: ratios 1.5 and 2 -> (2.5 + 2) / 6 = 0.75;
    # c: w missed, x ratio 2 -> 2 / 6.
    assert frame.loc["a", "exact_without"] == pytest.approx(1.0)
    assert frame.loc["b", "exact_without"] == pytest.approx(0.75)
    assert frame.loc["c", "exact_without"] == pytest.approx(2 / 6)
    # With: b missed w_t, so its w is a miss -> 2 / 6; a keeps 1 (its w_t is the fastest, as
    # c's faster w_t does not count: c missed the base w).
    assert frame.loc["b", "exact_with"] == pytest.approx(2 / 6)
    assert frame.loc["a", "exact_with"] == pytest.approx(1.0)
    assert frame.loc["b", "reached_with"] == 1 and frame.loc["b", "reached_without"] == 2
    # The 'with' score is the leaderboard's under the same config, 'without' that of no rule.
    board = scoring.score_table(cube, config).set_index("algorithm")
    plain = scoring.score_table(cube, dataclasses.replace(config, held_out={},
                                                          apply_held_out=False))
    assert np.allclose(frame["score_with"], board.loc[frame.index, "score"])
    assert np.allclose(frame["score_without"], plain.set_index("algorithm").loc[frame.index,
                                                                                "score"])


def test_held_out_rule_fastest_on_the_variant_counts_only_finite_bases():
    # a: w 100, w_t 100; b: w 120, w_t 300; c misses w but has w_t in 10 s. The 4x cut-off on
    # w_t is 4 x 100 (c does not count), so b keeps w; counting c would cut b at 40 s.
    cube = tiny_cube({("a", "w", 0, 0): (1, 100.0), ("a", "w_t", 0, 0): (1, 100.0),
                      ("b", "w", 0, 0): (1, 120.0), ("b", "w_t", 0, 0): (1, 300.0),
                      ("c", "w", 0, 0): None, ("c", "w_t", 0, 0): (1, 10.0)}, {"w_t": "w"})
    frame, _ = robustness.held_out_scores(cube)  # no config: every variant of a base is held out
    exact = frame.set_index("algorithm")["exact_with"]
    assert exact["b"] == pytest.approx((4 - 1.2) / 3) and exact["c"] == 0.0


def test_several_variants_per_base_each_must_pass(cube):
    frame, pairs = robustness.held_out_scores(cube)  # our studies: no config
    assert pairs == {"w_t": "w", "w_n": "w"}
    exact = frame.set_index("algorithm")["exact_with"]
    # b passes w_n (300 <= 4 x 150) but misses w_t: its w is a miss. a passes both.
    assert exact["a"] == pytest.approx(1.0) and exact["b"] == pytest.approx(2 / 6)
    # c's w_n has no runs: a held-out variant without runs is a miss (c missed w anyway).
    assert exact["c"] == pytest.approx(2 / 6)
    # a single pair gives exactly scoring's rule
    times = scoring.workload_times(cube)
    one = robustness.held_out_times(times, ["w", "x"], {"w_n": "w"})
    config = scoring.ScoringConfig(base_workloads=("w", "x"), held_out={"w_n": "w"},
                                   apply_held_out=True)
    assert one.equals(scoring.apply_rules(times, config))


def test_held_out_scores_without_variants_are_equal():
    cube = tiny_cube({("a", "w", 0, 0): (1, 100.0), ("b", "w", 0, 0): (1, 300.0)})
    frame, pairs = robustness.held_out_scores(cube)
    assert pairs == {}
    assert np.allclose(frame["score_with"], frame["score_without"])


# -- the view ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def variant_store(tmp_path_factory):
    path = tmp_path_factory.mktemp("robustness") / "store"
    make_store(path, workloads=("digits_mlp", "digits_mlp_tanh", "digits_mlp_layernorm"),
               studies=2, trials=2)
    return path


def test_view_on_a_store_with_variants(variant_store):
    sel = Selection(store_path=str(variant_store))
    view = Robustness(selection=sel)
    assert view.held_out is False  # our studies record no rules: the leaderboard's is off
    expected = robustness.variant_table(sel.cube)
    pairs = pair_frame(sel, ["fast", "slow"])
    assert list(pairs["algorithm"]) == ["fast", "fast", "slow", "slow"]
    rows = expected.sort_values(["algorithm", "workload"]).to_dict("records")
    assert all(np.isfinite(row["ratio"]) for row in rows)  # make_store: every median reaches
    for shown, row in zip(pairs.to_dict("records"), rows):
        assert shown["variant"] == row["workload"]
        assert shown["ratio"] == f"{row['variant_time'] / row['base_time']:.2f}x"
    summary = summary_frame(sel, held_out=False).set_index("algorithm")
    robust = robustness.robustness_scores(expected).set_index("algorithm")
    assert summary.loc["fast", "reached_share"] == robust.loc["fast", "reached_share"]
    scores, _ = robustness.held_out_scores(sel.cube)
    view.held_out = True  # the toggle feeds the other score into the table
    assert "with the held-out rule" in view._summary.titles["score"]
    shown = view._summary.value.set_index("algorithm")["score"]
    assert np.allclose(shown, scores.set_index("algorithm").loc[shown.index, "score_with"])
    assert pn.panel(view).get_root() is not None
    assert set(figures(sel)) == {"variant_ratios", "held_out_scores"}
    sel.workloads = ["digits_mlp"]  # no variant shown
    assert view._pairs.value.empty and "No variant workload" in view._empty.object
    assert "variant_ratios" not in figures(sel)


def test_view_on_an_algoperf_import(tmp_path):
    from algoperf_trees import TARGETS, write_algoperf_tree

    from workbench.importers.algoperf import import_algoperf

    logs, targets = write_algoperf_tree(tmp_path)
    import_algoperf(logs, tmp_path / "store", targets)
    sel = Selection(store_path=str(tmp_path / "store"))
    view = Robustness(selection=sel)
    assert view.held_out is True  # AlgoPerf v0.5's rules apply the held-out rule
    assert TARGETS["held_out_workloads"] == ["wa_tanh"]
    # Medians: wa fast 60, baseline 110, slow miss; wb fast 120, baseline 200, slow 400;
    # wa_tanh fast 90, slow 90, baseline miss.
    scores, held = robustness.held_out_scores(sel.cube, sel.scoring_config)
    exact = scores.set_index("algorithm")
    assert held == {"wa_tanh": "wa"}
    assert exact.loc["baseline", "exact_without"] == pytest.approx(
        ((4 - 110 / 60) + (4 - 200 / 120)) / 6)
    assert exact.loc["baseline", "exact_with"] == pytest.approx((4 - 200 / 120) / 6)
    assert exact.loc["slow", "exact_with"] == pytest.approx((4 - 400 / 120) / 6)
    board = scoring.score_table(sel.cube, sel.scoring_config).set_index("algorithm")
    assert np.allclose(exact["score_with"], board.loc[exact.index, "score"])
    pairs = pair_frame(sel, ["fast", "baseline", "slow"]).set_index("algorithm")
    assert pairs.loc["fast", "ratio"] == "1.50x" and pairs.loc["baseline", "ratio"] == "miss"
    assert pairs.loc["slow", "ratio"] == BASE_MISS and pairs.loc["fast", "held_out"] == "yes"
    assert pairs.loc["fast", "base_time"] == "60.0 s"
    summary = view._summary.value.set_index("algorithm")
    assert summary.loc["baseline", "reached"] == "0/1" and summary.loc["fast", "reached"] == "1/1"
    assert summary.loc["fast", "median_slowdown"] == "1.50x (n=1)"
    plot = figures(sel)["variant_ratios"]  # rows bottom-up: slow, baseline, fast (best on top)
    image = plot.traverse(lambda e: e, [hv.Image])[0]
    assert image[0, 2] == pytest.approx(1.5) and np.isnan(image[0, 1])
    cells = plot.traverse(lambda e: e, [hv.Labels])[0].dframe().set_index("row")["text"]
    assert cells.to_dict() == {0: "base miss", 1: "miss", 2: "1.50x"}
    assert pn.panel(view).get_root() is not None


@pytest.mark.slow
def test_real_v05_logs_held_out_rule_and_ratios(algoperf_v05):
    from algoperf_trees import PUBLISHED_V05_EXTERNAL

    sel = Selection(store_path=str(algoperf_v05.path))
    scores, held = robustness.held_out_scores(sel.cube, sel.scoring_config)
    assert len(held) == 6
    with_rule = scores.set_index("algorithm")["score_with"]
    for name, published in PUBLISHED_V05_EXTERNAL.items():
        assert with_rule[name] == pytest.approx(published, abs=1e-4), name
    # The rule only takes credit away (research/algoperf.md 5.5: SF-AdamW loses OGBG to it).
    without = scores.set_index("algorithm")["score_without"]
    assert (without >= with_rule - 1e-12).all()
    assert without["schedule_free_adamw"] > with_rule["schedule_free_adamw"]
    # research/algoperf.md 5.5 raw medians: baseline fastmri 2030 s, fastmri_tanh 4509 s
    rows = _rows(robustness.variant_table(sel.cube))
    assert rows[("baseline", "fastmri_tanh")]["ratio"] == pytest.approx(4509 / 2030, abs=2e-3)
    assert rows[("shampoo_submission", "ogbg_model_size")]["ratio"] == pytest.approx(
        3601 / 3363, abs=2e-3)
