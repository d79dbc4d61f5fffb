"""The `pacebench` command: run, study, scale, score, compare, budget, rank, report, serve,
set-targets, noise, list, import-algoperf.

This module parses the command line and dispatches; runners/commands.py does the work. The store
is `--store`, else $PACEBENCH_STORE, else `results/`. A bad input ends in one line saying what was
wrong and what is valid (the traceback with PACEBENCH_DEBUG=1).
"""
from __future__ import annotations

import argparse
import os
import sys
import warnings

from runners import commands
from runners.cli_types import Deprecated as _Deprecated, csv as _csv, floats as _floats
from runners.cli_types import hparams as _hparams, ints as _ints
from workbench.store import StoreError

__all__ = ["main", "build_parser", "add_execution_flags"]


# --- flags shared by several commands ----------------------------------------------------------
def _store_flag(p: argparse.ArgumentParser) -> None:
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


def _training_flags(p: argparse.ArgumentParser) -> None:
    _store_flag(p)
    p.add_argument("--max-steps", type=int, help="cap on update steps per run")
    p.add_argument("--data-dir", help="dataset folder (default: $PACEBENCH_DATA or datasets/cache)")
    p.add_argument("--quiet", action="store_true", help="no per-eval lines / progress bar")
    add_execution_flags(p)


def _algoperf_flags(p: argparse.ArgumentParser, run: bool, which=None) -> None:
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


def _launch_flags(p: argparse.ArgumentParser, faults: bool = True) -> None:
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


def _scaling_flags(p: argparse.ArgumentParser, required: bool) -> None:
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


def _add_run(sub) -> None:
    p = sub.add_parser("run", help="train one run and record it")
    p.add_argument("--workload", required=True, help=WORKLOAD_HELP)
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--algorithm", help=ALGORITHM_HELP)
    _algoperf_flags(p, run=True, which=which)
    p.add_argument("--hparams", type=_hparams, default={}, help="JSON object or @file.json")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--batch-size", type=int)
    p.add_argument("--name", default="adhoc", help="study name the run is filed under")
    _training_flags(p)
    p.set_defaults(func=commands.run)


def _add_study(sub) -> None:
    p = sub.add_parser("study", help="run a study: workloads x algorithms x studies x trials x seeds")
    p.add_argument("--workloads", type=_csv, required=True, help=WORKLOAD_HELP)
    p.add_argument("--algorithms", type=_csv, help=ALGORITHM_HELP)
    p.add_argument("--search-space", action="append", default=[], metavar="NAME=SPACE.json",
                   help="an algorithm's search space (AlgoPerf's JSON format) instead of its "
                        "own; repeatable")
    _algoperf_flags(p, run=False)
    p.add_argument("--ruleset", choices=("external", "self"), default="external")
    p.add_argument("--studies", type=int, default=1)
    p.add_argument("--trials", type=int, default=5)
    p.add_argument("--seeds", type=_ints, default=[0])
    p.add_argument("--name", default="study", help="study name (resume matches on it)")
    p.add_argument("--dry-run", action="store_true", help="print the plan; run, write nothing")
    p.add_argument("--no-stop-on-target", action="store_true",
                   help="train every run to its budget (full curves) even after its targets")
    p.add_argument("--early-stop", choices=("none", "lcga", "tse"), default="none",
                   help="early-stopping tuner: successive halving at 1/9 and 1/3 of the step "
                        "budget, trials ranked by this estimator (default none)")
    p.add_argument("--prune", dest="early_stop", choices=("none", "lcga", "tse"),
                   action=_Deprecated, instead="--early-stop", help=argparse.SUPPRESS)
    p.add_argument("--eta", type=int, default=3, help="--early-stop keeps the best 1/eta at a rung")
    p.add_argument("--kind", choices=("tuning", "scaling"), default="tuning",
                   action=_Deprecated, instead="`pacebench scale` for a scaling study",
                   help=argparse.SUPPRESS)
    _scaling_flags(p, required=False)  # --kind scaling only (deprecated)
    _launch_flags(p)
    _training_flags(p)
    p.set_defaults(func=_study_or_scale)


