"""Which runs an analysis reads (workbench/scope.py): one store holds every kind of run."""
from __future__ import annotations

import pytest

from workbench import scoring
from workbench.cubes import final_cube
from workbench.scope import Scope, scoped_runs
from workbench.testing import runs_table

W = "digits_mlp"


def _study(name="s1", algorithm="adamw", studies=2, trials=3, design="d1", **extra):
    return [{"algorithm": algorithm, "workload": W, "study": s, "trial": t, "time": 10.0 + s + t,
             "index": 3, "study_name": name, "design": design, "launched_by": "study",
             "trial_key": f"{name}-{algorithm}-{s}-{t}", **extra}
            for s in range(studies) for t in range(trials)]


def _ad_hoc(learning_rates, launched_by="run"):
    """Ad-hoc runs in one trial slot (trial 0), each its own trial key, as an older store's
    `pacebench run` left them."""
    return [{"algorithm": "adamw", "workload": W, "study": 0, "trial": 0, "time": t,
             "index": 2, "study_name": "adhoc", "launched_by": launched_by,
             "trial_key": f"adhoc-{lr}", "hparams": {"learning_rate": lr}}
            for lr, t in zip(learning_rates, (5.0, 6.0, 7.0))]


def test_ad_hoc_runs_are_left_out_unless_asked_and_then_each_is_a_trial():
    runs = runs_table(_study() + _ad_hoc([0.03, 0.06, 0.0006]))
    scoped = scoped_runs(runs)
    assert set(scoped.runs["study_name"]) == {"s1"} and len(scoped.runs) == 6
    assert scoped.notes == ["left out 3 ad-hoc runs (pacebench run): --with-adhoc takes them in"]
    taken = scoped_runs(runs, Scope(with_adhoc=True))
    ad_hoc = taken.runs[taken.runs["study_name"] == "adhoc"]
    assert sorted(ad_hoc["trial"]) == [0, 1, 2]  # three runs, three trials: none replaces another
    # an older store's runs say nothing of who launched them: its "adhoc" name tells
    older = runs_table(_study() + _ad_hoc([0.03, 0.06], launched_by=None))
    assert len(scoped_runs(older).runs) == 6


def test_rulesets_never_share_a_score():
    runs = runs_table(_study() + _study(name="self", ruleset="self", trials=1))
    scoped = scoped_runs(runs)
    assert scoped.ruleset == "external" and set(scoped.runs["ruleset"]) == {"external"}
    assert "left out 2 runs of the self ruleset" in scoped.notes[0]
    assert set(scoped_runs(runs, Scope(ruleset="self")).runs["ruleset"]) == {"self"}
    with pytest.raises(ValueError, match="--ruleset other: the store's runs are under "
                                         "external, self"):
        scoped_runs(runs, Scope(ruleset="other"))


def test_study_names_of_one_design_pool_and_of_two_designs_are_shown_apart():
    same = scoped_runs(runs_table(_study("s1") + _study("s2")))
    assert sorted(same.runs.drop_duplicates(["study_name", "study"])["study"]) == [0, 1, 2, 3]
    assert same.shown_apart == {} and "pooled" in same.notes[0]
    cube = final_cube(same.runs)
    assert cube.sizes["study"] == 4  # one algorithm, four studies: one sample
    apart = scoped_runs(runs_table(_study("s1") + _study("s2", design="d2")))
    assert sorted(set(apart.runs["algorithm"])) == ["adamw [s1]", "adamw [s2]"]
    assert apart.shown_apart == {"adamw": ["s1", "s2"]}
    assert "--study NAME reads one" in apart.notes[0]
    narrowed = scoped_runs(runs_table(_study("s1") + _study("s2", design="d2")),
                           Scope(studies=("s2",)))
    assert set(narrowed.runs["algorithm"]) == {"adamw"} and narrowed.notes == []
    with pytest.raises(ValueError, match="--study s3: not in the store; its study names are "
                                         "s1, s2"):
        scoped_runs(runs_table(_study("s1") + _study("s2")), Scope(studies=("s3",)))


def test_designs_unknown_to_older_stores_are_read_from_the_runs():
    # no design recorded: trials per study, device and precision decide
    same = scoped_runs(runs_table(_study("s1", design=None) + _study("s2", design=None)))
    assert same.shown_apart == {}
    other = scoped_runs(runs_table(_study("s1", design=None) + _study("s2", design=None,
                                                                      trials=2)))
    assert other.shown_apart == {"adamw": ["s1", "s2"]}


def test_a_failed_trial_is_neither_a_time_nor_a_miss_and_a_half_failed_study_is_dropped():
    rows = _study(studies=3, trials=4)
    for row in rows:
        if row["study"] == 0 and row["trial"] == 0:
            row.update(status="failed", time=None)
        if row["study"] == 1 and row["trial"] < 3:  # 3 of 4 failed: the study is dropped
            row.update(status="failed", time=None)
    scoped = scoped_runs(runs_table(rows))
    assert scoped.failed == {"adamw": {W: 4}}
    assert sorted(set(scoped.runs["study"])) == [0, 2]
    assert any("dropped 1 studies with fewer than half their trials finished (adamw on "
               f"{W}, study 1 of s1)" in n for n in scoped.notes)
    times = scoring.study_times(final_cube(scoped.runs))
    assert times.sel(algorithm="adamw", workload=W, study=0).item() == 11.0  # not the crash
    # a crash is not a miss: an algorithm whose every trial crashed is not scored at all
    crashed = [dict(r, algorithm="muon", status="failed", time=None,
                    trial_key=r["trial_key"] + "m") for r in _study()]
    scoped = scoped_runs(runs_table(_study() + crashed))
    assert set(scoped.runs["algorithm"]) == {"adamw"} and scoped.failed == {"muon": {W: 6}}


def test_runs_of_different_execution_options_or_hardware_are_pooled_with_a_note():
    one = "cpu, fp32, 1 thread"
    alike = runs_table(_study(execution=one, hardware="cpu: X (1 thread)"))
    assert scoped_runs(alike).notes == []
    mixed = runs_table(_study(trials=2, execution=one, hardware="cpu: X (1 thread)")
                       + _study(name="s2", studies=1, trials=1, execution="cpu, fp32, 2 threads",
                                hardware="cpu: X (2 threads)"))
    assert scoped_runs(mixed).notes[-1] == (
        "pooled runs of 2 different execution options or hardware (4 runs cpu, fp32, 1 thread "
        "on cpu: X (1 thread); 1 run cpu, fp32, 2 threads on cpu: X (2 threads)): their times "
        "were not measured alike")
    # runs recorded before `execution`: their device and precision, and their hardware
    older = runs_table(_study(hardware="GPU A x1") + _study(name="s2", hardware="GPU B x1"))
    assert "2 different execution options or hardware" in scoped_runs(older).notes[-1]
