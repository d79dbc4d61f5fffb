"""`pacebench score`, `compare` and `budget` on every time axis (--time-axis, --exclude-compile):
golden cases computed by hand on stores whose curves are planned
(workbench.testing.make_planned_store), and the same numbers as the dashboard's Selection on the
same store."""
from __future__ import annotations

import json
import math

import pytest

from runners.cli import build_parser, main
from workbench.cubes import TIME_AXIS_COLUMNS
from workbench.testing import make_planned_store

W1, W2 = "digits_mlp", "mnist_cnn"  # a measured noise floor (CoV 20.7 %), and none
# Planned runs, one trial per study unless said: eval k (0-based) at step steps x (k + 1) after
# seconds x (k + 1) training s (default 10 steps, 1 s) and 0.5 s of evals per eval; 10 evals.
#   steps to target       study 0           study 1        study 2
#   a on W1               40 (eval 1)       60 (eval 5)    80 (eval 7)
#                         [trial 1: 20 steps at eval 3, later than trial 0: not chosen]
#   b on W1 (0.5 s/eval)  80 (eval 7)       90 (eval 8)    miss
#   a on W2               50 (eval 4)       miss           30 (eval 2)
#   b on W2 (0.5 s/eval)  20 (eval 1)       20 (eval 1)    10 (eval 0)
PLAN = {
    ("a", W1, 0, 0): {"hit": 1, "steps": 20}, ("a", W1, 0, 1): {"hit": 3, "steps": 5},
    ("a", W1, 1, 0): {"hit": 5}, ("a", W1, 2, 0): {"hit": 7},
    ("b", W1, 0, 0): {"hit": 7, "seconds": 0.5}, ("b", W1, 1, 0): {"hit": 8, "seconds": 0.5},
    ("b", W1, 2, 0): {"hit": None, "seconds": 0.5},
    ("a", W2, 0, 0): {"hit": 4}, ("a", W2, 1, 0): {"hit": None}, ("a", W2, 2, 0): {"hit": 2},
    ("b", W2, 0, 0): {"hit": 1, "seconds": 0.5}, ("b", W2, 1, 0): {"hit": 1, "seconds": 0.5},
    ("b", W2, 2, 0): {"hit": 0, "seconds": 0.5},
}
# Median study times, by hand (a miss is +inf; the median of 3 is the middle one):
#   steps: a (60, 50)  b (90, 20)       from the table above
#   train: a (6, 5)    b (4.5, 1)       seconds per eval x (hit + 1): a 2, 6, 8 | 5, inf, 3;
#                                       b 4, 4.5, inf | 1, 1, 0.5
#   wall:  a (9, 7.5)  b (9, 2)         train + 0.5 x (hit + 1): a 3, 9, 12 | 7.5, inf, 4.5;
#                                       b 8, 9, inf | 2, 2, 1
MEDIANS = {"steps": {"a": [60.0, 50.0], "b": [90.0, 20.0]},
           "train": {"a": [6.0, 5.0], "b": [4.5, 1.0]},
           "wall": {"a": [9.0, 7.5], "b": [9.0, 2.0]}}


def _tau(i: int) -> float:
    """Point i of the official grid of tau, linspace(1, 4, 100)."""
    return 1 + 3 * i / 99


# Scores: (1/3) x the trapezoid area of rho on the tau grid, / 2 workloads. A ratio r between
# grid points i and i + 1 earns 4 - (tau_i + tau_i+1) / 2: 1.5 and 2.5 lie halfway (i = 16, 49),
# so they earn exactly 4 - r; 3.75 lies between tau_90 and tau_91.
#   steps: W1 best 60 -> a 1, b 1.5; W2 best 20 -> a 2.5, b 1
#   wall:  W1 a and b tie at 9 -> 1; W2 best 2 -> a 3.75, b 1
SCORES = {"steps": {"a": (3 + 1.5) / 6, "b": (2.5 + 3) / 6},
          "wall": {"a": (3 + 4 - (_tau(90) + _tau(91)) / 2) / 6, "b": 1.0}}


@pytest.fixture(scope="module")
def planned(tmp_path_factory):
    return str(make_planned_store(tmp_path_factory.mktemp("axes") / "s", PLAN).root)


