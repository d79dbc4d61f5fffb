"""Planning and running a model-size ladder: rungs x data budgets x algorithms x seeds.

A budget is a multiple of Chinchilla (workbench.spec.LadderSpec): at rung N (non-embedding
parameters), budget b trains for

    steps = ceil(b * tokens_per_param * N / (batch * block))

update steps, the same for every algorithm (the batch is fixed per rung, not the algorithm's
choice), and the algorithm's learning-rate schedule is laid over exactly those steps: the run's
`ladder["steps"]` replaces the workload's step hint (runners/run/loop.py prepare), so the decay ends
at the run's last step. Runs do not stop on a target; they evaluate every `eval_every` steps and
once more at their last step, and ladders compare that last eval.

Evals (`eval_plan`): with `evals` given, every ceil(steps / evals) steps, MAX_EVAL_WINDOWS
windows per split. Without it (the default) the run sizes them, so that evals stay a small part
of its time whatever the vocabulary: an eval forward pass costs a third of a training step per
token (2 of the 6 FLOPs per weight), so planned eval FLOPs / training FLOPs =
evals x 3 splits x windows / (3 x steps x batch) = evals x windows / (steps x batch), kept at or
below EVAL_SHARE (1/20). The windows are the rung's, the same at every budget, algorithm and seed
(so every loss of a rung is over the same windows): EVAL_SHARE x (steps x batch at budget 1) /
EVALS_AT_1X, between MIN_EVAL_WINDOWS and MAX_EVAL_WINDOWS; the evals of a run are then
floor(EVAL_SHARE x steps x batch / windows), between 1 and MAX_EVALS, every ceil(steps / evals)
steps. A run far below budget 1 may pass the share (at least one eval of MIN_EVAL_WINDOWS).

Hyperparameters per (algorithm, rung), what `tuning_trials` in the record says:
  - trials 1 (the default): the algorithm's declared setting (its defaults), or its declared
    transfer rule (TRANSFER_RULES) applied to them; tuning_trials = 0 (nothing was tuned at
    this rung).
  - trials K > 1: K quasirandom points of learning rate and weight decay (the ranges of the
    algorithm's search space; every other hyperparameter at its default) at the smallest
    budget, seed 0, in a study of its own (`<name>.tuning`, ladder phase "tuning"); the point
    with the lowest final validation loss is then run at every budget and seed;
    tuning_trials = K.
A ladder where the reference got fewer tuning trials than a candidate at some rung is flagged.

Final runs of one budget share a place across algorithms (study = the budget's index, trial 0,
seed s), so two algorithms' runs at one place see the same initialisation and data order
(common random numbers, runners/launch/study.py).
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any, Callable, Mapping

from workbench.records import DONE_STATUSES, metric_column
from workbench.spec import LadderSpec, RunConfig, SpecError, stable_hash, to_plain
from workbench.store import Store

__all__ = ["Rung", "TRANSFER_RULES", "LOSS_COLUMN", "MAX_STEPS", "planned_steps", "eval_plan",
           "eval_work_share", "EVAL_SHARE", "MAX_EVAL_WINDOWS", "tuning_name",
           "tuning_counts", "fairness_warnings", "tuning_configs", "final_configs",
           "choose_tuned", "chosen_space", "sweep_space", "plan_ladder", "describe_ladder",
           "run_ladder", "LadderResult"]

LOSS_COLUMN = metric_column("validation", "loss")  # the eval rows' final loss a ladder compares
EVAL_SHARE = Fraction(1, 20)  # planned eval FLOPs / training FLOPs at most, evals sized by the run
EVALS_AT_1X = 4          # evals a run at budget 1 affords (sets the rung's windows)
MAX_EVALS = 8            # evals of a run sized by the plan at most (and the --evals default of old)
MIN_EVAL_WINDOWS = 16    # windows per split at least
MAX_EVAL_WINDOWS = 256   # windows per split at most; = runners/workloads/ladder.py EVAL_WINDOWS


@dataclass(frozen=True)
class Rung:
    """What the planner needs of one rung (a catalog workload)."""

    name: str
    non_embedding_params: int
    params: int
    flops_per_token: float
    batch_size: int          # sequences per step
    block_size: int          # tokens per sequence
    width: int               # the residual stream's width (transfer rules scale with it)
    budget_steps: int        # the catalog's step budget (a ladder run may need more)
    tokens_available: int | None = None  # distinct training tokens of the data; None: unlimited
    window_problem: str | None = None  # why the data holds no window of this rung, or None


# Transfer rules: how an algorithm's declared setting moves from the smallest rung of the
# catalog's ladder (where it was set) to a wider one; (hparams, rung, base rung) -> hparams.
def _width_rule(hparams: Mapping[str, Any], rung: Rung, base: Rung) -> dict[str, Any]:
    """muP-style for Adam-like updates: learning rate x base_width / width."""
    out = dict(hparams)
    out["learning_rate"] = hparams["learning_rate"] * base.width / rung.width
    return out


TRANSFER_RULES: dict[str, Callable[[Mapping[str, Any], Rung, Rung], dict[str, Any]]] = {
    "width": _width_rule,
}


MAX_STEPS = 10**9  # steps of one ladder run, at most (1e9 steps of even the smallest rung are
                  # years of compute: a larger plan is a typing error, and overflows floats)


def planned_steps(budget: float, tokens_per_param: float, non_embedding_params: int,
                  batch_size: int, block_size: int) -> int:
    """ceil(budget * tokens_per_param * N / (batch * block)), at least 1, in exact decimal
    arithmetic: the numbers are read as their shortest decimal text (0.1 is 1/10, not the binary
    float just above it), so a budget of exactly k batches is k steps, never k + 1."""
    tokens = (Fraction(repr(float(budget))) * Fraction(repr(float(tokens_per_param)))
              * non_embedding_params)
    return max(1, math.ceil(tokens / (batch_size * block_size)))


def eval_plan(spec: LadderSpec, rung: Rung, steps: int) -> tuple[int, int]:
    """(eval_every in steps, windows per split) of a run of `steps` steps at `rung` (module
    docstring): `spec.evals` evals of MAX_EVAL_WINDOWS windows when given, else sized so that
    planned eval FLOPs stay at most EVAL_SHARE of the training FLOPs."""
    if spec.evals is not None:
        return max(1, math.ceil(steps / spec.evals)), MAX_EVAL_WINDOWS
    batch = spec.batch_size or rung.batch_size
    windows = math.floor(EVAL_SHARE * _steps(spec, rung, 1.0) * batch / EVALS_AT_1X)
    windows = min(MAX_EVAL_WINDOWS, max(MIN_EVAL_WINDOWS, windows))
    evals = min(MAX_EVALS, max(1, math.floor(EVAL_SHARE * steps * batch / windows)))
    return math.ceil(steps / evals), windows


def eval_work_share(steps: int, batch_size: int, eval_every: int, windows: int) -> float:
    """Planned eval FLOPs / training FLOPs of a run: its evals (ceil(steps / eval_every), the
    last at its last step) x 3 splits x windows forward passes, at a third of a training
    step's FLOPs per token, over steps x batch windows trained."""
    return math.ceil(steps / eval_every) * windows / (steps * batch_size)


