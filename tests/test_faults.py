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

import pytest

from runners.launch import run_configs
from runners.processes import PROCESS_NAME, LaunchOptions
from workbench import query
from workbench import records as R
from workbench.catalog import get_workload
from workbench.spec import RunConfig
from workbench.store import open_store


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
    assert runs.loc[1, "status"] == "interrupted"
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
    interrupted = runs[runs.status == "interrupted"]
    assert "running" not in set(runs.status)
    # every kill is in the store: an interrupted attempt, whether the worker was training or
    # still starting ("... before its run started"); only a worker killed after sealing its run
    # (while exiting) leaves its trial done instead
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
    assert set(still.status) == {"interrupted"}  # killed attempts stay visible
    assert len(query.evals_frame(store, list(interrupted.run_id))) == killed_rows  # nothing written is lost
    started = sum(interrupted.stop_reason.str.contains("before its run started"))
    print(f"\nchaos: {trials} trials, {sum(kills.values())} workers killed ({dict(kills)}), "
          f"{len(interrupted)} attempts recorded interrupted ({started} of them killed before "
          f"their run started), {done_before} trials done before "
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
