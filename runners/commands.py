"""What each `pacebench` command does (runners/cli.py parses the command line and dispatches here).

Every command imports what it needs when it runs: training commands load torch, `score` and
`rank` load neither torch nor the dashboard's libraries (Panel, Bokeh, HoloViews), so they start
fast.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
from dataclasses import fields
from pathlib import Path

__all__ = ["store_path", "execution_options", "launch_options", "run", "study", "scale",
           "score", "rank", "import_algoperf", "report", "serve", "set_targets", "noise", "list_names"]

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


def _submission(args: argparse.Namespace) -> str | None:
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


def _first_trial(space_path: str, study_name: str, algorithm: str) -> dict:
    """Trial 0 of a one-trial draw from the search space at `space_path` (as `study` draws it)."""
    from runners.tuning import SearchSpace, draw_trials
    from workbench.spec import stable_hash

    seed = int(stable_hash([study_name, algorithm], 8), 16)
    return draw_trials(SearchSpace.from_json(space_path), 1, seed)[0]


def run(args: argparse.Namespace) -> int:
    """`pacebench run`: train one run and record it."""
    from runners.algorithms import get_algorithm
    from runners.loop import run as train
    from workbench.catalog import get_workload
    from workbench.records import DONE_STATUSES
    from workbench.spec import RunConfig
    from workbench.store import open_store

    from runners.algorithms import algorithm_names
    from runners.algorithms.sources import parse_algorithm
    from runners.plugins import with_workload_source

    submission = _submission(args)
    source = None if submission else parse_algorithm(args.algorithm, algorithm_names())
    loader = None if source is None or source.loaded_by_name else source
    algorithm = submission or source.name
    hparams, space = args.hparams, args.tuning_search_space
    if submission and not space:  # AlgoPerf's convention: the search space beside the submission
        beside = Path(args.algoperf_submission).parent / "tuning_search_space.json"
        space = str(beside) if beside.is_file() else None
    if space and not hparams:
        hparams = _first_trial(space, args.name, algorithm)
        print(f"hyperparameters drawn from {space}: {json.dumps(hparams)}")
    config = RunConfig(workload=_one_workload(args.workload), algorithm=algorithm,
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

    def show(row: dict) -> None:
        metrics = "  ".join(f"{k}={v:.4g}" for k, v in row.items() if "/" in k and v is not None)
        print(f"step {row['step']:>6}  train {row['train_seconds']:8.2f}s  {metrics}", flush=True)

    try:
        run_id = train(config, store, data_dir=args.data_dir,
                       on_eval=None if args.quiet else show)
    except (Exception, KeyboardInterrupt):  # recorded in the store as failed / interrupted
        if os.environ.get("PACEBENCH_DEBUG"):
            raise
        attempts = store.attempts(config.trial_key)
        doc = max(attempts, key=lambda d: d.get("started_at") or "") if attempts else None
        if doc is None or doc.get("status") not in ("failed", "interrupted"):
            raise  # not a training failure: the CLI reports it
        print(f"run {doc['run_id']}: {doc['status']} ({doc.get('stop_reason')}) in store "
              f"{store.root}; its run document holds the traceback", file=sys.stderr)
        return 1
    doc = store.run_doc(run_id)
    print(f"run {run_id}: {doc['status']} ({doc.get('stop_reason')}) in store {store.root}")
    print(_target_line(store, run_id))
    return 0 if doc["status"] in DONE_STATUSES else 1  # finished, target met or not


def _target_line(store, run_id: str) -> str:
    """Whether a run met its validation target, and when (its first eval that did)."""
    from workbench import query

    runs = query.runs_frame(store)
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


def study(args: argparse.Namespace) -> int:
    """`pacebench study`: workloads x algorithms x studies x trials x seeds under a ruleset.
    With --dry-run: print the plan (launch.describe_plan) and write nothing, not even the
    store (an existing one is read, to refuse a name its runs give to other code)."""
    from runners.launch import choose_search_spaces, describe_plan, plan_study, run_study
    from workbench.spec import StudySpec
    from workbench.store import open_store

    submission = _submission(args)
    path = store_path(args)
    store = (open_store(path) if path.exists() else None) if args.dry_run else \
        open_store(path, create=True)
    sources = _algorithm_sources(args.algorithms or [], store)
    algorithms = [*sources, *([submission] if submission else [])]
    if not algorithms:
        raise ValueError("give --algorithms, --algoperf-submission, or both")
    spaces = _search_spaces(args.search_space, algorithms)
    if args.tuning_search_space:
        spaces[submission] = args.tuning_search_space
    spec = StudySpec(workloads=_workloads(args.workloads), algorithms=algorithms,
                     ruleset=args.ruleset,
                     studies=args.studies, trials=args.trials, seeds=tuple(args.seeds),
                     name=args.name, max_steps=args.max_steps,
                     stop_on_target=not args.no_stop_on_target,
                     execution=execution_options(args))
    if args.dry_run:
        chosen = choose_search_spaces(spec, spaces, sources)
        print(describe_plan(spec, plan_study(spec, spaces, sources, chosen), chosen, sources))
        return 0
    options = launch_options(args)
    return _launch(lambda: run_study(spec, store, workers=args.workers, resume=args.resume,
                                     data_dir=args.data_dir, progress=not args.quiet,
                                     search_spaces=spaces, early_stop=args.early_stop,
                                     eta=args.eta, options=options, sources=sources),
                   f"store: {store.root}   score it: pacebench score --store {store.root}")


def _search_spaces(items: list[str], algorithms) -> dict[str, str]:
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


def _algorithm_sources(items: list[str], store) -> dict:
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
    if store is not None:  # None: a dry run with no store yet
        _check_names_against_store(sources, store)
    return sources


def _check_names_against_store(sources: dict, store) -> None:
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


def scale(args: argparse.Namespace) -> int:
    """`pacebench scale`: steps-to-result per batch size and sparsity (runners/scaling_study)."""
    from runners.scaling_study import run_scaling
    from workbench.spec import ScalingSpec
    from workbench.store import open_store

    spec = ScalingSpec(workloads=_workloads(args.workloads), algorithms=args.algorithms,
                       batch_sizes=tuple(args.batch_sizes), sparsities=tuple(args.sparsities),
                       prune_method=args.prune_method, trials=args.trials, goal=args.goal,
                       max_steps=args.max_steps or ScalingSpec.max_steps,
                       eval_every=args.eval_every, noise_every=args.noise_every,
                       lr_scaling=args.lr_scaling, name=args.name,
                       execution=execution_options(args))
    store = open_store(store_path(args), create=True)
    return _launch(lambda: run_scaling(spec, store, workers=args.workers, resume=args.resume,
                                       data_dir=args.data_dir, progress=not args.quiet),
                   f"store: {store.root}   analyse it: notebooks/scaling.ipynb (store={store.root})")


def _seconds(value: float) -> float | None:
    return None if value is None or not math.isfinite(value) else round(float(value), 6)


def _speedups(runs, cube, times, config, reference: str | None, table, axis: str):
    """(scoring.speedup_table over `reference` by algorithm with its 90 % bootstrap interval
    (low, high; NaN below scoring.MIN_STUDIES_FOR_INTERVAL studies of either), the reference,
    whether misses cost the budget), the reference defaulting to scoring.default_reference;
    None when the store has a single algorithm. `axis`: the time axis's column (cubes)."""
    from workbench import scoring

    names = [str(a) for a in times["algorithm"].values]
    reference = reference or scoring.default_reference(names, table)
    if len(names) < 2:
        return None
    if reference not in names:
        raise ValueError(f"unknown --reference {reference!r}: the store's algorithms are "
                         f"{', '.join(names)}")
    ruleset = scoring.ruleset_of(runs["ruleset"].dropna().unique())
    table = scoring.speedup_table(times, reference, config, ruleset, axis)
    frame = table.set_index("algorithm")
    study = scoring.study_times(cube)
    bounds = scoring.speedup_interval(scoring.bootstrap_medians(study, 1000), reference, config,
                                      ruleset, axis).set_index("algorithm")
    studies = scoring.studies_per_algorithm(study)
    enough = studies.clip(upper=studies.get(reference, 0)) >= scoring.MIN_STUDIES_FOR_INTERVAL
    frame["low"] = bounds["low"].where(enough.reindex(bounds.index, fill_value=False))
    frame["high"] = bounds["high"].where(enough.reindex(bounds.index, fill_value=False))
    frame["studies"] = studies.clip(upper=studies.get(reference, 0)).reindex(
        frame.index).fillna(0).astype(int)  # the fewer of its and the reference's
    return frame, reference, table.attrs["budgets"]