def tuning_name(spec: LadderSpec) -> str:
    """The study name of the ladder's tuning runs (kept apart from its final runs)."""
    return f"{spec.name}.tuning"


def tuning_counts(spec: LadderSpec) -> dict[str, int]:
    """{algorithm: tuning trials per rung}: 0 for a declared setting, K for a K-point sweep."""
    return {a: (spec.trials_of(a) if spec.trials_of(a) > 1 else 0) for a in spec.algorithms}


def fairness_warnings(spec: LadderSpec) -> list[str]:
    """A line for each candidate that got more tuning trials per rung than the reference."""
    counts = tuning_counts(spec)
    reference = spec.algorithms[0]
    return [f"{a} got {counts[a]} tuning trials per rung, the reference {reference} only "
            f"{counts[reference]}: a speedup of {a} may be a tuning advantage"
            for a in spec.algorithms[1:] if counts[a] > counts[reference]]


def _rungs_of(spec: LadderSpec, rungs: Mapping[str, Rung]) -> list[Rung]:
    """The ladder's rungs; an unknown size, or data too short for one window of a rung's
    context in some split, is a one-line SpecError."""
    unknown = [s for s in spec.sizes if s not in rungs]
    if unknown:
        raise SpecError(f"unknown ladder size {unknown[0]!r}: valid are {', '.join(rungs)} "
                        "(pacebench ladder --list)")
    for rung in (rungs[s] for s in spec.sizes):
        if rung.window_problem:  # every run would fail at its first batch
            raise SpecError(f"data {spec.data}: {rung.window_problem} of {rung.name}: give more "
                            "data (larger files) or smaller rungs (pacebench ladder --list)")
    return [rungs[s] for s in spec.sizes]


