"""Step and eval times of the ladder's smallest rungs on this CPU, and the time `make
ladder-demo` should take (docs/ladder.md).

    .venv/bin/python benchmarks/ladder_cpu.py [--rungs gpt_7k,gpt_28k,gpt_111k] [--steps 30]
        [--budgets 1,2,4] [--algorithms 2] [--seeds 2] [--workers 2]

Per rung: the median time of one AdamW update (data generation included, one thread) over
`--steps` updates after 5 warm-up updates, and of one eval (the three splits), each both as wall
time and as this process's CPU time (time.process_time: what the work took on the core while it
ran, close to its wall time on an idle core; on a shared machine the wall time also counts the
waits for the core). The demo's prediction: every rung x budget (in multiples of the 1x
Chinchilla budget, the rung's step hint) x algorithm x seed, as steps x step time + evals (one
per eval cadence) x eval time, summed and divided by the workers (work shared evenly; process
start-up not counted), from the wall times and from the CPU times. Also prints the machine's
load average.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from runners.run.loop import prepare  # noqa: E402
from workbench.catalog import get_workload, rung_counts  # noqa: E402
from workbench.spec import RunConfig  # noqa: E402


def time_rung(name: str, steps: int, clock) -> tuple[float, float]:
    """(median seconds per update, median seconds per eval of the three splits) on `clock`."""
    p = prepare(RunConfig(name, "adamw", stop_on_target=False))
    batches = p.workload.train_batches(p.batch_size, 0)
    per_step = []
    for i in range(5 + steps):
        start = clock()
        p.algorithm.update(p.model, next(batches), i, p.workload)
        if i >= 5:
            per_step.append(clock() - start)
    per_eval = []
    for _ in range(3):
        start = clock()
        for split in ("train", "validation", "test"):
            p.workload.evaluate(p.model, split)
        per_eval.append(clock() - start)
    return statistics.median(per_step), statistics.median(per_eval)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rungs", default="gpt_7k,gpt_28k,gpt_111k")
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--budgets", default="1,2,4")
    parser.add_argument("--algorithms", type=int, default=2)
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    budgets = [float(b) for b in args.budgets.split(",")]
    runs = args.algorithms * args.seeds
    print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    for label, clock in (("wall", time.perf_counter), ("cpu", time.process_time)):
        total = 0.0
        for name in args.rungs.split(","):
            spec = get_workload(name)
            step_s, eval_s = time_rung(name, args.steps, clock)
            tokens = spec.batch_size * spec.model["block_size"]
            flops = rung_counts(spec)["flops_per_token"] * tokens
            seconds = 0.0
            for b in budgets:
                steps = round(b * spec.step_hint)
                seconds += runs * (steps * step_s + steps // spec.eval_every.steps * eval_s)
            total += seconds
            print(f"{label:<4} {name:<9} {step_s * 1e3:7.2f} ms/step ({tokens / step_s:,.0f} "
                  f"tokens/s, {flops / step_s / 1e9:.1f} GFLOP/s analytic), eval "
                  f"{eval_s * 1e3:.0f} ms; demo share {seconds:,.0f} s on one worker")
        print(f"{label:<4} predicted demo: {total:,.0f} worker-seconds, {total / args.workers:,.0f} s "
              f"({total / args.workers / 60:.1f} min) on {args.workers} workers (budgets "
              f"{args.budgets} x {args.algorithms} algorithms x {args.seeds} seeds)")
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
