"""`pacebench run`, `study` and `scale`: the commands that train."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from runners.cli.common import (algorithm_sources, check_launch, execution_options,
                                existing_store, first_trial, launch_and_report, launch_options,
                                one_workload, search_spaces, start_workers_ahead,
                                store_for_writing, store_path, submission_name, workload_names)
from runners.cli.flags import (ALGORITHM_HELP, WORKLOAD_HELP, algoperf_flags,
                               backend_flags, launch_flags, scaling_flags, training_flags,
                               trial_timeout_flag)
from runners.cli.until_decided import decided_pair, until_decided, until_decided_flags
from runners.cli.types import csv as _csv
from runners.cli.types import hparams as _hparams, ints as _ints
from workbench.errors import UserError

__all__ = ["add", "run", "study", "scale", "ad_hoc_trial"]


def add(sub) -> None:
    """The group's parsers."""
    _add_run(sub)
    _add_study(sub)
    _add_scale(sub)


def _add_run(sub) -> None:
    p = sub.add_parser("run", help="train one run and record it")
    p.add_argument("--workload", required=True, help=WORKLOAD_HELP)
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--algorithm", help=ALGORITHM_HELP)
    algoperf_flags(p, run=True, which=which)
    p.add_argument("--hparams", type=_hparams, default={}, help="JSON object or @file.json")
    p.add_argument("--seed", type=int, default=0, help="the run's seed (initialisation and data order)")
    p.add_argument("--batch-size", type=int,
                   help="examples per step (default: the algorithm's choice for the workload)")
    p.add_argument("--name", default="adhoc", help="study name the run is filed under")
    trial_timeout_flag(p)
    training_flags(p)
    p.set_defaults(func=run)


def _add_study(sub) -> None:
    p = sub.add_parser("study", help="run a study: workloads x algorithms x studies x trials x seeds")
    p.add_argument("--workloads", type=_csv, required=True, help=WORKLOAD_HELP)
    p.add_argument("--algorithms", type=_csv, help=ALGORITHM_HELP)
    p.add_argument("--search-space", action="append", default=[], metavar="NAME=SPACE.json",
                   help="an algorithm's search space (AlgoPerf's JSON format) instead of its "
                        "own; repeatable")
    algoperf_flags(p, run=False)
    p.add_argument("--ruleset", choices=("external", "self"), default="external",
                   help="AlgoPerf's tuning ruleset: trials drawn from a search space, or one run of "
                   "the defaults per study")
    p.add_argument("--studies", type=int,
                   help="studies of each algorithm (default 1; with --until-decided, the first "
                        "round's, default 2)")
    p.add_argument("--trials", type=int, default=5,
                   help="trials (hyperparameter points) per study, external ruleset")
    p.add_argument("--seeds", type=_ints, default=[0],
                   help="comma-separated seeds; every trial runs once per seed")
    p.add_argument("--name", default="study", help="study name (resume matches on it)")
    p.add_argument("--dry-run", action="store_true", help="print the plan; run, write nothing")
    until_decided_flags(p)
    p.add_argument("--status", action="store_true",
                   help="with --resume: say where each planned trial stands (finished, "
                        "running, queued on Slurm, failed, interrupted, not started); run "
                        "nothing")
    p.add_argument("--reuse-from", action="append", default=[], metavar="STORE",
                   help="copy finished runs of the same reuse key (trial, execution options, "
                        "hardware, code, data) from STORE instead of running them; repeatable")
    p.add_argument("--no-stop-on-target", action="store_true",
                   help="train every run to its budget (full curves) even after its targets")
    p.add_argument("--early-stop", choices=("none", "lcga", "tse"), default="none",
                   help="early-stopping tuner: successive halving at 1/9 and 1/3 of the step "
                        "budget, trials ranked by this estimator (default none)")
    p.add_argument("--eta", type=int,
                   help="--early-stop keeps the best 1/eta of the trials at a rung (default 3)")
    launch_flags(p)
    training_flags(p)
    p.set_defaults(func=_study)


