"""AlgoPerf log trees -> store: a hand-made tree in AlgoPerf's layout, and the real v0.5 logs."""
from __future__ import annotations

import json
import math
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from algoperf_trees import PUBLISHED_V05_EXTERNAL
from runners.cli import main
from workbench import query, records as R, scoring
from workbench.importers.algoperf import import_algoperf, load_targets, trial_logs
from workbench.store import open_store

TARGETS = {
    "benchmark_version": "0.5",
    "base_workloads": ["wa", "wb"],
    "held_out_workloads": ["wa_tanh"],
    "workloads": {
        "wa": {"target_metric_name": "accuracy", "validation_target_value": 0.8, "step_hint": 100},
        "wa_tanh": {"target_metric_name": "accuracy", "validation_target_value": 0.7,
                    "step_hint": 100},
        "wb": {"target_metric_name": "loss", "validation_target_value": 0.5, "step_hint": 50},
    },
}
HEADER = ("accumulated_eval_time,accumulated_logging_time,accumulated_submission_time,global_step,"
          "preemption_count,score,test/accuracy,total_duration,train/loss,validation/accuracy")
# (step, score, validation accuracy) rows of wa trials; "" = an empty cell (a diverged eval).
ROWS = {
    "alpha/study_0/wa_jax/trial_1": [(1, 10.0, 0.1), (50, 60.0, ""), (100, 110.0, 0.85)],
    "alpha/study_0/wa_jax/trial_2": [(1, 12.0, 0.2), (40, 150.0, 0.81)],
    "alpha/study_0/wa_jax-2024-03-01-10-00-00/trial_2": [(1, 9.0, 0.3)],  # merged, renumbered
    "beta/study_0/wa_pytorch/trial_1": [(1, 20.0, 0.5), (30, 40.0, 0.9)],
}


def _csv(rows) -> str:
    lines = [HEADER]
    for step, score, acc in rows:
        lines.append(f"{score / 2},0.0,{score},{step},0,{score},0.5,{score * 1.5},1.0,{acc}")
    return "\n".join(lines) + "\n"


def _meta(seed: int) -> dict:
    return {"workload.max_allowed_runtime_sec": 1000, "workload.eval_period_time_sec": 10,
            "workload.step_hint": 100, "workload.target_metric_name": "accuracy",
            "workload.validation_target_value": 0.123,  # the targets file wins over this
            "workload.test_target_value": 0.75, "gpu_model_name": "Tesla V100-SXM2-16GB",
            "gpu_count": 8, "rng_seed": seed}


def write_tree(root: Path) -> Path:
    """A small AlgoPerf log tree under root/external_tuning, with the awkward cases."""
    logs = root / "external_tuning"
    for i, (trial, rows) in enumerate(ROWS.items()):
        path = logs / trial
        path.mkdir(parents=True)
        (path / "eval_measurements.csv").write_text(_csv(rows))
        (path / "meta_data_0.json").write_text(json.dumps(_meta(100 + i)))
        (path / "hparams.json").write_text(json.dumps({"learning_rate": 0.001 * (i + 1)}))
    bad = logs / "alpha/study_0/wb_jax/trial_1"  # malformed CSV: a row with too many cells
    bad.mkdir(parents=True)
    (bad / "eval_measurements.csv").write_text("global_step,score,validation/loss\n1,2.0,0.9\n"
                                               "2,3.0,0.8,7\n")
    (logs / "alpha/study_0/wa_tanh_jax").mkdir()                # no trial_* folders: ignored
    (logs / "alpha/study_0/trial_1").mkdir()                     # stray trial: ignored
    (logs / "alpha/study_0/trial_1/eval_measurements.csv").write_text(_csv([(1, 1.0, 0.99)]))
    (logs / "alpha/study_0/mnist_jax/trial_1").mkdir(parents=True)  # not in the targets file
    (logs / "alpha/study_0/mnist_jax/trial_1/eval_measurements.csv").write_text(
        _csv([(1, 1.0, 0.99)]))
    (logs / "beta/study_1/wa_pytorch/trial_1").mkdir(parents=True)  # no eval file: nothing to do
    (logs / "beta/study_1/wa_pytorch/trial_1/hparams.json").write_text("{}")
    targets = root / "targets.json"
    targets.write_text(json.dumps(TARGETS))
    return targets


@pytest.fixture()
def imported(tmp_path):
    targets = write_tree(tmp_path)
    store = open_store(tmp_path / "store", create=True)
    report = import_algoperf(tmp_path / "external_tuning", store, targets)
    return tmp_path, targets, store, report


