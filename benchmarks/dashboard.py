"""Dashboard speed on a big store: first render and the server time of filter changes.

The store is synthetic (`workbench.testing.make_store`): by default 20 algorithms x 10 workloads
x 5 studies x 100 trials = 100,000 runs of 100 evals each, written once (it takes a while: about
20 minutes and 3 GB on a 2-core machine) and reused by later calls with the same shape.

    .venv/bin/python benchmarks/dashboard.py [--store /tmp/pacebench-bench-100k] [--rounds 5]
        [--tabs] [--tabs-only] [--cold]

First render: a new session's whole server side, as `panel serve` does it for a new browser tab:
`build_app` (read the run table, build the cube, score) plus the Bokeh models of the first page
(`server_doc`). Measured in a server process that has read nothing yet, and again for a later
session of the same process (which shares the store's read and derived values); with `--cold`
also on a store without its run index (the first read ever, which indexes it). A filter change:
setting one sidebar filter on a built app, with everything its watchers recompute for the open
tab (the leaderboard), on filter settings not seen before (nothing cached); then the same with
each tab open in turn. The median and the slowest over the rounds are printed.
Goals (issue 17): first render at most 3 s, every filter change at most 0.3 s with any tab open,
and a first render of the never-indexed store (`--cold`) at most 30 s.
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from workbench import records as R  # noqa: E402
from workbench.workers import WorkerPool  # noqa: E402

ALGORITHMS = [f"algo{i:02d}" for i in range(20)]
WORKLOADS = ["digits_mlp", "digits_mlp_tanh", "digits_mlp_layernorm", "digits_cnn",
             "digits_cnn_tanh", "digits_cnn_wide", "synthetic", "synthetic_tanh",
             "synthetic_large_init", "shakespeare_char"]
GOAL_FIRST_RENDER_S = 3.0
GOAL_COLD_RENDER_S = 30.0
GOAL_FILTER_CHANGE_S = 0.3


def write_part(path: str, workload: str, studies: int, trials: int, n_evals: int,
               seed: int) -> int:
    """Worker: the runs of one workload (a separate process each, for speed)."""
    from workbench.testing import make_store

    make_store(path, algorithms=ALGORITHMS, workloads=[workload], studies=studies, trials=trials,
               n_evals=n_evals, seed=seed, study_name="bench")
    return studies * trials * len(ALGORITHMS)


def ensure_store(path: Path, workloads: list[str], studies: int, trials: int, n_evals: int,
                 workers: int) -> int:
    """The synthetic store at `path`, written unless it already holds the expected runs."""
    expected = len(ALGORITHMS) * len(workloads) * studies * trials
    runs = path / R.RUNS_DIR
    if runs.is_dir() and sum(1 for _ in runs.iterdir()) == expected:
        _index(path)  # as the launcher leaves it (a --cold run removes it for a while)
        return expected
    if path.exists():
        shutil.rmtree(path)
    start = time.perf_counter()
    print(f"writing {expected:,} runs x {n_evals} evals to {path} ...", flush=True)
    jobs = [{"path": str(path), "workload": w, "studies": studies, "trials": trials,
             "n_evals": n_evals, "seed": i} for i, w in enumerate(workloads)]
    with WorkerPool(workers) as pool:  # this file is module `dashboard` on the workers' path
        done = 0
        for n in pool.map("dashboard:write_part", jobs):
            done += n
            print(f"  {done:,} / {expected:,} runs", flush=True)
    print(f"written in {time.perf_counter() - start:.0f} s", flush=True)
    _index(path)
    return expected


def _index(path: Path) -> None:
    """The store's run index, as the launcher writes it after runs end."""
    from workbench.run_index import refresh_index
    from workbench.store import open_store

    if not (path / R.INDEX_DIR).is_dir():
        refresh_index(open_store(path))


def first_render(path: Path) -> tuple[float, object]:
    """Seconds to build the app over `path` and create the first page's models; its selection."""
    from bokeh.document import Document

    from workbench.app import build_app
    from workbench.views.selection import Selection

    start = time.perf_counter()
    selection = Selection(store_path=str(path))
    build_app(path, selection).server_doc(Document())
    return time.perf_counter() - start, selection


def filter_changes(selection, rounds: int) -> dict[str, list[float]]:
    """Seconds per filter change, by kind. Round r starts from every algorithm shown but
    algo r, so each change lands on filter settings not seen before (nothing cached)."""
    algorithms = list(selection.param.algorithms.objects)
    workloads = list(selection.param.workloads.objects)
    out: dict[str, list[float]] = {name: [] for name in
                                   ("untick one algorithm", "untick one workload",
                                    "time axis to steps", "reference algorithm")}

    def timed(name: str, **change) -> None:
        start = time.perf_counter()
        selection.param.update(**change)
        out[name].append(time.perf_counter() - start)

    for r in range(rounds):
        timed("untick one algorithm", algorithms=[a for a in algorithms if a != algorithms[r]])
        timed("untick one workload", workloads=[w for w in workloads if w != workloads[r]])
        timed("time axis to steps", time_axis="step")
        timed("reference algorithm", reference=algorithms[(r + 5) % len(algorithms)])
        selection.param.update(algorithms=algorithms, workloads=workloads,
                               time_axis="train_seconds")
    return out


