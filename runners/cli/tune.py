"""`pacebench tune`: a learning-rate (or other) range sweep that writes a search space by
measurement (runners/procedures/tune.py), for an algorithm with no space or one to re-centre."""
from __future__ import annotations

import argparse
import math
import os
import shlex
import sys
from pathlib import Path
from typing import Any, Mapping

from runners.cli.common import (algorithm_sources, check_launch, execution_options,
                                existing_store, one_workload, store_for_writing, store_path)
from runners.cli.flags import ALGORITHM_HELP, WORKLOAD_HELP, trial_timeout_flag, training_flags
from workbench.errors import UserError

__all__ = ["add", "tune"]


def add(sub) -> None:
    p = sub.add_parser("tune", help="a range sweep of one hyperparameter: short runs on a log "
                                    "grid, then a search space around the best (with a sidecar)")
    p.add_argument("--workload", required=True, help=WORKLOAD_HELP)
    p.add_argument("--algorithm", required=True, help=ALGORITHM_HELP)
    p.add_argument("--hparam", default="learning_rate",
                   help="the hyperparameter swept (default learning_rate)")
    p.add_argument("--center", type=float,
                   help="the grid's centre (default: the geometric centre of the "
                        "hyperparameter's range in the algorithm's own search space)")
    p.add_argument("--points", type=int, default=7, help="grid points (default 7)")
    p.add_argument("--decades", type=float, default=3.0,
                   help="decades the grid spans (default 3)")
    p.add_argument("--out", metavar="SPACE.json",
                   help="the search space written (default tuned-<algorithm>-<workload>.json); "
                        "its sidecar is SPACE.json.origin.json")
    p.add_argument("--seed", type=int, default=0, help="the runs' seed (default 0)")
    p.add_argument("--workers", type=int, default=1, help="runs at once, one process each")
    trial_timeout_flag(p)
    training_flags(p)
    p.set_defaults(func=tune)


def _own_space(name: str, loader) -> dict[str, Any] | None:
    """The algorithm's own search space as an AlgoPerf dict; None when it has none, or only a
    list of points."""
    from runners.algorithms import search_space_path
    from runners.algorithms.sources import SourceError, choose_search_space
    from runners.tuning import ChosenSpace

    try:
        chosen = (choose_search_space(loader) if loader is not None and loader.kind != "builtin"
                  else ChosenSpace.from_file(search_space_path(loader.spec if loader else name)))
    except (SourceError, FileNotFoundError):
        return None
    return dict(chosen.space) if isinstance(chosen.space, Mapping) else None


def _center(hparam: str, center: float | None, own: Mapping[str, Any], name: str) -> float:
    """--center, else the geometric (log) or plain (linear) centre of the range of `hparam`
    in `own`; UserError for a hyperparameter with no range and no --center."""
    if center is not None:
        return center
    spec = own.get(hparam)
    if not isinstance(spec, Mapping) or "min" not in spec:
        given = "a list of feasible points" if isinstance(spec, Mapping) else "no entry"
        raise UserError(f"--hparam {hparam}: has {given} in {name}'s search space, no range to "
                        "centre the grid on: give --center VALUE")
    low, high = float(spec["min"]), float(spec["max"])
    if spec.get("scaling") == "log":
        return math.sqrt(low * high)
    return (low + high) / 2


def _check_out(text: str) -> Path:
    """--out as a path to write: a .json file in an existing folder, not a folder itself."""
    from runners.tuning import sidecar_path

    out = Path(text)
    if out.suffix != ".json":
        raise UserError(f"--out {text}: give a file name ending in .json (the search space, "
                        "AlgoPerf's JSON format)")
    if not out.parent.is_dir():
        raise FileNotFoundError(f"--out {text}: no folder {out.parent}: create it first")
    if not os.access(out.parent, os.W_OK):
        raise PermissionError(f"--out {text}: the folder {out.parent} is not writable")
    for path in (out, sidecar_path(out)):
        if path.is_dir():
            raise IsADirectoryError(f"--out {text}: {path} is a folder; give a file name")
    return out


