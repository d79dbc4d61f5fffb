"""What the `pacebench` commands share: the store they read and write, and the options their
flags make (execution, launch, scope, algorithms, workloads), resolved before anything is
written (runners/cli/flags.py defines the flags)."""
from __future__ import annotations

import argparse
import os
import sys
from dataclasses import fields
from pathlib import Path

from workbench.errors import UserError


__all__ = ["DEFAULT_STORE", "store_path", "begin_writing", "writing_begun", "reset_writing",
           "store_for_writing", "existing_store", "execution_options", "launch_options",
           "scope_options", "submission_name", "first_trial", "algorithm_sources",
           "check_names_against_store", "search_spaces", "workload_names", "one_workload",
           "launch_and_report", "check_folder", "check_launch"]

DEFAULT_STORE = "results"


def store_path(args: argparse.Namespace) -> Path:
    """--store, else $PACEBENCH_STORE, else results/."""
    return Path(args.store or os.environ.get("PACEBENCH_STORE") or DEFAULT_STORE)

# Whether the command has begun to write (a store, a record, a file): errors before it are bad
# input (exit 2, nothing written), errors after it are the environment's or internal (exit 1).
_WRITING = {"begun": False}


def begin_writing() -> None:
    """Mark that every input has been checked and the command now writes (see main)."""
    _WRITING["begun"] = True


def writing_begun() -> bool:
    return _WRITING["begun"]


def reset_writing() -> None:
    _WRITING["begun"] = False


def check_folder(flag: str, folder: str | Path, what: str) -> None:
    """UserError unless `folder` (a --flag's folder, made if missing) is a folder or can be
    made one: neither it nor a folder above it is a file. `what`: what goes in it."""
    found = next((p for p in (Path(folder), *Path(folder).parents) if p.exists()), None)
    if found is not None and not found.is_dir():
        raise UserError(f"{flag} {folder}: {found} is a file; give a folder (made if missing) "
                        f"for {what}")


def store_for_writing(args: argparse.Namespace):
    """The --store, created if missing: what a training command writes first, so called only
    once every input has been checked (a refused command leaves no store folder behind)."""
    from workbench.store import open_store

    begin_writing()
    return open_store(store_path(args), create=True)


def existing_store(args: argparse.Namespace):
    """The --store if it exists (to check names against it before writing), else None."""
    from workbench.store import open_store

    path = store_path(args)
    return open_store(path) if path.exists() else None


def execution_options(args: argparse.Namespace):
    """The ExecutionOptions of the flags (one flag per field, see cli.add_execution_flags)."""
    from workbench.spec import ExecutionOptions

    return ExecutionOptions(**{f.name: getattr(args, f.name) for f in fields(ExecutionOptions)})


def launch_options(args: argparse.Namespace):
    """The backend, start method and fault-handling flags as runners.launch.processes.LaunchOptions."""
    from runners.launch.processes import LaunchOptions

    if args.address is not None and args.backend != "ray":
        raise UserError(f"--address goes with --backend ray (this study runs on the "
                        f"{args.backend} backend)")
    if args.gpus_per_trial is not None and args.backend == "local":
        raise UserError("--gpus-per-trial goes with --backend ray or slurm (this study runs on "
                        "the local backend)")
    if args.start_method is not None and args.backend != "local":
        raise UserError("--start-method goes with the local backend (--backend local)")
    options = LaunchOptions(backend=args.backend, address=args.address,
                            nproc_per_node=args.nproc_per_node,
                            gpus_per_trial=args.gpus_per_trial or 0.0,
                            trial_timeout=args.trial_timeout,
                            checkpoint_minutes=args.checkpoint_every,
                            start_method=args.start_method or "forkserver",
                            slurm=slurm_options(args))
    check_launch(options)
    if options.backend == "slurm":
        from runners.launch.slurm_backend import check_cluster, check_slurm_commands
        check_slurm_commands()  # before the store is made
        check_cluster()
    return options


def start_workers_ahead(args: argparse.Namespace) -> None:
    """Start the local backend's fork server before the command's own work when the command
    launches trials through it (runners.launch.processes.start_fork_server): torch's import there
    overlaps the launcher's checks and planning. Not for --dry-run or --status, which launch
    nothing."""
    if getattr(args, "dry_run", False) or getattr(args, "status", False):
        return
    from runners.launch.processes import LaunchOptions, start_fork_server

    start_fork_server(LaunchOptions(backend=getattr(args, "backend", "local"),
                                    nproc_per_node=getattr(args, "nproc_per_node", 1),
                                    start_method=getattr(args, "start_method", None)
                                    or "forkserver"))


def check_launch(options) -> None:
    """LaunchOptions.check(), whose ValueError names a bad option (bad input), as a UserError."""
    try:
        options.check()
    except ValueError as err:
        raise UserError(str(err)) from None


_SLURM_FLAGS = ("slurm_partition", "slurm_setup", "slurm_array_parallelism", "slurm_param",
                "slurm_store_check", "detach")


def slurm_options(args: argparse.Namespace):
    """The --slurm-* flags and --detach as runners.launch.processes.SlurmOptions (None when none is
    given, or with another backend, which LaunchOptions.check then refuses); each checked, a
    bad one a one-line UserError."""
    from runners.launch.processes import SlurmOptions

    given = [f for f in _SLURM_FLAGS if getattr(args, f, None) not in (None, False, [])]
    if not given and args.backend != "slurm":
        return None
    if given and args.backend != "slurm":
        flag = "--" + given[0].replace("_", "-")
        raise UserError(f"{flag} goes with --backend slurm (this study runs on the "
                        f"{args.backend} backend)")
    from runners.launch.slurm_backend import check_options, check_setup_line, parse_slurm_param

    return check_options(SlurmOptions(partition=args.slurm_partition,
                        setup=tuple(check_setup_line(line) for line in args.slurm_setup or ()),
                        array_parallelism=args.slurm_array_parallelism,
                        params=tuple(parse_slurm_param(p) for p in args.slurm_param or ()),
                        store_check=args.slurm_store_check != "off", detach=args.detach))


