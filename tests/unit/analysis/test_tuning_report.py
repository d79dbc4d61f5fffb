"""The tuning report (workbench/tuning.py, issue 38): the edge rule against the noise floor,
bracketed, fair_tuning and its warnings, tuning runs, and the surfaces that show them."""
from __future__ import annotations

import json
import math

import pytest

from workbench import tuning as T
from workbench.testing import make_planned_store

LR = {"learning_rate": {"min": 1e-4, "max": 1e-2, "scaling": "log"}}


def _lr(space, where: float) -> float:
    r = space["learning_rate"]
    return r["min"] * (r["max"] / r["min"]) ** where


def _hit(time: float) -> T.Outcome:
    return T.Outcome(True, time, 0.8, "max")


def _entry(points, space=LR, floor=0.1, **kwargs):
    """report_entry of trials given as (position of the learning rate, Outcome)."""
    return T.report_entry("x", space, [{"learning_rate": _lr(LR, p)} for p, _ in points],
                          [o for _, o in points], trials=kwargs.pop("trials", len(points)),
                          bad=kwargs.pop("bad", 0), planned=len(points), floor=floor, **kwargs)


def test_the_edge_rule_flags_a_best_at_either_end_that_beats_the_inside_beyond_the_floor():
    high = _entry([(0.2, _hit(9.0)), (0.5, _hit(6.0)), (0.95, _hit(4.0))])
    assert high["edge"] == {"learning_rate": "high"} and high["bracketed"] is False
    assert high["hparams"]["learning_rate"]["position"] == 0.95
    assert "widen the range upward" in high["finding"] and "(edge high)" in high["finding"]
    low = _entry([(0.02, _hit(4.0)), (0.5, _hit(6.0)), (0.8, _hit(9.0))])
    assert low["edge"] == {"learning_rate": "low"} and low["bracketed"] is False
    assert "widen the range downward" in low["finding"]
    # the inner best missed the target the best met: beyond any floor
    missed = _entry([(0.05, _hit(40.0)), (0.5, T.Outcome(False, math.inf, 0.7, "max"))])
    assert missed["edge"] == {"learning_rate": "low"}


def test_no_edge_when_the_best_near_an_end_is_within_the_noise_floor():
    # 4.0 against 4.3 s: 7.5 % apart, within a 10 % floor (a sound space, a lucky draw)
    near = _entry([(0.95, _hit(4.0)), (0.5, _hit(4.3)), (0.2, _hit(9.0))])
    assert near["edge"] == {"learning_rate": None} and near["bracketed"] is True
    assert near["finding"].endswith("; bracketed")
    # the same with a measured floor of 5 %: now beyond it
    assert _entry([(0.95, _hit(4.0)), (0.5, _hit(4.3))], floor=0.05)["edge"] == \
        {"learning_rate": "high"}
    # no floor measured: the default, said so
    default = _entry([(0.95, _hit(4.0)), (0.5, _hit(4.3))], floor=None)
    assert default["floor_source"] == "default" and default["noise_floor"] == 0.1
    assert default["edge"] == {"learning_rate": None}
    # with no trial reaching the target, the metric decides (loss: lower is better)
    loss = [(0.95, T.Outcome(False, math.inf, 1.0, "min")),
            (0.5, T.Outcome(False, math.inf, 1.05, "min"))]
    assert _entry(loss)["edge"] == {"learning_rate": None}
    loss[1] = (0.5, T.Outcome(False, math.inf, 1.3, "min"))
    assert _entry(loss)["edge"] == {"learning_rate": "high"}


