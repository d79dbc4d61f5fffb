"""Run an AlgoPerf-API PyTorch submission file, unchanged, as a Pacebench training algorithm.

A submission is a `submission.py` defining `get_batch_size`, `init_optimizer_state`,
`update_params` and `data_selection` (and optionally `prepare_for_eval`), as in AlgoPerf's
documented API. `AlgoPerfAlgorithm` loads it by path and maps the protocols:

  ours (runners/run/loop.py)        -> the submission's
  batch_size(spec)              -> get_batch_size(name); if it raises for our workload names (it
                                   knows AlgoPerf's only), the catalog's batch size, with a warning
  init(model, workload)         -> init_optimizer_state(...)                 (before the clock)
  update(model, batch, step)    -> data_selection(...) then update_params(...)   (on the clock)
  prepare_for_eval(model)       -> prepare_for_eval(...) when defined            (on the clock)
  observe_eval(row)             -> appended to `eval_results`, as (step, metrics)

The runner owns data order: `data_selection` gets as `input_queue` an iterator whose next item is
the batch the loop drew for this step (extra `next()` calls in a step draw from a second,
separately seeded stream of the same workload). Hyperparameters arrive as AlgoPerf passes them: a
namedtuple of the trial's values (None when there are none, as in self-tuning). `spec.
TrainingCompleteError` becomes our TrainingComplete. The loss the loop logs is the mean of the last
`workload.loss_fn` call of the step (None, so not logged, when the submission made none).

The submission's imports of `algoperf.spec`, `algoperf.pytorch_utils` and `absl.logging` resolve
to the real packages when installed, else to runners/algoperf/compat (appended to sys.path, so it
never shadows an installation); the package's old name, `algorithmic_efficiency` (most v0.5 and
v0.6 PyTorch entries import it), is served by the same modules unless it is itself installed. An algorithm name "algoperf:<path>" selects a submission file.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import inspect
import logging
import os
import sys
from collections import namedtuple
from pathlib import Path
from types import MappingProxyType, ModuleType
from typing import Any, Callable, Iterator, Mapping

import numpy as np
import torch

from runners.algoperf.workload import AlgoPerfWorkload
from runners.api import Algorithm, Batch, TrainingComplete, Workload
from runners.plugins import ExitAtImport, load_file
from workbench.digest import file_sha256
from workbench.errors import UserError
from workbench.spec import WorkloadSpec

__all__ = ["AlgoPerfAlgorithm", "AlgoPerfWorkload", "SubmissionError", "ALGOPERF_PREFIX",
           "REQUIRED_FUNCTIONS", "algorithm_name", "submission_path", "load_submission",
           "ensure_algoperf_imports", "hyperparameters_from"]

log = logging.getLogger(__name__)

ALGOPERF_PREFIX = "algoperf:"  # algorithm name of a submission: "algoperf:<absolute path>"
REQUIRED_FUNCTIONS = ("get_batch_size", "init_optimizer_state", "update_params", "data_selection")
COMPAT_DIR = Path(__file__).resolve().parent / "algoperf_compat"  # holds algoperf/ and absl/
# rng streams derived from the run seed, one per use (AlgoPerf splits one key likewise)
RNG_INIT, RNG_UPDATE, RNG_DATA, RNG_EVAL = range(4)


class SubmissionError(UserError):
    """A submission file that cannot be run: missing file or function, or a bad return value."""


# --- names, files and imports ------------------------------------------------------------------
def algorithm_name(path: str | Path) -> str:
    """The algorithm name that selects the submission at `path`: "algoperf:<absolute path>"."""
    return ALGOPERF_PREFIX + str(Path(path).expanduser().resolve())


def submission_path(name: str) -> Path:
    """The submission file named by algorithm name "algoperf:<path>"."""
    if not name.startswith(ALGOPERF_PREFIX):
        raise SubmissionError(f"{name!r} is not an AlgoPerf submission name "
                              f"(expected {ALGOPERF_PREFIX}<path to submission.py>)")
    return Path(name[len(ALGOPERF_PREFIX):]).expanduser().resolve()


OLD_PACKAGE = "algorithmic_efficiency"  # AlgoPerf's package name before it became `algoperf`


class _OldPackageName(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves `algorithmic_efficiency[.x]` with the very modules of `algoperf[.x]` (one module
    object under both names, so `spec.TrainingCompleteError` is the same class either way), for
    submissions written before AlgoPerf renamed its package. Installed only when no real
    `algorithmic_efficiency` is importable."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname == OLD_PACKAGE or fullname.startswith(OLD_PACKAGE + "."):
            return importlib.util.spec_from_loader(fullname, self)
        return None

    def create_module(self, spec):
        return importlib.import_module("algoperf" + spec.name[len(OLD_PACKAGE):])

    def exec_module(self, module) -> None:
        """Nothing to run: the module is algoperf's, already executed."""


