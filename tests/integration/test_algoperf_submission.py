"""AlgoPerf-API submissions run unchanged: the adapter, the workload surface, CLI studies, timing."""
from __future__ import annotations

import hashlib
import logging
import math
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from workbench import query
from runners.algoperf.adapter import (AlgoPerfAlgorithm, SubmissionError, algorithm_name,
                                      ensure_algoperf_imports, hyperparameters_from,
                                      load_submission)
from runners.algoperf.workload import AlgoPerfWorkload
from runners.cli import main
from runners.run.loop import run
from runners.workloads import build_workload
from workbench.catalog import get_workload
from workbench.cubes import final_cube
from workbench.scoring import workload_times
from workbench.spec import ExecutionOptions, RunConfig
from workbench.store import open_store

from locations import FIXTURES

ADAMW = FIXTURES / "algoperf_adamw" / "submission.py"
RAISES = FIXTURES / "algoperf_raises" / "submission.py"

# A submission for timing and protocol tests: init sleeps INIT_SLEEP_S, every update UPDATE_SLEEP_S.
TIMED = '''
import time

import torch
from algoperf import spec

SEEN = {}


def get_batch_size(workload_name):
    return 32


def init_optimizer_state(workload, model_params, model_state, hyperparameters, rng):
    time.sleep(1.0)
    SEEN["hyperparameters"] = hyperparameters
    return {"sgd": torch.optim.SGD(model_params.parameters(), lr=hyperparameters.learning_rate)}


def update_params(workload, current_param_container, current_params_types, model_state,
                  hyperparameters, batch, loss_type, optimizer_state, eval_results, global_step,
                  rng, train_state=None):
    SEEN["train_state"] = train_state
    SEEN["eval_results"] = list(eval_results)
    if global_step == hyperparameters.stop_at:
        raise spec.TrainingCompleteError("enough")
    time.sleep(0.01)
    logits, model_state = workload.model_fn(current_param_container, batch, model_state,
                                            spec.ForwardPassMode.TRAIN, rng, True)
    out = workload.loss_fn(batch["targets"], logits)
    optimizer_state["sgd"].zero_grad()
    (out["summed"] / out["n_valid_examples"]).backward()
    optimizer_state["sgd"].step()
    return optimizer_state, current_param_container, model_state


def data_selection(workload, input_queue, optimizer_state, current_param_container, model_state,
                   hyperparameters, global_step, rng):
    return next(input_queue)
'''
INIT_SLEEP_S, UPDATE_SLEEP_S = 1.0, 0.01


@pytest.fixture(autouse=True)
def _one_thread(one_thread):
    """Every test here trains tiny models: one torch thread (see conftest.one_thread)."""


@pytest.fixture()
def store(tmp_path):
    return open_store(tmp_path / "store", create=True)


def _write(tmp_path: Path, source: str, name: str = "submission.py") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(source))
    return path


# --- loading and hyperparameters ---------------------------------------------------------------
def test_hyperparameters_are_a_namedtuple_with_attribute_access():
    hp = hyperparameters_from({"learning_rate": 0.1, "beta2": 0.999})
    assert hp.learning_rate == 0.1 and hp.beta2 == 0.999 and hp._asdict()["beta2"] == 0.999
    assert hyperparameters_from({}) is None  # self-tuning: AlgoPerf passes None
    with pytest.raises(SubmissionError, match="identifiers"):
        hyperparameters_from({"not valid": 1})


def test_a_missing_required_function_is_named_with_the_file(tmp_path):
    source = RAISES.read_text().replace("def update_params(", "def renamed_update(")
    path = _write(tmp_path, source)
    with pytest.raises(SubmissionError, match="update_params") as err:
        load_submission(path)
    assert str(path) in str(err.value)
    with pytest.raises(SubmissionError, match="not found"):
        load_submission(tmp_path / "absent.py")


def test_compat_imports_never_shadow_an_installed_algoperf(tmp_path, monkeypatch):
    fake = tmp_path / "site" / "algoperf"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("REAL = True\n")
    ensure_algoperf_imports()
    import algoperf.spec  # noqa: F401 - so that the deletions below are undone after the test
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    for name in [m for m in sys.modules if m == "algoperf" or m.startswith("algoperf.")]:
        monkeypatch.delitem(sys.modules, name)
    assert "algoperf" not in ensure_algoperf_imports()
    import algoperf
    assert getattr(algoperf, "REAL", False)


