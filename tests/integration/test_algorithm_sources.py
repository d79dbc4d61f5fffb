"""Algorithms from anywhere (runners/algorithms/sources.py): a file, a module, any torch optimizer,
under display names, with the source recorded and never two sources under one name."""
from __future__ import annotations

import json
import re
import os
import textwrap
from pathlib import Path

import pytest
import torch

from runners.algorithms import algorithm_names, get_algorithm
from runners.algorithms.sources import (SourceError, derived_search_space, load_class,
                                        wrap_optimizer)
from runners.algorithms.sources import parse_algorithm as parse


from runners.cli import main
from workbench import query
from workbench.store import open_store

from locations import REPO


def parse_algorithm(text: str):
    return parse(text, algorithm_names())

# Lion (Chen et al., 2023), the optimizer of examples/: written into temporary files below.
LION_OPTIMIZER = (REPO / "examples" / "lion.py").read_text()

LION_ALGORITHM = LION_OPTIMIZER + '''

from runners.api import Algorithm


class LionAlgorithm(Algorithm):
    """Lion with a constant learning rate, as a Pacebench Algorithm."""

    search_space = {"learning_rate": {"min": 3e-4, "max": 3e-3, "scaling": "log"}}

    def __init__(self, hparams):
        super().__init__({"learning_rate": 1e-3, **hparams})

    def init(self, model, workload):
        self.optimizer = Lion(model.parameters(), lr=self.hparams["learning_rate"])

    def update(self, model, batch, step, workload):
        self.optimizer.zero_grad(set_to_none=True)
        loss = workload.loss(model, batch)
        loss.backward()
        self.optimizer.step()
        return loss.detach()
'''


def _file(tmp_path: Path, name: str, source: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(source))
    return path


def test_specs_parse_to_names_and_sources(tmp_path):
    path = _file(tmp_path, "lion.py", LION_OPTIMIZER)
    assert parse_algorithm("adamw").loaded_by_name
    named = parse_algorithm("fast=adamw")
    assert (named.name, named.spec, named.loaded_by_name) == ("fast", "adamw", False)
    own = parse_algorithm(f"{path}:Lion")
    assert (own.name, own.kind, own.spec) == ("Lion", "file", f"{path.resolve()}:Lion")
    assert len(own.sha256) == 64
    assert parse_algorithm(f"lion={path}:Lion").name == "lion"
    module = parse_algorithm("torch.optim:RAdam")
    assert (module.name, module.kind, module.sha256) == ("RAdam", "module", None)


@pytest.mark.parametrize("text, message", [
    ("nope", "unknown algorithm 'nope'"),
    ("missing.py:Lion", "algorithm file not found"),
    ("bad name=adamw", "must be 1 to 80 letters"),
    ("torch.optim:No Such", "unknown algorithm"),
])
def test_bad_specs_are_one_clear_error(text, message):
    with pytest.raises(SourceError) as err:
        parse_algorithm(text)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_a_torch_optimizer_is_wrapped_with_its_own_knobs():
    adam = wrap_optimizer(torch.optim.Adam)
    assert adam.defaults["learning_rate"] == pytest.approx(1e-3)
    assert adam.defaults["one_minus_beta1"] == pytest.approx(0.1)
    assert adam.defaults["beta2"] == pytest.approx(0.999)
    sgd = wrap_optimizer(torch.optim.SGD)
    assert "beta2" not in sgd.defaults and "one_minus_beta1" in sgd.defaults
    algorithm = sgd({"learning_rate": 0.1, "one_minus_beta1": 0.1})
    opt = algorithm.make_optimizer([torch.nn.Parameter(torch.zeros(2))])
    assert opt.param_groups[0]["momentum"] == pytest.approx(0.9)
    space = derived_search_space(adam)
    assert space["learning_rate"] == {"min": 1e-4, "max": 1e-2, "scaling": "log"}
    assert space["schedule"] == {"feasible_points": ["cosine"]}
    with pytest.raises(ValueError, match="schedule must be one of"):
        wrap_optimizer(torch.optim.Adam)({"schedule": "step"})


