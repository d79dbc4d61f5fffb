"""The shared shape of our baselines: a torch optimizer, an lr schedule, one update rule."""
from __future__ import annotations

import abc
import json
import math
from typing import Any, Iterable, Mapping

import torch

from runners.api import Algorithm, Batch, Workload
from workbench.errors import UserError

__all__ = ["OptimizerAlgorithm", "HparamError", "kernel_options"]


def kernel_options(params: Iterable[torch.nn.Parameter]) -> tuple[list, dict[str, bool]]:
    """(the parameters as a list, the kwargs that pick torch's fastest exact update kernels).

    On CUDA: `fused=True`, one kernel for the whole update (what llm.c and modded-nanogpt use);
    elsewhere `foreach=True`, one kernel per operation over the list. Both compute the plain
    per-tensor update to float rounding (tests/test_optimizer_kernels.py); fused is not the default
    on the CPU, where the recorded targets were set with foreach.
    """
    params = list(params)
    on_cuda = bool(params) and all(p.device.type == "cuda" for p in params)
    return params, ({"fused": True} if on_cuda else {"foreach": True})


class HparamError(UserError):
    """Hyperparameters that an algorithm does not take, or values it cannot use."""


def _check_type(algorithm: str, key: str, value: Any, default: Any) -> None:
    """A hyperparameter's value has the kind of its default: a finite number for a number
    (or None), a bool for a bool, text for text."""
    if isinstance(default, bool):
        ok, kind = isinstance(value, bool), "true or false"
    elif isinstance(default, (int, float)) or default is None:
        ok = (value is None and default is None) or (
            isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value))
        kind = "a finite number"
    else:
        ok, kind = isinstance(value, type(default)), type(default).__name__
    if not ok:
        raise HparamError(f"{algorithm}: hyperparameter {key} is {json.dumps(value)[:40]}; "
                          f"expected {kind}")


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
        for key, value in hparams.items():
            _check_type(self.name, key, value, self.defaults[key])
        super().__init__({**self.defaults, **hparams})
        self.optimizer: torch.optim.Optimizer | None = None
        self.step_hint = 1
        self._lr: float | None = None
        try:  # values the optimizer refuses (a negative learning rate, ...) fail here, before
            self.make_optimizer([torch.nn.Parameter(torch.zeros(1))])  # a run is recorded
        except (ValueError, TypeError) as e:
            raise HparamError(f"{self.name} cannot use hyperparameters "
                              f"{json.dumps(hparams, default=str)[:120]}: {e}") from None

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
        self.set_lr(self._lr)
        self.optimizer.step()
        return loss.detach()

    def set_lr(self, lr: float) -> None:
        """Give every parameter group learning rate `lr` (a class whose groups keep different
        rates scales each instead: runners/algorithms/wrapper.py)."""
        for group in self.optimizer.param_groups:
            group["lr"] = lr

    def current_lr(self) -> float | None:
        return self._lr
