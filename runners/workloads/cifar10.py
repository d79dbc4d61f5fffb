"""The cifar10_resnet workload: a ResNet-9 in the style of the CIFAR-10 speed records.

Architecture (David Page's DAWNBench ResNet-9, research/peers.md 5.1; also the base of
hlb-CIFAR10 and airbench): prep conv (64) -> [conv (128) + pool, residual block (128)] ->
[conv (256) + pool] -> [conv (512) + pool, residual block (512)] -> global max pool -> linear to
10 without bias, logits scaled by 0.125. Each conv is 3x3 -> norm -> activation; a residual block
is x + two such convs. Training images get a random 32x32 crop of the 4-pixel reflect-padded image
and a random horizontal flip, drawn on the device.
Knobs (catalog `model`): arch "resnet9"; widths (4 channel counts); activation relu | tanh | gelu |
silu; norm batchnorm | none; augment flip_crop | none; logit_scale; init_scale.
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterator

import torch
from torch import nn
from torch.nn import functional as F

from runners.api import Batch
from runners.data.cifar10 import load_cifar10_splits
from runners.workloads.common import (ACTIVATIONS, TensorWorkload, activation, knob, scale_init,
                                      seeded_model)
from workbench.errors import UserError
from workbench.spec import WorkloadSpec

__all__ = ["resnet9", "flip_crop", "Cifar10Workload", "TRAIN_EVAL_SIZE"]

NUM_CLASSES = 10
TRAIN_EVAL_SIZE = 5000   # the "train" eval split: the first 5,000 training images (= validation size)
EVAL_BATCH_SIZE = 1000   # images per forward pass in evals
CROP_PADDING = 4         # pixels of reflection padding before the random 32x32 crop
NORMS = ("batchnorm", "none")
AUGMENTS = ("flip_crop", "none")


def _conv(c_in: int, c_out: int, act: str, norm: str, pool: bool = False) -> nn.Sequential:
    """3x3 conv (bias only without a norm) -> [BatchNorm] -> activation -> [2x2 max pool]."""
    layers: list[nn.Module] = [nn.Conv2d(c_in, c_out, 3, padding=1, bias=norm == "none")]
    if norm == "batchnorm":
        layers.append(nn.BatchNorm2d(c_out))
    layers.append(activation(act))
    if pool:
        layers.append(nn.MaxPool2d(2))
    return nn.Sequential(*layers)


class Residual(nn.Module):
    """x + conv(conv(x)), same shape in and out."""

    def __init__(self, channels: int, act: str, norm: str) -> None:
        super().__init__()
        self.body = nn.Sequential(_conv(channels, channels, act, norm),
                                  _conv(channels, channels, act, norm))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.body(x)


class Scale(nn.Module):
    """Multiplies by a constant (the logit scale of the speed-record ResNets)."""

    def __init__(self, factor: float) -> None:
        super().__init__()
        self.factor = factor

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.factor


def resnet9(widths: tuple[int, int, int, int], act: str, norm: str,
            logit_scale: float = 0.125) -> nn.Sequential:
    """Input (n, 3, 32, 32) -> logits (n, 10); spatial 32 -> 16 -> 8 -> 4 -> 1."""
    if len(widths) != 4:
        raise UserError(f"resnet9 takes 4 widths (prep, layer1..3), got widths={widths!r}")
    w0, w1, w2, w3 = widths
    return nn.Sequential(
        _conv(3, w0, act, norm),
        _conv(w0, w1, act, norm, pool=True), Residual(w1, act, norm),
        _conv(w1, w2, act, norm, pool=True),
        _conv(w2, w3, act, norm, pool=True), Residual(w3, act, norm),
        nn.AdaptiveMaxPool2d(1), nn.Flatten(), nn.Linear(w3, NUM_CLASSES, bias=False),
        Scale(logit_scale))


def flip_crop(images: torch.Tensor, gen: torch.Generator, pad: int = CROP_PADDING) -> torch.Tensor:
    """Per image: a random crop of the reflect-padded image, then a random horizontal flip.

    images (n, c, h, w) on the generator's device; one gather, no Python loop over images.
    """
    n, _, h, w = images.shape
    dev = images.device
    padded = F.pad(images, (pad, pad, pad, pad), mode="reflect")
    dy = torch.randint(0, 2 * pad + 1, (n, 1), generator=gen, device=dev)
    dx = torch.randint(0, 2 * pad + 1, (n, 1), generator=gen, device=dev)
    rows = dy + torch.arange(h, device=dev)                                  # (n, h)
    cols = dx + torch.arange(w, device=dev)                                  # (n, w)
    flip = torch.rand(n, 1, generator=gen, device=dev) < 0.5
    cols = torch.where(flip, cols.flip(1), cols)
    out = padded[torch.arange(n, device=dev)[:, None, None], :, rows[:, :, None], cols[:, None, :]]
    return out.permute(0, 3, 1, 2).contiguous()                              # (n, h, w, c) -> NCHW


class Cifar10Workload(TensorWorkload):
    """cifar10_resnet and its variants: the whole dataset (standardised float32) on the device."""

    eval_batch_size = EVAL_BATCH_SIZE

    def __init__(self, spec: WorkloadSpec, device: torch.device,
                 data_dir: str | Path | None = None) -> None:
        """`data_dir`: the data root (the tarball is downloaded into `<root>/cifar10/` if absent)."""
        arrays = load_cifar10_splits(data_dir)
        splits = {k: (torch.from_numpy(x), torch.from_numpy(y)) for k, (x, y) in arrays.items()}
        x, y = splits["train"]
        splits["train_eval"] = (x[:TRAIN_EVAL_SIZE], y[:TRAIN_EVAL_SIZE])
        super().__init__(spec, device, splits)
        m = spec.model
        knob(m, "arch", ("resnet9",))
        self.widths = tuple(knob(m, "widths"))
        self.act = knob(m, "activation", tuple(ACTIVATIONS))
        self.norm = knob(m, "norm", NORMS)
        self.augment = knob(m, "augment", AUGMENTS, default="flip_crop")
        self.logit_scale = float(knob(m, "logit_scale", default=0.125))
        self.init_scale = float(knob(m, "init_scale", default=1.0))

    def _build(self) -> nn.Module:
        return scale_init(resnet9(self.widths, self.act, self.norm, self.logit_scale),
                          self.init_scale)

    def init_model(self, seed: int) -> nn.Module:
        return seeded_model(self._build, seed, self.device)

    def train_batches(self, batch_size: int, seed: int) -> Iterator[Batch]:
        """The parent's per-epoch permutation batches, augmented on the device when asked."""
        gen = torch.Generator(device=self.device).manual_seed(seed)
        for batch in super().train_batches(batch_size, seed):
            if self.augment == "flip_crop":
                batch = {"inputs": flip_crop(batch["inputs"], gen), "targets": batch["targets"]}
            yield batch

    def loss(self, model: nn.Module, batch: Batch) -> torch.Tensor:
        return F.cross_entropy(model(batch["inputs"]), batch["targets"])
