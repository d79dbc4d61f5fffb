"""The share of a ladder run's time its evals take, planned by `runners.procedures.ladder.eval_plan`, on this
CPU (docs/ladder.md, "Evals"): measured per update and per eval, multiplied out over the plan.

    .venv/bin/python benchmarks/eval_share.py [--rung gpt_7k] [--data DATA | --vocab 50257]
        [--budget 1] [--steps 10] [--evals N]

Without --data, a token file of `--tokens` Zipf-distributed ids of a `--vocab`-token vocabulary
is written to a temporary folder (a large vocabulary is where evals used to dominate). The times
are this process's CPU seconds (time.process_time, one thread: what the work cost on a core,
close to wall time on an idle machine): the median AdamW update over --steps after 2 warm-up
updates, and the median eval (three splits) of 3. The predicted run: steps x update + evals x
eval, with the plan's evals and windows (--evals N: the plan of `pacebench ladder --evals N`,
256 windows); printed beside the planned FLOP share (runners/procedures/ladder.py eval_work_share).
"""
from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from runners.procedures.ladder import (MAX_EVAL_WINDOWS, catalog_rungs,  # noqa: E402
                                       eval_work_share, final_configs)
from runners.run.loop import prepare  # noqa: E402
from workbench.spec import LadderSpec, RunConfig  # noqa: E402


def token_folder(folder: Path, vocab: int, tokens: int) -> str:
    """train.bin and val.bin of Zipf-distributed ids below `vocab` (nanoGPT's format)."""
    rng = np.random.default_rng(0)
    for name, n in (("train.bin", tokens), ("val.bin", max(tokens // 10, 4096))):
        np.minimum(rng.zipf(1.2, n) - 1, vocab - 1).astype("<u2").tofile(folder / name)
    return str(folder)


def measure(config: RunConfig, steps: int) -> tuple[float, float]:
    """(median CPU seconds per update, median CPU seconds per eval of the three splits)."""
    p = prepare(config)
    batches = p.workload.train_batches(p.batch_size, 0)
    updates = []
    for i in range(2 + steps):
        start = time.process_time()
        p.algorithm.update(p.model, next(batches), i, p.workload)
        if i >= 2:
            updates.append(time.process_time() - start)
    evals = []
    for _ in range(3):
        start = time.process_time()
        for split in ("train", "validation", "test"):
            p.workload.evaluate(p.model, split)
        evals.append(time.process_time() - start)
    return statistics.median(updates), statistics.median(evals)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rung", default="gpt_7k")
    parser.add_argument("--data", help="a ladder data value (default: a token file made here)")
    parser.add_argument("--vocab", type=int, default=50257)
    parser.add_argument("--tokens", type=int, default=200_000)
    parser.add_argument("--budget", type=float, default=1.0)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--evals", type=int, help="the plan of --evals N (default: sized)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        data = args.data or token_folder(Path(tmp), args.vocab, args.tokens)
        rung = catalog_rungs(data)[args.rung]
        spec = LadderSpec(sizes=(args.rung,), algorithms=("adamw",), budgets=(args.budget,),
                          data=data, evals=args.evals)
        config = final_configs(spec, {args.rung: rung})[0]  # the run the ladder would launch
        steps, every = config.max_steps, config.eval_every
        windows = config.ladder.get("eval_windows", MAX_EVAL_WINDOWS)  # absent with --evals
        evals = math.ceil(steps / every)
        update_s, eval_s = measure(config, args.steps)
    train, spent = steps * update_s, evals * eval_s
    what = args.data or f"token files of a {args.vocab:,}-token vocabulary"
    print(f"load average {os.getloadavg()[0]:.2f}; {args.rung} on {what}, budget {args.budget:g}: {steps} steps of {update_s * 1e3:.1f} ms, {evals} evals of "
          f"{windows} windows per split, {eval_s * 1e3:.0f} ms each (CPU seconds, one thread)")
    print(f"predicted: train {train:.1f} s, evals {spent:.1f} s: eval share "
          f"{spent / (train + spent):.1%} of the run (planned FLOPs: "
          f"{eval_work_share(steps, rung.batch_size, every, windows):.1%} of training)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
