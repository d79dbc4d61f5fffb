"""Hostile AlgoPerf log trees: every malformed or adversarial trial is a recorded problem naming
its file (or one clear error), never a traceback, and never moves the score of a submission that
was not at fault.

A clean tree (submissions alpha and beta, workloads wa and wb) is imported once; each case then
imports, into a copy of that store, a tree holding the hostile submission `mallory` (whose
trials, when imported at all, never reach a target, so a correct import leaves alpha's and
beta's scores exactly as they were).
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import stat
import warnings
from pathlib import Path

import pytest

from runners.cli import main
from workbench import query
from workbench.importers.algoperf import import_algoperf
from workbench.store import open_store

TARGETS = {
    "benchmark_version": "0.6", "base_workloads": ["wa", "wb"], "held_out_workloads": [],
    "workloads": {
        "wa": {"target_metric_name": "accuracy", "validation_target_value": 0.8, "step_hint": 100},
        "wb": {"target_metric_name": "loss", "validation_target_value": 0.5, "step_hint": 50},
    },
}
HEADER = "global_step,score,accumulated_eval_time,total_duration,validation/{metric},train/loss"
META = {"workload.max_allowed_runtime_sec": 1000, "workload.eval_period_time_sec": 10,
        "workload.step_hint": 100, "gpu_model_name": "V100", "gpu_count": 8, "rng_seed": 7}


def csv(metric: str, rows, header: str | None = None) -> str:
    """An eval log: rows of (step, score, metric value) (any cell may be a string)."""
    lines = [header or HEADER.format(metric=metric)]
    lines += [f"{step},{score},{score},{score},{value},1.0" for step, score, value in rows]
    return "\n".join(lines) + "\n"


# (workload, metric, rows) of the clean submissions: alpha is faster on wa, beta on wb.
CLEAN = {
    "alpha": {"wa": [(1, 10.0, 0.5), (50, 60.0, 0.85)], "wb": [(1, 10.0, 0.9), (40, 90.0, 0.45)]},
    "beta": {"wa": [(1, 20.0, 0.5), (30, 80.0, 0.9)], "wb": [(1, 5.0, 0.8), (30, 50.0, 0.4)]},
}
METRIC = {"wa": "accuracy", "wb": "loss"}
MISS = {"wa": [(1, 1.0, 0.1), (2, 2.0, 0.2)], "wb": [(1, 1.0, 9.0), (2, 2.0, 8.0)]}


def trial(root: Path, submission: str, workload: str = "wa", rows=None, meta=None,
          hparams=None, eval_text: str | None = None, number: int = 1) -> Path:
    """Write root/<submission>/study_0/<workload>_jax/trial_<number>/; returns the folder."""
    path = root / submission / "study_0" / f"{workload}_jax" / f"trial_{number}"
    path.mkdir(parents=True, exist_ok=True)
    (path / "eval_measurements.csv").write_text(
        eval_text if eval_text is not None else csv(METRIC[workload], rows or MISS[workload]))
    (path / "meta_data_0.json").write_text(json.dumps(META if meta is None else meta))
    (path / "hparams.json").write_text(json.dumps({"learning_rate": 0.1} if hparams is None
                                                  else hparams))
    return path


def nested(depth: int) -> str:
    return '{"a": ' * depth + "1" + "}" * depth


def _link(target: Path, link: Path) -> None:
    link.parent.mkdir(parents=True, exist_ok=True)
    if link.exists() or link.is_symlink():
        if link.is_dir() and not link.is_symlink():
            shutil.rmtree(link)
        else:
            link.unlink()
    link.symlink_to(target)


def _outside_file(root: Path) -> Path:
    secret = root.parent / "secret.csv"
    secret.write_text("root:x:0:0:root:/root:/bin/bash\n")
    return secret


# Each case writes mallory's tree under `root` (the log folder; root.parent is scratch space
# outside it) and names a text its problem must contain.
CASES = {
    "metric column differing only in case": (lambda root: trial(
        root, "mallory", eval_text="global_step,score,validation/accuracy,validation/ACCURACY\n"
                                   "1,1.0,0.1,0.99\n"), "differ only in case"),
    "metric column in upper case": (lambda root: trial(
        root, "mallory", eval_text=csv("ACCURACY", MISS["wa"])), "not lower case"),
    "negative time": (lambda root: trial(
        root, "mallory", rows=[(1, -5.0, 0.1), (2, 1.0, 0.2)]), "negative or infinite"),
    "decreasing time": (lambda root: trial(
        root, "mallory", rows=[(1, 50.0, 0.1), (2, 3.0, 0.2)]), "decreases"),
    "decreasing step": (lambda root: trial(
        root, "mallory", rows=[(5, 1.0, 0.1), (2, 3.0, 0.2)]), "decreases"),
    "infinite time": (lambda root: trial(
        root, "mallory", rows=[(1, 1.0, 0.1), (2, "inf", 0.2)]), "negative or infinite"),
    "minus infinite time": (lambda root: trial(
        root, "mallory", rows=[(1, "-inf", 0.1)]), "negative or infinite"),
    "NaN time": (lambda root: trial(
        root, "mallory", rows=[(1, "nan", 0.1)]), "empty cells"),
    "empty time cell": (lambda root: trial(
        root, "mallory", rows=[(1, "", 0.1)]), "empty cells"),
    "non-numeric metric": (lambda root: trial(
        root, "mallory", rows=[(1, 1.0, "fast")]), "not numeric"),
    "row with too many cells": (lambda root: trial(
        root, "mallory", eval_text="global_step,score,validation/accuracy\n1,2.0,0.1,7\n"),
        "not a readable CSV"),
    "a column named twice": (lambda root: trial(
        root, "mallory", eval_text="global_step,score,score\n1,2.0,3.0\n"),
        "appear more than once"),
    "no score column": (lambda root: trial(
        root, "mallory", eval_text="global_step,validation/accuracy\n1,0.9\n"), "lacks columns"),
    "eval log not UTF-8": (lambda root: trial(
        root, "mallory", eval_text="global_step,score\n\xff\xfe,1\n"), "is not numeric"),
    "budget a string": (lambda root: trial(
        root, "mallory", meta={**META, "workload.max_allowed_runtime_sec": "abc"}),
        "workload.max_allowed_runtime_sec"),
    "budget an object": (lambda root: trial(
        root, "mallory", meta={**META, "workload.max_allowed_runtime_sec": {}}),
        "workload.max_allowed_runtime_sec"),
    "budget zero": (lambda root: trial(
        root, "mallory", meta={**META, "workload.max_allowed_runtime_sec": 0}), "> 0 seconds"),
    "rng seed a string": (lambda root: trial(
        root, "mallory", meta={**META, "rng_seed": "x"}), "rng_seed"),
    "hardware a list": (lambda root: trial(
        root, "mallory", meta={**META, "gpu_model_name": ["<b>"]}), "gpu_model_name"),
    "meta not JSON": (lambda root: (trial(root, "mallory") / "meta_data_0.json").write_text(
        "{torn"), "meta_data_0.json: not valid JSON"),
    "meta a list": (lambda root: (trial(root, "mallory") / "meta_data_0.json").write_text(
        "[1, 2]"), "expected a JSON object"),
    "meta a folder": (lambda root: _folder(trial(root, "mallory") / "meta_data_0.json"),
                      "meta_data_0.json: not a regular file (a folder)"),
    # Files that are no regular files: opening or reading one would block (a FIFO with no
    # writer) or talk to a device; each is refused without being opened.
    "hparams a FIFO": (lambda root: _special(trial(root, "mallory") / "hparams.json", "fifo"),
                       "hparams.json: not a regular file (a FIFO)"),
    "meta a FIFO": (lambda root: _special(trial(root, "mallory") / "meta_data_0.json", "fifo"),
                    "meta_data_0.json: not a regular file (a FIFO)"),
    "eval log a FIFO": (lambda root: _special(
        trial(root, "mallory") / "eval_measurements.csv", "fifo"),
        "eval_measurements.csv: not a regular file (a FIFO)"),
    "eval log a link to a FIFO": (lambda root: _link(
        _special(trial(root, "mallory") / "pipe", "fifo"),
        root / "mallory/study_0/wa_jax/trial_1/eval_measurements.csv"),
        "eval_measurements.csv: not a regular file (a FIFO)"),
    "hparams a socket": (lambda root: _special(
        trial(root, "mallory") / "hparams.json", "socket"),
        "hparams.json: not a regular file (a socket)"),
    "meta a character device": (lambda root: _special(
        trial(root, "mallory") / "meta_data_0.json", "device"),
        "meta_data_0.json: not a regular file (a character device)"),
    "hparams nested 5,000 deep": (lambda root: (trial(root, "mallory") / "hparams.json")
                                  .write_text(nested(5000)), "hparams.json"),
    "hparams nested 50 deep": (lambda root: (trial(root, "mallory") / "hparams.json")
                               .write_text(nested(50)), "nested deeper than"),
    "hparams a string": (lambda root: (trial(root, "mallory") / "hparams.json").write_text(
        '"lr"'), "expected a JSON object"),
    "eval log a link out of the tree": (lambda root: _link(
        _outside_file(root), trial(root, "mallory") / "eval_measurements.csv"),
        "link out of the log tree"),
    "trial folder a link out of the tree": (lambda root: _link(
        _outside_trial(root), root / "mallory/study_0/wa_jax/trial_1"),
        "link out of the log tree"),
    "meta a link out of the tree": (lambda root: _link(
        _outside_file(root), trial(root, "mallory") / "meta_data_0.json"),
        "link out of the log tree"),
    "hparams a link loop": (lambda root: (
        _link(Path("hparams.json"), trial(root, "mallory") / "hparams.json")),
        "link out of the log tree"),
    # mallory_x (an exact name) is imported, "mallory x" (cleaned to it) refused
    "names that clean up alike": (lambda root: (trial(root, "mallory x"),
                                                trial(root, "mallory_x")),
                                  "its name cleans to 'mallory_x', which the folder "
                                  "'mallory_x' has"),
    "accented names that clean up alike": (lambda root: (trial(root, "mallöry"),
                                                         trial(root, "mallüry")), "same run ids"),
    "a name the store holds for another submission": (
        lambda root: trial(root, "alpha x"),
        "its name cleans to 'alpha_x', which the store's submission 'alpha_x' has"),
    "a cleaned name the store holds, then its exact name": (
        lambda root: trial(root, "alpha_y"), "which the store holds for submission 'alpha y'"),
    "trials disagreeing on the budget": (lambda root: trial(
        root, "mallory", meta={**META, "workload.max_allowed_runtime_sec": 5}),
        "trials disagree"),
}


def _folder(path: Path) -> None:
    path.unlink()
    path.mkdir()


def _special(path: Path, kind: str) -> Path:
    """Make `path` a FIFO, a Unix socket or a character device (/dev/null's numbers)."""
    path.unlink(missing_ok=True)
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "socket":
        os.mknod(path, 0o600 | stat.S_IFSOCK)
    elif os.geteuid() == 0:
        os.mknod(path, 0o600 | stat.S_IFCHR, os.makedev(1, 3))
    else:
        pytest.skip("making a device file needs root")
    return path


def _outside_trial(root: Path) -> Path:
    outside = root.parent / "elsewhere"
    trial(outside, "x")
    return outside / "x/study_0/wa_jax/trial_1"


@pytest.fixture(scope="module")
def clean(tmp_path_factory):
    """The clean store, and its scores and times (`pacebench score --json`)."""
    root = tmp_path_factory.mktemp("clean")
    (root / "targets.json").write_text(json.dumps(TARGETS))
    for submission, workloads in CLEAN.items():
        for workload, rows in workloads.items():
            trial(root / "logs", submission, workload, rows)
    report = import_algoperf(root / "logs", root / "store", root / "targets.json")
    assert report.problems == [] and report.imported == 4
    trial(root / "logs2", "alpha_x")  # a run id for the case "alpha x" to clash with
    trial(root / "logs2", "alpha y")  # ... and a cleaned name for "alpha_y"
    assert import_algoperf(root / "logs2", root / "store", root / "targets.json").problems == []
    return root, _scores(root / "store")


def _scores(store: Path) -> dict:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["score", "--store", str(store), "--json"]) == 0
    result = json.loads(out.getvalue())
    return {a: (result["scores"][a], result["time_to_target"][a]) for a in ("alpha", "beta")}


