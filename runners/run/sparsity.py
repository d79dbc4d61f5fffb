"""Pruning at initialisation (SNIP, magnitude, random) with masks kept fixed during training.

`MaskedAlgorithm` wraps any training algorithm: in `init` (before the clock) it scores every
parameter entry, keeps the global top kappa = round((1 - sparsity) N) entries (biases included,
as Lee et al.'s SNIP code does) and zeroes the rest; after each update it multiplies the
parameters by their masks again (one fused foreach multiply, on the clock: it is part of sparse
training's cost). Pruned weights therefore stay exactly zero.
"""
from __future__ import annotations

from typing import Any, Mapping

import torch

from runners.api import Algorithm, Batch, Workload
from workbench.errors import UserError
from workbench.spec import PRUNE_METHODS, WorkloadSpec

__all__ = ["prune_scores", "global_masks", "MaskedAlgorithm", "SNIP_BATCH"]

SNIP_BATCH = 100  # SNIP sums connection sensitivities over the training set in batches of 100


def _snip_scores(model: torch.nn.Module, workload: Workload, seed: int) -> list[torch.Tensor]:
    """|w * sum_batches dL/dw| over one pass of the training set: the gradient of the loss with
    respect to a multiplicative mask at c = 1, summed, then made absolute (Lee et al.)."""
    params = list(model.parameters())
    total = [torch.zeros_like(p) for p in params]
    n_batches = max(1, workload.num_train_examples // SNIP_BATCH)
    batches = workload.train_batches(min(SNIP_BATCH, workload.num_train_examples), seed)
    for _ in range(n_batches):
        grads = torch.autograd.grad(workload.loss(model, next(batches)), params)
        for acc, g in zip(total, grads):
            acc.add_(g)
    return [(acc * p.detach()).abs() for acc, p in zip(total, params)]


def prune_scores(model: torch.nn.Module, workload: Workload, method: str,
                 seed: int) -> list[torch.Tensor]:
    """One score tensor per parameter (same shapes); higher = more worth keeping."""
    if method == "snip":
        return _snip_scores(model, workload, seed)
    if method == "magnitude":
        return [p.detach().abs() for p in model.parameters()]
    if method == "random":
        gen = torch.Generator().manual_seed(seed)
        return [torch.rand(p.shape, generator=gen).to(p.device) for p in model.parameters()]
    raise UserError(f"unknown prune method {method!r}: valid are {', '.join(PRUNE_METHODS)}")


def global_masks(scores: list[torch.Tensor], sparsity: float) -> list[torch.Tensor]:
    """Masks (same shapes and dtype as the scores, 1 = kept) keeping the global top
    round((1 - sparsity) N) entries of all scores together."""
    if not 0.0 <= sparsity < 1.0:
        raise UserError(f"sparsity must be in [0, 1), got {sparsity}")
    flat = torch.cat([s.reshape(-1) for s in scores])
    keep = max(1, int(round((1.0 - sparsity) * flat.numel())))
    chosen = torch.zeros_like(flat)
    chosen[torch.topk(flat, keep, sorted=False).indices] = 1.0
    masks, start = [], 0
    for s in scores:
        masks.append(chosen[start:start + s.numel()].reshape(s.shape))
        start += s.numel()
    return masks


class MaskedAlgorithm(Algorithm):
    """`base` trained on a network pruned at init to `sparsity` by `method` (fixed masks)."""

    def __init__(self, base: Algorithm, sparsity: float, method: str, seed: int) -> None:
        super().__init__(base.hparams)
        self.base, self.sparsity, self.method, self.seed = base, sparsity, method, seed
        self.name, self.search_space = base.name, base.search_space
        self.params: list[torch.nn.Parameter] = []
        self.masks: list[torch.Tensor] = []

    def init(self, model: torch.nn.Module, workload: Workload) -> None:
        scores = prune_scores(model, workload, self.method, self.seed)
        self.params = list(model.parameters())
        self.masks = [m.to(p.dtype) for m, p in zip(global_masks(scores, self.sparsity),
                                                     self.params)]
        self._apply()
        self.base.init(model, workload)

    def _apply(self) -> None:
        with torch.no_grad():
            torch._foreach_mul_(self.params, self.masks)

    def update(self, model: torch.nn.Module, batch: Batch, step: int,
               workload: Workload) -> torch.Tensor | None:
        loss = self.base.update(model, batch, step, workload)
        self._apply()
        return loss

    def batch_size(self, spec: WorkloadSpec) -> int:
        return self.base.batch_size(spec)

    def prepare_for_eval(self, model: torch.nn.Module) -> None:
        self.base.prepare_for_eval(model)

    def observe_eval(self, row: Mapping[str, Any]) -> None:
        self.base.observe_eval(row)

    def provenance(self) -> dict[str, Any]:
        return self.base.provenance()

    def search_space_fields(self) -> dict[str, Any]:
        return self.base.search_space_fields()

    def current_lr(self) -> float | None:
        return self.base.current_lr()
