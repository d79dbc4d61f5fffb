"""How fast the machine is while a run trains: a fixed probe, the load, and other processes' CPU.

A time to target is only comparable with another if both were measured on a machine of the same
speed. On a shared machine that speed drifts (other jobs start and stop), and nothing in a run's
training time says so. So every run records, off its clock:

- `probe_seconds`: the time of a constant micro-benchmark (PROBE: the same matrix products and
  element-wise work on the run's device and thread count, whatever the workload), timed before
  the clock starts and again after the run ends; the run table keeps their mean. The same
  machine in the same state gives the same probe time, so two runs' probes compare the
  machine's speed at their times, not the algorithms.
- a reading at the start, at every eval and at the end: the 1-minute load average and the CPU
  time other processes used per wall second since the previous reading (cores; the whole
  machine's busy time in /proc/stat minus this process's own), so that a slow stretch of a
  curve can be traced to a neighbour. Platforms without /proc read as null.

workbench.compare warns when two algorithms' probes differ by more than a workload's noise floor.
"""
from __future__ import annotations

import os
import time
from typing import Any

import torch

from runners.run.timing import synchronize

__all__ = ["PROBE", "probe_seconds", "MachineMonitor"]

PROBE = ("8 x (a 192x192 float32 matrix product, then tanh) on the run's device and threads; "
         "mean of 5 repetitions after one warm-up")
_SIZE, _PRODUCTS, _REPEATS = 192, 8, 5


def probe_seconds(device: torch.device) -> float:
    """Seconds one repetition of PROBE takes now (mean of the repetitions). Larger when others
    share the device: on one thread of this project's 2-core CPU machine 2.1 ms unloaded and
    3.6 to 4.6 ms beside two busy processes (`python -c "while True: pass"`)."""
    gen = torch.Generator().manual_seed(0)  # the same numbers every time (denormals cost time)
    a = torch.rand(_SIZE, _SIZE, generator=gen).to(device)
    b = torch.rand(_SIZE, _SIZE, generator=gen).to(device) / _SIZE

    def once() -> torch.Tensor:
        x = a
        for _ in range(_PRODUCTS):
            x = torch.tanh(x @ b)
        return x

    with torch.no_grad():
        once()  # warm-up: allocator, kernels, caches
        synchronize(device)
        start = time.perf_counter()
        for _ in range(_REPEATS):
            once()
        synchronize(device)
        return (time.perf_counter() - start) / _REPEATS


def _busy_cpu_seconds() -> float | None:
    """CPU seconds the whole machine has been busy since boot (every core), or None."""
    try:
        with open("/proc/stat", "rb") as f:
            fields = f.readline().split()
    except OSError:
        return None
    if not fields or fields[0] != b"cpu":
        return None
    # user nice system idle iowait irq softirq steal (guest is counted inside user)
    ticks = [int(x) for x in fields[1:9]]
    busy = sum(ticks) - ticks[3] - ticks[4]
    return busy / os.sysconf("SC_CLK_TCK")


def _own_cpu_seconds() -> float:
    """CPU seconds used by this process (every thread) and its waited-for children."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


class MachineMonitor:
    """Readings of the machine's load for one run: `read()` returns
    {"load_average", "other_cpu"} (MACHINE_COLUMNS of workbench/records.py); `other_cpu` covers
    the time since the last reading that had one, and is None (the interval carried into the
    next reading) when that is shorter than MIN_INTERVAL_S: /proc/stat counts in 10 ms ticks.
    A value a platform does not give is None.

    A reading within MIN_INTERVAL_S of the last full one reads no file: it repeats that
    reading's load average (the kernel recomputes it only every 5 s) with other_cpu None. A
    run reads at every eval, and on the built-in CPU workloads evals come every few
    milliseconds of training; opening /proc/stat and /proc/loadavg at each of them was work
    between two clocked intervals for no new figure."""

    MIN_INTERVAL_S = 0.2

    def __init__(self) -> None:
        self._since = self._counters()
        self._load: float | None = None
        self._loaded = False  # whether _load holds a reading yet

    @staticmethod
    def _counters() -> tuple[float, float | None, float]:
        return time.monotonic(), _busy_cpu_seconds(), _own_cpu_seconds()

    def read(self) -> dict[str, float | None]:
        if self._loaded and time.monotonic() - self._since[0] < self.MIN_INTERVAL_S:
            return {"load_average": self._load, "other_cpu": None}
        now = self._counters()
        (t0, busy0, own0), (t1, busy1, own1) = self._since, now
        other = None
        if busy0 is not None and busy1 is not None and t1 - t0 >= self.MIN_INTERVAL_S:
            other = round(max(0.0, ((busy1 - busy0) - (own1 - own0)) / (t1 - t0)), 3)
            self._since = now
        try:
            self._load = os.getloadavg()[0]
        except OSError:
            self._load = None
        self._loaded = True
        return {"load_average": self._load, "other_cpu": other}

    def reading(self, device: torch.device) -> dict[str, Any]:
        """A reading with the probe's time now: the machine's state at a run's start or end."""
        probe = probe_seconds(device)
        return {"probe_seconds": probe, **self.read()}