@pytest.mark.timeout(300, method="thread")  # a FIFO that blocks the import ends the session
@pytest.mark.parametrize("case", list(CASES))
def test_a_hostile_trial_is_a_problem_and_moves_no_other_score(clean, tmp_path, case, capsys):
    root, scores = clean
    store = tmp_path / "store"
    shutil.copytree(root / "store", store, symlinks=True)
    write, expected = CASES[case]
    logs = tmp_path / "logs"
    logs.mkdir()
    write(logs)
    code = main(["import-algoperf", str(logs), "--store", str(store),
                 "--targets", str(root / "targets.json")])
    out, err = capsys.readouterr()
    problems = [line for line in err.splitlines() if line.startswith("problem: ")]
    assert code == 1 and problems, (out, err)
    assert expected in "\n".join(problems), err
    assert "Traceback" not in err and "root:x:0:0" not in out + err  # nothing read outside
    assert all(len(line) < 600 for line in problems)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no run left that the store's readers must skip
        assert _scores(store) == scores  # alpha's and beta's scores and times are unchanged
        assert not query.runs_frame(open_store(store)).empty


def test_an_empty_log_folder_is_an_error_and_writes_no_store(tmp_path, capsys):
    (tmp_path / "targets.json").write_text(json.dumps(TARGETS))
    (tmp_path / "empty").mkdir()
    code = main(["import-algoperf", str(tmp_path / "empty"), "--store", str(tmp_path / "store"),
                 "--targets", str(tmp_path / "targets.json")])
    err = capsys.readouterr().err
    assert code != 0 and "no AlgoPerf submission under" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "store").exists()


