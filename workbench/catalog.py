"""The workloads and their variants, as data.

A catalog entry says what to train (dataset, model knobs, loss), what counts as done (target metric,
direction, validation and test targets), and how long a run may go (step hint, budget, eval cadence,
default batch size). The torch builders in `runners/workloads/` turn an entry into a model, an input
pipeline, a loss and an eval. A variant changes knobs and restates its own targets.

Targets are not guesses: they come from the target-setting command (`pacebench set-targets`, see
runners/procedures/target_setting.py): the value that 90 % of ten seeded reruns of a tuned baseline reach. Its
records are committed under `workbench/targets/` (with the reruns' noise floor, read by
noise_floor_of) and a test checks that every target below equals its record. The exceptions are
listed in PUBLISHED_TARGETS: the entries whose dataset could not be downloaded where the catalog was
written (MNIST, Fashion-MNIST, CIFAR-10) or whose model is too large to tune on a CPU
(shakespeare_char_gpu). Their targets are published goals (or the base workload's tuned target),
cited there and in their `workbench/targets/` record (`"source": "published"`), which also names the
target-setting command still owed.

Eval cadence: an eval quantizes the time to target (a run is seen to reach its target only at
the next eval), so each built-in entry evaluates on a step cadence (`EvalCadence(steps=n)`, no
seconds cadence) of at most 1/CADENCE_SHARE = 1/20 of the median steps its tuned baseline needs
to reach the target (`median_steps_to_target` of its target record, measured by
benchmarks/steps_to_target.py), rounded down to the nearest of 1, 2, 5, 10, 25, 50, 100, ...
(cifar10_resnet keeps one eval per epoch, 88 steps, under its limit). Where no median is measured
(a published target), at most 1/20 of the step hint (the fallback). A variant keeps its base's
cadence unless its own median needs a finer one. tests/test_catalog.py checks these rules, and
`pacebench list --json` shows each cadence as a share of the median (`eval_fraction`). More
evals cost wall time, not training time (evals are off the clock); the MNIST-1D evals run in
chunks to stay cheap (runners/workloads/mnist1d.py).
"""
from __future__ import annotations

import functools
import math
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from workbench.errors import UnknownNameError, UserError
from workbench.noise_floor import NoiseFloor
from workbench.spec import Budget, EvalCadence, Target, WorkloadSpec, check_name

__all__ = ["CATALOG", "DATASETS", "PUBLISHED_TARGETS", "TARGETS_DIR", "CADENCE_SHARE",
           "get_workload", "workload_names", "base_workloads", "variants_of", "target_record",
           "noise_floor_of", "tuned_baseline", "median_steps_to_target", "cadence_limit",
           "SCORING_EVAL_PERIOD_S", "scoring_eval_period",
           "register_plugin", "plugin_source", "LADDER", "GENERATED_VOCAB", "TOKENS_PER_PARAM",
           "ladder_rungs", "rung_counts", "budget_steps"]

