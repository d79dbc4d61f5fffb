"""How long each view of the report takes to build on a store: its numbers and its Bokeh models,
as `pacebench report` builds them (every view drawn up front) and as the dashboard builds a tab
when it is first opened.

    .venv/bin/python benchmarks/view_builds.py --store results/algoperf-v05 [--code OTHER_CHECKOUT]
        [--rounds 2] [--views compare,budget] [--mode report|dashboard]

Each round runs a fresh process per checkout (this one and, with --code, another, say a
commit before a change: `git worktree add /tmp/base HEAD~1`), alternating, so both meet the same
load: the process reads the store, scores it (not timed: the selection every view starts from),
then builds each view in registry order and times it. Printed: per view, the median seconds of
each checkout and their ratio (this / other). Both checkouts are byte-compiled first (this
workplace sets PYTHONDONTWRITEBYTECODE, and a checkout without a cache would compile every module
it imports in the timed part). The load average is printed before and after: wall-clock times
on a shared machine.
"""
from __future__ import annotations

import argparse
import compileall
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Run in the child process, with the checkout under test first on sys.path.
CHILD = r"""
import json, sys, time, warnings
warnings.simplefilter("ignore")
import panel as pn
from bokeh.document import Document
from workbench.report import report_selection
from workbench.views import registry
store, wanted = sys.argv[1], set(filter(None, sys.argv[2].split(",")))
dynamic = sys.argv[3] == "dashboard"
selection = report_selection(store)
selection.scores()
pn.extension("tabulator")
times = {}
for entry in registry.VIEWS:
    if wanted and entry.key not in wanted:
        continue
    start = time.perf_counter()
    layout, _ = registry._laid_out(entry, selection, dynamic=dynamic)
    layout.get_root(Document())
    times[entry.key] = time.perf_counter() - start
print(json.dumps(times))
"""


def _build_times(code: Path, store: str, views: str, mode: str) -> dict[str, float]:
    """{view key: seconds} from one fresh process running `code`'s checkout."""
    env = {**os.environ, "PYTHONPATH": str(code)}
    done = subprocess.run([sys.executable, "-c", CHILD, store, views, mode], cwd=code, env=env,
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{code}: the view builds failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _table(runs: dict[str, list[dict[str, float]]]) -> list[str]:
    """Lines: view, the median of each checkout, and this / other."""
    names = list(runs)
    keys = list(runs[names[0]][0])
    lines = [f"{'view':15s}" + "".join(f"{n:>12s}" for n in names)
             + ("   ratio" if len(names) == 2 else "")]
    totals = {n: 0.0 for n in names}
    for key in keys:
        medians = {n: statistics.median(r[key] for r in runs[n]) for n in names}
        for n in names:
            totals[n] += medians[n]
        ratio = (f"{medians[names[0]] / medians[names[1]]:8.2f}"
                 if len(names) == 2 and medians[names[1]] > 0 else "")
        lines.append(f"{key:15s}" + "".join(f"{medians[n]:11.2f}s" for n in names) + ratio)
    lines.append(f"{'all':15s}" + "".join(f"{totals[n]:11.2f}s" for n in names)
                 + (f"{totals[names[0]] / totals[names[1]]:8.2f}" if len(names) == 2 else ""))
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", required=True, help="the store to build the views of")
    parser.add_argument("--code", type=Path, help="another checkout, timed beside this one")
    parser.add_argument("--rounds", type=int, default=2, help="fresh processes per checkout")
    parser.add_argument("--views", default="", help="view keys, comma-separated (default: all)")
    parser.add_argument("--mode", choices=("report", "dashboard"), default="report",
                        help="each view with its report options, or as the dashboard makes it "
                             "when its tab is first opened")
    args = parser.parse_args(argv)
    checkouts = {"this": ROOT, **({"other": args.code.resolve()} if args.code else {})}
    for code in checkouts.values():
        compileall.compile_dir(code / "workbench", quiet=1)
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in checkouts}
    for _ in range(args.rounds):
        for name, code in checkouts.items():
            runs[name].append(_build_times(code, args.store, args.views, args.mode))
    print("\n".join(_table(runs)))
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
