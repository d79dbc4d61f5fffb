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
from runners.workloads.common import (ACTIVATIONS, TensorWorkload, activation, knob, mlp,
                                      scale_init, seeded_model)
from workbench.spec import WorkloadSpec

__all__ = ["Mnist1dWorkload", "mnist1d_cnn", "SIGNAL_LENGTH", "TRAIN_EVAL_SIZE"]

NUM_CLASSES = 10
SIGNAL_LENGTH = 40
TRAIN_EVAL_SIZE = 5_000  # the "train" eval split: the first 5,000 signals of the train split


def mnist1d_cnn(channels: tuple[int, int, int], act: str) -> nn.Module:
    """Three strided 1-D convolutions and a linear head; input (n, 40), logits (n, 10).

    conv k5 s2 p1 (40 -> 19), conv k3 s2 p1 (19 -> 10), conv k3 s2 p1 (10 -> 5), each followed by
    the activation, then a linear layer over the flattened (channels[2], 5) features: the shape of
    the CNN baseline of the MNIST-1D paper.
    """
    if len(channels) != 3:
        raise ValueError(f"mnist1d_cnn takes exactly 3 conv widths, got channels={channels!r}")
    c1, c2, c3 = channels
    layers: list[nn.Module] = [nn.Unflatten(1, (1, SIGNAL_LENGTH))]
    for c_in, c_out, k in ((1, c1, 5), (c1, c2, 3), (c2, c3, 3)):
        layers += [nn.Conv1d(c_in, c_out, kernel_size=k, stride=2, padding=1), activation(act)]
    return nn.Sequential(*layers, nn.Flatten(), nn.Linear(c3 * 5, NUM_CLASSES))


class Mnist1dWorkload(TensorWorkload):
    """mnist1d_mlp / mnist1d_cnn and their variants: all 20,000 signals preloaded on the device."""

    def __init__(self, spec: WorkloadSpec, device: torch.device,
                 data_dir: str | Path | None = None) -> None:
        """`data_dir`: where the generated arrays are cached (runners.data.mnist1d)."""
        arrays = load_mnist1d_splits(data_dir)
        splits = {k: (torch.from_numpy(x), torch.from_numpy(y)) for k, (x, y) in arrays.items()}
        x, y = splits["train"]
        splits["train_eval"] = (x[:TRAIN_EVAL_SIZE], y[:TRAIN_EVAL_SIZE])
        super().__init__(spec, device, splits)
        self.arch = knob(spec.model, "arch", ("mlp", "cnn"))
        self.act = knob(spec.model, "activation", tuple(ACTIVATIONS))
        self.norm = knob(spec.model, "norm", ("none", "layernorm") if self.arch == "mlp"
                         else ("none",), default="none")
        self.init_scale = float(knob(spec.model, "init_scale", default=1.0))
        self.widths = tuple(knob(spec.model, "hidden" if self.arch == "mlp" else "channels"))

    def _build(self) -> nn.Module:
        if self.arch == "mlp":
            net = mlp(SIGNAL_LENGTH, self.widths, NUM_CLASSES, self.act, self.norm)
        else:
            net = mnist1d_cnn(self.widths, self.act)
        return scale_init(net, self.init_scale)

    def init_model(self, seed: int) -> nn.Module:
        return seeded_model(self._build, seed, self.device)

    def loss(self, model: nn.Module, batch) -> torch.Tensor:
        return nn.functional.cross_entropy(model(batch["inputs"]), batch["targets"])
