"""Planning studies, the local process pool and its worker processes, resume, surviving a killed
study, and the `study` / `scale` commands."""
from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from runners.cli import training
from runners.cli import build_parser, main
from runners.launch.study import (StudyChangedError, StudyExistsError, launch_order, plan_study,
                                  run_study)
from runners.launch.processes import LaunchOptions, LocalBackend, describe_exit
from workbench import query
from workbench import records as R
from workbench.spec import StudySpec
from workbench.store import open_store

from locations import REPO


def test_plan_is_the_full_grid_with_distinct_trials():
    spec = StudySpec(workloads=("synthetic", "digits_mlp"), algorithms=("adamw", "sgd_nesterov"),
                     studies=2, trials=3, seeds=(0, 1))
    configs = plan_study(spec)
    assert len(configs) == 2 * 2 * 2 * 3 * 2
    assert len({c.trial_key for c in configs}) == len(configs)
    adamw_study0 = [c for c in configs if c.algorithm == "adamw" and c.study == 0
                    and c.workload == "synthetic" and c.seed == 0]
    assert len({json.dumps(dict(c.hparams), sort_keys=True) for c in adamw_study0}) == 3
    # the same search-space points for every workload, and the plan is reproducible
    again = plan_study(spec)
    assert [c.trial_key for c in again] == [c.trial_key for c in configs]


def test_self_tuning_is_one_default_run_per_study_with_more_budget():
    spec = StudySpec(workloads=("synthetic",), algorithms=("adamw",), ruleset="self", studies=3,
                     trials=5)
    configs = plan_study(spec)
    assert len(configs) == 3
    assert all(c.budget_multiplier == 1.5 and dict(c.hparams) == {} for c in configs)


def test_unknown_workload_fails_before_launching():
    with pytest.raises(KeyError, match="known are"):
        plan_study(StudySpec(workloads=("cifar",), algorithms=("adamw",)))


def test_pool_runs_every_trial_and_resume_runs_nothing_more(tmp_path):
    store = open_store(tmp_path / "s", create=True)
    spec = StudySpec(workloads=("synthetic",), algorithms=("adamw", "sgd_nesterov"), trials=2,
                     max_steps=40, name="t")
    result = run_study(spec, store, workers=2, progress=False)
    assert result.succeeded == 4 and not result.failed
    runs = query.runs_frame(store)
    assert len(runs) == 4 and set(runs.status) <= {"complete", "diverged"}  # a high lr may diverge
    with pytest.raises(StudyExistsError, match="--resume"):
        run_study(spec, store, workers=2, progress=False)
    again = run_study(spec, store, workers=2, resume=True, progress=False)
    assert again.skipped == 4 and again.succeeded == 0
    assert len(query.runs_frame(store)) == 4


