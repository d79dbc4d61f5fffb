"""The shared shape of our baselines: a torch optimizer, an lr schedule, one update rule."""
from __future__ import annotations

import abc
from typing import Any, Iterable, Mapping

import torch

from runners.api import Algorithm, Batch, Workload

__all__ = ["OptimizerAlgorithm", "HparamError"]


class HparamError(ValueError):
    """Hyperparameters that an algorithm does not take, or values it cannot use."""


class OptimizerAlgorithm(Algorithm):
    """A baseline = `make_optimizer` + `schedule`, driven by the standard update below.

    Subclasses set `name`, `search_space` and `defaults` (every hyperparameter they take, with a
    value that trains digits_mlp well); hyperparameters not given are filled from `defaults`.
    """

    defaults: Mapping[str, Any] = {}

    def __init__(self, hparams: Mapping[str, Any] | None = None) -> None:
        hparams = dict(hparams or {})
        unknown = sorted(set(hparams) - set(self.defaults))
        if unknown:
            raise HparamError(f"{self.name} does not take hyperparameter(s) {', '.join(unknown)}: "
                              f"valid are {', '.join(self.defaults)}")
        super().__init__({**self.defaults, **hparams})
        self.optimizer: torch.optim.Optimizer | None = None
        self.step_hint = 1
        self._lr: float | None = None

    @abc.abstractmethod
    def make_optimizer(self, params: Iterable[torch.nn.Parameter]) -> torch.optim.Optimizer:
        """The torch optimizer over `params`, built from self.hparams."""

    @abc.abstractmethod
    def schedule(self, step: int) -> float:
        """Learning rate for update `step` (from 0); may use self.step_hint."""

    def init(self, model: torch.nn.Module, workload: Workload) -> None:
        self.step_hint = workload.spec.step_hint
        self.optimizer = self.make_optimizer(model.parameters())

    def update(self, model: torch.nn.Module, batch: Batch, step: int,
               workload: Workload) -> torch.Tensor:
        self.optimizer.zero_grad(set_to_none=True)
        loss = workload.loss(model, batch)
        loss.backward()
        clip = self.hparams.get("grad_clip")
        if clip is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=float(clip))
        self._lr = self.schedule(step)
        for group in self.optimizer.param_groups:
            group["lr"] = self._lr
        self.optimizer.step()
        return loss.detach()

    def current_lr(self) -> float | None:
        return self._lr