def ensure_algoperf_imports() -> list[str]:
    """Make `import algoperf...`, `import algorithmic_efficiency...` and `from absl import
    logging` work; returns what the shims serve.

    Appends runners/algoperf/compat to sys.path only when `algoperf` or `absl` is not importable
    (appended last, it loses to any installed package of the same name); serves the old package
    name from `algoperf` only when no real `algorithmic_efficiency` is installed.
    """
    missing = [name for name in ("algoperf", "absl") if importlib.util.find_spec(name) is None]
    if missing and str(COMPAT_DIR) not in sys.path:
        sys.path.append(str(COMPAT_DIR))
    if not any(isinstance(f, _OldPackageName) for f in sys.meta_path):
        if importlib.util.find_spec(OLD_PACKAGE) is None:
            sys.meta_path.insert(0, _OldPackageName())  # before the path finder: one module
    if any(isinstance(f, _OldPackageName) for f in sys.meta_path):
        missing.append(OLD_PACKAGE)
    return missing


ROOT_ENV = "PACEBENCH_ALGOPERF_ROOT"  # --algoperf-root: folders (os.pathsep) on the import path


def algoperf_roots() -> list[str]:
    """The repository roots that --algoperf-root gave (through the environment, so that every
    worker process of the launcher sees them)."""
    return [r for r in os.environ.get(ROOT_ENV, "").split(os.pathsep) if r]


def set_algoperf_roots(roots: list[str | Path]) -> None:
    """Put the folders `roots` on the import path of submissions, here and in the workers."""
    for root in roots:
        if not Path(root).is_dir():
            raise SubmissionError(f"--algoperf-root {root}: not a folder")
    os.environ[ROOT_ENV] = os.pathsep.join(str(Path(r).resolve()) for r in roots)


def load_submission(path: str | Path) -> ModuleType:
    """Import the submission file at `path` as a module and check its required functions.

    Its folder is appended to sys.path, so a submission split over several files imports them,
    and so are the --algoperf-root folders (algoperf_roots), for a submission that imports its
    helpers relative to its repository's root (`from submissions.x.helpers import ...`).
    """
    path = Path(path).expanduser().resolve()
    if not path.is_file():
        raise SubmissionError(f"AlgoPerf submission file not found: {path}")
    ensure_algoperf_imports()
    for folder in [str(path.parent), *algoperf_roots()]:
        if folder not in sys.path:
            sys.path.append(folder)
    name = f"algoperf_submission_{file_sha256(path)[:12]}"
    try:
        module = load_file(path, name)
    except KeyboardInterrupt:  # Ctrl-C stops the command, whatever it was importing
        raise
    except ExitAtImport as err:
        raise SubmissionError(f"could not import submission {path}: {err}") from None
    except BaseException as err:  # a syntax error, a failed import, anything its top level
        if isinstance(err, ModuleNotFoundError) and err.name:
            package = err.name.split(".")[0]
            raise SubmissionError(
                f"submission {path} imports {err.name!r}, which is not installed here: install "
                f"{package!r} into this environment (pip install {package}), or, if it is a "
                "folder of the submission's repository, pass --algoperf-root <that repository's "
                "root>") from err
        where = f" (line {err.lineno})" if isinstance(err, SyntaxError) and err.lineno else ""
        raise SubmissionError(f"could not import submission {path}: {type(err).__name__}"
                              f"{where}: {err.msg if isinstance(err, SyntaxError) else err}") \
            from err
    missing = [f for f in REQUIRED_FUNCTIONS if not callable(getattr(module, f, None))]
    if missing:
        raise SubmissionError(f"submission {path} does not define {', '.join(missing)}: an AlgoPerf "
                              f"submission defines {', '.join(REQUIRED_FUNCTIONS)} "
                              "(prepare_for_eval is optional)")
    return module


