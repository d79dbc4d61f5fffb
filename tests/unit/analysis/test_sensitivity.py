"""Relaxed targets, rank shifts, pool sensitivity and the eval share of wall clock, each on
hand-computed cases (workbench/sensitivity.py, spec.relaxed_goal, query.first_hits,
costs.eval_share, `pacebench score`)."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

import workbench
from runners.cli import main
from workbench import query, sensitivity
from workbench.spec import SpecError, Target, relaxed_goal
from workbench.testing import make_curve_store, make_store, tiny_times

# digits_mlp: accuracy, maximised, validation target 0.9833 (relaxed by 0.1: 0.88497);
# synthetic: loss, minimised, validation target 0.0731 (relaxed by 0.1: 0.08041).
CURVES = {
    ("a", "digits_mlp", 0, 0): [0.5, 0.9, 0.99],     # hit at eval 2; relaxed: eval 1
    ("b", "digits_mlp", 0, 0): [0.5, 0.89, 0.95],    # a miss; relaxed: eval 1
    ("a", "synthetic", 0, 0): [0.2, 0.08, 0.07],     # hit at eval 2; relaxed: eval 1
    ("b", "synthetic", 0, 0): [0.2, 0.1, 0.075],     # a miss; relaxed: eval 2
}
SECONDS = {"a": 1.0, "b": 2.0}       # training seconds per eval
EVAL_COST = {"a": 0.25, "b": 2.0}    # eval seconds per eval


@pytest.fixture(scope="module")
def curves(tmp_path_factory):
    path = tmp_path_factory.mktemp("curves") / "store"
    make_curve_store(path, CURVES, SECONDS, EVAL_COST)
    return str(path)


def _score(capsys, *argv) -> dict:
    assert main(["score", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_a_relaxed_target_is_easier_in_its_direction_and_only_in_0_to_1():
    easier = Target("loss", "min", 2.0, 3.0).relaxed(0.1)
    assert (easier.validation, easier.test) == pytest.approx((2.2, 3.3))
    easier = Target("accuracy", "max", 0.8, 0.5).relaxed(0.25)
    assert (easier.validation, easier.test) == pytest.approx((0.6, 0.375))
    assert Target("loss", "min", 2.0, 3.0).relaxed(0) == Target("loss", "min", 2.0, 3.0)
    assert list(relaxed_goal([1.0, 1.0], ["min", "max"], 0.5)) == [1.5, 0.5]
    for bad in (-0.1, 1.0, math.nan, True, "0.1"):
        with pytest.raises(SpecError, match=r"must be a number in \[0, 1\)"):
            relaxed_goal(1.0, "min", bad)


def test_relaxing_recomputes_first_hits_from_the_eval_rows(curves, capsys):
    plain = _score(capsys, "--store", curves)
    assert plain["time_to_target"] == {"a": {"digits_mlp": 3.0, "synthetic": 3.0},
                                       "b": {"digits_mlp": None, "synthetic": None}}
    assert plain["relax_targets"] == 0.0
    relaxed = _score(capsys, "--store", curves, "--relax-targets", "0.1")
    # a: eval 1 on both (2 x 1 s); b: eval 1 on digits_mlp (2 x 2 s), eval 2 on synthetic (3 x 2 s)
    assert relaxed["time_to_target"] == {"a": {"digits_mlp": 2.0, "synthetic": 2.0},
                                         "b": {"digits_mlp": 4.0, "synthetic": 6.0}}
    assert relaxed["relax_targets"] == 0.1
    assert any(n.startswith("targets relaxed by 10 %") for n in relaxed["notes"])
    # b's ratios 2 and 3: exact score ((4 - 2) + (4 - 3)) / (3 x 2) = 0.5; a is the fastest
    result = workbench.open(curves).score_result(relax_targets=0.1)
    exact = result.table.set_index("algorithm")["exact_score"]
    assert exact["a"] == 1.0 and exact["b"] == pytest.approx(0.5)
    steps = _score(capsys, "--store", curves, "--relax-targets", "0.1", "--time-axis", "steps")
    assert steps["time_to_target"]["b"] == {"digits_mlp": 50.0, "synthetic": 75.0}
    budget = workbench.open(curves).budget(relax_targets=0.1)
    assert budget["relax_targets"] == 0.1


def test_a_bad_relaxation_is_one_line(curves, capsys):
    assert main(["score", "--store", curves, "--relax-targets", "1"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "error: --relax-targets 1.0: must be a number in [0, 1), e.g. 0.1 (targets " \
                  "10 % easier)"
    with pytest.raises(ValueError, match=r"--relax-targets -0.5: must be a number in \[0, 1\)"):
        workbench.open(curves).score(relax_targets=-0.5)


def test_first_hits_unrelaxed_are_the_run_tables(tmp_path):
    store = make_store(tmp_path / "s", studies=2, trials=3, n_evals=12, diverged=2)
    runs = workbench.open(tmp_path / "s").runs()
    hits = query.first_hits(store, runs, 0.0).set_index("run_id")
    table = runs.set_index("run_id")[list(query.FIRST_HIT_COLUMNS)]
    assert table["reached_target"].any() and not table["reached_target"].all()
    for column in query.FIRST_HIT_COLUMNS:
        assert hits[column].reindex(table.index).astype(object).fillna(-1).tolist() == \
            table[column].astype(object).fillna(-1).tolist(), column


def test_eval_share_is_eval_seconds_over_wall_seconds_of_the_last_eval_rows(curves, capsys):
    # a: 3 evals of 1 s training and 0.25 s eval: 0.75 / 3.75; b: 2 s and 2 s: 6 / 12
    share = _score(capsys, "--store", curves)["eval_share"]
    assert share == {"a": {"digits_mlp": 0.2, "synthetic": 0.2},
                     "b": {"digits_mlp": 0.5, "synthetic": 0.5}}


def test_rank_shift_probabilities_are_the_bootstraps(tmp_path, capsys):
    # a: every study hits at eval 2 (3 s, 75 steps); b (2.5 s per eval): study 0 at eval 0
    # (2.5 s, 25 steps), studies 1 and 2 at eval 1 (5 s, 50 steps). By training seconds a is
    # first (medians 3 < 5) and b beats it in a resample when 2 or 3 of its 3 draws are study 0:
    # 3 (1/3)^2 (2/3) + (1/3)^3 = 7/27. By steps b always wins.
    curves = {("a", "digits_mlp", s, 0): [0.5, 0.6, 0.99] for s in range(3)}
    curves[("b", "digits_mlp", 0, 0)] = [0.99, 0.99, 0.99]
    curves.update({("b", "digits_mlp", s, 0): [0.5, 0.99, 0.99] for s in (1, 2)})
    make_curve_store(tmp_path / "s", curves, {"a": 1.0, "b": 2.5})
    out = _score(capsys, "--store", str(tmp_path / "s"), "--rank-shift", "steps")
    shift = out["rank_shift"]
    assert (shift["a"]["rank_train"], shift["a"]["rank_steps"]) == (1, 2)
    assert (shift["b"]["rank_train"], shift["b"]["rank_steps"]) == (2, 1)
    assert shift["b"]["p_rank_train"][0] == pytest.approx(7 / 27, abs=0.05)
    assert shift["a"]["p_rank_train"] == pytest.approx(
        [1 - shift["b"]["p_rank_train"][0], shift["b"]["p_rank_train"][0]])
    assert shift["b"]["p_rank_steps"] == [1.0, 0.0]
    assert out["rank_shift_spearman"] == -1.0
    assert "rank_shift" not in _score(capsys, "--store", str(tmp_path / "s"))


def test_pool_sensitivity_by_hand():
    # w1: a 1, b 10, c 100 (b and c beyond 4x); w2: only b reaches. Full pool: a 0.5, b 0.5,
    # c 0. Without a, b is the fastest on both: 1.0. Without b nobody reaches w2: a stays 0.5.
    times = tiny_times({"a": {"w1": 1.0, "w2": np.inf}, "b": {"w1": 10.0, "w2": 1.0},
                        "c": {"w1": 100.0, "w2": np.inf}})
    pool = sensitivity.pool_sensitivity(times)
    assert pool["a"] == {"score": 0.5, "without": {"b": 0.5, "c": 0.5}, "largest_change": 0.0}
    assert pool["b"] == {"score": 0.5, "without": {"a": 1.0, "c": 0.5}, "largest_change": 0.5}
    assert pool["c"] == {"score": 0.0, "without": {"a": 0.0, "b": 0.0}, "largest_change": 0.0}


def test_spearman_and_ranks_follow_the_score_tables_order():
    times = tiny_times({"a": {"w": 1.0}, "b": {"w": 2.0}, "c": {"w": 2.0}})
    assert sensitivity.point_ranks(times).to_dict() == {"a": 1, "b": 2, "c": 2}  # tie: shared
    shift = {"a": {"rank_x": 1, "rank_y": 3}, "b": {"rank_x": 2, "rank_y": 2},
             "c": {"rank_x": 3, "rank_y": 1}}
    assert sensitivity.spearman(shift, "x", "y") == -1.0


def test_the_dashboard_shows_the_commands_numbers(tmp_path, capsys):
    from workbench.views.costs import Costs, eval_share_frame
    from workbench.views.leaderboard import Leaderboard
    from workbench.views.selection import Selection
    from workbench.views.sensitivity import pool_frame, rank_shift_frame

    curves = {(a, w, s, 0): values for s in range(3)
              for (a, w, _, _), values in CURVES.items()}
    make_curve_store(tmp_path / "s", curves, SECONDS, EVAL_COST)
    cli = _score(capsys, "--store", str(tmp_path / "s"), "--relax-targets", "0.1",
                 "--rank-shift", "steps")
    selection = Selection(store_path=str(tmp_path / "s"))
    board = Leaderboard(selection=selection, live=True, show_sensitivity=True)
    selection.relax_targets = 0.1
    assert not board.failure.visible
    scores = board._scores.value.set_index("algorithm")["score"]
    assert scores.round(6).to_dict() == cli["scores"]
    ranks = rank_shift_frame(selection).set_index("algorithm")
    for algorithm, entry in cli["rank_shift"].items():
        assert (ranks.loc[algorithm, "rank_train"], ranks.loc[algorithm, "rank_steps"]) == \
            (entry["rank_train"], entry["rank_steps"])
    pool = pool_frame(selection).set_index("algorithm")["largest_change"]
    assert {a: round(v, 6) for a, v in pool.items()} == \
        {a: e["largest_change"] for a, e in cli["pool_sensitivity"].items()}
    costs = Costs(selection=selection, live=True, show_eval_share=True)
    assert not costs.failure.visible
    share = eval_share_frame(selection, ["digits_mlp", "synthetic"]).set_index("algorithm")
    assert share.to_dict("index") == {"a": {"digits_mlp": "20.0 %", "synthetic": "20.0 %"},
                                      "b": {"digits_mlp": "50.0 %", "synthetic": "50.0 %"}}
    assert costs._share.visible and len(costs._share.value) == 2


def test_algorithms_equal_in_score_share_a_rank():
    """Two algorithms that both missed everything (score 0) are tied, not 1st and 2nd."""
    from workbench.sensitivity import _tied_ranks, spearman

    assert list(_tied_ranks([0.0, 0.0, 1.0], [0.0, 0.0, 1.0])) == [2, 2, 1]
    assert list(_tied_ranks([0.5, 0.5, 0.2], [0.6, 0.4, 0.2])) == [1, 2, 3]  # exact breaks it
    shift = {"a": {"rank_train": 1, "rank_steps": 1}, "b": {"rank_train": 1, "rank_steps": 2}}
    assert math.isnan(spearman(shift, "train", "steps"))  # one clock ties everyone
    shift["c"] = {"rank_train": 3, "rank_steps": 3}
    assert spearman(shift, "train", "steps") == pytest.approx(0.8660254)  # scipy's, with ties


@pytest.mark.parametrize("held_out", [False, True])
def test_pool_sensitivity_is_each_smaller_pools_score_table(held_out):
    """One call of the rules for every pool (NaN for the one left out) gives exactly what the
    score table of each smaller pool gives: times near the 4x cut-off, inf, NaN, a workload
    only the left-out algorithm reaches, and with the held-out variant rule."""
    from workbench import scoring

    rng = np.random.default_rng(4)
    workloads = ["w1", "w2", "w3", "w1_v"]
    table = {f"a{i}": {w: float(rng.choice([1.0, 2.0, 3.9, 4.1, 7.0, np.inf, np.nan]))
                       for w in workloads} for i in range(6)}
    for a in table:
        table[a]["w3"] = 5.0 if a == "a0" else np.inf
    times = tiny_times(table)
    config = scoring.ScoringConfig(base_workloads=("w1", "w2", "w3"), held_out={"w1_v": "w1"},
                                   apply_held_out=True) if held_out else \
        scoring.ScoringConfig(base_workloads=("w1", "w2", "w3"))
    pool = sensitivity.pool_sensitivity(times, config)
    names = sorted(table)
    full = scoring.score_table_of_times(times, config).set_index("algorithm")["score"]
    for left in names:
        rest = [a for a in names if a != left]
        scores = scoring.score_table_of_times(times.sel(algorithm=rest), config) \
            .set_index("algorithm")["score"]
        for a in rest:
            assert pool[a]["without"][left] == float(scores[a])
    assert {a: pool[a]["score"] for a in names} == {a: float(full[a]) for a in names}
    assert sum(e["largest_change"] != 0 for e in pool.values()) >= 2  # the pool matters here
