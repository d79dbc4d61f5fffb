"""Any torch.optim.Optimizer as a Pacebench algorithm, by rules read off its constructor.

Hyperparameters (AlgoPerf's names) and what the constructor gets from them:

    learning_rate    lr (default: the class's lr; 1e-3 where it has no positive number)
    one_minus_beta1  betas[0] = 1 - it where the constructor takes `betas` (a tuple of any
                     length: 2, or 3 as AdEMAMix and Adan take); else momentum = 1 - it where it
                     takes `momentum`. Default: 1 - the class's, so SGD and RMSprop keep their
                     momentum 0 unless a search space sweeps it
    beta2            betas[1] where `betas` has two or more; a third beta stays the class's
    weight_decay     weight_decay where the constructor takes it (default: the class's)
    warmup_factor    linear warmup over floor(warmup_factor x the step hint) steps (0.05)
    schedule         after warmup: "cosine" (the default) or "linear" decay to 0 at the step
                     hint, or "constant"; schedule-free classes have none (below)
    grad_clip        clip the gradient norm before each step (None: no clipping)

Every other constructor argument keeps the class's default: with these at their defaults the
optimizer is the class built with its own defaults, under the warmup and schedule.

Parameter groups: a constructor that takes `adamw_lr` (pytorch_optimizer's Muon family: Muon,
AdaMuon, NorMuon, AdaGO) gets two groups flagged `use_muon`, as its documentation asks (muon_groups):
the weights with 2 or more dimensions of the hidden layers go to Muon; biases, norm gains (1-D),
embeddings (nn.Embedding) and the first and last weight matrices in registration order (the
input and output layers) go to its AdamW part, at the class's `adamw_lr`. The schedule scales
every group's learning rate by the same factor, so each keeps its ratio to learning_rate.

Schedule-free classes (any with train() and eval() methods: ScheduleFreeAdamW, ScheduleFreeSGD,
ScheduleFreeRAdam, SPlus): optimizer.eval() in prepare_for_eval, on the clock before each
eval, so evals see the averaged weights; optimizer.train() at the start of every update (a
no-op unless an eval came between), so training goes on from the training iterate. They run
under no outer decay (averaging replaces the schedule). Warmup is the class's own where its
constructor takes `warmup_steps` (set to floor(warmup_factor x step hint)), else a linear
warmup to learning_rate, constant after it.
"""
from __future__ import annotations

import inspect
import math
from dataclasses import dataclass
from typing import Any, Iterable

import torch

from runners.algorithms.base import OptimizerAlgorithm
from runners.algorithms.schedules import cosine_warmup, linear_warmup_decay, warmup_steps
from runners.api import Batch, Workload
from workbench.errors import UserError

__all__ = ["Signature", "WrappedOptimizer", "wrap_optimizer", "derived_search_space",
           "muon_groups", "SCHEDULES"]

SCHEDULES = ("cosine", "linear", "constant")