def _loader(sources: Mapping[str, Any] | None, algorithm: str):
    source = (sources or {}).get(algorithm)
    return None if source is None or source.loaded_by_name else source


def _defaults(algorithm: str, sources: Mapping[str, Any] | None) -> dict[str, Any]:
    """The algorithm's declared setting: its hyperparameters as it fills them in."""
    from runners.algorithms import get_algorithm

    loader = _loader(sources, algorithm)
    return dict(get_algorithm(algorithm, {}, loader.spec if loader else None,
                              loader.sha256 if loader else None).hparams)


def _declared(spec: LadderSpec, algorithm: str, rung: Rung, base: Rung,
              sources: Mapping[str, Any] | None) -> dict[str, Any]:
    """Trials 1: {} (the defaults as they are) or the transfer rule's hyperparameters."""
    rule = spec.transfer.get(algorithm)
    if rule is None:
        return {}
    return TRANSFER_RULES[rule](_defaults(algorithm, sources), rung, base)


def chosen_space(algorithm: str, sources: Mapping[str, Any] | None,
                 search_spaces: Mapping[str, Any] | None = None):
    """The algorithm's search space (runners.tuning.ChosenSpace): the file `search_spaces`
    names for it (`ladder --search-space NAME=FILE`; a `pacebench tune` file: origin tuned),
    else its own."""
    from runners.algorithms import search_space_path
    from runners.algorithms.sources import choose_search_space
    from runners.tuning import ChosenSpace

    loader = _loader(sources, algorithm)
    if (search_spaces or {}).get(algorithm) is not None:
        return ChosenSpace.from_file(search_spaces[algorithm])
    if loader is not None and loader.kind not in ("builtin", "algoperf"):
        return choose_search_space(loader)
    return ChosenSpace.from_file(search_space_path(loader.spec if loader else algorithm))


def sweep_space(algorithm: str, sources: Mapping[str, Any] | None,
                search_spaces: Mapping[str, Any] | None = None):
    """The algorithm's search space (chosen_space) cut down to its learning_rate and
    weight_decay ranges, as a ChosenSpace of the same origin and file (what its sweep draws
    from, and what the sweep's runs record)."""
    from runners.tuning import ChosenSpace, Range

    chosen = chosen_space(algorithm, sources, search_spaces)
    params = {p.name: {"min": p.low, "max": p.high, "scaling": p.scaling}
              for p in chosen.search_space().params if isinstance(p, Range)
              and p.name in ("learning_rate", "weight_decay")}
    if not params:
        raise SpecError(f"cannot sweep {algorithm}: its search space has no learning_rate or "
                        "weight_decay range; give it --trials 1")
    return ChosenSpace(params, chosen.origin, chosen.file)