def _speedup_lines(frame, reference: str) -> str:
    """One line per algorithm: its speedup over the reference and the 90 % interval."""
    from workbench import scoring

    width = max(len(str(a)) for a in frame.index)
    lines = []
    for algorithm, r in frame.iterrows():
        value = f"{r.faster_by:+.4f}" if math.isfinite(r.faster_by) else "n/a (a miss)"
        if algorithm == reference:
            interval = "(the reference)"
        elif not math.isnan(r.low):
            interval = f"90 % interval {r.low:+.4f} to {r.high:+.4f}"
        else:
            interval = scoring.interval_text(math.nan, math.nan, int(r.studies))
        lines.append(f"{str(algorithm).ljust(width)}  {value.rjust(12)}  {interval}")
    return "\n".join(lines)


def _axis(args: argparse.Namespace) -> dict:
    """What --time-axis and --exclude-compile make of times, as the JSON outputs say it:
    {"time_axis": train|wall|steps, "unit": seconds|steps, "exclude_compile": bool}. Says in a
    note on stderr when --exclude-compile cannot change the axis (steps)."""
    from workbench.cubes import AXIS_UNITS, axis_column

    if args.exclude_compile and args.time_axis == "steps":
        print("note: --exclude-compile leaves steps to target as they are (compiling takes no "
              "step)", file=sys.stderr)
    return {"time_axis": args.time_axis, "unit": AXIS_UNITS[axis_column(args.time_axis)],
            "exclude_compile": bool(args.exclude_compile)}


