"""workbench/ladder.py: the reference's L(D) fit, equal-loss speedups with intervals, the time
ratio, the trend with size and the flags; and the whole path from a store (Results.ladder,
`pacebench ladder --summary`). Generated curves only: testing.ladder_loss is the truth."""
from __future__ import annotations

import json
import math
import warnings
from pathlib import Path
from typing import Callable, Mapping

import numpy as np
import pandas as pd
import pytest

import workbench
from workbench import ladder as L
from workbench import testing as T

RUNGS = T.LADDER_RUNGS


def finals(factors: Mapping[str, float | Callable[[int], float]], rng: np.random.Generator,
           rungs=RUNGS, budgets=(1, 2, 4, 8), seeds: int = 5, noise: float = 0.01,
           seconds_per_token: Mapping[str, float] | None = None, **columns) -> pd.DataFrame:
    """A ladder frame (FINAL_COLUMNS) in memory: algorithm a ends at the truth's loss at
    factor x its tokens, plus N(0, noise); a factor may depend on the rung's size."""
    rows = []
    for rung, n in rungs:
        for name, factor in factors.items():
            m = factor(n) if callable(factor) else factor
            for budget in budgets:
                tokens = 20.0 * n * budget
                losses = T.ladder_loss(n, tokens * m) + noise * rng.standard_normal(seeds)
                for seed, loss in enumerate(losses):
                    rows.append({"run_id": f"{rung}-{name}-{budget}-{seed}", "rung": rung,
                                 "non_embedding_params": n, "params": 2 * n,
                                 "algorithm": name, "budget": float(budget), "tokens": tokens,
                                 "seed": seed, "final_loss": float(loss),
                                 "train_seconds": tokens * (seconds_per_token or {})
                                 .get(name, 1e-4), "status": "complete", "early": False,
                                 "repeated_tokens": False, "transfer": None,
                                 "tuning_trials": 0})
    frame = pd.DataFrame(rows)
    for key, value in columns.items():
        frame[key] = value
    return frame


# -- the fit and its inverse ------------------------------------------------------------------
def test_the_fit_recovers_a_noiseless_power_law_and_agrees_with_its_vectorised_form():
    x = np.array([1e5, 2e5, 4e5, 8e5, 1.6e6])
    y = 40.0 * x ** -0.3 + 1.7
    fit = L.fit_power_law(x, y)
    assert (fit.a, fit.b, fit.c) == pytest.approx((40.0, 0.3, 1.7), rel=1e-4)
    assert fit.rmse < 1e-6 and fit.points == 5 and (fit.low, fit.high) == (1e5, 1.6e6)
    a, b, c = L.fit_power_laws(x, np.stack([y, y + 0.1]))
    assert a == pytest.approx([40.0, 40.0], rel=1e-3) and c == pytest.approx([1.7, 1.8], rel=1e-4)
    assert b == pytest.approx([0.3, 0.3], rel=1e-3)
    with pytest.raises(ValueError, match="3 or more distinct budgets"):
        L.fit_power_law(x[:2], y[:2])


def test_the_fit_keeps_a_and_c_at_or_above_zero():
    rising = L.fit_power_law([1.0, 2.0, 4.0, 8.0], [2.0, 2.05, 2.1, 2.2])  # a < 0 is refused:
    assert rising.a == 0.0 and rising.c == pytest.approx(2.0875)  # flat at the mean
    steep = L.fit_power_law([1.0, 2.0, 4.0], [3.0, 1.0, 0.1])  # would need c < 0
    assert steep.a > 0 and steep.c == 0.0


def test_inverse_golden_cases():
    # L = 2 D^-0.5 + 1: L = 2 at D = 4; at or below c = 1 never; a flat fit is there at once
    assert L.invert(2.0, 0.5, 1.0, 2.0) == pytest.approx(4.0)
    assert L.invert(2.0, 0.5, 1.0, [1.0, 0.5]).tolist() == [math.inf, math.inf]
    assert L.invert(0.0, 0.5, 1.0, 1.5) == 0.0


