"""The `pacebench` command: run, study, score, report, serve, set-targets, list, import-algoperf.

Training commands import torch lazily, so `pacebench score` and `pacebench report` start fast.
The store is `--store`, else $PACEBENCH_STORE, else `results/`.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
from pathlib import Path

__all__ = ["main", "build_parser"]

DEFAULT_STORE = "results"


def _store_path(args: argparse.Namespace) -> Path:
    return Path(args.store or os.environ.get("PACEBENCH_STORE") or DEFAULT_STORE)


def _csv(text: str) -> list[str]:
    items = [t.strip() for t in text.split(",") if t.strip()]
    if not items:
        raise argparse.ArgumentTypeError("expected a comma-separated list, e.g. a,b")
    return items


def _ints(text: str) -> list[int]:
    try:
        return [int(t) for t in _csv(text)]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None


def _hparams(text: str) -> dict:
    """--hparams takes a JSON object, or @path to a JSON file."""
    raw = Path(text[1:]).read_text() if text.startswith("@") else text
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as e:
        raise argparse.ArgumentTypeError(f"--hparams is not valid JSON ({e}): {raw[:80]!r}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError("--hparams must be a JSON object, e.g. '{\"learning_rate\": 0.001}'")
    return value


def _submission(args: argparse.Namespace) -> str | None:
    """The algorithm name of --algoperf-submission ("algoperf:<absolute path>"), or None."""
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


def _first_trial(space_path: str, study_name: str, algorithm: str) -> dict:
    """Trial 0 of a one-trial draw from the search space at `space_path` (as `study` draws it)."""
    from runners.tuning import SearchSpace, draw_trials
    from workbench.spec import stable_hash

    seed = int(stable_hash([study_name, algorithm], 8), 16)
    return draw_trials(SearchSpace.from_json(space_path), 1, seed)[0]


# --- commands ----------------------------------------------------------------------------------
def _device_options(args: argparse.Namespace) -> dict:
    """The RunConfig / StudySpec fields of --device, --precision, --compile, --channels-last."""
    return {"device": args.device, "precision": args.precision, "compile": args.compile,
            "channels_last": args.channels_last}


def cmd_run(args: argparse.Namespace) -> int:
    from runners.loop import run
    from workbench.spec import RunConfig
    from workbench.store import open_store

    submission = _submission(args)
    algorithm = submission or args.algorithm
    hparams, space = args.hparams, args.tuning_search_space
    if submission and not space:  # AlgoPerf's convention: the search space beside the submission
        beside = Path(args.algoperf_submission).parent / "tuning_search_space.json"
        space = str(beside) if beside.is_file() else None
    if space and not hparams:
        hparams = _first_trial(space, args.name, algorithm)
        print(f"hyperparameters drawn from {space}: {json.dumps(hparams)}")
    config = RunConfig(workload=args.workload, algorithm=algorithm, hparams=hparams,
                       seed=args.seed, batch_size=args.batch_size, max_steps=args.max_steps,
                       threads=args.threads, study_name=args.name, **_device_options(args))
    store = open_store(_store_path(args), create=True)

    def show(row: dict) -> None:
        metrics = "  ".join(f"{k}={v:.4g}" for k, v in row.items() if "/" in k and v is not None)
        print(f"step {row['step']:>6}  train {row['train_seconds']:8.2f}s  {metrics}", flush=True)

    run_id = run(config, store, data_dir=args.data_dir, on_eval=None if args.quiet else show)
    doc = store.run_doc(run_id)
    print(f"run {run_id}: {doc['status']} ({doc.get('stop_reason')}) in store {store.root}")
    return 0 if doc["status"] in ("complete", "diverged") else 1


def _floats(text: str) -> list[float]:
    try:
        return [float(t) for t in _csv(text)]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}") from None


def cmd_scaling(args: argparse.Namespace) -> int:
    """`study --kind scaling`: steps-to-result per batch size and sparsity (runners/scaling_study)."""
    from runners.scaling_study import run_scaling
    from workbench.spec import ScalingSpec
    from workbench.store import open_store

    if not args.algorithms:
        raise ValueError("a scaling study needs --algorithms")
    if not args.batch_sizes:
        raise ValueError("a scaling study needs --batch-sizes, e.g. 8,16,32,64")
    spec = ScalingSpec(workloads=args.workloads, algorithms=args.algorithms,
                       batch_sizes=tuple(args.batch_sizes), sparsities=tuple(args.sparsities),
                       prune_method=args.prune_method, trials=args.trials, goal=args.goal,
                       max_steps=args.max_steps or ScalingSpec.max_steps,
                       eval_every=args.eval_every, noise_every=args.noise_every,
                       lr_scaling=args.lr_scaling, name=args.name, threads=args.threads)
    store = open_store(_store_path(args), create=True)
    return _launch(lambda: run_scaling(spec, store, workers=args.workers, resume=args.resume,
                                       data_dir=args.data_dir, progress=not args.quiet),
                   f"store: {store.root}   analyse it: notebooks/scaling.ipynb (store={store.root})")


def _launch(launch, next_step: str) -> int:
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


def _launch_options(args: argparse.Namespace):
    """The backend and fault-handling flags of `study` as runners.launch.LaunchOptions."""
    from runners.launch import LaunchOptions

    options = LaunchOptions(backend=args.backend, address=args.address,
                            nproc_per_node=args.nproc_per_node, gpus_per_trial=args.gpus_per_trial,
                            trial_timeout=args.trial_timeout,
                            checkpoint_minutes=args.checkpoint_every)
    options.check()
    return options


def _default_launch_options():
    from runners.launch import LaunchOptions
    return LaunchOptions()


def cmd_study(args: argparse.Namespace) -> int:
    from runners.launch import run_study
    from workbench.spec import StudySpec
    from workbench.store import open_store

    if args.kind == "scaling":
        if _device_options(args) != {"device": "cpu", "precision": "fp32", "compile": False,
                                     "channels_last": False}:
            raise ValueError("--device, --precision, --compile and --channels-last are not "
                             "supported with --kind scaling yet: scaling studies run on the CPU")
        if _launch_options(args) != _default_launch_options():
            raise ValueError("--backend, --address, --nproc-per-node, --gpus-per-trial, "
                             "--trial-timeout and --checkpoint-every apply to --kind tuning "
                             "only, for now")
        return cmd_scaling(args)
    submission = _submission(args)
    algorithms = [*(args.algorithms or []), *([submission] if submission else [])]
    if not algorithms:
        raise ValueError("give --algorithms, --algoperf-submission, or both")
    spaces = {submission: args.tuning_search_space} if args.tuning_search_space else None
    spec = StudySpec(workloads=args.workloads, algorithms=algorithms, ruleset=args.ruleset,
                     studies=args.studies, trials=args.trials, seeds=tuple(args.seeds),
                     name=args.name, max_steps=args.max_steps, threads=args.threads,
                     stop_on_target=not args.no_stop_on_target, **_device_options(args))
    options = _launch_options(args)
    store = open_store(_store_path(args), create=True)
    return _launch(lambda: run_study(spec, store, workers=args.workers, resume=args.resume,
                                     data_dir=args.data_dir, progress=not args.quiet,
                                     search_spaces=spaces, prune=args.prune, eta=args.eta,
                                     options=options),
                   f"store: {store.root}   score it: pacebench score --store {store.root}")


def cmd_score(args: argparse.Namespace) -> int:
    from workbench import scoring
    from workbench.cubes import final_cube
    from workbench.store import open_store

    store = open_store(_store_path(args))
    runs = store.runs()
    if runs.empty:
        print(f"error: store {_store_path(args)} has no runs", file=sys.stderr)
        return 1
    doc = store.scoring_config()  # an imported benchmark's rules; else the plain rules
    config = scoring.ScoringConfig.from_dict(doc) if doc else None
    cube = final_cube(runs)
    table = scoring.score_table(cube, config)
    times = scoring.workload_times(cube)
    speedups = _speedups(cube, config, runs, args.reference)
    if args.json:
        ttt = {str(a): {str(w): _seconds(times.sel(algorithm=a, workload=w).item())
                        for w in times.workload.values} for a in times.algorithm.values}
        out = {"scores": {r.algorithm: round(float(r.score), 6) for r in table.itertuples()},
               "time_to_target": ttt}
        if speedups is not None:
            out["speedups"] = {"reference": speedups.attrs["reference"],
                               "faster_by": {str(a): round(float(v), 6) for a, v in
                                             zip(speedups.algorithm.values, speedups.values)}}
        print(json.dumps(out, indent=2))
    else:
        print(table.to_string(index=False, float_format=lambda v: f"{v:.4f}"))
        print("\nmedian time to target (training seconds; inf = not reached):")
        print(times.to_pandas().to_string(float_format=lambda v: f"{v:.2f}"))
        if speedups is not None:
            print(f"\nspeedup over {speedups.attrs['reference']} (AlgoPerf: 1 - geometric mean "
                  "of time ratios; misses cost the budget + 1 s):")
            print(speedups.to_pandas().to_string(float_format=lambda v: f"{v:+.4f}"))
    return 0


def _speedups(cube, config, runs, reference: str | None):
    """AlgoPerf speedups over `reference` (default "baseline") when the config has budgets."""
    from workbench import scoring

    names = [str(a) for a in cube["algorithm"].values]
    reference = reference or ("baseline" if "baseline" in names else None)
    if config is None or not config.budgets or reference is None:
        return None
    rulesets = set(runs["ruleset"].dropna())
    ruleset = rulesets.pop() if len(rulesets) == 1 else "external"
    return scoring.algoperf_speedups(cube, config, reference, ruleset)


def cmd_import_algoperf(args: argparse.Namespace) -> int:
    from workbench.importers.algoperf import import_algoperf

    report = import_algoperf(args.logdir, _store_path(args), args.targets, ruleset=args.ruleset)
    print(f"{report.summary()} into {_store_path(args)}")
    for problem in report.problems:
        print(f"problem: {problem}", file=sys.stderr)
    return 1 if report.problems else 0


def _seconds(value: float) -> float | None:
    return None if value is None or not math.isfinite(value) else round(float(value), 6)


def cmd_report(args: argparse.Namespace) -> int:
    from workbench.report import write_report

    out = write_report(_store_path(args), Path(args.out), title=args.title,
                       rulesets=args.rulesets, workloads=args.workloads,
                       algorithms=args.algorithms, figures=args.figures,
                       formats=args.formats)
    print(f"report written to {out} (self-contained; open it in a browser)")
    if args.figures:
        print(f"figures ({', '.join(args.formats)}) written to {args.figures}")
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    app = Path(__file__).resolve().parents[1] / "workbench" / "app.py"
    env = {**os.environ, "PACEBENCH_STORE": str(_store_path(args).resolve())}
    cmd = [sys.executable, "-m", "panel", "serve", str(app), "--address", args.address,
           "--port", str(args.port), "--allow-websocket-origin", f"{args.address}:{args.port}"]
    if args.address in ("127.0.0.1", "localhost"):
        cmd += ["--allow-websocket-origin", f"localhost:{args.port}"]
    print(f"serving {_store_path(args)} at http://{args.address}:{args.port}/app", flush=True)
    return subprocess.call(cmd, env=env)


def cmd_set_targets(args: argparse.Namespace) -> int:
    from runners.target_setting import set_targets

    set_targets(args.workload, args.algorithm, trials=args.trials, reruns=args.reruns,
                out_dir=Path(args.out), store_path=_store_path(args), workers=args.workers,
                data_dir=args.data_dir, run_options=_device_options(args))
    return 0


def cmd_rank(args: argparse.Namespace) -> int:
    """Spearman/Kendall of each early estimator vs the final validation metric, per budget fraction,
    for each (study, workload, algorithm) with 3+ complete runs; plus pruning's compute saved."""
    from workbench.early_stopping import study_summary
    from workbench.store import open_store
    from workbench.views.early_ranking import ranking_tables

    store = open_store(_store_path(args))
    runs = store.runs()
    if args.study:
        runs = runs[runs.study_name == args.study]
    fractions = [float(f) for f in _csv(args.fractions)]
    for (study, workload, algorithm), table in ranking_tables(store, runs, fractions).items():
        print(f"\n{study}: {workload} / {algorithm}")
        for stat in ("spearman", "kendall"):
            print(f"{stat}:\n" + table.pivot(index="estimator", columns="fraction",
                                             values=stat).round(3).to_string())
    for study in sorted(runs.study_name.unique()):
        for group in study_summary(store, study)["groups"]:
            if group["pruned_trials"]:
                print(f"\npruning in {study} ({group['workload']} / {group['algorithm']}): "
                      f"{len(group['pruned_trials'])} trials pruned, "
                      f"{group['saved_train_seconds']:.1f} training s saved of "
                      f"{group['saved_train_seconds'] + group['spent_train_seconds']:.1f} "
                      f"({100 * group['saved_fraction_seconds']:.0f} %); best trial "
                      f"{(group['best'] or {}).get('trial')}")
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    from runners.algorithms import algorithm_names
    from workbench.catalog import CATALOG, PUBLISHED_TARGETS

    print("workloads (* = published target, not yet set by `pacebench set-targets`):")
    for name, w in CATALOG.items():
        t = w.target
        mark = "*" if name in PUBLISHED_TARGETS else " "
        print(f"  {name:28} {t.metric} {'>=' if t.direction == 'max' else '<='} {t.validation:g}"
              f"{mark} (budget {w.budget.seconds:g} s / {w.budget.steps} steps)  {w.description}")
    print("algorithms:\n  " + ", ".join(algorithm_names()))
    return 0