def _scored_store(args: argparse.Namespace):
    """(runs, scoring config or None, final cube) of the --store, each run's compilation taken
    off its seconds with --exclude-compile (cubes.excluding_compile); None (said) when it has
    no runs. The cube's time_to_target is training seconds: cubes.on_time_axis moves it."""
    from workbench import query, scoring
    from workbench.cubes import excluding_compile, final_cube
    from workbench.store import open_store

    store = open_store(store_path(args))
    runs = query.runs_frame(store)
    if runs.empty:
        print(f"error: store {store_path(args)} has no runs", file=sys.stderr)
        return None
    if args.exclude_compile:
        runs = excluding_compile(runs)
    doc = store.scoring_config()  # an imported benchmark's rules; else the plain rules
    config = scoring.ScoringConfig.from_dict(doc) if doc else None
    return runs, config, final_cube(runs)


def score(args: argparse.Namespace) -> int:
    """`pacebench score`: the AlgoPerf scores, times to target and speedups of a store, on the
    time axis of --time-axis."""
    from workbench import scoring
    from workbench.cubes import AXIS_LABELS, axis_column, on_time_axis

    axis = _axis(args)
    loaded = _scored_store(args)
    if loaded is None:
        return 1
    runs, config, cube = loaded
    column = axis_column(args.time_axis)
    cube = on_time_axis(cube, column)
    times = scoring.workload_times(cube)
    table = scoring.score_table_with_intervals(cube, config)
    speedups = _speedups(runs, cube, times, config, args.reference, table, column)
    skipped = runs.attrs.get("skipped", {})
    if args.json:
        print(json.dumps({**_score_json(table, times, speedups), **axis,
                          "skipped_runs": skipped}, indent=2))
        return 0
    if args.csv:
        print(_score_csv(table, times, speedups, column), end="")
        return 0
    label = AXIS_LABELS[column] + (", compilation excluded" if args.exclude_compile else "")
    print(f"time axis: {label}")
    print(table.drop(columns=["low", "high"]).to_string(
        index=False, float_format=lambda v: f"{v:.4f}"))
    print(f"(interval: 90 % bootstrap over each algorithm's studies; n/a below "
          f"{scoring.MIN_STUDIES_FOR_INTERVAL} studies)")
    print(f"\nmedian {AXIS_LABELS[column]} to target (inf = not reached):")
    print(times.to_pandas().to_string(float_format=lambda v: f"{v:.2f}"))
    _print_noise_floors([str(w) for w in times.workload.values])
    if speedups is not None:
        frame, reference, budgets = speedups
        rule = "misses cost the budget + 1 s" if budgets else "workloads both missed left out"
        print(f"\nspeedup over {reference} in {AXIS_LABELS[column]} (1 - geometric mean of "
              f"ratios to target over the scored workloads; {rule}):")
        print(_speedup_lines(frame, reference))
    if (reason := scoring.all_zero_reason(table)) is not None:
        print("\n" + reason)
    if skipped:
        print(f"\n{len(skipped)} runs of the store skipped: their files cannot be read "
              "(the warnings above name them and say why)")
    return 0