def test_speedups_by_hand_on_noiseless_curves():
    """Reference L = 2 D^-0.5 + 1 at D = 1, 4, 16, 64; the candidate at D reaches the
    reference's loss at 4D (speedup 4) and takes twice its seconds per token (time ratio 2)."""
    rows = []
    for name, factor, per_token in (("adamw", 1, 1.0), ("x", 4, 2.0)):
        for budget, d in zip((1, 2, 4, 8), (1.0, 4.0, 16.0, 64.0)):
            for seed in range(2):
                rows.append({"run_id": f"{name}{budget}{seed}", "rung": "r",
                             "non_embedding_params": 10, "params": 20, "algorithm": name,
                             "budget": budget, "tokens": d, "seed": seed,
                             "final_loss": 2 * (factor * d) ** -0.5 + 1,
                             "train_seconds": per_token * d, "status": "complete",
                             "early": False, "repeated_tokens": False, "transfer": None,
                             "tuning_trials": 0})
    out = L.ladder_analysis(pd.DataFrame(rows), "adamw", draws=50)
    rung = out["rungs"][0]
    assert rung["fit"]["a"] == pytest.approx(2) and rung["fit"]["b"] == pytest.approx(0.5)
    s = rung["speedups"]["x"]
    assert [p["value"] for p in s["per_budget"]] == pytest.approx([4, 4, 4, 4], rel=1e-4)
    assert s["value"] == pytest.approx(4, rel=1e-4) and s["time_ratio"] == pytest.approx(2, 1e-4)
    # D_ref = 4, 16, 64 lie in the fitted range; 256 (the largest budget's) does not
    assert [p["extrapolated"] for p in s["per_budget"]] == [False, False, False, True]
    assert s["extrapolated"] is True and s["seeds"] == 2 and s["reference_seeds"] == 2


def test_a_loss_below_the_fitted_floor_is_an_undefined_speedup():
    frame = finals({"adamw": 1.0, "x": 1.0}, np.random.default_rng(0), rungs=RUNGS[:1])
    frame.loc[(frame["algorithm"] == "x") & (frame["budget"] == 8), "final_loss"] = 0.5
    s = L.ladder_analysis(frame, "adamw", draws=50)["rungs"][0]["speedups"]["x"]
    assert s["per_budget"][-1]["below_floor"] and s["per_budget"][-1]["value"] is None
    # the budget is reported undefined; the rung's value uses the others, with a warning
    others = [p["value"] for p in s["per_budget"][:-1]]
    assert s["below_floor"] and s["value"] == pytest.approx(
        math.exp(np.mean(np.log(others))), rel=1e-5)
    assert s["budgets_used"] == ["1", "2", "4"] and s["value_all_budgets"] is None
    text = L.ladder_text(L.ladder_analysis(frame, "adamw", draws=50))
    assert "undefined (below c)" in text and "at budget 8 the loss is at or below" in text


# -- null, planted, coverage ------------------------------------------------------------------
@pytest.fixture(scope="module")
def planted_store(tmp_path_factory) -> Path:
    """The reference, its twin (another name, the same curves), and two planted candidates:
    at budget D, `half` ends at the reference's loss at D/2, `double` at 2D; 5 seeds, noise."""
    path = tmp_path_factory.mktemp("ladder") / "store"
    T.make_ladder_store(path, {"adamw": 1.0, "twin": 1.0, "half": 0.5, "double": 2.0},
                        seconds_per_token={"double": 1.25e-4})
    return path


@pytest.fixture(scope="module")
def planted(planted_store) -> dict:
    return workbench.open(planted_store).ladder()