# The target-setting records (`pacebench set-targets` writes them; the repository commits them):
# package data of workbench, so an installed wheel reads them too
TARGETS_DIR = Path(__file__).resolve().parent / "targets"
# A built-in's eval cadence is at most 1/CADENCE_SHARE of its median steps to target (see above)
CADENCE_SHARE = 20
# The scoring eval period of each built-in workload, in training seconds: AlgoPerf's
# `eval_period_time_sec`, a constant of the workload that submissions read to size their work
# (e.g. an averaging window), apart from how often Pacebench measures (eval_every). Fixed at
# the catalog's eval cadence when the AlgoPerf surface was published (commit e9b2ec6), at the
# budget's pace, so the competition submissions that ran then run unchanged; a variant not
# named takes its base's. Entries not named (ladder rungs, plug-ins): their cadence in seconds.
SCORING_EVAL_PERIOD_S = {
    "digits_mlp": 1.875, "digits_cnn": 1.875,          # 25 of 800 steps in 60 s
    "mnist1d_mlp": 2.0, "mnist1d_cnn": 9.0,            # 50 of 1,500 in 60 s; 100 of 2,000 in 180 s
    "mnist_cnn": 20.0, "fashion_mnist_cnn": 20.0,      # 200 of 6,000 steps in 600 s
    "cifar10_resnet": 20.0,                            # 88 of 2,640 steps in 600 s
    "shakespeare_char": 20.0,                          # 100 of 1,500 steps in 300 s
    "shakespeare_char_gpu": 45.0,                      # (a variant) 250 of 5,000 in 900 s
    "synthetic": 1.5,                                  # 20 of 400 steps in 30 s
}


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
    target=Target(metric="accuracy", direction="max", validation=0.9833, test=0.9666),
    step_hint=800, budget=Budget(seconds=60.0, steps=800), eval_every=EvalCadence(steps=5),
    batch_size=64, train_loss_every=5,
    description="2-hidden-layer ReLU MLP on the 8x8 digits; accuracy on 300 held-out images",
)
DIGITS_CNN = WorkloadSpec(
    name="digits_cnn", base="digits_cnn", variant="base", dataset="digits",
    model={"arch": "cnn", "channels": (16, 32), "activation": "relu", "norm": "none",
           "init_scale": 1.0},
    loss="softmax_cross_entropy",
    target=Target(metric="accuracy", direction="max", validation=0.99, test=0.9866),
    step_hint=800, budget=Budget(seconds=60.0, steps=800), eval_every=EvalCadence(steps=5),
    batch_size=64, train_loss_every=5,
    description="2-conv-layer ReLU CNN on the 8x8 digits; accuracy on 300 held-out images",
)
# --- mnist1d: MNIST-1D (Greydanus and Kobak, ICML 2024), 40-point signals of 10 digit classes,
# generated offline (datasets/mnist1d.md): train 10,000 / validation 5,000 / test 5,000
MNIST1D_MLP = WorkloadSpec(
    name="mnist1d_mlp", base="mnist1d_mlp", variant="base", dataset="mnist1d",
    model={"arch": "mlp", "hidden": (128, 128), "activation": "relu", "norm": "none",
           "init_scale": 1.0},
    loss="softmax_cross_entropy",
    target=Target(metric="accuracy", direction="max", validation=0.7649, test=0.7613),
    step_hint=1500, budget=Budget(seconds=60.0, steps=1500), eval_every=EvalCadence(steps=25),
    batch_size=128, train_loss_every=10,
    description="2x128 ReLU MLP on MNIST-1D; accuracy on 5,000 held-out signals",
)
MNIST1D_CNN = WorkloadSpec(
    name="mnist1d_cnn", base="mnist1d_cnn", variant="base", dataset="mnist1d",
    model={"arch": "cnn", "channels": (32, 32, 32), "activation": "relu", "init_scale": 1.0},
    loss="softmax_cross_entropy",
    target=Target(metric="accuracy", direction="max", validation=0.9613, test=0.961),
    step_hint=2000, budget=Budget(seconds=180.0, steps=2000), eval_every=EvalCadence(steps=25),
    batch_size=128, train_loss_every=10,
    description="3-layer strided 1-D CNN (32 channels) on MNIST-1D; accuracy on 5,000 signals",
)
# --- shakespeare_char: a small decoder-only transformer, character level, on tiny-Shakespeare
SHAKESPEARE_CHAR = WorkloadSpec(
    name="shakespeare_char", base="shakespeare_char", variant="base", dataset="tinyshakespeare",
    model={"arch": "gpt", "n_layer": 2, "n_head": 4, "n_embd": 64, "block_size": 64,
           "activation": "gelu", "norm": "pre_ln", "init_scale": 1.0},
    loss="softmax_cross_entropy",
    target=Target(metric="loss", direction="min", validation=1.9624, test=2.0174),
    step_hint=1500, budget=Budget(seconds=300.0, steps=1500), eval_every=EvalCadence(steps=25),
    batch_size=32, train_loss_every=10,
    description="2-layer, 64-wide GPT on characters of tiny-Shakespeare; cross-entropy in nats",
)
# --- mnist / fashion_mnist: the "Simple CNN" of the batch-size studies (Shallue et al. 2019;
# Lee et al. 2021), 28x28 grey images, 54,000 / 6,000 / 10,000 split (datasets/mnist.md)
MNIST_CNN = WorkloadSpec(
    name="mnist_cnn", base="mnist_cnn", variant="base", dataset="mnist",
    model={"arch": "simple_cnn", "channels": (32, 64), "activation": "relu", "init_scale": 1.0},
    loss="softmax_cross_entropy",
    target=Target(metric="accuracy", direction="max", validation=0.99, test=0.99),
    step_hint=3000, budget=Budget(seconds=600.0, steps=6000), eval_every=EvalCadence(steps=100),
    batch_size=128, train_loss_every=20,
    description="Simple CNN (conv5x5 32, conv5x5 64, max pools, linear) on MNIST",
)
FASHION_MNIST_CNN = replace(
    MNIST_CNN, name="fashion_mnist_cnn", base="fashion_mnist_cnn", dataset="fashion_mnist",
    target=Target(metric="accuracy", direction="max", validation=0.90, test=0.90),
    description="Simple CNN (conv5x5 32, conv5x5 64, max pools, linear) on Fashion-MNIST",
)
# --- cifar10: ResNet-9 of the CIFAR-10 speed records (Page's DAWNBench entry, hlb-CIFAR10,
# airbench), 45,000 / 5,000 / 10,000 split (datasets/cifar10.md); batch 512, 24 epochs = 2,110 steps
CIFAR10_RESNET = WorkloadSpec(
    name="cifar10_resnet", base="cifar10_resnet", variant="base", dataset="cifar10",
    model={"arch": "resnet9", "widths": (64, 128, 256, 512), "activation": "relu",
           "norm": "batchnorm", "augment": "flip_crop", "logit_scale": 0.125, "init_scale": 1.0},
    loss="softmax_cross_entropy",
    target=Target(metric="accuracy", direction="max", validation=0.94, test=0.94),
    # one eval per epoch (45,000 / 512 = 88 steps): under the limit of step hint / 20 = 105
    step_hint=2110, budget=Budget(seconds=600.0, steps=2640), eval_every=EvalCadence(steps=88),
    batch_size=512, train_loss_every=10,
    description="ResNet-9 (speed-record style) on CIFAR-10; DAWNBench's 94% test accuracy",
)
# --- synthetic: a teacher-student regression that trains in well under a second, for unit tests
SYNTHETIC = WorkloadSpec(
    name="synthetic", base="synthetic", variant="base", dataset="synthetic",
    model={"arch": "mlp", "hidden": (32,), "activation": "relu", "norm": "none",
           "init_scale": 1.0},
    loss="mean_squared_error",
    target=Target(metric="loss", direction="min", validation=0.0731, test=0.0839),
    step_hint=400, budget=Budget(seconds=30.0, steps=400), eval_every=EvalCadence(steps=5),
    batch_size=32, train_loss_every=5,
    description="MLP regressing a fixed random teacher network plus noise (no data files)",
)

