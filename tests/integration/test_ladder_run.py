"""Running a model-size ladder (runners/procedures/ladder.py, `pacebench ladder --sizes ...`): the plan's
arithmetic, the schedule's horizon, resume, sweeps and hostile flags. Plans use made-up rungs;
real runs use digits_mlp as a stand-in rung with a budget of a few steps."""
from __future__ import annotations

import json

import pytest

import runners.procedures.ladder as ladder
from runners.cli import main
from runners.procedures.ladder import (Rung, choose_tuned, describe_ladder, fairness_warnings,
                                       final_configs, plan_ladder, planned_steps, run_ladder)
from workbench import query
from workbench import records as R
from workbench.spec import LadderSpec, RunConfig, SpecError
from workbench.store import open_store

# A stand-in rung (counts made up, so that the plans are easy to check by hand): 2,048 tokens
# per step (32 sequences x 64 characters).
TINY = Rung("shakespeare_char", non_embedding_params=20_480, params=30_000,
            flops_per_token=180_000.0, batch_size=32, block_size=64, width=64,
            budget_steps=1500, tokens_available=1_000_000)
WIDE = Rung("shakespeare_char_relu", non_embedding_params=81_920, params=100_000,
            flops_per_token=600_000.0, batch_size=32, block_size=64, width=128,
            budget_steps=1500, tokens_available=40_000)
RUNGS = {r.name: r for r in (TINY, WIDE)}
# A stand-in that trains in a second: the planner is the same for any workload (a "token" is an
# example here, block 1); budget 1 of 1 token per parameter = 5 steps of 64.
DIGITS = {"digits_mlp": Rung("digits_mlp", non_embedding_params=320, params=400,
                             flops_per_token=1_000.0, batch_size=64, block_size=1, width=128,
                             budget_steps=800)}


def test_steps_are_the_budgets_tokens_over_the_batchs_tokens_rounded_up():
    # 1 x 20 x 20,480 = 409,600 tokens = exactly 200 steps of 2,048: no rounding up to 201
    assert planned_steps(1, 20, 20_480, 32, 64) == 200
    assert planned_steps(0.5, 20, 20_480, 32, 64) == 100
    assert planned_steps(1, 20, 20_481, 32, 64) == 201  # 20 tokens over: one more step
    assert planned_steps(1e-9, 20, 10, 32, 64) == 1  # at least one step
    assert planned_steps(0.1, 20, 1_024, 1, 1) == 2_048  # 0.1 is not exact in binary


def test_the_plan_is_rungs_x_budgets_x_algorithms_x_seeds_with_its_record():
    spec = LadderSpec(sizes=("shakespeare_char", "shakespeare_char_relu"),
                      algorithms=("adamw", "nadamw"), budgets=(4, 1, 2), seeds=3, evals=8)
    tuning, final = plan_ladder(spec, RUNGS)
    assert tuning == [] and len(final) == 2 * 3 * 2 * 3
    assert spec.budgets == (1.0, 2.0, 4.0)  # ascending: a budget's study index is its place
    by = {(c.algorithm, c.workload, c.ladder["budget"], c.seed): c for c in final}
    c = by[("nadamw", "shakespeare_char_relu", 4.0, 2)]
    assert c.max_steps == 4 * 20 * 81_920 // 2_048 == 3_200 and c.study == 2 and c.trial == 0
    assert c.eval_every == 400 and not c.stop_on_target and c.batch_size == 32
    assert c.budget_multiplier == pytest.approx(3_200 / 1_500)  # the catalog's budget not binding
    assert set(c.ladder) == set(R.LADDER_FIELDS) - {"eval_windows"}  # with --evals: 256
    assert c.ladder["tokens"] == 3_200 * 2_048 and c.ladder["repeated_tokens"]  # 40,000 held
    assert c.ladder["tuning_trials"] == 0 and c.ladder["phase"] == "final"
    assert not by[("adamw", "shakespeare_char", 1.0, 0)].ladder["repeated_tokens"]
    # two algorithms at one place share it (common random numbers); budgets do not
    a, b = by[("adamw", "shakespeare_char", 2.0, 1)], by[("nadamw", "shakespeare_char", 2.0, 1)]
    assert a.rng_seed == b.rng_seed != by[("adamw", "shakespeare_char", 1.0, 1)].rng_seed
    assert len({c.trial_key for c in final}) == len(final)
    # a config with its ladder mapping reads back with the same identity; others keep theirs
    assert RunConfig.from_dict(json.loads(json.dumps(c.to_dict()))).trial_key == c.trial_key
    plain = RunConfig(workload="digits_mlp", algorithm="adamw")
    assert plain.trial_key == RunConfig.from_dict({"workload": "digits_mlp",
                                                   "algorithm": "adamw"}).trial_key