def _wait_for_live_eval(store_root, timeout=120.0):
    """Block until some run is running and has at least one eval row flushed."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        for doc_path in (store_root / R.RUNS_DIR).glob(f"*/{R.RUN_DOC}"):
            live = doc_path.parent / R.EVALS_LIVE
            try:
                doc = json.loads(doc_path.read_text())
            except (OSError, json.JSONDecodeError):
                continue
            if doc.get("status") == "running" and live.exists() and live.read_text().count("\n") >= 1:
                return doc["run_id"]
        time.sleep(0.02)
    raise AssertionError("no run produced an eval row in time")


@pytest.mark.slow
def test_sigkill_mid_study_then_resume_completes_each_trial_once(tmp_path):
    root = tmp_path / "store"
    cmd = [sys.executable, "-m", "runners.cli", "study", "--workloads", "digits_mlp",
           "--algorithms", "adamw", "--trials", "4", "--workers", "2", "--max-steps", "400",
           "--name", "chaos", "--store", str(root), "--quiet"]
    parent = subprocess.Popen(cmd)
    killed_run = _wait_for_live_eval(root)
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    store = open_store(root)
    deadline = time.monotonic() + 60
    while "running" in set(query.runs_frame(store).status):  # workers die with their launcher
        assert time.monotonic() < deadline, "workers outlived their launcher"
        time.sleep(0.05)
    runs = query.runs_frame(store)
    assert runs.set_index("run_id").loc[killed_run, "status"] == "interrupted"
    assert len(query.evals_frame(store, [killed_run])) >= 1
    assert "running" not in set(runs.status)

    subprocess.run(cmd + ["--resume"], check=True)
    runs = query.runs_frame(store)
    finished = runs[runs.status.isin(R.DONE_STATUSES)]  # complete, or stalled (a miss)
    assert len(finished) == 4
    assert Counter(finished.trial_key).most_common(1)[0][1] == 1
    assert runs.set_index("run_id").loc[killed_run, "status"] == "interrupted"
    assert len(query.evals_frame(store, [killed_run])) >= 1  # nothing written is lost


# -- worker processes -----------------------------------------------------------------------------
def _report_environment(job: dict) -> int:
    """A worker entry that writes what its process sees, and exits with code 3."""
    Path(job["out"]).write_text(json.dumps({
        "mark": os.environ.get("PACEBENCH_TEST_MARK"), "cwd": os.getcwd(),
        "name": Path("/proc/self/comm").read_text().strip()}))
    print("to the log", flush=True)
    return 3


def _sleep(job: dict) -> int:
    time.sleep(60)
    return 0


def test_a_forked_worker_takes_the_launchers_environment_of_the_moment(tmp_path, monkeypatch):
    backend = LocalBackend(LaunchOptions(), entry=_report_environment)
    assert backend.forked
    for mark in ("one", "two"):  # the second worker comes from the same fork server
        monkeypatch.setenv("PACEBENCH_TEST_MARK", mark)
        monkeypatch.chdir(tmp_path)
        out, log = tmp_path / f"{mark}.json", tmp_path / f"{mark}.log"
        handle = backend.start({"out": str(out)}, log)
        handle.wait()
        assert handle.poll().returncode == 3
        assert json.loads(out.read_text()) == {"mark": mark, "cwd": str(tmp_path),
                                               "name": "pacebench-run"}
        assert log.read_text() == "to the log\n"


def test_a_killed_forked_worker_reads_as_killed(tmp_path):
    handle = LocalBackend(LaunchOptions(), entry=_sleep).start({}, tmp_path / "log")
    assert handle.poll() is None
    handle.kill()
    handle.wait()
    assert describe_exit(handle.poll().returncode) == "killed by signal 9 (SIGKILL)"


def test_both_start_methods_run_a_study(tmp_path):
    spec = StudySpec(workloads=("synthetic",), algorithms=("adamw",), trials=1, max_steps=20,
                     name="m")
    for method in ("spawn", "forkserver"):
        store = open_store(tmp_path / method, create=True)
        result = run_study(spec, store, progress=False,
                           options=LaunchOptions(start_method=method))
        assert result.succeeded == 1, result.summary()
        assert store.index_parts()  # the launch refreshed the run index
    with pytest.raises(ValueError, match="valid are forkserver, spawn"):
        LaunchOptions(start_method="fork").check()


def _spawned(config, store) -> subprocess.CompletedProcess:
    """`python -m runners.launch.worker JOB.json` on `config`, to its end."""
    from runners.launch.processes import worker_command, write_job

    job = write_job({"config": config.to_dict(), "store": str(store.root), "data_dir": None,
                     "hooks": {}, "launch_order": None, "search_space": None})
    try:
        return subprocess.run(worker_command(job, 1), cwd=REPO, capture_output=True, text=True,
                              env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=120)
    finally:
        os.unlink(job)


def test_a_spawned_worker_exits_with_its_runs_code_and_its_last_lines_written(tmp_path):
    """A spawned worker ends by os._exit (no interpreter teardown): its exit code is still
    run_job's, and its last lines (the run's status; a failure's traceback) still come out."""
    from workbench.spec import RunConfig

    store = open_store(tmp_path / "s", create=True)
    done = _spawned(RunConfig(workload="synthetic", algorithm="adamw", max_steps=2), store)
    (doc,) = store.documents()
    assert (doc["status"], done.returncode) == ("complete", 0), done.stdout + done.stderr
    assert done.stdout.splitlines()[-1] == f"{doc['run_id']}: complete", done.stdout
    failed = _spawned(RunConfig(workload="synthetic", algorithm="no_such", max_steps=2), store)
    assert failed.returncode == 1 and sorted(d["status"] for d in store.documents()) == \
        ["complete", "failed"], failed.stderr
    assert failed.stderr.splitlines()[-1].startswith(
        "workbench.errors.UnknownNameError: unknown algorithm 'no_such'"), failed.stderr


