"""The Slurm backend (runners/launch/slurm_backend.py): its sbatch parameters and flag checks (fast),
then, through a real single-node Slurm (tests/slurm_cluster.py, started once per session):
a study's trials as one job array in launch order, each run once, with the same eval rows as the
local pool; a job cancelled mid-run is `interrupted` and `--resume` completes it; a job sent
submitit's stop signal is requeued and resumes from its checkpoint."""
from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pandas as pd
import pytest

from runners.cli import main
from runners.launch.study import run_study
from runners.launch.processes import LaunchOptions, SlurmOptions
from runners.launch.slurm_backend import (QUEUED_STATES, SIGNAL_DELAY_S, SLURM_SIGNAL,
                                          parse_slurm_param, registered_jobs, sbatch_parameters,
                                          squeue_states, time_limit_minutes)
from workbench import query
from workbench import records as R
from workbench.spec import StudySpec
from workbench.store import open_store

from locations import REPO
from signals import terminal_signals

# Columns that measure time differ between any two runs; every other column must be identical.
TIME_COLUMNS = ("train_seconds", "eval_seconds", "wall_seconds", "steps_per_second")
MACHINE = tuple(c for c in R.MACHINE_COLUMNS if c not in TIME_COLUMNS)  # may be null


# --- fast: the sbatch parameters and the flags ------------------------------------------------
def test_sbatch_parameters_of_a_launch():
    options = LaunchOptions(backend="slurm", nproc_per_node=2, gpus_per_trial=1.0,
                            slurm=SlurmOptions(partition="gpu", setup=("module load cuda",),
                                               array_parallelism=3,
                                               params=(("account", "proj1"),)))
    params = sbatch_parameters(options, watchdog_s=241.0, threads=4, name="pacebench-s")
    # 241 s watchdog + 120 s start-up margin = 361 s: 7 whole minutes, rounded up
    assert params["time"] == time_limit_minutes(241.0) == 7
    assert time_limit_minutes(0.0) == 2 and time_limit_minutes(120.0) == 4
    assert params["cpus_per_task"] == 8 and params["gpus_per_node"] == 1
    assert params["partition"] == "gpu"
    assert params["setup"] == [f"export SUBMITIT_PREEMPT_SIGNAL={SLURM_SIGNAL}", "module load cuda"]
    assert params["array_parallelism"] == 3
    assert params["additional_parameters"] == {"account": "proj1",
                                               "signal": f"{SLURM_SIGNAL}@{SIGNAL_DELAY_S}"}
    # as submitit writes them into the job array's script
    from submitit.slurm.slurm import _make_sbatch_string

    script = _make_sbatch_string(command="python -m x", folder="/tmp/f/%j", map_count=5,
                                 **params).splitlines()
    for line in ("#SBATCH --time=7", "#SBATCH --cpus-per-task=8", "#SBATCH --gpus-per-node=1",
                 "#SBATCH --partition=gpu", "#SBATCH --account=proj1", "#SBATCH --array=0-4%3",
                 f"#SBATCH --signal={SLURM_SIGNAL}@{SIGNAL_DELAY_S}", "module load cuda"):
        assert line in script, (line, script)
    plain = sbatch_parameters(LaunchOptions(backend="slurm"), 60.0, 1)
    assert "gpus_per_node" not in plain and "partition" not in plain
    assert plain["additional_parameters"] == {"signal": f"{SLURM_SIGNAL}@{SIGNAL_DELAY_S}"}


@pytest.mark.parametrize("item, says", [
    ("account", "give KEY=VALUE"),
    ("Account=x", "give KEY=VALUE"),
    ("time=10", "set by Pacebench itself"),
    ("array=0-3", "set by Pacebench itself"),
    ("mail-user=a b", "is not valid"),
    ("comment=x\n#SBATCH --time=999", "is not valid"),
])
def test_a_bad_slurm_param_is_refused(item, says):
    with pytest.raises(ValueError, match=says):
        parse_slurm_param(item)
    assert parse_slurm_param("qos=high") == ("qos", "high")
    assert parse_slurm_param("mem=16G") == ("mem", "16G")


@pytest.mark.parametrize("extra, says", [
    (["--slurm-param", "time=5"], "--slurm-param time: set by Pacebench itself"),
    (["--slurm-setup", "module load x\nrm -rf /"], "--slurm-setup"),
    (["--slurm-array-parallelism", "0"], "--slurm-array-parallelism 0: must be an integer >= 1"),
    (["--gpus-per-trial", "0.5"], "Slurm gives whole GPUs"),
    (["--slurm-partition", "a;b"], "not a partition name"),
])
def test_bad_slurm_flags_are_one_line_errors_before_anything_runs(tmp_path, capsys, extra, says):
    store = tmp_path / "s"
    argv = ["study", "--workloads", "synthetic", "--algorithms", "adamw", "--trials", "1",
            "--store", str(store), "--backend", "slurm", *extra]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and says in err, err
    assert not (store / "runs").exists()


