"""The AlgoPerf submission API's shared vocabulary, for submission files run by Pacebench.

Enums, the early-stop exception, the type aliases that submissions annotate with, and the workload
surface a submission may call. Written from AlgoPerf's documented API (docs/DOCUMENTATION.md);
used only when the real `algoperf` package is not installed.
"""
from __future__ import annotations

import abc
import enum
from typing import Any, Callable, Dict, Mapping, Optional, Tuple, Union


class LossType(enum.Enum):
    """The loss a workload's `loss_fn` computes (passed to update_params as `loss_type`)."""

    SOFTMAX_CROSS_ENTROPY = 0
    SIGMOID_CROSS_ENTROPY = 1
    MEAN_SQUARED_ERROR = 2
    CTC_LOSS = 3
    MEAN_ABSOLUTE_ERROR = 4


class ForwardPassMode(enum.Enum):
    """`mode` of model_fn: TRAIN (gradients, train-mode layers) or EVAL (no gradients)."""

    TRAIN = 0
    EVAL = 1


class ParameterType(enum.Enum):
    """The role of one parameter tensor, as listed in `workload.model_params_types`."""

    WEIGHT = 0
    BIAS = 1
    CONV_WEIGHT = 2
    BATCH_NORM_SCALE = 3
    BATCH_NORM_BIAS = 4
    LAYER_NORM_SCALE = 5
    LAYER_NORM_BIAS = 6
    EMBEDDING = 7
    ATTENTION_Q = 8
    ATTENTION_K = 9
    ATTENTION_V = 10
    ATTENTION_OUT = 11
    ATTENTION_QKV = 12
    ATTENTION_KV = 13
    ATTENTION_BIAS = 14


class TrainingCompleteError(Exception):
    """Raised by a submission (update_params or data_selection) to end training early."""


class ShapeTuple:
    """The shape of one parameter, as found in `workload.param_shapes`."""

    def __init__(self, shape_tuple: Tuple[int, ...]) -> None:
        self.shape_tuple = tuple(int(d) for d in shape_tuple)

    def __repr__(self) -> str:
        return f"ShapeTuple({self.shape_tuple})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ShapeTuple) and other.shape_tuple == self.shape_tuple

    def __hash__(self) -> int:
        return hash(self.shape_tuple)


# --- type aliases used in submissions' annotations (PyTorch: containers are nn.Modules)
Shape = Tuple[int, ...]
ParameterKey = str
ParameterShapeTree = Dict[ParameterKey, Any]
ParameterTypeTree = Dict[ParameterKey, Any]
ParameterContainer = Any          # PyTorch: the torch.nn.Module itself
ParameterTree = Any
ModelAuxiliaryState = Any         # e.g. batch-norm statistics; None when the model has none
ModelInitState = Tuple[ParameterContainer, ModelAuxiliaryState]
OptimizerState = Union[Dict[str, Any], Tuple[Any, ...]]
UpdateReturn = Tuple[OptimizerState, ParameterContainer, ModelAuxiliaryState]
Hyperparameters = Any             # a namedtuple built from the trial's dict (None when self-tuning)
RandomState = Any                 # PRNG key: see algoperf.random_utils
Tensor = Any
Timing = float
Steps = int
EvalMetrics = Dict[str, float]
TrainState = Mapping[str, Any]    # read-only; passed only to update_params that take `train_state`
LossFn = Callable[..., Dict[str, Any]]
InitOptimizerFn = Callable[..., OptimizerState]
UpdateParamsFn = Callable[..., UpdateReturn]
PrepareForEvalFn = Callable[..., UpdateReturn]
DataSelectionFn = Callable[..., Dict[str, Tensor]]
GetBatchSizeFn = Callable[[str], int]


class Workload(abc.ABC):
    """What a submission may use of a workload; Pacebench's adapter is registered as one."""

    @abc.abstractmethod
    def init_model_fn(self, rng: RandomState, dropout_rate: Optional[float] = None,
                      aux_dropout_rate: Optional[float] = None) -> ModelInitState:
        """A freshly initialised (params, model_state)."""

    @abc.abstractmethod
    def model_fn(self, params: ParameterContainer,
                 augmented_and_preprocessed_input_batch: Dict[str, Tensor],
                 model_state: ModelAuxiliaryState, mode: ForwardPassMode, rng: RandomState,
                 update_batch_norm: bool,
                 dropout_rate: Optional[float] = None) -> Tuple[Tensor, ModelAuxiliaryState]:
        """(logits, new model_state) for the batch's inputs."""

    @abc.abstractmethod
    def loss_fn(self, label_batch: Tensor, logits_batch: Tensor,
                mask_batch: Optional[Tensor] = None,
                label_smoothing: float = 0.0) -> Dict[str, Tensor]:
        """{"summed", "n_valid_examples", "per_example"}: unregularised, unsynced across devices."""

    @abc.abstractmethod
    def is_output_params(self, param_key: ParameterKey) -> bool:
        """True for the parameters of the output layer."""

    @property
    @abc.abstractmethod
    def param_shapes(self) -> ParameterShapeTree:
        """Parameter name -> ShapeTuple."""

    @property
    @abc.abstractmethod
    def model_params_types(self) -> ParameterTypeTree:
        """Parameter name -> ParameterType."""

    @property
    @abc.abstractmethod
    def loss_type(self) -> LossType:
        """The loss loss_fn computes."""

    @property
    @abc.abstractmethod
    def step_hint(self) -> int:
        """Steps a good schedule may plan for (schedules are laid over it)."""

    @property
    @abc.abstractmethod
    def target_metric_name(self) -> str:
        """The metric the targets are stated in, e.g. "accuracy"."""

    @property
    @abc.abstractmethod
    def validation_target_value(self) -> float:
        """Validation target of `target_metric_name`."""

    @property
    @abc.abstractmethod
    def test_target_value(self) -> float:
        """Test target of `target_metric_name`."""

    @property
    @abc.abstractmethod
    def max_allowed_runtime_sec(self) -> float:
        """Training-time budget in seconds."""

    @property
    @abc.abstractmethod
    def eval_period_time_sec(self) -> float:
        """Training seconds between evals."""

    @property
    @abc.abstractmethod
    def num_train_examples(self) -> int:
        """Size of the training set."""