def test_an_aborted_import_is_repaired_by_importing_again(clean, tmp_path):
    root, scores = clean
    store = tmp_path / "store"
    shutil.copytree(root / "store", store)
    config = json.loads((store / "pacebench-scoring.json").read_text())
    assert config["budgets"] == {"wa": 1000.0, "wb": 1000.0}
    # An import killed after writing its runs, before recording the budgets:
    (store / "pacebench-scoring.json").write_text(json.dumps({**config, "budgets": {}}))
    again = import_algoperf(root / "logs", store, root / "targets.json")
    assert (again.imported, again.problems) == (0, [])
    assert json.loads((store / "pacebench-scoring.json").read_text())["budgets"] == \
        config["budgets"]
    assert _scores(store) == scores


def test_a_non_finite_metric_reads_as_nan_and_never_meets_a_target(clean, tmp_path):
    root, scores = clean
    store = tmp_path / "store"
    shutil.copytree(root / "store", store)
    logs = tmp_path / "logs"
    trial(logs, "mallory", "wb", rows=[(1, 1.0, "-inf"), (2, 2.0, "inf")])  # loss: -inf "meets"
    report = import_algoperf(logs, store, root / "targets.json")
    assert (report.imported, report.problems) == (1, [])
    run = query.runs_frame(open_store(store)).set_index("algorithm").loc["mallory"]
    assert not run.reached_target and run.best_validation != float("-inf")
    assert _scores(store) == scores


