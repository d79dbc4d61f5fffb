"""Faults: workers killed at random moments, the watchdog, resume, and concurrent studies on one
store. The chaos tests print their figures (kills, attempts, seconds) for the issue's note."""
from __future__ import annotations

import random
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from runners.launch import LaunchOptions, run_configs
from workbench import records as R
from workbench.spec import RunConfig
from workbench.store import open_store


def _children(pid: int, marker: str = "runners.launch") -> list[int]:
    """Live child processes of `pid` whose command line contains `marker`."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            cmdline = (stat.parent / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == pid and fields[0] not in "ZX" and marker in cmdline:
            found.append(int(stat.parent.name))
    return found


def _study_cmd(root: Path, name: str, trials: int, workers: int, max_steps: int) -> list[str]:
    return [sys.executable, "-m", "runners.cli", "study", "--workloads", "synthetic",
            "--algorithms", "sgd_nesterov", "--trials", str(trials), "--workers", str(workers),
            "--max-steps", str(max_steps), "--name", name, "--store", str(root), "--quiet"]


@pytest.mark.slow
def test_watchdog_kills_an_overlong_trial_and_the_study_goes_on(tmp_path):
    store = open_store(tmp_path / "s", create=True)
    quick = RunConfig(workload="synthetic", algorithm="adamw", study_name="wd", trial=0,
                      max_steps=20)
    endless = RunConfig(workload="synthetic", algorithm="adamw", study_name="wd", trial=1,
                        budget_multiplier=100.0, stop_on_target=False)  # ~50 minutes of budget
    t0 = time.monotonic()
    result = run_configs([quick, endless], store, "wd", workers=1, progress=False,
                         options=LaunchOptions(trial_timeout=45.0))
    took = time.monotonic() - t0
    assert result.succeeded == 1 and len(result.failed) == 1, result.summary()
    assert "watchdog: no result after 45 s" in result.failed[0]
    runs = store.runs().set_index("trial")
    assert runs.loc[0, "status"] == "complete"
    assert runs.loc[1, "status"] == "interrupted"
    assert runs.loc[1, "stop_reason"].startswith("watchdog")
    assert took < 45.0 + 45.0  # killed on time, not at the end of its budget


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
    runs = store.runs().set_index("trial")
    assert runs.loc[0, "status"] == "failed" and "no_such_knob" in runs.loc[0, "stop_reason"]
    assert runs.loc[1, "status"] == "complete"


@pytest.mark.slow
def test_chaos_random_worker_kills_then_resume_completes_every_trial_once(tmp_path):
    """20 trials, 2 workers; a killer SIGKILLs 6 workers at random moments; then --resume."""
    root, trials, kills_wanted = tmp_path / "store", 20, 6
    rng = random.Random(2026)
    cmd = _study_cmd(root, "chaos", trials, workers=2, max_steps=60)
    t0 = time.monotonic()
    launcher = subprocess.Popen(cmd)
    killed = []
    while launcher.poll() is None:
        workers = _children(launcher.pid)
        if workers and len(killed) < kills_wanted and rng.random() < 0.25:
            victim = rng.choice(workers)
            time.sleep(rng.uniform(0.0, 4.0))  # a random moment of the victim's life
            try:
                Path(f"/proc/{victim}").stat()
                subprocess.run(["kill", "-KILL", str(victim)], check=True)
                killed.append(victim)
            except (OSError, subprocess.CalledProcessError):
                pass  # it ended on its own meanwhile
        time.sleep(0.5)
    first_s = time.monotonic() - t0
    assert launcher.returncode == 1  # some trials failed: the launcher says so, and went on
    assert len(killed) >= 3, f"the killer hit only {len(killed)} workers"

    store = open_store(root)
    runs = store.runs()
    interrupted = runs[runs.status == "interrupted"]
    assert "running" not in set(runs.status)
    assert 1 <= len(interrupted) <= len(killed)
    assert all("killed by signal 9" in r for r in interrupted.stop_reason)
    done_before = runs[runs.status.isin(R.DONE_STATUSES)].trial_key.nunique()
    killed_rows = len(store.evals(list(interrupted.run_id)))

    t1 = time.monotonic()
    subprocess.run(cmd + ["--resume"], check=True)
    resume_s = time.monotonic() - t1
    runs = store.runs()
    done = runs[runs.status.isin(R.DONE_STATUSES)]
    assert done.trial_key.nunique() == trials
    assert Counter(done.trial_key).most_common(1)[0][1] == 1  # each trial done exactly once
    assert set(interrupted.run_id) <= set(runs[runs.status == "interrupted"].run_id)
    assert len(store.evals(list(interrupted.run_id))) == killed_rows  # nothing written is lost
    print(f"\nchaos: {trials} trials, {len(killed)} workers killed, "
          f"{len(interrupted)} attempts recorded interrupted, {done_before} trials done before "
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
    runs = store.runs()
    assert len(runs) == 4 * trials and runs.run_id.is_unique
    assert set(runs.status) <= set(R.DONE_STATUSES)
    for name in names:
        mine = runs[runs.study_name == name]
        assert len(mine) == trials and mine.trial_key.nunique() == trials
    evals = store.evals()
    assert set(evals.run_id) == set(runs.run_id)  # every run's eval rows are there
    assert (evals.groupby("run_id").size() >= 2).all()
    print(f"\nconcurrent: 4 studies x {trials} trials into one store: {len(runs)} runs, "
          f"{len(evals)} eval rows, {took:.1f} s")