# -- the commands -------------------------------------------------------------------------------
def test_the_never_released_old_spellings_are_gone(capsys):
    """`study --prune` (now --early-stop) and `study --kind scaling` (now `pacebench scale`)
    were never released: they are unknown options, not quietly mapped."""
    for old in (["--prune", "lcga"], ["--kind", "scaling"], ["--batch-sizes", "8,16"]):
        with pytest.raises(SystemExit) as exit_:
            build_parser().parse_args(["study", "--workloads", "synthetic", "--algorithms",
                                       "adamw", *old])
        assert exit_.value.code == 2
        assert f"unrecognized arguments: {' '.join(old)}" in capsys.readouterr().err
    args = build_parser().parse_args(["study", "--workloads", "synthetic", "--algorithms",
                                      "adamw", "--early-stop", "lcga"])
    assert args.early_stop == "lcga" and args.func is not training.scale


def test_scale_runs_a_scaling_study(tmp_path, capsys):
    root = tmp_path / "store"
    assert main(["scale", "--workloads", "digits_mlp", "--algorithms", "sgd_nesterov",
                 "--batch-sizes", "16,32", "--trials", "1", "--max-steps", "10",
                 "--noise-every", "0", "--store", str(root), "--quiet"]) == 0
    assert "2 trials planned" in capsys.readouterr().out
    runs = query.runs_frame(open_store(root))
    assert sorted(runs["batch_size"]) == [16, 32] and set(runs["study_name"]) == {"scaling"}
    assert open_store(root).study_summary("scaling")["kind"] == "scaling"
    assert main(["scale", "--workloads", "digits_mlp", "--algorithms", "sgd_nesterov",
                 "--batch-sizes", "16", "--device", "cuda", "--store", str(root)]) == 2
    assert "run on the CPU" in capsys.readouterr().err


