"""How long a study spends starting its workers: the fork server against a fresh interpreter.

Runs the same study of tiny trials (the `synthetic` workload, one step each, so a trial is
almost all start-up) with each start method of the local pool, in interleaved rounds, one
worker at a time, and prints the wall seconds per trial of each and their ratio:

    .venv/bin/python benchmarks/worker_start.py [--trials 8] [--rounds 3]

The first forkserver round includes starting the server (it imports torch once); the median
over rounds shows the steady state of a launcher that runs many trials.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from runners.launch.study import run_study  # noqa: E402
from runners.launch.processes import LaunchOptions  # noqa: E402
from workbench.spec import StudySpec  # noqa: E402
from workbench.store import open_store  # noqa: E402

METHODS = ("spawn", "forkserver")


def per_trial(method: str, trials: int, root: Path, name: str) -> float:
    """Wall seconds per trial of a study of `trials` one-step trials started by `method`."""
    spec = StudySpec(workloads=("synthetic",), algorithms=("adamw",), trials=trials,
                     max_steps=1, name=name)
    store = open_store(root, create=True)
    start = time.perf_counter()
    result = run_study(spec, store, workers=1, progress=False,
                       options=LaunchOptions(start_method=method))
    seconds = time.perf_counter() - start
    if result.failed or result.succeeded != trials:
        raise RuntimeError(result.summary())
    return seconds / trials


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=8, help="trials per study")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    times: dict[str, list[float]] = {m: [] for m in METHODS}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            for method in METHODS:
                seconds = per_trial(method, args.trials, Path(tmp) / method, f"{method}-{r}")
                times[method].append(seconds)
                print(f"round {r}: {method:10s} {seconds:.3f} s per trial", flush=True)
    spawn, fork = (statistics.median(times[m]) for m in METHODS)
    print(f"\n{args.trials} one-step trials per study, 1 worker, {args.rounds} rounds (median)")
    for method in METHODS:
        print(f"{method:10s} {statistics.median(times[method]):.3f} s per trial "
              f"({min(times[method]):.3f}..{max(times[method]):.3f})")
    print(f"spawn / forkserver = {spawn / fork:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