def _add_scale(sub) -> None:
    p = sub.add_parser("scale", help="a batch-size (and sparsity) scaling study: steps to a "
                                     "goal per batch size")
    p.add_argument("--workloads", type=_csv, required=True, help=WORKLOAD_HELP)
    p.add_argument("--algorithms", type=_csv, required=True,
                   help="each needs <algorithm>_scaling.json beside its search space")
    p.add_argument("--trials", type=int, default=5, help="quasirandom points per cell")
    p.add_argument("--name", default="scaling", help="study name (resume matches on it)")
    scaling_flags(p, required=True)
    launch_flags(p, faults=False)
    backend_flags(p, detach=False)
    training_flags(p)
    p.set_defaults(func=scale)


def _study(args: argparse.Namespace) -> int:
    """`study`, once its options are checked together."""
    if args.eta is not None and args.early_stop == "none":
        raise UserError("--eta goes with --early-stop lcga|tse")
    return study(args)


def run(args: argparse.Namespace) -> int:
    """`pacebench run`: train one run and record it."""
    start_workers_ahead(args)  # before importing torch here
    from runners.algorithms import get_algorithm
    from workbench.catalog import get_workload
    from workbench.spec import RunConfig
    from workbench.store import open_store

    from runners.algorithms import algorithm_names
    from runners.algorithms.sources import parse_algorithm
    from runners.plugins import with_workload_source

    submission = submission_name(args)
    source = None if submission else parse_algorithm(args.algorithm, algorithm_names())
    loader = None if source is None or source.loaded_by_name else source
    algorithm = submission or source.name
    hparams, space = args.hparams, args.tuning_search_space
    if submission and not space:  # AlgoPerf's convention: the search space beside the submission
        beside = Path(args.algoperf_submission).parent / "tuning_search_space.json"
        space = str(beside) if beside.is_file() else None
    if space and not hparams:
        hparams = first_trial(space, args.name, algorithm)
        print(f"hyperparameters drawn from {space}: {json.dumps(hparams)}")
    config = RunConfig(workload=one_workload(args.workload), algorithm=algorithm,
                       hparams=hparams,
                       seed=args.seed, batch_size=args.batch_size, max_steps=args.max_steps,
                       study_name=args.name, execution=execution_options(args),
                       algorithm_source=loader.spec if loader else None,
                       algorithm_sha256=loader.sha256 if loader else None)
    config = with_workload_source([config])[0]  # a plug-in workload: the run records it
    get_workload(config.workload)  # an unknown name is an error naming the known ones,
    if not submission:             # before anything is written
        get_algorithm(config.algorithm, config.hparams, config.algorithm_source,
                      config.algorithm_sha256)
    store = open_store(store_path(args), create=True)
    config = ad_hoc_trial(store, config)
    return _train_and_report(config, store, args)


def _train_and_report(config, store, args: argparse.Namespace) -> int:
    """Train `config` in a worker process, as a study's trials are (watchdog, Ctrl-C and a full
    disk alike; runners/launch/scheduler.py run_one), showing its eval lines unless --quiet; say how
    it ended. Exit 0 for a finished run (target met or not), 130 after Ctrl-C, else 1."""
    from runners.launch.processes import LaunchOptions
    from runners.launch.scheduler import INTERRUPTED, run_one
    from workbench.records import DONE_STATUSES

    options = LaunchOptions(trial_timeout=args.trial_timeout)
    check_launch(options)
    result, doc = run_one(config, store, args.data_dir, options, show=not args.quiet)
    if doc is None:  # no record of it: another launcher runs it now, or the disk is full
        busy = (f"another `pacebench run` of this run (trial {config.trial} of {config.study_name}"
                ") is running right now: wait for it to end") if result.skipped else None
        what = (result.failed + result.interrupted + [result.stopped or busy or "no run was "
                                                      "recorded"])[0]
        print(f"error: {what}", file=sys.stderr)
        return 1
    line = f"run {doc['run_id']}: {doc['status']} ({doc.get('stop_reason')}) in store {store.root}"
    if doc["status"] in DONE_STATUSES:  # finished, target met or not
        print(line)
        print(_target_line(store, doc["run_id"]))
        return 0
    print(f"{line}; its run document holds the traceback" if doc.get("error") else line,
          file=sys.stderr)
    return 130 if result.stopped == INTERRUPTED else 1


