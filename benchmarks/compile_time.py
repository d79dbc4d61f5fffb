"""Compile seconds as recorded, against the first step's excess over a steady step, run by run.

    .venv/bin/python benchmarks/compile_time.py [--workload synthetic] [--runs 3] [--steps 40]
        [--device cpu|cuda|auto] [--precision fp32|bf16] [--shared-cache FOLDER] [--no-warm-up]

Each run is set up as `runners.run.loop` sets it up (a cold compiler cache of its own, runners/
compilation.py), all in this one process; then `--steps` updates of its algorithm are timed one by
one with the device-synchronised clock (set-up: before the clock, the first run's includes the
compiler's once-per-process warm-up). The first update compiles the forward and the backward, so
first step - median of steps 10 on should match the run's `compile_seconds` (the compiler's own
accounting); the runs should match each other, as no run may profit from another's compiled code.
`--shared-cache FOLDER` sets PACEBENCH_COMPILE_CACHE: from the second run on, the cache is warm.
`--no-warm-up` skips the compiler's once-per-process warm-up, to show what the first run would pay.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import runners.run.compilation  # noqa: E402
from runners.run.compilation import SHARED_CACHE_ENV  # noqa: E402
from runners.run.loop import prepare  # noqa: E402
from runners.run.timing import DeviceClock  # noqa: E402
from workbench.spec import ExecutionOptions, RunConfig  # noqa: E402


def one_run(config: RunConfig, steps: int) -> dict:
    """Set up `config`, time its first `steps` updates one by one; the run's compile record."""
    clock = DeviceClock(torch.device("cpu"))
    setup_start = clock.now()
    p = prepare(config)
    setup = clock.now() - setup_start
    clock = DeviceClock(p.device)
    batches = p.workload.train_batches(p.batch_size, config.rng_seed)
    p.accelerator.start()
    seconds = []
    for step in range(steps):
        start = clock.now()
        p.algorithm.update(p.model, next(batches), step, p.workload)
        seconds.append(clock.now() - start)
    cache = p.accelerator.document()["compile_cache"]
    recorded = p.accelerator.finish(steps, sum(seconds))["compile_seconds"]
    steady = statistics.median(seconds[10:])
    return {"setup": setup, "cache": cache, "first": seconds[0], "steady": steady,
            "excess": seconds[0] - steady, "compile_seconds": recorded}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", default="synthetic")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--steps", type=int, default=40, help="updates timed per run (>= 11)")
    parser.add_argument("--device", default="cpu", help="cpu | cuda | cuda:<i> | auto")
    parser.add_argument("--precision", choices=("fp32", "bf16"), default="fp32")
    parser.add_argument("--shared-cache", help=f"a folder for {SHARED_CACHE_ENV} (warm runs)")
    parser.add_argument("--no-warm-up", action="store_true",
                        help="skip the once-per-process compiler warm-up (diagnosis only)")
    args = parser.parse_args()
    if args.steps < 11:
        parser.error(f"--steps must be at least 11 (steps 10 on give the steady step), got "
                     f"{args.steps}")
    if args.shared_cache:
        os.environ[SHARED_CACHE_ENV] = args.shared_cache
    if args.no_warm_up:
        runners.run.compilation.warm_compiler = lambda device: None
    torch.set_num_threads(1)
    print(f"{args.workload} on {args.device} ({args.precision}, compiled), 1 thread, "
          f"{args.runs} runs in one process, {args.steps} updates each")
    ratios = []
    for seed in range(args.runs):
        config = RunConfig(args.workload, "adamw", seed=seed, study_name="compile_time",
                           max_steps=args.steps, execution=ExecutionOptions(
                               device=args.device, precision=args.precision, compile=True))
        r = one_run(config, args.steps)
        ratios.append(r["compile_seconds"] / r["excess"])
        print(f"run {seed}: set-up {r['setup']:.2f} s  cache {r['cache']:4}  first step "
              f"{r['first']:.3f} s  steady {r['steady'] * 1e3:.2f} ms  first - steady "
              f"{r['excess']:.3f} s  "
              f"compile_seconds {r['compile_seconds']:.3f} s  ratio {ratios[-1]:.3f}")
    print(f"compile_seconds / (first - steady): {min(ratios):.3f}..{max(ratios):.3f} "
          f"over {len(ratios)} runs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
