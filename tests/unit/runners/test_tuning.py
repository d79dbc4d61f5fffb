"""Search spaces (AlgoPerf JSON) and quasirandom trial draws."""
from __future__ import annotations

import json
import math

import pytest

from runners.tuning import SearchSpace, SearchSpaceError, draw_trials, study_trials

SPACE = {
    "learning_rate": {"min": 1e-4, "max": 1.0, "scaling": "log"},
    "one_minus_beta1": {"min": 0.1, "max": 0.3, "scaling": "linear"},
    "warmup_factor": {"feasible_points": [0.0, 0.05, 0.1]},
}
POINTS = [{"learning_rate": 1e-3 * (i + 1), "weight_decay": 0.1} for i in range(5)]


def test_halton_draws_are_deterministic_per_seed():
    space = SearchSpace.parse(SPACE)
    assert draw_trials(space, 8, 3) == draw_trials(space, 8, 3)
    assert draw_trials(space, 8, 3) != draw_trials(space, 8, 4)


def test_draws_stay_in_range_and_use_each_scaling():
    trials = draw_trials(SearchSpace.parse(SPACE), 64, 0)
    lrs = [t["learning_rate"] for t in trials]
    b1 = [t["one_minus_beta1"] for t in trials]
    assert all(1e-4 <= x <= 1.0 for x in lrs) and all(0.1 <= x <= 0.3 for x in b1)
    # log scaling: half the draws below the geometric midpoint 1e-2 (Halton is very even)
    assert 0.4 <= sum(x < 1e-2 for x in lrs) / 64 <= 0.6
    assert 0.4 <= sum(x < 0.2 for x in b1) / 64 <= 0.6
    assert len(set(lrs)) == 64  # exact values, never rounded onto a grid


def test_log_mapping_is_exact():
    space = SearchSpace.parse({"lr": {"min": 1e-4, "max": 1e-2, "scaling": "log"}})
    assert space.params[0].at(0.5) == pytest.approx(1e-3, rel=1e-12)
    assert space.params[0].at(0.0) == pytest.approx(1e-4, rel=1e-12)


def test_feasible_points_are_all_used_evenly():
    trials = draw_trials(SearchSpace.parse(SPACE), 30, 1)
    counts = {p: sum(t["warmup_factor"] == p for t in trials) for p in (0.0, 0.05, 0.1)}
    assert sum(counts.values()) == 30 and all(8 <= c <= 12 for c in counts.values())


def test_study_trials_give_different_points_per_study():
    space = SearchSpace.parse(SPACE)
    studies = study_trials(space, 3, 4, seed=7)
    assert [len(s) for s in studies] == [4, 4, 4]
    lrs = [t["learning_rate"] for s in studies for t in s]
    assert len(set(lrs)) == 12
    assert draw_trials(space, 4, 7) == studies[0]


@pytest.mark.parametrize("space", [SPACE, POINTS], ids=["halton", "list"])
def test_a_trial_depends_on_its_study_and_index_not_on_how_many(space):
    """Extending a study (more trials, more studies) keeps every point it had."""
    space = SearchSpace.parse(space)
    small, large = study_trials(space, 2, 3, seed=11), study_trials(space, 4, 5, seed=11)
    assert [s[:3] for s in large[:2]] == small
    assert study_trials(space, 1, 3, seed=11) == small[:1]


def test_list_space_samples_without_replacement():
    space = SearchSpace.parse(POINTS)
    trials = draw_trials(space, 5, 0)
    assert sorted(t["learning_rate"] for t in trials) == [p["learning_rate"] for p in POINTS]
    assert draw_trials(space, 3, 2) == draw_trials(space, 3, 2)
    for study in study_trials(space, 4, 3, seed=0):
        assert len({t["learning_rate"] for t in study}) == 3
    with pytest.raises(SearchSpaceError, match="at most 5"):
        draw_trials(space, 6, 0)


@pytest.mark.parametrize("bad, message", [
    ({"lr": {"min": 1e-3, "max": 1e-1}}, "'lr'.*min, max and scaling"),
    ({"lr": {"min": 1e-3, "max": 1e-1, "scaling": "exp"}}, "'lr'.*valid are linear, log"),
    ({"lr": {"min": 1.0, "max": 0.1, "scaling": "linear"}}, "'lr'.*above max"),
    ({"lr": {"min": 0.0, "max": 0.1, "scaling": "log"}}, "'lr'.*min > 0"),
    ({"lr": {"min": "a", "max": 0.1, "scaling": "log"}}, "'lr'.*finite number"),
    ({"wd": {"feasible_points": []}}, "'wd'.*non-empty"),
    ({"wd": 0.1}, "'wd'"),
    ({}, "empty"),
    ([], "empty"),
    ([{"lr": 1.0}, {"lr": 2.0, "wd": 0.1}], "point 1.*wd"),
    ("lr", "object or a list"),
])
def test_bad_spaces_raise_naming_the_problem(bad, message):
    with pytest.raises(SearchSpaceError, match=message):
        SearchSpace.parse(bad)


def test_from_json_reads_files_and_names_them_in_errors(tmp_path):
    good = tmp_path / "good.json"
    good.write_text(json.dumps(SPACE))
    assert SearchSpace.from_json(good) == SearchSpace.parse(SPACE)
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    with pytest.raises(SearchSpaceError, match="broken.json.*not valid JSON"):
        SearchSpace.from_json(broken)
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps({"lr": {"min": 1, "max": 2, "scaling": "cubic"}}))
    with pytest.raises(SearchSpaceError, match="wrong.json.*'lr'"):
        SearchSpace.from_json(wrong)


def test_values_are_plain_python_floats():
    trial = draw_trials(SearchSpace.parse(SPACE), 1, 0)[0]
    assert all(type(v) is float for v in trial.values())
    assert all(math.isfinite(v) for v in trial.values())
