"""Faults: workers killed at random moments, the watchdog, resume, and concurrent studies on one
store. The chaos tests print their figures (kills, attempts, seconds) for the issue's note."""
from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import psutil
import pytest

from runners.launch.study import run_configs
from runners.launch.processes import PROCESS_NAME, LaunchOptions
from runners.launch.scheduler import watchdog_seconds
from workbench import query
from workbench import records as R
from workbench.catalog import get_workload
from workbench.spec import RunConfig
from workbench.store import open_store

from locations import FIXTURES
from signals import terminal_signals


def _workers(launcher: int) -> list[int]:
    """Live worker processes (named PROCESS_NAME) descending from the process `launcher`:
    children of its fork server, or its own children under the spawn start method."""
    parents, names = {}, {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            name = (stat.parent / "comm").read_bytes().strip()
        except (OSError, IndexError):
            continue
        if fields[0] not in "ZX":
            pid = int(stat.parent.name)
            parents[pid], names[pid] = int(fields[1]), name
    found = []
    for pid, name in names.items():
        ancestor = parents.get(pid)
        while ancestor not in (None, 0, 1, launcher):
            ancestor = parents.get(ancestor)
        if name == PROCESS_NAME and ancestor == launcher:
            found.append(pid)
    return found


def _study_cmd(root: Path, name: str, trials: int, workers: int, max_steps: int) -> list[str]:
    return [sys.executable, "-m", "runners.cli", "study", "--workloads", "synthetic",
            "--algorithms", "sgd_nesterov", "--trials", str(trials), "--workers", str(workers),
            "--max-steps", str(max_steps), "--name", name, "--store", str(root), "--quiet"]


def test_resume_leaves_alone_a_trial_that_another_launcher_is_running(tmp_path):
    store = open_store(tmp_path / "s", create=True)
    config = RunConfig(workload="synthetic", algorithm="adamw", study_name="busy", max_steps=20)
    writer = store.new_run({"trial_key": config.trial_key, "workload": config.workload,
                            "algorithm": config.algorithm, "study_name": "busy"})  # alive: us
    result = run_configs([config], store, "busy", resume=True, progress=False)
    assert (result.skipped, result.succeeded, result.failed) == (1, 0, [])
    writer.finish("interrupted", stop_reason="test")  # now it is missing: resume would run it
    assert config.trial_key not in store.done_trial_keys()


WATCHDOG_S = 8.0  # the quick trial takes about 1 s, the endless one would take hours
HOSTILE = FIXTURES / "hostile_algorithms.py"  # plug-ins that misbehave


def test_every_attempt_has_a_watchdog_of_three_budgets_and_a_minute_by_default():
    config = RunConfig(workload="synthetic", algorithm="adamw")  # a budget of 30 s
    assert watchdog_seconds(config, LaunchOptions()) == 3 * 30 + 60
    longer = RunConfig(workload="synthetic", algorithm="adamw", budget_multiplier=2.0)
    assert watchdog_seconds(longer, LaunchOptions()) == 3 * 60 + 60
    assert watchdog_seconds(config, LaunchOptions(trial_timeout=7.0)) == 7.0
    for bad in (float("nan"), float("inf"), 0.0, -1.0):
        with pytest.raises(ValueError, match="--trial-timeout must be a finite number"):
            LaunchOptions(trial_timeout=bad).check()


def _gone(pid: int) -> bool:
    """Whether process `pid` has ended (gone, or a zombie waiting for its parent)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


@pytest.mark.slow
def test_pacebench_run_trains_in_a_worker_that_its_watchdog_kills_with_what_it_started(
        tmp_path, monkeypatch, capsys):
    """A plug-in whose step() starts `sleep 1000` and sleeps forever: `pacebench run` is
    bounded too (here by --trial-timeout 3), its run `failed` with the reason, and the
    subprocess is gone with it."""
    from runners.cli import main

    monkeypatch.setenv("PACEBENCH_TEST_OUT", str(tmp_path))
    assert main(["run", "--workload", "synthetic", "--algorithm", f"{HOSTILE}:Sleeper",
                 "--trial-timeout", "3", "--store", str(tmp_path / "s"), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert ": failed (watchdog: no result after 3 s wall clock, killed) in store" in err
    (child,) = tmp_path.glob("child-*")
    assert _gone(int(child.read_text()))
    (run,) = query.runs_frame(open_store(tmp_path / "s")).itertuples()
    assert (run.status, run.launched_by) == ("failed", "run")


@pytest.mark.slow
def test_watchdog_kills_an_overlong_trial_and_the_study_goes_on(tmp_path):
    store = open_store(tmp_path / "s", create=True)
    quick = RunConfig(workload="synthetic", algorithm="adamw", study_name="wd", trial=0,
                      max_steps=20)
    endless = RunConfig(workload="synthetic", algorithm="adamw", study_name="wd", trial=1,
                        budget_multiplier=10_000.0, stop_on_target=False)  # 4M steps
    t0 = time.monotonic()
    result = run_configs([quick, endless], store, "wd", workers=1, progress=False,
                         options=LaunchOptions(trial_timeout=WATCHDOG_S))
    took = time.monotonic() - t0
    assert result.succeeded == 1 and len(result.failed) == 1, result.summary()
    assert f"watchdog: no result after {WATCHDOG_S:g} s" in result.failed[0]
    runs = query.runs_frame(store).set_index("trial")
    assert runs.loc[0, "status"] == "complete"
    assert runs.loc[1, "status"] == "failed"  # the run's doing: --resume runs it again
    assert runs.loc[1, "stop_reason"].startswith("watchdog")
    assert took < WATCHDOG_S + 30.0  # killed on time, not at the end of its budget


@pytest.mark.slow
def test_a_trial_that_raises_is_recorded_failed_and_the_study_goes_on(tmp_path):
    store = open_store(tmp_path / "s", create=True)
    bad = RunConfig(workload="synthetic", algorithm="adamw", study_name="f", trial=0,
                    hparams={"learning_rate": 1e-3, "no_such_knob": 1.0}, max_steps=20)
    good = RunConfig(workload="synthetic", algorithm="adamw", study_name="f", trial=1,
                     max_steps=20)
    result = run_configs([bad, good], store, "f", workers=1, progress=False)
    assert result.succeeded == 1 and len(result.failed) == 1
    assert "exited with code 1" in result.failed[0]
    runs = query.runs_frame(store).set_index("trial")
    assert runs.loc[0, "status"] == "failed" and "no_such_knob" in runs.loc[0, "stop_reason"]
    assert runs.loc[1, "status"] == "complete"


def _training_pids(root: Path, candidates: list[int]) -> list[int]:
    """Those of `candidates` (worker pids) whose run folder says `running`: training right now."""
    pids = []
    for doc_path in (root / R.RUNS_DIR).glob(f"*/{R.RUN_DOC}"):
        try:
            doc = json.loads(doc_path.read_text())
        except (OSError, json.JSONDecodeError):
            continue
        pid = (doc.get("process") or {}).get("pid")
        if doc.get("status") == "running" and pid in candidates:
            pids.append(pid)
    return pids


def _kill(pid: int) -> bool:
    """SIGKILL `pid`; False when it had already ended on its own (gone, or a zombie not yet
    reaped: a signal to a zombie "succeeds" but kills nothing)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                return False
        os.kill(pid, signal.SIGKILL)
        return True
    except (ProcessLookupError, FileNotFoundError):
        return False  # it ended on its own meanwhile


@pytest.mark.slow
def test_chaos_random_worker_kills_then_resume_completes_every_trial_once(tmp_path):
    """12 trials, 2 workers; a killer SIGKILLs workers at random moments (in start-up or while
    training), 6 in all, each once the previous victim is gone; then --resume."""
    root, trials, kills_wanted = tmp_path / "store", 12, 6
    rng = random.Random(2026)
    cmd = _study_cmd(root, "chaos", trials, workers=2, max_steps=400)
    t0 = time.monotonic()
    launcher = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    kills, killed = Counter(), set()
    plan = rng.sample(["training"] * (kills_wanted // 2) + ["start-up"] * (kills_wanted // 2),
                      kills_wanted)
    while launcher.poll() is None and plan:
        workers = [w for w in _workers(launcher.pid) if w not in killed]
        training = _training_pids(root, workers)
        starting = sorted(set(workers) - set(training))
        if plan[0] == "training" and training:  # the moment a worker has a live run folder
            time.sleep(rng.uniform(0.0, 0.3))
            victim = rng.choice(training)
        elif plan[0] == "start-up" and starting:  # forked, its run folder not made yet
            time.sleep(rng.uniform(0.0, 0.05))
            victim = rng.choice(starting)
        else:
            time.sleep(0.02)
            continue
        if _kill(victim):  # else it ended on its own first: the same kind is tried again
            kills[plan.pop(0)] += 1
        killed.add(victim)
        while victim in _workers(launcher.pid) and launcher.poll() is None:  # until it is gone
            time.sleep(0.02)
    summary = launcher.communicate()[0]
    first_s = time.monotonic() - t0
    assert launcher.returncode == 1  # some trials failed: the launcher says so, and went on
    assert kills["training"] >= 2, kills
    killed_trials = [int(t) for t in re.findall(  # failures, and warnings (killed once sealed)
        r"trial (\d+)(?: seed 0)?: worker killed by signal 9", summary)]
    # A SIGKILL sent just as its victim exits on its own kills nothing (the process is gone
    # or a zombie by the time it lands): the launcher reports at most the kills sent.
    assert sum(kills.values()) // 2 <= len(killed_trials) <= sum(kills.values()), summary

    store = open_store(root)
    runs = query.runs_frame(store)
    # a killed attempt: `interrupted` once it had evals to resume from, `failed` when it was
    # killed before its first eval ("... before reporting"; issue 39) or before its run started
    interrupted = runs[runs.status.isin(["interrupted", "failed"])]
    assert "running" not in set(runs.status)
    # every kill is in the store, whether the worker was training or still starting; only a
    # worker killed after sealing its run (while exiting) leaves its trial done instead
    done_first = set(runs[runs.status.isin(R.DONE_STATUSES)].trial)
    assert sorted(interrupted.trial) == sorted(t for t in killed_trials if t not in done_first)
    assert len(interrupted) >= sum(kills.values()) // 2  # not vacuous
    assert all("killed by signal 9" in r for r in interrupted.stop_reason)
    done_before = runs[runs.status.isin(R.DONE_STATUSES)].trial_key.nunique()
    assert done_before < trials
    killed_rows = len(query.evals_frame(store, list(interrupted.run_id)))

    t1 = time.monotonic()
    subprocess.run(cmd + ["--resume"], check=True)
    resume_s = time.monotonic() - t1
    runs = query.runs_frame(store)
    done = runs[runs.status.isin(R.DONE_STATUSES)]
    assert done.trial_key.nunique() == trials
    assert Counter(done.trial_key).most_common(1)[0][1] == 1  # each trial done exactly once
    still = runs.set_index("run_id").loc[list(interrupted.run_id)]
    assert set(still.status) <= {"interrupted", "failed"}  # killed attempts stay visible
    assert len(query.evals_frame(store, list(interrupted.run_id))) == killed_rows  # nothing written is lost
    started = sum(interrupted.stop_reason.str.contains("before its run started|before reporting"))
    print(f"\nchaos: {trials} trials, {sum(kills.values())} workers killed ({dict(kills)}), "
          f"{len(interrupted)} attempts recorded interrupted or failed ({started} of them killed "
          f"before their first eval), {done_before} trials done before "
          f"resume, {len(runs)} attempts in all; first launch {first_s:.1f} s, "
          f"resume {resume_s:.1f} s")


@pytest.mark.slow
def test_four_concurrent_studies_share_one_store(tmp_path):
    root, trials = tmp_path / "shared", 3
    names = [f"s{i}" for i in range(4)]
    t0 = time.monotonic()
    procs = [subprocess.Popen(_study_cmd(root, n, trials, workers=1, max_steps=40))
             for n in names]
    assert [p.wait() for p in procs] == [0, 0, 0, 0]
    took = time.monotonic() - t0
    store = open_store(root)
    runs = query.runs_frame(store)
    assert len(runs) == 4 * trials and runs.run_id.is_unique
    assert set(runs.status) <= set(R.DONE_STATUSES)
    for name in names:
        mine = runs[runs.study_name == name]
        assert len(mine) == trials and mine.trial_key.nunique() == trials
    evals = query.evals_frame(store)
    per_run = evals.groupby("run_id").size()
    complete = runs[runs.status == "complete"].run_id
    assert len(complete) >= 6  # (a trial whose learning rate is too high may diverge early)
    every = get_workload("synthetic").eval_every.steps  # evals at every, 2 every, ..., 40
    assert (per_run.reindex(complete, fill_value=0) == 40 // every).all()
    assert set(evals.run_id) <= set(runs.run_id)
    print(f"\nconcurrent: 4 studies x {trials} trials into one store: {len(runs)} runs, "
          f"{len(evals)} eval rows, {took:.1f} s")


@pytest.mark.slow
def test_one_study_launched_twice_at_once_runs_each_trial_once(tmp_path):
    root, trials = tmp_path / "store", 4
    cmd = _study_cmd(root, "twice", trials, workers=1, max_steps=20) + ["--resume"]
    open_store(root, create=True)
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True) for _ in range(2)]
    outputs = [p.communicate()[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outputs
    runs = query.runs_frame(open_store(root))
    assert len(runs) == trials and runs.trial_key.nunique() == trials, runs.trial_key.tolist()
    assert set(runs.status) <= set(R.DONE_STATUSES)
    ran = [int(re.search(r"(\d+) ran", out).group(1)) for out in outputs]
    assert sum(ran) == trials, outputs  # shared between them, none twice


@pytest.mark.slow
def test_ctrl_c_stops_a_study_within_10_s_whatever_its_plug_ins_do(tmp_path):
    """Three hostile plug-ins run at once: one sleeps in step() with a subprocess (`sleep
    1000`) of its own, one catches every exception (KeyboardInterrupt and SystemExit too) in a
    loop, one printed 50 MB first. A terminal's Ctrl-C (SIGINT to the launcher's process group)
    ends the launcher within 10 s with a one-line summary; every run is `interrupted`, the
    printer's log is capped, and no process is left (the fork server ends a moment after)."""
    out, root = tmp_path / "out", tmp_path / "store"
    out.mkdir()
    plugins = ",".join(f"{name.lower()}={HOSTILE}:{name}" for name in ("Sleeper", "Stubborn",
                                                                       "Loud"))
    cmd = [sys.executable, "-m", "runners.cli", "study", "--workloads", "synthetic",
           "--algorithms", plugins, "--ruleset", "self", "--workers", "3", "--name", "h",
           "--store", str(root), "--quiet"]
    launcher = subprocess.Popen(cmd, env={**os.environ, "PACEBENCH_TEST_OUT": str(out)},
                                start_new_session=True, preexec_fn=terminal_signals,
                                stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300
    while len(list(out.glob("in-step-*"))) < 3:  # each plug-in is in its step()
        assert launcher.poll() is None and time.monotonic() < deadline, launcher.stderr.read()
        time.sleep(0.1)
    descendants = [p.pid for p in psutil.Process(launcher.pid).children(recursive=True)]
    t0 = time.monotonic()
    os.killpg(launcher.pid, signal.SIGINT)  # what a terminal's Ctrl-C does
    assert launcher.wait(30) == 130
    took = time.monotonic() - t0
    err = launcher.stderr.read()
    assert took < 10.0, f"{took:.1f} s"
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith("3 trials planned, 0 already done, 0 ran, 0 failed, 3 interrupted, "
                          "0 not started (stopped: interrupted by Ctrl-C or SIGTERM; "), err
    runs = query.runs_frame(open_store(root))
    assert sorted(runs.status) == ["interrupted"] * 3
    (child,) = out.glob("child-*")
    assert _gone(int(child.read_text()))  # the Sleeper's subprocess died with its worker
    while not all(_gone(pid) for pid in descendants):
        assert time.monotonic() - t0 < 30, [p for p in descendants if not _gone(p)]
        time.sleep(0.1)
    left_s = time.monotonic() - t0
    (loud,) = [p for p in (root / "logs").iterdir() if p.stat().st_size > 1 << 20]
    text = loud.read_bytes()
    assert 4 << 20 < len(text) < (4 << 20) + 300  # 50 MB printed: the first and last 2 MiB
    assert re.search(rb"\n\[pacebench: 4[0-9],[0-9,]+ bytes of this attempt's output dropped "
                     rb"here; the log keeps its first 2 MiB and its last 2 MiB\]\n", text)
    print(f"\nCtrl-C: the launcher exited {took:.1f} s after SIGINT, its last descendant was "
          f"gone after {left_s:.1f} s")


@pytest.fixture()
def small_disk(tmp_path):
    """A 3 MB tmpfs (mounting needs root, else the test is skipped)."""
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(disk)],
                             capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    yield disk
    subprocess.run(["umount", "-l", str(disk)], check=True)


@pytest.mark.slow
def test_a_full_disk_mid_study_stops_it_cleanly_and_resume_completes_it(
        small_disk, tmp_path, monkeypatch, capsys):
    """A study on a 3 MB disk that one of its trials fills: the launch starts nothing more,
    records that trial `interrupted` with "no space left on <store>", prints its summary and
    exits 1 naming the store; relaunched while the disk is still full it fails in one line and
    writes nothing; once space is freed, --resume completes every trial once."""
    from runners.cli import main

    root = small_disk / "store"
    monkeypatch.setenv("PACEBENCH_TEST_OUT", str(tmp_path))
    monkeypatch.setenv("PACEBENCH_TEST_FILL", str(small_disk / "filler"))
    argv = ["study", "--workloads", "synthetic", "--algorithms",
            f"sgd_nesterov,filler={HOSTILE}:Filler", "--ruleset", "self", "--studies", "2",
            "--max-steps", "20", "--name", "full", "--store", str(root), "--quiet"]
    assert main(argv) == 1
    out, err = capsys.readouterr()
    assert f"(stopped: no space left on {root}; --resume runs them)" in out
    assert err.startswith(f"error: no space left on {root}: ") and err.count("\n") == 1, err
    runs = query.runs_frame(open_store(root))
    filler = runs[runs.algorithm == "filler"]
    assert list(filler.status) == ["interrupted"]
    assert list(filler.stop_reason) == [f"no space left on {root}"]
    assert not (set(runs.status) - {"complete", "interrupted"})
    folders = sorted((root / "runs").iterdir())

    assert main(argv + ["--resume"]) == 1  # still full: one line naming the store
    err = capsys.readouterr().err
    assert err.startswith(f"error: no space left on the device of {root} "), err
    assert err.count("\n") == 1 and sorted((root / "runs").iterdir()) == folders

    (small_disk / "filler").unlink()
    assert main(argv + ["--resume"]) == 0, capsys.readouterr()
    runs = query.runs_frame(open_store(root))
    done = runs[runs.status.isin(R.DONE_STATUSES)]
    assert len(done) == done.trial_key.nunique() == 4
    assert all(any(p.iterdir()) for p in (root / "runs").iterdir())  # no empty folders
