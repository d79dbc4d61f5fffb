"""How fast and how well calibrated the head-to-head verdicts and tuning-budget curves are.

    .venv/bin/python benchmarks/verdicts.py --store results/algoperf-v05 [--a A --b B]
    .venv/bin/python benchmarks/verdicts.py --calibration [--replicates 2000]
    .venv/bin/python benchmarks/verdicts.py --sequential --store results/algoperf-v05 \
        [--pool baseline] [--max-studies 10] [--trials 5] [--replicates 1000] [--factors 1,1.5]
        [--seed 0]
    .venv/bin/python benchmarks/verdicts.py --sequential --synthetic 0.25 [--factors 1,1.25,1.5]

With --store: the time of `pacebench compare` for two algorithms (default: the two top scorers)
and of `pacebench budget` for every algorithm, each measured as the whole command in a fresh
process (interpreter start and imports included) and as the computation alone (the store already
read), medians of --rounds. With --calibration: on synthetic study times from
workbench.testing.timing_trials (5 trials per study, times lognormal with sigma 0.25, 10 % of trials
missing), the share of replicates in which workbench.compare claims a difference at 95 % when
there is none (the false-positive rate) and when B is 1.25x or 1.5x slower (the power), for
5 studies on one workload and 3 studies on each of two. With --sequential: studies resampled
from the real trials of one algorithm of --store (--pool; each study the fastest of --trials
trials drawn with replacement from a workload's trials, misses kept), for both sides (no true
difference) and with B's times 1.5x longer; the sequential test (workbench/sequential.py) with a
look after every round up to --max-studies, against the fixed-sample test of compare repeated
after every round: false verdicts, power and the studies used.
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


def _pools(store: str, pool: str) -> tuple[dict[str, np.ndarray], list[float]]:
    """Per scored workload of the store, every trial time of algorithm `pool` (training
    seconds, +inf for a miss): the real trials the sequential calibration resamples; and each
    workload's budget (what a miss counts as in the futility rule's spread)."""
    from workbench import query, scoring
    from workbench.cubes import final_cube
    from workbench.store import open_store

    opened = open_store(Path(store))
    cube = final_cube(query.runs_frame(opened))
    config = scoring.ScoringConfig.from_dict(opened.scoring_config() or {})
    names = [str(x) for x in cube["algorithm"].values]
    if pool not in names:
        raise SystemExit(f"--pool {pool!r}: the store's algorithms are {', '.join(names)}")
    out = {}
    for w in config.base_workloads or scoring.scored_workloads(cube):
        values = cube["time_to_target"].sel(algorithm=pool, workload=w).values.ravel()
        values = values[~np.isnan(values)]
        if values.size:
            out[str(w)] = values.astype(float)
    budgets = [float(config.budgets.get(w, np.nanmax(np.where(np.isinf(v), np.nan, v))))
               for w, v in out.items()]
    return out, budgets


def _resampled_studies(rng: np.random.Generator, pools: dict[str, np.ndarray], rounds: int,
                       trials: int, factor: float) -> np.ndarray:
    """(workload, round) study times: each study the fastest of `trials` trials drawn with
    replacement from the workload's pool, every time multiplied by `factor` (a miss stays one)."""
    out = np.empty((len(pools), rounds))
    for i, values in enumerate(pools.values()):
        draws = values[rng.integers(0, len(values), (rounds, trials))] * factor
        out[i] = draws.min(axis=1)
    return out


def _synthetic_pools(spread: float, workloads: int = 8, size: int = 100_000
                     ) -> tuple[dict[str, np.ndarray], list[float]]:
    """Pools as _pools gives them, but drawn: per workload `size` trial times 10 *
    exp(N(0, spread)) seconds, 10 % of them misses (timing_trials' model), budget 100 s; drawing
    with replacement from so large a pool is drawing from the distribution."""
    rng = np.random.default_rng(12345)
    pools = {}
    for w in range(workloads):
        values = 10.0 * np.exp(rng.normal(0.0, spread, size))
        values[rng.random(size) < 0.1] = np.inf
        pools[f"w{w}"] = values
    return pools, [100.0] * workloads


def _sequential_replicate(rng: np.random.Generator, pools: dict[str, np.ndarray],
                         caps: list[float], max_studies: int, trials: int, factor: float
                         ) -> tuple[int, str | None, int, float, int]:
    """One replicate of sequential_calibration: (the sequential test's direction, why it
    stopped, studies a side used, its boundaries' error over all looks, whether the
    fixed-sample test repeated after every round claimed a difference (the right way when
    factor > 1): 1 or 0)."""
    from workbench.permutation import permutation_pvalues
    from workbench.sequential import sequential_test, stopping_look

    a = _resampled_studies(rng, pools, max_studies, trials, 1.0)
    b = _resampled_studies(rng, pools, max_studies, trials, factor)
    blocks = [[(a[w, :2], b[w, :2]) for w in range(len(pools))]]
    blocks += [[(a[w, k:k + 1], b[w, k:k + 1]) for w in range(len(pools))]
               for k in range(2, max_studies)]
    # the first look alone, then every look (a look's boundaries do not depend on the rounds
    # after it); each replicate draws its own random relabellings
    paths_seed = int(rng.integers(2**31))  # not `seed`: the next factor's draws use it
    test = sequential_test(blocks[:1], max_studies, seed=paths_seed)
    stop, why = stopping_look(test, blocks[:1], caps, max_studies)
    if why is None:
        test = sequential_test(blocks, max_studies, seed=paths_seed)
        stop, why = stopping_look(test, blocks, caps, max_studies)
    full = test if len(test.looks) == len(blocks) else sequential_test(
        blocks, max_studies, seed=paths_seed)
    first = 0
    for n in range(2, max_studies + 1):  # the fixed-sample test after every round
        p_a, p_b, _ = permutation_pvalues([(a[w, :n], b[w, :n]) for w in range(len(pools))])
        if min(p_a, p_b) <= 0.025:
            first = int(p_a <= 0.025) if factor > 1 else 1
            break
    return test.direction, why, test.looks[stop].studies, full.error, first