def test_batches_in_worker_processes_import_what_one_process_imports(tmp_path, monkeypatch):
    """Many batches go to worker processes (one per core, at most `workers`): the same runs,
    rows and problems as one process importing them all."""
    from workbench.importers import algoperf

    targets = write_tree(tmp_path)
    monkeypatch.setattr(algoperf, "BATCH", 2)  # 3 batches
    reports, runs, evals = [], [], []
    for workers in (1, 2):
        store = open_store(tmp_path / f"store{workers}", create=True)
        reports.append(import_algoperf(tmp_path / "external_tuning", store, targets,
                                       workers=workers))
        runs.append(query.runs_frame(store))
        evals.append(query.evals_frame(store))
    assert [(r.imported, r.without_evals, r.problems) for r in reports] == \
        [(4, 1, reports[0].problems)] * 2 and len(reports[0].problems) == 1
    assert runs[0].equals(runs[1]) and evals[0].equals(evals[1])


def test_trial_logs_merge_timestamped_folders(tmp_path):
    write_tree(tmp_path)
    logs = list(trial_logs(tmp_path / "external_tuning" / "alpha"))
    wa = [(t.experiment, t.path.name, t.trial) for t in logs if t.workload == "wa"]
    assert wa == [("wa_jax", "trial_1", 1), ("wa_jax", "trial_2", 2),
                  ("wa_jax-2024-03-01-10-00-00", "trial_2", 3)]
    assert {t.workload for t in logs} == {"wa", "wb", "mnist"}  # wa_tanh_jax has no trials


def test_import_report(imported):
    _, _, _, report = imported
    assert report.imported == 4 and report.existing == 0 and report.without_evals == 1
    assert report.submissions == ["alpha", "beta"]
    assert len(report.problems) == 1
    problem = report.problems[0]
    assert "wb_jax/trial_1/eval_measurements.csv" in problem and "not a readable CSV" in problem
    ignored = "\n".join(report.ignored)
    assert "'mnist' is not in the targets file" in ignored
    assert "trial folder directly under a study" in ignored and "no trial_* folders" in ignored
    assert report.summary().startswith("imported 4 runs from 2 submissions")


def test_runs_documents_and_targets(imported):
    _, _, store, _ = imported
    runs = query.runs_frame(store).set_index("run_id")
    assert len(runs) == 4
    run = runs.loc["algoperf-v0.5-external--alpha--study_0--wa_jax--trial_1"]
    assert (run.algorithm, run.workload, run.base_workload, run.variant) == \
        ("alpha", "wa", "wa", "base")
    assert (run.study_name, run.ruleset, run.source, run.status) == \
        ("algoperf-v0.5-external", "external", "algoperf", "complete")
    assert (run.study, run.trial, run.seed, run.rng_seed) == (0, 1, 0, 100)
    assert (run.target_metric, run.target_direction, run.target_validation) == \
        ("accuracy", "max", 0.8)  # from the targets file, not the meta data
    assert (run.target_test, run.budget_seconds, run.hardware) == \
        (0.75, 1000.0, "8x Tesla V100-SXM2-16GB")
    assert run.hparams == {"learning_rate": 0.001}
    assert (run.steps, run.train_seconds, run.wall_seconds) == (100, 110.0, 165.0)
    # The empty cell at eval 1 never meets the target; eval 2 does.
    assert run.reached_target and run.eval_index_to_target == 2 and run.time_to_target == 110.0
    doc = store.run_doc("algoperf-v0.5-external--alpha--study_0--wa_jax--trial_1")
    assert doc["step_hint"] == 100 and doc["framework"] == "jax"
    merged = runs.loc["algoperf-v0.5-external--alpha--study_0--wa_jax-2024-03-01-10-00-00--trial_2"]
    assert merged.trial == 3 and not merged.reached_target
    beta = runs.loc["algoperf-v0.5-external--beta--study_0--wa_pytorch--trial_1"]
    assert beta.time_to_target == 40.0 and beta.eval_index_to_target == 1


def test_eval_rows(imported):
    _, _, store, _ = imported
    evals = query.evals_frame(store, ["algoperf-v0.5-external--alpha--study_0--wa_jax--trial_1"])
    assert list(evals.columns[:7]) == list(R.EVAL_COLUMNS)
    assert evals["eval_index"].tolist() == [0, 1, 2]
    assert evals["step"].tolist() == [1, 50, 100]
    assert evals["train_seconds"].tolist() == [10.0, 60.0, 110.0]   # score
    assert evals["eval_seconds"].tolist() == [5.0, 30.0, 55.0]      # accumulated_eval_time
    assert evals["wall_seconds"].tolist() == [15.0, 90.0, 165.0]    # total_duration
    assert evals["examples"].isna().all()
    acc = evals["validation/accuracy"].to_numpy()
    assert acc[0] == 0.1 and np.isnan(acc[1]) and acc[2] == 0.85
    assert {"test/accuracy", "train/loss"} <= set(evals.columns)


