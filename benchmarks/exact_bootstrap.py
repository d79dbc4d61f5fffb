"""How far Monte Carlo bootstrap intervals of a head-to-head sit from the exact ones.

    .venv/bin/python benchmarks/exact_bootstrap.py --store results/algoperf-v05 [--reference R]

For each algorithm against the reference (default: baseline when present, else the first name),
`Results.compare` gives each workload's interval of B's median study time over A's from the
exact bootstrap distribution (workbench.compare: every resample, weighted), and again with the
exact path switched off (bootstrap.EXACT_BOOTSTRAP = 0), from COMPARE_DRAWS Monte Carlo replicates
(seed 0), the way intervals were drawn before. Prints the endpoints that differ, how many of
all endpoints moved, and the largest move as a ratio.
"""
from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import workbench  # noqa: E402
from workbench import bootstrap  # noqa: E402
from workbench import compare as C  # noqa: E402


def _endpoints(res, reference: str, names: list[str]) -> dict:
    """{(algorithm, workload, "low" | "high"): value} of each per-workload interval."""
    out = {}
    for name in names:
        doc = res.compare(name, reference)
        for workload, row in doc["per_workload"].items():
            for side in ("low", "high"):
                if row[side] is not None:
                    out[name, workload, side] = row[side]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", required=True)
    parser.add_argument("--reference", help="default: baseline when present, else the first")
    args = parser.parse_args(argv)
    res = workbench.open(args.store)
    names = sorted(res.runs()["algorithm"].dropna().unique())
    reference = args.reference or ("baseline" if "baseline" in names else names[0])
    if reference not in names:
        parser.error(f"unknown --reference {reference!r}: the store has {', '.join(names)}")
    others = [n for n in names if n != reference]
    exact = _endpoints(res, reference, others)
    limit, bootstrap.EXACT_BOOTSTRAP = bootstrap.EXACT_BOOTSTRAP, 0
    try:
        drawn = _endpoints(res, reference, others)
    finally:
        bootstrap.EXACT_BOOTSTRAP = limit
    moved = [(k, drawn[k], v) for k, v in exact.items() if k in drawn
             and abs(drawn[k] - v) > 1e-9 * abs(v)]
    for (name, workload, side), before, after in moved:
        print(f"{name} vs {reference} on {workload}, {side}: Monte Carlo {before:.4g}, "
              f"exact {after:.4g}")
    largest = max((abs(math.log(a / b)) for _, b, a in moved), default=0.0)
    print(f"{len(moved)} of {len(exact)} per-workload endpoints differ between "
          f"{C.BOOTSTRAP_REPLICATES} Monte Carlo replicates and the exact bootstrap; the "
          f"largest by a factor of {math.exp(largest):.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
