"""AlgoPerf scoring on hand-computed golden cases (research/algoperf.md sections 5 and 8)."""
from __future__ import annotations

import math

import numpy as np
import pytest
import xarray as xr

from workbench import scoring
from workbench.testing import tiny_cube, tiny_times

INF = math.inf

# Golden case: 3 algorithms x 2 workloads (seconds).
#   w1: A 100, B 200, C 500  -> best 100 -> r = 1,   2,   5
#   w2: A 300, B inf, C 200  -> best 200 -> r = 1.5, inf, 1
GOLDEN = {"A": {"w1": 100.0, "w2": 300.0}, "B": {"w1": 200.0, "w2": INF},
          "C": {"w1": 500.0, "w2": 200.0}}


def test_ratios_golden():
    r = scoring.performance_ratios(tiny_times(GOLDEN))
    assert r.sel(workload="w1").values.tolist() == [1.0, 2.0, 5.0]
    assert r.sel(workload="w2").values.tolist() == [1.5, INF, 1.0]


def test_profile_golden_at_1_2_4():
    # rho(tau) = #{w: r <= tau} / 2
    #   tau=1: A {w1} 0.5, B {} 0,     C {w2} 0.5
    #   tau=2: A both 1,   B {w1} 0.5, C {w2} 0.5
    #   tau=4: A 1,        B 0.5,      C 0.5 (r=5 > 4 earns nothing)
    rho = scoring.performance_profile(tiny_times(GOLDEN), taus=[1.0, 2.0, 4.0])
    assert rho.dims == ("algorithm", "tau")
    np.testing.assert_allclose(rho.values, [[0.5, 1.0, 1.0], [0.0, 0.5, 0.5], [0.5, 0.5, 0.5]])
    default = scoring.performance_profile(tiny_times(GOLDEN))
    assert default.sizes["tau"] == 100 and default["tau"].values[[0, 33, 99]].tolist() == [1, 2, 4]


def test_benchmark_score_golden_trapezoid_and_exact():
    # Grid tau_i = 1 + 3i/99 (h = 3/99). For one workload with ratio r, the indicator r <= tau is
    # 0 before the first grid index j with tau_j >= r and 1 from j on, so its trapezoid area is
    # h (99 - j) + h/2 = h (99.5 - j) for j >= 1, and 99 h = 3 for r = 1 (j = 0).
    #   r = 1:   area 3
    #   r = 1.5: j = 17 (tau_17 = 1.5152): area (3/99)(82.5) = 2.5
    #   r = 2:   j = 33 (tau_33 = 2):      area (3/99)(66.5) = 2.0151515...
    #   r = 5, inf: area 0
    # score = (sum of areas) / n / 3 with n = 2:
    #   A: (3 + 2.5) / 6 = 0.9166667        exact: (3 + 2.5) / 6 = 0.9166667
    #   B: 2.0151515 / 6 = 0.3358586        exact: (4 - 2) / 6  = 0.3333333
    #   C: 3 / 6 = 0.5                      exact: (0 + 3) / 6  = 0.5
    times = tiny_times(GOLDEN)
    np.testing.assert_allclose(scoring.benchmark_scores(times).values,
                               [5.5 / 6, (3 / 99) * 66.5 / 6, 0.5], rtol=1e-12)
    np.testing.assert_allclose(scoring.exact_scores(times).values, [5.5 / 6, 2 / 6, 0.5],
                               rtol=1e-12)


def test_one_algorithm_alone_scores_finite_share():
    alone = tiny_times({"A": {"w1": 10.0, "w2": INF, "w3": 30.0}})
    assert scoring.benchmark_scores(alone).item() == pytest.approx(2 / 3)
    assert scoring.exact_scores(alone).item() == pytest.approx(2 / 3)


