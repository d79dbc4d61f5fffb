"""Reuse that does not depend on the study's name (issue 38, item 4): trials drawn by design
(draw scheme 2), an old store keeping its scheme, `--reuse-from` across study names with its
dry run, and two same-design studies in one store counted once (runners/launch/study.py,
runners/launch/reuse.py, workbench/scope.py)."""
from __future__ import annotations

import dataclasses
import json
import shutil

import pandas as pd
import pytest

from runners.cli import main
from runners.launch.study import plan_study, run_study
from runners.launch.resume import study_draw_scheme
from runners.launch.reuse import _why_not, first_difference
from workbench import query
from workbench.results import Results
from workbench.scope import Scope, scoped_runs
from workbench.spec import DRAW_SCHEME, ExecutionOptions, StudySpec
from workbench.store import open_store
from workbench.testing import make_store

from locations import FIXTURES

OLD = FIXTURES / "store_scheme1"


def _spec(name: str, trials: int = 2, **more) -> StudySpec:
    return StudySpec(workloads=("synthetic",), algorithms=("adamw",), trials=trials,
                     max_steps=3, name=name, **more)


# -- the draws -------------------------------------------------------------------------------
def test_scheme_2_draws_by_design_never_by_name_nor_by_the_number_of_trials():
    first, second = plan_study(_spec("first", 3)), plan_study(_spec("second", 5))
    assert {c.draw_scheme for c in first + second} == {DRAW_SCHEME} == {2}
    for a, b in zip(first, second):  # an extended study of another name keeps every point
        assert (a.hparams, a.rng_seed, a.design_trial_key) == \
            (b.hparams, b.rng_seed, b.design_trial_key)
        assert a.trial_key != b.trial_key  # the store still tells the two studies apart
    bf16 = plan_study(_spec("first", 3, execution=ExecutionOptions(precision="bf16")))
    assert [c.hparams for c in bf16] != [c.hparams for c in first]  # another design
    both = plan_study(dataclasses.replace(_spec("first", 3), workloads=("synthetic",
                                                                        "digits_mlp")))
    assert [c.hparams for c in both if c.workload == "synthetic"] == \
        [c.hparams for c in first]  # a workload's draws do not depend on the others
    old = plan_study(_spec("first", 3), draw_scheme=1)
    assert [c.hparams for c in old] != [c.hparams for c in plan_study(_spec("second", 3),
                                                                      draw_scheme=1)]


def test_an_old_scheme_store_keeps_its_draws_and_resumes(tmp_path):
    """The store of tests/fixtures/store_scheme1 (written before draw schemes): it reads, its
    study `old` is planned with the old draws (the 3rd trial of an extension is the one that
    commit would have drawn), --resume skips its done trials, and a new study name in the same
    store draws by design."""
    shutil.copytree(OLD / "store", tmp_path / "store")
    store = open_store(tmp_path / "store")
    expected = json.loads((OLD / "expected.json").read_text())["trials"]
    runs = query.runs_frame(store)
    assert len(runs) == 2 and runs["design_trial_key"].isna().all()
    assert all("draw_scheme" not in d for d in store.documents())
    assert study_draw_scheme(store, "old") == 1 and study_draw_scheme(store, "new") == 2
    planned = plan_study(_spec("old", 3), draw_scheme=study_draw_scheme(store, "old"))
    assert [(c.trial, dict(c.hparams), c.rng_seed, c.trial_key) for c in planned] == \
        [(e["trial"], e["hparams"], e["rng_seed"], e["trial_key"]) for e in expected]
    result = run_study(_spec("old"), store, resume=True, progress=False)
    assert (result.planned, result.skipped, result.succeeded) == (2, 2, 0)
    assert dict(Results(store).cube().sizes) == {"algorithm": 1, "workload": 1, "study": 1,
                                                 "trial": 2, "seed": 1}


def test_the_dry_run_names_the_first_differing_input_in_one_line_even_for_hostile_keys():
    ours = {"version": 2, "trial": {"workload": "synthetic", "max_steps": 4}, "torch": "2.13"}
    assert first_difference(ours, ours) is None
    assert first_difference(ours, {**ours, "trial": {"workload": "synthetic", "max_steps": 3}}) \
        == ("trial.max_steps", 4, 3)
    assert first_difference(ours, {**ours, "torch": "2.12"}) == ("torch", "2.13", "2.12")
    config = plan_study(_spec("first"))[0]
    place = tuple(getattr(config, k) for k in ("workload", "algorithm", "study", "trial", "seed"))
    hostile = {**ours, "<script>\n" * 40: "x" * 500}
    reason = _why_not(config, ours, {place: [{"reuse_inputs": hostile}]})
    assert "\n" not in reason and len(reason) < 250 and reason.endswith('xxx... there')
    assert _why_not(config, ours, {}) == "no finished run in its place in the source store(s)"
    assert "never reused" in _why_not(config, ours, {place: [{"reuse_key": "k"}]})


