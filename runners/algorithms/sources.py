"""Algorithms from anywhere: what `--algorithms` takes, resolved to a class and a recorded source.

    adamw                           a built-in (runners.algorithms.ALGORITHMS)
    path/to/my_algo.py:MyAlgo       a class in a file: an Algorithm (runners/api.py), or a
                                    torch.optim.Optimizer, which Pacebench wraps (below)
    my_pkg.module:MyAlgo            the same from an importable module, e.g. torch.optim:RAdam
    algoperf:path/to/submission.py  an AlgoPerf-API submission (runners/algoperf/adapter.py)
    lion                            an installed plug-in: an entry point of the group
                                    `pacebench.algorithms` (runners/plugins.py)
    lion=path/to/lion.py:Lion       any of them under a display name

The display name is what tables and legends show (default: the built-in's name, the class name,
or for a submission its folder's name); the source (the spec with an absolute path, and the
file's sha256) travels with every run (RunConfig.algorithm_source, algorithm_sha256) into its run
document, so a result traces to its code, and a file changed since the study was planned is
refused rather than run under the old identity.

A torch optimizer is wrapped by the rules of runners/algorithms/wrapper.py (what its
constructor gets from learning_rate, one_minus_beta1, beta2, weight_decay; parameter groups;
schedule-free classes; warmup and schedule). The search space a study draws its trials from
(choose_search_space) is, in this order: the class's `search_space` dict ("declared"), a JSON
file that its `search_space` names beside its file or <file stem>.json beside the file
("file"), else, for an optimizer, one derived from its constructor's defaults ("signature":
learning rate log-uniform over [default / 10, default x 10], 1 - beta1 log-uniform over
[0.01, 0.3] where the class has betas or a momentum on by default, weight decay log-uniform
over [1e-4, 0.3], the rest fixed at their defaults). The origin is recorded in each run's
document (runners/tuning.py ChosenSpace).
"""
from __future__ import annotations

import inspect
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

import torch

from runners.algorithms.base import OptimizerAlgorithm
from runners.algorithms.wrapper import derived_search_space, wrap_optimizer
from runners.api import Algorithm
from runners.plugins import (ALGORITHM_GROUP, PluginError, entry_points, import_object,
                             is_file_spec, named_item)
from runners.tuning import ChosenSpace
from workbench.digest import file_sha256

__all__ = ["AlgorithmSource", "parse_algorithm", "parse_algorithms", "load_class", "SourceError",
           "wrap_optimizer", "derived_search_space", "choose_search_space", "search_space_of",
           "describe"]

_NAME = re.compile(r"[A-Za-z0-9_.-]{1,80}")


class SourceError(PluginError):
    """An algorithm spec that cannot be resolved: its one line says what is valid."""


@dataclass(frozen=True)
class AlgorithmSource:
    """One algorithm of a study: its display name and where its code comes from."""

    name: str                 # what tables and legends show
    spec: str                 # how to load it ("adamw", "/abs/x.py:Cls", "pkg.mod:Cls", ...)
    kind: str                 # "builtin" | "file" | "module" | "plugin" | "algoperf"
    sha256: str | None = None  # of the file, for "file" and "algoperf"

    @property
    def loaded_by_name(self) -> bool:
        """Whether the name alone loads it (a built-in under its own name): nothing to record."""
        return self.kind == "builtin" and self.name == self.spec


def _check_name(name: str, text: str) -> str:
    if not _NAME.fullmatch(name):
        raise SourceError(f"algorithm name {name!r} (in {text!r}) must be 1 to 80 letters, "
                          "digits, '_', '.' or '-' (a path holding '=' is read whole when the "
                          "file exists; else give it as NAME=<path>)")
    return name


