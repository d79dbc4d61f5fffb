"""The typed contract of Pacebench: workloads, targets, budgets, runs and studies.

Everything here is a frozen dataclass of plain values (str, int, float, tuples, mappings of those),
so a spec can be hashed, compared, written to JSON and read back without loss. Nothing here imports
torch; the training side (`runners`) turns these specs into models and timed runs. The checks
and plain values they are built from (SpecError, check_name, stable_hash, to_plain, ...) are
workbench/spec_values.py's, importable from here.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, fields, replace
from types import MappingProxyType
from typing import Any, Literal, Mapping

import numpy as np

from workbench.spec_values import (NAME, SpecError, as_tuple, check_at_least, check_name,
                                   freeze, stable_hash, to_plain)

__all__ = [
    "Direction", "Target", "meets", "relaxed_goal", "check_relax", "Budget", "EvalCadence",
    "WorkloadSpec", "ExecutionOptions",
    "RunConfig", "StudySpec", "ScalingSpec", "LadderSpec", "CHINCHILLA_TOKENS_PER_PARAM",
    "RULESETS", "PRUNE_METHODS", "PRECISIONS", "COMPILE_MODES", "DRAW_SCHEMES", "DRAW_SCHEME",
    "LR_SCALINGS", "SELF_TUNING_BUDGET_MULTIPLIER", "SpecError", "freeze", "stable_hash",
    "to_plain", "as_tuple", "check_name", "check_at_least", "NAME",
]

Direction = Literal["min", "max"]
RULESETS = ("external", "self")
SELF_TUNING_BUDGET_MULTIPLIER = 1.5  # AlgoPerf v0.6: self-tuning runs get 1.5x the budget
PRUNE_METHODS = ("snip", "magnitude", "random")  # pruning at initialisation (runners/run/sparsity.py)
# How a trial's hyperparameters and rng_seed are drawn (RunConfig.draw_scheme; runners/tuning.py
# draw_seed): 1 seeded by the study's name (every run recorded before schemes were: two study
# names drew different trials); 2 by the study's design (workload, algorithm, search space,
# execution options), never its name: two studies of one design are the same trials, so a run
# is reused whatever study it was made in. A study keeps the scheme it began with; new ones
# take DRAW_SCHEME.
DRAW_SCHEMES = (1, 2)
DRAW_SCHEME = 2
LR_SCALINGS = ("none", "sqrt", "linear")  # how a scaling study shifts the learning-rate range
PRECISIONS = ("fp32", "bf16")
# torch.compile's modes; which is fastest depends on the model and the card, so it is measured
# (benchmarks/throughput.py --compile-mode, docs/gpu.md) and recorded with each run
COMPILE_MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")  # fp32: plain float32; bf16: autocast to bfloat16 (runners/run/device.py)


# The one "meets the target" rule. A value meets a target when it is finite and at least as good
# as the target in the target's direction (>= for "max", <= for "min"); NaN, +-inf and missing
# values never do. Every path uses it: Target.reached (the runner's stop rule and the scaling
# goal), `meets` (NumPy: scaling's steps-to-result) and the run table's SQL (workbench.query
# builds its comparison from COMPARISONS). tests/test_spec.py checks that they agree.
COMPARISONS: Mapping[str, str] = MappingProxyType({"max": ">=", "min": "<="})


def meets(values: Any, goal: float, direction: str) -> np.ndarray:
    """Elementwise: does each value meet `goal` in `direction`? (NaN, +-inf: never.)"""
    if direction not in COMPARISONS:
        raise SpecError(f"target direction must be 'min' or 'max', got {direction!r}")
    values = np.asarray(values, dtype=float)
    with np.errstate(invalid="ignore"):
        better = values >= goal if direction == "max" else values <= goal
    return better & np.isfinite(values)


def check_relax(relax: Any) -> float:
    """`relax` as a float when it is a valid target relaxation (a number in [0, 1)), else
    SpecError saying what is valid."""
    if isinstance(relax, bool) or not isinstance(relax, (int, float, np.integer, np.floating)) \
            or not math.isfinite(relax) or not 0 <= relax < 1:
        raise SpecError(f"--relax-targets {relax!r}: must be a number in [0, 1), e.g. 0.1 "
                        "(targets 10 % easier)")
    return float(relax)


def relaxed_goal(goal: Any, direction: Any, relax: float) -> Any:
    """A target relaxed by `relax` in AlgoPerf's way (its scoring scripts' target relaxation):
    a minimised target times (1 + relax), a maximised one times (1 - relax); elementwise over
    arrays of goals and directions. relax = 0 gives the target back."""
    relax = check_relax(relax)
    goal = np.asarray(goal, dtype=float)
    direction = np.asarray(direction, dtype=object)
    bad = ~np.isin(direction, list(COMPARISONS))
    if bad.any():
        raise SpecError(f"target direction must be 'min' or 'max', got "
                        f"{direction[bad].ravel()[0]!r}")
    out = np.where(direction == "min", goal * (1 + relax), goal * (1 - relax))
    return float(out) if out.ndim == 0 else out


@dataclass(frozen=True)
class Target:
    """The goal of a workload: a metric, its direction and the values to reach on each split."""

    metric: str            # name of the metric, e.g. "accuracy" or "loss" (column `validation/<metric>`)
    direction: Direction   # "max": reached when value >= target; "min": when value <= target
    validation: float      # the validation target; time to result is measured against this one
    test: float            # the test target; reaching both stops a run (AlgoPerf)

    def __post_init__(self) -> None:
        if self.direction not in COMPARISONS:
            raise SpecError(f"target direction must be 'min' or 'max', got {self.direction!r}")

    def reached(self, value: float | None, split: str = "validation") -> bool:
        """True when `value` meets the target of `split` (see `meets`); None never does."""
        goal = self.validation if split == "validation" else self.test
        return value is not None and bool(meets(value, goal, self.direction))

    def relaxed(self, relax: float) -> "Target":
        """This target made easier by `relax` (relaxed_goal: AlgoPerf's relaxation), both
        splits; relax = 0 gives it back unchanged."""
        return replace(self, validation=relaxed_goal(self.validation, self.direction, relax),
                       test=relaxed_goal(self.test, self.direction, relax))

    def better(self, a: float, b: float) -> bool:
        """True when metric value `a` is strictly better than `b` in this target's direction."""
        return a > b if self.direction == "max" else a < b


@dataclass(frozen=True)
class Budget:
    """How long a run may train: accumulated training seconds and optimizer steps, whichever first."""

    seconds: float  # on the training clock (evals excluded), as AlgoPerf's max_allowed_runtime_sec
    steps: int      # hard cap on update steps

    def scaled(self, factor: float) -> "Budget":
        return Budget(seconds=self.seconds * factor, steps=int(round(self.steps * factor)))


@dataclass(frozen=True)
class EvalCadence:
    """When the runner evaluates: every `steps` update steps and/or every `seconds` of training time."""

    steps: int | None = None
    seconds: float | None = None

    def __post_init__(self) -> None:
        if self.steps is None and self.seconds is None:
            raise SpecError("an eval cadence needs `steps`, `seconds` or both")


@dataclass(frozen=True)
class WorkloadSpec:
    """One catalog entry: a base workload or one of its variants, described as data."""

    name: str                    # unique catalog name, e.g. "digits_mlp_tanh"
    base: str                    # base workload name; equals `name` for a base workload
    variant: str                 # "base" for a base workload, else the variant's short name
    dataset: str                 # dataset key understood by runners.data, e.g. "digits"
    model: Mapping[str, Any]     # model knobs: architecture, width, activation, norm, init scale, ...
    loss: str                    # "softmax_cross_entropy" | "mean_squared_error"
    target: Target
    step_hint: int               # steps a well-tuned baseline needs; schedules are laid over it
    budget: Budget
    eval_every: EvalCadence
    batch_size: int              # default global batch size when an algorithm does not choose
    train_loss_every: int = 10   # a training-loss row is recorded every this many steps
    description: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "model", freeze(self.model))

    @property
    def is_variant(self) -> bool:
        return self.name != self.base

    def to_dict(self) -> dict[str, Any]:
        return to_plain(self)


