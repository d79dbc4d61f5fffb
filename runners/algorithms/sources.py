"""Algorithms from anywhere: what `--algorithms` takes, resolved to a class and a recorded source.

    adamw                           a built-in (runners.algorithms.ALGORITHMS)
    path/to/my_algo.py:MyAlgo       a class in a file: an Algorithm (runners/api.py), or a
                                    torch.optim.Optimizer, which Pacebench wraps (below)
    my_pkg.module:MyAlgo            the same from an importable module, e.g. torch.optim:RAdam
    algoperf:path/to/submission.py  an AlgoPerf-API submission (runners/algoperf.py)
    lion                            an installed plug-in: an entry point of the group
                                    `pacebench.algorithms` (runners/plugins.py)
    lion=path/to/lion.py:Lion       any of them under a display name

The display name is what tables and legends show (default: the built-in's name, the class name,
or for a submission its folder's name); the source (the spec with an absolute path, and the
file's sha256) travels with every run (RunConfig.algorithm_source, algorithm_sha256) into its run
document, so a result traces to its code, and a file changed since the study was planned is
refused rather than run under the old identity.

A wrapped torch optimizer takes `learning_rate`, and where its constructor has them
`one_minus_beta1` (betas[0] or momentum = 1 - it), `beta2` and `weight_decay`, plus
`warmup_factor` and `schedule`: linear warmup over warmup_factor x the step hint, then "cosine"
decay to 0 at the step hint (the default), "linear" decay, or "constant". Its search space, unless
one is given: learning rate log-uniform over [default / 10, default x 10], 1 - beta1 log-uniform
over [0.01, 0.3], weight decay log-uniform over [1e-4, 0.3], the rest fixed at their defaults.
An Algorithm class's search space is its `search_space` attribute (a dict in AlgoPerf's format,
or a JSON file name beside its file), else `<file stem>.json` beside the file.
"""
from __future__ import annotations

import inspect
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

import torch

from runners.algorithms.base import OptimizerAlgorithm
from runners.algorithms.schedules import cosine_warmup, linear_warmup_decay, warmup_steps
from runners.api import Algorithm
from runners.plugins import (ALGORITHM_GROUP, PluginError, entry_points, import_object,
                             is_file_spec, sha256_of)

__all__ = ["AlgorithmSource", "parse_algorithm", "parse_algorithms", "load_class", "SourceError",
           "wrap_optimizer", "derived_search_space", "search_space_of", "describe"]

_NAME = re.compile(r"[A-Za-z0-9_.-]{1,80}")
SCHEDULES = ("cosine", "linear", "constant")


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
                          "digits, '_', '.' or '-'")
    return name


def parse_algorithm(text: str, builtins: Iterable[str]) -> AlgorithmSource:
    """The AlgorithmSource of one `--algorithms` item (see the module doc); `builtins`: the
    built-in names (runners.algorithms.algorithm_names())."""
    from runners.algoperf import ALGOPERF_PREFIX, algorithm_name, submission_path

    known = list(builtins)

    name, _, spec = text.partition("=") if "=" in text.split(":")[0] else ("", "", text)
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
                               ALGOPERF_PREFIX + str(path), "algoperf", sha256_of(path))
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
                               sha256_of(path))
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


def _signature_defaults(optimizer: type[torch.optim.Optimizer]) -> dict[str, Any]:
    params = inspect.signature(optimizer.__init__).parameters
    return {k: p.default for k, p in params.items() if k not in ("self", "params")}