def _ladder_fields(spec: LadderSpec, algorithm: str, rung: Rung, budget: float,
                   steps: int, phase: str, eval_windows: int) -> dict[str, Any]:
    """The run's ladder record (workbench/records.py LADDER_FIELDS); `eval_windows` only when
    the plan sized the evals, so that a ladder planned with --evals keeps its runs' identities
    (trial keys) from before the plan sized them."""
    tokens = steps * (spec.batch_size or rung.batch_size) * rung.block_size
    sized = {} if spec.evals is not None else {"eval_windows": eval_windows}
    return {"rung": rung.name, "non_embedding_params": rung.non_embedding_params,
            "params": rung.params, "flops_per_token": rung.flops_per_token, "budget": budget,
            "tokens": tokens, "steps": steps, "data": spec.data,
            "repeated_tokens": rung.tokens_available is not None
            and tokens > rung.tokens_available,
            "transfer": spec.transfer.get(algorithm),
            "tuning_trials": tuning_counts(spec)[algorithm], "phase": phase,
            "reference": spec.algorithms[0], **sized}


def _steps(spec: LadderSpec, rung: Rung, budget: float) -> int:
    """The planned steps of `rung` at `budget` (the ladder's batch size, else the rung's); more
    than MAX_STEPS (e.g. --budgets 1e308) is refused: no run could take them."""
    steps = planned_steps(budget, spec.tokens_per_param, rung.non_embedding_params,
                          spec.batch_size or rung.batch_size, rung.block_size)
    if steps > MAX_STEPS:
        raise SpecError(f"budget {budget:g} x {spec.tokens_per_param:g} tokens per parameter "
                        f"at rung {rung.name} plans more than {MAX_STEPS:.0e} steps, the "
                        "most one run may take: give smaller --budgets")
    return steps


def _config(spec: LadderSpec, algorithm: str, rung: Rung, budget: float, hparams, seed: int,
            study_name: str, study: int, trial: int, phase: str,
            sources: Mapping[str, Any] | None) -> RunConfig:
    steps = _steps(spec, rung, budget)
    eval_every, windows = eval_plan(spec, rung, steps)
    loader = _loader(sources, algorithm)
    design = stable_hash([spec.trials_of(algorithm), spec.transfer.get(algorithm), spec.data,
                          spec.tokens_per_param, spec.evals, to_plain(spec.execution)], 12)
    return RunConfig(
        workload=rung.name, algorithm=algorithm, hparams=hparams, seed=seed,
        study_name=study_name, study=study, trial=trial,
        batch_size=spec.batch_size or rung.batch_size,
        max_steps=steps, budget_multiplier=max(1.0, steps / rung.budget_steps),
        stop_on_target=False, eval_every=eval_every,
        execution=spec.execution, design=design,
        algorithm_source=loader.spec if loader else None,
        algorithm_sha256=loader.sha256 if loader else None,
        ladder=_ladder_fields(spec, algorithm, rung, budget, steps, phase, windows))


def tuning_configs(spec: LadderSpec, rungs: Mapping[str, Rung],
                   sources: Mapping[str, Any] | None = None,
                   search_spaces: Mapping[str, Any] | None = None) -> list[RunConfig]:
    """The sweeps of the algorithms with trials K > 1: K points per rung, at the smallest
    budget and seed 0; trial t's point depends on (ladder name, algorithm, t) only, the same
    points at every rung."""
    from runners.tuning import draw_trials

    configs = []
    for algorithm in spec.algorithms:
        k = spec.trials_of(algorithm)
        if k < 2:
            continue
        seed = int(stable_hash([spec.name, algorithm, "ladder sweep"], 8), 16)
        points = draw_trials(sweep_space(algorithm, sources, search_spaces).search_space(), k,
                             seed)
        for rung in _rungs_of(spec, rungs):
            for trial, hparams in enumerate(points):
                configs.append(_config(spec, algorithm, rung, spec.budgets[0], hparams, 0,
                                       tuning_name(spec), 0, trial, "tuning", sources))
    return configs


