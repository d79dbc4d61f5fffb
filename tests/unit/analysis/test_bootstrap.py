"""The study bootstrap's exact median distribution against brute force."""
from __future__ import annotations

import itertools
from collections import defaultdict

import numpy as np
import pytest

from workbench.bootstrap import median_distribution


@pytest.mark.parametrize("values", [[3.0, 1.0, 2.0], [5.0, 5.0, 1.0, 9.0], [4.0, 1.5, 2.0, 8.0, 3.0]])
def test_exact_median_distribution_is_every_ordered_resample_counted(values):
    n = len(values)
    counts: dict[float, int] = defaultdict(int)
    for draw in itertools.product(values, repeat=n):  # every ordered resample, equally likely
        counts[float(np.median(draw))] += 1
    support, probs = median_distribution(np.array(values))
    assert support.tolist() == sorted(counts)
    assert probs == pytest.approx([counts[m] / n ** n for m in sorted(counts)], rel=1e-12)
    assert probs.sum() == pytest.approx(1.0, abs=1e-15)


def test_too_many_multisets_are_not_listed():
    assert median_distribution(np.arange(11.0)) is None