def _scored_names(config, cube) -> list[str]:
    """The scored workloads of a store that has runs of them: the benchmark's base workloads
    when its rules name them, else the cube's base workloads."""
    from workbench import scoring

    names = [str(w) for w in cube["workload"].values]
    bases = config.base_workloads if config and config.base_workloads else \
        scoring.scored_workloads(cube)
    return [w for w in bases if w in names]


def compare(args: argparse.Namespace) -> int:
    """`pacebench compare`: algorithm A against B, with intervals, a test and a verdict on the
    time axis of --time-axis, and the verdict by steps (workbench.compare.compare_runs)."""
    from workbench import compare as C
    from workbench.catalog import noise_floor_of
    from workbench.cubes import AXIS_LABELS, axis_column

    if len(args.algorithms) != 2:
        raise ValueError(f"--algorithms takes exactly two names, A,B; got {len(args.algorithms)}"
                         f": {','.join(args.algorithms)}")
    axis = _axis(args)
    loaded = _scored_store(args)
    if loaded is None:
        return 1
    runs, config, cube = loaded
    names = [str(w) for w in cube["workload"].values]
    floors = {w: f.cov for w in names if (f := noise_floor_of(w)) is not None}
    result = C.compare_runs(runs, cube, *args.algorithms, time_axis=args.time_axis,
                            workloads=args.workloads or _scored_names(config, cube),
                            config=config, confidence=args.confidence, detect=args.detect,
                            noise_cov=floors)
    if args.json:
        print(json.dumps({**result.to_json(), **axis}, indent=2))
        return 0
    label = AXIS_LABELS[axis_column(args.time_axis)]
    print(f"time axis: {label}" + (", compilation excluded" if args.exclude_compile else "")
          + f" (ratios of median study {label} to target)")
    print(C.comparison_table(result).to_string(index=False))
    for w, why in result.left_out.items():
        print(f"  {w}: left out ({why})")
    for caution in result.warnings:
        print(f"warning: {caution}")
    print(f"\nverdict in {label}: {result.verdict}")
    print(f"verdict by steps to target: {result.verdict_by_steps}")
    print("\n" + result.sentence())
    return 0


def budget(args: argparse.Namespace) -> int:
    """`pacebench budget`: tuning-budget curves from the trials of a store, on the time axis of
    --time-axis."""
    from workbench import budget as B
    from workbench.cubes import axis_column, on_time_axis

    axis = _axis(args)
    loaded = _scored_store(args)
    if loaded is None:
        return 1
    _, config, cube = loaded
    trials = B.trial_times(on_time_axis(cube, args.time_axis))
    curves = B.budget_curves(trials)
    scored = _scored_names(config, cube)
    if args.json:
        print(json.dumps({**B.budget_json(curves, trials, config, scored), **axis}, indent=2))
        return 0
    print(B.budget_text(curves, trials, config, scored, axis_column(args.time_axis)))
    return 0


def _print_noise_floors(workloads: list[str]) -> None:
    """The noise floor of each workload that has one (catalog workloads with a tuned target)."""
    from workbench.catalog import noise_floor_of

    floors = {w: f for w in workloads if (f := noise_floor_of(w)) is not None}
    if floors:
        print("\nnoise floor (the tuned baseline's time to target over the seeds that set the "
              "target):")
        for w, floor in floors.items():
            print(f"  {w}: {floor.describe()}")