def per_tab(path: Path, rounds: int):
    """Seconds of an 'untick one algorithm' change with each tab open in turn, in a served
    page's document (so the time includes building the Bokeh models of what is redrawn), new
    settings each time as in filter_changes; yields (tab, seconds) as each tab is done, the
    first two entries of seconds its opening (the tab switch: the view made and drawn), in
    wall-clock and in this process's CPU seconds (less sensitive to a shared machine's load)."""
    import panel as pn
    from bokeh.document import Document

    from workbench.app import build_app
    from workbench.views.selection import Selection

    selection = Selection(store_path=str(path))
    app = build_app(path, selection)
    app.server_doc(Document())
    tabs = app.main[0].select(pn.Tabs)[0]
    algorithms = list(selection.param.algorithms.objects)
    out: dict[str, list[float]] = {}
    for i, name in enumerate(tabs._names):
        start, cpu = time.perf_counter(), time.process_time()
        tabs.active = i  # the tab opens: its view is made and drawn
        out[name] = [time.perf_counter() - start, time.process_time() - cpu]
        for r in range(rounds):
            drop = algorithms[(i * rounds + r) % len(algorithms)]
            start = time.perf_counter()
            selection.algorithms = [a for a in algorithms if a != drop]
            out[name].append(time.perf_counter() - start)
            selection.algorithms = algorithms
        yield name, out[name]


def _cold_render(path: Path) -> float:
    """First render in a fresh process on the store without its run index (the first read
    of a store ever: every run folder is read, then indexed)."""
    shutil.rmtree(path / R.INDEX_DIR, ignore_errors=True)
    code = ("import sys; sys.path.insert(0, 'benchmarks'); from pathlib import Path; "
            "import dashboard; print(dashboard.first_render(Path(sys.argv[1]))[0])")
    out = subprocess.run([sys.executable, "-c", code, str(path)], check=True,
                         capture_output=True, text=True, cwd=Path(__file__).resolve().parents[1])
    _index(path)  # reading never writes the index: put it back for the measurements after
    return float(out.stdout.split()[-1])


def _report(title: str, times: dict[str, list[float]]) -> float:
    print(title)
    worst = 0.0
    for name, seconds in times.items():
        worst = max(worst, max(seconds))
        print(f"  {name:22s} {statistics.median(seconds):6.3f} s / {max(seconds):6.3f} s")
    return worst


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--store", type=Path, default=Path("/tmp/pacebench-bench-100k"))
    parser.add_argument("--studies", type=int, default=5)
    parser.add_argument("--trials", type=int, default=100)
    parser.add_argument("--evals", type=int, default=100)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--tabs", action="store_true",
                        help="also time a filter change with each tab open in turn (slow)")
    parser.add_argument("--tabs-only", action="store_true",
                        help="time the tabs only (--tabs without the first renders and the "
                             "filter changes with the Leaderboard open)")
    parser.add_argument("--cold", action="store_true",
                        help="also time a first render with no run index (minutes)")
    args = parser.parse_args()

    n = ensure_store(args.store, WORKLOADS, args.studies, args.trials, args.evals, args.workers)
    if args.tabs_only:
        args.tabs = True
        print(f"store: {n:,} runs x {args.evals} evals ({args.store})")
        _print_tabs(args)
        return
    cold = _cold_render(args.store) if args.cold else None
    first, _ = first_render(args.store)    # this process has read nothing yet
    later, selection = first_render(args.store)  # another session of the same server
    changes = filter_changes(selection, args.rounds)

    print(f"\nstore: {n:,} runs x {args.evals} evals ({args.store})")
    if cold is not None:
        print(f"first render, store never read (no run index) : {cold:6.2f} s  (goal <= "
              f"{GOAL_COLD_RENDER_S} s: {'ok' if cold <= GOAL_COLD_RENDER_S else 'OVER GOAL'})")
    verdict = "ok" if first <= GOAL_FIRST_RENDER_S else "OVER GOAL"
    print(f"first render, new server process               : {first:6.2f} s  "
          f"(goal <= {GOAL_FIRST_RENDER_S} s: {verdict})")
    print(f"first render, a later session of that server   : {later:6.2f} s")
    worst = _report(f"filter change with the Leaderboard open, server time (median / slowest "
                    f"of {args.rounds}; goal <= {GOAL_FILTER_CHANGE_S} s):", changes)
    print(f"slowest filter change: {worst:.3f} s "
          f"({'ok' if worst <= GOAL_FILTER_CHANGE_S else 'OVER GOAL'})")
    if args.tabs:
        _print_tabs(args)


def _print_tabs(args) -> None:
    """Each tab's opening and the filter changes with it open (per_tab), printed."""
    print("each tab: its opening (the tab switch), then untick one algorithm with it open "
          "(median / slowest):", flush=True)
    for name, (opened, cpu, *seconds) in per_tab(args.store, args.rounds):
        verdict = "ok" if max(seconds) <= GOAL_FILTER_CHANGE_S else "OVER GOAL"
        print(f"  {name:22s} open {opened:6.3f} s ({cpu:6.3f} CPU s); change "
              f"{statistics.median(seconds):6.3f} s / {max(seconds):6.3f} s  {verdict}",
              flush=True)


if __name__ == "__main__":
    main()