def test_bracketed_is_null_with_a_reason_where_there_is_no_range():
    trials = [(0.5, _hit(4.0)), (0.7, _hit(5.0))]
    points = _entry(trials, space=[{"learning_rate": 0.1}, {"learning_rate": 0.01}])
    assert points["bracketed"] is None and "list of points" in points["why"]
    assert "not judged" in points["finding"]
    fixed = _entry(trials, space={"learning_rate": {"feasible_points": [0.1, 0.01]}})
    assert fixed["bracketed"] is None and "feasible points only" in fixed["why"]
    assert fixed["hparams"]["learning_rate"]["points"] == [0.1, 0.01]
    unrecorded = _entry(trials, space=None)
    assert unrecorded["bracketed"] is None and "no search space recorded" in unrecorded["why"]
    selfish = _entry(trials, why="self-tuning: no search space to judge")
    assert selfish["bracketed"] is None and selfish["why"].startswith("self-tuning")
    inside = _entry([(0.95, _hit(4.0)), (0.97, _hit(5.0))])  # nothing in the inner 80 %
    assert inside["bracketed"] is None and "inner 80 %" in inside["why"]
    hostile = _entry(trials, space={"learning_rate": {"min": "<b>", "max": 1, "scaling": "x"}})
    assert hostile["bracketed"] is None  # not a range: nothing judged, nothing raised


def test_half_the_trials_bad_is_not_bracketed_and_other_hparams_are_shown_not_judged():
    space = {**LR, "weight_decay": {"min": 1e-3, "max": 1e-1, "scaling": "log"}}
    hp = [{"learning_rate": _lr(LR, 0.5), "weight_decay": 0.099},
          {"learning_rate": _lr(LR, 0.3), "weight_decay": 0.01}]
    entry = T.report_entry("x", space, hp, [_hit(4.0), _hit(9.0)], trials=4, bad=2,
                           planned=4, floor=0.1)
    assert entry["bad_fraction"] == 0.5 and entry["bracketed"] is False
    assert entry["edge"] == {"learning_rate": None}  # weight decay at 0.998 is not judged
    assert entry["hparams"]["weight_decay"]["position"] == pytest.approx(0.998, abs=1e-3)
    judged = T.report_entry("x", space, hp, [_hit(4.0), _hit(9.0)], trials=2, bad=0,
                            planned=2, floor=0.1, judged=T.judged_names(["weight_decay"]))
    assert judged["edge"] == {"learning_rate": None, "weight_decay": "high"}
    with pytest.raises(ValueError, match="a hyperparameter name is letters"):
        T.judged_names(["<script>"])


def test_fair_tuning_and_its_warnings():
    good = {"w": _entry([(0.5, _hit(4.0)), (0.2, _hit(6.0))])}
    edge = {"w": _entry([(0.95, _hit(4.0)), (0.5, _hit(6.0))])}
    blank = {"w": _entry([(0.5, _hit(4.0)), (0.2, _hit(6.0))], space=None)}
    assert T.fair_tuning({"a": good, "b": good}, "a", "b") is True
    assert T.fair_tuning({"a": good, "b": edge}, "a", "b") is False
    assert T.fair_tuning({"a": blank, "b": blank}, "a", "b") is None
    assert T.fair_tuning({"a": good, "b": blank}, "a", "b") is True
    more = {"w": {**good["w"], "planned_trials": 8}}
    assert T.fair_tuning({"a": good, "b": more}, "a", "b") is False
    warnings = T.tuning_warnings({"a": more, "b": edge}, "a", "b", ["a looks under-tuned on w"])
    assert warnings[0].startswith("x: best learning_rate") and "(edge high)" in warnings[0]
    assert warnings[1] == ("unequal tuning: a had 8 trials per study, b 2: the side with more "
                           "trials is favoured")
    assert warnings[2] == "a looks under-tuned on w"


# -- a planted store: AdamW's file space against a copy's range 30x too low ---------------------
ADAMW = {"learning_rate": {"min": 3e-3, "max": 1e-1, "scaling": "log"},
         "beta2": {"feasible_points": [0.999]}}
W = "mnist1d_mlp"  # its measured noise floor: CoV 9.9 %