def test_the_json_has_the_issues_shape(planted):
    assert planted["reference"] == "adamw"
    assert [r["name"] for r in planted["rungs"]] == [name for name, _ in RUNGS]
    for rung, (_, n) in zip(planted["rungs"], RUNGS):
        assert rung["non_embedding_params"] == n
        assert set(rung["fit"]) >= {"a", "b", "c", "rmse"}
        assert set(rung["speedups"]) == {"twin", "half", "double"}
        for s in rung["speedups"].values():
            assert set(s) >= {"value", "interval", "extrapolated", "time_ratio", "per_budget"}
            assert [p["budget"] for p in s["per_budget"]] == [1, 2, 4, 8]
            for p in s["per_budget"]:
                assert set(p) >= {"budget", "value", "interval", "extrapolated"}
        assert rung["seeds"] == {"adamw": 5, "twin": 5, "half": 5, "double": 5}
    assert set(planted["trend"]) == {"twin", "half", "double"}
    assert set(planted["trend"]["half"]) >= {"slope_per_doubling", "interval"}
    json.dumps(planted)  # plain JSON: no NaN or numpy types
    assert "NaN" not in json.dumps(planted) and "Infinity" not in json.dumps(planted)


def test_null_the_reference_against_itself_is_1_inside_its_interval_at_every_rung(planted):
    for rung in planted["rungs"]:
        twin = rung["speedups"]["twin"]
        low, high = twin["interval"]
        assert low <= 1 <= high, rung["name"]
        assert twin["value"] == pytest.approx(1, abs=0.05)
    low, high = planted["trend"]["twin"]["interval"]
    assert low <= 0 <= high


def test_planted_speedups_are_recovered_at_every_rung(planted):
    for rung in planted["rungs"]:
        half, double = rung["speedups"]["half"], rung["speedups"]["double"]
        assert half["value"] == pytest.approx(0.5, abs=0.05), rung["name"]
        assert double["value"] == pytest.approx(2, abs=0.2), rung["name"]
        for p in half["per_budget"]:
            assert p["value"] == pytest.approx(0.5, abs=0.05)
        # double spends 1.25x the seconds per token: its time ratio is 2 / 1.25
        assert double["time_ratio"] == pytest.approx(1.6, abs=0.16)
        assert half["time_ratio"] == pytest.approx(half["value"], rel=1e-6)
        # half at the smallest budget equals the reference at half of it: outside the fit
        assert half["per_budget"][0]["extrapolated"] and half["extrapolated"]


def test_intervals_cover_the_planted_speedups_in_at_least_90_percent_of_200_replicates():
    """200 replicate ladders of one rung, 5 seeds, noise 0.01, speedups 1, 0.5 and 2. 200
    draws per interval instead of DRAWS: the draw count only adds Monte-Carlo noise to the
    interval's ends (about 0.2 standard errors of the estimate at 200 draws, 0.09 at 1,000),
    which if anything lowers the coverage measured: the check is conservative."""
    rng = np.random.default_rng(2026)
    truth = {"twin": 1.0, "half": 0.5, "double": 2.0}
    ref = T.ladder_replicates(rng, 1.0, 200)
    intervals = T.replicate_intervals(
        ref, {k: T.ladder_replicates(rng, v, 200) for k, v in truth.items()}, 200, rng)
    covered = {name: sum(low <= truth[name] <= high for low, high in pairs)
               for name, pairs in intervals.items()}
    assert min(covered.values()) >= 180, covered


def test_the_replicate_path_is_rung_analysis_for_one_replicate():
    """testing.replicate_intervals on one replicate gives rung_analysis's interval up to the
    draws' Monte-Carlo error (another random stream): the coverage test measures the
    product."""
    rng = np.random.default_rng(11)
    ref, arm = T.ladder_replicates(rng, 1.0, 1), T.ladder_replicates(rng, 0.5, 1)
    ours = T.replicate_intervals(ref, {"half": arm}, 4000, rng)["half"][0]
    n, tokens = RUNGS[1][1], T.REPLICATE_TOKENS
    rows = [{"run_id": f"{name}{k}{s}", "rung": "r", "non_embedding_params": n,
             "params": None, "algorithm": name, "budget": float(2 ** k),
             "tokens": tokens[k], "seed": s, "final_loss": runs[0, k, s, 0],
             "train_seconds": runs[0, k, s, 1], "status": "complete", "early": False,
             "repeated_tokens": False, "transfer": None, "tuning_trials": 0}
            for name, runs in (("adamw", ref), ("half", arm))
            for k in range(len(tokens)) for s in range(5)]
    theirs = L.ladder_analysis(pd.DataFrame(rows), "adamw", draws=4000)
    assert ours == pytest.approx(tuple(theirs["rungs"][0]["speedups"]["half"]["interval"]),
                                 rel=0.005)