def test_a_script_without_a_main_guard_runs_once(tmp_path):
    """multiprocessing would re-run an unguarded script in each forked worker; ours do not."""
    script = tmp_path / "my_study.py"
    script.write_text(
        "import sys\n"
        "from runners.launch.study import run_study\n"
        "from workbench.spec import StudySpec\n"
        "from workbench.store import open_store\n"
        "print('SCRIPT BODY', flush=True)\n"
        "spec = StudySpec(workloads=('synthetic',), algorithms=('adamw',), trials=1, max_steps=5,"
        " name='u')\n"
        "print(run_study(spec, open_store(sys.argv[1], create=True), progress=False).summary())\n")
    out = subprocess.run([sys.executable, str(script), str(tmp_path / "s")], cwd=tmp_path,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.count("SCRIPT BODY") == 1 and "1 ran, 0 failed" in out.stdout


def test_extending_a_study_keeps_its_trials_and_a_changed_plan_is_refused(tmp_path, capsys):
    store = open_store(tmp_path / "s", create=True)
    small = StudySpec(workloads=("synthetic",), algorithms=("adamw",), studies=2, trials=2,
                      max_steps=5, name="grow")
    assert run_study(small, store, workers=2, progress=False).succeeded == 4
    before = {(d["study"], d["trial"]): (d["trial_key"], d["config"]["hparams"])
              for d in store.documents(study_name="grow")}
    larger = dataclasses.replace(small, trials=4)
    result = run_study(larger, store, workers=2, resume=True, progress=False)
    assert (result.skipped, result.succeeded, result.failed) == (4, 4, [])
    after = {(d["study"], d["trial"]): (d["trial_key"], d["config"]["hparams"])
             for d in store.documents(study_name="grow")}
    assert len(after) == 8 and {k: after[k] for k in before} == before
    assert len({key for key, _ in after.values()}) == 8  # new trials, new ids
    with pytest.raises(StudyChangedError, match=r"max_steps: 5 in the store, 6 now"):
        run_study(dataclasses.replace(larger, max_steps=6), store, resume=True, progress=False)
    assert main(["study", "--workloads", "synthetic", "--algorithms", "adamw", "--studies", "2",
                 "--trials", "4", "--max-steps", "7", "--name", "grow",
                 "--store", str(store.root), "--resume", "--quiet"]) == 2
    assert "max_steps: 5 in the store, 7 now" in capsys.readouterr().err
    assert sum(1 for _ in store.documents(study_name="grow")) == 8  # nothing ran


@pytest.mark.parametrize("argv, message", [
    (["run", "--workload", "synthetic", "--algorithm", "adamw", "--max-steps", "-5"],
     "--max-steps -5: must be an integer >= 1"),
    (["run", "--workload", "synthetic", "--algorithm", "adamw", "--batch-size", "0"],
     "--batch-size 0: must be an integer >= 1"),
    (["study", "--workloads", "synthetic", "--algorithms", "adamw", "--name", "../../x"],
     "bad study name '../../x'"),
    (["run", "--workload", "nope", "--algorithm", "adamw"], "unknown workload 'nope'"),
    (["run", "--workload", "synthetic", "--algorithm", "nope"], "unknown algorithm 'nope'"),
    (["run", "--workload", "synthetic", "--algorithm", "adamw", "--hparams",
      '{"learning_rate": "fast"}'], 'hyperparameter learning_rate is "fast"; expected a finite'),
    (["run", "--workload", "synthetic", "--algorithm", "adamw", "--hparams",
      '{"learning_rate": -1}'], "adamw cannot use hyperparameters"),
    (["run", "--workload", "synthetic", "--algorithm", "adamw", "--hparams",
      '{"lr": 0.1}'], "adamw does not take hyperparameter(s) lr: valid are learning_rate"),
    (["run", "--workload", "synthetic", "--algorithm", "adamw", "--hparams", "@missing.json"],
     "cannot read the hyperparameter file 'missing.json'"),
    (["run", "--workload", "synthetic", "--algorithm", "adamw", "--hparams",
      '{"a": ' * 5000 + "1" + "}" * 5000], "not valid JSON (maximum recursion depth"),
    (["run", "--workload", "synthetic", "--algorithm", "adamw", "--hparams", "[1]"],
     "not a JSON object"),
    (["run", "--workload", "synthetic", "--algoperf-submission", "SUBMISSION"],
     "SyntaxError (line 1): invalid syntax"),
    (["noise", "--workload", "synthetic", "--seeds", "1"], "--seeds must be >= 2"),
    (["noise", "--workload", "synthetic", "--algorithm", "nope"], "unknown algorithm 'nope'"),
    (["noise", "--workload", "mnist_cnn"], "mnist_cnn has no tuned baseline recorded"),
    (["noise", "--workload", "synthetic", "--studies", "0"], "--studies 0: must be an integer >= 1"),
    (["set-targets", "--workload", "synthetic", "--reach-quantile", "1.5"],
     "--reach-quantile 1.5: must be a number in (0, 1]"),
    (["set-targets", "--workload", "synthetic", "--reruns", "1"], "--reruns 1: must be an integer >= 2"),
    (["study", "--workloads", "synthetic", "--algorithms", "adamw", "--batch-sizes", "64"],
     "unrecognized arguments: --batch-sizes 64"),  # `pacebench scale`'s, not study's
    (["study", "--workloads", "synthetic", "--algorithms", "adamw", "--batch-size", "64"],
     "unrecognized arguments: --batch-size 64"),  # never an abbreviation of --batch-sizes
    (["study", "--workloads", "synthetic", "--algorithms", "adamw", "--eta", "1",
      "--early-stop", "lcga"], "--eta 1: must be an integer >= 2"),
    (["study", "--workloads", "synthetic", "--algorithms", "adamw", "--address", "auto"],
     "--address goes with --backend ray"),
    (["noise", "--workload", "synthetic", "--max-steps", "5"], "--max-steps: a noise floor"),
    (["set-targets", "--workload", "synthetic", "--horizon", "nan"],
     "--horizon nan: must be a number in (0, 1]"),
])
def test_bad_numbers_and_names_are_refused_before_anything_is_written(tmp_path, capsys, argv,
                                                                      message):
    store = tmp_path / "store"
    (tmp_path / "submission.py").write_text("def broken(:\n")
    argv = [str(tmp_path / "submission.py") if a == "SUBMISSION" else a for a in argv]
    try:
        code = main([*argv, "--store", str(store), "--quiet"])
    except SystemExit as e:  # argparse refuses the argument itself
        code = e.code
    err = capsys.readouterr().err
    assert code == 2 and message in err, err
    assert "Traceback" not in err and len(err.splitlines()) == 1 and len(err) < 600
    assert not store.exists()  # a refused command creates no store folder
    assert not (tmp_path.parent / "x").exists()


def test_a_closed_pipe_ends_a_command_quietly(fake_store, monkeypatch, capsys):
    read_end, write_end = os.pipe()
    os.close(read_end)  # `pacebench score | head` after head has gone
    pipe = os.fdopen(write_end, "w", buffering=1)  # each line written at once
    monkeypatch.setattr(sys, "stdout", pipe)
    assert main(["score", "--store", str(fake_store)]) == 1
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("command, where", [
    (command, where) for command in ("score", "rank") for where in ("missing", "empty folder", "file")
] + [("run", "file")])  # (run creates a store where there is none)
def test_a_store_path_that_is_no_store_is_one_line_of_error(tmp_path, capsys, command, where):
    path = tmp_path / "store"
    if where == "empty folder":
        path.mkdir()
    elif where == "file":
        path.write_text("not a store")
    argv = [command, "--store", str(path)]
    if command == "run":
        argv += ["--workload", "synthetic", "--algorithm", "adamw", "--quiet"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert str(path) in err and ("is not a Pacebench store" in err or "is a file" in err)
    assert "Traceback" not in err and len(err.splitlines()) == 1


def test_a_worker_that_exits_badly_after_sealing_its_run_complete_is_a_warning(tmp_path):
    """A data-parallel rank can abort in its exit handlers after rank 0 sealed the run: the
    trial is complete (a warning), while the same exit before a sealed run is a failure."""
    from runners.launch.scheduler import Scheduler, StudyResult
    from runners.launch.processes import Outcome
    from workbench.catalog import get_workload
    from workbench.records import run_identity
    from workbench.spec import RunConfig
    from workbench.store import utc_now

    store = open_store(tmp_path / "store", create=True)
    scheduler = Scheduler(store, None, 1, None, False, None, LaunchOptions())
    sealed, unsealed = (RunConfig(workload="synthetic", algorithm="adamw", study_name="dp",
                                  trial=t) for t in (0, 1))
    started_at = utc_now()
    with store.new_run(run_identity(sealed, get_workload("synthetic"))) as writer:
        writer.finish("complete", stop_reason="target reached")
    result = StudyResult()
    aborted = Outcome(returncode=-signal.SIGABRT, pid=12345, host="here")
    scheduler._reap(aborted, sealed, result, started_at)
    assert (result.succeeded, result.failed, len(result.warnings)) == (1, [], 1)
    assert "killed by signal 6 (SIGABRT) after its run" in result.warnings[0]
    assert "warning: synthetic adamw study 0 trial 0" in result.summary()
    scheduler._reap(aborted, unsealed, result, started_at)
    assert result.succeeded == 1 and len(result.failed) == 1


EXITING = """\
import os
import signal

from runners.algorithms.adamw import AdamW


class ExitsInInit(AdamW):
    search_space = {"learning_rate": {"feasible_points": [0.002]}}

    def init(self, model, workload):
        os._exit(0)


class KilledInInit(ExitsInInit):
    def init(self, model, workload):
        os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.mark.slow
def test_a_worker_that_ends_without_a_result_is_failed(tmp_path, capsys):
    """A worker that exits (even with code 0) or is killed before its first eval left no
    result: its trial is `failed`, "... before reporting", and the command exits 1."""
    plugin = tmp_path / "exiting.py"
    plugin.write_text(EXITING)
    store = tmp_path / "s"
    code = main(["study", "--workloads", "synthetic", "--algorithms",
                 f"exits={plugin}:ExitsInInit,killed={plugin}:KilledInInit", "--trials", "1",
                 "--max-steps", "5", "--workers", "2", "--quiet", "--store", str(store)])
    out = capsys.readouterr().out
    assert code == 1, out
    assert "0 ran, 2 failed" in out
    reasons = {d["algorithm"]: (d["status"], d["stop_reason"])
               for d in open_store(store).documents()}
    assert reasons == {"exits": ("failed", "worker exited with code 0 before reporting"),
                       "killed": ("failed", "worker killed by signal 9 (SIGKILL) before "
                                            "reporting")}, reasons


def test_a_worker_killed_after_its_first_eval_stays_interrupted(tmp_path):
    """A kill of a run that had evals (preemption) stays `interrupted`, resumable; an exit of
    code 0 with nothing recorded is failed, not a success."""
    from runners.launch.processes import Outcome
    from runners.launch.scheduler import Scheduler, StudyResult
    from workbench.catalog import get_workload
    from workbench.records import run_identity
    from workbench.spec import RunConfig
    from workbench.store import utc_now

    store = open_store(tmp_path / "store", create=True)
    scheduler = Scheduler(store, None, 1, None, False, None, LaunchOptions())
    evaluated, silent = (RunConfig(workload="synthetic", algorithm="adamw", study_name="k",
                                   trial=t) for t in (0, 1))
    started_at = utc_now()
    writer = store.new_run(run_identity(evaluated, get_workload("synthetic")))
    writer.update(process={"pid": 12345, "host": "here"})
    writer.append_eval({"eval_index": 0, "step": 0})
    result = StudyResult()
    scheduler._reap(Outcome(returncode=-signal.SIGKILL, pid=12345, host="here"), evaluated,
                    result, started_at)
    assert [d["status"] for d in store.attempts(evaluated.trial_key)] == ["interrupted"]
    scheduler._reap(Outcome(returncode=0, pid=12346, host="here"), silent, result, started_at)
    assert result.succeeded == 0 and len(result.failed) == 2
    assert [(d["status"], d["stop_reason"]) for d in store.attempts(silent.trial_key)] == [
        ("failed", "worker exited with code 0 before reporting")]


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_run_child_stops_its_child_when_this_process_is_signalled(tmp_path, signum):
    """`pacebench serve`'s server process: Ctrl-C or SIGTERM here stops it, and the status says
    which signal ended us."""
    import threading

    from runners.launch.processes import run_child

    pid_file = tmp_path / "child.pid"
    script = f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); " \
             "time.sleep(60)"
    def signal_when_started() -> None:
        deadline = time.monotonic() + 20
        while not pid_file.exists() or not pid_file.read_text():
            assert time.monotonic() < deadline
            time.sleep(0.02)
        os.kill(os.getpid(), signum)

    before = signal.getsignal(signum)
    signaller = threading.Thread(target=signal_when_started)
    signaller.start()
    start = time.monotonic()
    code = run_child([sys.executable, "-c", script], os.environ)
    signaller.join()
    assert code == 128 + signum and time.monotonic() - start < 20
    child = int(pid_file.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(child, 0)  # gone (reaped by run_child)
    assert signal.getsignal(signum) is before  # our handler is gone again


# -- the launch order --------------------------------------------------------------------------
def _study_configs(name="order", trials=4, algorithms=("adamw", "nadamw", "heavy_ball")):
    spec = StudySpec(workloads=("digits_mlp", "synthetic"), algorithms=algorithms, studies=2,
                     trials=trials, name=name)
    return plan_study(spec)


def test_every_block_of_the_launch_order_holds_one_trial_of_each_algorithm():
    configs = _study_configs()
    order = launch_order(configs, "order")
    assert sorted(c.trial_key for c, _ in order) == sorted(c.trial_key for c in configs)
    assert [place["position"] for _, place in order] == list(range(len(configs)))
    blocks = {}
    for config, place in order:
        blocks.setdefault(place["block"], []).append(config)
    assert len(blocks) == 2 * 2 * 4 == order[0][1]["blocks"]
    for members in blocks.values():
        assert sorted(c.algorithm for c in members) == ["adamw", "heavy_ball", "nadamw"]
        assert len({(c.workload, c.study, c.trial, c.seed) for c in members}) == 1
        # common random numbers: one place, one initialisation and data order for all
        assert len({c.rng_seed for c in members}) == 1
    positions = [next(p["block"] for c, p in order if c.workload == "digits_mlp" and
                      c.algorithm == a and c.study == 0 and c.trial == 0)
                 for a in ("adamw", "nadamw")]
    assert positions[0] == positions[1]
    # the plan's own order is algorithm after algorithm; the launch order is not
    plan_algorithms = [c.algorithm for c in configs]
    assert plan_algorithms[:16] == ["adamw"] * 16
    first_half = [c.algorithm for c, _ in order[:len(order) // 2]]
    assert {a: first_half.count(a) for a in set(first_half)} == {
        "adamw": 8, "nadamw": 8, "heavy_ball": 8}


def test_the_launch_order_is_seeded_by_the_study_and_kept_when_it_grows():
    small = [(c.trial_key, p["block"]) for c, p in launch_order(_study_configs(trials=2), "order")]
    again = [(c.trial_key, p["block"]) for c, p in launch_order(_study_configs(trials=2), "order")]
    assert small == again
    other = [c.trial_key for c, _ in launch_order(_study_configs(trials=2, name="other"),
                                                   "other")]
    assert other != [k for k, _ in small]
    grown = [c.trial_key for c, _ in launch_order(_study_configs(trials=4), "order")]
    kept = [k for k in grown if k in {k for k, _ in small}]
    assert kept == [k for k, _ in small]  # more trials: the old ones keep their relative order


def test_a_study_runs_in_the_launch_order_and_each_run_records_its_place(tmp_path):
    store = open_store(tmp_path / "store", create=True)
    spec = StudySpec(workloads=("synthetic",), algorithms=("adamw", "nadamw"), trials=2,
                     name="placed", max_steps=20)
    run_study(spec, store, workers=1, progress=False)
    runs = query.runs_frame(store).sort_values("started_at")
    order = launch_order(plan_study(spec), "placed")
    assert list(runs.trial_key) == [c.trial_key for c, _ in order]
    assert list(runs.launch_position) == [0, 1, 2, 3]
    doc = store.run_doc(runs.run_id.iloc[3])
    assert doc["launch_order"]["position"] == 3 and doc["launch_order"]["blocks"] == 2


def test_a_failed_trial_gives_its_errors_last_line_in_the_summary(tmp_path):
    """Not only "worker exited with code 1; log ...": the last line of the error, from the
    failed run's record, else from the worker's log (a worker that died before its run)."""
    from runners.launch.processes import Outcome
    from runners.launch.scheduler import Scheduler, StudyResult
    from workbench.catalog import get_workload
    from workbench.records import run_identity
    from workbench.spec import RunConfig
    from workbench.store import utc_now

    store = open_store(tmp_path / "store", create=True)
    scheduler = Scheduler(store, None, 1, None, False, None, LaunchOptions())
    recorded, logged = (RunConfig(workload="synthetic", algorithm="AdEMAMix", study_name="f",
                                  trial=t) for t in (0, 1))
    started_at, result = utc_now(), StudyResult()
    with pytest.raises(ValueError):
        with store.new_run(run_identity(recorded, get_workload("synthetic"))):
            raise ValueError("not enough values to unpack (expected 3, got 2)")
    scheduler._reap(Outcome(returncode=1, pid=1, host="here"), recorded, result, started_at)
    store.log_path("f", logged.trial_key).write_text(
        "Traceback (most recent call last):\n  File \"x.py\", line 1, in <module>\n"
        "ImportError: cannot import name 'Foo'\nmnist1d_mlp--x: failed\n")
    scheduler._reap(Outcome(returncode=1, pid=2, host="here"), logged, result, utc_now())
    assert "trial 0 seed 0: ValueError: not enough values to unpack (expected 3, got 2) " \
           "(worker exited with code 1); log " in result.summary()
    assert "trial 1 seed 0: ImportError: cannot import name 'Foo' (worker exited with code " \
           "1 before reporting); log " in result.failed[1]  # it started no run


def test_a_resume_with_other_threads_is_refused_unless_the_mix_is_allowed_and_recorded(
        tmp_path, capsys):
    """--resume compares execution options (and the hardware class) with the study's finished
    runs: other --threads is refused in one line naming them; with --allow-mixed-execution the
    new runs record the mix, and score says that it pools two set-ups."""
    store = tmp_path / "s"
    argv = ["study", "--workloads", "synthetic", "--algorithms", "adamw", "--max-steps", "5",
            "--name", "mix", "--store", str(store), "--quiet"]
    assert main(argv + ["--trials", "1"]) == 0
    capsys.readouterr()
    more = argv + ["--trials", "2", "--resume", "--threads", "2"]
    assert main(more) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "threads: 1 in the store, 2 now" in err
    assert "--allow-mixed-execution" in err and "precision" not in err
    assert sum(1 for _ in open_store(store).documents(study_name="mix")) == 1  # nothing ran
    assert main(more + ["--allow-mixed-execution"]) == 0
    runs = query.runs_frame(open_store(store)).set_index("trial").sort_index()
    assert runs["mixed_execution"].isna()[0]  # the first run mixed nothing: null
    assert runs.loc[1, "mixed_execution"] == "threads: 1 in the store, 2 now"
    assert list(runs["execution"]) == ["cpu, fp32, 1 thread", "cpu, fp32, 2 threads"]
    capsys.readouterr()
    main(["score", "--store", str(store)])
    out = capsys.readouterr()
    assert "pooled runs of 2 different execution options or hardware" in out.out + out.err
    assert main(argv + ["--trials", "2", "--allow-mixed-execution"]) == 2  # without --resume
    assert "goes with --resume" in capsys.readouterr().err


def test_a_resume_on_other_hardware_or_precision_names_what_differs():
    from runners.launch.resume import ExecutionChangedError, check_mix, hardware_class_here
    from workbench.spec import ExecutionOptions, RunConfig

    old = RunConfig("synthetic", "adamw", study_name="m")
    docs = [{"status": "complete", "config": old.to_dict(),
             "environment": {"device": "cpu", "cpu": "Other CPU"}},
            {"status": "failed", "config": old.to_dict(),  # failed runs count nowhere
             "environment": {"device": "cpu", "cpu": "Third CPU"}}]
    here = hardware_class_here("cpu")
    with pytest.raises(ExecutionChangedError, match=f"hardware: cpu: Other CPU in the store, "
                                                    f"{here} now"):
        check_mix(docs, "m", [old], allow=False)
    assert check_mix(docs, "m", [old], allow=False, compare_hardware=False) is None  # Ray
    bf16 = dataclasses.replace(old, execution=ExecutionOptions(precision="bf16"))
    assert check_mix(docs, "m", [bf16], allow=True, compare_hardware=False) == \
        "precision: fp32 in the store, bf16 now"
