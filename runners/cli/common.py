"""What the `pacebench` commands share: the store they read, the flags several of them take, and
the options those flags make (execution, launch, scope), resolved before anything is written."""
from __future__ import annotations

import argparse
import os
import sys
from dataclasses import fields
from pathlib import Path

from runners.cli_types import floats as _floats, ints as _ints

__all__ = ["DEFAULT_STORE", "store_path", "execution_options", "launch_options", "scope_options",
           "store_flag", "add_execution_flags", "training_flags", "algoperf_flags",
           "launch_flags", "scaling_flags", "scope_flags", "read_flags", "submission_name",
           "first_trial",
           "algorithm_sources", "check_names_against_store", "search_spaces", "workload_names",
           "one_workload", "launch_and_report", "WORKLOAD_HELP", "ALGORITHM_HELP"]

DEFAULT_STORE = "results"

def store_path(args: argparse.Namespace) -> Path:
    """--store, else $PACEBENCH_STORE, else results/."""
    return Path(args.store or os.environ.get("PACEBENCH_STORE") or DEFAULT_STORE)

def execution_options(args: argparse.Namespace):
    """The ExecutionOptions of the flags (one flag per field, see cli.add_execution_flags)."""
    from workbench.spec import ExecutionOptions

    return ExecutionOptions(**{f.name: getattr(args, f.name) for f in fields(ExecutionOptions)})

def launch_options(args: argparse.Namespace):
    """The backend, start method and fault-handling flags as runners.processes.LaunchOptions."""
    from runners.processes import LaunchOptions

    options = LaunchOptions(backend=args.backend, address=args.address,
                            nproc_per_node=args.nproc_per_node, gpus_per_trial=args.gpus_per_trial,
                            trial_timeout=args.trial_timeout,
                            checkpoint_minutes=args.checkpoint_every,
                            start_method=args.start_method)
    options.check()
    return options

# --- flags shared by several commands ----------------------------------------------------------
def store_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--store", help="results store directory (default: $PACEBENCH_STORE or results/)")

def add_execution_flags(p: argparse.ArgumentParser) -> None:
    """One flag per field of workbench.spec.ExecutionOptions (the flag's dest is the field)."""
    p.add_argument("--device", default="cpu",
                   help="cpu | cuda | cuda:<i> | auto (cuda when present); default cpu")
    p.add_argument("--precision", choices=("fp32", "bf16"), default="fp32",
                   help="bf16: forward passes under bfloat16 autocast (default fp32)")
    p.add_argument("--compile", action="store_true",
                   help="torch.compile the model; compilation is on the training clock")
    p.add_argument("--channels-last", action="store_true",
                   help="channels-last memory format for conv models (GPUs)")
    p.add_argument("--threads", type=int, default=1, help="torch threads per run (default 1)")

def training_flags(p: argparse.ArgumentParser) -> None:
    store_flag(p)
    p.add_argument("--max-steps", type=int, help="cap on update steps per run")
    p.add_argument("--data-dir", help="dataset folder (default: $PACEBENCH_DATA or datasets/cache)")
    p.add_argument("--quiet", action="store_true", help="no per-eval lines / progress bar")
    add_execution_flags(p)

def algoperf_flags(p: argparse.ArgumentParser, run: bool, which=None) -> None:
    """--algoperf-submission (in the group `which` when given), --algoperf-root and
    --tuning-search-space."""
    (which or p).add_argument("--algoperf-submission", metavar="SUBMISSION.py",
                              help="an AlgoPerf-API PyTorch submission file, run unchanged")
    p.add_argument("--algoperf-root", metavar="DIR", action="append", default=[],
                   help="a repository root on the submissions' import path, for those that "
                        "import their helpers relative to it (repeatable)")
    p.add_argument("--tuning-search-space", metavar="SPACE.json",
                   help=("draw the submission's hyperparameters (unless --hparams) from this "
                         "AlgoPerf search space " if run else "its AlgoPerf search space ")
                   + "(default: tuning_search_space.json beside it)")

def launch_flags(p: argparse.ArgumentParser, faults: bool = True) -> None:
    p.add_argument("--workers", type=int, default=1, help="trials run at once, one process each")
    p.add_argument("--resume", action="store_true", help="run only trials not yet done")
    if not faults:
        return
    g = p.add_argument_group("where trials run, and faults")
    g.add_argument("--backend", choices=("local", "ray"), default="local",
                   help="local: a process pool on this machine (default); ray: one Ray task "
                        "per trial (the store must be on a path every node shares)")
    g.add_argument("--start-method", choices=("forkserver", "spawn"), default="forkserver",
                   help="local pool: fork each trial from a server that imported torch once "
                        "(default), or start a fresh interpreter per trial")
    g.add_argument("--address", help="--backend ray: the cluster to join (e.g. "
                                     "ray://head:10001 or auto); default: a local instance")
    g.add_argument("--nproc-per-node", type=int, default=1,
                   help="> 1: each trial is a data-parallel torchrun run of this many "
                        "processes (gloo on CPU, NCCL on GPUs); the batch is global")
    g.add_argument("--gpus-per-trial", type=float, default=0.0,
                   help="--backend ray: GPUs each trial's task asks for (num_gpus)")
    g.add_argument("--trial-timeout", type=float, metavar="SECONDS",
                   help="watchdog: kill an attempt after this much wall clock (it is recorded "
                        "as interrupted; --resume runs it again)")
    g.add_argument("--checkpoint-every", type=float, metavar="MINUTES",
                   help="save each run's training state this often, so that --resume "
                        "continues a killed or preempted run with its accumulated time")