def test_the_trend_recovers_a_planted_slope():
    """Speedup 2^(k/2) at rung k (4x = 2 doublings apart): +0.25 log2 per doubling."""
    size = {n: k for k, (_, n) in enumerate(RUNGS)}
    frame = finals({"adamw": 1.0, "grows": lambda n: 2 ** (size[n] / 2)},
                   np.random.default_rng(3))
    trend = L.ladder_analysis(frame, "adamw", draws=300)["trend"]["grows"]
    assert trend["slope_per_doubling"] == pytest.approx(0.25, abs=0.03)
    low, high = trend["interval"]
    assert low <= 0.25 <= high and low > 0 and trend["rungs"] == 3


def test_the_same_store_gives_the_same_numbers_and_a_new_candidate_moves_none():
    rng = np.random.default_rng(5)
    frame = finals({"adamw": 1.0, "half": 0.5, "zeta": 1.5}, rng, rungs=RUNGS[:1])
    both = L.ladder_analysis(frame, "adamw", draws=100)
    again = L.ladder_analysis(frame, "adamw", draws=100)
    alone = L.ladder_analysis(frame[frame["algorithm"] != "zeta"], "adamw", draws=100)
    assert both == again
    assert both["rungs"][0]["speedups"]["half"] == alone["rungs"][0]["speedups"]["half"]


# -- flags and warnings -----------------------------------------------------------------------
def test_flags_early_runs_repeated_tokens_and_an_under_tuned_reference(tmp_path):
    store = T.make_ladder_store(tmp_path / "s", {"adamw": 1.0, "x": 1.0}, rungs=RUNGS[:1],
                                budgets=(1, 2, 4), seeds=2, early=2, repeated=True,
                                tuning_trials={"adamw": 2, "x": 8})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = workbench.open(store.root).ladder()
    text = " | ".join(out["rungs"][0]["warnings"])
    assert "x: 2 runs read before their schedule ended" in text
    assert "adamw: 6 runs saw training tokens more than once" in text
    assert "the reference adamw got 2 tuning trials, x got 8" in text
    assert "passes through the reference's 3 budgets" in text
    assert out["rungs"][0]["tuning"] == {"adamw": 2, "x": 8}


def test_too_few_budgets_or_no_reference_run_give_no_speedup_and_say_why():
    frame = finals({"adamw": 1.0, "x": 1.0}, np.random.default_rng(0), rungs=RUNGS[:1],
                   budgets=(1, 2))
    rung = L.ladder_analysis(frame, "adamw", draws=20)["rungs"][0]
    assert rung["fit"] is None and rung["speedups"] == {}
    assert "needs 3 or more" in rung["warnings"][0]
    frame = finals({"adamw": 1.0, "x": 1.0}, np.random.default_rng(0), rungs=RUNGS[:1])
    frame.loc[frame["algorithm"] == "adamw", "status"] = "failed"
    rung = L.ladder_analysis(frame, "adamw", draws=20)["rungs"][0]
    assert any("adamw: 20 runs left out" in w and "20 failed" in w for w in rung["warnings"])
    assert any("no finished run at this rung" in w for w in rung["warnings"])
    with pytest.raises(ValueError, match="unknown reference 'nope'.*adamw, x"):
        L.ladder_analysis(frame, "nope")