def test_get_batch_size_raising_falls_back_to_the_catalog_and_says_so(caplog):
    algo = AlgoPerfAlgorithm(ADAMW, {"learning_rate": 1e-3})
    with caplog.at_level(logging.WARNING, logger="runners.algoperf.adapter"):
        assert algo.batch_size(get_workload("digits_mlp")) == 64
    assert "using the workload's default batch size 64" in caplog.text
    assert "get_batch_size('digits_mlp')" in caplog.text


# --- the workload surface ----------------------------------------------------------------------
def _surface(name: str, data_dir=None) -> tuple[AlgoPerfWorkload, torch.nn.Module, dict]:
    ensure_algoperf_imports()
    from algoperf import spec
    workload = build_workload(get_workload(name), data_dir=data_dir)
    model = workload.init_model(0)
    surface = AlgoPerfWorkload(workload, spec, model)
    batch = next(workload.train_batches(8, seed=0))
    return surface, model, batch


@pytest.mark.parametrize("name", ["digits_mlp", "synthetic"])
def test_loss_fn_mean_equals_our_loss(name):
    surface, model, batch = _surface(name)
    logits, state = surface.model_fn(model, batch, None, surface.api.ForwardPassMode.TRAIN, None,
                                     True)
    out = surface.loss_fn(batch["targets"], logits)
    assert out["per_example"].shape == (8,) and out["n_valid_examples"] == 8 and state is None
    expected = surface.workload.loss(model, batch).detach()
    mean = (out["summed"] / out["n_valid_examples"]).detach()
    assert float(mean) == pytest.approx(float(expected), 1e-6)
    assert float(surface.last_loss) == pytest.approx(float(expected), 1e-6)
    mask = torch.tensor([1.0] * 4 + [0.0] * 4)
    masked = surface.loss_fn(batch["targets"], logits, mask_batch=mask)
    assert float(masked["n_valid_examples"]) == 4
    assert float(masked["summed"].detach()) == pytest.approx(
        float(out["per_example"][:4].sum().detach()), 1e-6)
    expected_type = "SOFTMAX_CROSS_ENTROPY" if name == "digits_mlp" else "MEAN_SQUARED_ERROR"
    assert surface.loss_type.name == expected_type


def test_sequence_loss_and_parameter_types_on_the_transformer(shared_data):
    surface, model, batch = _surface("shakespeare_char", shared_data)
    types = surface.api.ParameterType
    logits, _ = surface.model_fn(model, batch, None, surface.api.ForwardPassMode.EVAL, None, False)
    assert logits.dim() == 3 and not logits.requires_grad and not model.training
    out = surface.loss_fn(batch["targets"], logits)
    assert out["per_example"].shape == batch["targets"].shape  # (B, T): one loss per token
    mean = float(out["summed"] / out["n_valid_examples"])
    assert mean == pytest.approx(float(surface.workload.loss(model, batch).detach()), 1e-5)
    kinds = surface.model_params_types
    assert list(kinds) == [n for n, _ in model.named_parameters()]
    assert kinds["tok.weight"] == types.EMBEDDING and kinds["pos.weight"] == types.EMBEDDING
    assert kinds["blocks.0.ln1.weight"] == types.LAYER_NORM_SCALE
    assert kinds["blocks.0.ln1.bias"] == types.LAYER_NORM_BIAS
    assert kinds["blocks.0.attn.qkv.weight"] == types.ATTENTION_QKV
    assert kinds["blocks.0.attn.qkv.bias"] == types.ATTENTION_BIAS
    assert kinds["blocks.0.attn.proj.weight"] == types.ATTENTION_OUT
    assert kinds["blocks.0.mlp.0.weight"] == types.WEIGHT
    assert kinds["blocks.0.mlp.0.bias"] == types.BIAS
    assert surface.param_shapes["tok.weight"].shape_tuple == (65, 64)
    assert surface.is_output_params("head.weight") and not surface.is_output_params("tok.weight")