def choose_tuned(store: Store, spec: LadderSpec, tuning: list[RunConfig]
                 ) -> dict[tuple[str, str], dict[str, Any]]:
    """{(algorithm, rung): the hyperparameters of its sweep's trial with the lowest final
    validation loss} among finished tuning runs (a diverged or lossless run counts as +inf);
    an (algorithm, rung) whose sweep has no finished run is left out."""
    from workbench import query

    wanted = {c.trial_key: c for c in tuning}
    done = [d for d in store.documents(study_name=tuning_name(spec))
            if d.get("trial_key") in wanted and d.get("status") in DONE_STATUSES]
    final = _final_losses(query.evals_frame(store, [d["run_id"] for d in done])) if done else {}
    best: dict[tuple[str, str], tuple[float, int, dict]] = {}
    for doc in done:
        config = wanted[doc["trial_key"]]
        loss = final.get(doc["run_id"], math.inf) if doc["status"] == "complete" else math.inf
        key = (config.algorithm, config.workload)
        if key not in best or (loss, config.trial) < best[key][:2]:
            best[key] = (loss, config.trial, dict(config.hparams))
    return {key: hparams for key, (_, _, hparams) in best.items()}


def _final_losses(evals) -> dict[str, float]:
    """{run_id: validation loss of its final eval} (workbench.outcomes.final_rows: the largest
    eval_index, as workbench.ladder_reads.ladder_finals reads it; NaN and missing values read as +inf)."""
    from workbench.outcomes import final_rows

    if evals.empty or LOSS_COLUMN not in evals.columns:
        return {}
    last = final_rows(evals)
    return {r: (float(v) if v == v else math.inf) for r, v in zip(last["run_id"], last[LOSS_COLUMN])}


def final_configs(spec: LadderSpec, rungs: Mapping[str, Rung],
                  tuned: Mapping[tuple[str, str], Mapping[str, Any]] | None = None,
                  sources: Mapping[str, Any] | None = None,
                  base: Rung | None = None) -> list[RunConfig]:
    """Every final run: rungs x budgets x algorithms x seeds. A swept algorithm's runs at a rung
    are planned only once `tuned` holds its chosen point there. `base`: the rung that transfer
    rules start from (default: the smallest of `rungs`)."""
    base = base or min(rungs.values(), key=lambda r: r.non_embedding_params)
    configs = []
    for algorithm in spec.algorithms:
        swept = spec.trials_of(algorithm) > 1
        for rung in _rungs_of(spec, rungs):
            if swept and (algorithm, rung.name) not in (tuned or {}):
                continue
            hparams = (tuned[(algorithm, rung.name)] if swept
                       else _declared(spec, algorithm, rung, base, sources))
            for study, budget in enumerate(spec.budgets):
                for seed in range(spec.seeds):
                    configs.append(_config(spec, algorithm, rung, budget, hparams, seed,
                                           spec.name, study, 0, "final", sources))
    return configs


def plan_ladder(spec: LadderSpec, rungs: Mapping[str, Rung],
                sources: Mapping[str, Any] | None = None,
                search_spaces: Mapping[str, Any] | None = None) -> tuple[list[RunConfig],
                                                                         list[RunConfig]]:
    """(tuning runs, final runs) of a ladder whose sweeps are not run yet: the final runs of
    swept algorithms are left out until choose_tuned can name their points. `search_spaces`:
    {algorithm: search-space file} drawn from instead of its own (chosen_space)."""
    for algorithm, rule in spec.transfer.items():
        if rule not in TRANSFER_RULES:
            raise SpecError(f"unknown transfer rule {rule!r} for {algorithm}: valid are "
                            f"{', '.join(TRANSFER_RULES)}")
        if spec.trials_of(algorithm) > 1:
            raise SpecError(f"{algorithm}: a transfer rule replaces tuning at each rung; give "
                            "it --trials 1 or no rule")
    unknown = sorted(set(search_spaces or {}) - set(spec.algorithms))
    if unknown:
        raise SpecError(f"--search-space {unknown[0]}=...: not an algorithm of the ladder "
                        f"({', '.join(spec.algorithms)})")
    unswept = sorted(a for a in (search_spaces or {}) if spec.trials_of(a) < 2)
    if unswept:
        raise SpecError(f"--search-space {unswept[0]}=...: {unswept[0]} runs its declared "
                        f"setting (--trials 1), so nothing draws from a space; give it --trials "
                        f"K (K > 1) to sweep the space")
    return (tuning_configs(spec, rungs, sources, search_spaces),
            final_configs(spec, rungs, {}, sources))