def hyperparameters_from(hparams: Mapping[str, Any]) -> Any:
    """The trial's hyperparameters as AlgoPerf passes them: a namedtuple; None when empty."""
    if not hparams:
        return None
    try:
        cls = namedtuple("Hyperparameters", list(hparams))
    except ValueError as err:
        raise SubmissionError(f"hyperparameter names must be Python identifiers for attribute "
                              f"access ({err}); got {', '.join(map(repr, hparams))}") from None
    return cls(**hparams)


def _rng(seed: int, stream: int, step: int = 0) -> np.ndarray:
    """A PRNG key (two uint32) for `stream` at `step`, derived from the run seed."""
    return np.random.SeedSequence([seed, stream, step]).generate_state(2, dtype=np.uint32)


def _algoperf_batch(batch: Batch) -> dict[str, torch.Tensor]:
    """Our batch with AlgoPerf's keys: token-sequence targets get per-token 'weights' of 1."""
    out = dict(batch)
    targets = out["targets"]
    if "weights" not in out and targets.dim() >= 2 and not targets.is_floating_point():
        out["weights"] = torch.ones(targets.shape, dtype=torch.float32, device=targets.device)
    return out


class _InputQueue(Iterator[dict]):
    """`input_queue` for data_selection: this step's batch from the loop, then an extra stream."""

    def __init__(self, extra: Callable[[int], Iterator[Batch]]) -> None:
        self._extra_factory = extra  # batch_size -> a stream of further batches
        self._extra: Iterator[Batch] | None = None
        self._pending: dict | None = None
        self._batch_size = 0

    def put(self, batch: Batch) -> None:
        """Hand over the loop's batch for the coming step."""
        self._pending = _algoperf_batch(batch)
        self._batch_size = len(batch["inputs"])

    def __next__(self) -> dict:
        if self._pending is not None:
            batch, self._pending = self._pending, None
            return batch
        if self._extra is None:
            log.info("data_selection took more than one batch in a step: further batches come "
                     "from a second, separately seeded stream (not counted in `examples`)")
            self._extra = self._extra_factory(self._batch_size)
        return _algoperf_batch(next(self._extra))