def test_nan_is_a_miss_and_denominator_is_configurable():
    times = tiny_times({"A": {"w1": 10.0, "w2": 20.0}, "B": {"w1": 10.0}})  # B has no w2 result
    r = scoring.performance_ratios(times)
    assert np.isnan(r.sel(algorithm="B", workload="w2"))
    np.testing.assert_allclose(scoring.benchmark_scores(times).values, [1.0, 0.5])
    # the official scorer divides by the configured number of workloads
    np.testing.assert_allclose(scoring.benchmark_scores(times, num_workloads=4).values, [0.5, 0.25])
    nobody = tiny_times({"A": {"w": INF}, "B": {"w": INF}})
    assert np.isinf(scoring.performance_ratios(nobody)).all()
    assert scoring.benchmark_scores(nobody).values.tolist() == [0.0, 0.0]


def test_study_time_tie_break_by_eval_index_then_the_smallest_time_then_the_lowest_trial():
    # Trial 0 is fastest (50 s) but met the target at a later eval (5): the earliest eval index
    # (3) comes first; among trials 1 (80 s) and 2 (60 s), tied there, the smaller time: trial
    # 2 (AlgoPerf's idxmin takes the first in its directory listing, which a file system
    # orders as it likes; the smaller time reproduces every published board).
    cube = tiny_cube({("A", "w", 0, 0): (5, 50.0), ("A", "w", 0, 1): (3, 80.0),
                      ("A", "w", 0, 2): (3, 60.0), ("A", "w", 0, 3): None,
                      # study 1: trials 1 and 2 tie in eval index and time: the lower, 1
                      ("A", "w", 1, 0): (4, 30.0), ("A", "w", 1, 1): (2, 70.0),
                      ("A", "w", 1, 2): (2, 70.0)})
    assert scoring.study_times(cube).sel(algorithm="A", workload="w").values.tolist() == \
        [60.0, 70.0]
    chosen = scoring.study_choices(cube).sel(algorithm="A", workload="w")
    assert chosen["trial"].values.tolist() == [2.0, 1.0]
    assert chosen["time_to_target"].values.tolist() == [60.0, 70.0]
    # the run ids name the trials chosen
    assert chosen["run_id"].values.tolist() == [
        cube["run_id"].sel(algorithm="A", workload="w", study=s, trial=t, seed=0).item()
        for s, t in ((0, 2), (1, 1))]


def test_study_times_inf_and_nan():
    cube = tiny_cube({("A", "w", 0, 0): None, ("A", "w", 0, 1): None,  # ran, none reached
                      ("A", "w", 1, 0): (2, 20.0),
                      ("B", "w", 1, 0): (1, 10.0)})                   # B has no study 0
    st = scoring.study_times(cube)
    assert st.dims == ("algorithm", "workload", "study")
    assert st.sel(algorithm="A", workload="w").values.tolist() == [INF, 20.0]
    b = st.sel(algorithm="B", workload="w").values
    assert np.isnan(b[0]) and b[1] == 10.0


def test_median_over_three_studies_with_inf():
    # A: studies 10, inf, 30 -> median 30;  B: inf, inf, 10 -> inf;  C: 10, 20, inf -> 20
    trials = {}
    for algorithm, times in {"A": (10, None, 30), "B": (None, None, 10), "C": (10, 20, None)}.items():
        for study, t in enumerate(times):
            trials[(algorithm, "w", study, 0)] = None if t is None else (1, float(t))
    wt = scoring.workload_times(tiny_cube(trials))
    assert wt.sel(workload="w").values.tolist() == [30.0, INF, 20.0]


def test_median_over_present_studies_and_missing_workload():
    # A on w: studies 0 and 1 present (10, 30), study 2 absent -> median 20.
    # B never ran w2 -> NaN.
    cube = tiny_cube({("A", "w", 0, 0): (1, 10.0), ("A", "w", 1, 0): (1, 30.0),
                      ("B", "w", 0, 0): (1, 5.0), ("B", "w", 1, 0): (1, 5.0),
                      ("B", "w", 2, 0): (1, 5.0), ("A", "w2", 0, 0): (1, 7.0)})
    wt = scoring.workload_times(cube)
    assert wt.sel(algorithm="A", workload="w").item() == 20.0
    assert np.isnan(wt.sel(algorithm="B", workload="w2").item())