def test_no_slurm_controller_is_a_one_line_error_before_any_run(tmp_path, capsys, monkeypatch):
    (tmp_path / "slurm.conf").write_text("")  # names no controller (sinfo fails at once)
    monkeypatch.setenv("SLURM_CONF", str(tmp_path / "slurm.conf"))
    store = tmp_path / "s"
    assert main(["study", "--workloads", "synthetic", "--algorithms", "adamw", "--store",
                 str(store), "--backend", "slurm"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "no Slurm controller answers here" in err, err
    assert not (store / "runs").exists()


def test_slurm_flags_go_with_the_slurm_backend(tmp_path, capsys):
    assert main(["study", "--workloads", "synthetic", "--algorithms", "adamw", "--store",
                 str(tmp_path / "s"), "--detach"]) == 2
    assert "--detach goes with --backend slurm" in capsys.readouterr().err


def test_slurm_job_id_of_a_process():
    assert R.slurm_job_id({"SLURM_JOB_ID": "17"}) == "17"
    assert R.slurm_job_id({"SLURM_JOB_ID": "18", "SLURM_ARRAY_JOB_ID": "12",
                           "SLURM_ARRAY_TASK_ID": "3"}) == "12_3"
    assert R.slurm_job_id({}) is None and R.slurm_job_id({"SLURM_JOB_ID": "1;x"}) is None


def test_hostile_lines_of_the_jobs_file_are_skipped(tmp_path):
    folder = tmp_path / R.SLURM_DIR
    folder.mkdir()
    good = {"trial_key": "abc123", "study_name": "s", "job_id": "7_1"}
    lines = [json.dumps(good), "{not json", "[]", json.dumps({**good, "job_id": "7; rm -rf /"}),
             json.dumps({**good, "trial_key": "../x"}), json.dumps({**good, "job_id": 7}),
             json.dumps({**good, "trial_key": "def456", "study_name": "other"})]
    (folder / R.SLURM_JOBS_FILE).write_text("\n".join(lines) + "\n")
    assert registered_jobs(tmp_path, "s") == {"abc123": "7_1"}
    assert registered_jobs(tmp_path) == {"abc123": "7_1", "def456": "7_1"}
    assert registered_jobs(tmp_path / "missing", "s") == {}


# --- through the real Slurm --------------------------------------------------------------------
def _wait(what: str, ready, timeout_s: float = 120.0, every_s: float = 0.2):
    deadline = time.monotonic() + timeout_s
    while not (found := ready()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(every_s)
    return found


def eval_rows(store) -> pd.DataFrame:
    """Every eval row keyed by trial (run ids differ between stores), in a fixed order."""
    runs, evals = query.runs_frame(store), query.evals_frame(store)
    rows = evals.merge(runs[["run_id", "trial_key", "status"]], on="run_id").drop(columns="run_id")
    return rows.sort_values(["trial_key", "eval_index"]).reset_index(drop=True)


@pytest.mark.slurm
@pytest.mark.slow
def test_a_study_on_slurm_runs_each_trial_once_in_launch_order_as_the_local_pool_does(
        tmp_path, slurm_cluster):
    # 2 workloads x 2 algorithms x 2 trials: launch order interleaves all four pairs (8 jobs
    # on the 2-CPU node; 4 trials each, 16 jobs, doubled the test's time and checked no more)
    spec = StudySpec(workloads=("synthetic", "digits_mlp"), algorithms=("adamw", "sgd_nesterov"),
                     trials=2, max_steps=10, name="same")
    n = 2 * 2 * 2
    local = open_store(tmp_path / "local", create=True)
    on_slurm = open_store(tmp_path / "slurm", create=True)
    a = run_study(spec, local, workers=2, progress=False)
    b = run_study(spec, on_slurm, workers=2, progress=False,
                  options=LaunchOptions(backend="slurm"))  # the store probe job runs first
    assert (a.succeeded, a.failed, b.succeeded, b.failed) == (n, [], n, [])
    docs = sorted(on_slurm.documents(study_name="same"), key=lambda d: d["launch_position"])
    assert len(docs) == n and len({d["trial_key"] for d in docs}) == n  # each trial once
    # one job array, its tasks in the interleaved launch order
    arrays = {d["slurm_job_id"].split("_")[0] for d in docs}
    assert len(arrays) == 1, arrays
    assert [int(d["slurm_job_id"].split("_")[1]) for d in docs] == list(range(n))
    assert registered_jobs(on_slurm.root, "same") == {d["trial_key"]: d["slurm_job_id"]
                                                      for d in docs}
    assert all(d.get("slurm_job_id") is None for d in local.documents())
    rows_local, rows_slurm = eval_rows(local), eval_rows(on_slurm)
    assert len(rows_local) >= n * 2 and rows_local.trial_key.nunique() == n
    assert list(rows_local.columns) == list(rows_slurm.columns)
    for column in rows_local.columns:
        if column in TIME_COLUMNS:
            assert rows_slurm[column].notna().all()
            continue
        if column in MACHINE:
            continue
        pd.testing.assert_series_equal(rows_local[column], rows_slurm[column], check_exact=True,
                                       obj=f"eval column {column}")
    # --resume: nothing left to run, nothing submitted
    again = run_study(spec, on_slurm, workers=2, resume=True, progress=False,
                      options=LaunchOptions(backend="slurm"))
    assert (again.skipped, again.succeeded) == (n, 0)
    assert len(registered_jobs(on_slurm.root)) == n


# A run that must still be running when the test acts on it, however loaded the machine: a
# plug-in algorithm (AdamW) that, at its first eval from step BLOCK_AT on, writes `blocked` and
# waits, off the training clock, until the test creates `gate` (a step count alone raced: 150
# synthetic steps ended before CI's scancel, 1,000 mnist1d_cnn steps outlived a loaded test's
# timeout). By then the run has an eval row and, checkpointing every eval, a checkpoint of a
# step > 0. SIGTERM (scancel, submitit's stop) ends the wait as it ends any step.
BLOCK_AT, WAIT_LIMIT_S = 10, 240.0
GATED = """\
import time
from pathlib import Path

from runners.algorithms.adamw import AdamW

GATE, BLOCKED = Path({gate!r}), Path({blocked!r})


class Gated(AdamW):
    search_space = {{"learning_rate": {{"feasible_points": [0.002]}}}}

    def observe_eval(self, row):
        if row["step"] < {block_at} or GATE.exists():
            return
        BLOCKED.touch()
        deadline = time.monotonic() + {limit}
        while not GATE.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
"""


def gated_algorithm(folder: Path) -> tuple[str, Path, Path]:
    """(the --algorithms item of a Gated plug-in in `folder`, its gate file, its blocked file)."""
    gate, blocked = folder / "gate", folder / "blocked"
    plugin = folder / "gated.py"
    plugin.write_text(GATED.format(gate=str(gate), blocked=str(blocked), block_at=BLOCK_AT,
                                   limit=WAIT_LIMIT_S))
    return f"gated={plugin}:Gated", gate, blocked


@pytest.mark.slurm
@pytest.mark.slow
def test_a_cancelled_job_is_interrupted_and_resume_completes_it(tmp_path, slurm_cluster,
                                                                 capsys):
    store_dir = tmp_path / "s"
    algorithm, gate, blocked = gated_algorithm(tmp_path)
    argv = ["study", "--workloads", "synthetic", "--algorithms", algorithm, "--trials", "1",
            "--max-steps", "30", "--no-stop-on-target", "--name", "cancel", "--store",
            str(store_dir), "--backend", "slurm", "--slurm-store-check", "off", "--quiet"]
    assert main([*argv, "--detach"]) == 0
    assert "1 submitted and left to the cluster" in capsys.readouterr().out
    store = open_store(store_dir)
    (key, job), = registered_jobs(store_dir, "cancel").items()
    # a second launch while Slurm still has the job submits nothing
    assert main([*argv, "--resume", "--detach"]) == 0
    assert len(registered_jobs(store_dir, "cancel")) == 1
    _wait("the run to wait at its gate", blocked.exists, 180)
    assert store.latest_eval(key) is not None
    subprocess.run(["scancel", job], check=True)
    _wait("the job to end", lambda: squeue_states([job]).get(job) not in QUEUED_STATES)
    _wait("its run to read interrupted",
          lambda: [d["status"] for d in store.attempts(key)] == ["interrupted"], 30)
    capsys.readouterr()
    assert main([*argv, "--resume", "--status"]) == 0
    assert "1 trials planned: 1 interrupted" in capsys.readouterr().out
    gate.touch()  # the new attempt runs through
    assert main([*argv, "--resume"]) == 0
    statuses = [d["status"] for d in open_store(store_dir).attempts(key)]
    assert statuses == ["interrupted", "complete"], statuses
    assert main([*argv, "--resume", "--status"]) == 0
    assert "1 trials planned: 1 finished" in capsys.readouterr().out


@pytest.mark.slurm
@pytest.mark.slow
def test_the_stop_signal_requeues_a_job_which_resumes_from_its_checkpoint(tmp_path,
                                                                          slurm_cluster):
    store_dir = tmp_path / "s"
    algorithm, gate, blocked = gated_algorithm(tmp_path)
    # a checkpoint every eval (every 60 microseconds)
    assert main(["study", "--workloads", "synthetic", "--algorithms", algorithm, "--trials", "1",
                 "--max-steps", "30", "--no-stop-on-target", "--name", "preempt", "--store",
                 str(store_dir), "--backend", "slurm", "--slurm-store-check", "off",
                 "--checkpoint-every", "1e-6", "--quiet", "--detach"]) == 0
    store = open_store(store_dir)
    (key, job), = registered_jobs(store_dir, "preempt").items()
    _wait("the run to wait at its gate", blocked.exists, 180)
    assert store.checkpoint_path(key).exists()
    # what Slurm sends SIGNAL_DELAY_S before the time limit, or on preemption
    subprocess.run(["scancel", f"--signal={SLURM_SIGNAL}", job], check=True)
    _wait("the first attempt to end",  # (a second may have started by then)
          lambda: [d["status"] for d in store.attempts(key, effective=True)][:1] ==
          ["interrupted"], 120)
    # Requeued: the job is back in the queue, pending (Slurm 22.05 here holds a requeued job
    # about 2 minutes before it may start again) or, where Slurm holds it for less, already
    # running its second attempt (in the store), which waits at the gate: waiting for PENDING
    # alone raced with that (a state seen only between two polls)
    def requeued() -> str | None:
        state = squeue_states([job]).get(job)
        if state == "PENDING":
            return state
        return "RUNNING" if state in QUEUED_STATES and len(store.attempts(key)) > 1 else None

    state = _wait("the job to be requeued", requeued, 60)
    gate.touch()  # the requeued attempt runs through
    if state == "PENDING":
        # Slurm revokes the stopped job's credential at the requeue, to the second: a restart
        # within that same second is killed as "non-startable: Job credential revoked" (seen
        # once in 10 runs here), so the clock passes a second before the start moves to now;
        # a job that started meanwhile refuses the update, which is then moot
        time.sleep(2.0)
        subprocess.run(["scontrol", "update", f"JobId={job}", "StartTime=now"], check=False)
    _wait("the requeued job to finish",
          lambda: any(d["status"] == "complete" for d in store.attempts(key)), 180, 0.5)
    first, second = store.attempts(key, effective=True)
    assert first["status"] == "interrupted" and second["status"] == "complete"
    assert second["preemptions"] == 1 and second["resumed_from"] == first["run_id"]
    # it waited at step BLOCK_AT with the checkpoint of the eval before
    assert 0 < second["resumed_at_step"] < BLOCK_AT and second["steps"] == 30
    assert first["slurm_job_id"] == second["slurm_job_id"] == job  # the same job, requeued


@pytest.mark.slurm
@pytest.mark.slow
def test_ctrl_c_cancels_the_whole_array(tmp_path, slurm_cluster):
    import os
    import signal
    import sys

    store_dir = tmp_path / "s"
    root = REPO
    launcher = subprocess.Popen(
        [sys.executable, "-m", "runners.cli", "study", "--workloads", "synthetic",
         "--algorithms", "adamw", "--trials", "3", "--max-steps", "500000", "--no-stop-on-target",
         "--name", "ctrlc", "--store", str(store_dir), "--backend", "slurm",
         "--slurm-store-check", "off", "--quiet"],
        cwd=root, env={**os.environ, "PYTHONPATH": str(root)}, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True, preexec_fn=terminal_signals)
    try:
        jobs = _wait("3 registered jobs", lambda: len(registered_jobs(store_dir, "ctrlc")) == 3
                     and registered_jobs(store_dir, "ctrlc"), 120)
        store = open_store(store_dir)
        # 2 running (the node has 2 CPUs), 1 pending; Ctrl-C once a run is writing (500,000 steps:
        # no run may end before the signal, however fast the machine)
        _wait("a run's first eval", lambda: any(store.latest_eval(k) for k in jobs), 120)
        launcher.send_signal(signal.SIGINT)
        out, _ = launcher.communicate(timeout=60)
    finally:
        if launcher.poll() is None:
            launcher.kill()
    assert launcher.returncode != 0, out
    states = squeue_states(jobs.values())
    assert not any(s in QUEUED_STATES for s in states.values()), states
    statuses = [d["status"] for d in store.documents(effective=True, study_name="ctrlc")]
    assert statuses and set(statuses) == {"interrupted"}, statuses
