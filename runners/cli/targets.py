"""`pacebench set-targets` and `noise`: the procedures that set a workload's targets and measure
its noise floor."""
from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

from runners.cli.common import (algorithm_sources, execution_options, existing_store, launch_options,
                                one_workload, store_for_writing, workload_names)
from runners.cli.flags import ALGORITHM_HELP, WORKLOAD_HELP, backend_flags, training_flags
from runners.cli.catalog import list_names
from runners.cli.types import hparams as _hparams, ints as _ints

__all__ = ["add", "set_targets", "noise"]


def add(sub) -> None:
    """The group's parsers (and `list`'s, runners/cli/catalog.py)."""
    p = sub.add_parser("set-targets", help="set a workload's targets from a tuned baseline")
    p.add_argument("--workload", required=True, help=WORKLOAD_HELP)
    p.add_argument("--algorithm", default="nadamw", help="the candidates, comma-separated: "
                   + ALGORITHM_HELP)
    p.add_argument("--trials", type=int, default=8, help="tuning trials before the reruns")
    p.add_argument("--reruns", type=int, default=10, help="reruns of the best trial (default 10)")
    rule = p.add_mutually_exclusive_group()
    rule.add_argument("--reach-quantile", type=float, default=0.9,
                      help="target: the value this share of the reruns attain (default 0.9)")
    rule.add_argument("--median", dest="reach_quantile", action="store_const", const=None,
                      help="AlgoPerf's rule: the median of the reruns' best values")
    p.add_argument("--horizon", type=float, default=0.5, help="share of the step hint counted")
    p.add_argument("--reuse-tuning", action="store_true", help="reuse the record's tuning")
    p.add_argument("--estimate-only", action="store_true",
                   help="print the time estimate (a short probe of the workload) and stop")
    p.add_argument("--workers", type=int, default=2, help="runs at once, one process each")
    p.add_argument("--out", help="folder for the target-setting record (default: workbench/"
                                 "targets/, or "
                                 "for a plug-in workload from a file targets/ beside it)")
    backend_flags(p, detach=False)
    training_flags(p)
    p.set_defaults(func=set_targets)

    p = sub.add_parser("noise", help="the noise floor: one setting run under N seeds")
    p.add_argument("--workload", required=True, help=WORKLOAD_HELP)
    p.add_argument("--algorithm", help="default: the workload's tuned baseline (targets "
                                       "record); else " + ALGORITHM_HELP)
    p.add_argument("--hparams", type=_hparams, help="JSON or @file.json (default: the baseline's)")
    p.add_argument("--seeds", type=int, default=10, help="number of seeds (default 10)")
    p.add_argument("--first-seed", type=int, default=1000, help="seeds from this one up")
    p.add_argument("--studies", type=_ints, default=[1, 3, 5, 10], help="for the detectable speedup")
    p.add_argument("--workers", type=int, default=2, help="runs at once, one process each")
    p.add_argument("--name", help="study name (default noise-<workload>-<algorithm>)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    backend_flags(p, detach=False)
    training_flags(p)
    p.set_defaults(func=noise)

    p = sub.add_parser("list", help="list workloads and algorithms")
    form = p.add_mutually_exclusive_group()
    form.add_argument("--markdown", action="store_true",
                      help="the workload catalog table of docs/workloads.md")
    form.add_argument("--json", action="store_true",
                      help="workloads (targets, eval cadence, median steps and time to target, "
                           "eval fraction) and algorithms as JSON")
    p.set_defaults(func=list_names)


def set_targets(args: argparse.Namespace) -> int:
    """`pacebench set-targets`: targets from a tuned baseline, for each workload given."""
    from runners.procedures.target_setting import check_rule, set_targets as run_procedure
    from workbench.catalog import TARGETS_DIR, plugin_source

    check_rule(args.reruns, args.reach_quantile, args.horizon)
    options = launch_options(args)
    if args.max_steps is not None:
        raise ValueError("--max-steps: set-targets trains each run for the workload's step hint "
                         "(the procedure's horizon is --horizon)")
    sources = algorithm_sources(args.algorithm.split(","), existing_store(args))
    workloads = workload_names([args.workload])
    store = None if args.estimate_only else store_for_writing(args)  # an estimate writes nothing
    for workload in workloads:
        out = args.out
        source = plugin_source(workload)
        if out is None:  # a plug-in's record goes beside its file; a built-in's to the catalog's
            where = source[0].rpartition(":")[0] if source and source[1] else None
            out = Path(where).parent / "targets" if where else TARGETS_DIR
        run_procedure(workload, list(sources), trials=args.trials, reruns=args.reruns,
                      reach_quantile=args.reach_quantile, horizon=args.horizon,
                      out_dir=Path(out), store_path=store.root if store else Path(),
                      workers=args.workers,
                      data_dir=args.data_dir, execution=execution_options(args),
                      reuse_tuning=args.reuse_tuning, sources=sources,
                      estimate_only=args.estimate_only, options=options)
    return 0


def noise(args: argparse.Namespace) -> int:
    """`pacebench noise`: one setting under N seeds; its noise floor and detectable speedups."""
    from runners.algorithms import get_algorithm
    from runners.procedures.noise_floor import measure_noise_floor, noise_report
    from workbench.catalog import get_workload, tuned_baseline
    from workbench.results import Results

    spec = get_workload(one_workload(args.workload))
    options = launch_options(args)
    if args.max_steps is not None:
        raise ValueError("--max-steps: a noise floor is measured on whole runs, each stopping at "
                         "its targets or its budget")
    if args.seeds < 2:
        raise ValueError(f"--seeds must be >= 2 (a spread needs two runs), got {args.seeds}")
    if any(k < 1 for k in args.studies):
        raise ValueError(f"--studies must be counts >= 1, got {args.studies}")
    algorithm, hparams = args.algorithm, args.hparams
    baseline = tuned_baseline(spec.name)
    if algorithm is None:
        if baseline is None:
            raise ValueError(f"{spec.name} has no tuned baseline recorded: give --algorithm")
        algorithm = baseline[0]
    if hparams is None:
        hparams = baseline[1] if baseline and baseline[0] == algorithm else {}
    source = next(iter(algorithm_sources([algorithm], existing_store(args)).values()))
    algorithm = source.name
    loader = None if source.loaded_by_name else source
    get_algorithm(algorithm, hparams, loader and loader.spec, loader and loader.sha256)
    seeds = range(args.first_seed, args.first_seed + args.seeds)
    store = store_for_writing(args)
    floor, runs = measure_noise_floor(store, spec.name, algorithm, hparams, seeds, args.name,
                                      args.workers, args.data_dir, execution_options(args),
                                      progress=not args.quiet, source=source,
                                      options=options)
    if args.json:
        print(json.dumps({"workload": spec.name, "algorithm": algorithm, "hparams": hparams,
                          **noise_report(floor, runs, args.studies)}, indent=1))
        return 0
    print(f"{spec.name}, {algorithm} {json.dumps(hparams)}, seeds {seeds.start}.."
          f"{seeds.stop - 1}, target {spec.target.metric} "
          f"{'>=' if spec.target.direction == 'max' else '<='} {spec.target.validation:g}:")
    for r in runs.itertuples():
        when = (f"{r.time_to_target:.2f} s" if r.reached_target else f"missed ({r.status})")
        print(f"  seed {int(r.seed):>5}  {when}")
    print(f"noise floor: {floor.describe()}")
    for k in args.studies:
        mds = Results.min_detectable_speedup(floor.cov, k)
        print(f"  minimum detectable speedup with {k} studies per algorithm: "
              + ("n/a (no CoV)" if math.isnan(mds) else f"{100 * mds:.1f} %"))
    print("(two-sided test at 5 %, power 80 %, lognormal times with this CoV; a study's time "
          "also carries its tuning's luck, so a real comparison needs at least this)")
    return 0