def _number(value: Any) -> float | None:
    """`value` as a float when it is a finite real number (not a bool), else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


@dataclass(frozen=True)
class Signature:
    """What an optimizer's constructor takes, as the wrapper uses it (see the module doc)."""

    lr: float                         # the class's default learning rate
    betas: tuple[float, ...] | None   # its default betas, any length
    momentum: float | None            # its default momentum, where it has no betas
    weight_decay: float | None        # its default weight decay, where it takes one
    param_groups: bool                # groups flagged use_muon (takes adamw_lr)
    schedule_free: bool               # has train() and eval()
    own_warmup: bool                  # a schedule-free class that takes warmup_steps

    @classmethod
    def of(cls, optimizer: type[torch.optim.Optimizer]) -> "Signature":
        params = inspect.signature(optimizer.__init__).parameters
        sig = {k: p.default for k, p in params.items() if k not in ("self", "params")}
        betas = sig.get("betas")
        betas = (tuple(float(b) for b in betas) if isinstance(betas, (tuple, list)) and betas
                 and all(_number(b) is not None for b in betas) else None)
        lr = _number(sig.get("lr"))
        schedule_free = all(callable(getattr(optimizer, m, None)) for m in ("train", "eval"))
        return cls(lr=lr if lr and lr > 0 else 1e-3, betas=betas,
                   momentum=None if betas else _number(sig.get("momentum")),
                   weight_decay=(_number(sig["weight_decay"]) or 0.0) if "weight_decay" in sig
                   else None,
                   param_groups="adamw_lr" in sig, schedule_free=schedule_free,
                   own_warmup=schedule_free and "warmup_steps" in sig)

    @property
    def sweeps_momentum(self) -> bool:
        """Whether the derived space sweeps 1 - beta1: betas, or a momentum on by default."""
        return self.betas is not None or (self.momentum or 0.0) > 0.0

    def defaults(self) -> dict[str, Any]:
        """The wrapped algorithm's hyperparameters at the class's own defaults."""
        out: dict[str, Any] = {"learning_rate": self.lr}
        if self.betas is not None:
            out["one_minus_beta1"] = 1.0 - self.betas[0]
            if len(self.betas) > 1:
                out["beta2"] = self.betas[1]
        elif self.momentum is not None:
            out["one_minus_beta1"] = 1.0 - self.momentum
        if self.weight_decay is not None:
            out["weight_decay"] = self.weight_decay
        out["warmup_factor"] = 0.05
        if not self.schedule_free:
            out["schedule"] = "cosine"
        out["grad_clip"] = None
        return out


def _one_minus(value: float, default: float) -> float:
    """1 - value, exactly `default` when value is the default's 1 - default (no rounding)."""
    return default if value == 1.0 - default else 1.0 - value


def muon_groups(model: torch.nn.Module | Iterable[torch.nn.Parameter]) -> list[dict[str, Any]]:
    """Parameter groups flagged `use_muon` (pytorch_optimizer's Muon convention): True for the
    weights of 2 or more dimensions except embeddings and the first and last such weights (the
    input and output layers, in registration order); False for everything else. Takes a model,
    or bare parameters (then nothing is known to be an embedding). Empty groups are left out."""
    if isinstance(model, torch.nn.Module):
        embeddings = {id(p) for m in model.modules() if isinstance(m, torch.nn.Embedding)
                      for p in m.parameters(recurse=False)}
        params = list(model.parameters())  # shared parameters once, as the model holds them
    else:
        embeddings, params = set(), list(model)
    matrices = [p for p in params if p.ndim >= 2 and id(p) not in embeddings]
    hidden = {id(p) for p in matrices[1:-1]}
    groups = [{"params": [p for p in params if id(p) in hidden], "use_muon": True},
              {"params": [p for p in params if id(p) not in hidden], "use_muon": False}]
    return [g for g in groups if g["params"]]