def test_scored_workloads_and_score_table():
    cube = tiny_cube({("A", "w1", 0, 0): (1, 100.0), ("B", "w1", 0, 0): (1, 200.0),
                      ("A", "w2", 0, 0): None, ("B", "w2", 0, 0): (1, 50.0),
                      ("A", "w1_tanh", 0, 0): (1, 1.0), ("B", "w1_tanh", 0, 0): None},
                     base_of={"w1_tanh": "w1"})
    assert scoring.scored_workloads(cube) == ["w1", "w2"]  # the variant is not scored
    table = scoring.score_table(cube)
    assert list(table.columns) == ["algorithm", "score", "exact_score", "workloads_reached",
                                   "workloads_scored"]
    # A: r = (1, inf) -> 0.5.  B: r = (2, 1) -> (2.0151515 + 3) / 6 = 0.8358586; exact 5/6.
    assert table["algorithm"].tolist() == ["B", "A"]
    np.testing.assert_allclose(table["score"], [(2.0151515151515 + 3) / 6, 0.5], rtol=1e-9)
    np.testing.assert_allclose(table["exact_score"], [5 / 6, 0.5])
    assert table["workloads_reached"].tolist() == [2, 1]
    assert table["workloads_scored"].tolist() == [2, 2]
    only_variants = tiny_cube({("A", "v", 0, 0): (1, 1.0)}, base_of={"v": "b"})
    assert scoring.scored_workloads(only_variants) == ["v"]


def test_bootstrap_interval_brackets_the_score():
    trials = {}
    for study, (a, b) in enumerate([(10, 20), (12, 11), (30, 15)]):
        trials[("A", "w1", study, 0)] = (1, float(a))
        trials[("B", "w1", study, 0)] = (1, float(b))
        trials[("A", "w2", study, 0)] = (1, 5.0)
        trials[("B", "w2", study, 0)] = (1, 10.0)
    cube = tiny_cube(trials)
    boot = scoring.bootstrap_scores(cube, n=400, seed=1, level=0.9)
    assert list(boot.columns) == ["algorithm", "low", "high"]
    table = scoring.score_table(cube).set_index("algorithm")
    for _, row in boot.iterrows():
        assert row["low"] <= table.loc[row["algorithm"], "score"] <= row["high"]
    again = scoring.bootstrap_scores(cube, n=400, seed=1, level=0.9)
    assert boot.equals(again)  # seeded: reproducible
    with pytest.raises(ValueError, match="level"):
        scoring.bootstrap_scores(cube, level=1.5)
    # the two steps the dashboard runs apart (draws once, intervals per filter setting)
    draws = scoring.bootstrap_medians(scoring.study_times(cube), n=400, seed=1)
    assert boot.equals(scoring.bootstrap_interval(draws, level=0.9))
    # a replicate is scored as its own table would be: extra dims are kept, in any order
    for layout in (draws, draws.transpose("workload", "replicate", "algorithm")):
        scores = scoring.benchmark_scores(layout)
        exact = scoring.exact_scores(layout)
        assert scores.dims == exact.dims == ("algorithm", "replicate")
        for r in (0, 7, 399):
            one = scoring.score_table_of_times(draws.isel(replicate=r)).set_index("algorithm")
            for algorithm in ("A", "B"):
                assert scores.sel(algorithm=algorithm, replicate=r) == \
                    pytest.approx(one.loc[algorithm, "score"], abs=1e-12)
                assert exact.sel(algorithm=algorithm, replicate=r) == \
                    pytest.approx(one.loc[algorithm, "exact_score"], abs=1e-12)
    profile = scoring.performance_profile(draws)
    assert profile.dims == ("algorithm", "tau", "replicate")
    xr.testing.assert_equal(profile.sel(replicate=7, drop=True), scoring.performance_profile(
        draws.isel(replicate=7, drop=True)))