def submission_name(args: argparse.Namespace) -> str | None:
    """The algorithm name of --algoperf-submission ("algoperf:<absolute path>"), or None.
    Puts the --algoperf-root folders on the submissions' import path first."""
    if args.algoperf_root:
        from runners.algoperf.adapter import set_algoperf_roots
        set_algoperf_roots(args.algoperf_root)
    if not args.algoperf_submission:
        if args.tuning_search_space:
            raise UserError("--tuning-search-space goes with --algoperf-submission")
        return None
    path = Path(args.algoperf_submission)
    if not path.is_file():
        raise FileNotFoundError(f"AlgoPerf submission file not found: {path}")
    from runners.algoperf.adapter import algorithm_name, load_submission
    load_submission(path)  # fail now, naming what is missing, rather than in every worker
    return algorithm_name(path)


def first_trial(space_path: str, study_name: str, algorithm: str) -> dict:
    """Trial 0 of a one-trial draw from the search space at `space_path` (as `study` draws it)."""
    from runners.tuning import SearchSpace, draw_trials
    from workbench.spec import stable_hash

    seed = int(stable_hash([study_name, algorithm], 8), 16)
    return draw_trials(SearchSpace.from_json(space_path), 1, seed)[0]


def workload_names(items: list[str]) -> list[str]:
    """Workload names of `--workloads` items, plug-ins loaded (runners/plugins.py)."""
    from runners.plugins import resolve_workloads

    return resolve_workloads(items)


def one_workload(item: str) -> str:
    """The one workload that a `--workload` item names."""
    names = workload_names([item])
    if len(names) != 1:
        raise UserError(f"{item} holds {len(names)} workloads ({', '.join(names)}): name one "
                        f"as <workload>={item}")
    return names[0]


def search_spaces(items: list[str], algorithms) -> dict[str, str]:
    """{algorithm: search-space file} of --search-space NAME=FILE.json items (FILE.json alone
    when the study has one algorithm)."""
    algorithms, spaces = list(algorithms), {}
    for item in items:
        name, sep, path = item.partition("=")  # a path may hold '=' (not a NAME)
        if len(algorithms) == 1 and (not sep or (name not in algorithms and Path(item).is_file())):
            name, path = algorithms[0], item
        if name not in algorithms:
            raise UserError(f"--search-space {item}: give NAME=FILE.json with NAME one of the "
                            f"study's algorithms ({', '.join(algorithms)})")
        if not Path(path).is_file():
            raise FileNotFoundError(f"--search-space {item}: no file {path}")
        spaces[name] = path
    return spaces


def algorithm_sources(items: list[str], store) -> dict:
    """{display name: AlgorithmSource} of `--algorithms` items (runners/algorithms/sources.py).
    Two different sources never share a name: not within the study, and not with runs the
    store already holds under that name."""
    from runners.algorithms import algorithm_names
    from runners.algorithms.sources import parse_algorithms
    from runners.algoperf.adapter import load_submission, submission_path

    sources = parse_algorithms(items, algorithm_names())
    for source in sources.values():
        if source.kind == "algoperf":  # fail now, naming what is missing, not in every worker
            load_submission(submission_path(source.spec))
    if store is not None:  # None: a dry run with no store yet
        check_names_against_store(sources, store)
    return sources


def check_names_against_store(sources: dict, store) -> None:
    """Refuse a display name that the store's runs give to other code."""
    from workbench.results import Results

    runs = Results(store).runs()
    for name, source in sources.items():
        mine = runs[runs["algorithm"] == name] if not runs.empty else runs
        if mine.empty:
            continue
        config = store.run_doc(mine["run_id"].iloc[-1]).get("config") or {}
        recorded = (config.get("algorithm_source"), config.get("algorithm_sha256"))
        planned = (None if source.loaded_by_name else source.spec, source.sha256)
        if recorded != planned:
            before = (recorded[0] or name) + (f" (sha256 {recorded[1][:12]})"
                                               if recorded[1] else "")
            now = source.spec + (f" (sha256 {source.sha256[:12]})" if source.sha256 else "")
            raise UserError(f"the store's runs named {name!r} ran {before}, not {now}: give "
                            f"this one another name (other={source.spec}) or use another store")


def launch_and_report(launch, next_step: str) -> int:
    """Run a study launcher; print its summary and what to do next. Exit 2 if the study exists
    (and --resume was not given), 1 if any trial failed or a full disk stopped the launch (one
    line naming the folder). (Ctrl-C: StudyInterrupted, which main reports.)"""
    from runners.launch.study import StudyExistsError

    try:
        result = launch()
    except StudyExistsError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(result.summary())
    if result.stopped:
        print(f"error: {result.stopped}: {result.not_started} trials not started and "
              f"{len(result.interrupted)} interrupted; free some space, then run the same "
              "command with --resume", file=sys.stderr)
        return 1
    print(next_step)
    return 0 if not result.failed else 1


def scope_options(args: argparse.Namespace) -> dict:
    """The scope flags as keyword arguments of workbench.results.Results' methods."""
    if args.exclude_compile and args.time_axis == "steps":
        print("note: --exclude-compile leaves steps to target as they are (compiling takes no "
              "step)", file=sys.stderr)
    return {"ruleset": args.ruleset, "studies": tuple(args.studies),
            "with_adhoc": args.with_adhoc, "time_axis": args.time_axis,
            "exclude_compile": args.exclude_compile, "relax_targets": args.relax_targets}
