"""AdamW (torch.optim.AdamW) with linear warmup then cosine decay (AlgoPerf's paper baseline)."""
from __future__ import annotations

import torch

from runners.algorithms.base import OptimizerAlgorithm, kernel_options
from runners.algorithms.schedules import cosine_warmup

__all__ = ["AdamW"]


class AdamW(OptimizerAlgorithm):
    """Adam with decoupled weight decay; the lr goes 0 -> learning_rate -> 0 over the step hint."""

    name = "adamw"
    search_space = "adamw.json"
    defaults = {"learning_rate": 2e-3, "one_minus_beta1": 0.1, "beta2": 0.999,
                "weight_decay": 0.05, "warmup_factor": 0.05, "grad_clip": None}

    def make_optimizer(self, params) -> torch.optim.Optimizer:
        h = self.hparams
        params, kernels = kernel_options(params)  # fused on CUDA, foreach elsewhere
        return torch.optim.AdamW(params, lr=h["learning_rate"], eps=1e-8,
                                 betas=(1.0 - h["one_minus_beta1"], h["beta2"]),
                                 weight_decay=h["weight_decay"], **kernels)

    def schedule(self, step: int) -> float:
        h = self.hparams
        return cosine_warmup(step, h["learning_rate"], self.step_hint, h["warmup_factor"])
