"""Shared fixtures: where the real data beside the project lives."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]


def shared_data_dir() -> Path:
    """$PACEBENCH_DATA (the Makefile sets it), else ../shared/data beside the checkout."""
    env = os.environ.get("PACEBENCH_DATA")
    return Path(env) if env else REPO_ROOT.parent / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The real data folder; its absence is a failure (CI always has ../shared beside the clone)."""
    path = shared_data_dir()
    if not (path / "tinyshakespeare" / "input.txt").is_file():
        pytest.fail(f"real data not found at {path}: put ../shared beside the checkout or set "
                    "PACEBENCH_DATA to a folder holding tinyshakespeare/input.txt")
    return path


@pytest.fixture()
def one_thread():
    """One intra-op torch thread: tiny models run faster and tests do not fight over 2 cores."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
