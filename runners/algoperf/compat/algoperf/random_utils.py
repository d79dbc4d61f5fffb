"""PRNG keys for the `rng` arguments of the submission API: pairs of uint32, split by hashing.

A key is a numpy array of two uint32. `split` and `fold_in` derive new keys through numpy's
SeedSequence, so the same key always gives the same children.
"""
from __future__ import annotations

from typing import Any

import numpy as np


def PRNGKey(seed: int) -> np.ndarray:  # noqa: N802 - the name submissions call
    """The key for integer `seed`."""
    seed = int(seed) % 2**64
    return np.array([seed >> 32, seed & 0xFFFFFFFF], dtype=np.uint32)


def _entropy(key: Any) -> list[int]:
    return [int(v) for v in np.asarray(key, dtype=np.uint32).ravel()]


def split(key: Any, num: int = 2) -> np.ndarray:
    """`num` new keys, shape (num, 2), derived from `key`."""
    words = np.random.SeedSequence(_entropy(key)).generate_state(2 * num, dtype=np.uint32)
    return words.reshape(num, 2)


def fold_in(key: Any, data: int) -> np.ndarray:
    """A new key from `key` and the integer `data` (e.g. the step)."""
    seq = np.random.SeedSequence(_entropy(key) + [int(data) % 2**32])
    return seq.generate_state(2, dtype=np.uint32)
