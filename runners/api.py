"""The two interfaces the training loop drives: a built workload and a training algorithm.

A training algorithm owns its optimizer, schedule and update. The runner owns data order, the
clock, evals and stopping (see runners/run/loop.py). Our protocol is deliberately small; AlgoPerf's
larger one is adapted to it in runners/algoperf/adapter.py.
"""
from __future__ import annotations

import abc
from typing import Any, Iterator, Mapping

import torch

from workbench.records import SEARCH_SPACE_FIELDS
from workbench.spec import WorkloadSpec

__all__ = ["Batch", "Workload", "Algorithm", "TrainingComplete"]

Batch = Mapping[str, torch.Tensor]  # {"inputs": ..., "targets": ...}, already on the run's device


class TrainingComplete(Exception):
    """Raised by an algorithm's `update` to end training early (AlgoPerf's TrainingCompleteError)."""


class Workload(abc.ABC):
    """A catalog entry made real: model, deterministic input pipeline, loss and evaluation."""

    def __init__(self, spec: WorkloadSpec, device: torch.device) -> None:
        self.spec = spec
        self.device = device

    @abc.abstractmethod
    def init_model(self, seed: int) -> torch.nn.Module:
        """A freshly initialised model on `self.device`; same seed, same weights."""

    @abc.abstractmethod
    def train_batches(self, batch_size: int, seed: int) -> Iterator[Batch]:
        """An endless, deterministic stream of training batches for this seed."""

    @abc.abstractmethod
    def loss(self, model: torch.nn.Module, batch: Batch) -> torch.Tensor:
        """Mean loss of `model` on `batch` (a scalar tensor that supports backward)."""

    @abc.abstractmethod
    def evaluate(self, model: torch.nn.Module, split: str) -> dict[str, float]:
        """Metrics on `split` ("train" = a fixed eval subset of train, "validation", "test").

        Must include the target metric. Runs under torch.no_grad() and the model's eval mode,
        restoring train mode afterwards.
        """

    @property
    def num_train_examples(self) -> int:
        """Examples in the training set (one epoch). Pruning at initialisation, the gradient-noise
        probe and AlgoPerf submissions use it, so a workload that does not say it is refused where
        it is asked for, never read as 0 (TensorWorkload counts its training split)."""
        raise NotImplementedError(
            f"workload {self.spec.name!r} ({type(self).__name__}) does not give "
            "num_train_examples: define the property (the size of its training set), or "
            "subclass runners.workloads.common.TensorWorkload, which counts it")


class Algorithm(abc.ABC):
    """A training algorithm: optimizer + schedule + update rule, with its hyperparameters.

    Subclasses set `name`, `search_space` (file name of an AlgoPerf-format JSON search space next
    to the module) and implement `init` and `update`.
    """

    name: str = ""
    search_space: str = ""
    searched: Mapping[str, Any] | None = None  # set by a study's worker: search_space_fields

    def __init__(self, hparams: Mapping[str, Any]) -> None:
        self.hparams = dict(hparams)

    def batch_size(self, spec: WorkloadSpec) -> int:
        """Global batch size for the workload of catalog entry `spec`; the default is the
        catalog's. (Here and everywhere, `spec` is a WorkloadSpec, `workload` a built Workload.)"""
        return spec.batch_size

    @abc.abstractmethod
    def init(self, model: torch.nn.Module, workload: Workload) -> None:
        """Build optimizer state. Runs before the clock starts."""

    @abc.abstractmethod
    def update(self, model: torch.nn.Module, batch: Batch, step: int,
               workload: Workload) -> torch.Tensor | None:
        """One training step on `batch` (`step` counts from 0); returns the minibatch loss.

        Raise TrainingComplete to stop early. Must not call .item() on device tensors needlessly:
        the runner reads the returned loss only every `train_loss_every` steps. Return None when
        there is no loss to log (e.g. an AlgoPerf submission that computed none): the step then
        writes no training-loss row and cannot trip the divergence check.
        """

    def prepare_for_eval(self, model: torch.nn.Module) -> None:
        """Called before each eval, on the clock (e.g. to swap in averaged weights)."""

    def observe_eval(self, row: Mapping[str, Any]) -> None:
        """Called after each eval, off the clock, with its eval row (step, times, metrics)."""

    def provenance(self) -> dict[str, Any]:
        """Where the algorithm's code came from, stored in the run document (e.g. file + sha256)."""
        return {}

    def current_lr(self) -> float | None:
        """The learning rate used by the last update, for logging; None if not meaningful."""
        return None

    def search_space_fields(self) -> dict[str, Any]:
        """The run document's search_space, search_space_origin and search_space_file
        (workbench/records.py SEARCH_SPACE_FIELDS): what the launcher put in `searched` (the
        space this run's hyperparameters were drawn from; runners/launch/worker.py), else nulls."""
        return {key: (self.searched or {}).get(key) for key in SEARCH_SPACE_FIELDS}