def _json(capsys, *args: str) -> dict:
    assert main([*args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("axis", ["steps", "wall", "train"])
def test_score_on_each_time_axis_golden(planned, capsys, axis):
    doc = _json(capsys, "score", "--store", planned, "--time-axis", axis, "--reference", "b")
    assert doc["time_axis"] == axis and doc["unit"] == ("steps" if axis == "steps" else "seconds")
    assert doc["exclude_compile"] is False
    for algorithm, want in MEDIANS[axis].items():
        assert [doc["time_to_target"][algorithm][w] for w in (W1, W2)] == want
    for algorithm, want in SCORES.get(axis, {}).items():
        assert doc["scores"][algorithm] == pytest.approx(want, abs=1e-6)
    # 1 - the geometric mean of a's times over b's (no cut-off): steps 1 - sqrt(60/90 x 50/20)
    a, b = MEDIANS[axis]["a"], MEDIANS[axis]["b"]
    ratio = math.sqrt(a[0] / b[0] * a[1] / b[1])
    assert doc["speedups"]["faster_by"]["a"] == pytest.approx(1 - ratio, abs=1e-6)
    assert main(["score", "--store", planned, "--time-axis", axis]) == 0
    label = {"steps": "steps", "wall": "wall seconds", "train": "training seconds"}[axis]
    assert f"median {label} to target" in capsys.readouterr().out


def test_compare_on_steps_golden(planned, capsys):
    doc = _json(capsys, "compare", "--store", planned, "--algorithms", "a,b",
                "--time-axis", "steps")
    rows = doc["per_workload"]
    # W1: b's miss counts as 200 steps (a's trial of 20 steps per eval ran 10 evals; where a
    # miss is the median, test_compare checks it), b's median is 90: 90 / 60; W2: 20 / 50
    assert rows[W1]["ratio"] == pytest.approx(1.5) and rows[W2]["ratio"] == pytest.approx(0.4)
    assert doc["speedup"]["estimate"] == pytest.approx(math.sqrt(1.5 * 0.4))
    assert (doc["time_axis"], doc["unit"]) == ("steps", "steps")
    assert doc["verdict"] == doc["verdict_by_steps"] == "no difference shown"
    # in training seconds: misses at 10 s; W1 4.5 / 6, W2 median(1, 1, 0.5) / median(5, 10, 3)
    train = _json(capsys, "compare", "--store", planned, "--algorithms", "a,b")
    assert train["per_workload"][W1]["ratio"] == pytest.approx(0.75)
    assert train["per_workload"][W2]["ratio"] == pytest.approx(0.2)
    assert train["verdict_by_steps"] == "no difference shown" and train["warnings"] == []
    # per step: a's runs 0.05, 0.2, 0.1, 0.1 s on W1 (median 0.1) and 0.1 on W2; b's 0.05
    assert train["seconds_per_step"] == pytest.approx({"a": 0.1, "b": 0.05})
    assert train["step_cost_ratio"] == pytest.approx(2.0)


def test_every_axis_gives_the_numbers_of_the_dashboards_selection(planned, capsys):
    from workbench import budget as B
    from workbench.views.compare import comparison
    from workbench.views.selection import Selection
    from workbench.views.speedups import speedup_frame

    sel = Selection(store_path=planned)
    sel.reference = "b"
    for axis, column in TIME_AXIS_COLUMNS.items():
        sel.time_axis = column
        doc = _json(capsys, "score", "--store", planned, "--time-axis", axis, "--reference", "b")
        times = sel.workload_times()
        for a in ("a", "b"):
            for w in (W1, W2):
                assert doc["time_to_target"][a][w] == pytest.approx(
                    float(times.sel(algorithm=a, workload=w))), (axis, a, w)
        scores = sel.scores().set_index("algorithm")["score"]
        assert doc["scores"] == pytest.approx(scores.to_dict(), abs=1e-6)
        faster = speedup_frame(sel).set_index("algorithm")["faster_by"]
        assert doc["speedups"]["faster_by"]["a"] == pytest.approx(faster["a"], abs=1e-6)
        cli = _json(capsys, "compare", "--store", planned, "--algorithms", "a,b",
                    "--time-axis", axis)
        view = comparison(sel, "a", "b")
        assert cli["verdict"] == view.verdict and cli["p_value"] == pytest.approx(view.p_value)
        assert {w: r["ratio"] for w, r in cli["per_workload"].items()} == pytest.approx(
            {r.workload: r.ratio for r in view.per_workload}), axis
        budget = _json(capsys, "budget", "--store", planned, "--time-axis", axis)
        curves = B.budget_curves(B.trial_times(sel.cube))
        assert {(c.algorithm, c.workload): c.median_best for c in curves} == {
            (a, w): doc_w["median_best"] for a, doc_a in budget["algorithms"].items()
            for w, doc_w in doc_a["workloads"].items()}, axis
        assert (budget["time_axis"], budget["unit"]) == (axis, doc["unit"])


# One workload, 4 studies a side: a compiles for 2 s in each run, b does not (null); a's machine
# probe reads 0.1 s, b's 0.2 s (2x: beyond W1's noise floor of 20.7 %). Both reach the target at
# evals 4..7 (50..80 steps): the same steps. Training seconds: a 2 + (5..8) x 1 s = 7..10,
# b (5..8) x 3 s = 15..24.
SPEED = {(a, W1, s, 0): {"hit": 4 + s, "seconds": 1.0 if a == "a" else 3.0,
                         "compile_seconds": 2.0 if a == "a" else None,
                         "probe_seconds": 0.1 if a == "a" else 0.2}
         for a in "ab" for s in range(4)}


@pytest.fixture(scope="module")
def speed(tmp_path_factory):
    return str(make_planned_store(tmp_path_factory.mktemp("speed") / "s", SPEED).root)


def test_exclude_compile_takes_exactly_the_compile_seconds_off(speed, capsys):
    def medians(*flags: str) -> dict:
        doc = _json(capsys, "score", "--store", speed, *flags)
        return {a: doc["time_to_target"][a][W1] for a in "ab"}

    # training: a median(7, 8, 9, 10) = 8.5, b median(15, 18, 21, 24) = 19.5; wall adds
    # 0.5 s per eval: a 8.5 + 3.25, b 19.5 + 3.25
    assert medians() == {"a": 8.5, "b": 19.5}
    assert medians("--exclude-compile") == {"a": 6.5, "b": 19.5}
    assert medians("--time-axis", "wall") == {"a": 11.75, "b": 22.75}
    assert medians("--time-axis", "wall", "--exclude-compile") == {"a": 9.75, "b": 22.75}
    assert medians("--time-axis", "steps") == {"a": 65.0, "b": 65.0}
    assert main(["score", "--store", speed, "--time-axis", "steps", "--exclude-compile",
                 "--json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["time_to_target"]["a"][W1] == 65.0
    assert json.loads(out)["exclude_compile"] is True
    assert err.strip() == ("note: --exclude-compile leaves steps to target as they are "
                           "(compiling takes no step)")


def test_compare_withholds_the_time_verdict_when_the_machine_speed_differed(speed, capsys):
    doc = _json(capsys, "compare", "--store", speed, "--algorithms", "a,b")
    # a is faster in every study (7..10 s against 15..24 s: p = 1/70), but b's machine was 2x
    # slower by the probe, more than the noise floor: the time verdict is withheld
    assert doc["verdict"] == "no difference shown"
    assert doc["withheld"].startswith("the machine's speed differed")
    (warning,) = doc["warnings"]
    assert warning.startswith(f"machine speed differed on {W1}: probe 0.1 s (geometric mean) "
                              "over 4 runs of a, 0.2 s over 4 runs of b, ratio 0.500, beyond "
                              "the noise floor of 20.7 %")
    assert doc["verdict_by_steps"] == "no difference shown"  # the same steps
    assert doc["sentence"].startswith("The times measured, not a verdict (withheld, see "
                                      "above): a is ")
    assert "the test on these times alone: 'a faster' at 95% confidence" in doc["sentence"]
    assert main(["compare", "--store", speed, "--algorithms", "a,b"]) == 0
    text = capsys.readouterr().out
    assert f"warning: machine speed differed on {W1}" in text
    assert "verdict in training seconds: no difference shown" in text
    assert "verdict by steps to target: no difference shown" in text
    # the withholding is its own line before the verdict, never nested in it (issue 38)
    lines = text.splitlines()
    withheld = next(i for i, x in enumerate(lines) if x.startswith("warning: verdict in time "
                                                                   "withheld"))
    assert withheld < lines.index("verdict in training seconds: no difference shown")
    assert not any(x.count("no difference shown:") > 0 or "The times measured: no" in x
                   for x in lines)


def test_the_time_axis_flag_is_checked_and_names_the_cubes_axes(planned, capsys):
    for command in ("score", "compare", "budget"):
        parser = build_parser()
        sub = next(a for a in parser._subparsers._group_actions[0].choices.values()
                   if a.prog.endswith(command))
        flag = next(a for a in sub._actions if a.dest == "time_axis")
        assert tuple(flag.choices) == tuple(TIME_AXIS_COLUMNS) and flag.default == "train"
    with pytest.raises(SystemExit) as exited:
        main(["score", "--store", planned, "--time-axis", "hours"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "invalid choice: 'hours'" in err
    assert "train" in err and "steps" in err
