"""Baseline training algorithms: a plain registry of names to classes, with their search spaces."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from runners.algorithms.adamw import AdamW
from runners.algorithms.base import HparamError, OptimizerAlgorithm
from runners.algorithms.heavy_ball import HeavyBall
from runners.algorithms.nadamw import NAdamW, NAdamWOptimizer
from runners.algorithms.sgd_nesterov import SGDNesterov
from runners.algoperf.adapter import ALGOPERF_PREFIX, AlgoPerfAlgorithm, submission_path
from runners.api import Algorithm
from workbench.errors import UnknownNameError

__all__ = ["ALGORITHMS", "get_algorithm", "algorithm_names", "search_space_path",
           "HparamError", "OptimizerAlgorithm", "NAdamWOptimizer"]

ALGORITHMS: dict[str, type[Algorithm]] = {
    cls.name: cls for cls in (AdamW, NAdamW, SGDNesterov, HeavyBall)
}


def _algorithm_class(name: str) -> type[Algorithm]:
    try:
        return ALGORITHMS[name]
    except KeyError:
        raise UnknownNameError(f"unknown algorithm {name!r}: known are "
                               f"{', '.join(ALGORITHMS)}") from None


def get_algorithm(name: str, hparams: Mapping[str, Any] | None = None,
                  source: str | None = None, sha256: str | None = None) -> Algorithm:
    """Algorithm `name` with `hparams`; missing ones take the class defaults, unknown ones raise.

    `source` (RunConfig.algorithm_source) loads it when its name does not: a built-in's name, a
    file or module class ("path.py:Class", "pkg.mod:Class"; runners/algorithms/sources.py,
    checked against the file's `sha256`) or "algoperf:<path>". A name "algoperf:<path>" without
    a source is an AlgoPerf submission file, run by runners.algoperf.adapter.
    """
    spec = source or name
    if spec.startswith(ALGOPERF_PREFIX):
        return AlgoPerfAlgorithm.from_name(spec, hparams)
    if spec in ALGORITHMS:
        return ALGORITHMS[spec](hparams or {})
    if ":" in spec:
        from runners.algorithms.sources import load_class
        return load_class(spec, sha256)(hparams or {})
    return _algorithm_class(spec)(hparams or {})


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