def _score_json(table, times, speedups) -> dict:
    import numpy as np

    ttt = {str(a): {str(w): _seconds(times.sel(algorithm=a, workload=w).item())
                    for w in times.workload.values} for a in times.algorithm.values}
    out = {"scores": {r.algorithm: round(float(r.score), 6) for r in table.itertuples()},
           "studies": {r.algorithm: int(r.studies) for r in table.itertuples()},
           "intervals": {r.algorithm: (None if not np.isfinite(r.low) else
                                       [round(float(r.low), 6), round(float(r.high), 6)])
                         for r in table.itertuples()},
           "time_to_target": ttt}
    if speedups is not None:
        frame, reference, _ = speedups
        out["speedups"] = {"reference": reference,
                           "faster_by": {str(a): _rounded(v) for a, v in
                                         frame["faster_by"].items()},
                           "intervals": {str(a): None if not np.isfinite(r.low) else
                                         [_rounded(r.low), _rounded(r.high)]
                                         for a, r in frame.iterrows()},
                           "interval_level": 0.9}
    return out


# The CSV's column of median times to target, per time axis (cubes.TIME_TO_TARGET's keys).
_CSV_TIMES = {"train_seconds": "time_to_target_s", "wall_seconds": "wall_to_target_s",
              "step": "steps_to_target"}


def _score_csv(table, times, speedups, axis: str = "train_seconds") -> str:
    """One row per algorithm, in score order: the score and its interval, the median time to
    target on each workload (on `axis`, its unit in the column's name; inf: a miss), the
    speedup and its interval."""
    import numpy as np

    from workbench.csvout import to_csv

    out = table.rename(columns={"low": "score_low", "high": "score_high"}).set_index("algorithm")
    ttt = times.to_pandas()
    for workload in ttt.columns:
        out[f"{_CSV_TIMES[axis]}/{workload}"] = ttt[workload].reindex(out.index)
    if speedups is not None:
        frame, reference, _ = speedups
        for column, name in (("faster_by", "faster_by"), ("low", "faster_by_low"),
                             ("high", "faster_by_high")):
            values = frame[column].reindex(out.index).astype(float)
            out[f"{name} (vs {reference})"] = values.where(np.isfinite(values))  # a miss: empty
    return to_csv(out, index=True)


def _rounded(value: float) -> float | None:
    return round(float(value), 6) if math.isfinite(value) else None


def rank(args: argparse.Namespace) -> int:
    """`pacebench rank`: Spearman/Kendall of each early estimator vs the final validation metric,
    per budget fraction, for each (study, workload, algorithm) with enough complete runs; plus
    the compute the early-stopping tuner saved."""
    from workbench import query
    from workbench.early_stopping import ranking_tables, study_summary
    from workbench.store import open_store

    store = open_store(store_path(args))
    runs = query.runs_frame(store)
    if args.study:
        runs = runs[runs.study_name == args.study]
    fractions = tuple(float(f) for f in args.fractions)
    for (name, workload, algorithm), table in ranking_tables(store, runs, fractions).items():
        print(f"\n{name}: {workload} / {algorithm}")
        for stat in ("spearman", "kendall"):
            print(f"{stat}:\n" + table.pivot(index="estimator", columns="fraction",
                                             values=stat).round(3).to_string())
    for name in sorted(runs.study_name.unique()):
        for g in study_summary(store, name, runs)["groups"]:
            if g["pruned_trials"]:
                print(f"\nearly stopping in {name} ({g['workload']} / {g['algorithm']}): "
                      f"{len(g['pruned_trials'])} trials stopped early, "
                      f"{g['saved_train_seconds']:.1f} training s saved of "
                      f"{g['saved_train_seconds'] + g['spent_train_seconds']:.1f} "
                      f"({100 * g['saved_fraction_seconds']:.0f} %); best trial "
                      f"{(g['best'] or {}).get('trial')}")
    return 0


def import_algoperf(args: argparse.Namespace) -> int:
    """`pacebench import-algoperf`: AlgoPerf scoring logs into a store."""
    from workbench.importers.algoperf import import_algoperf as do_import

    report_ = do_import(args.logdir, store_path(args), args.targets, ruleset=args.ruleset)
    print(f"{report_.summary()} into {store_path(args)}")
    if report_.unscored():
        print(report_.unscored())
    for problem in report_.problems:
        print(f"problem: {problem}", file=sys.stderr)
    return 1 if report_.problems else 0


def report(args: argparse.Namespace) -> int:
    """`pacebench report`: a self-contained HTML report (and figures)."""
    from workbench.report import write_report

    out = write_report(store_path(args), Path(args.out), title=args.title,
                       rulesets=args.rulesets, workloads=args.workloads,
                       algorithms=args.algorithms, figures=args.figures,
                       formats=args.formats)
    print(f"report written to {out} (self-contained; open it in a browser)")
    if args.figures:
        print(f"figures ({', '.join(args.formats)}) written to {args.figures}")
    return 0


