"""Baseline training algorithms: a plain registry of names to classes, with their search spaces."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from runners.algorithms.adamw import AdamW
from runners.algorithms.base import HparamError, OptimizerAlgorithm
from runners.algorithms.heavy_ball import HeavyBall
from runners.algorithms.nadamw import NAdamW, NAdamWOptimizer
from runners.algorithms.sgd_nesterov import SGDNesterov
from runners.algoperf import ALGOPERF_PREFIX, AlgoPerfAlgorithm, submission_path
from runners.api import Algorithm

__all__ = ["ALGORITHMS", "get_algorithm", "algorithm_names", "search_space_path",
           "HparamError", "OptimizerAlgorithm", "NAdamWOptimizer"]

ALGORITHMS: dict[str, type[Algorithm]] = {
    cls.name: cls for cls in (AdamW, NAdamW, SGDNesterov, HeavyBall)
}


def _algorithm_class(name: str) -> type[Algorithm]:
    try:
        return ALGORITHMS[name]
    except KeyError:
        raise KeyError(f"unknown algorithm {name!r}: known are {', '.join(ALGORITHMS)}") from None


def get_algorithm(name: str, hparams: Mapping[str, Any] | None = None) -> Algorithm:
    """Algorithm `name` with `hparams`; missing ones take the class defaults, unknown ones raise.

    A name "algoperf:<path>" is an AlgoPerf submission file, run by runners.algoperf.
    """
    if name.startswith(ALGOPERF_PREFIX):
        return AlgoPerfAlgorithm.from_name(name, hparams)
    return _algorithm_class(name)(hparams or {})


def algorithm_names() -> list[str]:
    return list(ALGORITHMS)


def search_space_path(name: str) -> Path:
    """The AlgoPerf-format JSON search space shipped for algorithm `name`.

    For a submission "algoperf:<path>" it is AlgoPerf's convention: tuning_search_space.json in the
    submission's folder.
    """
    if name.startswith(ALGOPERF_PREFIX):
        path = submission_path(name).parent / "tuning_search_space.json"
        if not path.is_file():
            raise FileNotFoundError(f"no search space for {name}: {path} does not exist; pass "
                                    "--tuning-search-space path.json")
        return path
    return Path(__file__).resolve().parent / _algorithm_class(name).search_space