def _add_scale(sub) -> None:
    p = sub.add_parser("scale", help="a batch-size (and sparsity) scaling study: steps to a "
                                     "goal per batch size")
    p.add_argument("--workloads", type=_csv, required=True, help=WORKLOAD_HELP)
    p.add_argument("--algorithms", type=_csv, required=True,
                   help="each needs <algorithm>_scaling.json beside its search space")
    p.add_argument("--trials", type=int, default=5, help="quasirandom points per cell")
    p.add_argument("--name", default="scaling", help="study name (resume matches on it)")
    _scaling_flags(p, required=True)
    _launch_flags(p, faults=False)
    _training_flags(p)
    p.set_defaults(func=commands.scale)


def _study_or_scale(args: argparse.Namespace) -> int:
    """`study`, or `scale` under its old spelling `study --kind scaling`."""
    if args.kind != "scaling":
        return commands.study(args)
    if not args.algorithms:
        raise ValueError("a scaling study needs --algorithms")
    if not args.batch_sizes:
        raise ValueError("a scaling study needs --batch-sizes, e.g. 8,16,32,64")
    from runners.processes import LaunchOptions

    if commands.launch_options(args) != LaunchOptions():
        raise ValueError("--backend, --address, --nproc-per-node, --gpus-per-trial, "
                         "--trial-timeout and --checkpoint-every apply to tuning studies only")
    return commands.scale(args)


def _time_axis_flags(p: argparse.ArgumentParser) -> None:
    """--time-axis (the names of workbench.cubes.TIME_AXIS_COLUMNS, spelled here so that parsing
    loads no xarray) and --exclude-compile of score, compare and budget."""
    p.add_argument("--time-axis", choices=("train", "wall", "steps"), default="train",
                   help="what time to target is counted in: train (training seconds, the "
                        "default), wall (wall seconds, evals included) or steps")
    p.add_argument("--exclude-compile", action="store_true",
                   help="take each run's compilation seconds off its training and wall "
                        "seconds (no effect on steps)")


def _add_analysis(sub) -> None:
    p = sub.add_parser("score", help="AlgoPerf scores, times to target and speedups of a store")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true")
    out.add_argument("--csv", action="store_true", help="one row per algorithm, for spreadsheets")
    p.add_argument("--reference", help="algorithm the speedups are measured against (default: "
                                       "baseline when present, else the top scorer)")
    _time_axis_flags(p)
    _store_flag(p)
    p.set_defaults(func=commands.score)

    p = sub.add_parser("compare", help="A against B: speedup with an interval, a test, a verdict")
    p.add_argument("--algorithms", type=_csv, required=True, help="A,B")
    p.add_argument("--workloads", type=_csv, help="default: the scored workloads")
    p.add_argument("--confidence", type=float, default=0.95, help="of intervals and verdict")
    p.add_argument("--detect", type=float, default=1.25, help="speedup to size studies for")
    p.add_argument("--json", action="store_true")
    _time_axis_flags(p)
    _store_flag(p)
    p.set_defaults(func=commands.compare)

    p = sub.add_parser("budget", help="tuning-budget curves: results with k of the trials")
    p.add_argument("--json", action="store_true")
    _time_axis_flags(p)
    _store_flag(p)
    p.set_defaults(func=commands.budget)

    p = sub.add_parser("rank", help="early ranking: how well TSE/LCGA estimators rank a study's runs")
    p.add_argument("--study", help="study name (default: every study in the store)")
    p.add_argument("--fractions", type=_floats, default=[0.05, 0.1, 0.2, 0.5],
                   help="budget fractions (default 0.05,0.1,0.2,0.5)")
    _store_flag(p)
    p.set_defaults(func=commands.rank)

    p = sub.add_parser("import-algoperf", help="import AlgoPerf scoring logs into a store")
    p.add_argument("logdir", help="folder holding <submission>/study_<k>/<workload>_<fw>/trial_<i>/")
    p.add_argument("--targets", required=True,
                   help="AlgoPerf targets file, e.g. workload_targets_v05.json")
    p.add_argument("--ruleset", choices=("external", "self"),
                   help="default: from an external_tuning / self_tuning folder in the path")
    _store_flag(p)
    p.set_defaults(func=commands.import_algoperf)