class WrappedOptimizer(OptimizerAlgorithm):
    """The base of the classes wrap_optimizer makes: `wrapped` is the torch optimizer class,
    `signature` what its constructor takes."""

    wrapped: type[torch.optim.Optimizer]
    signature: Signature

    def make_optimizer(self, params) -> torch.optim.Optimizer:
        h, sig = self.hparams, self.signature
        if h.get("schedule", "cosine") not in SCHEDULES:
            raise UserError(f"schedule must be one of {', '.join(SCHEDULES)}, got "
                            f"{h['schedule']!r}")
        kwargs: dict[str, Any] = {"lr": h["learning_rate"]}
        if sig.betas is not None:
            betas = list(sig.betas)  # a third (or further) beta keeps the class's default
            betas[0] = _one_minus(h["one_minus_beta1"], sig.betas[0])
            if len(betas) > 1:
                betas[1] = h["beta2"]
            kwargs["betas"] = tuple(betas)
        elif sig.momentum is not None:
            kwargs["momentum"] = _one_minus(h["one_minus_beta1"], sig.momentum)
        if sig.weight_decay is not None:
            kwargs["weight_decay"] = h["weight_decay"]
        if sig.own_warmup:
            kwargs["warmup_steps"] = warmup_steps(h["warmup_factor"], self.step_hint)
        params = list(params)
        if sig.param_groups and not (params and isinstance(params[0], dict)):
            params = muon_groups(params)
        return self.wrapped(params, **kwargs)

    def init(self, model: torch.nn.Module, workload: Workload) -> None:
        self.step_hint = workload.spec.step_hint
        self.optimizer = self.make_optimizer(
            muon_groups(model) if self.signature.param_groups else model.parameters())
        # each group's learning rate relative to learning_rate (Muon's AdamW part: adamw_lr)
        lr = self.hparams["learning_rate"]
        self._lr_ratios = [float(g["lr"]) / lr if lr else 1.0 for g in self.optimizer.param_groups]

    def set_lr(self, lr: float) -> None:
        for group, ratio in zip(self.optimizer.param_groups, self._lr_ratios):
            group["lr"] = lr * ratio

    def update(self, model: torch.nn.Module, batch: Batch, step: int,
               workload: Workload) -> torch.Tensor:
        if self.signature.schedule_free:
            self.optimizer.train()  # back to the training iterate if an eval came between
        return super().update(model, batch, step, workload)

    def prepare_for_eval(self, model: torch.nn.Module) -> None:
        if self.signature.schedule_free:
            self.optimizer.eval()  # evals see the averaged weights, as the class intends

    def schedule(self, step: int) -> float:
        h = self.hparams
        warm = warmup_steps(h["warmup_factor"], self.step_hint)
        if self.signature.schedule_free:
            warm = 0 if self.signature.own_warmup else warm
            return h["learning_rate"] * (step / warm if step < warm else 1.0)
        if h["schedule"] == "cosine":
            return cosine_warmup(step, h["learning_rate"], self.step_hint, h["warmup_factor"])
        if h["schedule"] == "linear":
            return linear_warmup_decay(step, h["learning_rate"], self.step_hint,
                                       h["warmup_factor"], 0.0, 1.0)
        return h["learning_rate"] * (step / warm if step < warm else 1.0)


def wrap_optimizer(optimizer: type[torch.optim.Optimizer]) -> type[WrappedOptimizer]:
    """A WrappedOptimizer subclass around the torch optimizer class `optimizer`."""
    signature = Signature.of(optimizer)
    return type(f"Wrapped{optimizer.__name__}", (WrappedOptimizer,), {
        "__doc__": f"{optimizer.__module__}.{optimizer.__name__}, wrapped by Pacebench.",
        "__module__": __name__, "name": optimizer.__name__, "wrapped": optimizer,
        "signature": signature, "defaults": signature.defaults()})


def derived_search_space(algorithm: type[OptimizerAlgorithm]) -> dict[str, Any]:
    """The search space (AlgoPerf's JSON format, as a dict) of a wrapped optimizer, or of any
    OptimizerAlgorithm without one, from its defaults: learning rate log-uniform over [default
    / 10, default x 10]; 1 - beta1 log-uniform over [0.01, 0.3] where the class has betas or a
    momentum on by default; weight decay log-uniform over [1e-4, 0.3] where it takes one; the
    rest fixed at their defaults."""
    defaults = dict(getattr(algorithm, "defaults", {}))
    signature = getattr(algorithm, "signature", None)
    lr = float(defaults.get("learning_rate", 1e-3))
    space: dict[str, Any] = {"learning_rate": {"min": lr / 10, "max": lr * 10,
                                               "scaling": "log"}}
    if "one_minus_beta1" in defaults and (signature is None or signature.sweeps_momentum):
        space["one_minus_beta1"] = {"min": 0.01, "max": 0.3, "scaling": "log"}
    if "weight_decay" in defaults:
        space["weight_decay"] = {"min": 1e-4, "max": 0.3, "scaling": "log"}
    for key, value in defaults.items():
        if key not in space and value is not None:
            space[key] = {"feasible_points": [value]}
    return space
