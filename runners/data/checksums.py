"""A dataset's checksum: one hash that changes whenever the data a workload trains on could.

For a downloaded dataset it hashes the sha256 of its files (every download is verified against
them, so the bytes a run reads are these) with the split's parameters; for a generated one the
generator's parameters and its package's version; for scikit-learn's digits the bundled file
itself. A run's reuse key (runners/launch/reuse.py) holds it, so a run made on other data is never
reused. Nothing is read at import time; each dataset's checksum is computed once per process.
"""
from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import importlib.util
import json
from pathlib import Path
from typing import Any

from workbench.digest import file_sha256

__all__ = ["dataset_checksum"]


def _digits() -> dict[str, Any]:
    from runners.data import digits

    found = importlib.util.find_spec("sklearn")  # its folder, without importing it (~1 s)
    origin = Path(found.origin).parent if found and found.origin else None
    bundled = origin / "datasets" / "data" / "digits.csv.gz" if origin else None
    sha = file_sha256(bundled) if bundled and bundled.is_file() else None
    return {"file": sha, "split": digits.SPLIT_SIZES, "split_seed": digits.SPLIT_SEED}


def _mnist1d() -> dict[str, Any]:
    from runners.data import mnist1d

    try:
        version = importlib.metadata.version("mnist1d")
    except importlib.metadata.PackageNotFoundError:
        version = None
    return {"generation": mnist1d.GENERATION, "split": mnist1d.SPLIT_SIZES, "package": version}


def _downloaded(name: str) -> dict[str, Any] | None:
    from runners.data import cifar10, mnist, shakespeare

    files = {**mnist.MNIST_LIKE, "cifar10": cifar10.CIFAR10}
    if name in files:
        module = cifar10 if name == "cifar10" else mnist
        return {"files": dict(files[name].sha256), "validation_fraction":
                module.VALIDATION_FRACTION, "split_seed": module.SPLIT_SEED}
    if name == "tinyshakespeare":
        return {"files": {"input.txt": shakespeare.TINYSHAKESPEARE_SHA256}}
    return None


@functools.cache
def dataset_checksum(name: str) -> str:
    """The checksum (hex sha256) of the data that catalog dataset `name` stands for (see the
    module doc). A dataset this module does not know (a plug-in workload's own, `synthetic`) is
    hashed by its name: its code, which makes it, is in the reuse key through its source hash."""
    if name == "digits":
        facts = _digits()
    elif name == "mnist1d":
        facts = _mnist1d()
    else:
        facts = _downloaded(name) or {}
    text = json.dumps({"dataset": name, **facts}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()