def ad_hoc_trial(store, config):
    """`config` as the next trial of its ad-hoc study in `store`: the trial of a recorded run
    with the same identity but the trial number (the run is a new attempt of it), else the next
    free trial number, so that no two ad-hoc runs share a place. UserError when the name is a
    study's (launched by `pacebench study`, ...): an ad-hoc run cannot join it."""
    from dataclasses import replace

    from workbench.records import AD_HOC_NAME
    from workbench.spec import RunConfig

    name, trials, same = config.study_name, set(), None
    key = replace(config, trial=0).trial_key
    for doc in store.documents(study_name=name):
        by = doc.get("launched_by")
        if by != "run" and not (by is None and name == AD_HOC_NAME):
            raise UserError(f"--name {name}: the store's runs named {name!r} are a study's "
                            f"(launched by `pacebench {by or 'study'}`); an ad-hoc run cannot "
                            f"join it: give another --name (default {AD_HOC_NAME})")
        try:
            recorded = RunConfig.from_dict(doc["config"])
        except (KeyError, TypeError, ValueError):
            continue
        trials.add(recorded.trial)
        if same is None and replace(recorded, trial=0).trial_key == key:
            same = recorded.trial
    trial = same if same is not None else (max(trials) + 1 if trials else 0)
    return replace(config, trial=trial)


def _target_line(store, run_id: str) -> str:
    """Whether a run met its validation target, and when (its first eval that did)."""
    from workbench.results import Results

    runs = Results(store).runs()
    row = runs[runs["run_id"] == run_id]
    if row.empty:
        return "target: unknown (the run's record cannot be read)"
    r = row.iloc[0]
    sign = ">=" if r.target_direction == "max" else "<="
    goal = f"validation {r.target_metric} {sign} {r.target_validation:g}"
    if r.reached_target:
        return (f"target met: {goal} at step {int(r.step_to_target)}, "
                f"{r.time_to_target:.2f} training s")
    return f"target not met: {goal} (best {r.best_validation:.4g})"


