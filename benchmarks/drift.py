"""A null study on a machine whose speed changes halfway: does a verdict come out of the load?

AdamW against itself under another name ("twin"), both with one fixed setting (the tuned
baseline of the workload's target record when it is AdamW's, else AdamW's defaults), S studies x
T trials on one workload, one worker. From the start until half of the study's trials have
finished, K busy processes (`python -c "while True: pass"`) load the machine, then they are
killed. The study is run twice, side by side in one invocation:

  interleaved   runners.launch.study's launch order (blocks of one trial per algorithm)
  sequential    the old order: all of AdamW's trials, then all of the twin's
                (workbench.testing.algorithm_after_algorithm)

and `compare --json` of each store is printed: the verdict in training seconds, the verdict by
steps, the speedup with its interval, the p-value, the machine-speed warnings, and each side's
median probe and steps per second. The two algorithms are the same code with the same settings
and seeds, so every difference in time is the machine's.

    .venv/bin/python benchmarks/drift.py [--workload mnist1d_mlp] [--studies 4] [--trials 3]
                                         [--hogs 2] [--keep DIR]
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import runners.launch.study as launch  # noqa: E402
from runners.algorithms.sources import parse_algorithms  # noqa: E402
from runners.cli import main as cli  # noqa: E402
from workbench import query  # noqa: E402
from workbench.catalog import tuned_baseline  # noqa: E402
from workbench.records import DONE_STATUSES  # noqa: E402
from workbench.spec import StudySpec  # noqa: E402
from workbench.store import open_store  # noqa: E402
from workbench.testing import algorithm_after_algorithm  # noqa: E402

ORDERS = ("interleaved", "sequential")


def fixed_space(workload: str, folder: Path) -> Path:
    """A search space of one point: the workload's tuned AdamW setting, else AdamW's defaults."""
    baseline = tuned_baseline(workload)
    point = baseline[1] if baseline and baseline[0] == "adamw" else {}
    path = folder / "fixed.json"
    path.write_text(json.dumps({k: {"feasible_points": [v]} for k, v in point.items()}
                               or {"learning_rate": {"feasible_points": [0.01]}}))
    return path


def load_first_half(store_root: Path, planned: int, hogs: int, stop: threading.Event) -> None:
    """Keep `hogs` busy processes running until half of the `planned` trials have finished."""
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(hogs)]
    try:
        while not stop.is_set():
            runs = query.runs_frame(open_store(store_root)) if (store_root / "runs").exists() \
                else None
            if runs is not None and runs["status"].isin(DONE_STATUSES).sum() >= planned / 2:
                break
            time.sleep(0.2)
    finally:
        for p in procs:
            p.kill()


def run_one(order: str, args, root: Path, space: Path) -> dict:
    """The null study in `order` under the load; compare --json of its store."""
    store_root = root / order
    store = open_store(store_root, create=True)
    spec = StudySpec(workloads=(args.workload,), algorithms=("adamw", "twin"),
                     studies=args.studies, trials=args.trials, name=f"drift-{order}")
    sources = parse_algorithms(["adamw", "twin=adamw"], ["adamw"])
    original = launch.launch_order
    if order == "sequential":  # the launcher's order only: the workers are the same
        launch.launch_order = lambda configs, name: algorithm_after_algorithm(configs)
    stop = threading.Event()
    loader = threading.Thread(target=load_first_half, args=(
        store_root, 2 * args.studies * args.trials, args.hogs, stop))
    loader.start()
    try:
        launch.run_study(spec, store, workers=1, progress=False, sources=sources,
                         search_spaces={"adamw": space, "twin": space})
    finally:
        launch.launch_order = original
        stop.set()
        loader.join()
    out_file = root / f"{order}.json"
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        cli(["compare", "--store", str(store_root), "--algorithms", "adamw,twin", "--json"])
    result = json.loads(buffer.getvalue())
    out_file.write_text(json.dumps(result, indent=1))
    runs = query.runs_frame(store)
    result["_sides"] = {a: {"median_probe_ms": 1000 * runs[runs.algorithm == a].probe_seconds
                            .median(),
                            "median_steps_per_second": float((runs[runs.algorithm == a].steps /
                                                              runs[runs.algorithm == a]
                                                              .train_seconds).median())}
                        for a in ("adamw", "twin")}
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", default="mnist1d_mlp")
    parser.add_argument("--studies", type=int, default=4)
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--hogs", type=int, default=2, help="busy processes in the first half")
    parser.add_argument("--keep", help="keep the stores in this folder")
    args = parser.parse_args()
    root = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="pacebench-drift-"))
    root.mkdir(parents=True, exist_ok=True)
    space = fixed_space(args.workload, root)
    print(f"null study: adamw against twin=adamw, one fixed setting ({space.read_text()}), "
          f"{args.workload}, {args.studies} studies x {args.trials} trials, 1 worker, "
          f"{args.hogs} busy processes until half the trials are finished", flush=True)
    for order in ORDERS:
        t0 = time.perf_counter()
        r = run_one(order, args, root, space)
        s = r["speedup"]
        print(f"\n{order} ({time.perf_counter() - t0:.0f} s): verdict {r['verdict']!r}, "
              f"by steps {r['verdict_by_steps']!r}")
        interval = (f"95 % interval {s['low']:.3g} to {s['high']:.3g}" if s["low"] else
                    "no interval")
        print(f"  speedup of adamw over twin (t_twin / t_adamw): {s['estimate']:.3g}x "
              f"({interval}); p = {r['p_value']:.3g} for 'adamw faster', "
              f"{r['p_value_b_faster']:.3g} for 'twin faster'")
        for a, side in r["_sides"].items():
            print(f"  {a}: median probe {side['median_probe_ms']:.2f} ms, median "
                  f"{side['median_steps_per_second']:.0f} steps per training second")
        for w in r["warnings"]:
            print(f"  warning: {w}")
        if r["withheld"]:
            print(f"  withheld: {r['withheld']}")
    print(f"\nstores and compare outputs in {root}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