def test_the_schedule_decays_to_its_end_at_the_runs_last_step():
    from types import SimpleNamespace

    import torch

    from runners.algorithms import get_algorithm
    from runners.run.loop import ladder_workload
    from workbench.catalog import get_workload

    spec = LadderSpec(sizes="shakespeare_char", algorithms="adamw,nadamw", budgets=(1, 3),
                      tokens_per_param=0.5)
    catalog = get_workload("shakespeare_char")
    for config in final_configs(spec, RUNGS):
        steps = config.ladder["steps"]
        assert steps not in (catalog.step_hint, catalog.budget.steps)
        algorithm = get_algorithm(config.algorithm, config.hparams)
        workload = SimpleNamespace(spec=ladder_workload(catalog, config.ladder))
        algorithm.init(torch.nn.Linear(2, 2), workload)
        assert algorithm.schedule(steps - 1) > 0.0 == algorithm.schedule(steps)
        # the step budget the loop applies (catalog budget x multiplier, capped) is `steps`
        budget = catalog.budget.scaled(config.budget_multiplier).steps
        assert min(budget, config.max_steps) == steps
    assert ladder_workload(catalog, None) is catalog


def test_a_sweep_tunes_each_rung_and_a_reference_tuned_less_is_flagged():
    spec = LadderSpec(sizes=("shakespeare_char", "shakespeare_char_relu"),
                      algorithms=("adamw", "nadamw"), budgets=(1, 2), seeds=2,
                      trials={"nadamw": 3})
    tuning, final = plan_ladder(spec, RUNGS)
    assert len(tuning) == 2 * 3 and {c.study_name for c in tuning} == {"ladder.tuning"}
    assert {c.ladder["budget"] for c in tuning} == {1.0} and {c.seed for c in tuning} == {0}
    assert all(set(c.hparams) == {"learning_rate", "weight_decay"} for c in tuning)
    assert {c.algorithm for c in final} == {"adamw"}  # nadamw's wait for its sweep
    assert all(c.ladder["tuning_trials"] == 3 and c.ladder["phase"] == "tuning" for c in tuning)
    (warning,) = fairness_warnings(spec)
    assert "nadamw got 3" in warning and "adamw only 0" in warning
    assert "warning: nadamw got 3 tuning trials" in describe_ladder(spec, RUNGS)
    fair = LadderSpec(sizes="shakespeare_char", algorithms="adamw,nadamw",
                      trials={"adamw": 3, "nadamw": 3})
    assert fairness_warnings(fair) == []


def test_a_transfer_rule_scales_the_declared_learning_rate_with_width():
    spec = LadderSpec(sizes=("shakespeare_char", "shakespeare_char_relu"),
                      algorithms=("adamw", "mup"), transfer={"mup": "width"}, budgets=(1,))
    from runners.algorithms.sources import parse_algorithms

    sources = parse_algorithms(["adamw", "mup=adamw"], ["adamw"])
    _, final = plan_ladder(spec, RUNGS, sources)
    lr = {(c.algorithm, c.workload): c.hparams.get("learning_rate") for c in final}
    assert lr[("adamw", "shakespeare_char_relu")] is None  # its defaults, as declared
    assert lr[("mup", "shakespeare_char_relu")] == pytest.approx(2e-3 * 64 / 128)
    assert lr[("mup", "shakespeare_char")] == pytest.approx(2e-3)
    assert {c.ladder["transfer"] for c in final if c.algorithm == "mup"} == {"width"}
    with pytest.raises(SpecError, match="unknown transfer rule 'nope'"):
        plan_ladder(LadderSpec(sizes="shakespeare_char", algorithms="adamw",
                               transfer={"adamw": "nope"}), RUNGS)