def test_speedups_geometric_mean_with_budgets():
    times = tiny_times({"ref": {"w1": 100.0, "w2": 400.0}, "x": {"w1": 50.0, "w2": 100.0},
                        "y": {"w1": 100.0, "w2": INF}})
    # x: sqrt(100/50 * 400/100) = sqrt(8);  ref: 1
    out = scoring.speedups(times, "ref")
    assert out.sel(algorithm="x").item() == pytest.approx(math.sqrt(8))
    assert out.sel(algorithm="ref").item() == 1.0
    assert out.sel(algorithm="y").item() == 0.0  # a miss without budgets: ratio 0
    # with budgets a miss costs budget + 1 s: y = sqrt(100/100 * 400/1000)
    capped = scoring.speedups(times, "ref", budgets={"w1": 1000.0, "w2": 999.0})
    assert capped.sel(algorithm="y").item() == pytest.approx(math.sqrt(0.4))
    with pytest.raises(ValueError, match="unknown reference"):
        scoring.speedups(times, "nope")
    with pytest.raises(ValueError, match="budgets lack"):
        scoring.speedups(times, "ref", budgets={"w1": 1.0})


# Held-out golden case (research/algoperf.md 5.2 item 5): base workloads w1, w2; held-out v1 of w1.
#            w1    w2    v1
#   A       100    10    90
#   B       150    50   400
#   C       inf    20    20
#   D       100    10     -   (no v1 result: NaN)
HELD = {"A": {"w1": 100.0, "w2": 10.0, "v1": 90.0}, "B": {"w1": 150.0, "w2": 50.0, "v1": 400.0},
        "C": {"w1": INF, "w2": 20.0, "v1": 20.0}, "D": {"w1": 100.0, "w2": 10.0}}
V05 = scoring.ScoringConfig(base_workloads=("w1", "w2"), held_out={"v1": "w1"},
                            apply_held_out=True, budgets={"w1": 1000.0, "w2": 100.0})


def test_held_out_rule_golden():
    # 1. v1 is inf where w1 is inf/NaN: C's v1 (20) -> inf, so the best v1 is A's 90, not 20.
    # 2. 4x cut-off on every column: w2 best 10 -> B's 50 > 40 -> inf; v1 best 90 -> B's 400 >
    #    360 -> inf (with C's 20 as the best, A's 90 > 80 would have been cut too).
    # 3. w1 is inf where v1 is inf/NaN: B (v1 cut) and D (no v1 result) lose w1.
    ruled = scoring.held_out_rule(tiny_times(HELD), {"v1": "w1"})
    assert ruled.sel(workload="v1").values.tolist()[:3] == [90.0, INF, INF]
    assert np.isnan(ruled.sel(algorithm="D", workload="v1").item())
    scored = scoring.apply_rules(tiny_times(HELD), V05).transpose("algorithm", "workload")
    assert scored["workload"].values.tolist() == ["w1", "w2"]
    assert scored.values.tolist() == [[100.0, 10.0], [INF, INF], [INF, 20.0], [INF, 10.0]]
    # ratios: A (1, 1), B none, C (-, 2), D (-, 1) -> scores 1, 0, 2.0151515/6, 3/6
    np.testing.assert_allclose(scoring.benchmark_scores(scored).values,
                               [1.0, 0.0, (3 / 99) * 66.5 / 6, 0.5], rtol=1e-12)