def test_workload_facts_come_from_the_catalog():
    surface, _, _ = _surface("digits_mlp")
    spec = get_workload("digits_mlp")
    assert surface.step_hint == spec.step_hint
    assert surface.target_metric_name == "accuracy"
    assert surface.validation_target_value == spec.target.validation
    assert surface.test_target_value == spec.target.test
    assert surface.max_allowed_runtime_sec == spec.budget.seconds
    # AlgoPerf's scoring eval period (workbench.catalog.SCORING_EVAL_PERIOD_S), not the eval
    # cadence: 25 of 800 steps in 60 s, as at e9b2ec6
    assert surface.eval_period_time_sec == 1.875 != 60.0 * spec.eval_every.steps / 800
    assert surface.num_train_examples > 1000 and surface.metrics_logger is None
    assert surface.has_reached_validation_target({"validation/accuracy": 0.99})
    assert not surface.has_reached_test_target({"test/accuracy": 0.5})
    with pytest.raises(AttributeError, match="Pacebench provides"):
        surface.eval_batch_size
    assert isinstance(surface, surface.api.Workload)  # registered as a virtual subclass


# --- the timed loop ----------------------------------------------------------------------------
def test_init_is_off_the_clock_updates_on_it_and_training_complete_stops(tmp_path, store):
    path = _write(tmp_path, TIMED)
    hparams = {"learning_rate": 0.05, "stop_at": 30}
    algo = AlgoPerfAlgorithm(path, hparams)
    config = RunConfig("synthetic", algorithm_name(path), hparams=hparams, max_steps=40,
                       eval_every=20)
    doc = store.run_doc(run(config, store, algorithm=algo))
    assert doc["status"] == "complete" and doc["steps"] == 30
    assert doc["stop_reason"] == "algorithm requested the end of training"
    # 30 updates sleep 0.3 s on the clock; init's 1 s sleep is not counted
    assert 30 * UPDATE_SLEEP_S <= doc["train_seconds"] < INIT_SLEEP_S
    seen = algo.module.SEEN
    assert seen["hyperparameters"].learning_rate == 0.05 and seen["hyperparameters"].stop_at == 30
    assert seen["train_state"]["accumulated_submission_time"] > 0  # as of the last eval
    assert [s for s, _ in seen["eval_results"]] == [20]  # evals every 20 steps
    assert "validation/loss" in seen["eval_results"][0][1]
    train = query.train_frame(store, [doc["run_id"]])
    assert list(train.step) == [5, 10, 15, 20, 25, 30] and train.loss.map(math.isfinite).all()
    assert doc["algorithm_source"] == {"kind": "algoperf_submission", "path": str(path),
                                       "sha256": hashlib.sha256(path.read_bytes()).hexdigest()}
    assert doc["compile_seconds"] == 0.0 and doc["compile_cache"] is None  # not compiled


@pytest.mark.slow
def test_a_compiled_submission_records_its_cold_compilation(tmp_path, store):
    """The submission's model_fn calls the compiled model: its compilation is on the clock,
    recorded apart, from a cold cache of the run's own."""
    source = TIMED.replace("time.sleep(1.0)", "pass").replace("time.sleep(0.01)", "pass")
    path = _write(tmp_path, source)
    hparams = {"learning_rate": 0.05, "stop_at": -1}
    config = RunConfig("synthetic", algorithm_name(path), hparams=hparams, max_steps=3,
                       stop_on_target=False, execution=ExecutionOptions(compile=True))
    doc = store.run_doc(run(config, store, algorithm=AlgoPerfAlgorithm(path, hparams)))
    assert doc["status"] == "complete" and doc["compile_cache"] == "cold"
    assert 0 < doc["compile_seconds"] <= doc["train_seconds"]


def test_a_submission_that_computes_no_loss_is_not_marked_diverged(tmp_path, store):
    source = TIMED.replace("time.sleep(1.0)", "pass").replace("time.sleep(0.01)", "pass").replace(
        "out = workload.loss_fn(batch[\"targets\"], logits)",
        "out = {'summed': ((logits - batch['targets']) ** 2).sum(), 'n_valid_examples': 32}")
    path = _write(tmp_path, source)
    config = RunConfig("synthetic", algorithm_name(path), hparams={"learning_rate": 0.05,
                                                                   "stop_at": -1},
                       max_steps=20, stop_on_target=False)
    doc = store.run_doc(run(config, store))  # built from the name, via get_algorithm
    assert doc["status"] == "complete" and doc["steps"] == 20
    assert query.train_frame(store, [doc["run_id"]]).empty  # no loss to log, no divergence check