# --- the adapter -------------------------------------------------------------------------------
class AlgoPerfAlgorithm(Algorithm):
    """An AlgoPerf submission file driven through our Algorithm protocol (see the module doc)."""

    name = "algoperf"

    def __init__(self, path: str | Path, hparams: Mapping[str, Any] | None = None) -> None:
        super().__init__(hparams or {})
        self.path = Path(path).expanduser().resolve()
        self.module = load_submission(self.path)
        self.sha256 = file_sha256(self.path)
        self.name = algorithm_name(self.path)
        self.api = importlib.import_module("algoperf.spec")
        self.hyperparameters = hyperparameters_from(self.hparams)
        params = inspect.signature(self.module.update_params).parameters
        self._takes_train_state = "train_state" in params
        self.workload: AlgoPerfWorkload | None = None
        self.params: torch.nn.Module | None = None  # the submission's current_param_container
        self.optimizer_state: Any = None
        self.model_state: Any = None
        self.eval_results: list[tuple[int, dict[str, float]]] = []
        self.train_state: dict[str, Any] = {}
        self.global_step = 0
        self.seed = 0
        self.queue: _InputQueue | None = None

    @classmethod
    def from_name(cls, name: str, hparams: Mapping[str, Any] | None = None) -> "AlgoPerfAlgorithm":
        """The adapter for algorithm name "algoperf:<path>"."""
        return cls(submission_path(name), hparams)

    def provenance(self) -> dict[str, Any]:
        return {"kind": "algoperf_submission", "path": str(self.path), "sha256": self.sha256,
                **({"algoperf_root": algoperf_roots()} if algoperf_roots() else {})}

    def batch_size(self, spec: WorkloadSpec) -> int:
        """get_batch_size(name), then of the base workload; else the catalog's, with a warning."""
        error: Exception | None = None
        for name in dict.fromkeys((spec.name, spec.base)):
            try:
                value = self.module.get_batch_size(name)
            except (LookupError, ValueError, NotImplementedError) as err:
                error = err  # submissions know AlgoPerf's workload names only
                continue
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise SubmissionError(f"get_batch_size({name!r}) in {self.path} returned {value!r}; "
                                      "expected a positive int")
            return int(value)
        log.warning("get_batch_size(%r) of %s raised %s (%s); using the workload's default batch "
                    "size %d", spec.name, self.path, type(error).__name__, error,
                    spec.batch_size)
        return spec.batch_size

    def init(self, model: torch.nn.Module, workload: Workload) -> None:
        """init_optimizer_state(workload, model, None, hyperparameters, rng); off the clock."""
        self.seed = torch.initial_seed()  # the run's seed: runners.run.loop.prepare set it
        self.workload = AlgoPerfWorkload(workload, self.api, model)
        self.params = model
        self.queue = _InputQueue(lambda n: workload.train_batches(n, self.seed + 1))
        self.optimizer_state = self.module.init_optimizer_state(
            self.workload, model, self.model_state, self.hyperparameters,
            _rng(self.seed, RNG_INIT))

    def update(self, model: torch.nn.Module, batch: Batch, step: int,
               workload: Workload) -> torch.Tensor | None:
        """data_selection then update_params on this step's batch; returns the loss_fn mean."""
        self.queue.put(batch)
        self.workload.last_loss = None
        common = dict(workload=self.workload, current_param_container=self.params,
                      model_state=self.model_state, hyperparameters=self.hyperparameters,
                      optimizer_state=self.optimizer_state, global_step=step)
        try:
            selected = self.module.data_selection(input_queue=self.queue,
                                                  rng=_rng(self.seed, RNG_DATA, step), **common)
            extra = {"train_state": MappingProxyType(dict(self.train_state))} \
                if self._takes_train_state else {}
            out = self.module.update_params(
                current_params_types=self.workload.model_params_types, batch=selected,
                loss_type=self.workload.loss_type, eval_results=self.eval_results,
                rng=_rng(self.seed, RNG_UPDATE, step), **common, **extra)
        except self.api.TrainingCompleteError as err:
            raise TrainingComplete(str(err)) from err
        self._take(out, "update_params")
        self.global_step = step + 1
        return self.workload.last_loss

    def prepare_for_eval(self, model: torch.nn.Module) -> None:
        """The submission's prepare_for_eval when defined; the loop's model then gets its params."""
        fn = getattr(self.module, "prepare_for_eval", None)
        if fn is not None:
            out = fn(workload=self.workload, current_param_container=self.params,
                     current_params_types=self.workload.model_params_types,
                     model_state=self.model_state, hyperparameters=self.hyperparameters,
                     loss_type=self.workload.loss_type, optimizer_state=self.optimizer_state,
                     eval_results=self.eval_results, global_step=self.global_step,
                     rng=_rng(self.seed, RNG_EVAL, self.global_step))
            self._take(out, "prepare_for_eval")
        if self.params is not model:  # the submission replaced the module: evaluate what it holds
            model.load_state_dict(self.params.state_dict())

    def observe_eval(self, row: Mapping[str, Any]) -> None:
        """Record the eval for `eval_results` and `train_state` (AlgoPerf's names for times)."""
        metrics = {k: v for k, v in row.items() if "/" in k}
        metrics.update(score=row["train_seconds"], total_duration=row["wall_seconds"],
                       accumulated_submission_time=row["train_seconds"],
                       accumulated_eval_time=row["eval_seconds"])
        self.eval_results.append((int(row["step"]), metrics))
        self.train_state.update(  # times are as of this eval: the adapter reads no clock itself
            validation_goal_reached=self.train_state.get("validation_goal_reached", False)
            or self.workload.has_reached_validation_target(metrics),
            test_goal_reached=self.train_state.get("test_goal_reached", False)
            or self.workload.has_reached_test_target(metrics),
            is_time_remaining=True, training_complete=False,
            last_eval_time=row["wall_seconds"], last_step_end_time=row["wall_seconds"],
            accumulated_submission_time=row["train_seconds"],
            accumulated_eval_time=row["eval_seconds"], accumulated_logging_time=0.0)

    def _take(self, out: Any, fn: str) -> None:
        """Keep (optimizer_state, params, model_state) returned by the submission's `fn`."""
        if not (isinstance(out, tuple) and len(out) == 3):
            raise SubmissionError(f"{fn} in {self.path} returned {type(out).__name__}; expected "
                                  "(optimizer_state, current_param_container, model_state)")
        optimizer_state, params, model_state = out
        if not isinstance(params, torch.nn.Module):
            raise SubmissionError(f"{fn} in {self.path} returned a current_param_container of type "
                                  f"{type(params).__name__}; PyTorch submissions return the model "
                                  "(a torch.nn.Module)")
        if params is not self.params:
            self.workload.attach(params)
        self.optimizer_state, self.params, self.model_state = optimizer_state, params, model_state
