"""What a run ran on: versions, device, CPU model, threads and the code's git revision."""
from __future__ import annotations

import os
import platform
import socket
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # torch is imported where a device is at hand: the launcher reads cpu_model
    import torch   # without paying for torch's import (runners/launch/resume.py)

__all__ = ["capture_environment", "hardware_string", "device_class", "cpu_model", "git_sha"]

REPO_ROOT = Path(__file__).resolve().parents[2]


def cpu_model() -> str:
    """The CPU's marketing name from /proc/cpuinfo (Linux), else platform.processor()."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def git_sha(repo: Path = REPO_ROOT) -> str | None:
    """The checked-out commit of the Pacebench code (with '-dirty' when it has local changes)."""
    try:
        sha = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True,
                             text=True, timeout=5).stdout.strip()
        if not sha:
            return None
        dirty = subprocess.run(["git", "-C", str(repo), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=5).stdout.strip()
        return sha + ("-dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return None


def hardware_string(device: torch.device, threads: int) -> str:
    """A short key for the hardware a run's time was measured on (price tables key on it)."""
    if device.type == "cuda":
        import torch
        return f"{torch.cuda.get_device_name(device)} x1"
    return f"cpu: {cpu_model()} ({threads} thread{'s' if threads != 1 else ''})"


def device_class(device: torch.device) -> str:
    """The class of machine a device is (a reuse key's part; runners/launch/resume.py hardware_class
    reads the same from a run's environment): a GPU's name, else "cpu: <model>"."""
    if device.type == "cuda":
        import torch
        return torch.cuda.get_device_name(device)
    return f"cpu: {cpu_model()}"


def capture_environment(device: torch.device, threads: int) -> dict[str, Any]:
    """Everything needed to say where a number was measured."""
    import torch

    env = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "numpy": __import__("numpy").__version__,
        "platform": platform.platform(),
        "host": socket.gethostname(),
        "device": str(device),
        "cpu": cpu_model(),
        "cpu_count": os.cpu_count(),
        "threads": threads,
        "git_sha": git_sha(),
        "executable": sys.executable,
    }
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        env.update(gpu=props.name, gpu_memory_bytes=props.total_memory,
                   cuda=torch.version.cuda)
    return env
