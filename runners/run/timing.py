"""Clocks that read the time only after the device has finished its queued work.

On a GPU, kernels run asynchronously: reading the host clock without synchronising measures the
launch, not the work. Every reading here synchronises the run's device first (a no-op on CPU).
"""
from __future__ import annotations

import time

import torch

__all__ = ["synchronize", "DeviceClock"]


def synchronize(device: torch.device) -> None:
    """Wait for all queued work on `device` (CUDA and MPS; CPU work is already synchronous)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    elif device.type == "mps":
        torch.mps.synchronize()


class DeviceClock:
    """Monotonic seconds (time.perf_counter) read after synchronising `device`."""

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self._sync = device.type in ("cuda", "mps")

    def now(self) -> float:
        if self._sync:
            synchronize(self.device)
        return time.perf_counter()