# --- parser ------------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pacebench", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    def common(p: argparse.ArgumentParser, training: bool = False) -> None:
        p.add_argument("--store", help="results store directory (default: $PACEBENCH_STORE or results/)")
        if training:
            p.add_argument("--max-steps", type=int, help="cap on update steps per run")
            p.add_argument("--threads", type=int, default=1, help="torch threads per run (default 1)")
            p.add_argument("--data-dir", help="dataset folder (default: $PACEBENCH_DATA or datasets/cache)")
            p.add_argument("--quiet", action="store_true", help="no per-eval lines / progress bar")
            p.add_argument("--device", default="cpu",
                           help="cpu | cuda | cuda:<i> | auto (cuda when present); default cpu")
            p.add_argument("--precision", choices=("fp32", "bf16"), default="fp32",
                           help="bf16: forward passes under bfloat16 autocast (default fp32)")
            p.add_argument("--compile", action="store_true",
                           help="torch.compile the model; compilation is on the training clock")
            p.add_argument("--channels-last", action="store_true",
                           help="channels-last memory format for conv models (GPUs)")

    p = sub.add_parser("run", help="train one run and record it")
    p.add_argument("--workload", required=True)
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--algorithm")
    which.add_argument("--algoperf-submission", metavar="SUBMISSION.py",
                       help="an AlgoPerf-API PyTorch submission file, run unchanged")
    p.add_argument("--tuning-search-space", metavar="SPACE.json",
                   help="draw the submission's hyperparameters (unless --hparams) from this "
                        "AlgoPerf search space (default: tuning_search_space.json beside it)")
    p.add_argument("--hparams", type=_hparams, default={}, help="JSON object or @file.json")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--batch-size", type=int)
    p.add_argument("--name", default="adhoc", help="study name the run is filed under")
    common(p, training=True)
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("study", help="run a study: workloads x algorithms x studies x trials x seeds")
    p.add_argument("--workloads", type=_csv, required=True)
    p.add_argument("--algorithms", type=_csv, help="registry names (and/or --algoperf-submission)")
    p.add_argument("--algoperf-submission", metavar="SUBMISSION.py",
                   help="an AlgoPerf-API PyTorch submission file, run unchanged")
    p.add_argument("--tuning-search-space", metavar="SPACE.json",
                   help="its AlgoPerf search space (default: tuning_search_space.json beside it)")
    p.add_argument("--ruleset", choices=("external", "self"), default="external")
    p.add_argument("--studies", type=int, default=1)
    p.add_argument("--trials", type=int, default=5)
    p.add_argument("--seeds", type=_ints, default=[0])
    p.add_argument("--workers", type=int, default=1, help="trials run at once, one process each")
    p.add_argument("--resume", action="store_true", help="run only trials not yet done")
    p.add_argument("--name", default="study", help="study name (resume matches on it)")
    p.add_argument("--no-stop-on-target", action="store_true",
                   help="train every run to its budget (full curves) even after its targets")
    p.add_argument("--prune", choices=("none", "lcga", "tse"), default="none",
                   help="early-stopping tuner: successive halving at 1/9 and 1/3 of the step "
                        "budget ranked by this estimator (default none)")
    p.add_argument("--eta", type=int, default=3, help="--prune keeps the best 1/eta at a rung")
    launch = p.add_argument_group("where trials run, and faults")
    launch.add_argument("--backend", choices=("local", "ray"), default="local",
                        help="local: a process pool on this machine (default); ray: one Ray task "
                             "per trial (the store must be on a path every node shares)")
    launch.add_argument("--address", help="--backend ray: the cluster to join (e.g. "
                                          "ray://head:10001 or auto); default: a local instance")
    launch.add_argument("--nproc-per-node", type=int, default=1,
                        help="> 1: each trial is a data-parallel torchrun run of this many "
                             "processes (gloo on CPU, NCCL on GPUs); the batch is global")
    launch.add_argument("--gpus-per-trial", type=float, default=0.0,
                        help="--backend ray: GPUs each trial's task asks for (num_gpus)")
    launch.add_argument("--trial-timeout", type=float, metavar="SECONDS",
                        help="watchdog: kill an attempt after this much wall clock (it is "
                             "recorded as interrupted; --resume runs it again)")
    launch.add_argument("--checkpoint-every", type=float, metavar="MINUTES",
                        help="save each run's training state this often, so that --resume "
                             "continues a killed or preempted run with its accumulated time")
    p.add_argument("--kind", choices=("tuning", "scaling"), default="tuning",
                   help="scaling: steps-to-result per batch size (and sparsity) to a goal")
    scaling = p.add_argument_group("--kind scaling")
    scaling.add_argument("--batch-sizes", type=_ints, help="e.g. 8,16,32,64,128,256,512,1024")
    scaling.add_argument("--sparsities", type=_floats, default=[0.0], help="e.g. 0,0.5,0.9")
    scaling.add_argument("--prune-method", choices=("snip", "magnitude", "random"),
                         default="snip", help="pruning at init for sparsity > 0 (default snip)")
    scaling.add_argument("--goal", type=float,
                         help="validation target-metric goal (default: the catalog's target)")
    scaling.add_argument("--eval-every", type=int, default=5, help="eval cadence in steps")
    scaling.add_argument("--noise-every", type=int, default=50,
                         help="steps between gradient-noise measurements (0: none)")
    scaling.add_argument("--lr-scaling", choices=("none", "sqrt", "linear"), default="sqrt",
                         help="shift of the learning-rate range with batch size (default sqrt)")
    common(p, training=True)
    p.set_defaults(func=cmd_study)

    p = sub.add_parser("score", help="AlgoPerf scores and times to target of a store")
    p.add_argument("--json", action="store_true")
    p.add_argument("--reference", help="algorithm the speedups are measured against "
                                       "(default: baseline, when the store has budgets)")
    common(p)
    p.set_defaults(func=cmd_score)

    p = sub.add_parser("import-algoperf", help="import AlgoPerf scoring logs into a store")
    p.add_argument("logdir", help="folder holding <submission>/study_<k>/<workload>_<fw>/trial_<i>/")
    p.add_argument("--targets", required=True,
                   help="AlgoPerf targets file, e.g. workload_targets_v05.json")
    p.add_argument("--ruleset", choices=("external", "self"),
                   help="default: from an external_tuning / self_tuning folder in the path")
    common(p)
    p.set_defaults(func=cmd_import_algoperf)

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
    common(p)
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("serve", help="serve the dashboard over a store")
    p.add_argument("--address", default="127.0.0.1", help="bind address (default 127.0.0.1 only)")
    p.add_argument("--port", type=int, default=5006)
    common(p)
    p.set_defaults(func=cmd_serve)

    p = sub.add_parser("set-targets", help="set a workload's targets from a tuned baseline")
    p.add_argument("--workload", required=True)
    p.add_argument("--algorithm", default="nadamw")
    p.add_argument("--trials", type=int, default=8, help="tuning trials before the reruns")
    p.add_argument("--reruns", type=int, default=3, help="reruns of the best trial (median of them)")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--out", default="targets", help="folder for the target-setting record")
    common(p, training=True)
    p.set_defaults(func=cmd_set_targets)

    p = sub.add_parser("rank", help="early ranking: how well TSE/LCGA estimators rank a study's runs")
    p.add_argument("--study", help="study name (default: every study in the store)")
    p.add_argument("--fractions", default="0.05,0.1,0.2,0.5", help="budget fractions")
    common(p)
    p.set_defaults(func=cmd_rank)

    p = sub.add_parser("list", help="list workloads and algorithms")
    p.set_defaults(func=cmd_list)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (KeyError, ValueError, FileNotFoundError) as e:  # bad input: say what and what is valid
        if os.environ.get("PACEBENCH_DEBUG"):
            raise
        message = e.args[0] if isinstance(e, KeyError) and e.args else str(e)
        print(f"error: {message}\n(set PACEBENCH_DEBUG=1 to see the traceback)", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