# --- the CLI -----------------------------------------------------------------------------------
@pytest.mark.slow
def test_adamw_submission_study_reaches_the_digits_target(tmp_path, capsys):
    root = tmp_path / "store"
    code = main(["study", "--workloads", "digits_mlp", "--algoperf-submission", str(ADAMW),
                 "--tuning-search-space", str(ADAMW.parent / "tuning_search_space.json"),
                 "--trials", "2", "--workers", "2", "--name", "apf", "--store", str(root),
                 "--quiet"])
    assert code == 0, capsys.readouterr()
    runs = query.runs_frame(open_store(root))
    assert len(runs) == 2 and set(runs.status) == {"complete"}
    # the study reaches the catalog target (validation accuracy >= 0.9866), scored as AlgoPerf
    # does: the best trial's time to target. A single trial may miss by one image of 300.
    assert runs.reached_target.any()
    times = workload_times(final_cube(runs)).sel(workload="digits_mlp")
    assert math.isfinite(times.sel(algorithm=algorithm_name(ADAMW)).item())
    assert set(runs.algorithm) == {algorithm_name(ADAMW)} and set(runs.batch_size) == {64}
    assert all(set(h) == {"learning_rate", "one_minus_beta1", "beta2", "weight_decay",
                          "warmup_factor"} for h in runs.hparams)
    logs = "".join(p.read_text() for p in (root / "logs").glob("*.log"))
    assert logs.count("using the workload's default batch size 64") == 2


@pytest.mark.slow
def test_a_raising_submission_fails_its_run_not_the_study(tmp_path, capsys):
    root = tmp_path / "store"
    code = main(["study", "--workloads", "synthetic", "--algoperf-submission", str(RAISES),
                 "--trials", "1", "--name", "boom", "--store", str(root), "--quiet"])
    out = capsys.readouterr().out
    assert code == 1 and "1 trials planned" in out and "1 failed" in out
    runs = query.runs_frame(open_store(root))
    assert list(runs.status) == ["failed"]
    error = runs.error.iloc[0]
    assert "Traceback" in error and "deliberate failure in update_params at step 3" in error
    assert str(RAISES) in error  # the traceback points into the submission file


# --- submissions of every vintage ----------------------------------------------------------------
def test_a_submission_written_against_algorithmic_efficiency_runs_unchanged(tmp_path, store):
    """v0.5 / v0.6 entries import AlgoPerf's package by its old name; the same modules serve it."""
    source = (TIMED.replace("from algoperf import spec", "from algorithmic_efficiency import spec\n"
                            "from algorithmic_efficiency.pytorch_utils import pytorch_setup\n"
                            "USE_PYTORCH_DDP, RANK, DEVICE, N_GPUS = pytorch_setup()")
              .replace("time.sleep(1.0)", "pass").replace("time.sleep(0.01)", "pass"))
    assert "import algoperf" not in source and "from algoperf" not in source
    path = _write(tmp_path, source)
    config = RunConfig("synthetic", algorithm_name(path),
                       hparams={"learning_rate": 0.05, "stop_at": 7}, max_steps=20,
                       stop_on_target=False)
    doc = store.run_doc(run(config, store))
    # its spec.TrainingCompleteError is algoperf's class: the run ends as the submission asked
    assert doc["status"] == "complete" and doc["steps"] == 7, doc.get("error")
    import algoperf.spec
    import algorithmic_efficiency.spec
    assert algorithmic_efficiency.spec is algoperf.spec


def test_a_submission_needing_a_missing_package_fails_in_one_line(tmp_path, capsys):
    path = _write(tmp_path, "import optax_that_is_not_installed\n" + TIMED)
    with pytest.raises(SubmissionError) as err:
        load_submission(path)
    message = str(err.value)
    assert "optax_that_is_not_installed" in message and str(path) in message
    assert "pip install optax_that_is_not_installed" in message and "\n" not in message
    code = main(["run", "--workload", "synthetic", "--algoperf-submission", str(path),
                 "--max-steps", "2", "--store", str(tmp_path / "s")])
    err_text = capsys.readouterr().err
    assert code != 0 and "optax_that_is_not_installed" in err_text
    assert len(err_text.strip().splitlines()) == 1 and "Traceback" not in err_text