def _identity(default: Any) -> Any:
    """A field that changes what a run computes: it joins the trial's identity when not default."""
    return field(default=default, metadata={"identity": True})


@dataclass(frozen=True)
class ExecutionOptions:
    """How a run executes on its machine. One object for every run option that is not about the
    algorithm or the workload: a new option is one field here (and its CLI flag in
    runners/cli.py). Fields made with `_identity` change what the run computes, so they join the
    trial's identity (RunConfig.trial_key) when they differ from their default; the others (the
    device, the thread count) are recorded beside the run instead."""

    device: str = "cpu"                      # "cpu" | "cuda" | "cuda:<i>" | "auto" (cuda if present)
    precision: str = _identity("fp32")       # one of PRECISIONS; bf16 = autocast forward passes
    compile: bool = _identity(False)         # torch.compile the model; compile time is on the clock
    compile_mode: str = "default"            # one of COMPILE_MODES: speed, not what is computed
    channels_last: bool = _identity(False)   # NHWC memory format for conv models (faster on GPUs)
    threads: int = 1                         # torch intra-op threads, fixed per run (determinism)

    def __post_init__(self) -> None:
        if self.precision not in PRECISIONS:
            raise SpecError(f"unknown precision {self.precision!r}: valid are {', '.join(PRECISIONS)}")
        if not (self.device in ("cpu", "cuda", "auto") or self.device.startswith("cuda:")):
            raise SpecError(f"unknown device {self.device!r}: valid are cpu, cuda, cuda:<index>, auto")
        if self.threads < 1:
            raise SpecError(f"threads must be >= 1, got {self.threads}")
        if self.compile_mode not in COMPILE_MODES:
            raise SpecError(f"unknown compile mode {self.compile_mode!r}: valid are "
                            f"{', '.join(COMPILE_MODES)}")
        if self.compile_mode != "default" and not self.compile:
            raise SpecError(f"compile mode {self.compile_mode} goes with compile (--compile)")

    def label(self, device: str | None = None) -> str:
        """A short text of the options, e.g. "cpu, fp32, 1 thread, compile" (the run table's
        `execution` column); `device`: the device it resolved to, if known."""
        parts = [device or self.device, self.precision,
                 f"{self.threads} thread{'s' if self.threads != 1 else ''}"]
        compiled = "compile" if self.compile_mode == "default" else f"compile {self.compile_mode}"
        return ", ".join(parts + [compiled] * self.compile
                         + ["channels-last"] * self.channels_last)

    def identity(self) -> dict[str, Any]:
        """The identity fields that differ from their defaults (for RunConfig.trial_key)."""
        return {f.name: getattr(self, f.name) for f in fields(self)
                if f.metadata.get("identity") and getattr(self, f.name) != f.default}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any] | None) -> "ExecutionOptions":
        """From a dict of its fields; other keys are ignored (a flat RunConfig dict of schema 1)."""
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in (d or {}).items() if k in names})