def test_scoring_config_recorded(imported):
    _, _, store, _ = imported
    config = scoring.ScoringConfig.from_dict(store.scoring_config())
    assert config.base_workloads == ("wa", "wb") and config.held_out == {"wa_tanh": "wa"}
    assert config.apply_held_out and config.benchmark_version == "0.5"
    assert config.budgets == {"wa": 1000.0} and config.self_tuning_budget_factor == 3.0


def test_import_twice_changes_nothing_and_fixed_files_import(imported):
    root, targets, store, _ = imported
    before = {p: p.stat().st_mtime_ns for p in store.runs_dir.rglob("*")}
    again = import_algoperf(root / "external_tuning", store, targets)
    assert (again.imported, again.existing, len(again.problems)) == (0, 4, 1)
    assert {p: p.stat().st_mtime_ns for p in store.runs_dir.rglob("*")} == before
    bad = root / "external_tuning/alpha/study_0/wb_jax/trial_1/eval_measurements.csv"
    bad.write_text("global_step,score,validation/loss\n1,2.0,0.9\n2,3.0,0.4\n")
    fixed = import_algoperf(root / "external_tuning", store, targets)
    assert (fixed.imported, fixed.existing, fixed.problems) == (1, 4, [])
    wb = query.runs_frame(store).set_index("workload").loc["wb"]
    assert (wb.target_direction, wb.time_to_target, wb.eval_index_to_target) == ("min", 3.0, 1)


def test_targets_file_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="workload_targets"):
        load_targets(tmp_path / "nope.json")
    (tmp_path / "t.json").write_text(json.dumps({"benchmark_version": "0.5"}))
    with pytest.raises(ValueError, match="lacks keys"):
        load_targets(tmp_path / "t.json")


