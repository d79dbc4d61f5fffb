"""What relaxed targets, the clock and the pool change in a store's scores (docs/verdicts.md).

    .venv/bin/python benchmarks/relaxation_sweep.py --store results/algoperf-v05 \
        [--relax 0,0.05,0.1,0.15,0.2] [--rank-shift steps]

For each relaxation R (workbench.results.Results.score(relax_targets=R): AlgoPerf's relaxation,
first hits recomputed from the eval rows, the pool fixed and the fastest time recomputed at
each level, as the AlgoPerf working group's sweep does), one line per algorithm: its score and
90 % interval, its rank and its workloads within 4x of the fastest; then, at R = 0, the rank
shift to --rank-shift's clock with the Spearman correlation and how many algorithms change
rank, and each score's largest change when one other algorithm is left out. Also the wall time
of each score.
"""
from __future__ import annotations

import argparse
import time

import workbench


def _floats(text: str) -> list[float]:
    return [float(t) for t in text.split(",") if t.strip()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", required=True)
    parser.add_argument("--relax", type=_floats, default=[0.0, 0.05, 0.1, 0.15, 0.2])
    parser.add_argument("--rank-shift", default="steps", choices=("train", "wall", "steps"))
    args = parser.parse_args()
    results = workbench.open(args.store)
    by_relax = {}
    for relax in args.relax:
        start = time.perf_counter()
        result = results.score_result(relax_targets=relax)
        by_relax[relax] = result.table
        print(f"\nR = {relax:g} ({time.perf_counter() - start:.1f} s)")
        for rank, r in enumerate(result.table.itertuples(), 1):
            interval = f"{r.low:.3f} to {r.high:.3f}" if r.low == r.low else "n/a"
            print(f"  {rank:>2} {r.algorithm:<24} {r.score:.3f} ({interval}, {r.studies} "
                  f"studies)  reached {r.workloads_reached}/{r.workloads_scored}")
    plain = results.score(rank_shift=args.rank_shift)
    shift, axis = plain["rank_shift"], plain["time_axis"]
    changed = sum(e[f"rank_{axis}"] != e[f"rank_{args.rank_shift}"] for e in shift.values())
    print(f"\nrank by {axis} -> by {args.rank_shift}: spearman "
          f"{plain['rank_shift_spearman']:.3f}, {changed} of {len(shift)} change rank")
    for a, e in shift.items():
        print(f"  {a:<24} {e[f'rank_{axis}']:>2} -> {e[f'rank_{args.rank_shift}']:>2}")
    print("\npool sensitivity (largest change of the score, one other algorithm left out):")
    for a, e in plain["pool_sensitivity"].items():
        print(f"  {a:<24} {e['largest_change']:+.4f}")


if __name__ == "__main__":
    main()
