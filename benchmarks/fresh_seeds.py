"""Do the tuned baselines reach their targets with seeds they never saw?

For every catalog workload whose target `pacebench set-targets` set (not the published ones), run
the tuned baseline of its record (`best_algorithm`, `best_hparams` in
workbench/targets/<workload>.json) under `--seeds` fresh seeds (default 5, from 100 up: set-targets
used 0 for tuning and 1..10 for the reruns), each run stopping at the targets as in a study, and
print per workload how many reached the validation target, the times to target, and the totals.
Exit status 1 when fewer than 80 % of all runs reach their targets, or fewer than 2 of 5 on some
workload.

    .venv/bin/python benchmarks/fresh_seeds.py [--workloads a,b] [--seeds 5] [--first-seed 100]
        [--store /tmp/pacebench-fresh-seeds] [--workers 2]

A run that fails (e.g. shakespeare_char without its data: set $PACEBENCH_DATA as the Makefile
does) counts as a miss. Each run is `pacebench run --workload W --algorithm A --hparams H --seed S` (runners.run.loop.run),
scheduled by runners.procedures.noise_floor.run_seeds.
"""
from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from runners.procedures.noise_floor import measure_noise_floor
from workbench.catalog import CATALOG, PUBLISHED_TARGETS, tuned_baseline
from workbench.store import open_store


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", help="comma-separated (default: every tuned workload)")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--first-seed", type=int, default=100)
    parser.add_argument("--store", default="/tmp/pacebench-fresh-seeds")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args(argv)
    names = args.workloads.split(",") if args.workloads else \
        [w for w in CATALOG if w not in PUBLISHED_TARGETS and tuned_baseline(w)]
    store = open_store(Path(args.store), create=True)
    seeds = range(args.first_seed, args.first_seed + args.seeds)
    total = reached = 0
    weakest = math.inf
    print(f"{'workload':26} {'baseline':13} reached  times to target (s)")
    for name in names:
        algorithm, hparams = tuned_baseline(name)
        floor, runs = measure_noise_floor(store, name, algorithm, hparams, seeds,
                                          name=f"fresh-{name}", workers=args.workers,
                                          progress=False)
        times = ", ".join(f"{t:.2f}" if ok else "miss"
                          for t, ok in zip(runs.time_to_target, runs.reached_target))
        failed = len(seeds) - floor.runs  # runs that ended in an error count as misses
        if failed:
            times += f"{', ' if times else ''}{failed} failed (the runs' documents in " \
                     f"{args.store} say why)"
        print(f"{name:26} {algorithm:13} {floor.reached} of {len(seeds)}   {times}", flush=True)
        total, reached = total + len(seeds), reached + floor.reached
        weakest = min(weakest, floor.reached / len(seeds))
    share = reached / total if total else math.nan
    print(f"all: {reached} of {total} runs reached their validation target ({share:.0%}); "
          f"weakest workload {weakest:.0%}")
    return 0 if share >= 0.8 and weakest >= 0.4 else 1


if __name__ == "__main__":
    sys.exit(main())