def _execution(value: Any) -> "ExecutionOptions":
    """An ExecutionOptions from itself or a dict of its fields (JSON, papermill)."""
    return value if isinstance(value, ExecutionOptions) else ExecutionOptions.from_dict(value)


@dataclass(frozen=True)
class RunConfig:
    """Everything that identifies and parameterises one training run (one trial of one study)."""

    workload: str                           # catalog name
    algorithm: str                          # display name: a built-in's, or one given to a source
    hparams: Mapping[str, Any] = field(default_factory=dict)
    seed: int = 0                           # the user's seed; the run's RNG seed is derived from it
    study_name: str = "adhoc"               # groups the runs of one `pacebench study` invocation
    ruleset: str = "external"               # "external" | "self"
    study: int = 0                          # study index (AlgoPerf: independent repeats of tuning)
    trial: int = 0                          # trial index within the study
    batch_size: int | None = None           # overrides the algorithm's / workload's batch size
    max_steps: int | None = None            # overrides the workload's step budget
    budget_multiplier: float = 1.0          # self-tuning runs get SELF_TUNING_BUDGET_MULTIPLIER
    stop_on_target: bool = True             # stop once validation and test targets are both reached
    sparsity: float = 0.0                   # fraction of weights pruned at init, masks kept fixed
    prune_method: str = "snip"              # how they are chosen: one of PRUNE_METHODS
    eval_every: int | None = None           # overrides the workload's eval cadence (steps)
    execution: ExecutionOptions = field(default_factory=ExecutionOptions)  # device, threads, ...
    algorithm_source: str | None = None     # what loads the algorithm when its name does not
    algorithm_sha256: str | None = None     # (runners/algorithms/sources.py), and its file's hash
    workload_source: str | None = None      # the factory of a plug-in workload (runners/
    workload_sha256: str | None = None      # plugins.py), and its file's hash
    design: str | None = None               # the study's design for this algorithm (trials per
                                            # study, search space, execution options), hashed by
                                            # runners.launch.study.plan_study: studies of two names
                                            # pool only when it matches (not the trial's identity)
    mixed_execution: str | None = None      # what --allow-mixed-execution let this run differ in
                                            # from its study's finished runs (runners/launch/resume.py),
                                            # e.g. "threads: 1 in the store, 2 now"; not identity
    ladder: Mapping[str, Any] | None = None  # a ladder run's place (runners/procedures/ladder.py; fields:
                                            # workbench/records.py LADDER_FIELDS); its "steps"
                                            # is the schedule's horizon, its "data" the corpus
    draw_scheme: int = 1                    # how its hparams and rng_seed were drawn: one of
                                            # DRAW_SCHEMES (1: by the study's name, the runs of
                                            # every older store; the study planner gives 2)
    step_hint: int | None = None            # the schedule's horizon instead of the workload's
                                            # step hint (`pacebench tune`: the run's own steps)
    phase: str | None = None                # "tuning": a `pacebench tune` sweep run (records.py
                                            # PHASES), left out of scores; not the trial's identity

    def __post_init__(self) -> None:
        object.__setattr__(self, "hparams", freeze(self.hparams))
        object.__setattr__(self, "execution", _execution(self.execution))
        if self.ladder is not None:
            object.__setattr__(self, "ladder", freeze(self.ladder))
        if self.ruleset not in RULESETS:
            raise SpecError(f"unknown ruleset {self.ruleset!r}: valid are {', '.join(RULESETS)}")
        if not 0.0 <= self.sparsity < 1.0:
            raise SpecError(f"sparsity must be in [0, 1), got {self.sparsity}")
        if self.prune_method not in PRUNE_METHODS:
            raise SpecError(f"unknown prune_method {self.prune_method!r}: valid are "
                            f"{', '.join(PRUNE_METHODS)}")
        if self.eval_every is not None and self.eval_every < 1:
            raise SpecError(f"eval_every must be >= 1 step, got {self.eval_every}")
        check_name("study name", self.study_name)
        if self.draw_scheme not in DRAW_SCHEMES:
            raise SpecError(f"unknown draw scheme {self.draw_scheme!r}: valid are "
                            f"{', '.join(map(str, DRAW_SCHEMES))}")
        for kind, low in (("seed", 0), ("study", 0), ("trial", 0)):
            check_at_least(kind, getattr(self, kind), low)
        check_at_least("batch_size", self.batch_size, 1, optional=True)
        check_at_least("max_steps", self.max_steps, 1, optional=True)
        check_at_least("step_hint", self.step_hint, 1, optional=True)
        check_at_least("budget_multiplier", self.budget_multiplier, 1e-9)
        if self.phase not in (None, "tuning"):
            raise SpecError(f"unknown run phase {self.phase!r}: valid are tuning or none")

    @property
    def rng_seed(self) -> int:
        """The seed given to torch: distinct for every (seed, study, trial), stable across
        machines; under draw scheme 1 its study's name seeds it too, under 2 never."""
        if self.draw_scheme == 1:
            return int(stable_hash([self.seed, self.study_name, self.study, self.trial], 8),
                       16) % 2**31
        return int(stable_hash(["rng", self.seed, self.study, self.trial], 8), 16) % 2**31

    @property
    def trial_key(self) -> str:
        """Identity of the trial, shared by all attempts at it (a resumed trial keeps its key)."""
        ident, extra = self._identity()
        return stable_hash(ident + ([extra] if extra else []), 12)

    def design_identity(self) -> dict[str, Any]:
        """What the trial computes, by name: the trial key's fields, without the study's name
        when its draws do not depend on it (draw scheme 2; under 1 the name seeds them and
        stays in). Two runs of one design identity are one trial, whatever study planned
        them (runners/launch/reuse.py keys reuse by it; workbench/scope.py counts it once)."""
        ident, extra = self._identity()
        named = dict(zip(_IDENTITY_NAMES, ident))
        if self.draw_scheme != 1:
            del named["study_name"]
        return {**named, **extra}

    @property
    def design_trial_key(self) -> str:
        """design_identity hashed (12 hex digits): the run document's `design_trial_key`."""
        return stable_hash(self.design_identity(), 12)

    def _identity(self) -> tuple[list[Any], dict[str, Any]]:
        """(the trial key's fields in order, its later fields that are set: see trial_key)."""
        ident = [self.study_name, self.workload, self.algorithm, self.ruleset, self.study,
                 self.trial, self.seed, dict(self.hparams), self.batch_size, self.max_steps]
        # Fields added later join the identity only when set, so old trials keep their keys.
        # The device is not part of the identity (the hardware is recorded beside the run); how
        # the model runs on it (precision, compile, memory format) is, when not the default.
        extra = {"sparsity": self.sparsity, "prune_method": self.prune_method,
                 "eval_every": self.eval_every, "algorithm_source": self.algorithm_source,
                 "algorithm_sha256": self.algorithm_sha256,
                 "workload_source": self.workload_source,
                 "workload_sha256": self.workload_sha256,
                 "ladder": dict(self.ladder) if self.ladder is not None else None,
                 "draw_scheme": self.draw_scheme,
                 "step_hint": self.step_hint}
        extra = {k: v for k, v in extra.items() if v != _RUN_DEFAULTS[k]}
        if extra.get("prune_method") and not self.sparsity:
            del extra["prune_method"]  # no pruning: the method is moot
        extra.update(self.execution.identity())
        return ident, extra

    def to_dict(self) -> dict[str, Any]:
        return to_plain(self)

    def differences(self, other: "RunConfig") -> list[tuple[str, Any, Any]]:
        """(field, ours, theirs) for each field that differs, the execution options as
        `execution.<name>`; the device and thread count (not part of a trial) are left out."""
        def flat(config: RunConfig) -> dict[str, Any]:
            d = config.to_dict()
            execution = d.pop("execution")
            return {**d, **{f"execution.{f.name}": execution[f.name]
                            for f in fields(ExecutionOptions) if f.metadata.get("identity")}}
        ours, theirs = flat(self), flat(other)
        return [(k, ours[k], theirs[k]) for k in ours
                if ours[k] != theirs[k] and k != "mixed_execution"]

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "RunConfig":
        """The config of a dict written by to_dict; also reads schema 1's flat form, where the
        execution options (device, precision, compile, channels_last, threads) sat beside the
        other fields."""
        d = dict(d)
        names = {f.name for f in fields(ExecutionOptions)}
        flat = {k: d.pop(k) for k in list(d) if k in names}
        if "execution" not in d:
            d["execution"] = flat
        return cls(**d)


