"""NAdamW (AlgoPerf's baseline form): Adam with a Nesterov look-ahead and decoupled weight decay."""
from __future__ import annotations

from typing import Iterable

import torch

from runners.algorithms.base import OptimizerAlgorithm
from runners.algorithms.schedules import cosine_warmup
from workbench.errors import UserError

__all__ = ["NAdamWOptimizer", "NAdamW"]


class NAdamWOptimizer(torch.optim.Optimizer):
    """One step t (from 1), per parameter theta with gradient g:

        m  <- b1 m + (1 - b1) g            v <- b2 v + (1 - b2) g^2
        m~ =  b1 m + (1 - b1) g            (Nesterov look-ahead, using the new m)
        u  =  (m~ / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps) + wd * theta
        theta <- theta - lr * u

    Weight decay is decoupled (scaled by lr, not added to g), as in AlgoPerf's NAdamW.
    """

    def __init__(self, params: Iterable[torch.nn.Parameter], lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0) -> None:
        if not 0.0 <= betas[0] < 1.0 or not 0.0 <= betas[1] < 1.0:
            raise UserError(f"betas must be in [0, 1), got {betas}")
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay))

    @torch.no_grad()
    def step(self, closure=None):  # noqa: D102 (torch's signature)
        loss = None if closure is None else torch.enable_grad()(closure)()
        for group in self.param_groups:
            params = [p for p in group["params"] if p.grad is not None]
            if params:
                self._update(params, group)
        return loss

    def _update(self, params: list[torch.Tensor], group: dict) -> None:
        """The update above for all `params` at once, with torch's multi-tensor (foreach) ops.

        One kernel per operation for the whole list instead of one per tensor: on a 2-layer GPT
        this makes the step about 2x cheaper on the CPU, and matters more on GPUs.
        """
        lr, wd, eps = group["lr"], group["weight_decay"], group["eps"]
        b1, b2 = group["betas"]
        for p in params:
            state = self.state[p]
            if not state:
                state.update(step=0, m=torch.zeros_like(p), v=torch.zeros_like(p))
            state["step"] += 1
        states = [self.state[p] for p in params]
        grads = [p.grad for p in params]
        ms, vs = [s["m"] for s in states], [s["v"] for s in states]
        steps = [s["step"] for s in states]  # equal unless some parameter skipped steps

        torch._foreach_lerp_(ms, grads, 1.0 - b1)                  # m = b1 m + (1 - b1) g
        torch._foreach_mul_(vs, b2)
        torch._foreach_addcmul_(vs, grads, grads, value=1.0 - b2)  # v = b2 v + (1 - b2) g^2
        looks = torch._foreach_lerp(ms, grads, 1.0 - b1)           # m~ = b1 m + (1 - b1) g
        denoms = torch._foreach_div(vs, [1.0 - b2 ** t for t in steps])
        torch._foreach_sqrt_(denoms)
        torch._foreach_add_(denoms, eps)                           # sqrt(v^) + eps
        torch._foreach_mul_(params, 1.0 - lr * wd)                 # the decoupled lr * wd * theta
        torch._foreach_addcdiv_(params, looks, denoms, [-lr / (1.0 - b1 ** t) for t in steps])


class NAdamW(OptimizerAlgorithm):
    """NAdamW with linear warmup then cosine decay to 0 at the step hint (AlgoPerf baseline)."""

    name = "nadamw"
    search_space = "nadamw.json"
    defaults = {"learning_rate": 2e-3, "one_minus_beta1": 0.1, "beta2": 0.999,
                "weight_decay": 0.05, "warmup_factor": 0.05, "grad_clip": None}

    def make_optimizer(self, params) -> torch.optim.Optimizer:
        h = self.hparams
        return NAdamWOptimizer(params, lr=h["learning_rate"], eps=1e-8,
                               betas=(1.0 - h["one_minus_beta1"], h["beta2"]),
                               weight_decay=h["weight_decay"])

    def schedule(self, step: int) -> float:
        h = self.hparams
        return cosine_warmup(step, h["learning_rate"], self.step_hint, h["warmup_factor"])
