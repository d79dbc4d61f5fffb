"""GPU energy of a run from NVML (nvidia-ml-py), or a clear "not recorded" when it cannot be had.

Two NVML sources, best first: the device's total-energy counter (millijoules since the driver
loaded; Volta and newer), read at the start and end; else power samples (milliwatts) taken every
`interval` seconds by a background thread and integrated with the trapezoid rule. Without the
bindings, the NVML library, or a CUDA device, nothing is measured and the reason is recorded.
Energy covers the run from the clock's start to its end (evals included), for the whole GPU
(other processes on it included).
"""
from __future__ import annotations

import threading
import time
from typing import Any

import torch

__all__ = ["EnergyMeter", "trapezoid_joules"]

SAMPLE_INTERVAL_S = 0.1  # between power samples when there is no energy counter


def trapezoid_joules(samples: list[tuple[float, float]]) -> float:
    """Energy in joules of (seconds, watts) samples in time order, by the trapezoid rule."""
    return sum((t1 - t0) * (w0 + w1) / 2 for (t0, w0), (t1, w1) in zip(samples, samples[1:]))


class EnergyMeter:
    """start() at the clock's start, stop() at the end; `summary()` gives the run's fields."""

    def __init__(self, device: torch.device, interval: float = SAMPLE_INTERVAL_S,
                 nvml: Any = None) -> None:
        """`nvml`: the pynvml module (tests pass a fake); by default it is imported here."""
        self.interval = interval
        self.reason: str | None = None
        self._nvml, self._handle, self._counter = None, None, False
        self._samples: list[tuple[float, float]] = []
        self._start_mj = self._end_mj = None
        self._t0 = self._t1 = None
        self._thread: threading.Thread | None = None
        self._done = threading.Event()
        if device.type != "cuda":
            self.reason = f"not recorded: the run's device is {device.type}, NVML measures GPUs only"
            return
        try:
            nvml = nvml or __import__("pynvml")
            nvml.nvmlInit()
            index = device.index if device.index is not None else torch.cuda.current_device()
            self._handle = nvml.nvmlDeviceGetHandleByIndex(index)
            self._nvml = nvml
        except Exception as err:  # ImportError, NVMLError_LibraryNotFound, ...: say which
            self.reason = f"not recorded: NVML unavailable ({type(err).__name__}: {err})"
            return
        try:
            nvml.nvmlDeviceGetTotalEnergyConsumption(self._handle)
            self._counter = True
        except Exception:
            self._counter = False  # pre-Volta, or not supported: sample the power instead

    def start(self) -> None:
        if self._nvml is None:
            return
        self._t0 = time.perf_counter()
        if self._counter:
            self._start_mj = self._nvml.nvmlDeviceGetTotalEnergyConsumption(self._handle)
        else:
            self._thread = threading.Thread(target=self._sample, daemon=True)
            self._thread.start()

    def _sample(self) -> None:
        while True:
            watts = self._nvml.nvmlDeviceGetPowerUsage(self._handle) / 1000.0
            self._samples.append((time.perf_counter(), watts))
            if self._done.wait(self.interval):
                break

    def stop(self) -> None:
        if self._nvml is None or self._t0 is None or self._t1 is not None:
            return
        if self._counter:
            self._end_mj = self._nvml.nvmlDeviceGetTotalEnergyConsumption(self._handle)
        else:
            self._done.set()
            self._thread.join()
        self._t1 = time.perf_counter()

    def summary(self) -> dict[str, Any]:
        """{"energy_joules", "mean_power_watts", "energy_source"} (the first two None if unknown)."""
        if self._nvml is None or self._t1 is None:
            return {"energy_joules": None, "mean_power_watts": None,
                    "energy_source": self.reason or "not recorded: the meter was not started"}
        seconds = self._t1 - self._t0
        if self._counter:
            joules = (self._end_mj - self._start_mj) / 1000.0
            source = "NVML total energy counter (nvmlDeviceGetTotalEnergyConsumption)"
        elif len(self._samples) >= 2:
            joules = trapezoid_joules(self._samples)
            seconds = self._samples[-1][0] - self._samples[0][0]
            source = (f"NVML power samples (nvmlDeviceGetPowerUsage), {len(self._samples)} "
                      f"every {self.interval:g} s, trapezoid rule")
        else:
            return {"energy_joules": None, "mean_power_watts": None,
                    "energy_source": "not recorded: the run was shorter than two power samples"}
        return {"energy_joules": joules, "mean_power_watts": joules / seconds if seconds > 0 else None,
                "energy_source": source}
