"""What the dashboard's relaxed targets, rank-shift and pool tables and eval share cost in the
server (docs/dashboard.md), measured in-process over a store:

    .venv/bin/python benchmarks/sensitivity_views.py --store results/algoperf-v05

Builds a Selection with a live Leaderboard (its first draw: imports and the store's read
included), then times each change once: showing the rank-shift and pool tables, relaxing the
targets by 10 %, going back to 0 % (cached), and, on a live Costs view, showing the eval share.
Prints the load average beside each time.
"""
from __future__ import annotations

import argparse
import os
import time


def _timed(what: str, change) -> None:
    start = time.perf_counter()
    change()
    print(f"{what}: {time.perf_counter() - start:.2f} s (load average {os.getloadavg()[0]:.1f})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", required=True)
    args = parser.parse_args()
    start = time.perf_counter()
    from workbench.views.costs import Costs
    from workbench.views.leaderboard import Leaderboard
    from workbench.views.selection import Selection

    selection = Selection(store_path=args.store)
    board = Leaderboard(selection=selection, live=True)
    print(f"leaderboard's first draw (imports and the read included): "
          f"{time.perf_counter() - start:.2f} s")
    _timed("show the rank shift and pool", lambda: board.param.update(show_sensitivity=True))
    _timed("relax the targets by 10 %", lambda: selection.param.update(relax_targets=0.1))
    _timed("back to 0 % (cached)", lambda: selection.param.update(relax_targets=0.0))
    costs = Costs(selection=selection, live=True)
    _timed("show the eval share", lambda: costs.param.update(show_eval_share=True))
    if board.failure.visible or costs.failure.visible:
        raise SystemExit("a view failed to draw: see the log above")


if __name__ == "__main__":
    main()