# --- the GPT language-model ladder: one architecture, rungs ~4x apart in non-embedding parameters.
# Decoder-only, pre-norm: RMSNorm before attention and MLP (and before the head), GELU MLP 4x
# wide, learned absolute positions, no biases, the LM head tied to the token embedding
# (runners/workloads/ladder.py). The default data is the generated corpus (runners/data/corpus.py,
# vocabulary GENERATED_VOCAB); the `data` knob takes "generated", "shakespeare" or a folder of
# token files, and the vocabulary follows the data. A rung's step hint is its 1x Chinchilla budget
# (TOKENS_PER_PARAM tokens per non-embedding parameter) at its batch size. The ladder compares
# final validation losses at fixed token budgets, not times to a target: each rung's target is
# the corpus' entropy-rate lower bound (the loss with the hidden topic known, docs/ladder.md),
# which no run reaches, so no run stops early; a time-to-target target is owed (its record).
GENERATED_VOCAB = 64       # the generated corpus' default vocabulary (runners/data/corpus.py)
TOKENS_PER_PARAM = 20      # Chinchilla: 1x budget = 20 training tokens per non-embedding parameter
LADDER_TARGET = 3.32       # nats: the corpus' known-topic lower bound, 3.3295 (docs/ladder.md), floored
# name: (n_layer, n_embd, n_head, block_size, batch_size in sequences, budget seconds)
_RUNGS: dict[str, tuple[int, int, int, int, int, float]] = {
    "gpt_7k": (1, 24, 2, 64, 16, 1800.0),
    "gpt_28k": (1, 48, 4, 64, 32, 1800.0),
    "gpt_111k": (1, 96, 6, 64, 64, 3600.0),
    "gpt_443k": (4, 96, 6, 128, 64, 7200.0),
    "gpt_1770k": (4, 192, 6, 256, 64, 7200.0),
    "gpt_7m": (9, 256, 8, 512, 128, 14400.0),
    "gpt_28m": (9, 512, 8, 512, 256, 14400.0),
    "gpt_113m": (16, 768, 12, 1024, 256, 28800.0),
}