def test_a_changed_file_is_refused_not_run_under_the_old_identity(tmp_path):
    path = _file(tmp_path, "lion.py", LION_OPTIMIZER)
    source = parse_algorithm(f"{path}:Lion")
    path.write_text(path.read_text() + "\n# edited\n")
    with pytest.raises(SourceError, match="changed since the study was planned"):
        load_class(source.spec, source.sha256)


def test_get_algorithm_loads_each_kind(tmp_path):
    path = _file(tmp_path, "lion_algo.py", LION_ALGORITHM)
    algo = get_algorithm("lion", {"learning_rate": 2e-3}, f"{path}:LionAlgorithm")
    assert algo.hparams["learning_rate"] == 2e-3
    radam = get_algorithm("RAdam", {"learning_rate": 3e-3}, "torch.optim:RAdam")
    assert radam.hparams["schedule"] == "cosine"
    assert get_algorithm("fast", None, "adamw").hparams["learning_rate"] > 0


@pytest.mark.slow
def test_a_study_of_lion_from_files_against_adamw_by_path_alone(tmp_path, capsys):
    algo_file = _file(tmp_path, "lion_algo.py", LION_ALGORITHM)
    opt_file = _file(tmp_path, "lion_opt.py", LION_OPTIMIZER)
    store = tmp_path / "store"
    code = main(["study", "--workloads", "digits_mlp", "--algorithms",
                 f"lion={algo_file}:LionAlgorithm,lion_opt={opt_file}:Lion,adamw",
                 "--studies", "1", "--trials", "2", "--max-steps", "60", "--workers", "2",
                 "--name", "lion", "--store", str(store), "--quiet"])
    assert code == 0, capsys.readouterr()
    runs = query.runs_frame(open_store(store))
    assert set(runs.algorithm) == {"lion", "lion_opt", "adamw"}
    assert set(runs.status) == {"complete"}
    docs = {r.algorithm: open_store(store).run_doc(r.run_id) for r in runs.itertuples()}
    assert docs["lion_opt"]["config"]["algorithm_source"] == f"{opt_file.resolve()}:Lion"
    assert len(docs["lion_opt"]["config"]["algorithm_sha256"]) == 64
    assert docs["adamw"]["config"].get("algorithm_source") is None
    # the class's own search space (lr 3e-4..3e-3) and the derived one of the wrapped optimizer
    lion_lr = [h["learning_rate"] for h in runs[runs.algorithm == "lion"].hparams]
    assert all(3e-4 <= lr <= 3e-3 for lr in lion_lr)
    assert all(h["schedule"] == "cosine" for h in runs[runs.algorithm == "lion_opt"].hparams)
    capsys.readouterr()
    assert main(["score", "--store", str(store), "--json"]) == 0
    assert set(json.loads(capsys.readouterr().out)["scores"]) == {"lion", "lion_opt", "adamw"}
    # the same name for other code is refused, in one line, before anything runs
    other = _file(tmp_path, "other.py", LION_OPTIMIZER.replace("0.99", "0.98"))
    code = main(["study", "--workloads", "digits_mlp", "--algorithms", f"lion_opt={other}:Lion",
                 "--trials", "1", "--max-steps", "5", "--name", "again", "--store", str(store)])
    err = capsys.readouterr().err
    assert code != 0 and "the store's runs named 'lion_opt' ran" in err
    assert len(err.strip().splitlines()) == 1


