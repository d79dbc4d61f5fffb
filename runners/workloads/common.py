"""Pieces shared by the workload builders: layers by name, seeded init, preloaded tensors."""
from __future__ import annotations

import math
from typing import Any, Callable, Iterator, Mapping

import torch
from torch import nn

from runners.api import Batch, Workload
from workbench.errors import UserError
from workbench.spec import WorkloadSpec

__all__ = ["ACTIVATIONS", "activation", "knob", "seeded_model", "scale_init", "mlp",
           "TensorWorkload", "ArrayClassifier", "classification_metrics", "next_token_loss",
           "next_token_metrics"]

ACTIVATIONS: dict[str, type[nn.Module]] = {"relu": nn.ReLU, "tanh": nn.Tanh, "gelu": nn.GELU,
                                           "silu": nn.SiLU}
SPLITS = ("train", "validation", "test")


def activation(name: str) -> nn.Module:
    """A fresh activation module for knob value `name`; a miss lists the valid names."""
    try:
        return ACTIVATIONS[name]()
    except KeyError:
        valid = ", ".join(ACTIVATIONS)
        raise UserError(f"unknown activation {name!r}: valid are {valid}") from None


_REQUIRED = object()  # marks a knob without a default


def knob(model: Mapping[str, Any], name: str, valid: tuple[str, ...] | None = None,
         default: Any = _REQUIRED) -> Any:
    """Model knob `name` of a catalog entry (or `default`), checked against `valid` values."""
    if name not in model and default is _REQUIRED:
        raise UserError(f"model knob {name!r} missing; knobs given: {', '.join(model)}")
    value = model.get(name, default)
    if valid is not None and value not in valid:
        raise UserError(f"model knob {name}={value!r} not supported: valid are {', '.join(valid)}")
    return value


def scale_init(model: nn.Module, factor: float) -> nn.Module:
    """Multiply the initial weights (not biases, not norm gains) of every layer by `factor`."""
    if factor != 1.0:
        with torch.no_grad():
            for m in model.modules():
                if isinstance(m, (nn.Linear, nn.Conv1d, nn.Conv2d, nn.Embedding)):
                    m.weight.mul_(factor)
    return model


def seeded_model(build: Callable[[], nn.Module], seed: int, device: torch.device) -> nn.Module:
    """`build()` under torch seed `seed`, on the CPU then moved to `device`.

    Building on the CPU gives the same weights on every device; fork_rng leaves the caller's global
    RNG state as it was, so building a model has no hidden side effect.
    """
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = build()
    return model.to(device)


def mlp(in_dim: int, hidden: tuple[int, ...], out_dim: int, act: str, norm: str) -> nn.Sequential:
    """Linear -> [LayerNorm] -> activation per hidden width, then a linear head; (n, in_dim) in."""
    layers: list[nn.Module] = [nn.Flatten()]
    width = in_dim
    for h in hidden:
        layers.append(nn.Linear(width, h))
        if norm == "layernorm":
            layers.append(nn.LayerNorm(h))
        layers.append(activation(act))
        width = h
    layers.append(nn.Linear(width, out_dim))
    return nn.Sequential(*layers)


def classification_metrics(logits: torch.Tensor, targets: torch.Tensor) -> dict[str, float]:
    """Mean cross-entropy (nats) and accuracy; logits (n, classes), targets (n,) class indices."""
    loss = nn.functional.cross_entropy(logits, targets)
    acc = (logits.argmax(dim=-1) == targets).float().mean()
    return {"loss": float(loss), "accuracy": float(acc)}


def next_token_loss(model: nn.Module, batch: Batch) -> torch.Tensor:
    """Mean next-token cross-entropy of a language model; batch inputs and targets (n, T)."""
    logits = model(batch["inputs"])
    return nn.functional.cross_entropy(logits.flatten(0, 1), batch["targets"].flatten())


def next_token_metrics(model: nn.Module, inputs: torch.Tensor, targets: torch.Tensor,
                       chunk: int | None = None) -> dict[str, float]:
    """classification_metrics of every next token of fixed eval windows (n, T), in eval mode and
    without gradients; `chunk`: windows per forward pass (None: all at once). Exact over the
    windows: each pass adds its summed loss and correct count (float64), so no pass holds more
    than `chunk` windows' logits (a 50,257-token vocabulary makes 200 kB of them per token)."""
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            step = chunk or len(inputs)
            # summed on the device, read once at the end (no host sync per pass)
            sums = torch.zeros(2, dtype=torch.float64, device=targets.device)
            for i in range(0, len(inputs), step):
                logits = model(inputs[i:i + step]).flatten(0, 1).float()
                wanted = targets[i:i + step].flatten()
                sums[0] += nn.functional.cross_entropy(logits, wanted, reduction="sum").double()
                sums[1] += (logits.argmax(dim=-1) == wanted).sum().double()
            n = targets.numel()
            loss_sum, correct = sums.tolist()
            return {"loss": loss_sum / n if n else math.nan,
                    "accuracy": correct / n if n else math.nan}
    finally:
        model.train(was_training)


