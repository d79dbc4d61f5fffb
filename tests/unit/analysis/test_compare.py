"""Head-to-head verdicts (workbench.compare) and tuning-budget curves (workbench.budget).

Golden cases are computed by hand (or by enumerating every relabelling / every subset, which
is the definition); calibration runs the whole method on many synthetic replicates made by
workbench.testing.timing_trials, the generator of workbench.testing.make_timing_store.
"""
from __future__ import annotations

import itertools
import json
import math
from dataclasses import replace
from fractions import Fraction

import numpy as np
import pytest
import xarray as xr

from workbench import bootstrap, permutation
from workbench import budget as B
from workbench import compare as C
from workbench.bootstrap import difference_distribution
from workbench.permutation import wins2
from workbench.power import studies_needed
from workbench.testing import make_timing_store, timing_trials

from locations import REPO

INF = math.inf


def study_times(table: dict[str, dict[str, list[float]]]) -> xr.DataArray:
    """Study times (algorithm, workload, study) from {algorithm: {workload: [times]}}."""
    algorithms = list(table)
    workloads = list(dict.fromkeys(w for a in table.values() for w in a))
    studies = max(len(v) for a in table.values() for v in a.values())
    data = np.full((len(algorithms), len(workloads), studies), np.nan)
    for i, a in enumerate(algorithms):
        for j, w in enumerate(workloads):
            values = table[a].get(w, [])
            data[i, j, :len(values)] = values
    return xr.DataArray(data, dims=("algorithm", "workload", "study"),
                        coords={"algorithm": algorithms, "workload": workloads})


def _pooled_trials(trials: dict, studies: int, workloads: list[str]) -> xr.DataArray:
    """A study's time on timing_trials: its fastest trial's, which there is also AlgoPerf's
    choice (the trial that met the target at the smallest eval index)."""
    best: dict[str, dict[str, list[float]]] = {}
    for (a, w, s, _), t in trials.items():
        row = best.setdefault(a, {}).setdefault(w, [INF] * studies)
        row[s] = min(row[s], t)
    return study_times(best)


# -- the permutation test ---------------------------------------------------------------------
def _enumerated(samples):
    """The stratified permutation p-values by listing every relabelling (the definition)."""
    per_workload = []
    for a, b in samples:
        pool, n = np.concatenate([a, b]), len(a)
        stats = []
        for chosen in itertools.combinations(range(len(pool)), n):
            mask = np.zeros(len(pool), bool)
            mask[list(chosen)] = True
            x, y = pool[mask], pool[~mask]
            wins = (x[:, None] < y[None, :]).sum() + 0.5 * (x[:, None] == y[None, :]).sum()
            stats.append(wins / (len(x) * len(y)))
        per_workload.append(stats)
    observed = sum(wins2(a, b) / (2 * len(a) * len(b)) for a, b in samples)
    totals = [sum(c) for c in itertools.product(*per_workload)]
    return (np.mean([t >= observed - 1e-12 for t in totals]),
            np.mean([t <= observed + 1e-12 for t in totals]))


def test_three_studies_each_all_faster_give_one_in_twenty():
    p_a, p_b, method = C.permutation_pvalues([(np.array([1.0, 2, 3]), np.array([4.0, 5, 6]))])
    assert p_a == pytest.approx(1 / 20) and p_b == pytest.approx(1.0)
    assert method == "exact permutation test"


@pytest.mark.parametrize("samples", [
    [(np.array([1.0, 2, INF, 4]), np.array([INF, 5, INF, 3, 7]))],       # misses tie each other
    [(np.array([1.0, 2, INF, 4]), np.array([INF, 5, INF, 3, 7])),
     (np.array([2.0, 3, 1]), np.array([5.0, INF]))],                       # two workloads
    [(np.array([2.0, 2, 3]), np.array([2.0, 3, 3]))],                      # tied times
])
def test_exact_pvalues_equal_the_enumeration(samples):
    p_a, p_b, _ = C.permutation_pvalues(samples)
    want_a, want_b = _enumerated(samples)
    assert p_a == pytest.approx(want_a) and p_b == pytest.approx(want_b)


def test_monte_carlo_is_used_for_a_huge_null_and_agrees(monkeypatch):
    samples = [(np.array([1.0, 2, INF, 4]), np.array([INF, 5, INF, 3, 7])),
               (np.array([2.0, 3, 1]), np.array([5.0, INF]))]
    exact = C.permutation_pvalues(samples)
    monkeypatch.setattr(permutation, "_EXACT_GRID", 10)
    p_a, p_b, method = C.permutation_pvalues(samples)
    assert method.startswith("permutation test, ")
    assert p_a == pytest.approx(exact[0], abs=0.01) and p_b == pytest.approx(exact[1], abs=0.01)


# -- a case with a known answer ---------------------------------------------------------------
def test_a_known_comparison():
    # on each workload A's studies take 1..5 s and B's 2, 4, .., 10 s: B's median is twice A's;
    # of the 25 pairs of studies A wins 5 + 4 + 4 + 3 + 3 = 19 and ties 2 (2 s and 4 s): 20 / 25
    times = study_times({"a": {"w": [1, 2, 3, 4, 5], "v": [1, 2, 3, 4, 5]},
                         "b": {"w": [2, 4, 6, 8, 10], "v": [2, 4, 6, 8, 10]}})
    r = C.compare(times, "a", "b", budgets={"w": 20.0, "v": 20.0})
    assert r.speedup == pytest.approx(2.0)
    assert [w.ratio for w in r.per_workload] == pytest.approx([2.0, 2.0])
    assert r.probability_of_improvement == pytest.approx(20 / 25)
    one = (np.array([1.0, 2, 3, 4, 5]), np.array([2.0, 4, 6, 8, 10]))
    assert r.p_value == pytest.approx(_enumerated([one, one])[0])
    assert r.p_value < 0.025 and r.verdict == "a faster" and r.studies_needed is None
    assert r.smallest_p == pytest.approx(1 / 252 ** 2)
    assert r.low <= 2.0 <= r.high
    doc = r.to_json()
    assert doc["verdict"] == "a faster" and doc["confidence"] == 0.95
    assert set(doc["speedup"]) == {"estimate", "low", "high"}
    assert set(doc["per_workload"]["w"]) >= {"ratio", "low", "high", "studies", "misses_a",
                                             "misses_b"}
    swapped = C.compare(times, "b", "a", budgets={"w": 20.0, "v": 20.0})
    assert swapped.verdict == "a faster" and swapped.speedup == pytest.approx(0.5)
    assert swapped.p_value == pytest.approx(r.p_value_b)


