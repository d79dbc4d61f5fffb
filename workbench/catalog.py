"""The workloads and their variants, as data.

A catalog entry says what to train (dataset, model knobs, loss), what counts as done (target metric,
direction, validation and test targets), and how long a run may go (step hint, budget, eval cadence,
default batch size). The torch builders in `runners/workloads/` turn an entry into a model, an input
pipeline, a loss and an eval. A variant changes knobs and restates its own targets.

Targets are not guesses: they come from the target-setting command (`pacebench set-targets`, see
runners/target_setting.py); its outputs are committed under `targets/` and a test checks that every
target below equals the median recorded there.
"""
from __future__ import annotations

from dataclasses import replace

from workbench.spec import Budget, EvalCadence, Target, WorkloadSpec

__all__ = ["CATALOG", "get_workload", "workload_names", "base_workloads", "variants_of"]


def _variant(base: WorkloadSpec, variant: str, target: Target, description: str,
             **knobs) -> WorkloadSpec:
    """A variant of `base`: same data, loss, budget and cadence; some model knobs changed."""
    return replace(base, name=f"{base.name}_{variant}", variant=variant, target=target,
                   model={**base.model, **knobs}, description=description)


# --- digits: scikit-learn's 8x8 handwritten digits (1,797 images, 10 classes), fixed 3-way split
DIGITS_MLP = WorkloadSpec(
    name="digits_mlp", base="digits_mlp", variant="base", dataset="digits",
    model={"arch": "mlp", "hidden": (128, 128), "activation": "relu", "norm": "none",
           "init_scale": 1.0},
    loss="softmax_cross_entropy",
    target=Target(metric="accuracy", direction="max", validation=0.9866, test=0.9733),
    step_hint=800, budget=Budget(seconds=60.0, steps=800), eval_every=EvalCadence(steps=25),
    batch_size=64, train_loss_every=5,
    description="2-hidden-layer ReLU MLP on the 8x8 digits; accuracy on 300 held-out images",
)
DIGITS_CNN = WorkloadSpec(
    name="digits_cnn", base="digits_cnn", variant="base", dataset="digits",
    model={"arch": "cnn", "channels": (16, 32), "activation": "relu", "norm": "none",
           "init_scale": 1.0},
    loss="softmax_cross_entropy",
    target=Target(metric="accuracy", direction="max", validation=0.9933, test=0.9900),
    step_hint=800, budget=Budget(seconds=60.0, steps=800), eval_every=EvalCadence(steps=25),
    batch_size=64, train_loss_every=5,
    description="2-conv-layer ReLU CNN on the 8x8 digits; accuracy on 300 held-out images",
)
# --- shakespeare_char: a small decoder-only transformer, character level, on tiny-Shakespeare
SHAKESPEARE_CHAR = WorkloadSpec(
    name="shakespeare_char", base="shakespeare_char", variant="base", dataset="tinyshakespeare",
    model={"arch": "gpt", "n_layer": 2, "n_head": 4, "n_embd": 64, "block_size": 64,
           "activation": "gelu", "norm": "pre_ln", "init_scale": 1.0},
    loss="softmax_cross_entropy",
    target=Target(metric="loss", direction="min", validation=1.7932, test=1.8687),
    step_hint=1500, budget=Budget(seconds=300.0, steps=1500), eval_every=EvalCadence(steps=100),
    batch_size=32, train_loss_every=10,
    description="2-layer, 64-wide GPT on characters of tiny-Shakespeare; cross-entropy in nats",
)
# --- synthetic: a teacher-student regression that trains in well under a second, for unit tests
SYNTHETIC = WorkloadSpec(
    name="synthetic", base="synthetic", variant="base", dataset="synthetic",
    model={"arch": "mlp", "hidden": (32,), "activation": "relu", "norm": "none",
           "init_scale": 1.0},
    loss="mean_squared_error",
    target=Target(metric="loss", direction="min", validation=0.0585, test=0.0693),
    step_hint=400, budget=Budget(seconds=30.0, steps=400), eval_every=EvalCadence(steps=20),
    batch_size=32, train_loss_every=5,
    description="MLP regressing a fixed random teacher network plus noise (no data files)",
)

_ENTRIES = [
    DIGITS_MLP,
    _variant(DIGITS_MLP, "tanh", Target("accuracy", "max", 0.9800, 0.9666),
             "digits_mlp with tanh activations", activation="tanh"),
    _variant(DIGITS_MLP, "layernorm", Target("accuracy", "max", 0.9866, 0.9800),
             "digits_mlp with LayerNorm after each hidden layer", norm="layernorm"),
    DIGITS_CNN,
    _variant(DIGITS_CNN, "tanh", Target("accuracy", "max", 0.9800, 0.9733),
             "digits_cnn with tanh activations", activation="tanh"),
    _variant(DIGITS_CNN, "wide", Target("accuracy", "max", 0.9866, 0.9900),
             "digits_cnn with twice the channels", channels=(32, 64)),
    SHAKESPEARE_CHAR,
    _variant(SHAKESPEARE_CHAR, "relu", Target("loss", "min", 1.7146, 1.8056),
             "shakespeare_char with ReLU in the MLP blocks", activation="relu"),
    _variant(SHAKESPEARE_CHAR, "post_ln", Target("loss", "min", 1.7166, 1.8090),
             "shakespeare_char with post-LayerNorm blocks", norm="post_ln"),
    SYNTHETIC,
    _variant(SYNTHETIC, "tanh", Target("loss", "min", 0.0742, 0.0757),
             "synthetic with tanh activations", activation="tanh"),
    _variant(SYNTHETIC, "large_init", Target("loss", "min", 0.0904, 0.1020),
             "synthetic with weights initialised 3x larger", init_scale=3.0),
]

CATALOG: dict[str, WorkloadSpec] = {w.name: w for w in _ENTRIES}


def get_workload(name: str) -> WorkloadSpec:
    """The catalog entry called `name`; a miss lists the valid names."""
    try:
        return CATALOG[name]
    except KeyError:
        raise KeyError(f"unknown workload {name!r}: known are {', '.join(CATALOG)}") from None


def workload_names() -> list[str]:
    return list(CATALOG)


def base_workloads() -> list[str]:
    return [n for n, w in CATALOG.items() if not w.is_variant]


def variants_of(base: str) -> list[str]:
    """Names of the variants of base workload `base` (not including the base itself)."""
    get_workload(base)
    return [n for n, w in CATALOG.items() if w.base == base and w.is_variant]