def serve(args: argparse.Namespace) -> int:
    """`pacebench serve`: the dashboard over a store (`panel serve workbench/app.py`), in a
    child process that stops when this one gets SIGTERM or SIGINT, or dies."""
    import ipaddress
    import socket

    from runners.processes import run_child
    from workbench.app import ALLOW_REMOTE

    app = Path(__file__).resolve().parents[1] / "workbench" / "app.py"
    env = {**os.environ, "PACEBENCH_STORE": str(store_path(args).resolve())}
    cmd = [sys.executable, "-m", "panel", "serve", str(app), "--address", args.address,
           "--port", str(args.port), "--allow-websocket-origin", f"{args.address}:{args.port}"]
    if args.address in ("127.0.0.1", "localhost"):
        cmd += ["--allow-websocket-origin", f"localhost:{args.port}"]
    if not ipaddress.ip_address(socket.gethostbyname(args.address)).is_loopback:
        env[ALLOW_REMOTE] = "1"  # the user asked for another interface: show the store there
    print(f"serving {store_path(args)} at http://{args.address}:{args.port}/app", flush=True)
    return run_child(cmd, env)


def _workloads(items: list[str]) -> list[str]:
    """Workload names of `--workloads` items, plug-ins loaded (runners/plugins.py)."""
    from runners.plugins import resolve_workloads

    return resolve_workloads(items)


def _one_workload(item: str) -> str:
    """The one workload that a `--workload` item names."""
    names = _workloads([item])
    if len(names) != 1:
        raise ValueError(f"{item} holds {len(names)} workloads ({', '.join(names)}): name one "
                         f"as <workload>={item}")
    return names[0]


def set_targets(args: argparse.Namespace) -> int:
    """`pacebench set-targets`: targets from a tuned baseline, for each workload given."""
    from runners.target_setting import set_targets as run_procedure
    from workbench.catalog import plugin_source
    from workbench.store import open_store

    store = open_store(store_path(args), create=True)
    sources = _algorithm_sources(args.algorithm.split(","), store)
    for workload in _workloads([args.workload]):
        out = args.out
        source = plugin_source(workload)
        if out is None:  # a plug-in's record goes beside its file; a built-in's to targets/
            where = source[0].rpartition(":")[0] if source and source[1] else None
            out = Path(where).parent / "targets" if where else Path("targets")
        run_procedure(workload, list(sources), trials=args.trials, reruns=args.reruns,
                      reach_quantile=args.reach_quantile, horizon=args.horizon,
                      out_dir=Path(out), store_path=store.root, workers=args.workers,
                      data_dir=args.data_dir, execution=execution_options(args),
                      reuse_tuning=args.reuse_tuning, sources=sources)
    return 0


def noise(args: argparse.Namespace) -> int:
    """`pacebench noise`: one setting under N seeds; its noise floor and detectable speedups."""
    from runners.algorithms import get_algorithm
    from runners.noise_floor import measure_noise_floor, noise_report
    from workbench.catalog import get_workload, tuned_baseline
    from workbench.noise_floor import min_detectable_speedup
    from workbench.store import open_store

    spec = get_workload(_one_workload(args.workload))
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
    store = open_store(store_path(args), create=True)
    source = next(iter(_algorithm_sources([algorithm], store).values()))
    algorithm = source.name
    loader = None if source.loaded_by_name else source
    get_algorithm(algorithm, hparams, loader and loader.spec, loader and loader.sha256)
    seeds = range(args.first_seed, args.first_seed + args.seeds)
    floor, runs = measure_noise_floor(store, spec.name, algorithm, hparams, seeds, args.name,
                                      args.workers, args.data_dir, execution_options(args),
                                      progress=not args.quiet, source=source)
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
        mds = min_detectable_speedup(floor.cov, k)
        print(f"  minimum detectable speedup with {k} studies per algorithm: "
              + ("n/a (no CoV)" if math.isnan(mds) else f"{100 * mds:.1f} %"))
    print("(two-sided test at 5 %, power 80 %, lognormal times with this CoV; a study's time "
          "also carries its tuning's luck, so a real comparison needs at least this)")
    return 0