def test_misses_count_as_the_budget_in_ratios_and_by_rank_in_the_test():
    times = study_times({"a": {"w": [1.0, 2.0, 3.0], "u": [INF, INF, INF]},
                         "b": {"w": [INF, INF, 4.0], "u": [INF, INF, INF]}})
    r = C.compare(times, "a", "b", budgets={"w": 10.0, "u": 10.0})
    w, u = r.per_workload
    assert (w.misses_a, w.misses_b) == (0, 2)
    assert w.ratio == pytest.approx(10.0 / 2.0)  # B's median study missed: the budget, 10 s
    assert w.probability_of_improvement == 1.0  # 1, 2 and 3 s beat 4 s and both misses
    assert u.ratio is None and u.note == "both missed the target in every study"
    assert r.speedup == pytest.approx(5.0)  # u carries no information and is left out


def test_too_few_studies_give_no_interval_and_say_so():
    times = study_times({"a": {"w": [1.0, 2.0]}, "b": {"w": [3.0, 4.0]}})
    r = C.compare(times, "a", "b")
    assert r.low is None and r.per_workload[0].low is None
    assert "2 studies" in r.per_workload[0].note
    assert r.verdict == "no difference shown"  # 2 studies a side: the smallest p is 1/6
    assert "no interval" in r.sentence()


def test_a_workload_without_studies_of_one_side_is_left_out():
    times = study_times({"a": {"w": [1.0, 2, 3], "v": [1.0]}, "b": {"w": [2.0, 3, 4]}})
    r = C.compare(times, "a", "b")
    assert list(r.left_out) == ["v"] and r.left_out["v"].startswith("no study of b; a store of "
                                                                     "our own leaves")
    assert [w.workload for w in r.per_workload] == ["w"] and r.counted_as_missed == {}
    # an imported AlgoPerf store: AlgoPerf's scorer counts it missed, here in b's 3 studies
    r = C.compare(times, "a", "b", absent_is_miss=True)
    assert r.left_out == {} and [w.workload for w in r.per_workload] == ["w", "v"]
    v = r.per_workload[1]
    assert (v.studies_a, v.studies_b, v.misses_b) == (1, 3, 3)
    assert v.probability_of_improvement == 1.0  # a's 1 s beats each of b's misses
    assert "counted as missed in each of its 3 studies" in r.counted_as_missed["v"]
    assert r.to_json()["counted_as_missed"] == r.counted_as_missed


@pytest.mark.parametrize("kwargs, message", [
    ({"a": "x", "b": "b"}, "unknown algorithm 'x'"),
    ({"a": "a", "b": "a"}, "two different algorithms"),
    ({"a": "a", "b": "b", "confidence": 1.5}, "confidence must be in (0, 1)"),
    ({"a": "a", "b": "b", "detect": 0.8}, "must be > 1"),
    ({"a": "a", "b": "b", "workloads": ["nope"]}, "unknown workloads ['nope']"),
])
def test_bad_arguments_are_one_clear_error(kwargs, message):
    times = study_times({"a": {"w": [1.0, 2, 3]}, "b": {"w": [2.0, 3, 4]}})
    with pytest.raises(ValueError, match=None) as err:
        C.compare(times, **kwargs)
    assert message in str(err.value)


def test_studies_needed_follows_the_formula_and_the_smallest_possible_p():
    # z(0.975) + z(0.8) = 2.8016; 2 * 0.04 / ln(1.25)^2 * 2.8016^2 = 12.596; x pi/3 = 13.19
    assert studies_needed(0.04, 1, 1.25) == 14
    assert studies_needed(0.04, 4, 1.25) == 4         # 3.30 -> 4
    assert studies_needed(0.0, 1, 1.25) == 4          # 1/C(6,3) = 0.05 > 0.025; 1/70 is not
    assert studies_needed(0.0, 3, 1.25) == 2          # (1/6)^3 < 0.025
    assert studies_needed(math.nan, 1, 1.25) is None


def test_no_difference_shown_comes_with_the_studies_needed():
    times = study_times({"a": {"w": [1.0, 2.2, 3.1]}, "b": {"w": [1.1, 2.0, 3.0]}})
    r = C.compare(times, "a", "b")
    assert r.verdict == "no difference shown" and r.studies_needed >= 4
    assert f"about {r.studies_needed} studies per algorithm" in r.sentence()


# -- calibration ---------------------------------------------------------------------------------
def _verdicts(factor: float, replicates: int, seed: int, studies: int = 5,
              workloads=("w",)) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    counts = {"a faster": 0, "b faster": 0, "no difference shown": 0}
    for _ in range(replicates):
        trials = timing_trials(rng, {"a": 1.0, "b": factor}, workloads, studies, 5)
        times = _pooled_trials(trials, studies, list(workloads))
        result = C.compare(times, "a", "b", budgets={w: 100.0 for w in workloads},
                           replicates=20)
        counts[result.verdict] += 1
    return {k: v / replicates for k, v in counts.items()}


def test_with_no_true_difference_a_difference_is_claimed_at_most_5_percent_of_the_time():
    n = 600
    bound = 0.05 + 2.33 * math.sqrt(0.05 * 0.95 / n)  # 99 % one-sided sampling error
    for studies, workloads, seed in ((5, ("w",), 11), (3, ("w", "v"), 12)):
        rates = _verdicts(1.0, n, seed, studies, workloads)
        assert rates["a faster"] + rates["b faster"] <= bound, (studies, workloads, rates)


def test_a_one_and_a_half_times_speedup_is_found_at_five_studies_of_five_trials():
    rates = _verdicts(1.5, 300, 13)
    assert rates["b faster"] == 0.0
    assert rates["a faster"] >= 0.7  # measured 0.815 over 1000 replicates (see the note)