def parse_algorithm(text: str, builtins: Iterable[str]) -> AlgorithmSource:
    """The AlgorithmSource of one `--algorithms` item (see the module doc); `builtins`: the
    built-in names (runners.algorithms.algorithm_names())."""
    from runners.algoperf.adapter import ALGOPERF_PREFIX, algorithm_name, submission_path

    known = list(builtins)

    name, spec = named_item(text)
    spec = spec.strip()
    if spec in known:
        return AlgorithmSource(_check_name(name or spec, text), spec, "builtin")
    installed = entry_points(ALGORITHM_GROUP)
    if spec in installed:
        return AlgorithmSource(_check_name(name or spec, text), installed[spec], "plugin")
    if spec.startswith(ALGOPERF_PREFIX):
        path = submission_path(algorithm_name(spec[len(ALGOPERF_PREFIX):]))
        if not path.is_file():
            raise SourceError(f"AlgoPerf submission file not found: {path}")
        return AlgorithmSource(_check_name(name or path.parent.name, text),
                               ALGOPERF_PREFIX + str(path), "algoperf", file_sha256(path))
    where, sep, cls = spec.rpartition(":")
    if not sep or not cls.isidentifier():
        raise SourceError(
            f"unknown algorithm {text!r}: give a built-in ({', '.join(known)}), an installed "
            f"plug-in ({', '.join(installed) or 'none installed'}), path/to/file.py:Class, "
            "package.module:Class (e.g. torch.optim:RAdam) or algoperf:path/to/submission.py, "
            "optionally as name=<any of those>")
    if is_file_spec(where):
        path = Path(where).expanduser().resolve()
        if not path.is_file():
            raise SourceError(f"algorithm file not found: {path} (in {text!r})")
        return AlgorithmSource(_check_name(name or cls, text), f"{path}:{cls}", "file",
                               file_sha256(path))
    if not all(part.isidentifier() for part in where.split(".")):
        raise SourceError(f"{where!r} (in {text!r}) is neither a .py file nor a module path")
    return AlgorithmSource(_check_name(name or cls, text), spec, "module")


def parse_algorithms(items: Iterable[str], builtins: Iterable[str]) -> dict[str, AlgorithmSource]:
    """{display name: AlgorithmSource} of `--algorithms` items, in order; two different sources
    under one name are refused."""
    sources: dict[str, AlgorithmSource] = {}
    builtins = list(builtins)
    for text in items:
        source = parse_algorithm(text, builtins)
        if source.name in sources and sources[source.name] != source:
            raise SourceError(f"two algorithms are named {source.name!r}: "
                              f"{describe(sources[source.name])} and {describe(source)}; name "
                              "one of them (other=<spec>)")
        sources[source.name] = source
    return sources


def load_class(spec: str, sha256: str | None = None) -> type[Algorithm]:
    """The Algorithm class that `spec` (an AlgorithmSource.spec of kind file, module or plugin)
    names, a torch optimizer wrapped; `sha256`: the file's hash when the study was planned."""
    try:
        found = import_object(spec, sha256)
    except PluginError as err:
        raise SourceError(str(err)) from None
    where, _, cls_name = spec.rpartition(":")
    if not inspect.isclass(found):
        raise SourceError(f"{where} has no class {cls_name!r}")
    if issubclass(found, torch.optim.Optimizer):
        return wrap_optimizer(found)
    if issubclass(found, Algorithm):
        return found
    raise SourceError(f"{spec}: {cls_name} is neither a Pacebench Algorithm (runners.api."
                      "Algorithm: init and update) nor a torch.optim.Optimizer")


def choose_search_space(source: AlgorithmSource) -> ChosenSpace:
    """The search space of a file, module or plug-in algorithm, with its origin: its class's
    `search_space` dict ("declared"); a JSON file its `search_space` names beside its file, or
    <file stem>.json beside the file ("file"); else, for an optimizer, derived ("signature")."""
    cls = load_class(source.spec, source.sha256)
    own = getattr(cls, "search_space", "")
    file = Path(source.spec.rpartition(":")[0]) if source.kind == "file" else None
    if isinstance(own, Mapping) and own:
        return ChosenSpace(dict(own), "declared")
    if isinstance(own, str) and own and file is not None and (file.parent / own).is_file():
        return ChosenSpace.from_file(file.parent / own)
    if file is not None and file.with_suffix(".json").is_file():
        return ChosenSpace.from_file(file.with_suffix(".json"))
    if issubclass(cls, OptimizerAlgorithm):
        return ChosenSpace(derived_search_space(cls), "signature")
    raise SourceError(f"no search space for {source.name} ({source.spec}): give the class a "
                      "search_space (a dict in AlgoPerf's format), put "
                      f"{Path(source.spec.rpartition(':')[0]).stem}.json beside its file, or "
                      "pass --search-space")


def search_space_of(source: AlgorithmSource) -> dict[str, Any] | Path:
    """choose_search_space's space: the file's path for a file, else the space itself."""
    chosen = choose_search_space(source)
    return Path(chosen.file) if chosen.file else dict(chosen.space)


def describe(source: AlgorithmSource) -> str:
    """One line for `pacebench list` and messages: name, kind and where from."""
    where = {"builtin": "built in", "algoperf": "AlgoPerf submission", "file": "file",
             "module": "module", "plugin": "installed plug-in"}[source.kind]
    sha = f", sha256 {source.sha256[:12]}" if source.sha256 else ""
    return f"{source.name}: {where} {source.spec}{sha}"