def scaling_flags(p: argparse.ArgumentParser, required: bool) -> None:
    g = p.add_argument_group("scaling study")
    g.add_argument("--batch-sizes", type=_ints, required=required,
                   help="e.g. 8,16,32,64,128,256,512,1024")
    g.add_argument("--sparsities", type=_floats, default=[0.0], help="e.g. 0,0.5,0.9")
    g.add_argument("--prune-method", choices=("snip", "magnitude", "random"), default="snip",
                   help="pruning at initialisation for sparsity > 0 (default snip)")
    g.add_argument("--goal", type=float,
                   help="validation target-metric goal (default: the catalog's target)")
    g.add_argument("--eval-every", type=int, default=5, help="eval cadence in steps")
    g.add_argument("--noise-every", type=int, default=50,
                   help="steps between gradient-noise measurements (0: none)")
    g.add_argument("--lr-scaling", choices=("none", "sqrt", "linear"), default="sqrt",
                   help="shift of the learning-rate range with batch size (default sqrt)")

# --- the commands ------------------------------------------------------------------------------
WORKLOAD_HELP = ("catalog names (pacebench list), installed plug-ins, path/file.py:Factory or "
                 "pkg.module:Factory (runners/plugins.py), or entry=<factory> for one entry")

ALGORITHM_HELP = ("built-ins, installed plug-ins, path/file.py:Class, pkg.module:Class (e.g. "
                  "torch.optim:RAdam), algoperf:path/submission.py, each optionally as "
                  "name=<spec>")

def submission_name(args: argparse.Namespace) -> str | None:
    """The algorithm name of --algoperf-submission ("algoperf:<absolute path>"), or None.
    Puts the --algoperf-root folders on the submissions' import path first."""
    if args.algoperf_root:
        from runners.algoperf import set_algoperf_roots
        set_algoperf_roots(args.algoperf_root)
    if not args.algoperf_submission:
        if args.tuning_search_space:
            raise ValueError("--tuning-search-space goes with --algoperf-submission")
        return None
    path = Path(args.algoperf_submission)
    if not path.is_file():
        raise FileNotFoundError(f"AlgoPerf submission file not found: {path}")
    from runners.algoperf import algorithm_name, load_submission
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
        raise ValueError(f"{item} holds {len(names)} workloads ({', '.join(names)}): name one "
                         f"as <workload>={item}")
    return names[0]

def search_spaces(items: list[str], algorithms) -> dict[str, str]:
    """{algorithm: search-space file} of --search-space NAME=FILE.json items (FILE.json alone
    when the study has one algorithm)."""
    algorithms, spaces = list(algorithms), {}
    for item in items:
        name, sep, path = item.rpartition("=")
        if not sep and len(algorithms) == 1:
            name = algorithms[0]
        if name not in algorithms:
            raise ValueError(f"--search-space {item}: give NAME=FILE.json with NAME one of the "
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
    from runners.algoperf import load_submission, submission_path

    sources = parse_algorithms(items, algorithm_names())
    for source in sources.values():
        if source.kind == "algoperf":  # fail now, naming what is missing, not in every worker
            load_submission(submission_path(source.spec))
    check_names_against_store(sources, store)
    return sources

def check_names_against_store(sources: dict, store) -> None:
    """Refuse a display name that the store's runs give to other code."""
    from workbench import query

    runs = query.runs_frame(store)
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
            raise ValueError(f"the store's runs named {name!r} ran {before}, not {now}: give "
                             f"this one another name (other={source.spec}) or use another store")

def launch_and_report(launch, next_step: str) -> int:
    """Run a study launcher; print its summary and what to do next. Exit 2 if the study exists
    (and --resume was not given), 1 if any trial failed."""
    from runners.launch import StudyExistsError

    try:
        result = launch()
    except StudyExistsError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(result.summary())
    print(next_step)
    return 0 if not result.failed else 1


def scope_flags(p: argparse.ArgumentParser) -> None:
    """The flags of what part of a store an analysis reads, and on which clock
    (workbench/scope.py: score, compare, budget)."""
    read_flags(p)
    p.add_argument("--time-axis", choices=("train", "wall", "steps"), default="train",
                   help="what time to target is counted in: train (training seconds, the "
                        "default), wall (wall seconds, evals included) or steps")
    p.add_argument("--exclude-compile", action="store_true",
                   help="take each run's compilation seconds off its training and wall "
                        "seconds (no effect on steps)")


def read_flags(p: argparse.ArgumentParser) -> None:
    """The flags of what part of a store is read (workbench/scope.py): --ruleset, --study,
    --with-adhoc (the analysis commands and `pacebench report`)."""
    p.add_argument("--ruleset", choices=("external", "self"),
                   help="the tuning ruleset to read (rulesets never share a score; default: "
                        "the store's only one, else external)")
    p.add_argument("--study", dest="studies", action="append", default=[], metavar="NAME",
                   help="read only the runs of this study name (repeatable; default: every "
                        "study of the store)")
    p.add_argument("--with-adhoc", action="store_true",
                   help="take in the ad-hoc runs of `pacebench run` (left out by default)")


def scope_options(args: argparse.Namespace) -> dict:
    """The scope flags as keyword arguments of workbench.results.Results' methods."""
    if args.exclude_compile and args.time_axis == "steps":
        print("note: --exclude-compile leaves steps to target as they are (compiling takes no "
              "step)", file=sys.stderr)
    return {"ruleset": args.ruleset, "studies": tuple(args.studies),
            "with_adhoc": args.with_adhoc, "time_axis": args.time_axis,
            "exclude_compile": args.exclude_compile}
