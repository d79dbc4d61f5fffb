"""The digits workloads: an MLP or a small CNN classifying scikit-learn's 8x8 handwritten digits.

Knobs (catalog `model`): arch "mlp" | "cnn"; activation relu | tanh | gelu | silu;
norm none | layernorm; init_scale (multiplies the default PyTorch init of the weights);
hidden (mlp widths, e.g. (128, 128)); channels (cnn conv widths, e.g. (16, 32)).
"""
from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from runners.data.digits import load_digits_splits
from runners.workloads.common import ArrayClassifier, activation, knob, mlp
from workbench.errors import UserError
from workbench.spec import WorkloadSpec

__all__ = ["DigitsWorkload", "digits_mlp", "digits_cnn", "TRAIN_EVAL_SIZE"]

NUM_CLASSES = 10
TRAIN_EVAL_SIZE = 300  # the "train" eval split: the first 300 images of the (shuffled) train split
NORMS = ("none", "layernorm")


def digits_mlp(hidden: tuple[int, ...], act: str, norm: str) -> nn.Module:
    """MLP on the flattened 64 pixels; input (n, 1, 8, 8), output logits (n, 10)."""
    return mlp(64, tuple(hidden), NUM_CLASSES, act, norm)


def digits_cnn(channels: tuple[int, int], act: str, norm: str) -> nn.Module:
    """conv3x3 -> act -> conv3x3 -> act -> maxpool2 -> linear; input (n, 1, 8, 8), logits (n, 10).

    Padding 1 keeps 8x8 through both convolutions; the pool makes it 4x4. With norm "layernorm",
    each conv output is normalised over its (channels, 8, 8) features before the activation.
    """
    if len(channels) != 2:
        raise UserError(f"digits_cnn takes exactly 2 conv widths, got channels={channels!r}")
    c1, c2 = channels
    layers: list[nn.Module] = []
    for c_in, c_out in ((1, c1), (c1, c2)):
        layers.append(nn.Conv2d(c_in, c_out, kernel_size=3, padding=1))
        if norm == "layernorm":
            layers.append(nn.LayerNorm([c_out, 8, 8]))
        layers.append(activation(act))
    layers += [nn.MaxPool2d(2), nn.Flatten(), nn.Linear(c2 * 4 * 4, NUM_CLASSES)]
    return nn.Sequential(*layers)


class DigitsWorkload(ArrayClassifier):
    """digits_mlp / digits_cnn and their variants: all 1,797 images preloaded on the device."""

    def __init__(self, spec: WorkloadSpec, device: torch.device,
                 data_dir: str | Path | None = None) -> None:
        """`data_dir` is unused: the images ship inside scikit-learn."""
        super().__init__(spec, device, load_digits_splits(), TRAIN_EVAL_SIZE)
        self.norm = knob(spec.model, "norm", NORMS)

    def _net(self) -> nn.Module:
        if self.arch == "mlp":
            return digits_mlp(self.widths, self.act, self.norm)
        return digits_cnn(self.widths, self.act, self.norm)