def test_cli_import_and_score(tmp_path, capsys):
    targets = write_tree(tmp_path)
    store = str(tmp_path / "store")
    code = main(["import-algoperf", str(tmp_path / "external_tuning"), "--store", store,
                 "--targets", str(targets)])
    out, err = capsys.readouterr()
    assert code == 1 and "imported 4 runs" in out and "not a readable CSV" in err
    assert main(["score", "--store", store, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    # alpha and beta both lack wa_tanh results and wb: the held-out rule leaves nothing finite.
    assert result["scores"] == {"alpha": 0.0, "beta": 0.0}
    assert result["time_to_target"]["alpha"]["wa"] == 150.0  # eval 1 beats a faster eval 2
    assert result["time_to_target"]["beta"]["wa"] == 40.0


# The targets file as AlgoPerf writes it since v0.6: 9 scored workloads (finewebedu_lm among
# them), target_metric_goal per workload, no held-out workloads; here cut to two of them.
TARGETS_V06 = {
    "benchmark_version": "0.6", "base_workloads": ["wa", "finewebedu_lm"],
    "held_out_workloads": [],
    "workloads": {
        "wa": {"target_metric_name": "accuracy", "target_metric_goal": "maximize",
               "validation_target_value": 0.8, "step_hint": 100},
        "finewebedu_lm": {"target_metric_name": "ppl", "target_metric_goal": "minimize",
                          "validation_target_value": 22.2995, "step_hint": 72000},
    },
}


def write_self_tuning_tree(root: Path) -> Path:
    """Self-tuning logs (one trial per study, no hparams.json) of two submissions on `wa`."""
    times = {"fast": (40.0, 35.0, 45.0), "slow": (80.0, 90.0, 70.0)}
    for submission, per_study in times.items():
        for study, t in enumerate(per_study):
            path = root / "self_tuning" / submission / f"study_{study}" / "wa_pytorch" / "trial_1"
            path.mkdir(parents=True)
            (path / "eval_measurements.csv").write_text(_csv([(1, 1.0, 0.1), (50, t, 0.85)]))
            (path / "meta_data_0.json").write_text(json.dumps(_meta(study)))
    targets = root / "targets_v06.json"
    targets.write_text(json.dumps(TARGETS_V06))
    return targets


def test_a_v06_targets_file_and_self_tuning_logs_import_and_score(tmp_path, capsys):
    targets = write_self_tuning_tree(tmp_path)
    store = str(tmp_path / "store")
    assert main(["import-algoperf", str(tmp_path / "self_tuning"), "--store", store,
                 "--targets", str(targets)]) == 0
    out = capsys.readouterr().out
    assert "imported 6 runs from 2 submissions" in out
    assert "not scored: finewebedu_lm" in out  # reported, not a failure, not a miss for all
    runs = query.runs_frame(open_store(store))
    assert set(runs.ruleset) == {"self"} and set(runs.target_direction) == {"max"}
    config = scoring.ScoringConfig.from_dict(open_store(store).scoring_config())
    assert config.base_workloads == ("wa",) and not config.apply_held_out
    assert config.self_tuning_budget_factor == 1.5 and config.benchmark_version == "0.6"
    assert main(["score", "--store", store, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    # slow takes 2x: its profile is 1 from tau = 2 to 4, an area of 2 / 3 (trapezoid rule)
    assert result["scores"] == {"fast": 1.0, "slow": pytest.approx(2 / 3, abs=0.01)}
    assert result["time_to_target"]["fast"]["wa"] == 40.0  # the median of 3 studies' times
    assert result["time_to_target"]["slow"]["wa"] == 80.0
    # a second import of the same tree adds nothing and keeps the scored workloads
    assert main(["import-algoperf", str(tmp_path / "self_tuning"), "--store", store,
                 "--targets", str(targets)]) == 0
    assert "6 already in the store" in capsys.readouterr().out
    assert scoring.ScoringConfig.from_dict(
        open_store(store).scoring_config()).base_workloads == ("wa",)


def test_a_bad_target_goal_is_one_line_naming_the_valid_ones(tmp_path):
    bad = json.loads(json.dumps(TARGETS_V06))
    bad["workloads"]["wa"]["target_metric_goal"] = "up"
    (tmp_path / "t.json").write_text(json.dumps(bad))
    with pytest.raises(ValueError, match="target_metric_goal 'up': valid are minimize, maximize"):
        load_targets(tmp_path / "t.json")


# -- the real AlgoPerf v0.5 external-tuning logs ----------------------------------------------


@pytest.mark.slow
def test_real_v05_logs_reproduce_the_published_leaderboard(algoperf_v05):
    imported, import_s = algoperf_v05, algoperf_v05.seconds
    assert imported.problems == [] and imported.imported == 3700
    assert len(imported.submissions) == 11
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "runners.cli", "score", "--store",
                           str(algoperf_v05.path), "--json"], capture_output=True, text=True)
    score_s = time.perf_counter() - start
    print(f"\nimport {import_s:.1f} s ({imported.summary}); score --json {score_s:.2f} s")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert set(result["scores"]) == set(PUBLISHED_V05_EXTERNAL)
    for name, published in PUBLISHED_V05_EXTERNAL.items():
        assert result["scores"][name] == pytest.approx(published, abs=1e-4), name
    # research/algoperf.md 5.3: Shampoo 27.9 % faster than the baseline, CASPR 24.3 %.
    faster = result["speedups"]["faster_by"]
    assert faster["shampoo_submission"] == pytest.approx(0.279, abs=1e-3)
    assert faster["caspr_adaptive"] == pytest.approx(0.243, abs=1e-3)
    assert math.isclose(result["time_to_target"]["shampoo_submission"]["imagenet_vit"], 33094,
                        abs_tol=1)
    assert len(query.runs_frame(open_store(algoperf_v05.path))) == 3700


@pytest.mark.slow
def test_real_v05_logs_read_together_read_as_each_alone(algoperf_v05):
    """read_evals_many (a batch's logs with one header parsed as one CSV) on every eval log of
    v0.5, 128 at a time as an import reads them: the tables read_evals gives log by log."""
    from workbench.importers.algoperf import read_evals, read_evals_many

    logs = sorted((algoperf_v05.path.parent / "logs").rglob("eval_measurements.csv"))
    assert len(logs) > 3700
    for first in range(0, len(logs), 128):
        together = read_evals_many(logs[first:first + 128])
        for path, rows in together.items():
            alone = read_evals(path)
            assert repr(alone.to_pydict()) == repr(rows.to_pydict()), path
            assert alone.schema.equals(rows.schema, check_metadata=True), path


def test_report_on_a_store_covering_only_some_workloads(imported):
    """The tree imports wa only (wb's log is torn, the held-out wa_tanh has no trials): every
    view still draws, and the missing workloads read as `no runs`."""
    from workbench.report import write_report

    root, _, store, _ = imported
    out = write_report(store.root, root / "report.html")
    text = out.read_text()
    assert "no runs" in text and "Pacebench report" in text