_RUN_DEFAULTS = {"sparsity": 0.0, "prune_method": "snip", "eval_every": None,
                 "algorithm_source": None, "algorithm_sha256": None, "workload_source": None,
                 "workload_sha256": None, "ladder": None, "draw_scheme": 1,
                 "step_hint": None}
_IDENTITY_NAMES = ("study_name", "workload", "algorithm", "ruleset", "study", "trial", "seed",
                   "hparams", "batch_size", "max_steps")  # RunConfig._identity's list, by name


@dataclass(frozen=True)
class StudySpec:
    """A grid of runs: workloads x algorithms x studies x trials x seeds under one tuning ruleset."""

    workloads: tuple[str, ...]
    algorithms: tuple[str, ...]
    ruleset: str = "external"     # "external": trials drawn from the search space; "self": 1 run
    studies: int = 1              # independent repeats of the tuning procedure (median over them)
    trials: int = 5               # hyperparameter points per study (external tuning)
    seeds: tuple[int, ...] = (0,)  # user seeds; every trial is run once per seed
    name: str = "study"           # groups the runs in the store; resume matches on it
    max_steps: int | None = None  # cap on steps per run (for quick studies and tests)
    batch_size: int | None = None
    stop_on_target: bool = True
    execution: ExecutionOptions = field(default_factory=ExecutionOptions)  # of every run

    def __post_init__(self) -> None:
        # Comma-separated strings are accepted too (CLI flags, papermill `-p workloads a,b`).
        object.__setattr__(self, "execution", _execution(self.execution))
        object.__setattr__(self, "workloads", as_tuple(self.workloads))
        object.__setattr__(self, "algorithms", as_tuple(self.algorithms))
        object.__setattr__(self, "seeds", tuple(int(s) for s in as_tuple(self.seeds)))
        if self.ruleset not in RULESETS:
            raise SpecError(f"unknown ruleset {self.ruleset!r}: valid are {', '.join(RULESETS)}")
        if not self.workloads or not self.algorithms:
            raise SpecError("a study needs at least one workload and one algorithm")
        for n, v in (("studies", self.studies), ("trials", self.trials)):
            if v < 1:
                raise SpecError(f"{n} must be >= 1, got {v}")
        if not self.seeds:
            raise SpecError("a study needs at least one seed")
        check_name("study name", self.name)
        for seed in self.seeds:
            check_at_least("seed", seed, 0)
        check_at_least("batch_size", self.batch_size, 1, optional=True)
        check_at_least("max_steps", self.max_steps, 1, optional=True)

    @property
    def trials_per_study(self) -> int:
        """Self-tuning has no hyperparameters to tune: one run per study."""
        return 1 if self.ruleset == "self" else self.trials

    @property
    def budget_multiplier(self) -> float:
        return SELF_TUNING_BUDGET_MULTIPLIER if self.ruleset == "self" else 1.0


