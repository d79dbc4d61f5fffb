"""The AlgoPerf workload surface over one of our workloads, for AlgoPerf submissions to call.

An AlgoPerf submission drives a workload through `model_fn`, `loss_fn`, `param_shapes`,
`model_params_types`, `step_hint`, the target values and a few more. `AlgoPerfWorkload` provides
exactly that over a built `runners.api.Workload`, with AlgoPerf's PyTorch conventions: the
parameter container is the `torch.nn.Module` itself, there is no model state (None), and
parameters are keyed by their `named_parameters()` names. Our models have no dropout and no batch
norm, so `dropout_rate` and `update_batch_norm` are accepted and have no effect.

The enums and ShapeTuple come from the `algoperf.spec` module the submission itself imports (the
real package when installed, else runners/algoperf/compat), passed in as `api`.
"""
from __future__ import annotations

import abc
from types import ModuleType
from typing import Any, Mapping

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from runners.api import Workload
from workbench.catalog import scoring_eval_period
from workbench.errors import UserError
from workbench.records import metric_column

__all__ = ["AlgoPerfWorkload", "parameter_types", "seed_from_rng", "LOSS_TYPES"]

# catalog `loss` -> AlgoPerf LossType member name
LOSS_TYPES = {"softmax_cross_entropy": "SOFTMAX_CROSS_ENTROPY",
              "mean_squared_error": "MEAN_SQUARED_ERROR"}
# Linear layers inside an attention block, by their attribute name -> ParameterType member name
ATTENTION_LINEARS = {"qkv": "ATTENTION_QKV", "in_proj": "ATTENTION_QKV", "kv": "ATTENTION_KV",
                     "q": "ATTENTION_Q", "query": "ATTENTION_Q", "k": "ATTENTION_K",
                     "key": "ATTENTION_K", "v": "ATTENTION_V", "value": "ATTENTION_V",
                     "proj": "ATTENTION_OUT", "out_proj": "ATTENTION_OUT", "out": "ATTENTION_OUT"}
SURFACE = ("init_model_fn", "model_fn", "loss_fn", "param_shapes", "model_params_types",
           "is_output_params", "loss_type", "step_hint", "target_metric_name",
           "validation_target_value", "test_target_value", "has_reached_validation_target",
           "has_reached_test_target", "max_allowed_runtime_sec", "eval_period_time_sec",
           "num_train_examples", "metrics_logger")


def seed_from_rng(rng: Any) -> int:
    """An int seed from an AlgoPerf `rng` (an int, or a PRNG key array of uint32 words)."""
    if isinstance(rng, (int, np.integer)):
        return int(rng) % 2**31
    words = [int(w) for w in np.asarray(rng, dtype=np.uint64).ravel()]
    return int(np.random.SeedSequence(words).generate_state(1)[0]) % 2**31


def _is_attention(module: nn.Module, name: str) -> bool:
    leaf = name.rsplit(".", 1)[-1].lower()
    return "attn" in leaf or "attention" in leaf or "Attention" in type(module).__name__


def _param_type(model: nn.Module, module_name: str, module: nn.Module, pname: str,
                p: torch.Tensor, types: Any) -> Any:
    """The ParameterType of parameter `pname` of `module` (called `module_name` in `model`)."""
    bias = pname.endswith("bias")
    if isinstance(module, (nn.LayerNorm, nn.GroupNorm, nn.RMSNorm)):
        return types.LAYER_NORM_BIAS if bias else types.LAYER_NORM_SCALE
    if isinstance(module, nn.modules.batchnorm._BatchNorm):
        return types.BATCH_NORM_BIAS if bias else types.BATCH_NORM_SCALE
    if isinstance(module, nn.Embedding):
        return types.EMBEDDING
    if isinstance(module, nn.modules.conv._ConvNd):
        return types.BIAS if bias else types.CONV_WEIGHT
    if isinstance(module, nn.MultiheadAttention):
        return types.ATTENTION_BIAS if bias else types.ATTENTION_QKV
    parent_name, _, leaf = module_name.rpartition(".")
    if isinstance(module, nn.Linear) and leaf in ATTENTION_LINEARS:
        parent = model.get_submodule(parent_name) if parent_name else model
        if _is_attention(parent, parent_name):
            return types.ATTENTION_BIAS if bias else getattr(types, ATTENTION_LINEARS[leaf])
    return types.BIAS if bias or p.dim() <= 1 else types.WEIGHT


def parameter_types(model: nn.Module, types: Any) -> dict[str, Any]:
    """Parameter name -> member of the ParameterType enum `types`, in named_parameters() order."""
    names = dict(model.named_parameters())
    out = {}
    for module_name, module in model.named_modules():
        for pname, p in module.named_parameters(recurse=False):
            key = f"{module_name}.{pname}" if module_name else pname
            if key in names:  # tied parameters are listed once, under their first name
                out[key] = _param_type(model, module_name, module, pname, p, types)
    return {k: out[k] for k in names}


def _output_layer(model: nn.Module) -> str | None:
    """Name of the last Linear module (the head), or None when the model has none."""
    linears = [name for name, m in model.named_modules() if isinstance(m, nn.Linear)]
    return linears[-1] if linears else None