def test_a_submission_importing_helpers_from_its_repository_root_runs_with_algoperf_root(
        tmp_path, capsys, monkeypatch):
    """Competition entries import their helpers relative to their repository's root
    (`from submissions.x.helpers import ...`); --algoperf-root puts that root on the path, in
    the launcher and in every worker process."""
    from runners.algoperf.adapter import ROOT_ENV
    monkeypatch.setenv(ROOT_ENV, "")  # whatever main() sets is undone after the test
    repo = tmp_path / "repo"
    (repo / "shared_helpers").mkdir(parents=True)
    (repo / "shared_helpers" / "__init__.py").write_text("")
    (repo / "shared_helpers" / "speed.py").write_text("LR_SCALE = 1.0\n")
    source = ("from shared_helpers.speed import LR_SCALE\n" + TIMED).replace(
        "time.sleep(1.0)", "pass").replace("time.sleep(0.01)", "pass").replace(
        "lr=hyperparameters.learning_rate", "lr=LR_SCALE * hyperparameters.learning_rate")
    submission = repo / "submissions" / "mine" / "submission.py"
    submission.parent.mkdir(parents=True)
    submission.write_text(source)
    (submission.parent / "tuning_search_space.json").write_text(
        '{"learning_rate": {"feasible_points": [0.05]}, "stop_at": {"feasible_points": [1000]}}')
    cmd = ["study", "--workloads", "synthetic", "--algorithms", f"algoperf:{submission}",
           "--trials", "1", "--max-steps", "5", "--store", str(tmp_path / "s"), "--quiet"]
    assert main(cmd) != 0  # without the root: one line that says what to pass
    err = capsys.readouterr().err
    assert "shared_helpers" in err and "--algoperf-root" in err and "Traceback" not in err
    assert main([*cmd, "--algoperf-root", str(repo)]) == 0
    runs = query.runs_frame(open_store(tmp_path / "s"))
    assert list(runs.status) == ["complete"] and list(runs.algorithm) == ["mine"]
    doc = open_store(tmp_path / "s").run_doc(runs.run_id.iloc[0])
    assert doc["algorithm_source"]["algoperf_root"] == [str(repo.resolve())]


def test_several_submissions_run_in_one_study_under_their_folder_names(tmp_path):
    import shutil
    other = tmp_path / "other_entry"
    shutil.copytree(ADAMW.parent, other)
    store = tmp_path / "s"
    assert main(["study", "--workloads", "synthetic", "--algorithms",
                 f"algoperf:{ADAMW},algoperf:{other / 'submission.py'},adamw", "--trials", "1",
                 "--max-steps", "5", "--workers", "2", "--store", str(store), "--quiet"]) == 0
    runs = query.runs_frame(open_store(store))
    assert sorted(runs.algorithm) == ["adamw", "algoperf_adamw", "other_entry"]
    assert set(runs.status) == {"complete"}


def test_the_scoring_eval_period_is_the_workloads_as_when_the_submissions_ran():
    """A submission sizes its work from eval_period_time_sec (LAWA EMA: its averaging loop;
    when the adapter reported the eval cadence of 5 digits_mlp steps, an off-by-one of its own
    raised TypeError). The period is each built-in's of commit e9b2ec6, where the 11
    competition submissions ran unchanged; a variant takes its base's unless it had its own
    there (shakespeare_char_gpu); a finer measuring
    cadence changes nothing; an entry without one (a ladder rung, a plug-in) reads its
    cadence in seconds."""
    import dataclasses

    from workbench.catalog import CATALOG, SCORING_EVAL_PERIOD_S, scoring_eval_period
    from workbench.spec import EvalCadence

    at_e9b2ec6 = {"digits_mlp": 60 * 25 / 800, "digits_cnn_wide": 60 * 25 / 800,
                  "mnist1d_mlp": 60 * 50 / 1500, "mnist1d_cnn_tanh": 180 * 100 / 2000,
                  "mnist_cnn": 600 * 200 / 6000, "fashion_mnist_cnn_wide": 600 * 200 / 6000,
                  "cifar10_resnet_gelu": 600 * 88 / 2640, "shakespeare_char": 300 * 100 / 1500,
                  "shakespeare_char_gpu": 900 * 250 / 5000, "synthetic_tanh": 30 * 20 / 400}
    for name, period in at_e9b2ec6.items():
        assert scoring_eval_period(get_workload(name)) == pytest.approx(period), name
    assert {CATALOG[n].base for n in at_e9b2ec6} | {"shakespeare_char_gpu"} == \
        set(SCORING_EVAL_PERIOD_S)
    finer = dataclasses.replace(get_workload("digits_mlp"), eval_every=EvalCadence(steps=1))
    assert scoring_eval_period(finer) == 1.875
    rung = get_workload("gpt_7k")
    assert scoring_eval_period(rung) == pytest.approx(
        rung.budget.seconds * rung.eval_every.steps / rung.budget.steps)
