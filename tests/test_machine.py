"""The machine's speed beside every run (runners/run/machine.py), and what a run records of it."""
from __future__ import annotations

import math
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
    cpu = torch.device("cpu")
    quiet = min(probe_seconds(cpu) for _ in range(5))
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(3)]
    try:
        time.sleep(0.3)
        busy = sorted(probe_seconds(cpu) for _ in range(15))[7]  # the median
        monitor = MachineMonitor()
        time.sleep(MachineMonitor.MIN_INTERVAL_S + 0.1)
        other = monitor.read()["other_cpu"]
    finally:
        for hog in hogs:
            hog.kill()
    assert busy > 1.2 * quiet  # three busy processes on two cores take the probe's core's time
    assert other is not None and other > 1.0  # they use more than one core between them


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


def test_a_reading_soon_after_another_reads_no_file(monkeypatch):
    """Within MIN_INTERVAL_S of a full reading, read() repeats its load average and opens
    neither /proc/stat nor /proc/loadavg (a run reads at every eval)."""
    import runners.run.machine as machine

    monitor = MachineMonitor()
    first = monitor.read()
    calls = []
    monkeypatch.setattr(machine, "_busy_cpu_seconds", lambda: calls.append("stat"))
    monkeypatch.setattr(machine.os, "getloadavg", lambda: calls.append("load") or (9.0,) * 3)
    again = monitor.read()
    assert calls == [] and again == {"load_average": first["load_average"], "other_cpu": None}
    monitor._since = (time.monotonic() - MachineMonitor.MIN_INTERVAL_S - 0.01, *monitor._since[1:])
    assert monitor.read()["load_average"] == 9.0 and calls == ["stat", "load"]