def _plan(copy_space=LR, copy_best=(0.97, 3), trials_copy=4, hostile=None):
    """adamw well centred (best at the middle); the copy's best (position, hit eval) given, its
    low trials stalled; three tuning runs of the copy (`pacebench tune`'s study name)."""
    plan = {}
    copy = hostile or "copy"
    for study in range(3):
        for t, (where, hit) in enumerate([(0.2, 6), (0.5, 3), (0.7, 5), (0.95, 6)]):
            plan[("adamw", W, study, t, "main")] = {
                "hit": hit, "launched_by": "study",
                "hparams": {"learning_rate": _lr(ADAMW, where), "beta2": 0.999},
                "doc": {"search_space": ADAMW, "search_space_origin": "file",
                        "search_space_file": "/spaces/adamw.json"}}
        rows = [(0.05, None, "stalled"), (0.3, None, "complete"), (0.6, 8, "complete"),
                (*copy_best, "complete")][:trials_copy]
        for t, (where, hit, status) in enumerate(rows):
            plan[(copy, W, study, t, "main")] = {
                "hit": hit, "status": status, "launched_by": "study",
                "hparams": {"learning_rate": _lr(copy_space, where),
                            **({hostile: 1.0} if hostile else {})},
                "doc": {"search_space": {**copy_space, **({hostile: {
                    "min": 0.5, "max": 2.0, "scaling": "linear"}} if hostile else {})},
                        "search_space_origin": "signature"}}
    for t in range(3):
        plan[(copy, W, 0, t, "tune-" + copy)] = {
            "hit": 4, "launched_by": "study", "hparams": {"learning_rate": 10.0 ** -t},
            "doc": {"phase": "tuning"}}
    return plan