def test_a_cleaned_name_never_displaces_the_exact_one(clean, tmp_path, capsys):
    """'gamma submission' beside the real 'gamma_submission' (both map to one run id): the
    real one is imported and the other refused, naming it; every submission's score is what
    it is without the stray folder (scores are relative to the pool, so a vanished
    submission would move them all)."""
    root, _ = clean
    gamma = {"wa": [(1, 5.0, 0.5), (20, 30.0, 0.95)], "wb": [(1, 5.0, 0.9), (10, 70.0, 0.3)]}
    stores = {}
    for case, stray in (("alone", False), ("beside", True)):
        store, logs = tmp_path / case / "store", tmp_path / case / "logs"
        shutil.copytree(root / "store", store)
        for workload, rows in gamma.items():
            trial(logs, "gamma_submission", workload, rows)
            if stray:
                trial(logs, "gamma submission", workload, MISS[workload])
        code = main(["import-algoperf", str(logs), "--store", str(store),
                     "--targets", str(root / "targets.json")])
        problems = [line for line in capsys.readouterr().err.splitlines()
                    if line.startswith("problem: ")]
        stores[case] = store
        assert (code, len(problems)) == ((1, 1) if stray else (0, 0)), problems
    assert problems[0].endswith("gamma submission: its name cleans to 'gamma_submission', "
                                "which the folder 'gamma_submission' has; not imported: rename "
                                "the folder so that its name differs in letters, digits, '.', "
                                "'_' or '-'")
    runs = query.runs_frame(open_store(stores["beside"]))
    assert sorted(runs[runs.algorithm.str.startswith("gamma")].algorithm) == \
        ["gamma_submission"] * 2
    out = io.StringIO()
    scores = {}
    for case, store in stores.items():
        with contextlib.redirect_stdout(out):
            assert main(["score", "--store", str(store), "--json"]) == 0
        scores[case] = json.loads(out.getvalue())
        out.truncate(0), out.seek(0)
    assert scores["beside"]["scores"] == scores["alone"]["scores"]
    assert set(scores["beside"]["scores"]) == {"alpha", "alpha_x", "alpha y", "beta",
                                               "gamma_submission"}


