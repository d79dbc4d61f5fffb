"""The one API (workbench.results) and the commands that print it, on a store holding everything:
a study, a second study name of another design, and ad-hoc runs with several hyperparameters on
the same workload and algorithm."""
from __future__ import annotations

import json

import pytest

import workbench
from runners.cli import main

W = "synthetic"
LEARNING_RATES = (0.03, 0.06, 0.0006)


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    """The store a new user makes: `pacebench run` three times, then two studies."""
    store = str(tmp_path_factory.mktemp("mixed") / "results")
    for lr in LEARNING_RATES:
        assert main(["run", "--workload", W, "--algorithm", "adamw", "--max-steps", "150",
                     "--hparams", json.dumps({"learning_rate": lr}), "--quiet",
                     "--store", store]) == 0
    assert main(["study", "--workloads", W, "--algorithms", "adamw,nadamw", "--studies", "2",
                 "--trials", "2", "--max-steps", "150", "--workers", "2", "--name", "first",
                 "--quiet", "--store", store]) == 0
    assert main(["study", "--workloads", W, "--algorithms", "adamw", "--studies", "1",
                 "--trials", "3", "--max-steps", "150", "--workers", "2", "--name", "second",
                 "--quiet", "--store", store]) == 0
    return store


def _json(capsys, *argv) -> dict:
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_three_ad_hoc_runs_are_three_runs_and_a_study_name_is_not_an_ad_hoc_name(mixed, capsys):
    runs = workbench.open(mixed).runs()
    ad_hoc = runs[runs["launched_by"] == "run"]
    assert sorted(ad_hoc["trial"]) == [0, 1, 2]
    assert sorted(h["learning_rate"] for h in ad_hoc["hparams"]) == sorted(LEARNING_RATES)
    assert main(["run", "--workload", W, "--algorithm", "adamw", "--name", "first", "--store",
                 mixed]) == 2
    assert "the store's runs named 'first' are a study's" in capsys.readouterr().err


def test_every_analysis_reads_the_mixed_store_and_says_what_it_left_out(mixed, capsys):
    score = _json(capsys, "score", "--store", mixed)
    assert score["notes"][0] == ("left out 3 ad-hoc runs (pacebench run): --with-adhoc takes "
                                 "them in")
    # adamw ran in `first` (2 x 2) and `second` (1 x 3): two designs, shown apart
    assert sorted(score["scores"]) == ["adamw [first]", "adamw [second]", "nadamw"]
    assert score["shown_apart"] == {"adamw": ["first", "second"]}
    assert score["studies"] == {"adamw [first]": 2, "adamw [second]": 1, "nadamw": 2}
    budget = _json(capsys, "budget", "--store", mixed)
    assert sorted(budget["algorithms"]) == ["adamw [first]", "adamw [second]", "nadamw"]
    trials = {a: sum(max(w["k"]) for w in v["workloads"].values())
              for a, v in budget["algorithms"].items()}
    assert trials == {"adamw [first]": 4, "adamw [second]": 3, "nadamw": 4}  # each run once
    doc = _json(capsys, "compare", "--store", mixed, "--algorithms", "nadamw,adamw [first]")
    # What these data imply: where a study met the target, 2 + 2 studies on one workload give
    # a smallest one-sided p-value of 1/C(4, 2) = 1/6, above the 0.025 a verdict at 95 % needs;
    # where none did (150 steps of synthetic), there is no time to test. Either way no winner.
    first = workbench.open(mixed).runs().query("study_name == 'first'")
    assert doc["verdict"] == "no difference shown" and not doc["can_reach_confidence"]
    if first["reached_target"].any():
        assert doc["smallest_possible_p_value"] == pytest.approx(1 / 6)
    else:
        assert doc["method"] == "no workload with a time" and doc["p_value"] is None
        assert doc["per_workload"][W]["note"] == "both missed the target in every study"
    assert main(["compare", "--store", mixed, "--algorithms", "nadamw,adamw"]) == 2
    assert "shown apart as 'adamw [first]', 'adamw [second]'" in capsys.readouterr().err
    only = _json(capsys, "score", "--store", mixed, "--study", "first")
    assert sorted(only["scores"]) == ["adamw", "nadamw"]
    taken = _json(capsys, "budget", "--store", mixed, "--with-adhoc", "--study", "adhoc")
    assert max(taken["algorithms"]["adamw"]["workloads"][W]["k"]) == 3


def test_the_api_gives_what_the_commands_print(mixed, capsys):
    res = workbench.open(mixed)
    assert res.score() == _json(capsys, "score", "--store", mixed)
    assert res.score(time_axis="steps", studies=["first"]) == _json(
        capsys, "score", "--store", mixed, "--time-axis", "steps", "--study", "first")
    assert res.compare("nadamw", "adamw", studies="first") == _json(
        capsys, "compare", "--store", mixed, "--algorithms", "nadamw,adamw", "--study", "first")
    assert res.budget(with_adhoc=True) == _json(capsys, "budget", "--store", mixed,
                                                "--with-adhoc")
    cube = res.cube(studies=["first"])
    assert sorted(map(str, cube["algorithm"].values)) == ["adamw", "nadamw"]
    with pytest.raises(TypeError, match="unknown option rulesets: valid are ruleset"):
        res.score(rulesets="external")


def test_results_read_the_store_again_when_it_changes(tmp_path):
    """Results.runs fingerprints the store skipping the runs it knows ended (those of the run
    index at first): a new run, or a finished one removed, is seen at the next call."""
    import shutil

    from workbench.testing import make_store

    from workbench.run_index import refresh_index

    store = make_store(tmp_path / "a")
    refresh_index(store)  # every run indexed: the first signature looks at none of them
    runs = store.runs_dir
    res = workbench.open(tmp_path / "a")
    first = res.runs()
    assert res.runs() is first  # nothing changed: not read again
    run = first["run_id"].iloc[0]
    shutil.move(runs / run, tmp_path / run)
    assert run not in set(res.runs()["run_id"])
    shutil.move(tmp_path / run, runs / run)  # back, as a new run would come
    assert run in set(res.runs()["run_id"]) and len(res.runs()) == len(first)


def test_bad_input_to_results_and_its_views_is_a_user_error(tmp_path):
    """A name, rule or value the store does not hold is workbench.errors.UserError (the CLI's
    exit 2), one line naming what is valid; a view's unknown name too."""
    from workbench.errors import UserError
    from workbench.testing import make_store
    from workbench.views.narrowed import selection_of
    from workbench.views.registry import find_view

    make_store(tmp_path / "s", algorithms=("fast", "slow"), workloads=("digits_mlp",),
               studies=1, trials=2)
    res = workbench.open(tmp_path / "s")
    bad = [lambda: res.compare("fast", "nope"), lambda: res.score(reference="nope"),
           lambda: res.compare("fast", "slow", study_time="median"),
           lambda: res.tuning(["nope"]), lambda: res.ladder(),
           lambda: res.score(rank_shift="train"),
           lambda: selection_of(tmp_path / "s", algorithms="nope"),
           lambda: find_view("nope")]
    for call in bad:
        with pytest.raises(UserError) as caught:
            call()
        assert str(caught.value) and "\n" not in str(caught.value)
