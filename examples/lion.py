"""Lion (Chen et al. 2023, "Symbolic Discovery of Optimization Algorithms"), as a plain torch
optimizer: the update is the sign of an interpolation of momentum and gradient.

    pacebench study --workloads mnist1d_mlp --algorithms lion=examples/lion.py:Lion,adamw ...

Pacebench wraps it (runners/algorithms/sources.py): learning_rate, one_minus_beta1 (betas[0]),
beta2 and weight_decay become hyperparameters, with warmup and cosine decay over the step hint.
"""
import torch


class Lion(torch.optim.Optimizer):
    def __init__(self, params, lr=1e-4, betas=(0.9, 0.99), weight_decay=0.0):
        super().__init__(params, dict(lr=lr, betas=betas, weight_decay=weight_decay))

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                m = self.state[p].setdefault("m", torch.zeros_like(p))
                p.mul_(1 - group["lr"] * group["weight_decay"])
                p.add_(torch.sign(beta1 * m + (1 - beta1) * p.grad), alpha=-group["lr"])
                m.mul_(beta2).add_(p.grad, alpha=1 - beta2)
