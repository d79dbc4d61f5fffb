"""Small files in the real formats of MNIST, Fashion-MNIST and CIFAR-10, for tests (no network).

The writers follow the published layouts byte for byte: IDX (big-endian header, gzip) and the
CIFAR-10 "python version" tarball (pickled dicts with b"data" uint8 (n, 3072) and b"labels").
Image values are random; labels cycle 0..9 so that every class is present.
"""
from __future__ import annotations

import gzip
import hashlib
import io
import pickle
import struct
import tarfile
from pathlib import Path

import numpy as np

IDX_TYPE_CODES = {np.dtype(np.uint8): 0x08, np.dtype(np.int32): 0x0C, np.dtype(np.float32): 0x0D}


def idx_bytes(array: np.ndarray) -> bytes:
    """IDX encoding of `array` (uint8, int32 or float32), uncompressed."""
    code = IDX_TYPE_CODES[array.dtype]
    header = bytes([0, 0, code, array.ndim]) + struct.pack(f">{array.ndim}I", *array.shape)
    return header + array.astype(array.dtype.newbyteorder(">")).tobytes()


def write_mnist_like(folder: Path, n_train: int = 200, n_test: int = 50, seed: int = 0) -> dict:
    """The four `*-ubyte.gz` files in `folder`; returns {file name: sha256}."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    arrays = {
        "train-images-idx3-ubyte.gz": rng.integers(0, 256, (n_train, 28, 28), dtype=np.uint8),
        "train-labels-idx1-ubyte.gz": (np.arange(n_train) % 10).astype(np.uint8),
        "t10k-images-idx3-ubyte.gz": rng.integers(0, 256, (n_test, 28, 28), dtype=np.uint8),
        "t10k-labels-idx1-ubyte.gz": (np.arange(n_test) % 10).astype(np.uint8),
    }
    sums = {}
    for name, array in arrays.items():
        data = gzip.compress(idx_bytes(array), mtime=0)
        (folder / name).write_bytes(data)
        sums[name] = hashlib.sha256(data).hexdigest()
    return sums


def cifar_batch_pickle(data: np.ndarray, labels: list[int], name: str) -> bytes:
    """One batch as the CIFAR-10 python pickles hold it (protocol 2, bytes keys)."""
    batch = {b"batch_label": name.encode(), b"labels": labels, b"data": data,
             b"filenames": [f"img_{i}.png".encode() for i in range(len(labels))]}
    return pickle.dumps(batch, protocol=2)


def write_cifar10_tarball(path: Path, per_batch: int = 20, n_test: int = 20, seed: int = 0,
                          extra_pickle: bytes | None = None) -> str:
    """The `cifar-10-python.tar.gz` layout at `path`; returns its sha256.

    `extra_pickle` replaces data_batch_1 (tests of the restricted unpickler)."""
    rng = np.random.default_rng(seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    members = {}
    for i in range(1, 6):
        data = rng.integers(0, 256, (per_batch, 3072), dtype=np.uint8)
        members[f"data_batch_{i}"] = cifar_batch_pickle(
            data, [int(v) for v in (np.arange(per_batch) + i) % 10], f"training batch {i} of 5")
    members["test_batch"] = cifar_batch_pickle(
        rng.integers(0, 256, (n_test, 3072), dtype=np.uint8),
        [int(v) for v in np.arange(n_test) % 10], "testing batch 1 of 1")
    members["batches.meta"] = pickle.dumps({b"label_names": [b"airplane"] * 10}, protocol=2)
    if extra_pickle is not None:
        members["data_batch_1"] = extra_pickle
    with tarfile.open(path, "w:gz") as tar:
        for name, blob in members.items():
            info = tarfile.TarInfo(f"cifar-10-batches-py/{name}")
            info.size = len(blob)
            tar.addfile(info, io.BytesIO(blob))
    return hashlib.sha256(path.read_bytes()).hexdigest()