def list_names(args: argparse.Namespace) -> int:
    """`pacebench list`: the workloads and algorithms (`--json`: as data, see _listing)."""
    from runners.algorithms import algorithm_names
    from runners.plugins import ALGORITHM_GROUP, WORKLOAD_GROUP
    from workbench.catalog import CATALOG, PUBLISHED_TARGETS

    if args.markdown:
        print(_catalog_table())
        return 0
    if getattr(args, "json", False):
        print(json.dumps(_listing(), indent=1))
        return 0
    from runners.workloads import WORKLOADS

    print("workloads (built in, from workbench/catalog.py and the runners/workloads/ file named; "
          "* = published target, not yet set by `pacebench set-targets`):")
    for name, w in CATALOG.items():
        t = w.target
        mark = "*" if name in PUBLISHED_TARGETS else " "
        builder = WORKLOADS.get(f"{w.dataset}/{w.model.get('arch')}")
        where = f"{builder.__module__.rpartition('.')[2]}.py" if builder else "?"
        print(f"  {name:28} {t.metric} {'>=' if t.direction == 'max' else '<='} {t.validation:g}"
              f"{mark} (budget {w.budget.seconds:g} s / {w.budget.steps} steps, "
              f"{_cadence_words(w.eval_every)}, {where})  "
              f"{w.description}")
    _list_plugins(WORKLOAD_GROUP, "workload plug-ins")
    print("algorithms (built in; any other is named by --algorithms path/file.py:Class, "
          "package.module:Class, torch.optim:Name or algoperf:path/submission.py):")
    for name in algorithm_names():
        print(f"  {name:28} runners/algorithms/{name}.py, search space {name}.json")
    _list_plugins(ALGORITHM_GROUP, "algorithm plug-ins")
    return 0


def _cadence_words(cadence) -> str:
    """'eval every 25 steps' (and/or 'every 2 s' of training time) for the text listing."""
    parts = ([f"{cadence.steps} steps"] if cadence.steps else []) + \
        ([f"{cadence.seconds:g} s"] if cadence.seconds else [])
    return "eval every " + " / ".join(parts)


def _listing() -> dict:
    """`pacebench list --json`: {"workloads": {name: entry}, "algorithms": {name: entry}} for
    the built-ins and the installed plug-ins (a plug-in that fails to load is named under
    "plugin_errors" with its error). A workload's entry holds its target, its eval cadence, the
    median steps and time to target of its tuned baseline (null: not measured, e.g. a published
    target) and eval_fraction = cadence steps / median steps (null without either)."""
    from runners.plugins import WORKLOAD_GROUP, PluginError, entry_points, load_workloads
    from runners.workloads import WORKLOADS
    from workbench.catalog import CATALOG, get_workload

    root = Path(__file__).resolve().parents[1]
    workloads, errors = {}, {}
    for name, w in CATALOG.items():
        builder = WORKLOADS.get(f"{w.dataset}/{w.model.get('arch')}")
        where = Path(sys.modules[builder.__module__].__file__).resolve().relative_to(root) \
            if builder else None
        workloads[name] = _workload_entry(w, {"source": "built-in",
                                              "builder": str(where) if where else None})
    for plugin, value in entry_points(WORKLOAD_GROUP).items():
        try:
            names = load_workloads(value).names
        except PluginError as err:
            errors[f"workload plug-in {plugin}"] = str(err)
            continue
        for name in names:
            workloads[name] = _workload_entry(get_workload(name), {
                "source": "installed plug-in", "plugin": plugin, "entry_point": value})
    algorithms = dict(_algorithm_entries(root, errors))
    return {"workloads": workloads, "algorithms": algorithms,
            **({"plugin_errors": errors} if errors else {})}


def _workload_entry(w, where: dict) -> dict:
    """One workload of `list --json`: target, cadence, medians from its target record."""
    from workbench.catalog import median_steps_to_target, target_record

    t, cadence = w.target, w.eval_every
    steps = median_steps_to_target(w.name)
    seconds = (target_record(w.name) or {}).get("median_time_to_target_s")
    seconds = float(seconds) if isinstance(seconds, (int, float)) and \
        math.isfinite(seconds) else None
    return {"target": {"metric": t.metric, "direction": t.direction,
                       "validation": t.validation, "test": t.test},
            "eval_every": {k: v for k, v in (("steps", cadence.steps),
                                             ("seconds", cadence.seconds)) if v is not None},
            "median_steps_to_target": steps, "median_time_to_target_s": seconds,
            "eval_fraction": cadence.steps / steps if steps and cadence.steps else None,
            "step_hint": w.step_hint,
            "budget": {"seconds": w.budget.seconds, "steps": w.budget.steps}, **where}