def describe_ladder(spec: LadderSpec, rungs: Mapping[str, Rung]) -> str:
    """The plan in a few lines: per rung its size, steps per budget and data repetition; per
    algorithm its tuning budget per rung and transfer rule; and fairness warnings."""
    lines = [f"ladder {spec.name!r}: {len(spec.sizes)} rung(s) x {len(spec.budgets)} budget(s) "
             f"({', '.join(f'{b:g}' for b in spec.budgets)} x {spec.tokens_per_param:g} tokens "
             f"per non-embedding parameter) x {len(spec.algorithms)} algorithm(s) x "
             f"{spec.seeds} seed(s); data {spec.data}; reference {spec.algorithms[0]}"]
    for rung in _rungs_of(spec, rungs):
        batch = spec.batch_size or rung.batch_size
        steps = [_steps(spec, rung, b) for b in spec.budgets]
        tokens = steps[-1] * batch * rung.block_size
        repeat = (rung.tokens_available is not None and tokens > rung.tokens_available)
        plans = [eval_plan(spec, rung, n) for n in steps]
        evals = [str(math.ceil(n / every)) for n, (every, _) in zip(steps, plans)]
        share = max(eval_work_share(n, batch, every, w) for n, (every, w) in zip(steps, plans))
        lines.append(f"  {rung.name}: {rung.non_embedding_params:,} non-embedding parameters, "
                     f"steps {', '.join(map(str, steps))} (batch {batch} x "
                     f"{rung.block_size} tokens); evals {', '.join(evals)} of {plans[0][1]} "
                     f"windows per split (eval FLOPs at most {share:.1%} of training)"
                     + (f"; REPEATS TOKENS: {tokens:,} planned, {rung.tokens_available:,} in "
                        f"{spec.data}" if repeat else ""))
    counts = tuning_counts(spec)
    for algorithm in spec.algorithms:
        how = (f"{counts[algorithm]} tuning trials per rung (learning rate, weight decay)"
               if counts[algorithm] else "0 tuning trials: its declared setting"
               + (f", transfer rule {spec.transfer[algorithm]}"
                  if algorithm in spec.transfer else ""))
        lines.append(f"  tuning budget of {algorithm}: {how}")
    sweeps = sum(k for k in tuning_counts(spec).values()) * len(spec.sizes)
    finals = len(spec.sizes) * len(spec.budgets) * len(spec.algorithms) * spec.seeds
    lines.append(f"  {finals} final runs" + (f" after {sweeps} tuning runs (study "
                                              f"{tuning_name(spec)!r})" if sweeps else ""))
    lines += [f"warning: {w}" for w in fairness_warnings(spec)]
    return "\n".join(lines)


@dataclass
class LadderResult:
    """What a ladder launch did: its tuning and final launches (runners.launch.study StudyResult)."""

    tuning: Any | None  # None: no algorithm is swept
    final: Any | None   # None: the sweeps stopped (Ctrl-C, a full disk) before the final runs
    untuned: list[tuple[str, str]]  # (algorithm, rung) whose sweep had no finished run

    @property
    def launches(self) -> list:
        return [r for r in (self.tuning, self.final) if r is not None]

    # what runners.cli.common.launch_and_report reads of a launch, over both launches
    @property
    def stopped(self) -> str | None:
        return next((r.stopped for r in self.launches if r.stopped), None)

    @property
    def failed(self) -> list[str]:
        return [line for r in self.launches for line in r.failed]

    @property
    def interrupted(self) -> list[str]:
        return [t for r in self.launches for t in r.interrupted]

    @property
    def not_started(self) -> int:
        return sum(r.not_started for r in self.launches)

    def summary(self) -> str:
        parts = [] if self.tuning is None else [f"tuning: {self.tuning.summary()}"]
        parts.append(f"final runs: {self.final.summary()}" if self.final is not None
                     else "final runs: not started (the sweeps did not end)")
        parts += [f"{a} at {r}: no finished tuning run, so no final runs"
                  for a, r in self.untuned]
        return "\n".join(parts)