def test_train_seconds_that_do_not_vary_give_no_time_ratio_and_say_why():
    frame = finals({"adamw": 1.0, "x": 2.0}, np.random.default_rng(0), rungs=RUNGS[:1])
    frame["train_seconds"] = 10.0
    rung = L.ladder_analysis(frame, "adamw", draws=50)["rungs"][0]
    s = rung["speedups"]["x"]
    assert rung["time_fit"] is None and s["time_ratio"] is None
    assert s["time_ratio_interval"] is None and s["value"] == pytest.approx(2, abs=0.2)
    assert any("no time ratio" in w for w in rung["warnings"])


def test_an_interval_with_infinite_draws_has_an_infinite_end():
    draws = np.concatenate([np.linspace(0.9, 1.1, 90), np.full(10, np.inf)])
    low, high = L.interval(draws, 0.95, 1.0, 10**9)
    assert low == pytest.approx(0.9, abs=0.01) and high == math.inf
    assert L.interval(np.full(10, np.nan), 0.95, 1.0, 8) != L.interval(draws, 0.95, 1.0, 8)
    assert all(math.isnan(v) for v in L.interval(np.full(10, np.nan), 0.95, 1.0, 8))


def test_one_seed_has_no_interval():
    frame = finals({"adamw": 1.0, "x": 2.0}, np.random.default_rng(0), rungs=RUNGS[:1],
                   seeds=1)
    s = L.ladder_analysis(frame, "adamw", draws=20)["rungs"][0]["speedups"]["x"]
    assert s["interval"] is None and s["value"] == pytest.approx(2, abs=0.2)
    assert "n/a (1 seed)" in L.ladder_text(L.ladder_analysis(frame, "adamw", draws=20))


# -- hostile stores and the command -----------------------------------------------------------
@pytest.mark.parametrize("record, why", [
    ({"budget": "abc"}, "budget is 'abc'; valid is a number > 0"),
    ({"non_embedding_params": -5}, "non_embedding_params is -5; valid is a whole number >= 1"),
    ({"rung": ""}, "rung is ''; valid is a name of 1 to 200 characters"),
    ({"repeated_tokens": "yes"}, "repeated_tokens is 'yes'; valid is true or false"),
    ({"tokens": float("nan")}, "tokens is nan; valid is a number of tokens > 0"),
])
def test_a_malformed_ladder_record_skips_its_run_in_one_line(tmp_path, record, why):
    store = T.make_ladder_store(tmp_path / "s", {"adamw": 1.0, "x": 2.0}, rungs=RUNGS[:1],
                                seeds=2)
    victim = next(d for d in store.documents() if d["algorithm"] == "x")
    doc_path = store.run_path(victim["run_id"]) / "run.json"
    doc = json.loads(doc_path.read_text())
    doc["config"]["ladder"].update(record)
    doc_path.write_text(json.dumps(doc))
    with pytest.warns(UserWarning, match=f"skipped ladder run {victim['run_id']}: its ladder "
                                         f"record's {why}"):
        out = workbench.open(store.root).ladder()
    assert out["skipped_runs"] == {victim["run_id"]: pytest.approx(out["skipped_runs"]
                                                                   [victim["run_id"]])}
    assert sum(p["seeds"] for p in out["rungs"][0]["speedups"]["x"]["per_budget"]) == 7


def test_hostile_names_pass_through_as_text(tmp_path, capsys):
    from runners.cli import main

    rung, algorithm = T.hostile("rung"), T.hostile("algorithm") + "\n| x |"
    store = T.make_ladder_store(tmp_path / "s", {"adamw": 1.0, algorithm: 2.0},
                                rungs=((rung, 12_000),), seeds=2)
    out = workbench.open(store.root).ladder()
    assert out["rungs"][0]["name"] == rung and algorithm in out["rungs"][0]["speedups"]
    assert main(["ladder", "--summary", "--store", str(store.root)]) == 0
    assert f"rung {rung}:" in capsys.readouterr().out