def test_search_space_flag_replaces_an_algorithms_own(tmp_path, capsys):
    opt_file = _file(tmp_path, "lion_opt.py", LION_OPTIMIZER)
    space = tmp_path / "space.json"
    space.write_text('{"learning_rate": {"feasible_points": [0.00123]}}')
    store = tmp_path / "store"
    common = ["study", "--workloads", "synthetic", "--algorithms", f"lion={opt_file}:Lion",
              "--trials", "1", "--max-steps", "3", "--store", str(store), "--quiet"]
    assert main([*common, "--search-space", f"nope={space}"]) != 0
    assert "NAME one of the study's algorithms (lion)" in capsys.readouterr().err
    assert main([*common, "--search-space", f"lion={space}"]) == 0
    runs = query.runs_frame(open_store(store))
    assert [h["learning_rate"] for h in runs.hparams] == [0.00123]
    doc = next(open_store(store).documents())
    assert (doc["search_space_origin"], doc["search_space_file"]) == ("file", str(space.resolve()))


ADAMW_SPACE = REPO / "runners" / "algorithms" / "adamw.json"


def test_each_run_records_its_search_space_and_where_it_came_from(tmp_path, capsys):
    declared = _file(tmp_path, "lion_algo.py", LION_ALGORITHM)  # its class's search_space
    beside = _file(tmp_path, "lion_opt.py", LION_OPTIMIZER)
    beside_space = {"learning_rate": {"feasible_points": [2e-4]}}
    (tmp_path / "lion_opt.json").write_text(json.dumps(beside_space))
    store = tmp_path / "store"
    code = main(["study", "--workloads", "synthetic", "--algorithms",
                 f"declared={declared}:LionAlgorithm,beside={beside}:Lion,adamw,torch.optim:SGD",
                 "--trials", "1", "--max-steps", "3", "--workers", "2", "--name", "spaces",
                 "--store", str(store), "--quiet"])
    assert code == 0, capsys.readouterr()
    docs = {d["algorithm"]: d for d in open_store(store).documents()}
    assert {name: (d["search_space_origin"], d["search_space_file"])
            for name, d in docs.items()} == {
        "declared": ("declared", None),
        "beside": ("file", str((tmp_path / "lion_opt.json").resolve())),
        "adamw": ("file", str(ADAMW_SPACE)),  # a built-in's own file
        "SGD": ("signature", None)}
    assert docs["declared"]["search_space"] == {
        "learning_rate": {"min": 3e-4, "max": 3e-3, "scaling": "log"}}
    assert docs["beside"]["search_space"] == beside_space
    assert docs["adamw"]["search_space"] == json.loads(ADAMW_SPACE.read_text())
    assert docs["SGD"]["search_space"]["learning_rate"] == {"min": 1e-4, "max": 1e-2,
                                                            "scaling": "log"}


