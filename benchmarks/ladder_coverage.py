"""How often the ladder's speedup intervals cover the true speedup (workbench/ladder.py).

Replicate one-rung ladders (workbench.testing.ladder_replicates: the middle fake rung, budgets
1, 2, 4, 8 x Chinchilla, 5 seeds, final-loss noise 0.01) with planted speedups 1, 0.5 and 2;
per replicate, the geometric-mean speedup's 95 % interval, both as the ladder makes it (widened
by t/z with n_ref + n_X - 2 degrees of freedom) and as the plain percentile interval of the same
draws. Prints the share of replicates each covers, per planted speedup.

    .venv/bin/python benchmarks/ladder_coverage.py [--replicates 1000] [--draws 200]
        [--seeds 5] [--noise 0.01] [--seed 7]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from workbench import testing as T  # noqa: E402

TRUTH = {"equal (1)": 1.0, "half (0.5)": 0.5, "double (2)": 2.0}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--replicates", type=int, default=1000)
    p.add_argument("--draws", type=int, default=200, help="bootstrap draws per interval")
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--noise", type=float, default=0.01, help="sd of a final loss (nats)")
    p.add_argument("--seed", type=int, default=7)
    args = p.parse_args(argv)
    start = time.perf_counter()
    rng = np.random.default_rng(args.seed)
    make = lambda factor: T.ladder_replicates(rng, factor, args.replicates,  # noqa: E731
                                              args.seeds, args.noise)
    ref, arms = make(1.0), {name: make(f) for name, f in TRUTH.items()}
    state = rng.bit_generator.state  # the same draws for both kinds of interval
    widened = T.replicate_intervals(ref, arms, args.draws, rng)
    rng.bit_generator.state = state
    plain = T.replicate_intervals(ref, arms, args.draws, rng, dof=10**9)
    print(f"{args.replicates} replicates, {args.seeds} seeds, noise {args.noise}, "
          f"{args.draws} draws; share of 95 % intervals covering the planted speedup:")
    for name, value in TRUTH.items():
        shares = [np.mean([low <= value <= high for low, high in found[name]])
                  for found in (widened, plain)]
        print(f"  {name:<11} the ladder's {shares[0]:.3f}   plain percentile {shares[1]:.3f}")
    print(f"({time.perf_counter() - start:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