def test_the_command_prints_the_api_s_json_and_refuses_a_store_without_ladder_runs(
        planted_store, planted, tmp_path, capsys):
    from runners.cli import main

    assert main(["ladder", "--summary", "--json", "--store", str(planted_store)]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == planted
    T.make_store(tmp_path / "plain", studies=1, trials=1)
    assert main(["ladder", "--summary", "--store", str(tmp_path / "plain")]) == 2
    errors = [line for line in capsys.readouterr().err.splitlines()
              if not line.startswith("warning:")]
    assert len(errors) == 1 and "has no ladder runs" in errors[0]


# -- one seed, fragility, sounder summaries (issue 40) ----------------------------------------
def _one_seed(curves: dict, budgets=(1, 2, 4, 8, 16), n=10**6, noise=0.0, rng=None,
              rung="r") -> pd.DataFrame:
    """One run per (algorithm, budget): loss 0.9 (s D / 1e9)^-0.3 + 3 for speedup s, plus
    N(0, noise); no train seconds (an imported table's)."""
    rows = []
    for name, s in curves.items():
        for b in budgets:
            d = 20.0 * n * b
            rows.append({"run_id": f"{name}{b}", "rung": rung, "non_embedding_params": n,
                         "params": None, "algorithm": name, "budget": float(b), "tokens": d,
                         "seed": 0, "final_loss": 0.9 * (s * d / 1e9) ** -0.3 + 3.0 +
                         (rng.normal(0, noise) if noise else 0.0),
                         "train_seconds": math.nan, "status": "complete", "early": False,
                         "repeated_tokens": False, "transfer": None, "tuning_trials": None})
    return pd.DataFrame(rows)


def test_leave_one_out_matches_a_hand_computation_on_five_budgets():
    """Each reference budget left out in turn: refit the other 4 with scipy's curve_fit (as
    Marin's speedup_estimation.py does), invert at the candidate's loss, divide by D."""
    from scipy.optimize import curve_fit

    frame = _one_seed({"adamw": 1.0, "x": 1.3}, noise=0.002, rng=np.random.default_rng(4))
    out = L.ladder_analysis(frame, "adamw", draws=20)
    s = out["rungs"][0]["speedups"]["x"]
    ref = frame[frame["algorithm"] == "adamw"].sort_values("tokens")
    d, y = ref["tokens"].to_numpy() / 1e9, ref["final_loss"].to_numpy()
    x = frame[frame["algorithm"] == "x"].sort_values("tokens")
    changes = {}
    for j, label in enumerate(["1", "2", "4", "8", "16"]):
        keep = np.arange(5) != j
        (a, b, c), _ = curve_fit(lambda t, a, b, c: a * t ** -b + c, d[keep], y[keep],
                                 p0=[y[keep][0] - y[keep][-1], 0.5, y[keep][-1]], maxfev=20000)
        hand = ((x["final_loss"].to_numpy() - c) / a) ** (-1 / b) / (x["tokens"] / 1e9)
        ours = [p["leave_one_out"][label] for p in s["per_budget"]]
        assert ours == pytest.approx(hand.tolist(), rel=2e-4), label
        changes[label] = abs(math.log2(math.exp(np.log(hand).mean()) / s["value"]))
    fragility = out["rungs"][0]["fragility"]["x"]
    assert fragility["budget"] == max(changes, key=changes.get)
    assert fragility["largest_log2_change"] == pytest.approx(max(changes.values()), abs=2e-4)
    assert "fit fragility: x" in L.ladder_text(out)


def test_fragility_needs_four_budgets_and_fit_budgets_restricts_the_fit():
    frame = _one_seed({"adamw": 1.0, "x": 1.3}, budgets=(1, 2, 4))
    rung = L.ladder_analysis(frame, "adamw", draws=20)["rungs"][0]
    assert rung["fragility"] is None and "needs 4 or more" in rung["fragility_note"]
    assert rung["speedups"]["x"]["per_budget"][0]["leave_one_out"] is None
    assert "fit fragility: n/a" in L.ladder_text(L.ladder_analysis(frame, "adamw", draws=20))
    frame = _one_seed({"adamw": 1.0, "x": 1.3})
    out = L.ladder_analysis(frame, "adamw", draws=20, fit_budgets=[1, 2, 4, 8])
    assert out["rungs"][0]["fit"]["points"] == 4 and out["fit_budgets"] == ["1", "2", "4", "8"]
    assert set(out["rungs"][0]["speedups"]["x"]["per_budget"][0]["leave_one_out"]) == \
        {"1", "2", "4", "8"}


def test_a_large_leave_one_out_move_is_flagged():
    """A reference whose largest budget bends away from the curve: leaving it out moves the
    speedup by more than 5 %, which the text flags (no interval: one seed)."""
    frame = _one_seed({"adamw": 1.0, "x": 1.3}, budgets=(1, 2, 4, 8))
    frame.loc[(frame["algorithm"] == "adamw") & (frame["budget"] == 8), "final_loss"] -= 0.1
    out = L.ladder_analysis(frame, "adamw", draws=20)
    fragility = out["rungs"][0]["fragility"]["x"]
    assert fragility["fragile"] and fragility["budget"] == "8"
    assert fragility["largest_log2_change"] > math.log2(1.05)
    assert "warning: fragile x" in L.ladder_text(out)


def test_loss_noise_intervals_cover_a_planted_speedup_in_90_percent_of_200_replicates():
    """One seed per configuration, noise 0.002 nats, --loss-noise 0.002: the parametric
    bootstrap's intervals (testing.replicate_intervals, the steps of rung_analysis with the
    replicates vectorised) cover the planted 1.3 and 1 in >= 180 of 200 replicates."""
    rng = np.random.default_rng(40)
    truth = {"fast": 1.3, "twin": 1.0}
    ref = T.ladder_replicates(rng, 1.0, 200, seeds=1, noise=0.002)
    arms = {k: T.ladder_replicates(rng, v, 200, seeds=1, noise=0.002) for k, v in truth.items()}
    intervals = T.replicate_intervals(ref, arms, 200, rng, loss_noise=0.002)
    covered = {k: sum(lo <= truth[k] <= hi for lo, hi in pairs) for k, pairs in intervals.items()}
    assert min(covered.values()) >= 180, covered


def test_the_replicate_path_with_loss_noise_is_rung_analysis():
    rng = np.random.default_rng(12)
    ref = T.ladder_replicates(rng, 1.0, 1, seeds=1, noise=0.002)
    arm = T.ladder_replicates(rng, 1.3, 1, seeds=1, noise=0.002)
    ours = T.replicate_intervals(ref, {"fast": arm}, 4000, rng, loss_noise=0.002)["fast"][0]
    n, tokens = RUNGS[1][1], T.REPLICATE_TOKENS
    rows = [{"run_id": f"{name}{k}", "rung": "r", "non_embedding_params": n, "params": None,
             "algorithm": name, "budget": float(2 ** k), "tokens": tokens[k], "seed": 0,
             "final_loss": runs[0, k, 0, 0], "train_seconds": runs[0, k, 0, 1],
             "status": "complete", "early": False, "repeated_tokens": False,
             "transfer": None, "tuning_trials": 0}
            for name, runs in (("adamw", ref), ("fast", arm)) for k in range(len(tokens))]
    theirs = L.ladder_analysis(pd.DataFrame(rows), "adamw", draws=4000, loss_noise=0.002)
    assert ours == pytest.approx(tuple(theirs["rungs"][0]["speedups"]["fast"]["interval"]),
                                 rel=0.005)


def test_one_seed_says_how_to_get_intervals_and_loss_noise_is_refused_with_seeds():
    frame = _one_seed({"adamw": 1.0, "x": 1.3})
    out = L.ladder_analysis(frame, "adamw", draws=20)
    assert out["rungs"][0]["speedups"]["x"]["interval"] is None
    assert "--loss-noise SIGMA" in out["interval_note"] and "--loss-noise" in L.ladder_text(out)
    seeded = finals({"adamw": 1.0, "x": 2.0}, np.random.default_rng(0), rungs=RUNGS[:1], seeds=2)
    with pytest.raises(ValueError, match="--loss-noise is for one seed per configuration; .* "
                                         "has 2 seeds"):
        L.ladder_analysis(seeded, "adamw", draws=20, loss_noise=0.002)
    with pytest.raises(ValueError, match="--loss-noise -1 is not valid"):
        L.ladder_analysis(frame, "adamw", draws=20, loss_noise=-1)


def test_the_overall_value_uses_shared_budgets_and_a_missing_budget_prints_a_dash():
    """The candidate is the reference at half the tokens (budgets 0.5 to 8): 2.000 at every
    budget; the rung's value is over the 4 budgets both ran; 16 prints '-' for it."""
    frame = _one_seed({"adamw": 1.0})
    half = frame.assign(algorithm="half", tokens=frame["tokens"] / 2,
                        budget=frame["budget"] / 2)
    twin = frame.assign(algorithm="twin")  # budgets 1 to 16: the table has a 16x column
    out = L.ladder_analysis(pd.concat([frame, half, twin]), "adamw", draws=20)
    s = out["rungs"][0]["speedups"]["half"]
    assert [p["value"] for p in s["per_budget"]] == pytest.approx([2.0] * 5, abs=5e-4)
    assert s["budgets_used"] == ["1", "2", "4", "8"] and [p["shared"] for p in
                                                          s["per_budget"]][0] is False
    assert s["value"] == pytest.approx(2.0, abs=5e-4)
    table = L.ladder_text(out)
    speed = next(line for line in table.splitlines() if line.split()[:1] == ["half"]
                 and " vs " in line)
    assert speed.split()[-1] == "-" and "NaN" not in table  # the 16x column


def test_time_ratios_carry_extrapolated():
    rows = []
    for name, factor in (("adamw", 1), ("x", 4)):
        for budget, d in zip((1, 2, 4, 8), (1.0, 4.0, 16.0, 64.0)):
            rows.append({"run_id": f"{name}{budget}", "rung": "r", "non_embedding_params": 10,
                         "params": 20, "algorithm": name, "budget": budget, "tokens": d,
                         "seed": 0, "final_loss": 2 * (factor * d) ** -0.5 + 1,
                         "train_seconds": d, "status": "complete", "early": False,
                         "repeated_tokens": False, "transfer": None, "tuning_trials": 0})
    s = L.ladder_analysis(pd.DataFrame(rows), "adamw", draws=20)["rungs"][0]["speedups"]["x"]
    assert [p["time_ratio_extrapolated"] for p in s["per_budget"]] == [False] * 3 + [True]
    assert s["time_ratio_extrapolated"] is True


def test_a_candidate_sorting_first_leaves_another_candidates_json_identical():
    rng = np.random.default_rng(5)
    frame = finals({"adamw": 1.0, "half": 0.5, "aaa": 1.5}, rng, rungs=RUNGS[:2])
    both = L.ladder_analysis(frame, "adamw", draws=100)
    alone = L.ladder_analysis(frame[frame["algorithm"] != "aaa"], "adamw", draws=100)
    for key in ("rungs",):
        for r_both, r_alone in zip(both[key], alone[key]):
            assert json.dumps(r_both["speedups"]["half"], sort_keys=True) == \
                json.dumps(r_alone["speedups"]["half"], sort_keys=True)
    assert both["trend"]["half"] == alone["trend"]["half"]
    assert both["verdicts"]["half"] == alone["verdicts"]["half"]


def test_verdicts_say_faster_slower_or_not_shown_with_the_trend(planted):
    verdicts = planted["verdicts"]
    assert verdicts["double"].startswith("double: faster than adamw at every rung (")
    assert verdicts["half"].startswith("half: slower than adamw at every rung (")
    assert verdicts["twin"].startswith("twin: not shown (")
    assert "per doubling of model size" in verdicts["double"]
