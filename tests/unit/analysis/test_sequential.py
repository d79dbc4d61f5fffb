"""The sequential test (workbench/sequential.py) against brute force, and `compare --sequential`.

The brute force below shares no code with the module: it enumerates every relabelling of every
block with itertools, computes each look's statistic with Fractions from the pairs of studies,
and sets the boundaries from the definition (the share of paths that crossed, counted exactly).
"""
from __future__ import annotations

import itertools
import json
import math
from fractions import Fraction

import numpy as np
import pytest
import xarray as xr

from runners.cli import main
from workbench import open as open_results
from workbench.sequential import (blocks_of, rounds_of, sequential_test, spent,
                                  stopping_look)
from workbench.testing import make_timing_store

INF = math.inf
# Two workloads; round 1 holds 2 studies a side, rounds 2 and 3 one each; ties and misses.
SMALL = [[([3.0, INF], [1.0, 2.0]), ([5.0, 6.0], [5.0, 7.0])],
         [([4.0], [2.5]), ([INF], [8.0])],
         [([0.5], [INF]), ([6.5], [6.5])]]


def _blocks(raw):
    return [[(np.array(a), np.array(b)) for a, b in block] for block in raw]


def _relabellings(raw):
    """Every relabelled data set: per block and workload, which of the pooled studies are A."""
    cells = [(k, w) for k in range(len(raw)) for w in range(len(raw[k]))]
    choices = []
    for k, w in cells:
        a, b = raw[k][w]
        pooled = list(a) + list(b)
        choices.append([([pooled[i] for i in c], [pooled[i] for i in range(len(pooled))
                                                   if i not in c])
                        for c in itertools.combinations(range(len(pooled)), len(a))])
    for pick in itertools.product(*choices):
        out = [[None] * len(block) for block in raw]
        for (k, w), cell in zip(cells, pick):
            out[k][w] = cell
        yield out


def _statistic(data, look):
    """Mean over workloads of P(A beats B) over all pairs up to `look`, ties half (Fractions)."""
    shares = []
    for w in range(len(data[0])):
        a = [x for block in data[:look + 1] for x in block[w][0]]
        b = [x for block in data[:look + 1] for x in block[w][1]]
        wins = sum(Fraction(1) if x < y else Fraction(1, 2) if x == y else Fraction(0)
                   for x in a for y in b)
        shares.append(wins / (len(a) * len(b)))
    return sum(shares) / len(shares)


def _brute_boundaries(raw, max_studies, confidence, studies):
    """Every look's (upper, lower) boundary by the definition, over all relabelled paths."""
    paths = [[_statistic(d, k) for k in range(len(raw))] for d in _relabellings(raw)]
    n, alpha = len(paths), 1 - confidence
    alive = [True] * n
    up = low = 0
    out = []
    for k in range(len(raw)):
        allowed = spent(studies[k] / max_studies, alpha) / 2 * n
        values = sorted({p[k] for p, live in zip(paths, alive) if live})
        upper = next((v for v in values
                      if up + sum(live and p[k] >= v for p, live in zip(paths, alive))
                      <= allowed + 1e-9), None)
        lower = next((v for v in reversed(values)
                      if low + sum(live and p[k] <= v for p, live in zip(paths, alive))
                      <= allowed + 1e-9), None)
        crossed = [live and ((upper is not None and p[k] >= upper)
                             or (lower is not None and p[k] <= lower))
                   for p, live in zip(paths, alive)]
        up += sum(live and upper is not None and p[k] >= upper
                  for p, live in zip(paths, alive))
        low += sum(live and lower is not None and p[k] <= lower
                   for p, live in zip(paths, alive))
        alive = [live and not c for live, c in zip(alive, crossed)]
        out.append((upper, lower))
    return out, (up + low) / n


@pytest.mark.parametrize("confidence", [0.95, 0.8, 0.5])
def test_boundaries_and_the_error_over_all_looks_match_brute_force(confidence):
    test = sequential_test(_blocks(SMALL), 4, confidence)
    assert test.exact and test.paths == 6 * 6 * 2 * 2 * 2 * 2
    studies = [look.studies for look in test.looks]
    assert studies == [2, 3, 4]
    brute, error = _brute_boundaries(SMALL, 4, confidence, studies)
    for look, (upper, lower) in zip(test.looks, brute):
        assert look.upper == (None if upper is None else pytest.approx(float(upper), abs=1e-9))
        assert look.lower == (None if lower is None else pytest.approx(float(lower), abs=1e-9))
    assert test.error == pytest.approx(error) and error <= 1 - confidence