def _cadence(step_hint: int) -> int:
    """The coarsest of 1, 2, 5, 10, 25, 50, 100, 250, ... at most step_hint / CADENCE_SHARE."""
    steps = [1, 2, 5] + [int(m * 10 ** k) for k in range(1, 7) for m in (1, 2.5, 5)]
    return max(s for s in steps if s <= max(1, step_hint // CADENCE_SHARE))


def _rung(name: str, n_layer: int, n_embd: int, n_head: int, block_size: int, batch: int,
          seconds: float) -> WorkloadSpec:
    model = {"arch": "gpt", "n_layer": n_layer, "n_head": n_head, "n_embd": n_embd,
             "block_size": block_size, "norm": "rmsnorm", "activation": "gelu",
             "position": "learned", "tied_head": True, "data": "generated", "ladder": True}
    n = _non_embedding(n_layer, n_embd)
    hint = -(-TOKENS_PER_PARAM * n // (batch * block_size))
    return WorkloadSpec(
        name=name, base=name, variant="base", dataset="generated", model=model,
        loss="softmax_cross_entropy",
        target=Target(metric="loss", direction="min", validation=LADDER_TARGET,
                      test=LADDER_TARGET),
        step_hint=hint, budget=Budget(seconds=seconds, steps=hint),
        eval_every=EvalCadence(steps=_cadence(hint)), batch_size=batch, train_loss_every=10,
        description=f"ladder rung: GPT {n_layer} x {n_embd}, context {block_size}, "
                    f"{n:,} non-embedding parameters; next-token loss in nats")


def _non_embedding(n_layer: int, n_embd: int) -> int:
    """Attention 4 d^2 + MLP 8 d^2 + two RMSNorm gains 2 d per layer, and the final norm d."""
    return n_layer * (12 * n_embd ** 2 + 2 * n_embd) + n_embd


LADDER: dict[str, WorkloadSpec] = {name: _rung(name, *shape) for name, shape in _RUNGS.items()}


def ladder_rungs() -> list[WorkloadSpec]:
    """The ladder's rungs, smallest first."""
    return sorted(LADDER.values(), key=lambda w: rung_counts(w)["non_embedding_params"])


def rung_counts(spec: WorkloadSpec, vocab_size: int | None = None) -> dict[str, int]:
    """Analytic sizes of a GPT rung: non-embedding and total parameters, training FLOPs per token.

    non_embedding_params = L (12 d^2 + 2 d) + d (matrices and RMSNorm gains);
    params = non_embedding_params + V d (token embedding, tied to the head) + T d (positions);
    flops_per_token = 6 (12 L d^2 + V d) + 12 L T d: 6 FLOPs per weight of every matrix
    multiplication (forward 2, backward 4), the head included, plus attention's scores and
    weighted sums over the full context T (forward 4 T d per layer, backward twice that),
    as Kaplan et al. (2020) and Chinchilla count them. V = `vocab_size`, else the generated
    corpus' GENERATED_VOCAB; T = block_size."""
    m = spec.model
    if m.get("arch") != "gpt":
        raise UserError(f"workload {spec.name!r} is not a GPT rung (arch {m.get('arch')!r})")
    layers, width, context = int(m["n_layer"]), int(m["n_embd"]), int(m["block_size"])
    vocab = GENERATED_VOCAB if vocab_size is None else int(vocab_size)
    n = _non_embedding(layers, width)
    return {"non_embedding_params": n, "params": n + vocab * width + context * width,
            "flops_per_token": 6 * (12 * layers * width ** 2 + vocab * width)
            + 12 * layers * context * width}


def budget_steps(spec: WorkloadSpec, budget: float, batch_size: int | None = None) -> int:
    """Update steps of a rung at `budget` x the 1x Chinchilla tokens (TOKENS_PER_PARAM per
    non-embedding parameter), `batch_size` sequences of block_size tokens a step (default the
    rung's): the fewest steps that see that many tokens."""
    if isinstance(budget, bool) or not isinstance(budget, (int, float)) or not budget > 0 \
            or not math.isfinite(budget):
        raise UserError(f"bad budget {budget!r}: a number > 0 (multiples of "
                        f"{TOKENS_PER_PARAM} tokens per non-embedding parameter)")
    batch = spec.batch_size if batch_size is None else int(batch_size)
    tokens = budget * TOKENS_PER_PARAM * rung_counts(spec)["non_embedding_params"]
    return max(1, math.ceil(tokens / (batch * int(spec.model["block_size"]))))


_ENTRIES = [
    DIGITS_MLP,
    _variant(DIGITS_MLP, "tanh", Target("accuracy", "max", 0.9733, 0.9633),
             "digits_mlp with tanh activations", activation="tanh"),
    _variant(DIGITS_MLP, "layernorm", Target("accuracy", "max", 0.9866, 0.9833),
             "digits_mlp with LayerNorm after each hidden layer", norm="layernorm"),
    DIGITS_CNN,
    _variant(DIGITS_CNN, "tanh", Target("accuracy", "max", 0.9733, 0.9733),
             "digits_cnn with tanh activations", activation="tanh"),
    # its baseline needs fewer steps (median 97) than the base's 5-step cadence allows
    replace(_variant(DIGITS_CNN, "wide", Target("accuracy", "max", 0.9866, 0.9866),
                     "digits_cnn with twice the channels", channels=(32, 64)),
            eval_every=EvalCadence(steps=2)),
    MNIST1D_MLP,
    _variant(MNIST1D_MLP, "tanh", Target("accuracy", "max", 0.7178, 0.7099),
             "mnist1d_mlp with tanh activations", activation="tanh"),
    _variant(MNIST1D_MLP, "layernorm", Target("accuracy", "max", 0.7436, 0.7379),
             "mnist1d_mlp with LayerNorm after each hidden layer", norm="layernorm"),
    MNIST1D_CNN,
    _variant(MNIST1D_CNN, "tanh", Target("accuracy", "max", 0.9151, 0.9118),
             "mnist1d_cnn with tanh activations", activation="tanh"),
    _variant(MNIST1D_CNN, "wide", Target("accuracy", "max", 0.9703, 0.9674),
             "mnist1d_cnn with twice the channels", channels=(64, 64, 64)),
    SHAKESPEARE_CHAR,
    _variant(SHAKESPEARE_CHAR, "relu", Target("loss", "min", 1.9016, 1.9328),
             "shakespeare_char with ReLU in the MLP blocks", activation="relu"),
    _variant(SHAKESPEARE_CHAR, "post_ln", Target("loss", "min", 1.9013, 1.9712),
             "shakespeare_char with post-LayerNorm blocks", norm="post_ln"),
    replace(_variant(SHAKESPEARE_CHAR, "gpu", Target("loss", "min", 1.8329, 1.9009),
                     "shakespeare_char at GPU size: 8 layers, 512 wide, 256-character context "
                     "(overfits; the GPU language workloads are the ladder rungs gpt_7m ..)",
                     n_layer=8, n_head=8, n_embd=512, block_size=256),
            # no median measured here: its one H200 run met its target at step 1,000 (750 to
            # 1,250 over two seeds, research/gpu-2026-11-26.md), a twentieth of which is 50;
            # under step hint / 20 = 150
            step_hint=3000, budget=Budget(seconds=900.0, steps=5000), batch_size=128,
            eval_every=EvalCadence(steps=50), train_loss_every=50),
    MNIST_CNN,
    _variant(MNIST_CNN, "tanh", MNIST_CNN.target, "mnist_cnn with tanh activations",
             activation="tanh"),
    _variant(MNIST_CNN, "wide", MNIST_CNN.target, "mnist_cnn with twice the channels",
             channels=(64, 128)),
    FASHION_MNIST_CNN,
    _variant(FASHION_MNIST_CNN, "tanh", FASHION_MNIST_CNN.target,
             "fashion_mnist_cnn with tanh activations", activation="tanh"),
    _variant(FASHION_MNIST_CNN, "wide", FASHION_MNIST_CNN.target,
             "fashion_mnist_cnn with twice the channels", channels=(64, 128)),
    CIFAR10_RESNET,
    _variant(CIFAR10_RESNET, "gelu", CIFAR10_RESNET.target, "cifar10_resnet with GELU",
             activation="gelu"),
    _variant(CIFAR10_RESNET, "no_norm", Target("accuracy", "max", 0.70, 0.70),
             "cifar10_resnet without batch norm (as the batch-size studies' ResNet-8)",
             norm="none"),
    *LADDER.values(),
    SYNTHETIC,
    _variant(SYNTHETIC, "tanh", Target("loss", "min", 0.0911, 0.0938),
             "synthetic with tanh activations", activation="tanh"),
    _variant(SYNTHETIC, "large_init", Target("loss", "min", 0.1011, 0.1107),
             "synthetic with weights initialised 3x larger", init_scale=3.0),
]

CATALOG: dict[str, WorkloadSpec] = {w.name: w for w in _ENTRIES}

# What each dataset key is, and its train / validation / test sizes (datasets/<name>.md: cards)
DATASETS: dict[str, tuple[str, str]] = {
    "digits": ("scikit-learn's 8x8 digits", "1,197 / 300 / 300"),
    "mnist1d": ("MNIST-1D, generated offline", "10,000 / 5,000 / 5,000"),
    "tinyshakespeare": ("tiny-Shakespeare characters", "90 / 5 / 5 % of 1.1 M"),
    "mnist": ("MNIST", "54,000 / 6,000 / 10,000"),
    "fashion_mnist": ("Fashion-MNIST", "54,000 / 6,000 / 10,000"),
    "cifar10": ("CIFAR-10", "45,000 / 5,000 / 10,000"),
    "synthetic": ("teacher network + noise", "generated per run"),
    "generated": ("generated topic Markov corpus", "fresh per run / fixed / fixed"),
}

_SHALLUE = ("Shallue et al., JMLR 2019, goals of Figure 1 (research/methods.md B.1): validation "
            "classification error {error} for {dataset} / {model}; the test target restates it")
_DAWNBENCH = ("DAWNBench CIFAR10 threshold: top-1 test accuracy >= 94% (research/peers.md 1); "
              "the validation target restates it")
_LADDER_CITATION = ("ladder rung: the generated corpus' entropy-rate lower bound (the loss with "
                    "the hidden topic known, 3.3295 +- 0.0021 nats, docs/ladder.md), floored to 3.32; "
                    "the ladder compares final losses at fixed token budgets, not times to target")
# Entries whose targets are published goals, not set by `pacebench set-targets` here: name -> source
PUBLISHED_TARGETS: dict[str, str] = {
    "mnist_cnn": _SHALLUE.format(error=0.01, dataset="MNIST", model="Simple CNN"),
    "mnist_cnn_tanh": _SHALLUE.format(error=0.01, dataset="MNIST", model="Simple CNN")
    + "; the base model's goal, restated for the variant",
    "mnist_cnn_wide": _SHALLUE.format(error=0.01, dataset="MNIST", model="Simple CNN")
    + "; the base model's goal, restated for the variant",
    "fashion_mnist_cnn": _SHALLUE.format(error=0.10, dataset="Fashion-MNIST", model="Simple CNN"),
    "fashion_mnist_cnn_tanh": _SHALLUE.format(error=0.10, dataset="Fashion-MNIST",
                                              model="Simple CNN")
    + "; the base model's goal, restated for the variant",
    "fashion_mnist_cnn_wide": _SHALLUE.format(error=0.10, dataset="Fashion-MNIST",
                                              model="Simple CNN")
    + "; the base model's goal, restated for the variant",
    "cifar10_resnet": _DAWNBENCH,
    "cifar10_resnet_gelu": _DAWNBENCH + "; the base model's goal, restated for the variant",
    "cifar10_resnet_no_norm": _SHALLUE.format(error=0.30, dataset="CIFAR-10", model="ResNet-8")
    + "; that ResNet-8 has no batch norm (Lee et al.'s release, research/methods.md B.2), as this "
      "variant",
    "shakespeare_char_gpu": "the tuned target of shakespeare_char (targets/shakespeare_char.json) "
                            "as first set, within 75 % of its step hint (the CPU model's record "
                            "now counts 50 %, a looser value), restated for the larger model: "
                            "same data, a stricter goal, more capacity",
    **{name: _LADDER_CITATION for name in LADDER},
}


# Plug-in workloads registered in this process (runners/plugins.py loads their factories):
# name -> (catalog entry, source spec, the source file's sha256 or None)
_PLUGINS: dict[str, tuple[WorkloadSpec, str, str | None]] = {}


def register_plugin(spec: WorkloadSpec, source: str, sha256: str | None) -> None:
    """Register a plug-in's catalog entry for this process; a built-in's name, or a name that
    another source registered, is refused (UserError)."""
    check_name("workload name", spec.name)
    if spec.name in CATALOG:
        raise UserError(f"workload {spec.name!r} is a built-in's name: give yours another")
    known = _PLUGINS.get(spec.name)
    if known is not None and known[1:] != (source, sha256):
        raise UserError(f"two workloads are named {spec.name!r}: from {known[1]} and {source}")
    _PLUGINS[spec.name] = (spec, source, sha256)


def plugin_source(name: str) -> tuple[str, str | None] | None:
    """(source spec, sha256) of plug-in workload `name` registered here, or None."""
    known = _PLUGINS.get(name)
    return None if known is None else known[1:]


def get_workload(name: str) -> WorkloadSpec:
    """The catalog entry called `name` (a built-in, or a plug-in registered here); a miss lists
    the valid names."""
    try:
        return CATALOG[name] if name in CATALOG else _PLUGINS[name][0]
    except KeyError:
        raise UnknownNameError(f"unknown workload {name!r}: known are "
                               f"{', '.join([*CATALOG, *_PLUGINS])}") from None


def scoring_eval_period(spec: WorkloadSpec) -> float:
    """The scoring eval period of catalog entry `spec` in training seconds (AlgoPerf's
    eval_period_time_sec): SCORING_EVAL_PERIOD_S of its name, else of its base, else its eval
    cadence in seconds
    (a step cadence converted at its budget's pace)."""
    for name in (spec.name, spec.base):
        if name in SCORING_EVAL_PERIOD_S and name in CATALOG:
            return SCORING_EVAL_PERIOD_S[name]
    if spec.eval_every.seconds is not None:
        return spec.eval_every.seconds
    return spec.budget.seconds * spec.eval_every.steps / spec.budget.steps


def workload_names() -> list[str]:
    return list(CATALOG)


def base_workloads() -> list[str]:
    return [n for n, w in CATALOG.items() if not w.is_variant]


def variants_of(base: str) -> list[str]:
    """Names of the variants of base workload `base` (not including the base itself)."""
    get_workload(base)
    return [n for n, w in CATALOG.items() if w.base == base and w.is_variant]


@functools.cache
def target_record(name: str) -> dict[str, Any] | None:
    """The committed target-setting record of catalog workload `name` (None when there is none,
    e.g. a workload of an imported benchmark)."""
    if name not in CATALOG:
        return None
    try:
        record = json.loads((TARGETS_DIR / f"{name}.json").read_text())
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def noise_floor_of(name: str) -> NoiseFloor | None:
    """The noise floor measured when `name`'s target was set (None: not measured, e.g. a
    published target or a workload that is not in the catalog)."""
    floor = (target_record(name) or {}).get("noise_floor")
    try:
        return NoiseFloor.from_dict(floor) if isinstance(floor, dict) else None
    except (KeyError, TypeError, ValueError):  # a hand-edited record: no floor, not a crash
        return None


def tuned_baseline(name: str) -> tuple[str, dict[str, Any]] | None:
    """(algorithm, hyperparameters) of the tuned baseline that set `name`'s target, or None."""
    record = target_record(name) or {}
    if isinstance(record.get("best_algorithm"), str) and isinstance(record.get("best_hparams"),
                                                                    dict):
        return record["best_algorithm"], record["best_hparams"]
    return None


def median_steps_to_target(name: str) -> float | None:
    """The median steps to target of `name`'s tuned baseline over its reruns that reached it
    (its target record's `median_steps_to_target`), or None: not measured (a published target,
    a workload that is not in the catalog)."""
    value = (target_record(name) or {}).get("median_steps_to_target")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        return None  # absent, null or hand-edited into nonsense: not measured
    return float(value)


def cadence_limit(name: str) -> int:
    """The coarsest step cadence the catalog allows `name` (see the module doc): 1/CADENCE_SHARE
    of its median steps to target, or of its step hint where no median is measured; at least 1."""
    steps = median_steps_to_target(name) or get_workload(name).step_hint
    return max(1, int(steps // CADENCE_SHARE))