class AlgoPerfWorkload:
    """AlgoPerf's workload surface over `workload`; `api` is the `algoperf.spec` module in use.

    `last_loss` holds the mean loss (detached) of the latest `loss_fn` call, so the runner can log
    the training loss a submission computed without an extra forward pass.
    """

    def __init__(self, workload: Workload, api: ModuleType, model: nn.Module) -> None:
        if isinstance(api.Workload, abc.ABCMeta):  # so isinstance(w, spec.Workload) holds
            api.Workload.register(AlgoPerfWorkload)
        self.workload = workload
        self.api = api
        self.metrics_logger = None  # AlgoPerf's optional logger; submissions must cope with None
        self.last_loss: torch.Tensor | None = None
        self.attach(model)

    def attach(self, model: nn.Module) -> None:
        """Make `model` the current parameter container (param_shapes/types describe it)."""
        self._model = model
        self._types = parameter_types(model, self.api.ParameterType)
        self._shapes = {k: self.api.ShapeTuple(tuple(p.shape))
                        for k, p in model.named_parameters()}
        self._output_layer = _output_layer(model)

    def __getattr__(self, name: str) -> Any:
        # only reached for attributes that do not exist: name what does
        raise AttributeError(f"the AlgoPerf workload surface has no {name!r}: Pacebench provides "
                             f"{', '.join(SURFACE)}")

    # --- functions a submission calls
    def init_model_fn(self, rng: Any, dropout_rate: float | None = None,
                      aux_dropout_rate: float | None = None) -> tuple[nn.Module, None]:
        """(a freshly initialised model, None) seeded from `rng`; it becomes the current one."""
        model = self.workload.init_model(seed_from_rng(rng))
        self.attach(model)
        return model, None

    def model_fn(self, params: nn.Module, augmented_and_preprocessed_input_batch: Mapping[str, Any],
                 model_state: Any, mode: Any, rng: Any, update_batch_norm: bool,
                 dropout_rate: float | None = None) -> tuple[torch.Tensor, Any]:
        """(logits, model_state): logits (B, classes), (B, T, vocab) or (B, 1) for regression.

        EVAL mode runs the model in eval mode under no_grad; TRAIN mode in train mode.
        """
        inputs = augmented_and_preprocessed_input_batch["inputs"]
        if getattr(mode, "name", mode) == "EVAL":
            params.eval()
            with torch.no_grad():
                return params(inputs), model_state
        params.train()
        return params(inputs), model_state

    def loss_fn(self, label_batch: torch.Tensor, logits_batch: torch.Tensor,
                mask_batch: torch.Tensor | None = None,
                label_smoothing: float = 0.0) -> dict[str, Any]:
        """{"summed", "n_valid_examples", "per_example"}; per_example has the labels' shape.

        Softmax cross-entropy (nats) for classification, over the last axis of the logits (token
        sequences are scored per token); squared error averaged over output features for
        regression. `mask_batch` (same shape as per_example) weights and counts the examples.
        """
        if self.workload.spec.loss == "mean_squared_error":
            sq = (logits_batch - label_batch) ** 2
            per_example = sq.mean(dim=tuple(range(1, sq.dim()))) if sq.dim() > 1 else sq
        else:
            classes = logits_batch.shape[-1]
            per_example = F.cross_entropy(logits_batch.reshape(-1, classes),
                                          label_batch.reshape(-1), reduction="none",
                                          label_smoothing=label_smoothing)
            per_example = per_example.reshape(label_batch.shape)
        if mask_batch is not None:
            per_example = per_example * mask_batch
            n_valid = mask_batch.sum()
        else:
            n_valid = per_example.numel()
        summed = per_example.sum()
        self.last_loss = (summed / n_valid).detach()
        return {"summed": summed, "n_valid_examples": n_valid, "per_example": per_example}

    def is_output_params(self, param_key: str) -> bool:
        """True for the parameters of the model's last Linear layer (the output head)."""
        head = self._output_layer
        return head is not None and param_key.startswith(f"{head}.")

    def has_reached_validation_target(self, eval_result: Mapping[str, float]) -> bool:
        return self._reached(eval_result, "validation")

    def has_reached_test_target(self, eval_result: Mapping[str, float]) -> bool:
        return self._reached(eval_result, "test")

    def _reached(self, eval_result: Mapping[str, float], split: str) -> bool:
        target = self.workload.spec.target
        return target.reached(eval_result.get(metric_column(split, target.metric)), split)

    # --- facts a submission reads
    @property
    def param_shapes(self) -> dict[str, Any]:
        """Parameter name -> ShapeTuple of the current model."""
        return self._shapes

    @property
    def model_params_types(self) -> dict[str, Any]:
        """Parameter name -> ParameterType of the current model."""
        return self._types

    @property
    def loss_type(self) -> Any:
        try:
            return getattr(self.api.LossType, LOSS_TYPES[self.workload.spec.loss])
        except KeyError:
            raise UserError(f"workload {self.workload.spec.name!r}: loss "
                            f"{self.workload.spec.loss!r} has no AlgoPerf LossType; known are "
                            f"{', '.join(LOSS_TYPES)}") from None

    @property
    def step_hint(self) -> int:
        return self.workload.spec.step_hint

    @property
    def target_metric_name(self) -> str:
        return self.workload.spec.target.metric

    @property
    def validation_target_value(self) -> float:
        return self.workload.spec.target.validation

    @property
    def test_target_value(self) -> float:
        return self.workload.spec.target.test

    @property
    def max_allowed_runtime_sec(self) -> float:
        """The catalog's training-time budget (seconds, before any self-tuning multiplier)."""
        return self.workload.spec.budget.seconds

    @property
    def eval_period_time_sec(self) -> float:
        """AlgoPerf's meaning: the workload's scoring eval period in training seconds, which
        submissions read to size their work (workbench.catalog.scoring_eval_period), not how
        often Pacebench evaluates (its eval cadence may be finer)."""
        return scoring_eval_period(self.workload.spec)

    @property
    def num_train_examples(self) -> int:
        return self.workload.num_train_examples