class TensorWorkload(Workload):
    """A workload whose splits are small tensors preloaded on the device.

    Training batches are slices of a per-epoch permutation drawn from torch.Generator(seed), taken
    with index_select: as cheap as the obvious bare loop. Each epoch yields n // batch_size full
    batches (the remainder differs every epoch, so no example is systematically left out).
    """

    def __init__(self, spec: WorkloadSpec, device: torch.device,
                 splits: Mapping[str, tuple[torch.Tensor, torch.Tensor]]) -> None:
        """`splits`: {"train", "train_eval", "validation", "test"} -> (inputs, targets)."""
        super().__init__(spec, device)
        missing = [s for s in ("train", "train_eval", "validation", "test") if s not in splits]
        if missing:
            raise UserError(f"splits missing: {', '.join(missing)}")
        self.splits = {k: (x.to(device), y.to(device)) for k, (x, y) in splits.items()}

    @property
    def num_train_examples(self) -> int:
        return int(self.splits["train"][0].shape[0])

    def train_batches(self, batch_size: int, seed: int) -> Iterator[Batch]:
        inputs, targets = self.splits["train"]
        n = inputs.shape[0]
        if not 1 <= batch_size <= n:
            raise UserError(f"batch_size must be in 1..{n} (training examples), got {batch_size}")
        gen = torch.Generator().manual_seed(seed)
        while True:
            perm = torch.randperm(n, generator=gen).to(self.device)
            for start in range(0, n - batch_size + 1, batch_size):
                idx = perm[start:start + batch_size]
                yield {"inputs": inputs.index_select(0, idx),
                       "targets": targets.index_select(0, idx)}

    def eval_split(self, split: str) -> tuple[torch.Tensor, torch.Tensor]:
        """(inputs, targets) evaluated for `split`; "train" is the fixed eval subset of train."""
        key = "train_eval" if split == "train" else split
        if split not in SPLITS:
            raise UserError(f"unknown split {split!r}: valid are {', '.join(SPLITS)}")
        return self.splits[key]

    def metrics(self, outputs: torch.Tensor, targets: torch.Tensor) -> dict[str, float]:
        """Metrics of a whole split from the model's outputs on it."""
        return classification_metrics(outputs, targets)

    eval_batch_size: int | None = None  # images per forward pass in evals; None: a whole split

    def evaluate(self, model: nn.Module, split: str) -> dict[str, float]:
        inputs, targets = self.eval_split(split)
        was_training = model.training
        model.eval()
        try:
            with torch.no_grad():
                chunk = self.eval_batch_size or max(1, inputs.shape[0])
                outputs = torch.cat([model(inputs[i:i + chunk])
                                     for i in range(0, inputs.shape[0], chunk)])
                return self.metrics(outputs.float(), targets)
        finally:
            model.train(was_training)


class ArrayClassifier(TensorWorkload):
    """An MLP or CNN classifier over NumPy splits preloaded on the device (digits, MNIST-1D).

    Reads the knobs every such workload shares: arch "mlp" | "cnn", activation, init_scale and
    the widths ("hidden" for an mlp, "channels" for a cnn); a subclass reads its own others and
    builds the network in `_net()`. The "train" eval split is the first `train_eval_size`
    training examples.
    """

    def __init__(self, spec: WorkloadSpec, device: torch.device,
                 arrays: Mapping[str, tuple[Any, Any]], train_eval_size: int) -> None:
        splits = {k: (torch.from_numpy(x), torch.from_numpy(y)) for k, (x, y) in arrays.items()}
        x, y = splits["train"]
        splits["train_eval"] = (x[:train_eval_size], y[:train_eval_size])
        super().__init__(spec, device, splits)
        self.arch = knob(spec.model, "arch", ("mlp", "cnn"))
        self.act = knob(spec.model, "activation", tuple(ACTIVATIONS))
        self.init_scale = float(knob(spec.model, "init_scale", default=1.0))
        self.widths = tuple(knob(spec.model, "hidden" if self.arch == "mlp" else "channels"))

    def _net(self) -> nn.Module:
        raise NotImplementedError

    def init_model(self, seed: int) -> nn.Module:
        return seeded_model(lambda: scale_init(self._net(), self.init_scale), seed, self.device)

    def loss(self, model: nn.Module, batch) -> torch.Tensor:
        return nn.functional.cross_entropy(model(batch["inputs"]), batch["targets"])
