"""How often the stall rule would stop a run that was going to meet its target, and what it saves.

The rule (runners/run/stall.py) is replayed on the eval rows of a store's runs, in order, with each
run's budget and target, exactly as the loop applies it. A flagged run that met its validation
target after the flag is a false stall (stopping would have made a hit a miss); for a flagged run
that never met it, the steps (and training seconds) after the flag are what stopping saves.

    .venv/bin/python benchmarks/stalls.py [--workloads digits_mlp,mnist1d_mlp]
        [--algorithms adamw,heavy_ball] [--studies 2] [--trials 5] [--workers 2] [--keep DIR]
    .venv/bin/python benchmarks/stalls.py --store results/algoperf-v05   # an existing store

Without --store it first runs a study whose runs all train to the end of their budgets
(`stop_on_target=False`, so a curve goes on after the rule flags it).
"""
from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from runners.run.stall import StallRule  # noqa: E402
from workbench import query  # noqa: E402
from workbench.spec import Budget, Target  # noqa: E402
from workbench.store import open_store  # noqa: E402


def first_flag(run, rows: pd.DataFrame) -> tuple[float | None, float | None]:
    """(step, training seconds) of the first eval where the rule flags the run; (None, None)."""
    seconds = run.budget_seconds if pd.notna(run.budget_seconds) else math.inf
    steps = int(run.budget_steps) if pd.notna(run.budget_steps) else 2**62
    target = Target(run.target_metric, run.target_direction, run.target_validation,
                    run.target_test if pd.notna(run.target_test) else run.target_validation)
    rule = StallRule(Budget(seconds=seconds, steps=steps), target)
    for row in rows.sort_values("eval_index").to_dict("records"):
        clean = {k: (None if isinstance(v, float) and math.isnan(v) else v)
                 for k, v in row.items()}
        if rule.check(clean):
            return row["step"], row["train_seconds"]
    return None, None


def table(store) -> pd.DataFrame:
    """Print the table; return the runs the rule flags that later met their target."""
    runs = query.runs_frame(store)
    runs = runs[runs["status"].isin(("complete", "diverged", "stalled"))]
    evals = query.evals_frame(store, list(runs["run_id"]))
    by_run = dict(tuple(evals.groupby("run_id")))
    print(f"{'workload':24} {'algorithm':24} {'runs':>5} {'hits':>5} {'flagged':>7} "
          f"{'false':>5} {'train s saved':>13} {'of all':>6}")
    total, lost = [0, 0, 0, 0, 0.0, 0.0], []
    for (workload, algorithm), group in runs.groupby(["workload", "algorithm"]):
        flagged = false = 0
        saved = 0.0
        for r in group.itertuples():
            step, seconds = first_flag(r, by_run.get(r.run_id, evals.iloc[:0]))
            if step is None:
                continue
            flagged += 1
            if r.reached_target:
                false += r.step_to_target > step  # met after the flag
                if r.step_to_target > step:
                    lost.append(r.run_id)
            else:
                saved += r.train_seconds - seconds
        row = [len(group), int(group["reached_target"].sum()), flagged, false, saved,
               float(group["train_seconds"].sum())]
        total = [t + v for t, v in zip(total, row)]
        print(f"{workload[:24]:24} {algorithm[:24]:24} {row[0]:>5} {row[1]:>5} {row[2]:>7} "
              f"{row[3]:>5} {row[4]:>13.1f} {row[4] / row[5]:>6.0%}")
    print(f"{'all':49} {total[0]:>5} {total[1]:>5} {total[2]:>7} {total[3]:>5} "
          f"{total[4]:>13.1f} {total[4] / total[5]:>6.0%}")
    return runs[runs["run_id"].isin(lost)]


def rescore(store, lost: pd.DataFrame) -> None:
    """The store's scores as recorded and with the falsely stalled runs made misses."""
    from workbench import scoring
    from workbench.cubes import final_cube

    runs = query.runs_frame(store)
    doc = store.scoring_config()
    config = scoring.ScoringConfig.from_dict(doc) if doc else None
    missed = runs.copy()
    gone = missed["run_id"].isin(lost["run_id"])
    missed.loc[gone, "reached_target"] = False
    before = scoring.score_table(final_cube(runs), config).set_index("algorithm")["score"]
    after = scoring.score_table(final_cube(missed), config).set_index("algorithm")["score"]
    print(f"\nscores with the {int(gone.sum())} falsely stalled runs as misses:")
    for algorithm in before.index:
        print(f"  {algorithm[:30]:30} {before[algorithm]:.4f} -> {after[algorithm]:.4f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", help="replay the rule on this store's runs (no new runs)")
    parser.add_argument("--workloads", default="digits_mlp,mnist1d_mlp")
    parser.add_argument("--algorithms", default="adamw,heavy_ball")
    parser.add_argument("--studies", type=int, default=2)
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--keep", help="keep the study's store in this folder")
    args = parser.parse_args()
    t0 = time.perf_counter()
    if args.store:
        store = open_store(args.store)
    else:
        from runners.launch.study import run_study
        from workbench.spec import StudySpec

        root = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="stalls-"))
        store = open_store(root, create=True)
        spec = StudySpec(workloads=args.workloads, algorithms=args.algorithms,
                         studies=args.studies, trials=args.trials, name="stalls",
                         stop_on_target=False)
        print(run_study(spec, store, workers=args.workers, resume=True, progress=False)
              .summary() + "\n(every run trained to the end of its budget)\n")
    lost = table(store)
    if len(lost):
        rescore(store, lost)
    print(f"\n{time.perf_counter() - t0:.0f} s; store {store.root}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