# Eval logs read together (read_evals_many: logs with one header parsed as one CSV) must give
# exactly what each gives read alone, the errors included: type inference over a group, values
# that parse otherwise in a group, a bad log among good ones, clocks that start again per log.
GROUPED = {
    "integers": "global_step,score,validation/accuracy\n1,10,0\n2,20,1\n",
    "decimals": "global_step,score,validation/accuracy\n1,10.5,0.25\n2,20.25,0.5\n",
    "steps as decimals": "global_step,score,validation/accuracy\n1.0,1.5,0.1\n3.0,2.5,0.2\n",
    "booleans": "global_step,score,validation/accuracy\n1,1.0,true\n2,2.0,false\n",
    "null tokens": "global_step,score,validation/accuracy\n1,1.0,NaN\n2,2.0,NA\n3,3.0,\n",
    "infinities": "global_step,score,validation/accuracy\n1,1.0,inf\n2,2.0,-inf\n",
    "empty lines, no final newline": "global_step,score,validation/accuracy\n\n1,1.0,0.1\n\n"
                                     "2,2.0,0.2",
    "header only": "global_step,score,validation/accuracy\n",
    "long integer": "global_step,score,validation/accuracy\n1,1.0,12345678901234567\n",
    "long negative integer first": "validation/accuracy,global_step,score\n"
                                   "-12345678901234567,1,1.0\n",
    "long fractions": "global_step,score,validation/accuracy\n1,1.0,0.12345678901234567\n"
                      "2,12345678901234567.5,0.5\n",
    "quoted line break": 'global_step,score,validation/accuracy\n1,1.0,"0.\n5"\n',
    "carriage returns": "global_step,score,validation/accuracy\r\n1,1.0,0.5\r\n",
    "byte-order mark": "\ufeffglobal_step,score,validation/accuracy\n1,1.0,0.5\n",
    "decreasing step": "global_step,score,validation/accuracy\n5,1.0,0.1\n2,3.0,0.2\n",
    "too many cells": "global_step,score,validation/accuracy\n1,2.0,0.1,7\n",
    "non-numeric": "global_step,score,validation/accuracy\n1,2.0,fast\n",
    "empty time": "global_step,score,validation/accuracy\n1,,0.1\n",
    "not UTF-8": "global_step,score,validation/accuracy\n1,2.0,\udcff\n",
    "same names twice": "global_step,score,score\n1,2.0,3.0\n",
    "empty file": "",
}


# The logs of GROUPED that parse in a group (the others, one of which fails, are read alone).
GROUPABLE = ["integers", "decimals", "steps as decimals", "null tokens", "infinities",
             "empty lines, no final newline", "header only", "long fractions"]
# Logs that might parse otherwise in a group: always read alone.
ALONE = ["long integer", "long negative integer first", "quoted line break", "carriage returns",
         "byte-order mark"]


@pytest.mark.parametrize("names", [GROUPABLE, GROUPABLE[::-1], ["integers", "booleans"],
                                   GROUPABLE + ALONE, list(GROUPED),
                                   ["decreasing step"] + GROUPABLE,
                                   ["non-numeric"] + GROUPABLE])
def test_logs_read_together_read_as_each_alone(tmp_path, monkeypatch, names):
    from workbench.importers import algoperf_logs as algoperf

    paths = []
    for i, name in enumerate(names):
        path = tmp_path / f"{i}.csv"
        path.write_bytes(GROUPED[name].encode("utf-8", "surrogateescape"))
        paths.append(path)
    alone_read = []
    read_evals = algoperf.read_evals
    monkeypatch.setattr(algoperf, "read_evals", lambda p: alone_read.append(p) or read_evals(p))
    together = algoperf.read_evals_many(paths)
    if names in (GROUPABLE, GROUPABLE[::-1], ["integers", "booleans"], GROUPABLE + ALONE):
        assert alone_read == [p for n, p in zip(names, paths) if n in ALONE]  # the others: one CSV
    for name, path in zip(names, paths):
        try:
            alone = read_evals(path)
        except ValueError as e:
            assert isinstance(together[path], ValueError) and str(together[path]) == str(e), name
            continue
        assert repr(alone.to_pydict()) == repr(together[path].to_pydict()), name  # NaN too
        assert alone.schema.equals(together[path].schema, check_metadata=True), name
    if "integers" in names:
        assert together[paths[names.index("integers")]]["eval_index"].to_pylist() == [0, 1]
