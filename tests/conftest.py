"""Shared fixtures (where the real data beside the project lives), and the `gpu` marker: a test
that needs a CUDA device is skipped, saying so, where there is none (whatever `-m` selects)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]


def shared_data_dir() -> Path:
    """$PACEBENCH_DATA (the Makefile sets it), else ../shared/data beside the checkout."""
    env = os.environ.get("PACEBENCH_DATA")
    return Path(env) if env else REPO_ROOT.parent / "shared" / "data"


def pytest_collection_modifyitems(config, items) -> None:
    gpu = [item for item in items if "gpu" in item.keywords]
    if not gpu:
        return
    import torch

    if not torch.cuda.is_available():
        skip = pytest.mark.skip(reason="needs a CUDA device; this machine has none")
        for item in gpu:
            item.add_marker(skip)


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


class ImportedStore:
    """A store imported from AlgoPerf logs, with the import's report and how long it took."""

    def __init__(self, path: Path, report, seconds: float) -> None:
        self.path, self.report, self.seconds = path, report, seconds


@pytest.fixture(scope="session")
def algoperf_v05(shared_data, tmp_path_factory) -> ImportedStore:
    """The real AlgoPerf v0.5 external-tuning logs (3,700 runs), imported once per session.
    Tests only read it (a test that must write copies it first)."""
    import tarfile
    import time

    from workbench.importers.algoperf import import_algoperf

    root = tmp_path_factory.mktemp("algoperf_v05")
    with tarfile.open(shared_data / "algoperf" / "algoperf_v05_external_tuning_logs.tar.xz") as tar:
        tar.extractall(root / "logs", filter="data")
    start = time.perf_counter()
    report = import_algoperf(root / "logs", root / "store",
                             shared_data / "algoperf" / "workload_targets_v05.json")
    return ImportedStore(root / "store", report, time.perf_counter() - start)