@dataclass(frozen=True)
class ScalingSpec:
    """A batch-size (and sparsity) scaling study: per (batch size, sparsity) cell, `trials`
    quasirandom points of the algorithm's search space, each run until it meets `goal`.

    Each cell is one "study" in Shallue et al.'s sense (study index = cell index), so every run
    keeps a distinct (algorithm, workload, study, trial, seed) identity. The same unit Halton
    points are used in every cell; the learning-rate range is shifted by (B / B_ref)^p
    (`lr_scaling` "sqrt": p = 1/2, "linear": p = 1, "none": p = 0; B_ref = the workload's batch).
    """

    workloads: tuple[str, ...]
    algorithms: tuple[str, ...]
    batch_sizes: tuple[int, ...] = (8, 16, 32, 64, 128, 256, 512, 1024)
    sparsities: tuple[float, ...] = (0.0,)
    prune_method: str = "snip"       # pruning at init for sparsity > 0: one of PRUNE_METHODS
    trials: int = 5                  # quasirandom points per (batch size, sparsity)
    goal: float | None = None        # validation target-metric goal (default: the catalog's)
    max_steps: int = 3000            # cap on steps per run; the catalog budget (800 for the
                                     # digits workloads) is the ceiling; runs stop at the goal
    eval_every: int = 5              # eval cadence in steps (steps-to-result resolution)
    noise_every: int = 50            # steps between gradient-noise measurements (0: none)
    lr_scaling: str = "sqrt"         # learning-rate range shift with batch size, see above
    search_space: str | None = None  # JSON search space (default: runners/scaling_space.json)
    name: str = "scaling"
    seed: int = 0
    execution: ExecutionOptions = field(default_factory=ExecutionOptions)  # of every run

    def __post_init__(self) -> None:
        object.__setattr__(self, "execution", _execution(self.execution))
        object.__setattr__(self, "workloads", as_tuple(self.workloads))
        object.__setattr__(self, "algorithms", as_tuple(self.algorithms))
        object.__setattr__(self, "batch_sizes", tuple(int(b) for b in as_tuple(self.batch_sizes)))
        object.__setattr__(self, "sparsities", tuple(float(s) for s in as_tuple(self.sparsities)))
        if not self.workloads or not self.algorithms or not self.batch_sizes:
            raise SpecError("a scaling study needs workloads, algorithms and batch sizes")
        check_name("study name", self.name)
        if any(b < 1 for b in self.batch_sizes):
            raise SpecError(f"batch sizes must be >= 1, got {self.batch_sizes}")
        if any(not 0.0 <= s < 1.0 for s in self.sparsities):
            raise SpecError(f"sparsities must be in [0, 1), got {self.sparsities}")
        if self.prune_method not in PRUNE_METHODS:
            raise SpecError(f"unknown prune_method {self.prune_method!r}: valid are "
                            f"{', '.join(PRUNE_METHODS)}")
        if self.lr_scaling not in LR_SCALINGS:
            raise SpecError(f"unknown lr_scaling {self.lr_scaling!r}: valid are "
                            f"{', '.join(LR_SCALINGS)}")
        if self.trials < 1 or self.max_steps < 1 or self.eval_every < 1 or self.noise_every < 0:
            raise SpecError("trials, max_steps and eval_every must be >= 1, noise_every >= 0")
        if replace(self.execution, threads=1) != ExecutionOptions():
            raise SpecError("scaling studies run on the CPU in fp32 for now: only the thread "
                            "count of their execution options can be set")


