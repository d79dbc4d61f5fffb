"""scikit-learn's bundled 8x8 handwritten digits, with a fixed train/validation/test split."""
from __future__ import annotations

import numpy as np

__all__ = ["SPLIT_SIZES", "SPLIT_SEED", "load_digits_splits"]

SPLIT_SIZES = {"train": 1197, "validation": 300, "test": 300}  # sums to the 1,797 images
SPLIT_SEED = 0  # the permutation is fixed forever; RandomState's stream is frozen by NumPy policy


def load_digits_splits() -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """{split: (images, labels)}: images float32 (n, 1, 8, 8) in [0, 1]; labels int64 (n,).

    Pixel values (0..16 in the source) are divided by 16. The split is a permutation of the 1,797
    images drawn with NumPy's legacy RandomState(0), whose stream NumPy guarantees never to change,
    so every machine and version gets the same images in the same split.
    """
    from sklearn.datasets import load_digits  # local import: sklearn takes ~1 s to import

    bunch = load_digits()
    images = (bunch.images / 16.0).astype(np.float32)[:, None, :, :]  # (1797, 1, 8, 8)
    labels = bunch.target.astype(np.int64)
    order = np.random.RandomState(SPLIT_SEED).permutation(len(labels))
    if len(order) != sum(SPLIT_SIZES.values()):
        raise RuntimeError(f"expected 1,797 digits from scikit-learn, got {len(order)}")
    splits, start = {}, 0
    for name, size in SPLIT_SIZES.items():
        idx = order[start:start + size]
        splits[name] = (images[idx], labels[idx])
        start += size
    return splits