def test_plain_rules_cut_off_and_bases_only():
    # Without the held-out rule v1 is just not scored; the cut-off still removes B's w2 (50 > 40).
    plain = scoring.ScoringConfig(base_workloads=("w1", "w2"))
    scored = scoring.apply_rules(tiny_times(HELD), plain).transpose("algorithm", "workload")
    assert scored.values.tolist() == [[100.0, 10.0], [150.0, INF], [INF, 20.0], [100.0, 10.0]]
    cut = scoring.time_cutoff(tiny_times({"A": {"w": 10.0}, "B": {"w": 40.0}, "C": {"w": 40.1}}))
    assert cut.values[:, 0].tolist() == [10.0, 40.0, INF]  # exactly 4x keeps its time
    # A configured base workload without results counts in the denominator.
    wide = scoring.apply_rules(tiny_times(HELD), scoring.ScoringConfig(("w1", "w2", "w3")))
    assert wide.sizes["workload"] == 3 and np.isnan(wide.sel(workload="w3")).all()


def test_scoring_config_round_trip_and_errors():
    assert scoring.ScoringConfig.from_dict(V05.to_dict()) == V05
    with pytest.raises(ValueError, match="unknown scoring config keys"):
        scoring.ScoringConfig.from_dict({"held_outs": {}})
    with pytest.raises(ValueError, match="not base workloads"):
        scoring.ScoringConfig(base_workloads=("w1",), held_out={"v": "w9"})


def test_score_table_with_held_out_config():
    trials = {(a, w, 0, 0): (None if math.isinf(t) else (1, t))
              for a, row in HELD.items() for w, t in row.items()}
    cube = tiny_cube(trials, base_of={"v1": "w1"})
    table = scoring.score_table(cube, V05).set_index("algorithm")
    assert table.loc["A", "score"] == pytest.approx(1.0)
    assert table.loc["B", "score"] == 0.0 and table.loc["B", "workloads_reached"] == 0
    assert table["workloads_scored"].eq(2).all()


def test_algoperf_speedups_count_misses_and_gaps_as_budget():
    # Base workloads w1 (budget 1000 s), w2 (budget 100 s); reference A = (100, 10); no filters.
    #   B: (150, 50)                -> 1 - sqrt(1.5 * 5)
    #   C: (inf -> 1001 s, 20)      -> 1 - sqrt(10.01 * 2)
    #   E: (50, missing -> 101 s)   -> 1 - sqrt(0.5 * 10.1)
    times = {"A": (100.0, 10.0), "B": (150.0, 50.0), "C": (INF, 20.0), "E": (50.0, None)}
    trials = {(a, w, 0, 0): (None if math.isinf(t) else (1, t))
              for a, row in times.items() for w, t in zip(("w1", "w2"), row) if t is not None}
    out = scoring.algoperf_speedups(tiny_cube(trials), V05, "A")
    expected = [0.0, 1 - math.sqrt(1.5 * 5), 1 - math.sqrt(10.01 * 2), 1 - math.sqrt(0.5 * 10.1)]
    np.testing.assert_allclose(out.values, expected, rtol=1e-12, atol=1e-15)
    # Self-tuning budgets are config.self_tuning_budget_factor x the budget: C's miss is 3001 s.
    selfish = scoring.ScoringConfig(**{**V05.to_dict(), "self_tuning_budget_factor": 3.0})
    out = scoring.algoperf_speedups(tiny_cube(trials), selfish, "A", ruleset="self")
    assert out.sel(algorithm="C").item() == pytest.approx(1 - math.sqrt(30.01 * 2))


