"""MNIST and Fashion-MNIST: the four gzip-compressed IDX files each, verified, cached, split.

Both datasets share one layout: 60,000 training and 10,000 test images, 28x28 grey, 10 classes.
The validation split is a fixed 10% of the official training set (as in Lee et al., ICLR 2021,
research/methods.md B.2); the official test set is the test split.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from runners.data.download import RemoteFiles, fetch_files
from runners.data.idx import read_idx
from runners.data.shakespeare import data_root
from workbench.errors import UserError

__all__ = ["MNIST", "FASHION_MNIST", "MNIST_LIKE", "VALIDATION_FRACTION", "SPLIT_SEED",
           "load_mnist_like_splits"]

TRAIN_IMAGES, TRAIN_LABELS = "train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"
TEST_IMAGES, TEST_LABELS = "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"

# sha256 of the official files (datasets/mnist.md and datasets/fashion_mnist.md give the sources)
MNIST = RemoteFiles("mnist", "https://storage.googleapis.com/cvdf-datasets/mnist", {
    TRAIN_IMAGES: "440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609",
    TRAIN_LABELS: "3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c",
    TEST_IMAGES: "8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6",
    TEST_LABELS: "f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6",
})
FASHION_MNIST = RemoteFiles("fashion_mnist",
                            "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com", {
    TRAIN_IMAGES: "08dc20ab1689590a0bcd66e874647b6ee8464e2d501b5a3f1f78831db19a3fdc",
    TRAIN_LABELS: "b0197879cbda89f3dc7b894f9fd52b858e68ea4182b6947c9d8c2b67e5f18dcc",
    TEST_IMAGES: "78dcbbfb5a27efaf1b6c1d616caca68560be8766c5bffcb2791df9273a534229",
    TEST_LABELS: "42bd18137a62d5998cdeae52bf3a0676ac6b706f5cf8439b47bb5b151ae3dccf",
})
MNIST_LIKE = {"mnist": MNIST, "fashion_mnist": FASHION_MNIST}
VALIDATION_FRACTION = 0.1  # of the official training set, held out as the validation split
SPLIT_SEED = 0             # NumPy's legacy RandomState stream, frozen by NumPy policy


def _images_and_labels(images: Path, labels: Path) -> tuple[np.ndarray, np.ndarray]:
    """float32 (n, 1, 28, 28) in [0, 1] and int64 (n,), checked against each other."""
    x, y = read_idx(images), read_idx(labels)
    if x.ndim != 3 or y.ndim != 1 or len(x) != len(y) or x.dtype != np.uint8:
        raise UserError(f"{images.name} / {labels.name}: expected uint8 images (n, rows, cols) "
                        f"and n labels, got {x.dtype} {x.shape} and {y.shape}")
    if len(y) and not 0 <= y.min() <= y.max() <= 9:
        raise UserError(f"{labels.name}: labels must be 0..9, got {y.min()}..{y.max()}")
    return (x.astype(np.float32) / 255.0)[:, None], y.astype(np.int64)


def load_mnist_like_splits(dataset: str, data_dir: str | Path | None = None,
                           files: RemoteFiles | None = None,
                           ) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """{split: (images, labels)} for "mnist" or "fashion_mnist", downloading missing files.

    Images float32 (n, 1, 28, 28) in [0, 1], labels int64. "validation" is the last 10% of a
    permutation of the official training set drawn with RandomState(0); "train" the other 90%;
    "test" the official test set. `files` replaces the official mirror (tests).
    """
    if dataset not in MNIST_LIKE:
        raise UserError(f"unknown dataset {dataset!r}: valid are {', '.join(MNIST_LIKE)}")
    paths = fetch_files(files or MNIST_LIKE[dataset], data_root(data_dir))
    x, y = _images_and_labels(paths[TRAIN_IMAGES], paths[TRAIN_LABELS])
    order = np.random.RandomState(SPLIT_SEED).permutation(len(y))
    n_val = int(round(len(y) * VALIDATION_FRACTION))
    train, val = order[:len(y) - n_val], order[len(y) - n_val:]
    return {"train": (x[train], y[train]), "validation": (x[val], y[val]),
            "test": _images_and_labels(paths[TEST_IMAGES], paths[TEST_LABELS])}