@pytest.mark.slow
def test_a_ladder_of_the_smallest_rung_runs_resumes_after_a_kill_and_summarises(
        tmp_path, capsys):
    root = tmp_path / "store"
    argv = ["ladder", "--sizes", "gpt_7k", "--algorithms", "adamw,twin=adamw", "--budgets",
            "1,2", "--tokens-per-param", "0.5", "--evals", "2", "--workers", "2",
            "--name", "lad", "--store", str(root), "--quiet"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "steps 4, 7 (batch 16 x 64 tokens)" in out  # ceil(0.5 x 6,984 / 1,024) = 4
    assert "4 trials planned, 0 already done, 4 ran, 0 failed" in out
    assert "rung gpt_7k" in out and "final validation loss" in out  # the summary
    store = open_store(root)
    docs = list(store.documents(study_name="lad"))
    for doc in docs:  # the last eval is at the planned step, where the schedule ended
        assert doc["ladder"] == doc["config"]["ladder"] and doc["status"] == "complete"
        assert doc["step_hint"] == doc["steps"] == doc["ladder"]["steps"]
        assert doc["workload_spec"]["model"]["data"] == doc["data"]["kind"] == "generated"
    evals = query.evals_frame(store)
    last = evals.sort_values("step").groupby("run_id").tail(1)
    assert dict(zip(last.run_id, last.step)) == {d["run_id"]: d["ladder"]["steps"] for d in docs}
    assert last[ladder.LOSS_COLUMN].notna().all()
    assert main(argv) == 2  # the ladder exists: --resume, or another --name
    assert "--resume" in capsys.readouterr().err
    # a kill left one run interrupted: resume runs it, and nothing finished
    killed = docs[0]
    path = store.run_path(killed["run_id"]) / R.RUN_DOC
    path.write_text(json.dumps({**killed, "status": "interrupted"}))
    assert main(argv + ["--resume"]) == 0
    assert "4 trials planned, 3 already done, 1 ran, 0 failed" in capsys.readouterr().out
    redone = [d for d in store.documents(study_name="lad") if d["trial_key"] == killed["trial_key"]]
    assert sorted(d["status"] for d in redone) == ["complete", "interrupted"]
    assert main(argv + ["--resume"]) == 0
    assert "4 already done, 0 ran" in capsys.readouterr().out


def test_the_best_sweep_trial_is_rerun_at_every_budget(tmp_path):
    store = open_store(tmp_path / "store", create=True)
    spec = LadderSpec(sizes="digits_mlp", algorithms="adamw", budgets=(1, 2),
                      trials={"adamw": 2}, tokens_per_param=1, evals=1, name="sw")
    result = run_ladder(spec, DIGITS, store, workers=2, progress=False)
    assert result.tuning.succeeded == 2 and result.final.succeeded == 2
    tuning, _ = plan_ladder(spec, DIGITS)
    chosen = choose_tuned(store, spec, tuning)[("adamw", "digits_mlp")]
    losses = {}
    for doc in store.documents(study_name="sw.tuning"):
        rows = query.evals_frame(store, [doc["run_id"]]).sort_values("step")
        losses[json.dumps(doc["config"]["hparams"], sort_keys=True)] = \
            rows[ladder.LOSS_COLUMN].iloc[-1]
    assert losses[json.dumps(chosen, sort_keys=True)] == min(losses.values())
    finals = list(store.documents(study_name="sw"))
    assert {json.dumps(d["config"]["hparams"], sort_keys=True) for d in finals} == \
        {json.dumps(chosen, sort_keys=True)}
    assert {d["ladder"]["tuning_trials"] for d in finals} == {2}


@pytest.mark.parametrize("flags, says", [
    (["--budgets", "1,0"], "a budget must be a finite number > 0"),
    (["--budgets", "nan"], "a budget must be a finite number > 0"),
    (["--budgets", "1,x"], "expected comma-separated numbers"),
    (["--seeds", "0"], "--seeds 0: must be a count >= 1"),
    (["--trials", "0"], "trials must be integers >= 1"),
    (["--trials", "adamw=two"], "trials must be integers >= 1"),
    (["--trials", "sgd=2"], "trials names 'sgd', which is not one of the ladder's algorithms"),
    (["--sizes", "shakespeare_char,huge"], "unknown ladder size 'huge': valid are "
                                           "shakespeare_char, shakespeare_char_relu"),
    (["--sizes", "shakespeare_char,shakespeare_char"], "size 'shakespeare_char' is given twice"),
    (["--name", "../up"], "bad ladder name '../up'"),
    (["--transfer", "adamw=nope"], "unknown transfer rule 'nope'"),
    (["--transfer", "adamw"], "expected NAME=RULE items"),
    (["--algorithms", "adamw,nosuch"], "unknown algorithm 'nosuch'"),
    (["--tokens-per-param", "-1"], "--tokens-per-param -1.0: must be a finite number > 0"),
    (["--evals", "0"], "--evals 0: must be an integer >= 1"),
    (["--workers", "0"], "--workers 0: must be an integer >= 1"),
    (["--budgets", "1e308"], "plans more than 1e+09 steps, the most one run may take"),
    (["--tokens-per-param", "1e300"], "plans more than 1e+09 steps"),
])
def test_hostile_flags_are_one_line_errors_and_write_nothing(tmp_path, monkeypatch, capsys,
                                                             flags, says):
    monkeypatch.setattr(ladder, "catalog_rungs", lambda data, data_dir=None: RUNGS)
    base = {"--sizes": "shakespeare_char", "--algorithms": "adamw,nadamw", "--budgets": "1"}
    argv = ["ladder", "--store", str(tmp_path / "s")]
    for flag, value in base.items():
        if flag not in flags:
            argv += [flag, value]
    try:
        code = main(argv + flags)
    except SystemExit as exit_:  # argparse refuses a malformed value itself, in one line
        code = exit_.code
    assert code == 2
    err = capsys.readouterr().err
    assert says in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "s").exists()


