"""The synthetic workload: a student MLP regressing a fixed random teacher network plus noise.

No files: inputs x ~ N(0, I_16); targets y = teacher(x) + 0.1 * N(0, 1), where the teacher is a
random tanh MLP drawn from its own fixed seed (independent of the run seed) and scaled so that
teacher(x) has unit variance. The best possible mean squared error is thus the noise variance 0.01;
predicting the mean scores about 1.0. Only the student's init and the batch order depend on the run.
Knobs: hidden (student widths), activation, norm, init_scale.
"""
from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from runners.workloads.common import (ACTIVATIONS, TensorWorkload, knob, mlp, scale_init,
                                      seeded_model)
from workbench.spec import WorkloadSpec

__all__ = ["SyntheticWorkload", "make_teacher_data", "INPUT_DIM", "SPLIT_SIZES"]

INPUT_DIM = 16
TEACHER_HIDDEN = 32    # width of the teacher's one tanh layer
TEACHER_SEED = 20240   # fixed forever: every run and machine sees the same data
NOISE_STD = 0.1        # std of the Gaussian label noise; MSE floor = 0.01
SPLIT_SIZES = {"train": 2048, "validation": 512, "test": 512}
TRAIN_EVAL_SIZE = 512  # the "train" eval split: the first 512 training examples


def make_teacher_data() -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """{split: (x (n, 16) float32, y (n, 1) float32)} drawn from the fixed teacher seed."""
    gen = torch.Generator().manual_seed(TEACHER_SEED)
    n = sum(SPLIT_SIZES.values())
    w1 = torch.randn(INPUT_DIM, TEACHER_HIDDEN, generator=gen) / INPUT_DIM ** 0.5
    b1 = 0.5 * torch.randn(TEACHER_HIDDEN, generator=gen)
    w2 = torch.randn(TEACHER_HIDDEN, 1, generator=gen)
    x = torch.randn(n, INPUT_DIM, generator=gen)
    signal = torch.tanh(x @ w1 + b1) @ w2
    signal = (signal - signal.mean()) / signal.std()  # unit variance: MSE of the mean ~ 1.0
    y = signal + NOISE_STD * torch.randn(n, 1, generator=gen)
    splits, start = {}, 0
    for name, size in SPLIT_SIZES.items():
        splits[name] = (x[start:start + size], y[start:start + size])
        start += size
    return splits


class SyntheticWorkload(TensorWorkload):
    """Teacher-student regression; metric `loss` = mean squared error."""

    def __init__(self, spec: WorkloadSpec, device: torch.device,
                 data_dir: str | Path | None = None) -> None:
        """`data_dir` is unused: the data are generated."""
        splits = make_teacher_data()
        x, y = splits["train"]
        splits["train_eval"] = (x[:TRAIN_EVAL_SIZE], y[:TRAIN_EVAL_SIZE])
        super().__init__(spec, device, splits)
        knob(spec.model, "arch", ("mlp",))
        self.hidden = tuple(knob(spec.model, "hidden"))
        self.act = knob(spec.model, "activation", tuple(ACTIVATIONS))
        self.norm = knob(spec.model, "norm", ("none", "layernorm"), default="none")
        self.init_scale = float(knob(spec.model, "init_scale", default=1.0))

    def _build(self) -> nn.Module:
        net = mlp(INPUT_DIM, self.hidden, 1, self.act, self.norm)
        return scale_init(net, self.init_scale)

    def init_model(self, seed: int) -> nn.Module:
        return seeded_model(self._build, seed, self.device)

    def loss(self, model: nn.Module, batch) -> torch.Tensor:
        return nn.functional.mse_loss(model(batch["inputs"]), batch["targets"])

    def metrics(self, outputs: torch.Tensor, targets: torch.Tensor) -> dict[str, float]:
        return {"loss": float(nn.functional.mse_loss(outputs, targets))}