def study(args: argparse.Namespace) -> int:
    """`pacebench study`: workloads x algorithms x studies x trials x seeds under a ruleset.
    With --dry-run: print the plan (launch.describe_plan) and write nothing, not even the
    store (an existing one is read, to refuse a name its runs give to other code)."""
    from runners.launch.resume import study_draw_scheme
    from runners.launch.reuse import reuse_plan
    from runners.launch.study import (choose_search_spaces, describe_plan, plan_study, run_study,
                                      study_hooks)
    from runners.run.reuse_key import reuse_context
    from workbench.spec import StudySpec
    from workbench.store import open_store

    _check_mix_flag(args)
    start_workers_ahead(args)
    submission = submission_name(args)
    sources = algorithm_sources(args.algorithms or [], existing_store(args))
    algorithms = [*sources, *([submission] if submission else [])]
    if not algorithms:
        raise UserError("give --algorithms, --algoperf-submission, or both")
    spaces = search_spaces(args.search_space, algorithms)
    if args.tuning_search_space:
        spaces[submission] = args.tuning_search_space
    pair = decided_pair(args, algorithms)
    spec = StudySpec(workloads=workload_names(args.workloads), algorithms=algorithms,
                     ruleset=args.ruleset, studies=_studies(args, pair),
                     trials=args.trials, seeds=tuple(args.seeds),
                     name=args.name, max_steps=args.max_steps,
                     stop_on_target=not args.no_stop_on_target,
                     execution=execution_options(args))
    chosen = choose_search_spaces(spec, spaces, sources)
    scheme = study_draw_scheme(existing_store(args), spec.name)  # a study keeps its draws
    if args.dry_run:
        configs = plan_study(spec, spaces, sources, chosen, scheme)
        print(describe_plan(spec, configs, chosen, sources))
        if args.reuse_from:  # how many trials those stores would give, and why not the others
            print(reuse_plan(configs, [open_store(p) for p in args.reuse_from], reuse_context(
                study_hooks(args.early_stop, args.eta or 3), launch_options(args).nproc_per_node)))
        return 0
    if args.status:
        return _status(args, spec, plan_study(spec, spaces, sources, chosen, scheme))
    options = launch_options(args)
    reuse_from = [open_store(path) for path in args.reuse_from]  # each must be a store
    store = store_for_writing(args)

    def launch(spec: StudySpec, resume: bool, next_step: str) -> int:
        return launch_and_report(
            lambda: run_study(spec, store, workers=args.workers, resume=resume,
                              data_dir=args.data_dir, progress=not args.quiet,
                              search_spaces=spaces, early_stop=args.early_stop,
                              eta=args.eta or 3, options=options, sources=sources,
                              allow_mixed_execution=args.allow_mixed_execution,
                              reuse_from=reuse_from),
            next_step)

    if pair:
        return until_decided(args, spec, store, pair, launch)
    return launch(spec, args.resume,
                  f"store: {store.root}   score it: pacebench score --store {store.root}")


def _studies(args: argparse.Namespace, pair: tuple[str, str] | None) -> int:
    """--studies, else 1, or the sequential test's first round with --until-decided (read from
    workbench.sequential only then: it loads scipy.stats)."""
    if args.studies or not pair:
        return args.studies or 1
    from workbench.results import DEFAULT_FIRST_ROUND
    return DEFAULT_FIRST_ROUND


def _status(args: argparse.Namespace, spec, configs) -> int:
    """`pacebench study --resume --status`: one line of where the planned trials stand."""
    from runners.launch.resume import study_status

    if not args.resume:
        raise UserError("--status goes with --resume (it reports on a study being run)")
    store = existing_store(args)
    if store is None:
        raise UserError("no store there yet, so no study to report on: check --store")
    counts = study_status(configs, store, spec.name)
    print(f"study {spec.name!r}: {len(configs)} trials planned: "
          + ", ".join(f"{n} {state}" for state, n in counts.items() if n))
    return 0


def _check_mix_flag(args: argparse.Namespace) -> None:
    if args.allow_mixed_execution and not args.resume:
        raise UserError("--allow-mixed-execution goes with --resume (a new study mixes nothing)")


def scale(args: argparse.Namespace) -> int:
    """`pacebench scale`: steps-to-result per batch size and sparsity (runners/procedures/scaling_study.py)."""
    from runners.procedures.scaling_study import run_scaling
    from workbench.spec import ScalingSpec

    _check_mix_flag(args)
    start_workers_ahead(args)
    options = launch_options(args)
    spec = ScalingSpec(workloads=workload_names(args.workloads), algorithms=args.algorithms,
                       batch_sizes=tuple(args.batch_sizes), sparsities=tuple(args.sparsities),
                       prune_method=args.prune_method, trials=args.trials, goal=args.goal,
                       max_steps=args.max_steps or ScalingSpec.max_steps,
                       eval_every=args.eval_every, noise_every=args.noise_every,
                       lr_scaling=args.lr_scaling, name=args.name,
                       execution=execution_options(args))
    store = store_for_writing(args)
    return launch_and_report(lambda: run_scaling(spec, store, workers=args.workers, resume=args.resume,
                                       data_dir=args.data_dir, progress=not args.quiet,
                                       allow_mixed_execution=args.allow_mixed_execution,
                                       options=options),
                   f"store: {store.root}   analyse it: notebooks/scaling.ipynb (store={store.root})")