# -- counted once ------------------------------------------------------------------------------
def test_two_names_holding_the_same_trials_are_counted_once(tmp_path):
    """The run table of a store whose study `second` holds the trials of `synthetic` (one
    design_trial_key each) and part of them again: one study per study index, each trial once,
    the same cube as `synthetic` alone, and a note and duplicate_trials saying so."""
    store = make_store(tmp_path / "s", algorithms=("fast",), workloads=("digits_mlp",),
                       studies=2, trials=3)
    runs = query.runs_frame(store)
    runs["design_trial_key"] = runs["trial_key"]  # as if drawn by design
    runs["design"] = "one design"  # what plan_study records (trials per study, space, ...)
    again = runs.assign(study_name="second", run_id=runs["run_id"] + "-again")
    part = again[(again["study"] == 0) & (again["trial"] < 2)]
    for extra, shared in ((again, 6), (part, 2)):
        both = scoped_runs(pd.concat([runs, extra], ignore_index=True), Scope())
        alone = scoped_runs(runs, Scope())
        assert both.duplicates == {"fast": shared}
        assert both.to_json()["duplicate_trials"] == {"fast": shared}
        assert any(f"fast: {shared} trials are in more than one of the studies second, "
                   "synthetic" in n for n in both.notes)
        key = ["study", "trial", "time_to_target"]
        assert both.runs[key].sort_values(key).reset_index(drop=True).equals(
            alone.runs[key].sort_values(key).reset_index(drop=True))
    assert "duplicate_trials" not in alone.to_json()
    # `second` (first by name) failed a trial that `synthetic` finished: the finished one counts
    broken = again.assign(status=["failed"] + ["complete"] * (len(again) - 1))
    both = scoped_runs(pd.concat([runs, broken], ignore_index=True), Scope())
    assert both.failed == {} and len(both.runs) == len(runs)
    other = runs.assign(study_name="second", run_id=runs["run_id"] + "-b",
                        design_trial_key=runs["trial_key"] + "-b")  # drawn by name: 4 studies
    apart = scoped_runs(pd.concat([runs, other], ignore_index=True), Scope())
    assert apart.duplicates == {} and apart.runs["study"].nunique() == 4


# -- reuse across names, with a real study ----------------------------------------------------
@pytest.mark.slow
def test_reuse_from_a_study_of_another_name_reuses_every_trial(tmp_path, capsys):
    """AdamW's runs of study `first`, reused into study `second` of the same design: the dry run
    counts them (and names what differs when the design differs), the launch runs none, the
    copies are `second`'s trials, and a store holding both names scores each trial once."""
    a = open_store(tmp_path / "a", create=True)
    assert run_study(_spec("first"), a, workers=2, progress=False).succeeded == 2
    cli = ["study", "--workloads", "synthetic", "--algorithms", "adamw", "--trials", "2",
           "--name", "second", "--reuse-from", str(a.root), "--quiet"]
    assert main([*cli, "--max-steps", "3", "--store", str(tmp_path / "b"), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert f"reuse from {a.root}: 2 of 2 planned trials would be reused, 0 would run" in out
    assert main([*cli, "--max-steps", "4", "--store", str(tmp_path / "b"), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "0 of 2 planned trials would be reused, 2 would run" in out
    assert "2 trial(s), e.g. adamw on synthetic study 0 trial 0 seed 0: trial.max_steps " \
           "differs: 4 here, 3 there" in out
    assert not (tmp_path / "b").exists()  # a dry run writes nothing
    b = open_store(tmp_path / "b", create=True)
    result = run_study(_spec("second"), b, progress=False, reuse_from=[a])
    assert (result.reused, result.succeeded, result.planned) == (2, 0, 2)
    copies = list(b.documents())
    assert {d["study_name"] for d in copies} == {"second"}
    assert {d["trial_key"] for d in copies} == {c.trial_key for c in plan_study(_spec("second"))}
    assert {d["reused_from"]["run_id"] for d in copies} == {d["run_id"] for d in a.documents()}
    assert run_study(_spec("second"), b, resume=True, progress=False).skipped == 2
    # `second` beside `first` in one store: the same two trials, counted once
    assert run_study(_spec("second"), a, progress=False, reuse_from=[a]).reused == 2
    score = Results(a).score()
    assert score["duplicate_trials"] == {"adamw": 2}
    assert dict(Results(a).cube().sizes) == {"algorithm": 1, "workload": 1, "study": 1,
                                             "trial": 2, "seed": 1}
    assert Results(a).budget()["duplicate_trials"] == {"adamw": 2}
