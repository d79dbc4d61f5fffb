"""Median steps to target of each tuned baseline, measured finely, written into
workbench/targets/<w>.json.

For every catalog workload whose target `pacebench set-targets` set (not PUBLISHED_TARGETS), rerun
the tuned baseline of its record (`best_algorithm`, `best_hparams`) under its reruns' seeds
(`reruns[*].seed`), as a study runs it (stopping once both targets are met, within the catalog's
budget), evaluating every `--eval-every` steps (default 1: the first step whose weights meet the
validation target), and record `median_steps_to_target` with how it was measured (the
`steps_to_target` block: seeds, each seed's steps or null for a miss, reach count, eval cadence,
command, date, hardware). The targets themselves are not touched
(runners.procedures.target_setting.measure_steps_to_target). The catalog's eval cadences are sized from the
median (at most 1/20 of it; tests/test_catalog.py checks).

    PACEBENCH_DATA=../shared/data .venv/bin/python benchmarks/steps_to_target.py \\
        [--workloads a,b] [--eval-every 1] [--store /tmp/pacebench-steps] [--workers 2]

Prints one line per workload: reach count, median, each seed's steps.
"""
from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from runners.procedures.target_setting import measure_steps_to_target
from workbench.catalog import CATALOG, PUBLISHED_TARGETS, TARGETS_DIR


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", help="comma-separated (default: every tuned workload)")
    parser.add_argument("--eval-every", type=int, default=1, help="eval cadence in steps")
    parser.add_argument("--store", default="/tmp/pacebench-steps")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--targets", default=str(TARGETS_DIR), help="folder of the records")
    args = parser.parse_args(argv)
    names = args.workloads.split(",") if args.workloads else \
        [w for w in CATALOG if w not in PUBLISHED_TARGETS]
    command = "python benchmarks/steps_to_target.py " + shlex.join(
        sys.argv[1:] if argv is None else argv)
    print(f"{'workload':26} reached  median  steps to target per seed (eval every "
          f"{args.eval_every})")
    for name in names:
        block = measure_steps_to_target(name, Path(args.targets), Path(args.store),
                                        args.eval_every, args.workers, command=command)
        steps = ", ".join("miss" if s is None else str(s) for s in block["steps"])
        median = "n/a" if block["median"] is None else f"{block['median']:g}"
        print(f"{name:26} {block['reached']:>2} of {block['runs']}  {median:>6}  {steps}",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