# -- through a store and the command line -------------------------------------------------------
def test_compare_on_a_store_through_the_cli(tmp_path, capsys):
    from runners.cli import main

    make_timing_store(tmp_path / "s", {"fast": 1.0, "slow": 2.0}, studies=5, trials=3, seed=3)
    assert main(["compare", "--store", str(tmp_path / "s"), "--algorithms", "fast,slow",
                 "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["a"] == "fast" and doc["b"] == "slow" and doc["verdict"] == "fast faster"
    assert doc["speedup"]["low"] > 1 and doc["p_value"] < 0.025
    assert doc["per_workload"]["mnist1d_mlp"]["studies"] == 5
    assert main(["compare", "--store", str(tmp_path / "s"), "--algorithms", "fast,slow"]) == 0
    text = capsys.readouterr().out
    assert "fast faster at 95% confidence" in text and "t_slow / t_fast" in text


def test_compare_takes_exactly_two_algorithms(tmp_path, capsys):
    from runners.cli import main

    make_timing_store(tmp_path / "s", {"fast": 1.0, "slow": 2.0}, studies=2, trials=1)
    assert main(["compare", "--store", str(tmp_path / "s"), "--algorithms", "fast"]) != 0
    err = capsys.readouterr().err
    assert "exactly two names" in err and len(err.strip().splitlines()) == 1


# -- tuning-budget curves -----------------------------------------------------------------------
TRIALS = np.array([3.0, 1.0, INF, 2.0, INF, 5.0])


def test_best_of_k_by_hand():
    # k = 1: each trial alike; 4 of 6 reach; the best is 1, 2, 3 or 5 s with 1/6 each
    hits, pmf, miss = B.best_of_k(TRIALS, 1)
    assert list(hits) == [1, 2, 3, 5] and pmf == pytest.approx([1 / 6] * 4)
    assert miss == pytest.approx(2 / 6)
    # k = 2: 15 pairs; both misses in 1; the best is 1 s in the 5 pairs holding it,
    # 2 s in the 4 pairs holding 2 but not 1, 3 s in 3, 5 s in 2
    hits, pmf, miss = B.best_of_k(TRIALS, 2)
    assert pmf == pytest.approx([5 / 15, 4 / 15, 3 / 15, 2 / 15]) and miss == pytest.approx(1 / 15)
    curve = B.budget_curves({("a", "w"): TRIALS})[0]
    assert curve.k == [1, 2, 3, 4, 5, 6]
    assert curve.p_reach == pytest.approx([4 / 6, 14 / 15, 1, 1, 1, 1])
    # medians: k=1: P(<=3) = 3/6 -> 3; k=2: P(<=1) = 1/3, P(<=2) = 9/15 -> 2; k>=3: P(1) >= 1/2
    assert curve.median_best == [3.0, 2.0, 1.0, 1.0, 1.0, 1.0]


def test_the_median_best_is_none_while_most_budget_k_draws_miss():
    curve = B.budget_curves({("a", "w"): np.array([4.0, INF, INF, INF])})[0]
    assert curve.p_reach == pytest.approx([0.25, 0.5, 0.75, 1.0])
    assert curve.median_best == [None, 4.0, 4.0, 4.0]


def test_best_of_k_equals_the_enumeration_of_every_subset():
    for k in range(1, len(TRIALS) + 1):
        hits, pmf, miss = B.best_of_k(TRIALS, k)
        minima = [min(s) for s in itertools.combinations(TRIALS, k)]
        assert miss == pytest.approx(np.mean(np.isinf(minima)))
        assert pmf == pytest.approx([np.mean([m == h for m in minima]) for h in hits])


def test_budget_curves_and_scores_follow_best_of_k_at_every_k():
    # budget_curves and scores_by_budget compute every k at once: each k must be best_of_k's
    # median and the score table of those medians, as if computed one k at a time
    from workbench.scoring import score_table_of_times

    rng = np.random.default_rng(3)
    trials = {}
    for a, w in itertools.product("ab", ("w1", "w2")):
        n = int(rng.integers(2, 9))
        times = rng.choice([1.0, 2.0, 3.0, 5.0], n)  # ties on purpose
        times[rng.random(n) < 0.4] = INF
        trials[(a, w)] = times
    curves = B.budget_curves(trials)
    for curve in curves:
        for k in curve.k:
            hits, pmf, miss = B.best_of_k(trials[(curve.algorithm, curve.workload)], k)
            assert curve.p_reach[k - 1] == pytest.approx(1 - miss)
            cdf = np.cumsum(pmf)
            median = None if 1 - miss < 0.5 - 1e-9 else hits[np.argmax(cdf >= 0.5 - 1e-9)]
            assert curve.median_best[k - 1] == median
    scores = B.scores_by_budget(curves)
    assert list(scores.index) == list(range(1, max(len(c.k) for c in curves) + 1))
    for k in scores.index:
        medians = {(c.algorithm, c.workload): c.median_best[min(k, len(c.k)) - 1]
                   for c in curves}  # a cell with fewer than k trials counts with all of them
        grid = xr.DataArray([[math.inf if medians[(a, w)] is None else medians[(a, w)]
                              for w in ("w1", "w2")] for a in "ab"],
                            dims=("algorithm", "workload"),
                            coords={"algorithm": ["a", "b"], "workload": ["w1", "w2"]})
        table = score_table_of_times(grid).set_index("algorithm")["score"]
        assert scores.loc[k].to_dict() == pytest.approx(table.to_dict())


def test_fastest_probabilities_by_enumeration():
    other = np.array([1.5, INF, 4.0])
    frame = B.fastest_probabilities({("a", "w"): TRIALS, ("b", "w"): other}, "w")
    assert list(frame.index) == [1, 2, 3]
    for k in (1, 2, 3):
        wins = {"a": 0.0, "b": 0.0, "none": 0.0}
        pairs = list(itertools.product(itertools.combinations(TRIALS, k),
                                       itertools.combinations(other, k)))
        for x, y in pairs:
            ma, mb = min(x), min(y)
            key = "none" if math.isinf(ma) and math.isinf(mb) else "a" if ma < mb else "b"
            wins[key] += 1
        for key in wins:
            assert frame.loc[k, key] == pytest.approx(wins[key] / len(pairs))


def test_scores_by_budget_and_the_json(tmp_path, capsys):
    from runners.cli import main

    make_timing_store(tmp_path / "s", {"fast": 1.0, "slow": 3.0}, studies=2, trials=3, seed=5,
                      miss_rate=0.0)
    assert main(["budget", "--store", str(tmp_path / "s"), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    curve = doc["algorithms"]["fast"]["workloads"]["mnist1d_mlp"]
    assert curve["k"] == [1, 2, 3, 4, 5, 6] and curve["p_reach"] == [1.0] * 6
    assert all(m is not None for m in curve["median_best"])
    assert doc["score"]["fast"] == [1.0] * 6  # 3x faster trial for trial: first at every k
    assert doc["p_fastest"]["mnist1d_mlp"]["fast"][-1] == 1.0
    assert main(["budget", "--store", str(tmp_path / "s")]) == 0
    assert "P(fastest) with k=1" in capsys.readouterr().out


# -- intervals on speedups ----------------------------------------------------------------------
def test_speedup_replicates_equal_speedup_table_replicate_by_replicate():
    from workbench import scoring
    from workbench.testing import tiny_cube

    trials = {}
    rng = np.random.default_rng(0)
    for a, slow in (("ref", 1.0), ("x", 1.3), ("y", 0.8)):
        for w in ("w1", "w2"):
            for study in range(4):
                for trial in range(3):
                    hit = rng.random() > 0.15
                    trials[(a, w, study, trial)] = ((3, float(slow * rng.lognormal(2, 0.3)))
                                                    if hit else None)
    cube = tiny_cube(trials)
    replicas = scoring.bootstrap_medians(scoring.study_times(cube), 30, seed=1)
    config = scoring.ScoringConfig(budgets={"w1": 100.0, "w2": 80.0})
    for cfg in (None, config):
        ratios = scoring.speedup_replicates(replicas, "ref", cfg)
        for i in (0, 7, 29):
            table = scoring.speedup_table(replicas.isel(replicate=i), "ref", cfg)
            assert ratios.isel(replicate=i).values == pytest.approx(table["time_ratio"].values)
    bounds = scoring.speedup_interval(replicas, "ref", config).set_index("algorithm")
    assert bounds.loc["ref"].tolist() == [0.0, 0.0]
    assert bounds.loc["x", "low"] <= bounds.loc["x", "high"]


def test_score_json_gives_each_speedup_its_interval(tmp_path, capsys):
    from runners.cli import main

    make_timing_store(tmp_path / "s", {"fast": 1.0, "slow": 2.0}, studies=3, trials=2, seed=2)
    assert main(["score", "--store", str(tmp_path / "s"), "--json", "--reference", "slow"]) == 0
    speedups = json.loads(capsys.readouterr().out)["speedups"]
    low, high = speedups["intervals"]["fast"]
    assert low <= speedups["faster_by"]["fast"] <= high and speedups["interval_level"] == 0.9
    assert main(["score", "--store", str(tmp_path / "s"), "--reference", "slow"]) == 0
    assert "90 % interval" in capsys.readouterr().out


# -- the dashboard's Compare and Tuning budget views, and the report ------------------------------
def test_compare_and_budget_views_draw(tmp_path):
    from workbench.views.budget import TuningBudget, score_plot, workload_plots
    from workbench.views.compare import Compare, comparison, default_pair, forest_plot
    from workbench.views.selection import Selection

    make_timing_store(tmp_path / "s", {"fast": 1.0, "slow": 2.0}, studies=3, trials=2, seed=4)
    sel = Selection(store_path=str(tmp_path / "s"))
    assert set(default_pair(sel)) == {"fast", "slow"}
    result = comparison(sel, "fast", "slow")
    assert result.speedup > 1 and forest_plot(result) is not None
    view = Compare(selection=sel, a="fast", b="slow")
    assert result.sentence().split(":")[0] in view._body.objects[0].object
    assert len(Compare(selection=sel, against_reference=True)._body.objects) >= 3
    assert len(workload_plots(sel, "mnist1d_mlp")) == 3 and score_plot(sel) is not None
    assert len(TuningBudget(selection=sel, all_workloads=True)._body.objects) == 2  # score, P


def test_compare_view_escapes_hostile_names(tmp_path):
    from workbench.testing import make_hostile_store
    from workbench.views.compare import Compare
    from workbench.views.selection import Selection

    make_hostile_store(tmp_path / "h", studies=3)
    sel = Selection(store_path=str(tmp_path / "h"))
    text = "".join(getattr(o, "object", "") or "" for o in
                   Compare(selection=sel, against_reference=True)._body.objects
                   if isinstance(getattr(o, "object", None), str))
    assert "onerror" in text and "<img" not in text  # shown as text, never as markup


# -- on a run table: time axes, the verdict by steps, step costs, the machine-speed check --------
VERDICTS = {"a faster", "b faster", "no difference shown"}


def _table(sides: dict[str, dict], workload: str = "w"):
    """(runs, final cube) of one trial per study: sides = {algorithm: {"steps": [steps to
    target per study], "cost": training s per step, "probes": [probe s per run] (optional)}}.
    Each run trains 1,000 steps and reaches its target at eval 3; its seconds to target are
    steps x cost."""
    from workbench.cubes import final_cube
    from workbench.testing import runs_table

    rows = []
    for a, side in sides.items():
        probes = side.get("probes", [None] * len(side["steps"]))
        for study, (steps, probe) in enumerate(zip(side["steps"], probes)):
            seconds = steps * side["cost"]
            rows.append(dict(algorithm=a, workload=workload, study=study, trial=0, index=3,
                             time=seconds, step_to_target=steps, wall_to_target=seconds + 1.0,
                             steps=1000, train_seconds=1000 * side["cost"],
                             wall_seconds=1000 * side["cost"] + 4.0, probe_seconds=probe))
    runs = runs_table(rows)
    return runs, final_cube(runs)


SEPARATE = ([100, 110, 120, 130], [200, 210, 220, 230])   # 4 studies a side, no overlap
MIXED = ([100, 120, 200, 220], [110, 130, 210, 230])


@pytest.mark.parametrize("steps, costs, want", [
    (SEPARATE, (0.1, 0.1), "a faster"),
    ((SEPARATE[1], SEPARATE[0]), (0.1, 0.1), "b faster"),
    (MIXED, (0.1, 0.1), "no difference shown"),
])
def test_the_verdict_is_exactly_one_of_three_and_the_json_keeps_its_parts_apart(steps, costs,
                                                                                  want):
    runs, cube = _table({"a": {"steps": steps[0], "cost": costs[0]},
                         "b": {"steps": steps[1], "cost": costs[1]}})
    r = C.compare_runs(runs, cube, "a", "b", replicates=200)
    doc = r.to_json()
    # 4 studies against 4 that never overlap: p = 1/C(8, 4) = 1/70 < 0.025 (two-sided 95 %)
    assert doc["verdict"] == want and doc["verdict_by_steps"] == want  # same cost: same verdict
    assert doc["sentence"] == r.sentence() and doc["sentence"].startswith(want)
    assert doc["warnings"] == [] and doc["withheld"] is None
    assert (doc["time_axis"], doc["unit"]) == ("train", "seconds")
    assert doc["seconds_per_step"] == pytest.approx({"a": 0.1, "b": 0.1})
    assert doc["step_cost_ratio"] == pytest.approx(1.0)
    assert "By steps" not in doc["sentence"]  # the verdicts agree: nothing more to say


def test_a_time_and_steps_disagreement_is_reported_with_the_cost_of_a_step():
    # a needs half the steps of b, but its steps cost 4x: 0.2 s against 0.05 s
    runs, cube = _table({"a": {"steps": SEPARATE[0], "cost": 0.2},
                         "b": {"steps": SEPARATE[1], "cost": 0.05}})
    r = C.compare_runs(runs, cube, "a", "b", replicates=200)
    # seconds: a 20..26 s, b 10..11.5 s; steps: a 100..130, b 200..230
    assert (r.verdict, r.verdict_by_steps) == ("b faster", "a faster")
    assert r.seconds_per_step == pytest.approx({"a": 0.2, "b": 0.05})
    assert r.step_cost_ratio == pytest.approx(4.0)
    assert r.speedup == pytest.approx(10.75 / 23)  # median study seconds: b 10.75, a 23
    assert ("By steps to target: a faster; a's steps cost 4x b's: a is faster per step, "
            "slower per second") in r.sentence()
    steps = C.compare_runs(runs, cube, "a", "b", time_axis="steps", replicates=200)
    assert steps.verdict == steps.verdict_by_steps == "a faster" and steps.unit == "steps"
    assert steps.speedup == pytest.approx(215 / 115)  # medians of steps: b 215, a 115
    assert "a is 1.87x faster than b in steps to target (" in steps.sentence()


def test_per_step_costs_are_medians_per_workload_then_a_geometric_mean():
    from workbench.testing import runs_table

    rows = [dict(algorithm=a, workload=w, study=s, trial=0, time=1.0, index=0, steps=100,
                 train_seconds=seconds)
            for a, w, s, seconds in (("a", "u", 0, 10.0), ("a", "u", 1, 30.0),
                                     ("a", "u", 2, 20.0), ("a", "v", 0, 80.0),
                                     ("b", "u", 0, 10.0), ("b", "v", 0, 20.0),
                                     ("b", "v", 1, 999.0))]
    rows.append(dict(algorithm="b", workload="v", study=2, trial=0, steps=100, time=None,
                     train_seconds=5.0, status="failed"))  # not finished: not counted
    cost, ratio = C.seconds_per_step(runs_table(rows), "a", "b", ["u", "v"])
    # a: u median 0.2, v 0.8 -> sqrt(0.16) = 0.4; b: u 0.1, v median(0.2, 9.99) = 5.095
    assert cost["a"] == pytest.approx(0.4)
    assert cost["b"] == pytest.approx(math.sqrt(0.1 * 5.095))
    assert ratio == pytest.approx(0.4 / math.sqrt(0.1 * 5.095))
    assert C.seconds_per_step(runs_table(rows), "a", "b", ["x"]) == ({"a": None, "b": None},
                                                                      None)


def test_miss_budgets_are_counted_in_the_unit_of_the_axis():
    from workbench.scoring import ScoringConfig
    from workbench.testing import runs_table

    runs = runs_table([dict(algorithm="a", workload="w", study=0, trial=t, time=None,
                            train_seconds=s, wall_seconds=s + 5, steps=n)
                       for t, (s, n) in enumerate(((30.0, 400), (50.0, 300)))])
    config = ScoringConfig(budgets={"w": 999.0})  # an import's budget, in training seconds
    assert C.miss_budgets(runs, "train", config) == {"w": 999.0}
    assert C.miss_budgets(runs, "train") == {"w": 50.0}
    assert C.miss_budgets(runs, "wall", config) == {"w": 55.0}
    assert C.miss_budgets(runs, "steps", config) == {"w": 400.0}  # never 999 s as steps


@pytest.mark.parametrize("axis, want", [("steps", 1500 / 110), ("train", 150 / 11),
                                        ("wall", 154 / 12)])
def test_compare_runs_counts_a_miss_as_the_longest_run_on_its_axis(axis, want):
    from workbench.cubes import final_cube
    from workbench.testing import runs_table

    # a reaches the target after 100, 110, 120 steps (0.1 s each, 1 s of evals); b after 130
    # steps once and misses twice, training 1,500 steps (150 s, 154 s of wall clock) each time:
    # b's median study is the miss, the longest run on the axis (not b's or a's longest hit)
    rows = [dict(algorithm="a", workload="w", study=s, trial=0, index=3, time=n / 10,
                 step_to_target=n, wall_to_target=n / 10 + 1, steps=1000, train_seconds=100.0,
                 wall_seconds=104.0) for s, n in enumerate((100, 110, 120))]
    rows += [dict(algorithm="b", workload="w", study=0, trial=0, index=3, time=13.0,
                  step_to_target=130, wall_to_target=14.0, steps=1000, train_seconds=100.0,
                  wall_seconds=104.0)]
    rows += [dict(algorithm="b", workload="w", study=s, trial=0, time=None, steps=1500,
                  train_seconds=150.0, wall_seconds=154.0) for s in (1, 2)]
    runs = runs_table(rows)
    r = C.compare_runs(runs, final_cube(runs), "a", "b", time_axis=axis, replicates=100)
    assert r.per_workload[0].ratio == pytest.approx(want)
    assert (r.per_workload[0].misses_a, r.per_workload[0].misses_b) == (0, 2)


SLOW_B = [0.12, 0.12, 0.12, 0.12]  # B's machine 20 % slower than A's 0.10 s


@pytest.mark.parametrize("probes_b, noise_cov, warns", [
    (SLOW_B, None, True),                            # 1.2 > 1 + 10 % (the default floor)
    (SLOW_B, {"w": math.nan}, True),                 # a floor that is NaN: the default
    (SLOW_B, {"w": 0.25}, False),                    # within a measured 25 % floor
    (SLOW_B, {"w": 0.15}, True),                     # beyond a measured 15 % floor
    ([0.105, 0.1, 0.11, 0.1], None, False),          # 1.025: the machines agree
    ([0.1, 0.1, 0.1, 0.2], None, False),             # 1.19 by one loaded run: chance (p = 1)
    ([0.5, None, None, None], None, False),          # one run of B has a probe: no check
    ([None] * 4, None, False),                       # old runs: no probe at all
])
def test_the_machine_speed_check_warns_and_withholds_the_time_verdict(probes_b, noise_cov,
                                                                      warns):
    runs, cube = _table({"a": {"steps": SEPARATE[0], "cost": 0.1, "probes": [0.1] * 4},
                         "b": {"steps": SEPARATE[1], "cost": 0.1, "probes": probes_b}})
    r = C.compare_runs(runs, cube, "a", "b", noise_cov=noise_cov, replicates=200)
    assert r.verdict_by_steps == "a faster"  # steps do not depend on the machine's speed
    if not warns:
        assert (r.verdict, r.warnings, r.withheld) == ("a faster", (), None)
        return
    (warning,) = r.warnings
    floor = "15.0 %" if noise_cov and noise_cov["w"] == 0.15 else "10.0 %"
    assert warning.startswith("machine speed differed on w: probe 0.1 s (geometric mean) over "
                              "4 runs of a, 0.12 s over 4 runs of b, ratio 0.833, beyond the "
                              f"noise floor of {floor}")
    assert warning.endswith("(permutation test p = 0.029)")  # 2 of the 70 relabellings
    assert ("the default" in warning) == (floor == "10.0 %")
    assert r.verdict == "no difference shown" and r.measured_verdict == "a faster"
    assert r.withheld.startswith("the machine's speed differed between the two sides")
    line, text = r.withheld_line(), r.sentence()
    assert line.startswith("verdict in time withheld (no difference shown): the machine's "
                           "speed differed")
    assert "so time cannot separate them; rerun with the interleaved order or compare by " \
           "steps" in line and "By steps to target: a faster" in text
    # the withholding is a line of its own; the sentence nests no verdict inside another
    assert "machine's speed" not in text and "no difference shown:" not in text
    assert text.startswith("The times measured, not a verdict")
    doc = r.to_json()
    assert doc["verdict"] == "no difference shown" and doc["warnings"] == [warning]
    swapped = C.compare_runs(runs, cube, "b", "a", noise_cov=noise_cov, replicates=200)
    assert swapped.verdict == "no difference shown" and len(swapped.warnings) == 1
    by_steps = C.compare_runs(runs, cube, "a", "b", time_axis="steps", noise_cov=noise_cov,
                              replicates=200)
    assert by_steps.warnings == r.warnings and by_steps.withheld is None
    assert by_steps.verdict == "a faster"  # a verdict in steps is never withheld


def test_the_forest_plots_log_axis_labels_ticks_below_one_half():
    """Bokeh's log ticker on an axis spanning less than two decades labels 0.5, 1, 1.5, 2
    only: intervals reaching 0.15 ended in unlabelled space (and Matplotlib's labelled every
    digit, overlapping). The axis gets labelled ticks over its whole range."""
    from workbench.views.compare import _draw_forest, forest_data, forest_plot
    from workbench.views.plotting import hv
    from workbench.views.live import LivePlot

    rows = [C.WorkloadComparison("w1", 0.25, 0.15, 0.6, 3, 3, 0, 0, 0.2),
            C.WorkloadComparison("w2", 1.7, 1.2, 2.1, 3, 3, 0, 0, 0.8)]
    result = C.Comparison("A", "B", "no difference shown", 0.95, 0.65, 0.3, 1.8, 0.4, 0.6,
                          0.5, 30, 1.25, rows)
    data = forest_data(result)
    plot = LivePlot(xlabel="", ylabel="", x_log=True, x_range=(0.5, 2), points=True)
    _draw_forest(plot, data)
    ticks = plot.figure.xaxis[0].ticker.ticks
    labels = plot.figure.xaxis[0].major_label_overrides
    assert [t for t in ticks if t < 0.5] and all(labels[t] for t in ticks)
    assert min(ticks) <= 0.2 and max(ticks) >= 2 and data["xlim"][0] <= 0.15
    assert hv.Store.lookup_options("bokeh", forest_plot(result), "plot").kwargs["xticks"][0] \
        == (min(ticks), f"{min(ticks):g}")


# -- the cross-check's fixes (issue 31) ---------------------------------------------------------
def _self_tuning(factor: float = 1.5):
    """(runs, cube, config) of a self-tuning import: budget 100 s, a's hits at 120, 130, 140 s
    (within the 1.5x self-tuning budget), b hits once at 110 s and misses twice."""
    from workbench.cubes import final_cube
    from workbench.scoring import ScoringConfig
    from workbench.testing import runs_table

    rows = [dict(algorithm="a", workload="w", study=s, trial=0, index=3, time=t, ruleset="self")
            for s, t in enumerate((120.0, 130.0, 140.0))]
    rows += [dict(algorithm="b", workload="w", study=0, trial=0, index=3, time=110.0,
                  ruleset="self")]
    rows += [dict(algorithm="b", workload="w", study=s, trial=0, time=None, ruleset="self")
             for s in (1, 2)]
    runs = runs_table(rows)  # every run records 100 training seconds: the import's totals
    config = ScoringConfig(budgets={"w": 100.0}, self_tuning_budget_factor=factor,
                           benchmark_version="0.5")
    return runs, final_cube(runs), config


def test_only_misses_are_capped_at_the_budget_times_the_self_tuning_factor():
    runs, cube, config = _self_tuning()
    assert C.miss_budgets(runs, "train", config) == {"w": 150.0}
    r = C.compare_runs(runs, cube, "a", "b", config=config, replicates=100)
    # b's median study is a miss: 1.5 x 100 s; a's median hit, 130 s, is not shortened to 100 s
    assert r.per_workload[0].ratio == pytest.approx(150.0 / 130.0)
    # a hit above the cap lifts the misses to it: a miss never counts as faster than a hit
    assert C._at_budget(np.array([120.0, INF, 90.0]), 100.0).tolist() == [120.0, 120.0, 90.0]


def test_the_study_time_rule_algoperf_or_fastest():
    from workbench.cubes import final_cube
    from workbench.testing import runs_table

    # each study: trial 0 meets the target at eval 2 after 50 s, trial 1 at eval 3 after 40 s
    # (its evals came sooner): AlgoPerf's rule takes trial 0 (smallest eval index), the
    # fastest rule trial 1
    rows = []
    for a, scale in (("a", 1.0), ("b", 1.1)):
        for s in range(3):
            rows.append(dict(algorithm=a, workload="w", study=s, trial=0, index=2,
                             time=50.0 * scale + s))
            rows.append(dict(algorithm=a, workload="w", study=s, trial=1, index=3,
                             time=40.0 * scale + s))
    runs = runs_table(rows)
    cube = final_cube(runs)
    assert C.study_times_by(cube, "algoperf").sel(algorithm="a", workload="w").values.tolist() \
        == [50.0, 51.0, 52.0]
    assert C.study_times_by(cube, "fastest").sel(algorithm="a", workload="w").values.tolist() \
        == [40.0, 41.0, 42.0]
    fast = C.compare_runs(runs, cube, "a", "b", study_time="fastest", replicates=50)
    assert fast.per_workload[0].ratio == pytest.approx(45.0 / 41.0)
    assert fast.to_json()["study_time"] == "fastest"
    with pytest.raises(ValueError, match="valid are algoperf, fastest"):
        C.study_times_by(cube, "slowest")


def test_p_counts_workloads_both_sides_always_missed_as_one_half():
    times = study_times({"a": {"w": [1.0, 2, 3], "u": [INF, INF, INF]},
                         "b": {"w": [4.0, 5, 6], "u": [INF, INF, INF]}})
    r = C.compare(times, "a", "b")
    assert r.per_workload[1].probability_of_improvement == 0.5
    assert r.probability_of_improvement == pytest.approx((1.0 + 0.5) / 2)  # rliable's mean
    assert "counting u, missed by both in every study, as 1/2" in r.sentence()
    assert r.speedup == pytest.approx(5.0 / 2.0)  # u carries no ratio


def _brute_force_interval(sides, confidence=0.95):
    """Every ordered resample of every side of every workload, the mean of log median ratios,
    and numpy's inverted-cdf percentiles: the definition of the exact bootstrap interval."""
    per_workload = []
    for a, b in sides:
        med_a = [np.log(np.median(a[list(i)])) for i in itertools.product(range(len(a)),
                                                                          repeat=len(a))]
        med_b = [np.log(np.median(b[list(i)])) for i in itertools.product(range(len(b)),
                                                                          repeat=len(b))]
        per_workload.append((np.array(med_b)[None, :] - np.array(med_a)[:, None]).ravel())
    total = np.zeros(1)
    for logs in per_workload:
        total = (total[:, None] + logs[None, :]).ravel()
    tail = (1 - confidence) / 2
    low, high = np.quantile(total / len(sides), [tail, 1 - tail], method="inverted_cdf")
    return math.exp(low), math.exp(high)


def test_intervals_from_few_studies_are_the_exact_bootstrap_distribution():
    one = (np.array([1.0, 2.0, 3.0, 7.0]), np.array([2.0, 5.0, 6.0]))
    two = (np.array([2.0, 3.0, 9.0]), np.array([1.0, 4.0, 5.0]))
    rng = np.random.default_rng(0)
    dist = difference_distribution(*one, 10, rng)
    assert dist[2] and C._interval(dist[:2], 0.95) == pytest.approx(
        _brute_force_interval([one]))
    times = study_times({"a": {"w": one[0].tolist(), "v": two[0].tolist()},
                         "b": {"w": one[1].tolist(), "v": two[1].tolist()}})
    r = C.compare(times, "a", "b", budgets={"w": 10.0, "v": 10.0})
    assert r.interval_method == "exact bootstrap (every resample)"
    assert (r.low, r.high) == pytest.approx(_brute_force_interval([one, two]))


def test_above_the_exact_limit_the_bootstrap_is_monte_carlo(monkeypatch):
    one = (np.array([1.0, 2.0, 3.0, 7.0]), np.array([2.0, 5.0, 6.0]))
    times = study_times({"a": {"w": one[0].tolist()}, "b": {"w": one[1].tolist()}})
    monkeypatch.setattr(bootstrap, "EXACT_BOOTSTRAP", 5)
    r = C.compare(times, "a", "b", budgets={"w": 10.0}, replicates=4000)
    assert r.interval_method == "bootstrap, 4000 Monte Carlo replicates"
    exact = _brute_force_interval([one])
    assert r.low == pytest.approx(exact[0], rel=0.15) and r.high == pytest.approx(exact[1],
                                                                                  rel=0.15)


def test_the_winner_is_named_first_with_a_speedup_above_one_and_digits_near_one():
    times = study_times({"adamw": {"w": [2.0, 2.2, 2.4, 2.6]},
                         "heavy_ball": {"w": [1.0, 1.1, 1.2, 1.3]}})
    r = C.compare(times, "adamw", "heavy_ball", budgets={"w": 10.0})
    assert r.verdict == "heavy_ball faster"
    assert r.sentence().startswith("heavy_ball faster at 95% confidence: heavy_ball is 2x "
                                   "faster than adamw (")
    assert "for 'heavy_ball is faster'" in r.sentence()
    assert "P(heavy_ball faster in a study) = 1.00" in r.sentence()
    assert C._x(1.001) == "1.001x" and C._x(0.9996) == "0.9996x" and C._x(1.0) == "1x"
    assert C._x(3.6912) == "3.69x" and C.level_text(0.999) == "99.9%"


def test_a_design_that_cannot_reach_the_confidence_says_so_and_what_could():
    times = study_times({"a": {"w": [1.0, 2, 3]}, "b": {"w": [4.0, 5, 6]}})
    r = C.compare(times, "a", "b", budgets={"w": 10.0})
    assert r.verdict == "no difference shown" and r.p_value == pytest.approx(0.05)
    assert ("this design cannot reach 95% (the smallest p-value of 3 + 3 studies is 0.05); "
            "4 + 4 studies could") in r.sentence()
    doc = r.to_json()
    assert doc["can_reach_confidence"] is False and doc["studies_to_reach"] == 4
    assert C.smallest_p_value([(3, 3)]) == Fraction(1, 20)
    assert C.studies_to_reach([(3, 3), (3, 3)], 0.95) is None  # (1/20)^2 <= 0.025
    assert C.studies_to_reach([(2, 2)], 0.99) == 5             # 1/252 <= 0.005 < 1/70


def test_confidence_levels_are_compared_exactly():
    # 1 - 0.9 is 0.09999999999999998 in floating point: p = 1/20 must still decide at 90 %
    times = study_times({"a": {"w": [1.0, 2, 3]}, "b": {"w": [4.0, 5, 6]}})
    r = C.compare(times, "a", "b", budgets={"w": 10.0}, confidence=0.9)
    assert r.verdict == "a faster" and r.studies_to_reach is None
    assert C.half_alpha(0.9) == Fraction(1, 20) and C.reaches(0.05000000000000001, 0.9)
    assert not C.reaches(0.0501, 0.9)


def test_fairness_search_spaces_origins_and_trials():
    from workbench.testing import runs_table

    rows = [dict(algorithm=a, workload=w, study=s, trial=t, time=1.0, index=0)
            for a, trials in (("adamw", 3), ("new", 2)) for w in ("u", "v")
            for s in range(2) for t in range(trials)]
    runs = runs_table(rows)
    first = runs.drop_duplicates(["algorithm", "workload"])
    space = {"learning_rate": {"min": 1e-4, "max": 1e-2, "scaling": "log"}}
    docs = {}
    for r in first.itertuples():
        if r.algorithm == "adamw":
            docs[r.run_id] = {"search_space": space, "search_space_origin": "file"}
        else:  # hostile: not JSON of a space, an origin we do not know
            docs[r.run_id] = {"search_space": "<script>", "search_space_origin": "<b>x</b>"}
    out = C.fairness(runs, ["adamw", "new"], docs.__getitem__)
    assert out["adamw"] == {"origin": "file", "space": space, "trials": 3}
    assert out["new"] == {"origin": "unknown", "space": None, "trials": 2}
    lines = C.fairness_lines(out)
    assert lines[0].startswith("adamw: 3 trials per study, search space from a file: {")
    assert lines[1] == "new: 2 trials per study, search space not recorded (an import, or no " \
                       "search)"
    assert C.fairness_lines({"x": {"origin": "signature", "space": {}, "trials": 1}}) == \
        ["x: 1 trials per study, search space derived from the optimizer's signature "
         "(automatic): {}"]


def test_a_reference_slower_than_its_tuned_record_by_more_than_the_floor_is_flagged():
    times = study_times({"adamw": {"w": [300.0, 310.0, 330.0], "v": [105.0, 100.0, 95.0]},
                         "new": {"w": [100.0, 110.0, 120.0], "v": [100.0, 100.0, 100.0]}})
    out = C.under_tuned_warnings(times, "adamw", ["w", "v"], {"w": 100.0, "v": 100.0},
                                 {"w": 0.1, "v": 0.1})
    assert list(out) == ["w"]  # v: 100 steps against 100, within the floor
    assert out["w"].startswith("adamw looks under-tuned on w: its median study took 310 steps "
                               "to target over 3 studies, 3.1x the 100 steps of the workload's "
                               "tuned baseline")
    assert C.under_tuned_warnings(times, "adamw", ["w"], {"w": 100.0}, {}) == {}  # no floor


def test_compare_json_gives_search_spaces_and_the_study_time_rule(tmp_path, capsys):
    from runners.cli import main

    make_timing_store(tmp_path / "s", {"fast": 1.0, "slow": 2.0}, studies=3, trials=2, seed=3)
    args = ["compare", "--store", str(tmp_path / "s"), "--algorithms", "slow,fast", "--json"]
    assert main(args + ["--study-time", "fastest"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["study_time"] == "fastest" and doc["verdict"] in ("fast faster",
                                                                 "no difference shown")
    assert set(doc["search_spaces"]) == {"slow", "fast"}
    assert {k: v["trials"] for k, v in doc["search_spaces"].items()} == {"slow": 2, "fast": 2}
    assert set(doc["search_spaces"]["fast"]) == {"origin", "space", "trials"}
    assert doc["sentence"].startswith(doc["verdict"]) and "fast is " in doc["sentence"]
    with pytest.raises(SystemExit):  # argparse's one line, naming the valid rules
        main(args[:-1] + ["--study-time", "slowest"])
    err = capsys.readouterr().err
    assert "invalid choice: 'slowest' (choose from 'algoperf', 'fastest')" in err
    assert len(err.strip().splitlines()) == 1


def test_compare_runs_warns_when_the_reference_looks_under_tuned():
    runs, cube = _table({"a": {"steps": SEPARATE[1], "cost": 0.1},
                         "b": {"steps": SEPARATE[0], "cost": 0.1}})
    # a's median study took 215 steps; its tuned record says 100, with a 10 % noise floor
    r = C.compare_runs(runs, cube, "a", "b", replicates=50, tuned_steps={"w": 100.0},
                       noise_cov={"w": 0.1})
    # a tuning warning (compare --json's tuning_warnings), not a machine-speed caution
    assert r.warnings == () and r.to_json()["tuning_warnings"] == list(r.tuning_warnings)
    # each side is checked (either may be the baseline): b's 115 steps are beyond 10 % too
    assert [w.split(":")[0] for w in r.tuning_warnings] == ["a looks under-tuned on w",
                                                            "b looks under-tuned on w"]
    assert "215 steps to target over 4 studies, 2.15x the 100 steps" in r.tuning_warnings[0]
    assert r.verdict == "b faster" and r.withheld is None  # a caution, not a withheld verdict
    calm = C.compare_runs(runs, cube, "b", "a", replicates=50, tuned_steps={"w": 100.0},
                          noise_cov={"w": 0.2})  # b's 115 steps: within 20 % of 100
    assert calm.warnings == () and [w.split(":")[0] for w in calm.tuning_warnings] == \
        ["a looks under-tuned on w"]


def test_an_imported_store_counts_a_workload_without_runs_as_missed_ours_leaves_it_out():
    from workbench.cubes import final_cube
    from workbench.scoring import ScoringConfig
    from workbench.testing import runs_table

    rows = [dict(algorithm=a, workload="w", study=s, trial=0, index=3, time=t + s)
            for a, t in (("a", 10.0), ("b", 20.0)) for s in range(3)]
    rows += [dict(algorithm="a", workload="v", study=s, trial=0, index=3, time=5.0 + s)
             for s in range(3)]
    runs = runs_table(rows)
    cube = final_cube(runs)
    ours = C.compare_runs(runs, cube, "a", "b", replicates=50)
    assert list(ours.left_out) == ["v"] and ours.counted_as_missed == {}
    imported = C.compare_runs(runs, cube, "a", "b", replicates=50,
                              config=ScoringConfig(benchmark_version="0.5"))
    assert imported.left_out == {} and list(imported.counted_as_missed) == ["v"]
    v = {r.workload: r for r in imported.per_workload}["v"]
    assert (v.studies_b, v.misses_b, v.probability_of_improvement) == (3, 3, 1.0)


def test_the_compare_view_shows_the_tuning_report_and_escapes_it():
    from workbench import tuning as T
    from workbench.views.compare import _about, tuning_tables

    times = study_times({"a": {"w": [1.0, 2, 3]}, "b": {"w": [4.0, 5, 6]}})
    result = C.compare(times, "a", "b", budgets={"w": 10.0})
    bad = "<img src=x>"
    space = {"learning_rate": {"min": 1e-4, "max": 1e-2, "scaling": "log"},
             bad: {"min": 1, "max": 2, "scaling": "linear"}}
    entry = T.report_entry(bad, space, [{"learning_rate": 9e-3, bad: 1.5},
                                        {"learning_rate": 1e-3, bad: 1.2}],
                           [T.Outcome(True, 1.0, 0.9, "max"), T.Outcome(True, 5.0, 0.9, "max")],
                           trials=2, bad=0, planned=2, floor=0.1, workload="<b>w</b>")
    report = {bad: {"<b>w</b>": entry}}
    result = replace(result, tuning=report, fair_tuning=False,
                     tuning_warnings=(entry["finding"],),
                     tuning_runs={bad: {"runs": 2, "origin": "<script>"}})
    text = _about(result, "a", "b")
    assert "**Tuning:** not comparable" in text and "(edge high)" in text
    assert "<img" not in text and "<script>" not in text and "<b>" not in text
    assert "the smallest eval index (AlgoPerf" in text
    report_table, spaces = tuning_tables(result)  # text cells: Tabulator shows them as text
    assert list(report_table["algorithm"]) == [bad] and set(spaces["hyperparameter"]) == \
        {bad, "learning_rate"}
    assert list(spaces.columns) == ["hyperparameter", "algorithm", "workload", "low", "high",
                                    "scaling", "best", "position", "edge"]


@pytest.mark.slow
def test_the_exact_bootstrap_benchmark_counts_the_endpoints_that_differ(tmp_path):
    import subprocess
    import sys

    make_timing_store(tmp_path / "s", {"baseline": 1.0, "x": 1.3}, studies=4, trials=2, seed=5)
    root = REPO
    out = subprocess.run([sys.executable, str(root / "benchmarks" / "exact_bootstrap.py"),
                          "--store", str(tmp_path / "s")], capture_output=True, text=True,
                         timeout=300, cwd=root)
    assert out.returncode == 0, out.stderr[-2000:]
    last = out.stdout.strip().splitlines()[-1]
    assert " of 2 per-workload endpoints differ between 4000 Monte Carlo replicates and the " \
           "exact bootstrap" in last
