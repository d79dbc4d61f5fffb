"""The MNIST-1D workloads: an MLP or a small 1-D CNN classifying MNIST-1D signals (40 points).

Knobs (catalog `model`): arch "mlp" | "cnn"; activation relu | tanh | gelu | silu; norm none |
layernorm (mlp only); init_scale (multiplies the default PyTorch init of the weights); hidden (mlp
widths, e.g. (128, 128)); channels (the cnn's three conv widths, e.g. (32, 32, 32)).
"""
from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from runners.data.mnist1d import load_mnist1d_splits
from runners.workloads.common import ArrayClassifier, activation, knob, mlp
from workbench.errors import UserError
from workbench.spec import WorkloadSpec

__all__ = ["Mnist1dWorkload", "mnist1d_cnn", "SIGNAL_LENGTH", "TRAIN_EVAL_SIZE",
           "EVAL_BATCH_SIZE"]

NUM_CLASSES = 10
SIGNAL_LENGTH = 40
# The "train" eval split: the first 1,000 signals of the train split. It only tracks the training
# loss; the targets are on validation and test, which keep all 5,000 signals each.
TRAIN_EVAL_SIZE = 1_000
# Signals per forward pass in evals: chunks of 1,000 keep the activations in cache, so a
# 5,000-signal split takes 12 ms through mnist1d_cnn instead of 28 ms whole (1 thread), with
# bit-identical metrics (per-signal logits do not depend on the chunk)
EVAL_BATCH_SIZE = 1_000


def mnist1d_cnn(channels: tuple[int, int, int], act: str) -> nn.Module:
    """Three strided 1-D convolutions and a linear head; input (n, 40), logits (n, 10).

    conv k5 s2 p1 (40 -> 19), conv k3 s2 p1 (19 -> 10), conv k3 s2 p1 (10 -> 5), each followed by
    the activation, then a linear layer over the flattened (channels[2], 5) features: the shape of
    the CNN baseline of the MNIST-1D paper.
    """
    if len(channels) != 3:
        raise UserError(f"mnist1d_cnn takes exactly 3 conv widths, got channels={channels!r}")
    c1, c2, c3 = channels
    layers: list[nn.Module] = [nn.Unflatten(1, (1, SIGNAL_LENGTH))]
    for c_in, c_out, k in ((1, c1, 5), (c1, c2, 3), (c2, c3, 3)):
        layers += [nn.Conv1d(c_in, c_out, kernel_size=k, stride=2, padding=1), activation(act)]
    return nn.Sequential(*layers, nn.Flatten(), nn.Linear(c3 * 5, NUM_CLASSES))


class Mnist1dWorkload(ArrayClassifier):
    """mnist1d_mlp / mnist1d_cnn and their variants: all 20,000 signals preloaded on the device."""

    eval_batch_size = EVAL_BATCH_SIZE

    def __init__(self, spec: WorkloadSpec, device: torch.device,
                 data_dir: str | Path | None = None) -> None:
        """`data_dir`: where the generated arrays are cached (runners.data.mnist1d)."""
        super().__init__(spec, device, load_mnist1d_splits(data_dir), TRAIN_EVAL_SIZE)
        self.norm = knob(spec.model, "norm", ("none", "layernorm") if self.arch == "mlp"
                         else ("none",), default="none")

    def _net(self) -> nn.Module:
        if self.arch == "mlp":
            return mlp(SIGNAL_LENGTH, self.widths, NUM_CLASSES, self.act, self.norm)
        return mnist1d_cnn(self.widths, self.act)