CHINCHILLA_TOKENS_PER_PARAM = 20.0  # Hoffmann et al. 2022: compute-optimal tokens per parameter


@dataclass(frozen=True)
class LadderSpec:
    """A model-size ladder: rungs x data budgets x algorithms x seeds (x tuning trials).

    A budget is a multiple of Chinchilla: budget b trains a rung of N non-embedding parameters
    on b * tokens_per_param * N tokens, i.e. ceil(b * tokens_per_param * N / (batch * block))
    steps, and the learning-rate schedule ends at that last step. Runs never stop on a target:
    ladders compare final validation losses (runners/procedures/ladder.py plans and runs them).
    """

    sizes: tuple[str, ...]              # rung names (catalog workloads; `pacebench ladder --list`)
    algorithms: tuple[str, ...]         # the first is the reference
    budgets: tuple[float, ...] = (1.0, 2.0, 4.0, 8.0)  # multiples of Chinchilla, ascending
    seeds: int = 1                      # a count: seeds 0 .. seeds-1 of every final run
    trials: Mapping[str, int] = field(default_factory=dict)  # per algorithm; 1 (the default):
                                        # its declared setting; K > 1: a K-point sweep per rung
    transfer: Mapping[str, str] = field(default_factory=dict)  # algorithm -> transfer rule name
    data: str = "generated"             # "generated" | "shakespeare" | "bytes:PATH" | a
                                        # token-file path
    tokens_per_param: float = CHINCHILLA_TOKENS_PER_PARAM  # what budget 1 means
    evals: int | None = None            # evals per run on a step cadence (plus one at the end);
                                        # None: sized by each run (runners/procedures/ladder.py eval_plan)
    batch_size: int | None = None       # sequences per step (default: the rung's)
    name: str = "ladder"
    execution: ExecutionOptions = field(default_factory=ExecutionOptions)  # of every run

    def __post_init__(self) -> None:
        object.__setattr__(self, "execution", _execution(self.execution))
        object.__setattr__(self, "sizes", as_tuple(self.sizes))
        object.__setattr__(self, "algorithms", as_tuple(self.algorithms))
        budgets = tuple(_number(b) for b in as_tuple(self.budgets))
        for b in budgets:
            if isinstance(b, bool) or not isinstance(b, (int, float)) or not math.isfinite(b) \
                    or b <= 0:
                raise SpecError(f"a budget must be a finite number > 0 (a multiple of "
                                f"Chinchilla's 20 tokens per parameter), got {b!r}")
        object.__setattr__(self, "budgets", tuple(sorted({float(b) for b in budgets})))
        object.__setattr__(self, "trials", freeze(self.trials))
        object.__setattr__(self, "transfer", freeze(self.transfer))
        if not self.sizes or not self.algorithms or not self.budgets:
            raise SpecError("a ladder needs at least one size, one algorithm and one budget")
        for kind, names in (("size", self.sizes), ("algorithm", self.algorithms)):
            twice = sorted({n for n in names if names.count(n) > 1})
            if twice:
                raise SpecError(f"{kind} {twice[0]!r} is given twice: give each once")
        for kind, mapping in (("trials", self.trials), ("transfer", self.transfer)):
            stray = sorted(set(mapping) - set(self.algorithms))
            if stray:
                raise SpecError(f"{kind} names {stray[0]!r}, which is not one of the ladder's "
                                f"algorithms ({', '.join(self.algorithms)})")
        for algorithm, k in self.trials.items():
            if isinstance(k, bool) or not isinstance(k, int) or k < 1:
                raise SpecError(f"trials of {algorithm} must be an integer >= 1, got {k!r}")
        check_name("ladder name", self.name)
        for kind, value in (("seeds", self.seeds), ("evals", self.evals)):
            if kind == "evals" and value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise SpecError(f"{kind} must be an integer >= 1, got {value!r}")
        check_at_least("tokens_per_param", self.tokens_per_param, 1e-9)
        check_at_least("batch_size", self.batch_size, 1, optional=True)
        if not isinstance(self.data, str) or not self.data or "\n" in self.data:
            raise SpecError(f"data must be 'generated', 'shakespeare', 'bytes:PATH' or a path, "
                            f"got {self.data!r}")

    def trials_of(self, algorithm: str) -> int:
        """Tuning trials per rung of `algorithm`: 1 (its declared setting) unless given."""
        return int(self.trials.get(algorithm, 1))


def _number(value: Any) -> Any:
    """A number from text ("2" -> 2.0; papermill and CLI lists); anything else unchanged."""
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return value
    return value