def _algorithm_entries(root: Path, errors: dict):
    """(name, entry) of each built-in algorithm (its file and search space file, relative to
    the repository) and each installed algorithm plug-in (its entry point and search space: a
    file, or the space itself when its class gives or derives it); errors go into `errors`."""
    from runners.algorithms import ALGORITHMS, search_space_path
    from runners.algorithms.sources import AlgorithmSource, search_space_of
    from runners.plugins import ALGORITHM_GROUP, PluginError, entry_points

    for name, cls in ALGORITHMS.items():
        file = Path(sys.modules[cls.__module__].__file__).resolve().relative_to(root)
        yield name, {"source": "built-in", "file": str(file),
                     "search_space": str(search_space_path(name).relative_to(root))}
    for name, value in entry_points(ALGORITHM_GROUP).items():
        try:
            space = search_space_of(AlgorithmSource(name, value, "plugin"))
        except PluginError as err:
            errors[f"algorithm plug-in {name}"] = str(err)
            continue
        yield name, {"source": "installed plug-in", "entry_point": value,
                     "search_space": str(space) if isinstance(space, Path) else space}


def _list_plugins(group: str, title: str) -> None:
    """The installed entry points of `group`: name, where from, and a workload factory's
    entries (a plug-in that fails to load is listed with its error)."""
    from runners.plugins import WORKLOAD_GROUP, PluginError, entry_points, load_workloads

    installed = entry_points(group)
    print(f"{title} (installed, entry-point group {group}): {'' if installed else 'none'}")
    for name, value in installed.items():
        detail = ""
        if group == WORKLOAD_GROUP:
            try:
                detail = f" -> {', '.join(load_workloads(value).names)}"
            except PluginError as err:
                detail = f" (cannot load: {err})"
        print(f"  {name:28} {value}{detail}")


def _catalog_table() -> str:
    """The workload catalog as a Markdown table: data, splits, metric, targets, what the
    target-setting record measured (reach rate, noise floor, median time to target), the
    median steps to target (with how many reruns reached it) and the eval cadence."""
    from workbench.catalog import CATALOG, DATASETS, PUBLISHED_TARGETS, noise_floor_of, \
        target_record

    rows = ["| workload | data | train / validation / test | metric | target (validation / "
            "test) | reach rate | noise floor (CoV) | median time to target | median steps to "
            "target | eval every |",
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for name, w in CATALOG.items():
        data, splits = DATASETS.get(w.dataset, (w.dataset, "?"))
        t, floor = w.target, noise_floor_of(name)
        sign = ">=" if t.direction == "max" else "<="
        if name in PUBLISHED_TARGETS:
            measured = ["published target", "not measured", "not measured"]
        elif floor is None:
            record = target_record(name) or {}
            median = record.get("median_time_to_target_s")
            measured = [f"median of {len(record.get('reruns', []))} reruns (old rule)",
                        "not measured", f"{median:.2f} s" if median else "n/a"]
        else:
            cov = "n/a" if math.isnan(floor.cov) else f"{100 * floor.cov:.1f} %"
            measured = [f"{floor.reached} of {floor.runs}", cov, f"{floor.median_s:.2f} s"]
        measured += [_steps_cell(target_record(name) or {}),
                     _cadence_words(w.eval_every).removeprefix("eval every ")]
        rows.append(f"| `{name}` | {data} | {splits} | {t.metric} | {sign} {t.validation:g} / "
                    f"{t.test:g} | " + " | ".join(measured) + " |")
    return "\n".join(rows)


def _steps_cell(record: dict) -> str:
    """'684.5 (10 of 10)': a record's median steps to target and its reach count."""
    block = record.get("steps_to_target")
    if record.get("median_steps_to_target") is None or not isinstance(block, dict):
        return "not measured"
    return f"{record['median_steps_to_target']:g} ({block['reached']} of {block['runs']})"