def test_under_the_null_the_share_of_data_sets_with_a_verdict_is_the_error():
    test = sequential_test(_blocks(SMALL), 4, 0.5)
    # Every relabelled data set has the same boundaries, and the share of them that gets a
    # verdict is the error: under the null the false-verdict rate over all looks, exactly.
    verdicts = 0
    for data in _relabellings(SMALL):
        again = sequential_test(_blocks(data), 4, 0.5)
        assert [(x.upper, x.lower) for x in again.looks] == \
            [(x.upper, x.lower) for x in test.looks]
        verdicts += again.decided_at is not None
    assert verdicts / test.paths == pytest.approx(test.error) and 0 < test.error <= 0.5


def test_the_observed_path_decides_at_its_first_crossing():
    planted = [[([1.0, 1.1], [2.0, 2.1]), ([1.0, 1.2], [3.0, 3.3])],
               [([1.05], [2.2]), ([1.1], [3.1])],
               [([1.01], [2.05]), ([1.15], [3.2])]]
    test = sequential_test(_blocks(planted), 4, 0.8)
    first = next(k for k, x in enumerate(test.looks)
                 if x.upper is not None and x.statistic >= x.upper)
    assert (test.decided_at, test.direction) == (first, 1)
    swapped = [[(b, a) for a, b in block] for block in planted]
    mirror = sequential_test(_blocks(swapped), 4, 0.8)
    assert (mirror.decided_at, mirror.direction) == (first, -1)


def test_random_paths_give_nearly_the_exact_boundaries(monkeypatch):
    from workbench import sequential as S
    exact = sequential_test(_blocks(SMALL), 4, 0.5)
    monkeypatch.setattr(S, "EXACT_PATHS", 10)
    sampled = sequential_test(_blocks(SMALL), 4, 0.5)
    assert not sampled.exact and sampled.paths == S.PERMUTATIONS
    assert abs(sampled.error - exact.error) < 0.03
    # the first k blocks' random paths do not depend on later blocks: a look's boundaries are
    # the same with or without the rounds after it
    shorter = sequential_test(_blocks(SMALL[:2]), 4, 0.5)
    assert [(x.upper, x.lower) for x in shorter.looks] == \
        [(x.upper, x.lower) for x in sampled.looks[:2]]


def test_spending_is_pocock_type_and_reaches_alpha_at_the_end():
    assert spent(1.0, 0.05) == pytest.approx(0.05)
    assert spent(0.5, 0.05) == pytest.approx(0.05 * math.log(1 + (math.e - 1) / 2))
    assert spent(0.2, 0.05, "obrien-fleming") < spent(0.2, 0.05)
    with pytest.raises(ValueError, match="unknown spending"):
        spent(0.5, 0.05, "linear")


def test_rounds_take_each_algorithms_lowest_numbered_studies():
    nan = math.nan
    times = xr.DataArray([[[1.0, nan, 3.0, INF]], [[5.0, 6.0, 7.0, nan]]],
                         dims=("algorithm", "workload", "study"),
                         coords={"algorithm": ["a", "b"], "workload": ["w"],
                                 "study": [0, 1, 2, 3]})
    assert rounds_of(times, "a") == [0, 2, 3] and rounds_of(times, "b") == [0, 1, 2]
    blocks = blocks_of(times, "a", "b", ["w"], 3)
    assert [[list(x) for x in blk[0]] for blk in blocks] == [[[1.0, 3.0], [5.0, 6.0]],
                                                            [[INF], [7.0]]]
    with pytest.raises(ValueError, match="4 rounds asked for, but a has 3 studies"):
        blocks_of(times, "a", "b", ["w"], 4)


