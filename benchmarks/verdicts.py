"""How fast and how well calibrated the head-to-head verdicts and tuning-budget curves are.

    .venv/bin/python benchmarks/verdicts.py --store results/algoperf-v05 [--a A --b B]
    .venv/bin/python benchmarks/verdicts.py --calibration [--replicates 2000]

With --store: the time of `pacebench compare` for two algorithms (default: the two top scorers)
and of `pacebench budget` for every algorithm, each measured as the whole command in a fresh
process (interpreter start and imports included) and as the computation alone (the store already
read), medians of --rounds. With --calibration: on synthetic study times from
workbench.testing.timing_trials (5 trials per study, times lognormal with sigma 0.25, 10 % of trials
missing), the share of replicates in which workbench.compare claims a difference at 95 % when
there is none (the false-positive rate) and when B is 1.25x or 1.5x slower (the power), for
5 studies on one workload and 3 studies on each of two.
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import xarray as xr

ROOT = Path(__file__).resolve().parents[1]


def _command(args: list[str], rounds: int) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "runners.cli", *args], cwd=ROOT, check=True,
                       capture_output=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _timed(fn, rounds: int) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def speed(store: str, a: str | None, b: str | None, rounds: int) -> None:
    from workbench import budget as B, compare as C, query, scoring
    from workbench.cubes import final_cube
    from workbench.store import open_store

    opened = open_store(Path(store))
    runs = query.runs_frame(opened)
    cube = final_cube(runs)
    config = scoring.ScoringConfig.from_dict(opened.scoring_config() or {})
    top = list(scoring.score_table(cube, config)["algorithm"])
    a, b = a or top[0], b or top[1]
    times = scoring.study_times(cube)
    workloads = [w for w in (config.base_workloads or scoring.scored_workloads(cube))
                 if w in set(map(str, times["workload"].values))]
    budgets = {**C.workload_budgets(runs), **dict(config.budgets)}
    n_alg = cube.sizes["algorithm"]
    print(f"store {store}: {len(runs)} runs, {n_alg} algorithms, {cube.sizes['workload']} "
          f"workloads; compare {a} against {b}; medians of {rounds}")
    print(f"  compare, computation alone      "
          f"{_timed(lambda: C.compare(times, a, b, workloads, budgets), rounds):6.2f} s")
    print(f"  compare, whole command          "
          f"{_command(['compare', '--store', store, '--algorithms', f'{a},{b}'], rounds):6.2f} s")

    def curves():
        trials = B.trial_times(cube)
        B.budget_json(B.budget_curves(trials), trials, config, workloads)
    print(f"  budget ({n_alg} algorithms), alone  {_timed(curves, rounds):6.2f} s")
    print(f"  budget, whole command           "
          f"{_command(['budget', '--store', store, '--json'], rounds):6.2f} s")


def _study_times(trials: dict, studies: int, workloads: list[str]) -> xr.DataArray:
    data = np.full((2, len(workloads), studies), np.inf)
    for (a, w, s, _), t in trials.items():
        i, j = "ab".index(a), workloads.index(w)
        data[i, j, s] = min(data[i, j, s], t)
    return xr.DataArray(data, dims=("algorithm", "workload", "study"),
                        coords={"algorithm": ["a", "b"], "workload": workloads})


def calibration(replicates: int) -> None:
    from workbench.compare import compare
    from workbench.testing import timing_trials

    print(f"{replicates} replicates each; 5 trials per study, sigma 0.25, 10 % of trials miss; "
          "verdicts at 95 %")
    for studies, workloads in ((5, ["w"]), (3, ["w", "v"])):
        for factor in (1.0, 1.25, 1.5):
            rng = np.random.default_rng(int(factor * 100) + studies)
            claims = {"a faster": 0, "b faster": 0, "no difference shown": 0}
            for _ in range(replicates):
                trials = timing_trials(rng, {"a": 1.0, "b": factor}, workloads, studies, 5)
                result = compare(_study_times(trials, studies, workloads), "a", "b",
                                 budgets={w: 100.0 for w in workloads}, replicates=20)
                claims[result.verdict] += 1
            what = "false positives" if factor == 1.0 else f"power at {factor}x"
            rate = (claims["a faster"] + claims["b faster"] if factor == 1.0
                    else claims["a faster"]) / replicates
            se = (rate * (1 - rate) / replicates) ** 0.5
            print(f"  {studies} studies x {len(workloads)} workload(s), B {factor}x slower: "
                  f"{what} {rate:.3f} (+- {se:.3f}); 'b faster' claimed "
                  f"{claims['b faster'] / replicates:.3f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store")
    parser.add_argument("--a")
    parser.add_argument("--b")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--calibration", action="store_true")
    parser.add_argument("--replicates", type=int, default=2000)
    args = parser.parse_args(argv)
    if not args.store and not args.calibration:
        parser.error("give --store S and/or --calibration")
    if args.store:
        speed(args.store, args.a, args.b, args.rounds)
    if args.calibration:
        calibration(args.replicates)
    return 0


if __name__ == "__main__":
    sys.exit(main())
