"""What a reuse key costs (runners/run/reuse_key.py): the runner code hash, the first key (the dataset's
checksum included) and 100 more, in a fresh process.

    .venv/bin/python benchmarks/reuse_key.py [--workload digits_mlp] [--keys 100]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402,F401 - imported before the clock, as in a worker

from runners.run.reuse_key import RUNNERS, reuse_context, reuse_key, runner_code_hash  # noqa: E402
from workbench.catalog import get_workload  # noqa: E402
from workbench.spec import RunConfig  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", default="digits_mlp")
    parser.add_argument("--keys", type=int, default=100)
    args = parser.parse_args()
    spec, context = get_workload(args.workload), reuse_context({})
    start = time.perf_counter()
    runner_code_hash()
    code = time.perf_counter() - start
    files = sum(1 for p in RUNNERS.rglob("*.py") if "__pycache__" not in p.parts)
    start = time.perf_counter()
    reuse_key(RunConfig(workload=args.workload, algorithm="adamw"), spec, "cpu: x", context)
    first = time.perf_counter() - start
    start = time.perf_counter()
    for trial in range(1, args.keys + 1):
        reuse_key(RunConfig(workload=args.workload, algorithm="adamw", trial=trial), spec,
                  "cpu: x", context)
    more = time.perf_counter() - start
    print(f"runner code hash: {1e3 * code:.1f} ms over {files} files")
    print(f"first key ({args.workload}, its dataset's checksum included): {1e3 * first:.1f} ms")
    print(f"{args.keys} more keys: {1e3 * more:.1f} ms")


if __name__ == "__main__":
    main()