def wrap_optimizer(optimizer: type[torch.optim.Optimizer]) -> type[OptimizerAlgorithm]:
    """An OptimizerAlgorithm around a torch optimizer class (see the module doc)."""
    sig = _signature_defaults(optimizer)
    lr = sig.get("lr")
    lr = float(lr) if isinstance(lr, (int, float)) and lr > 0 else 1e-3
    defaults: dict[str, Any] = {"learning_rate": lr}
    betas = sig.get("betas")
    if isinstance(betas, tuple) and len(betas) >= 1:
        defaults["one_minus_beta1"] = 1.0 - float(betas[0])
        if len(betas) > 1:
            defaults["beta2"] = float(betas[1])
    elif "momentum" in sig:
        momentum = sig["momentum"]
        defaults["one_minus_beta1"] = 1.0 - float(momentum) if momentum else 0.1
    if "weight_decay" in sig:
        wd = sig["weight_decay"]
        defaults["weight_decay"] = float(wd) if isinstance(wd, (int, float)) else 0.0
    defaults.update(warmup_factor=0.05, schedule="cosine", grad_clip=None)

    class Wrapped(OptimizerAlgorithm):
        __doc__ = f"{optimizer.__module__}.{optimizer.__name__}, wrapped by Pacebench."
        name = optimizer.__name__
        wrapped = optimizer

        def make_optimizer(self, params):
            h = self.hparams
            kwargs: dict[str, Any] = {"lr": h["learning_rate"]}
            if "betas" in sig and "one_minus_beta1" in h:
                kwargs["betas"] = (1.0 - h["one_minus_beta1"],
                                   *([h["beta2"]] if "beta2" in h else []))
            elif "momentum" in sig and "one_minus_beta1" in h:
                kwargs["momentum"] = 1.0 - h["one_minus_beta1"]
            if "weight_decay" in h:
                kwargs["weight_decay"] = h["weight_decay"]
            if h["schedule"] not in SCHEDULES:
                raise ValueError(f"schedule must be one of {', '.join(SCHEDULES)}, got "
                                 f"{h['schedule']!r}")
            return optimizer(params, **kwargs)

        def schedule(self, step: int) -> float:
            h = self.hparams
            if h["schedule"] == "cosine":
                return cosine_warmup(step, h["learning_rate"], self.step_hint, h["warmup_factor"])
            if h["schedule"] == "linear":
                return linear_warmup_decay(step, h["learning_rate"], self.step_hint,
                                           h["warmup_factor"], 0.0, 1.0)
            warm = warmup_steps(h["warmup_factor"], self.step_hint)  # as cosine_warmup's
            return h["learning_rate"] * (step / warm if step < warm else 1.0)

    Wrapped.defaults = defaults
    Wrapped.__name__ = Wrapped.__qualname__ = f"Wrapped{optimizer.__name__}"
    return Wrapped


def derived_search_space(algorithm: type[Algorithm]) -> dict[str, Any]:
    """The search space (AlgoPerf's JSON format, as a dict) of a wrapped optimizer, or of any
    OptimizerAlgorithm without one: from its defaults (see the module doc)."""
    defaults = dict(getattr(algorithm, "defaults", {}))
    lr = float(defaults.get("learning_rate", 1e-3))
    space: dict[str, Any] = {"learning_rate": {"min": lr / 10, "max": lr * 10,
                                               "scaling": "log"}}
    if "one_minus_beta1" in defaults:
        space["one_minus_beta1"] = {"min": 0.01, "max": 0.3, "scaling": "log"}
    if "weight_decay" in defaults:
        space["weight_decay"] = {"min": 1e-4, "max": 0.3, "scaling": "log"}
    for key, value in defaults.items():
        if key not in space and value is not None:
            space[key] = {"feasible_points": [value]}
    return space


def search_space_of(source: AlgorithmSource) -> dict[str, Any] | Path:
    """The search space of a file or module algorithm: its class's `search_space` (a dict, or a
    JSON file name beside its file), else <file stem>.json beside the file, else derived."""
    cls = load_class(source.spec, source.sha256)
    own = getattr(cls, "search_space", "")
    folder = Path(source.spec.rpartition(":")[0]).parent if source.kind == "file" else None
    if isinstance(own, Mapping) and own:
        return dict(own)
    if isinstance(own, str) and own and folder is not None and (folder / own).is_file():
        return folder / own
    if source.kind == "file":
        beside = Path(source.spec.rpartition(":")[0]).with_suffix(".json")
        if beside.is_file():
            return beside
    if issubclass(cls, OptimizerAlgorithm):
        return derived_search_space(cls)
    raise SourceError(f"no search space for {source.name} ({source.spec}): give the class a "
                      "search_space (a dict in AlgoPerf's format), put "
                      f"{Path(source.spec.rpartition(':')[0]).stem}.json beside its file, or "
                      "pass --search-space")


def describe(source: AlgorithmSource) -> str:
    """One line for `pacebench list` and messages: name, kind and where from."""
    where = {"builtin": "built in", "algoperf": "AlgoPerf submission", "file": "file",
             "module": "module", "plugin": "installed plug-in"}[source.kind]
    sha = f", sha256 {source.sha256[:12]}" if source.sha256 else ""
    return f"{source.name}: {where} {source.spec}{sha}"