def _plan(args: argparse.Namespace):
    """The TunePlan of the flags, every input checked (nothing written)."""
    from runners.algorithms import algorithm_names, get_algorithm
    from runners.procedures.tune import BUDGET_FRACTION, TunePlan
    from workbench.catalog import get_workload

    sources = algorithm_sources([args.algorithm], existing_store(args))
    (name, source), = sources.items()
    if source.kind == "algoperf":
        raise UserError(f"--algorithm {args.algorithm}: an AlgoPerf submission tunes through "
                        "its tuning_search_space.json; `pacebench tune` sweeps built-ins, "
                        f"plug-ins and optimizers ({', '.join(algorithm_names())}, "
                        "path/file.py:Class, pkg.module:Class)")
    loader = None if source.loaded_by_name else source
    defaults = dict(get_algorithm(name, {}, loader.spec if loader else None,
                                  loader.sha256 if loader else None).hparams)
    own = _own_space(name, loader) or {k: {"feasible_points": [v]} for k, v in
                                       defaults.items() if v is not None}
    if args.hparam not in defaults:
        raise UserError(f"--hparam {args.hparam}: not a hyperparameter of {name}; valid are "
                        f"{', '.join(sorted(defaults))}")
    if isinstance(defaults[args.hparam], (str, bool)):
        raise UserError(f"--hparam {args.hparam}: takes {defaults[args.hparam]!r}, not a "
                        "number to sweep on a log grid")
    workload = one_workload(args.workload)
    spec = get_workload(workload)
    budget = min(spec.budget.steps, args.max_steps or spec.budget.steps)
    return TunePlan(workload=workload, algorithm=name, hparam=args.hparam,
                    center=_center(args.hparam, args.center, own, name), points=args.points,
                    decades=args.decades, steps=max(1, math.ceil(BUDGET_FRACTION * budget)),
                    seed=args.seed,
                    own_space=own, execution=execution_options(args),
                    algorithm_source=loader.spec if loader else None,
                    algorithm_sha256=loader.sha256 if loader else None,
                    target_direction=spec.target.direction, target_metric=spec.target.metric)


class _Stopped(Exception):
    """A launch that a full disk stopped (Ctrl-C raises StudyInterrupted, main reports it)."""


def tune(args: argparse.Namespace) -> int:
    """`pacebench tune`: run the sweep (runs already in the store are kept), print the curve
    and the bracket, write the search space and its sidecar."""
    from runners.launch.study import run_configs
    from runners.launch.processes import LaunchOptions
    from runners.procedures.tune import curve_table, log_grid, plan_configs, run_tune, study_name, \
        write_space

    plan = _plan(args)
    out = _check_out(args.out or f"tuned-{plan.algorithm}-{plan.workload}.json")
    plan_configs(plan, log_grid(plan), None)  # a bad study name fails here, before writing
    options = LaunchOptions(trial_timeout=args.trial_timeout)
    check_launch(options)
    store = store_for_writing(args)

    def launch(configs) -> None:
        result = run_configs(configs, store, study_name(plan.algorithm), args.workers,
                             resume=True, data_dir=args.data_dir, progress=not args.quiet,
                             options=options)
        if result.stopped:
            raise _Stopped(result.stopped)

    try:
        result = run_tune(plan, store, launch)
    except _Stopped as stop:
        print(f"error: {stop}: the sweep stopped; free some space, then run the same command "
              "again (its finished runs are kept)", file=sys.stderr)
        return 1
    print(curve_table(result))
    for side in result.open_sides:
        print(f"warning: the best {plan.hparam} is still at the {side} end of the grid after "
              f"{len(result.extensions)} extension(s): the range's {side} end was not measured",
              file=sys.stderr)
    command = "pacebench " + shlex.join(getattr(args, "argv", None) or sys.argv[1:])
    sidecar = write_space(result, out, command, store_path(args))
    print(f"search space: {out} (its record: {sidecar})")
    print(f"use it: pacebench study --algorithms {shlex.quote(args.algorithm)} --search-space "
          f"{shlex.quote(plan.algorithm + '=' + str(out))} --workloads {plan.workload} ...")
    return 0