def test_the_dry_run_prints_the_tuning_budget_per_algorithm_and_writes_nothing(
        tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(ladder, "catalog_rungs", lambda data, data_dir=None: RUNGS)
    argv = ["ladder", "--sizes", "shakespeare_char_relu", "--algorithms", "adamw,nadamw",
            "--trials", "nadamw=4", "--store", str(tmp_path / "s"), "--dry-run"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "steps 800, 1600, 3200, 6400" in out and "REPEATS TOKENS" in out
    assert "tuning budget of adamw: 0 tuning trials" in out
    assert "tuning budget of nadamw: 4 tuning trials per rung" in out
    assert "warning: nadamw got 4" in out
    assert not (tmp_path / "s").exists()


@pytest.mark.parametrize("dry_run", [["--dry-run"], []])
def test_token_files_smaller_than_one_window_are_refused_at_plan_time(tmp_path, capsys,
                                                                      dry_run):
    """Every run would fail at its first batch: the plan (the dry run too) says so in one
    line, and nothing is written."""
    import numpy as np

    data = tmp_path / "tokens"
    data.mkdir()
    np.asarray(np.arange(5000) % 300, dtype="<u2").tofile(data / "train.bin")
    np.asarray(np.arange(20) % 300, dtype="<u2").tofile(data / "val.bin")  # < one window
    code = main(["ladder", "--sizes", "gpt_7k", "--algorithms", "adamw", "--budgets", "1",
                 "--data", str(data), "--store", str(tmp_path / "s"), *dry_run])
    err = capsys.readouterr().err
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1, err
    assert "the validation tokens (20) are fewer than one window" in err
    assert "of gpt_7k" in err
    assert not (tmp_path / "s").exists()
