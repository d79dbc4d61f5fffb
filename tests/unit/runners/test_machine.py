"""The machine's speed beside every run (runners/run/machine.py), and what a run records of it."""
from __future__ import annotations

import math
import os
import subprocess
import sys
import time

import pandas as pd
import torch

from runners.run.loop import run
from runners.run.machine import MachineMonitor, probe_seconds
from workbench import query
from workbench import records as R
from workbench.spec import RunConfig
from workbench.store import open_store


def test_the_probe_is_slower_when_another_process_shares_the_core(one_thread):
    """On any number of cores: the probe (this thread) and one busy process share one core, and
    one more busy process holds a second core where there is one; the machine's other CPU use
    then counts every core they hold."""
    cpu = torch.device("cpu")
    before = os.sched_getaffinity(0)
    cores = sorted(before)[:2]  # the probe's core, then a second one if the machine has it
    os.sched_setaffinity(0, {cores[0]})  # this thread, where the probe runs
    hogs = []
    try:
        quiet = min(probe_seconds(cpu) for _ in range(5))
        hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in cores]
        for hog, core in zip(hogs, cores):
            os.sched_setaffinity(hog.pid, {core})
        time.sleep(0.3)
        busy = sorted(probe_seconds(cpu) for _ in range(15))[7]  # the median
        monitor = MachineMonitor()
        time.sleep(MachineMonitor.MIN_INTERVAL_S + 0.1)
        other = monitor.read()["other_cpu"]
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
        os.sched_setaffinity(0, before)
    assert busy > 1.2 * quiet  # a busy process on the probe's core takes about half its time
    assert other is not None and other > 0.8 * len(cores)  # each busy process holds its core


def test_a_short_interval_is_carried_into_the_next_reading():
    monitor = MachineMonitor()
    assert monitor.read()["other_cpu"] is None  # 10 ms ticks cannot measure a moment
    time.sleep(MachineMonitor.MIN_INTERVAL_S)
    assert monitor.read()["other_cpu"] is not None


def test_a_run_records_its_probe_load_and_throughput(tmp_path, one_thread):
    store = open_store(tmp_path / "store", create=True)
    run_id = run(RunConfig("synthetic", "adamw", max_steps=60, stop_on_target=False), store)
    doc = store.run_doc(run_id)
    start, end = doc["machine"]["start"], doc["machine"]["end"]
    assert 0 < start["probe_seconds"] < 1 and 0 < end["probe_seconds"] < 1
    assert math.isclose(doc["probe_seconds"], (start["probe_seconds"] + end["probe_seconds"]) / 2)
    assert "matrix product" in doc["machine"]["probe"]
    evals = query.evals_frame(store, [run_id])
    assert set(R.MACHINE_COLUMNS) <= set(evals.columns)
    steps = evals["step"].diff().fillna(evals["step"].iloc[0])
    seconds = evals["train_seconds"].diff().fillna(evals["train_seconds"].iloc[0])
    assert (evals["steps_per_second"] - steps / seconds).abs().max() < 1e-6
    row = query.runs_frame(store).iloc[0]
    assert row.probe_seconds == doc["probe_seconds"] and pd.isna(row.launch_position)