def test_compare_json_a_copy_with_a_range_too_low_is_not_fairly_tuned(tmp_path, capsys):
    from runners.cli import main

    make_planned_store(tmp_path / "s", _plan())
    args = ["compare", "--store", str(tmp_path / "s"), "--algorithms", "adamw,copy",
            "--study", "main"]
    assert main(args + ["--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["fair_tuning"] is False
    (warning,) = doc["tuning_warnings"]
    assert warning.startswith("copy on mnist1d_mlp: best learning_rate 0.0087 at the top of "
                              "its range (0.0001 to 0.01) (edge high)")
    assert "3 of 12 trials diverged, stalled or failed" in warning
    copy, adamw = doc["tuning"]["copy"][W], doc["tuning"]["adamw"][W]
    assert (copy["trials"], copy["finished"], copy["bad_fraction"]) == (12, 12, 0.25)
    assert copy["edge"] == {"learning_rate": "high"} and copy["bracketed"] is False
    assert copy["floor_source"] == "measured" and copy["noise_floor"] == pytest.approx(0.0991,
                                                                                       abs=1e-4)
    assert adamw["edge"] == {"learning_rate": None} and adamw["bracketed"] is True
    assert adamw["hparams"]["learning_rate"]["position"] == 0.5
    assert adamw["hparams"]["beta2"] == {"points": [0.999], "value": 0.999, "position": None}
    assert doc["tuning_runs"] == {
        "adamw": {"runs": 0, "finished": 0, "study_names": [], "origin": "file",
                  "file": "/spaces/adamw.json"},
        "copy": {"runs": 3, "finished": 3, "study_names": ["tune-copy"],
                 "origin": "signature", "file": None}}
    assert main(args) == 0
    text = capsys.readouterr().out
    lines = text.splitlines()
    tuning = next(i for i, x in enumerate(lines) if x.startswith("tuning: "))
    assert lines[tuning] == ("tuning: not comparable: copy's best learning_rate at the high "
                             "edge of its range on mnist1d_mlp (the tuning report below says "
                             "more)")
    assert tuning < next(i for i, x in enumerate(lines) if x.startswith("verdict in"))
    assert "fairness:" not in text and '{"learning_rate"' not in text  # a table, not JSON
    header = next(x for x in lines if x.split()[:6] == ["hyperparameter", "algorithm",
                                                         "workload", "low", "high", "scaling"])
    assert header.split()[6:] == ["best", "position", "edge"]
    assert "tuning runs of copy: 3 (tune-copy); its search space: signature" in text


def test_a_well_centred_copy_is_fairly_tuned_and_hparam_names_are_judged(tmp_path):
    import workbench as wb

    make_planned_store(tmp_path / "s", _plan(copy_space=ADAMW, copy_best=(0.5, 3)))
    res = wb.open(tmp_path / "s")
    doc = res.compare("adamw", "copy", studies="main")
    assert doc["fair_tuning"] is True and doc["tuning_warnings"] == []
    report = res.tuning(["copy"], studies="main")
    assert report["copy"][W]["bracketed"] is True
    judged = res.tuning(["adamw"], hparams=["beta2"], studies="main")
    assert judged["adamw"][W]["edge"] == {"learning_rate": None}  # beta2: points, no range
    assert set(res.score(studies="main")["tuning"]) == {"adamw", "copy"}
    with pytest.raises(ValueError, match="unknown algorithm 'nope'"):
        res.tuning(["nope"], studies="main")
    unequal = tmp_path / "u"
    make_planned_store(unequal, _plan(copy_space=ADAMW, copy_best=(0.5, 3), trials_copy=3))
    doc = wb.open(unequal).compare("adamw", "copy", studies="main")
    assert doc["fair_tuning"] is False
    assert doc["tuning_warnings"] == ["unequal tuning: adamw had 4 trials per study, copy 3: "
                                      "the side with more trials is favoured"]


def test_the_hparam_flag_is_checked(tmp_path, capsys):
    from runners.cli import main

    make_planned_store(tmp_path / "s", _plan())
    assert main(["score", "--store", str(tmp_path / "s"), "--study", "main", "--hparam",
                 "<b>", "--json"]) != 0
    err = capsys.readouterr().err
    assert "a hyperparameter name is letters" in err and len(err.strip().splitlines()) == 1


# -- ladders --------------------------------------------------------------------------------------
def _lr_of(space_lr, where):
    return space_lr[0] * (space_lr[1] / space_lr[0]) ** where


def test_the_ladder_summary_reports_each_sweep_and_warns_at_an_edge(tmp_path, capsys):
    from runners.cli import main
    from workbench.testing import LADDER_RUNGS, make_ladder_store

    adamw, nadamw = (3e-3, 1e-1), (3e-4, 3e-2)  # their shipped learning-rate ranges
    sweeps = {"adamw": [({"learning_rate": _lr_of(adamw, p), "weight_decay": 0.01}, loss)
                        for p, loss in ((0.2, 3.4), (0.5, 3.0), (0.8, 3.1))],
              "nadamw": [({"learning_rate": _lr_of(nadamw, p), "weight_decay": 0.01}, loss)
                         for p, loss in ((0.3, 3.6), (0.6, 3.5), (0.97, 3.0))]}
    store = make_ladder_store(tmp_path / "s", {"adamw": 1.0, "nadamw": 1.0},
                              rungs=LADDER_RUNGS[:1], budgets=(1, 2, 4), seeds=2,
                              sweeps=sweeps, tuning_trials={"adamw": 3, "nadamw": 3})
    assert main(["ladder", "--summary", "--json", "--store", str(store.root)]) == 0
    (rung,) = json.loads(capsys.readouterr().out)["rungs"]
    assert rung["tuning"] == {"adamw": 3, "nadamw": 3}  # the counts stay beside
    report = rung["tuning_report"]
    assert report["adamw"]["trials"] == 3 and report["adamw"]["bracketed"] is True
    assert report["adamw"]["chosen"] == {"learning_rate": pytest.approx(_lr_of(adamw, 0.5)),
                                         "weight_decay": 0.01}
    assert report["nadamw"]["edge"] == {"learning_rate": "high"}
    assert report["nadamw"]["bracketed"] is False
    assert set(report["nadamw"]) >= {"trials", "chosen", "edge", "bracketed"}
    (warning,) = [w for w in rung["warnings"] if w.startswith("tuning at rung")]
    assert "nadamw: best learning_rate 0.026 at the top of its range" in warning
    assert main(["ladder", "--summary", "--store", str(store.root)]) == 0
    text = capsys.readouterr().out
    assert "warning: tuning at rung" in text
    row = next(x for x in text.splitlines() if x.split()[:2] == ["nadamw", "3"])
    assert row.split()[-2:] == ["high", "no"]


# -- the verdict paragraph ------------------------------------------------------------------------
def test_the_verdict_says_what_each_number_is_when_they_seem_to_disagree():
    import numpy as np
    import xarray as xr

    from workbench import compare as C

    def tiny_times(table):  # study times (algorithm, workload, study)
        data = np.array([[table[a]["w"]] for a in table], float)
        return xr.DataArray(data, dims=("algorithm", "workload", "study"),
                            coords={"algorithm": list(table), "workload": ["w"]})

    # a's median study is faster (3.0 against 3.2 s) though most pairs of studies favour b
    times = tiny_times({"a": {"w": [2.9, 2.95, 3.0, 10.0, 10.0]},
                        "b": {"w": [1.0, 3.1, 3.2, 3.3, 3.4]}})
    text = C.compare(times, "a", "b", budgets={"w": 100.0}, replicates=50).sentence()
    assert "a is 1.07x faster than b" in text and "P(a faster in a study) = 0.48" in text
    assert ("(no contradiction: 1.07x is the ratio of the median studies' times, 0.48 the "
            "chance that one study of a beats one of b") in text
    agree = tiny_times({"a": {"w": [1.0, 2.0, 3.0]}, "b": {"w": [4.0, 5.0, 6.0]}})
    assert "no contradiction" not in C.compare(agree, "a", "b", budgets={"w": 10.0},
                                               replicates=50).sentence()



def test_trial_cells_count_missing_values_as_equal_and_keep_each_cells_last_attempt():
    """The counts of tuning_report's entries (one pass over the rows, no pandas per entry), by
    hand: a repeated cell keeps its last attempt, missing trial / study name values are one
    cell (drop_duplicates), a missing trial is not counted per study (nunique)."""
    import numpy as np
    import pandas as pd

    from workbench.query import RUN_DTYPES

    rows = [  # study_name, study, trial, seed, status, run_id, algorithm, time, reached, ruleset
        ("s", 1, 1, 0, "complete", "r1", "a", 10.0, True, "external"),
        ("s", 1, 1, 0, "diverged", "r2", "a", np.nan, False, "external"),  # r1's cell: kept
        ("s", 1, None, 0, "complete", "r3", "a", 8.0, True, "external"),
        ("s", 1, None, 0, "complete", "r4", "a", 7.0, True, "external"),  # r3's cell: kept
        (None, 2, 1, 0, "complete", "r5", "a", 9.0, True, None),
        (None, 2, 2, 0, None, "r6", "a", np.nan, False, "external"),
        ("t", 1, 1, 0, "stalled", "r9", "b", np.nan, False, "self"),
    ]
    columns = ["study_name", "study", "trial", "seed", "status", "run_id", "algorithm",
               "time_to_target", "reached_target", "ruleset"]
    runs = pd.DataFrame(rows, columns=columns).assign(
        workload="w", best_validation=0.5, target_direction="max",
        hparams=[{"learning_rate": 10.0 ** -(1 + i % 3)} for i in range(len(rows))])
    runs = runs.astype({c: RUN_DTYPES[c] for c in runs.columns})
    space = {"search_space": {"learning_rate": {"min": 1e-4, "max": 1.0, "scaling": "log"}}}
    report = T.tuning_report(runs, lambda run_id: space)
    a, b = report["a"]["w"], report["b"]["w"]
    # cells (s,1,1,0) (s,1,-,0) (-,2,1,0) (-,2,2,0); one diverged; (s,1): trial 1, (-,2): 1 and 2
    assert (a["trials"], a["finished"], a["bad_fraction"], a["planned_trials"]) == (4, 4, 0.25, 2)
    assert a["best"]["time_to_target"] == 7.0 and a["why"] is None  # r4, not r3
    assert (b["trials"], b["bad_fraction"], b["why"]) == \
        (1, 1.0, "self-tuning: no search space to judge")
    # two more attempts without a finished one: 6 cells, 3 bad, 3 trials in study (-,2)
    extra = runs.iloc[[0, 4]].assign(run_id=["x1", "x2"], trial=[5, 6]).astype({"trial": "Int64"})
    tried = T.tuning_report(runs, lambda run_id: space, attempts=pd.concat([runs, extra]))["a"]["w"]
    assert (tried["trials"], tried["finished"], tried["bad_fraction"],
            tried["planned_trials"]) == (6, 4, 0.5, 3)
