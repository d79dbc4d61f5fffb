"""The flags several `pacebench` commands share, and the checks every number given passes before
anything starts (check_numbers)."""
from __future__ import annotations

import argparse
import math

from runners.cli.types import floats as _floats, ints as _ints
from workbench.errors import UserError

__all__ = ["store_flag", "add_execution_flags", "training_flags", "algoperf_flags",
           "launch_flags", "backend_flags", "trial_timeout_flag", "scaling_flags", "scope_flags", "read_flags",
           "check_numbers",
           "SCALING_DEFAULTS", "WORKLOAD_HELP", "ALGORITHM_HELP", "ITEM_RULE"]


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
    p.add_argument("--compile-mode", choices=("default", "reduce-overhead", "max-autotune",
                                              "max-autotune-no-cudagraphs"), default="default",
                   help="torch.compile's mode, with --compile (default: default); measure which "
                        "is fastest: benchmarks/throughput.py --compile-mode")
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
    p.add_argument("--allow-mixed-execution", action="store_true",
                   help="with --resume: let the new runs differ from the study's finished ones "
                        "in --device, --precision, --compile, --channels-last, --threads or "
                        "the hardware (refused otherwise); the new runs record it, and score "
                        "and compare note the pooled mix")
    if faults:
        backend_flags(p)


def backend_flags(p: argparse.ArgumentParser, detach: bool = True) -> None:
    """Where trials run (local pool, Ray, Slurm) and the fault handling: the flags that
    cli.common.launch_options reads. `detach`: offer --detach (a command that analyses its
    runs right after launching them cannot)."""
    g = p.add_argument_group("where trials run, and faults")
    g.add_argument("--backend", choices=("local", "ray", "slurm"), default="local",
                   help="local: a process pool on this machine (default); ray: one Ray task "
                        "per trial; slurm: one job of a Slurm job array per trial, through "
                        "submitit (ray and slurm: the store must be on a path every node "
                        "shares; docs/slurm.md)")
    g.add_argument("--start-method", choices=("forkserver", "spawn"),
                   help="local pool: fork each trial from a server that imported torch once "
                        "(default), or start a fresh interpreter per trial")
    g.add_argument("--address", help="--backend ray: the cluster to join (e.g. "
                                     "ray://head:10001 or auto); default: a local instance")
    g.add_argument("--nproc-per-node", type=int, default=1,
                   help="> 1: each trial is a data-parallel torchrun run of this many "
                        "processes (gloo on CPU, NCCL on GPUs); the batch is global")
    g.add_argument("--gpus-per-trial", type=float,
                   help="--backend ray: GPUs each trial's task asks for (num_gpus); --backend "
                        "slurm: GPUs each trial's job asks for (a whole number)")
    g.add_argument("--slurm-partition", metavar="NAME",
                   help="--backend slurm: the partition to submit to (default: the cluster's)")
    g.add_argument("--slurm-setup", action="append", metavar="CMD",
                   help="--backend slurm: a shell line each job runs before its trial (module "
                        "load, source venv/bin/activate); repeatable, run in order")
    g.add_argument("--slurm-array-parallelism", type=int, metavar="N",
                   help="--backend slurm: at most N trials of the array run at once")
    g.add_argument("--slurm-param", action="append", metavar="KEY=VALUE",
                   help="--backend slurm: another sbatch option for every job (account=proj, "
                        "qos=high, mem=16G, constraint=a100); repeatable")
    g.add_argument("--slurm-store-check", choices=("on", "off"),
                   help="--backend slurm: check with a probe job that the nodes see the store "
                        "before submitting (default on)")
    if detach:
        g.add_argument("--detach", action="store_true",
                       help="--backend slurm: submit the trials and return; follow them with "
                            "the same command plus --resume --status, collect the rest with "
                            "--resume")
    trial_timeout_flag(g)
    g.add_argument("--checkpoint-every", type=float, metavar="MINUTES",
                   help="save each run's training state this often, so that --resume "
                        "continues a killed or preempted run with its accumulated time")


def trial_timeout_flag(p) -> None:
    p.add_argument("--trial-timeout", type=float, metavar="SECONDS",
                   help="watchdog: kill an attempt (with all it started) after this much wall "
                        "clock; it is recorded as failed, and --resume runs it again (default: "
                        "3 x its budget in seconds + 60 s)")


# The scaling flags' defaults: `study` parses them with no default (None: not given), so that
# a plain study can refuse them (they belong to `scale`), and fills these in for `--kind scaling`.
SCALING_DEFAULTS = {"sparsities": [0.0], "prune_method": "snip", "eval_every": 5,
                    "noise_every": 50, "lr_scaling": "sqrt"}