def test_futility_stops_when_the_planned_studies_cannot_detect_the_speedup():
    rng = np.random.default_rng(0)
    noisy = [[(np.exp(rng.normal(0, 1.5, 3)), np.exp(rng.normal(0, 1.5, 3)))]]
    noisy += [[(np.exp(rng.normal(0, 1.5, 1)), np.exp(rng.normal(0, 1.5, 1)))]
              for _ in range(2)]
    test = sequential_test(_blocks([[(list(a), list(b)) for a, b in blk] for blk in noisy]),
                           10, 0.95)
    look, why = stopping_look(test, noisy, [1e9], 10, detect=1.25)
    assert (why, test.looks[look].studies) == ("futile", 3)
    # with a tiny spread the same plan can detect 1.25x: it goes on
    quiet = [[(1 + 0.001 * a, 1 + 0.001 * b) for a, b in blk] for blk in noisy]
    test = sequential_test(quiet, 10, 0.95)
    assert stopping_look(test, quiet, [1e9], 10)[1] is None
    # nor when the speedup seen so far is already the one the plan is sized for
    apart = [[(a, b * 2.0) for a, b in blk] for blk in noisy]
    assert stopping_look(sequential_test(apart, 10, 0.95), apart, [1e9], 10)[1] is None


@pytest.fixture(scope="module")
def planted_store(tmp_path_factory):
    root = tmp_path_factory.mktemp("seq") / "s"
    make_timing_store(root, {"fast": 1.0, "slow": 1.6}, workloads=("mnist1d_mlp", "digits_mlp"),
                      studies=6, trials=3, spread=0.1, miss_rate=0.0, n_evals=30)
    return root