def test_dry_run_prints_spaces_origins_and_trials_and_writes_nothing(tmp_path, capsys):
    from runners.algorithms.sources import parse_algorithms
    from runners.launch.study import plan_study
    from workbench.spec import StudySpec

    store = tmp_path / "store"
    items = ["adamw", "pytorch_optimizer:AdEMAMix"]
    common = ["study", "--workloads", "synthetic,digits_mlp", "--algorithms", ",".join(items),
              "--studies", "2", "--trials", "3", "--name", "dry", "--store", str(store)]
    assert main([*common, "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert not store.exists()  # nothing written, not even the store
    assert f"search space, origin file ({ADAMW_SPACE})" in out
    assert "search space, origin signature (derived from the constructor's defaults)" in out
    assert re.search(r"\n +hyperparameter +low +high +scaling\n", out)  # a table, not JSON
    assert re.search(r"\n +beta2 +0\.999 +points\n", out)
    assert re.search(r"\n +learning_rate +0\.003 +0\.1 +log\n", out)
    spec = StudySpec(workloads=("synthetic", "digits_mlp"), algorithms=("adamw", "AdEMAMix"),
                     studies=2, trials=3, name="dry")
    planned = [c for c in plan_study(spec, sources=parse_algorithms(items, algorithm_names()))
               if c.workload == "synthetic"]
    assert len(planned) == 12 and "CANNOT BE BUILT" not in out
    for config in planned:  # every trial, with its hyperparameters (4 significant digits)
        shown = {k: float(f"{v:.4g}") if isinstance(v, float) else v
                 for k, v in config.hparams.items()}
        assert f"    trial {config.trial}: {json.dumps(shown)}" in out
    bad = tmp_path / "bad.json"
    bad.write_text('{"learning_rate": {"feasible_points": [-1.0]}}')
    assert main([*common, "--search-space", f"adamw={bad}", "--dry-run"]) == 0
    assert "CANNOT BE BUILT: HparamError" in capsys.readouterr().out and not store.exists()


EIGHT = ("AdEMAMix", "Adan", "Muon", "ScheduleFreeAdamW", "SOAP", "Prodigy", "Lamb", "AdaBelief")
# any optimizer by import path, torch's own and a library's, beside the eight
OPTIMIZERS = ("torch.optim:RAdam", "pytorch_optimizer:Lion",
              *(f"pytorch_optimizer:{name}" for name in EIGHT))


@pytest.mark.slow
def test_any_torch_optimizer_and_eight_hard_ones_run_a_study_by_import_path_alone(tmp_path,
                                                                                  capsys):
    """Issue 28: each of the eight failed or ran wrongly under the first wrapper (3 betas,
    Muon's parameter groups, schedule-free train/eval); torch.optim's RAdam and the library's
    Lion are the plain case. One study (10 optimizers x 1 trial of 30 steps on 2 workers), not
    three: the workers start once. (A second trial each drew other hyperparameters from the same
    signature space, and checked nothing more.)"""
    store = tmp_path / "store"
    code = main(["study", "--workloads", "mnist1d_mlp", "--algorithms", ",".join(OPTIMIZERS),
                 "--trials", "1", "--max-steps", "30", "--workers", "2", "--name", "eight",
                 "--store", str(store), "--quiet"])
    assert code == 0, capsys.readouterr()
    runs = query.runs_frame(open_store(store))
    assert sorted(runs.algorithm) == sorted(o.split(":")[1] for o in OPTIMIZERS)
    assert set(runs.status) == {"complete"} and set(runs.steps) == {30}
    docs = list(open_store(store).documents())
    assert {d["search_space_origin"] for d in docs} == {"signature"}


def test_a_path_holding_equals_signs_and_commas_is_one_algorithm(tmp_path):
    """--algorithms reads a path with '=' and ',' in it whole (a comma written '\\,'), named or
    not, beside other items (runners/cli/flags.py ITEM_RULE)."""
    from runners.algorithms.sources import parse_algorithms
    from runners.cli import build_parser

    folder = tmp_path / "lr=3e-4,wd=0.1"
    folder.mkdir()
    path = _file(folder, "lion=v2.py", LION_OPTIMIZER)
    escaped = str(path).replace(",", "\\,")
    args = build_parser().parse_args(["study", "--workloads", "digits_mlp", "--algorithms",
                                      f"{escaped}:Lion,mine={escaped}:Lion,adamw"])
    assert args.algorithms == [f"{path}:Lion", f"mine={path}:Lion", "adamw"]
    sources = parse_algorithms(args.algorithms, algorithm_names())
    assert list(sources) == ["Lion", "mine", "adamw"]
    assert sources["Lion"].spec == sources["mine"].spec == f"{path.resolve()}:Lion"
    from runners.cli.common import search_spaces
    space = folder / "space=b.json"
    space.write_text("{}")
    assert search_spaces([str(space)], ["Lion"]) == {"Lion": str(space)}
    assert search_spaces([f"mine={space}"], ["Lion", "mine"]) == {"mine": str(space)}
    relative = tmp_path / "x=1.py"  # '=' before any '/': read whole because the file exists
    relative.write_text(LION_OPTIMIZER)
    cwd = os.getcwd()
    try:
        os.chdir(tmp_path)
        assert parse_algorithm("x=1.py:Lion").name == "Lion"
        assert parse_algorithm("n=x=1.py:Lion").name == "n"
    finally:
        os.chdir(cwd)
