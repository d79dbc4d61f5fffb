"""The gradient noise scale measured during training, off the clock (methods.md B.4).

At an eval, every `every` steps, `NoiseProbe` draws a big batch from its own data stream (never
the training stream), takes its first `b_small` examples (the run's batch size) as the small batch,
and computes both squared gradient norms at the current weights with torch.autograd.grad (the
parameters' .grad and the optimizer are untouched). The unbiased two-batch estimates of |G|^2 and
tr(Sigma) (workbench.scaling.noise_components) are kept in two separate EMAs, and the eval row gets
records.NOISE_COLUMNS with B_simple = EMA(tr Sigma) / EMA(|G|^2). Pruned weights (exactly zero)
are left out of the norms. Gradients are raw (before momentum), as the method asks.
"""
from __future__ import annotations

from typing import Iterator

import torch

from runners.api import Batch, Workload
from workbench.scaling import noise_components

__all__ = ["NoiseProbe", "big_batch_size"]


def big_batch_size(b_small: int, n_train: int) -> int:
    """The big batch: 8x the small one, at least 512, at most the training set (examples)."""
    return min(n_train, max(8 * b_small, 512))


class NoiseProbe:
    """A loop `measure` hook: noise-scale columns every `every` steps (else no columns)."""

    def __init__(self, b_small: int, every: int, seed: int, repeats: int = 2,
                 decay: float = 0.9) -> None:
        self.b_small, self.every, self.seed = b_small, every, seed
        self.repeats, self.decay = repeats, decay
        self.last_step = -every
        self.ema_g2 = self.ema_trace = 0.0
        self._batches: Iterator[Batch] | None = None
        self.b_big = 0

    def _sq_norm(self, model: torch.nn.Module, workload: Workload, batch: Batch) -> float:
        params = [p for p in model.parameters() if p.requires_grad]
        grads = torch.autograd.grad(workload.loss(model, batch), params)
        return float(sum(((g * (p != 0)) ** 2).sum() for g, p in zip(grads, params)))

    def __call__(self, model: torch.nn.Module, workload: Workload, step: int) -> dict[str, float]:
        if self.every <= 0 or step - self.last_step < self.every:
            return {}
        if self._batches is None:
            self.b_big = big_batch_size(self.b_small, workload.num_train_examples)
            self._batches = workload.train_batches(self.b_big, self.seed + 7919)
        if self.b_big <= self.b_small:
            return {}
        self.last_step = step
        small_sq, big_sq = [], []
        for _ in range(self.repeats):
            big = next(self._batches)
            small = {k: v[:self.b_small] for k, v in big.items()}
            small_sq.append(self._sq_norm(model, workload, small))
            big_sq.append(self._sq_norm(model, workload, big))
        g2, trace = noise_components(small_sq, big_sq, self.b_small, self.b_big)
        g2, trace = float(g2.mean()), float(trace.mean())
        self.ema_g2 = self.decay * self.ema_g2 + (1 - self.decay) * g2
        self.ema_trace = self.decay * self.ema_trace + (1 - self.decay) * trace
        ratio = self.ema_trace / self.ema_g2 if self.ema_g2 > 0 else float("nan")
        return {"noise/b_small": self.b_small, "noise/b_big": self.b_big, "noise/grad_sq": g2,
                "noise/trace_sigma": trace, "noise/b_simple": ratio}