def run_ladder(spec: LadderSpec, rungs: Mapping[str, Rung], store: Store, workers: int = 1,
               resume: bool = False, data_dir=None, progress: bool = True,
               sources: Mapping[str, Any] | None = None, options=None,
               allow_mixed_execution: bool = False,
               search_spaces: Mapping[str, Any] | None = None) -> LadderResult:
    """Run the ladder's missing runs: the sweeps first (if any; each run records the search
    space it was drawn from and its origin), then the final runs of each algorithm's declared
    or tuned setting; writes the ladder's summary document."""
    from runners.launch.study import run_configs

    tuning, _ = plan_ladder(spec, rungs, sources, search_spaces)
    chosen = {a: sweep_space(a, sources, search_spaces) for a in {c.algorithm for c in tuning}}
    doc = {"study_name": spec.name, "kind": "ladder", "spec": to_plain(spec),
           "tuning_trials": tuning_counts(spec), "warnings": fairness_warnings(spec)}
    store.ensure()
    store.write_study_summary(spec.name, doc)
    tuning_result = None
    if tuning:
        tuning_result = run_configs(tuning, store, tuning_name(spec), workers, resume, data_dir,
                                    progress, {}, options, chosen,
                                    allow_mixed_execution=allow_mixed_execution)
        if tuning_result.no_space or tuning_result.stopped:
            return LadderResult(tuning_result, None, [])
    tuned = choose_tuned(store, spec, tuning)
    untuned = sorted({(c.algorithm, c.workload) for c in tuning} - set(tuned))
    for algorithm, rung in untuned:
        warnings.warn(f"{algorithm} at {rung}: none of its tuning runs finished; its final "
                      "runs there are left out", stacklevel=2)
    final = final_configs(spec, rungs, tuned, sources)
    result = run_configs(final, store, spec.name, workers, resume, data_dir, progress, {},
                         options, allow_mixed_execution=allow_mixed_execution)
    if not result.no_space:
        store.write_study_summary(spec.name, {**doc, "tuned": {f"{a}@{r}": h for (a, r), h
                                                               in tuned.items()},
                                              "wall_seconds": result.seconds
                                              + (tuning_result.seconds if tuning_result else 0),
                                              "planned": result.planned,
                                              "ran": result.succeeded,
                                              "failed": len(result.failed)})
    return LadderResult(tuning_result, result, untuned)


def catalog_rungs(data: str, data_dir=None) -> dict[str, Rung]:
    """{name: Rung} of the catalog's ladder (workbench.catalog.ladder_rungs), smallest first,
    counted with the vocabulary of `data` and holding the distinct training tokens it has
    (runners/data/tokens.py; a bad path or file is a one-line error here, before any run)."""
    from runners.data.tokens import token_source
    from workbench.catalog import ladder_rungs, rung_counts

    source = token_source(data, data_dir)
    rungs = {}
    for spec in ladder_rungs():
        counts = rung_counts(spec, source.vocab_size)
        rungs[spec.name] = Rung(
            name=spec.name, non_embedding_params=int(counts["non_embedding_params"]),
            params=int(counts["params"]), flops_per_token=float(counts["flops_per_token"]),
            batch_size=spec.batch_size, block_size=int(spec.model["block_size"]),
            width=int(spec.model["n_embd"]), budget_steps=spec.budget.steps,
            tokens_available=int(source.tokens_available),
            window_problem=source.window_problem(int(spec.model["block_size"])))
    return rungs