# -- the one speedup policy and the one score order (CLI, dashboard and report share them) -------
def test_speedup_table_uses_budgets_only_when_every_scored_workload_has_one():
    times = {"A": (100.0, 10.0), "B": (150.0, 50.0), "C": (INF, 20.0)}
    trials = {(a, w, 0, 0): (None if math.isinf(t) else (1, t))
              for a, row in times.items() for w, t in zip(("w1", "w2"), row)}
    cube = tiny_cube(trials)
    per_workload = scoring.workload_times(cube)
    table = scoring.speedup_table(per_workload, "A", V05)
    assert table.attrs["budgets"]
    table = table.set_index("algorithm")
    np.testing.assert_allclose(table["faster_by"], scoring.algoperf_speedups(cube, V05, "A"))
    np.testing.assert_allclose(table["time_ratio"], 1 - table["faster_by"])
    # on another time axis, or without budgets: the plain geometric mean, misses left as they are
    for config, axis in ((V05, "step"), (None, "train_seconds")):
        plain = scoring.speedup_table(per_workload, "A", config, axis=axis)
        assert not plain.attrs["budgets"]
        ratios = plain.set_index("algorithm")["time_ratio"]
        assert ratios["B"] == pytest.approx(math.sqrt(1.5 * 5))
        assert ratios["C"] == math.inf  # C missed w1, which A reached
    assert scoring.uses_budgets(V05, ["w1", "w2"]) and not scoring.uses_budgets(V05, [])
    assert not scoring.uses_budgets(V05, ["w1", "w3"])


def test_default_reference_and_ruleset():
    assert scoring.default_reference(["C", "baseline", "adamw"]) == "baseline"
    assert scoring.default_reference(["C", "adamw", "A"]) == "adamw"
    assert scoring.default_reference(["C", "B"]) == "B"  # the first name, never the top scorer
    assert scoring.default_reference(["Z"]) == "Z" and scoring.default_reference([]) is None
    assert scoring.ruleset_of(["self", "self"]) == "self"
    assert scoring.ruleset_of(["self", "external"]) == scoring.ruleset_of([]) == "external"


def test_one_score_order_ties_by_exact_score_then_name():
    import pandas as pd

    table = pd.DataFrame({"algorithm": ["b", "a", "c", "d"], "score": [0.5, 0.5, 0.5, 0.9],
                          "exact_score": [0.4, 0.4, 0.45, 0.9]})
    assert list(scoring.rank_scores(table)["algorithm"]) == ["d", "c", "a", "b"]


def test_every_score_zero_comes_with_the_reason_and_what_to_change():
    import pandas as pd

    zero = pd.DataFrame({"algorithm": ["a", "b"], "score": [0.0, 0.0],
                         "workloads_reached": [0, 0]})
    reason = scoring.all_zero_reason(zero)
    assert "Every score is 0: no algorithm's median study reached" in reason
    assert "--trials" in reason and "--studies" in reason
    assert "within 4x" in scoring.all_zero_reason(zero.assign(workloads_reached=[1, 0]))
    assert scoring.all_zero_reason(zero.assign(score=[0.5, 0.0])) is None
    assert scoring.all_zero_reason(zero.iloc[:0]) is None


def test_intervals_need_three_studies():
    assert scoring.interval_text(0.5, 0.5, 1) == "n/a (1 study)"
    assert scoring.interval_text(0.4, 0.6, 2) == "n/a (2 studies)"
    assert scoring.interval_text(0.4, 0.6, 3) == "0.400 to 0.600"


# -- the same rules on every time axis (cubes.on_time_axis) -------------------------------------
def _held_as_steps(seconds: float = 7.0):
    """HELD's numbers as steps to target, every run that reached taking `seconds` training s."""
    from workbench.cubes import final_cube
    from workbench.testing import runs_table

    rows = [dict(algorithm=a, workload=w, base_workload="w1" if w == "v1" else w, study=0,
                 trial=0, time=None if math.isinf(t) else seconds,
                 index=None if math.isinf(t) else 1,
                 step_to_target=None if math.isinf(t) else int(t))
            for a, row in HELD.items() for w, t in row.items()]
    return final_cube(runs_table(rows))


def _held_out_by_hand(values: np.ndarray, names: list[str], held_out: dict, factor: float):
    """The rule element by element on (algorithm, workload) values, for the test below."""
    col = {w: i for i, w in enumerate(names)}
    out = values.copy()
    for variant, base in held_out.items():
        for a in range(len(values)):
            if not np.isfinite(values[a, col[base]]):
                out[a, col[variant]] = np.inf
    step1 = out.copy()
    for w in range(len(names)):
        finite = [x for x in step1[:, w] if np.isfinite(x)]
        for a in range(len(values)):
            if finite and step1[a, w] > factor * min(finite):
                out[a, w] = np.inf
    step2 = out.copy()
    for base, variant in {b: v for v, b in held_out.items()}.items():
        for a in range(len(values)):
            if not np.isfinite(step2[a, col[variant]]):
                out[a, col[base]] = np.inf
    return out