def sequential_calibration(store: str | None, pool: str, replicates: int, max_studies: int,
                           trials: int, factors: list[float], seed: int = 0,
                           spread: float | None = None) -> None:
    """False verdicts and power of the sequential test (workbench/sequential.py) with a look
    after every round, against the fixed-sample test repeated after every round, on studies
    resampled from a real store's trials."""
    pools, caps = _pools(store, pool) if spread is None else _synthetic_pools(spread)
    misses = np.mean([np.isinf(v).mean() for v in pools.values()])
    where = (f"the trials of {pool} in {store}" if spread is None else
             f"synthetic trials (10 s x exp(N(0, {spread:g})))")
    print(f"{replicates} replicates; studies resampled from {where} "
          f"({len(pools)} workloads, {trials} trials per study, {100 * misses:.0f} % of "
          f"trials miss); a look after every round, first at 2 studies a side, at most "
          f"{max_studies}; verdicts at 95 %")
    for factor in factors:
        rng = np.random.default_rng([seed, int(factor * 1000), max_studies])
        decided = {1: 0, -1: 0}
        futile, used, naive, spent_error = 0, [], 0, []
        started = time.perf_counter()
        for _ in range(replicates):
            direction, why, studies, error, first = _sequential_replicate(
                rng, pools, caps, max_studies, trials, factor)
            spent_error.append(error)
            used.append(studies)
            if why == "decided":
                decided[direction] += 1
            futile += why == "futile"
            naive += first
        seconds = (time.perf_counter() - started) / replicates
        if factor == 1.0:
            rate = (decided[1] + decided[-1]) / replicates
            rate_naive = naive / replicates
            print(f"  no true difference: sequential test, false verdicts {rate:.3f} "
                  f"(+- {_se(rate, replicates):.3f}); the fixed-sample test repeated after "
                  f"every round, false verdicts {rate_naive:.3f} (+- "
                  f"{_se(rate_naive, replicates):.3f}); studies used, mean {np.mean(used):.2f}"
                  f"; stopped as futile {futile / replicates:.3f}; the boundaries' error over all "
                  f"looks, mean {np.mean(spent_error):.4f}; {seconds:.2f} s a replicate")
        else:
            power = decided[1] / replicates
            print(f"  B {factor:g}x slower: sequential test, power {power:.3f} (+- "
                  f"{_se(power, replicates):.3f}), wrong way {decided[-1] / replicates:.3f}; "
                  f"studies used, mean {np.mean(used):.2f}, median {np.median(used):.0f}; "
                  f"stopped as futile {futile / replicates:.3f}; the fixed-sample test "
                  f"repeated, power {naive / replicates:.3f}; {seconds:.2f} s a replicate")


def _se(rate: float, n: int) -> float:
    return (rate * (1 - rate) / n) ** 0.5


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store")
    parser.add_argument("--a")
    parser.add_argument("--b")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--calibration", action="store_true")
    parser.add_argument("--replicates", type=int, default=2000)
    parser.add_argument("--sequential", action="store_true",
                        help="the sequential test's calibration on studies resampled from "
                             "--store's trials")
    parser.add_argument("--pool", default="baseline",
                        help="with --sequential: the algorithm whose trials are resampled")
    parser.add_argument("--max-studies", type=int, default=10)
    parser.add_argument("--trials", type=int, default=5, help="with --sequential: per study")
    parser.add_argument("--factors", default="1,1.5",
                        help="with --sequential: B's slowdowns to simulate (1: no difference)")
    parser.add_argument("--seed", type=int, default=0, help="with --sequential: of the draws")
    parser.add_argument("--synthetic", type=float, metavar="SIGMA",
                        help="with --sequential: resample synthetic lognormal trials of this log "
                             "spread (10 %% misses) on 8 workloads instead of --store's")
    args = parser.parse_args(argv)
    if not args.store and not args.calibration and args.synthetic is None:
        parser.error("give --store S and/or --calibration")
    if args.sequential:
        if not args.store and args.synthetic is None:
            parser.error("--sequential resamples trials: give --store S or --synthetic SIGMA")
        sequential_calibration(None if args.synthetic is not None else args.store, args.pool,
                               args.replicates, args.max_studies, args.trials,
                               [float(f) for f in args.factors.split(",")], args.seed,
                               args.synthetic)
    elif args.store:
        speed(args.store, args.a, args.b, args.rounds)
    if args.calibration:
        calibration(args.replicates)
    return 0


if __name__ == "__main__":
    sys.exit(main())
