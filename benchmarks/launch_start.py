"""How long a small `pacebench study` takes from the command to its exit, beside another checkout.

Runs `python -m runners.cli study` of one short trial (the `synthetic` workload, 50 steps, so
the time is almost all the launcher's start, the fork server's imports and the exit) as a fresh
process, from a folder outside both checkouts with PYTHONPATH naming the checkout, in rounds
alternating this checkout with `--baseline` (e.g. `git archive <commit> | tar -x -C DIR`), so
machine noise hits both alike. Prints each run's wall seconds and CPU seconds (user + system of
the command and of the processes reaped under it, RUSAGE_CHILDREN: the fork server and its
worker are counted when they were waited for), and the medians:

    .venv/bin/python benchmarks/launch_start.py [--baseline OLD_CHECKOUT] [--rounds 3]

Both checkouts are byte-compiled first (`compileall`), as an installed package is.
"""
from __future__ import annotations

import argparse
import compileall
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
STUDY = ["study", "--workloads", "synthetic", "--algorithms", "sgd_nesterov", "--trials", "1",
         "--workers", "1", "--max-steps", "50", "--name", "start", "--quiet"]


def launch(code: Path, store: Path) -> tuple[float, float]:
    """(wall, CPU) seconds of one study command run with `code` on the import path."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "runners.cli", *STUDY, "--store", str(store)],
                   check=True, cwd=store.parent, stdout=subprocess.DEVNULL,
                   env={**os.environ, "PYTHONPATH": str(code)})
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, help="another checkout of Pacebench")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    codes = {"this": HERE, **({"baseline": args.baseline.resolve()} if args.baseline else {})}
    for code in codes.values():
        for package in ("runners", "workbench"):
            compileall.compile_dir(code / package, quiet=1)
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in codes}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            for name, code in codes.items():
                wall, cpu = launch(code, Path(tmp) / f"{name}-{r}")
                times[name].append((wall, cpu))
                print(f"round {r + 1} {name:8s} {wall:6.2f} s wall, {cpu:6.2f} s CPU; load "
                      f"{os.getloadavg()[0]:.2f}", flush=True)
    print(f"\none-trial study, {args.rounds} rounds (median, min to max)")
    for name, pairs in times.items():
        walls, cpus = [w for w, _ in pairs], [c for _, c in pairs]
        print(f"{name:8s} {statistics.median(walls):6.2f} s wall ({min(walls):.2f} to "
              f"{max(walls):.2f}), {statistics.median(cpus):6.2f} s CPU  [{codes[name]}]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