def scaling_flags(p: argparse.ArgumentParser, required: bool, defaults: bool = True) -> None:
    """The scaling study's flags; `defaults` False: parsed as None when not given (see
    SCALING_DEFAULTS)."""
    d = SCALING_DEFAULTS if defaults else dict.fromkeys(SCALING_DEFAULTS)
    g = p.add_argument_group("scaling study")
    g.add_argument("--batch-sizes", type=_ints, required=required,
                   help="e.g. 8,16,32,64,128,256,512,1024")
    g.add_argument("--sparsities", type=_floats, default=d["sparsities"], help="e.g. 0,0.5,0.9")
    g.add_argument("--prune-method", choices=("snip", "magnitude", "random"),
                   default=d["prune_method"],
                   help="pruning at initialisation for sparsity > 0 (default snip)")
    g.add_argument("--goal", type=float,
                   help="validation target-metric goal (default: the catalog's target)")
    g.add_argument("--eval-every", type=int, default=d["eval_every"],
                   help="eval cadence in steps")
    g.add_argument("--noise-every", type=int, default=d["noise_every"],
                   help="steps between gradient-noise measurements (0: none)")
    g.add_argument("--lr-scaling", choices=("none", "sqrt", "linear"), default=d["lr_scaling"],
                   help="shift of the learning-rate range with batch size (default sqrt)")


# --- the commands ------------------------------------------------------------------------------
# How an item of --workloads and --algorithms is read (cli_types.csv, plugins.named_item).
ITEM_RULE = ("Items are separated by commas; a comma inside a path is written \\, (quoted: "
             "'dir\\,1/a.py:A'). NAME= is read up to the first '=' when no '/' or ':' comes "
             "before it and the whole item is not an existing file: a path holding '=' is "
             "read whole if it exists, and NAME=<path> always works")

WORKLOAD_HELP = ("catalog names (pacebench list), installed plug-ins, path/file.py:Factory or "
                 "pkg.module:Factory (runners/plugins.py), or entry=<factory> for one entry. "
                 + ITEM_RULE)


ALGORITHM_HELP = ("built-ins, installed plug-ins, path/file.py:Class, pkg.module:Class (e.g. "
                  "torch.optim:RAdam), algoperf:path/submission.py, each optionally as "
                  "NAME=<spec>. " + ITEM_RULE)


# Every numeric option, by its dest: what a valid value is (each element of a list option).
_POSITIVE_INT = ("an integer >= 1", lambda v: v >= 1)
_NATURAL = ("an integer >= 0", lambda v: v >= 0)
_NUMBERS = {
    "workers": _POSITIVE_INT,
    "trials": _POSITIVE_INT,
    "studies": _POSITIVE_INT,
    "max_studies": ("an integer >= 2 (a verdict needs 2 studies a side)", lambda v: v >= 2),
    "reruns": ("an integer >= 2 (a spread needs two runs)", lambda v: v >= 2),
    "seed": _NATURAL,
    "seeds": _NATURAL,
    "first_seed": _NATURAL,
    "max_steps": _POSITIVE_INT,
    "batch_size": _POSITIVE_INT,
    "batch_sizes": ("integers >= 1", lambda v: v >= 1),
    "threads": _POSITIVE_INT,
    "nproc_per_node": _POSITIVE_INT,
    "slurm_array_parallelism": _POSITIVE_INT,
    "gpus_per_trial": ("a finite number >= 0", lambda v: v >= 0),
    "checkpoint_every": ("a finite number of minutes > 0", lambda v: v > 0),
    "trial_timeout": ("a finite number of seconds > 0", lambda v: v > 0),
    "eta": ("an integer >= 2 (the share of trials kept at a rung is 1/eta)", lambda v: v >= 2),
    "reach_quantile": ("a number in (0, 1]", lambda v: 0 < v <= 1),
    "horizon": ("a number in (0, 1]", lambda v: 0 < v <= 1),
    "confidence": ("a number in (0, 1), e.g. 0.95", lambda v: 0 < v < 1),
    "detect": ("a speedup > 1, e.g. 1.25", lambda v: v > 1),
    "goal": ("a finite number", lambda v: True),
    "eval_every": _POSITIVE_INT,
    "noise_every": _NATURAL,
    "sparsities": ("numbers in [0, 1)", lambda v: 0 <= v < 1),
    "fractions": ("numbers in (0, 1]", lambda v: 0 < v <= 1),
    "port": ("a port number in 1..65535", lambda v: 1 <= v <= 65535),
    "relax_targets": ("a number in [0, 1), e.g. 0.1 (targets 10 % easier)",
                      lambda v: 0 <= v < 1),
}


def check_numbers(args: argparse.Namespace) -> None:
    """UserError naming the first numeric option that is not finite or out of its range (see
    _NUMBERS), before anything starts; options not given (None) are not checked."""
    for dest, (valid, ok) in _NUMBERS.items():
        value = getattr(args, dest, None)
        for v in (value if isinstance(value, list) else [value]):
            if v is None or isinstance(v, bool) or not isinstance(v, (int, float)):
                continue
            if not math.isfinite(v) or not ok(v):
                flag = "--" + dest.replace("_", "-")
                raise UserError(f"{flag} {v!r}: must be {valid}")


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
    p.add_argument("--relax-targets", type=float, default=0.0, metavar="R",
                   help="score against targets made easier by R in [0, 1) (AlgoPerf's "
                        "relaxation: a minimised target times 1 + R, a maximised one times "
                        "1 - R); first hits are recomputed from the eval rows (default 0)")


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
