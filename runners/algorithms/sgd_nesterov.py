"""SGD with Nesterov momentum, linear warmup then linear decay (AlgoPerf's "Nesterov" baseline)."""
from __future__ import annotations

import torch

from runners.algorithms.base import OptimizerAlgorithm, kernel_options
from runners.algorithms.schedules import linear_warmup_decay

__all__ = ["SGDNesterov"]


class SGDNesterov(OptimizerAlgorithm):
    """torch.optim.SGD(nesterov=True); momentum = 1 - one_minus_beta1; L2 weight decay."""

    name = "sgd_nesterov"
    search_space = "sgd_nesterov.json"
    nesterov = True
    defaults = {"learning_rate": 0.1, "one_minus_beta1": 0.1, "weight_decay": 1e-5,
                "warmup_factor": 0.05, "end_factor": 0.01, "decay_steps_factor": 0.9,
                "grad_clip": None}

    def make_optimizer(self, params) -> torch.optim.Optimizer:
        h = self.hparams
        params, kernels = kernel_options(params)  # fused on CUDA, foreach elsewhere
        return torch.optim.SGD(params, lr=h["learning_rate"], momentum=1.0 - h["one_minus_beta1"],
                               weight_decay=h["weight_decay"], nesterov=self.nesterov, **kernels)

    def schedule(self, step: int) -> float:
        h = self.hparams
        return linear_warmup_decay(step, h["learning_rate"], self.step_hint, h["warmup_factor"],
                                   h["end_factor"], h["decay_steps_factor"])