def test_compare_sequential_stops_at_the_first_decided_round(planted_store, capsys):
    assert main(["compare", "--store", str(planted_store), "--algorithms", "fast,slow",
                 "--sequential", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["verdict"], out["stopped_because"]) == ("fast faster", "decided")
    assert out["studies_used"] == out["sequential"]["looks"][-1]["studies"] < 6
    assert out["per_workload"]["digits_mlp"]["studies"] == out["studies_used"]
    assert out["sequential"]["max_studies"] == 6 and out["probability_of_improvement"] == 1.0
    assert open_results(planted_store).compare("fast", "slow", sequential=True) == out
    assert main(["compare", "--store", str(planted_store), "--algorithms", "fast,slow",
                 "--sequential"]) == 0
    text = capsys.readouterr().out
    assert f"studies used: {out['studies_used']} a side of 6; stopped because: decided" in text


@pytest.mark.parametrize("argv, message", [
    (["--sequential", "--max-studies", "9"], "--max-studies 9: the store holds 6 studies"),
    (["--sequential", "--max-studies", "1"], "--max-studies 1: must be an integer >= 2"),
    (["--max-studies", "4"], "--max-studies goes with --sequential"),
])
def test_bad_sequential_options_are_one_line(planted_store, capsys, argv, message):
    assert main(["compare", "--store", str(planted_store), "--algorithms", "fast,slow",
                 *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_max_studies_caps_the_replay(planted_store):
    out = open_results(planted_store).compare("fast", "slow", sequential=True, max_studies=2)
    assert (out["studies_used"], out["stopped_because"]) == (2, "max studies")
    assert out["verdict"] == "no difference shown"  # 2 + 2 studies on 2 workloads: p >= 1/36


@pytest.mark.slow
def test_study_until_decided_runs_rounds_and_stops_at_the_verdict(tmp_path, capsys):
    """A planted outcome: nadamw at the synthetic workload's tuned point reaches the target,
    SGD at a learning rate of 1e-7 never does; at 80 % and 3 studies at most, 2 + 2 studies
    cannot decide (the smallest share of relabellings is 1/6) and 3 + 3 can. A trial's random
    seed depends on its seed, study and trial index only: nadamw's studies 0-2 reach the target
    at steps 205, 115 and 145 of the 400 the budget allows."""
    fast, slow = tmp_path / "fast.json", tmp_path / "slow.json"
    fast.write_text(json.dumps({"learning_rate": {"feasible_points": [0.025]},
                                "one_minus_beta1": {"feasible_points": [0.1]},
                                "beta2": {"feasible_points": [0.999]},
                                "weight_decay": {"feasible_points": [0.0013]},
                                "warmup_factor": {"feasible_points": [0.05]}}))
    slow.write_text(json.dumps({"learning_rate": {"feasible_points": [1e-7]}}))
    store = tmp_path / "s"
    assert main(["study", "--workloads", "synthetic", "--algorithms",
                 "nadamw,slow=torch.optim:SGD", "--search-space", f"nadamw={fast}",
                 "--search-space", f"slow={slow}", "--trials", "1", "--until-decided",
                 "nadamw,slow", "--max-studies", "3", "--confidence", "0.8", "--name", "ud",
                 "--store", str(store), "--workers", "2", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "round 1: 2 studies of each algorithm" in out
    assert "no verdict yet after 2 studies a side" in out
    assert "studies used: 3 a side of 3; stopped because: decided" in out
    assert "nadamw faster by the sequential test at 80% after 3 studies a side" in out
    runs = open_results(store).runs()
    assert sorted(runs.groupby("algorithm")["study"].max()) == [2, 2]  # no fourth round ran


@pytest.mark.parametrize("argv, message", [
    (["--until-decided", "adamw,nope"], "--until-decided adamw,nope: give two different"),
    (["--until-decided", "adamw,adamw"], "--until-decided adamw,adamw: give two different"),
    (["--max-studies", "4"], "--max-studies goes with --until-decided A,B"),
    (["--until-decided", "adamw,heavy_ball", "--studies", "5", "--max-studies", "4"],
     "--studies 5: the first round needs 2 studies a side"),
    (["--until-decided", "adamw,heavy_ball", "--confidence", "1.5"],
     "--confidence 1.5: must be a number in (0, 1)"),
])
def test_bad_until_decided_options_are_one_line_before_anything_runs(tmp_path, capsys, argv,
                                                                      message):
    assert main(["study", "--workloads", "synthetic", "--algorithms", "adamw,heavy_ball",
                 "--store", str(tmp_path / "s"), *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "s").exists()


def test_a_replay_goes_through_one_study_name(tmp_path, capsys):
    from workbench.testing import make_store

    for name in ("first", "second"):
        make_store(tmp_path / "s", studies=2, trials=2, n_evals=8, study_name=name)
    argv = ["compare", "--store", str(tmp_path / "s"), "--algorithms", "fast,slow",
            "--sequential", "--json"]
    assert main(argv) == 2
    assert "come from several study names (first, second): a replay goes through one; pick " \
        "it with --study NAME" in capsys.readouterr().err
    assert main([*argv, "--study", "first"]) == 0
    assert json.loads(capsys.readouterr().out)["studies_used"] == 2


def test_with_random_paths_the_false_verdict_rate_is_the_error_spent(monkeypatch):
    """The Monte Carlo branch's guarantee: the observed labelling is one of the random paths,
    exchangeable with them under the null, so over uniformly relabelled data and independent
    seeds the share of data sets with a verdict is the mean share of paths that cross (not
    more). Every relabelled data set of SMALL, each with three seeds, 100 random paths."""
    from workbench import sequential as S
    monkeypatch.setattr(S, "EXACT_PATHS", 10)
    monkeypatch.setattr(S, "PERMUTATIONS", 100)
    verdicts, errors = [], []
    for i, data in enumerate(_relabellings(SMALL)):
        for seed in range(3):
            test = sequential_test(_blocks(data), 4, 0.5, seed=1000 * i + seed)
            assert not test.exact and test.error <= 0.5
            verdicts.append(test.decided_at is not None)
            errors.append(test.error)
    rate, spent_mean = np.mean(verdicts), np.mean(errors)
    # 1728 draws: the standard error of the rate is about 0.012
    assert abs(rate - spent_mean) < 0.04 and 0.2 < spent_mean <= 0.5


def test_until_decided_on_a_study_the_store_holds_says_once_what_to_do(tmp_path, capsys):
    """Without --resume on a store that holds the study: one error line (--resume or --name),
    not that and then "round 1 did not complete" as well; nothing runs."""
    from workbench.testing import make_store

    store = tmp_path / "s"
    make_store(store, algorithms=("adamw", "heavy_ball"), workloads=("digits_mlp",),
               studies=1, trials=1)
    before = len(open_results(store).runs())
    assert main(["study", "--workloads", "digits_mlp", "--algorithms", "adamw,heavy_ball",
                 "--until-decided", "adamw,heavy_ball", "--name", "synthetic",
                 "--store", str(store), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("error:") == 1 and "pass --resume" in err
    assert "did not complete" not in err
    assert len(open_results(store).runs()) == before
