"""CIFAR-10 from the "python version" tarball: read without extracting, without running pickles.

The tarball holds `cifar-10-batches-py/data_batch_1..5` (10,000 training images each) and
`test_batch` (10,000), each a Python pickle of a dict with b"data" (uint8 (n, 3072): 1,024 red,
then green, then blue values of a 32x32 image, row-major) and b"labels" (n ints 0..9). Pickles can
run code when loaded, so a restricted unpickler accepts only the few NumPy globals an array needs.
The validation split is a fixed 10% of the official training set; "test" is the official test set.
"""
from __future__ import annotations

import io
import pickle
import tarfile
from pathlib import Path

import numpy as np

from runners.data.download import RemoteFiles, fetch_files
from runners.data.shakespeare import data_root
from workbench.errors import UserError

__all__ = ["CIFAR10", "TARBALL", "read_cifar10_tarball", "load_cifar10_splits"]

TARBALL = "cifar-10-python.tar.gz"
CIFAR10 = RemoteFiles("cifar10", "https://www.cs.toronto.edu/~kriz", {
    TARBALL: "6d958be074577803d12ecdefd02955f39262c83c16fe9348329d7fe0b5c001ce",
})
TRAIN_MEMBERS = tuple(f"cifar-10-batches-py/data_batch_{i}" for i in range(1, 6))
TEST_MEMBER = "cifar-10-batches-py/test_batch"
VALIDATION_FRACTION = 0.1
SPLIT_SEED = 0

# (module, name) an array pickle may name; NumPy 2 moved numpy.core to numpy._core
_ALLOWED = {("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
            ("numpy", "ndarray"), ("numpy", "dtype"), ("_codecs", "encode")}


class _ArrayUnpickler(pickle.Unpickler):
    """Unpickles dicts, lists, bytes, numbers and NumPy arrays; refuses any other global."""

    def find_class(self, module: str, name: str):
        if (module, name) not in _ALLOWED:
            raise pickle.UnpicklingError(f"CIFAR-10 batch names {module}.{name}: only NumPy arrays "
                                         "are expected; refusing to load it")
        if module == "numpy.core.multiarray":
            module = "numpy._core.multiarray"
        return super().find_class(module, name)


def _batch(tar: tarfile.TarFile, member: str) -> tuple[np.ndarray, np.ndarray]:
    """uint8 images (n, 3, 32, 32) and int64 labels (n,) of one pickled batch in `tar`."""
    try:
        raw = tar.extractfile(member)
    except KeyError:
        raise UserError(f"{tar.name} has no {member}: not the CIFAR-10 python tarball") from None
    try:
        d = _ArrayUnpickler(io.BytesIO(raw.read()), encoding="bytes").load()
        data = np.asarray(d[b"data"], dtype=np.uint8)
        labels = np.asarray(d[b"labels"], dtype=np.int64)
    except (pickle.UnpicklingError, EOFError, KeyError, TypeError, ValueError) as err:
        raise UserError(f"{tar.name}: {member} is not a CIFAR-10 batch ({type(err).__name__}: "
                        f"{str(err)[:120]}); give the CIFAR-10 python tarball") from None
    if data.ndim != 2 or data.shape[1] != 3 * 32 * 32 or len(labels) != len(data):
        raise UserError(f"{member}: expected data (n, 3072) and n labels, got {data.shape} and "
                        f"{labels.shape}")
    return data.reshape(-1, 3, 32, 32), labels


def read_cifar10_tarball(path: str | Path) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """{"train": 5 batches concatenated, "test": the test batch}: uint8 (n, 3, 32, 32), int64."""
    try:
        with tarfile.open(path, "r:gz") as tar:
            parts = [_batch(tar, m) for m in TRAIN_MEMBERS]
            test = _batch(tar, TEST_MEMBER)
    except (tarfile.TarError, EOFError) as err:  # e.g. a file copied by hand that is not it
        raise UserError(f"{path}: not the CIFAR-10 python tarball ({type(err).__name__}: "
                        f"{str(err)[:120]})") from None
    train = (np.concatenate([x for x, _ in parts]), np.concatenate([y for _, y in parts]))
    return {"train": train, "test": test}


def load_cifar10_splits(data_dir: str | Path | None = None, files: RemoteFiles | None = None,
                        ) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """{split: (images, labels)}: float32 (n, 3, 32, 32) standardised per channel, int64 labels.

    Channel means and standard deviations come from the training split itself, so nothing about
    the validation or test images leaks into the input pipeline. `files`: another mirror (tests).
    """
    paths = fetch_files(files or CIFAR10, data_root(data_dir))
    raw = read_cifar10_tarball(paths[TARBALL])
    x, y = raw["train"]
    order = np.random.RandomState(SPLIT_SEED).permutation(len(y))
    n_val = int(round(len(y) * VALIDATION_FRACTION))
    train, val = order[:len(y) - n_val], order[len(y) - n_val:]
    pixels = x[train].astype(np.float32) / 255.0
    mean = pixels.mean(axis=(0, 2, 3), keepdims=True)
    std = pixels.std(axis=(0, 2, 3), keepdims=True)

    def standardise(images: np.ndarray) -> np.ndarray:
        return ((images.astype(np.float32) / 255.0 - mean) / std).astype(np.float32)

    return {"train": ((pixels - mean) / std, y[train]), "validation": (standardise(x[val]), y[val]),
            "test": (standardise(raw["test"][0]), raw["test"][1])}
