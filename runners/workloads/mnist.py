"""The mnist_cnn and fashion_mnist_cnn workloads: the "Simple CNN" of the batch-size studies.

Architecture (Lee et al., ICLR 2021, as released; research/methods.md B.2): conv 5x5 (32) -> act
-> maxpool 2 -> conv 5x5 (64) -> act -> maxpool 2 -> linear to 10, no hidden fully connected
layer; "same" padding, so 28x28 -> 14x14 -> 7x7. Shallue et al. (2019) use the same family.
Knobs (catalog `model`): arch "simple_cnn"; channels (two conv widths); activation relu | tanh |
gelu | silu; init_scale (multiplies the default PyTorch init of the weights).
"""
from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from runners.data.mnist import load_mnist_like_splits
from runners.workloads.common import (ACTIVATIONS, TensorWorkload, activation, knob, scale_init,
                                      seeded_model)
from workbench.errors import UserError
from workbench.spec import WorkloadSpec

__all__ = ["simple_cnn", "MnistLikeWorkload", "TRAIN_EVAL_SIZE"]

NUM_CLASSES = 10
TRAIN_EVAL_SIZE = 6000   # the "train" eval split: the first 6,000 training images (= validation size)
EVAL_BATCH_SIZE = 2000   # images per forward pass in evals (bounds eval memory on any device)


def simple_cnn(channels: tuple[int, int], act: str, size: int = 28) -> nn.Sequential:
    """Input (n, 1, size, size) -> logits (n, 10); `size` must be divisible by 4."""
    if len(channels) != 2:
        raise UserError(f"simple_cnn takes exactly 2 conv widths, got channels={channels!r}")
    c1, c2 = channels
    return nn.Sequential(
        nn.Conv2d(1, c1, kernel_size=5, padding=2), activation(act), nn.MaxPool2d(2),
        nn.Conv2d(c1, c2, kernel_size=5, padding=2), activation(act), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(c2 * (size // 4) ** 2, NUM_CLASSES))


class MnistLikeWorkload(TensorWorkload):
    """mnist_cnn / fashion_mnist_cnn and their variants: the whole dataset held on the device."""

    eval_batch_size = EVAL_BATCH_SIZE

    def __init__(self, spec: WorkloadSpec, device: torch.device,
                 data_dir: str | Path | None = None) -> None:
        """`data_dir`: the data root (files are downloaded into `<root>/<dataset>/` if absent)."""
        arrays = load_mnist_like_splits(spec.dataset, data_dir)
        splits = {k: (torch.from_numpy(x), torch.from_numpy(y)) for k, (x, y) in arrays.items()}
        x, y = splits["train"]
        splits["train_eval"] = (x[:TRAIN_EVAL_SIZE], y[:TRAIN_EVAL_SIZE])
        super().__init__(spec, device, splits)
        knob(spec.model, "arch", ("simple_cnn",))
        self.channels = tuple(knob(spec.model, "channels"))
        self.act = knob(spec.model, "activation", tuple(ACTIVATIONS))
        self.init_scale = float(knob(spec.model, "init_scale", default=1.0))

    def _build(self) -> nn.Module:
        return scale_init(simple_cnn(self.channels, self.act), self.init_scale)

    def init_model(self, seed: int) -> nn.Module:
        return seeded_model(self._build, seed, self.device)

    def loss(self, model: nn.Module, batch) -> torch.Tensor:
        return nn.functional.cross_entropy(model(batch["inputs"]), batch["targets"])