def _add_views(sub) -> None:
    p = sub.add_parser("report", help="write a self-contained HTML report (and figures)")
    p.add_argument("--out", required=True, help="the HTML file to write")
    p.add_argument("--title")
    p.add_argument("--rulesets", help="show only these tuning rulesets, comma-separated")
    p.add_argument("--workloads", help="show only these workloads, comma-separated")
    p.add_argument("--algorithms", help="show only these algorithms, comma-separated")
    p.add_argument("--figures", metavar="DIR",
                   help="also write each view's plots into DIR as files for papers")
    p.add_argument("--formats", type=_csv, default="png,svg",
                   help="figure formats, comma-separated (default png,svg)")
    _store_flag(p)
    p.set_defaults(func=commands.report)

    p = sub.add_parser("serve", help="serve the dashboard over a store")
    p.add_argument("--address", default="127.0.0.1", help="bind address (default 127.0.0.1 only)")
    p.add_argument("--port", type=int, default=5006)
    _store_flag(p)
    p.set_defaults(func=commands.serve)


def _add_targets_and_list(sub) -> None:
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
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--out", help="folder for the target-setting record (default: targets/, or "
                                 "for a plug-in workload from a file targets/ beside it)")
    _training_flags(p)
    p.set_defaults(func=commands.set_targets)

    p = sub.add_parser("noise", help="the noise floor: one setting run under N seeds")
    p.add_argument("--workload", required=True, help=WORKLOAD_HELP)
    p.add_argument("--algorithm", help="default: the workload's tuned baseline (targets "
                                       "record); else " + ALGORITHM_HELP)
    p.add_argument("--hparams", type=_hparams, help="JSON or @file.json (default: the baseline's)")
    p.add_argument("--seeds", type=int, default=10, help="number of seeds (default 10)")
    p.add_argument("--first-seed", type=int, default=1000, help="seeds from this one up")
    p.add_argument("--studies", type=_ints, default=[1, 3, 5, 10], help="for the detectable speedup")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--name", help="study name (default noise-<workload>-<algorithm>)")
    p.add_argument("--json", action="store_true")
    _training_flags(p)
    p.set_defaults(func=commands.noise)

    p = sub.add_parser("list", help="list workloads and algorithms")
    form = p.add_mutually_exclusive_group()
    form.add_argument("--markdown", action="store_true",
                      help="the README's workload catalog table")
    form.add_argument("--json", action="store_true",
                      help="workloads (targets, eval cadence, median steps and time to target, "
                           "eval fraction) and algorithms as JSON")
    p.set_defaults(func=commands.list_names)


class _Parser(argparse.ArgumentParser):
    """argparse, with a bad argument reported in one line (no usage dump): what was wrong, and
    where the valid forms are listed."""

    def error(self, message: str):
        self.exit(2, f"error: {self.prog}: {message} (`{self.prog} --help` lists the options)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="pacebench", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for add in (_add_run, _add_study, _add_scale, _add_analysis, _add_views,
                _add_targets_and_list):
        add(sub)
    return parser


def _one_line_warning(message, category, filename, lineno, file=None, line=None) -> None:
    print(f"warning: {message}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if not os.environ.get("PACEBENCH_DEBUG"):  # e.g. "warning: skipped run X: ..." in one line
        warnings.showwarning = _one_line_warning
    try:
        return args.func(args)
    except BrokenPipeError:  # the reader went away (`pacebench score | head`): stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    # bad input (names, numbers, files, a path that is no store): one line, what and what is
    # valid; PACEBENCH_DEBUG=1 raises instead, for the traceback
    except (KeyError, ValueError, OSError, StoreError) as e:
        if os.environ.get("PACEBENCH_DEBUG"):
            raise
        message = e.args[0] if isinstance(e, KeyError) and e.args else str(e)
        print(f"error: {message}", file=sys.stderr)
        return 2

if __name__ == "__main__":
    sys.exit(main())