def test_held_out_rule_agrees_with_the_rule_by_hand_on_random_times():
    rng = np.random.default_rng(7)
    names = [f"w{i}" for i in range(6)]
    for case in range(60):
        values = rng.lognormal(0, 1, (int(rng.integers(1, 6)), len(names)))
        values[rng.random(values.shape) < 0.2] = np.inf
        values[rng.random(values.shape) < 0.1] = np.nan
        held_out = {"w3": "w0", "w4": "w1"} if case % 2 else {"w3": "w0", "w4": "w0", "w5": "w2"}
        times = xr.DataArray(values, dims=("algorithm", "workload"),
                             coords={"workload": names})
        ruled = scoring.held_out_rule(times.transpose("workload", "algorithm"), held_out)
        assert ruled.dims == ("workload", "algorithm")
        np.testing.assert_array_equal(ruled.transpose("algorithm", "workload").values,
                                      _held_out_by_hand(values, names, held_out, 4.0))


def test_the_held_out_rule_and_the_cut_off_apply_on_steps_as_on_seconds():
    from workbench.cubes import on_time_axis

    cube = _held_as_steps()
    steps = scoring.score_table(on_time_axis(cube, "steps"), V05).set_index("algorithm")
    # test_held_out_rule_golden's scores, in steps: A (1, 1), B none, C (-, 2), D (-, 1)
    np.testing.assert_allclose(steps.loc[["A", "B", "C", "D"], "score"],
                               [1.0, 0.0, (3 / 99) * 66.5 / 6, 0.5], rtol=1e-12)
    # in seconds every hit takes 7 s: A and B tie at 1; C's w1 miss and D's missing v1 cost w1
    train = scoring.score_table(cube, V05).set_index("algorithm")
    np.testing.assert_allclose(train.loc[["A", "B", "C", "D"], "score"], [1.0, 1.0, 0.5, 0.5])


def test_on_steps_a_study_still_keeps_the_trial_that_hit_at_the_first_eval():
    from workbench.cubes import on_time_axis

    # trial 0 met the target at eval 1 after 500 steps, trial 1 at eval 3 after 40 (a smaller
    # batch): AlgoPerf keeps trial 0, so the study took 500 steps, not 40
    cube = tiny_cube({("a", "w", 0, 0): (1, 9.0), ("a", "w", 0, 1): (3, 2.0)})
    cube["step_to_target"].loc[dict(trial=0)] = 500.0
    cube["step_to_target"].loc[dict(trial=1)] = 40.0
    assert scoring.study_times(on_time_axis(cube, "steps")).item() == 500.0
    assert scoring.study_times(cube).item() == 9.0


def test_bootstrap_medians_are_numpys_nanmedian_to_the_bit():
    """scoring._nanmedian_last (numpy's method for a short axis, without its masked arrays and
    a warning per all-NaN slice) gives what np.nanmedian gives: NaN, inf and the sign of 0."""
    import warnings

    rng = np.random.default_rng(3)
    for shape in [(1000, 11, 14, 5), (40, 3, 1), (9, 2), (30, 7), (5, 0 + 4)]:
        values = rng.random(shape) * 100
        for fraction, value in ((0.3, np.nan), (0.2, np.inf), (0.05, -0.0), (0.05, 0.0)):
            values[rng.random(shape) < fraction] = value
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            expected = np.nanmedian(values, axis=-1)
        got = scoring._nanmedian_last(values)
        assert np.array_equal(got, expected, equal_nan=True), shape
        assert np.array_equal(np.signbit(got), np.signbit(expected)), shape
