"""Early ranking: the compute `pacebench tune` and `study --early-stop` save against full-length
runs of the same settings, and how often they pick the same setting.

For each algorithm and seed, one lattice of learning rates half a decade apart around the
algorithm's own centre (runners/procedures/tune.py: the geometric centre of its space's range). Each case
is a window of 7 lattice points (a grid `pacebench tune` would sweep), its centre shifted by
-W..W lattice steps (--windows 2W+1 cases per sweep), so that the best point falls at different
places of the grid, edges included. Per case:

- **full length**: every setting of the window trained over the workload's full step budget
  (cached per setting, shared by the cases). Its cost as a study runs it: each run to its
  first eval meeting both targets (study's stop on target), else to the budget; its pick:
  the setting with the fewest steps to the validation target (AlgoPerf's choice), else the
  best final validation metric.
- **tune**: runners.procedures.tune.run_tune on the window (quarter-budget runs with the schedule over
  them, the extension rule, the ranking rule), in this process; its cost: the steps of its
  runs, extensions included.
- **early stop**: `study --early-stop lcga` replayed on the window's full-length runs (one
  worker: the trials in a random order, each deciding at the rungs 1/9 and 1/3 of the budget
  with runners.run.early_stop.estimate and workbench.early_stopping.rung_decision against the
  estimates of the trials before it, exactly as the tuner does); its cost: a stopped trial's
  steps to its rung, the others' steps as the study runs them; its pick: the full-length pick
  among the trials not stopped.

A pick is the same as the full-length pick (over the window plus any settings tune added)
when its steps to target at full length are within the workload's noise floor (the CoV of its
target record, targets/<workload>.json) of the full-length pick's, or, when no setting
reached the target, when its final metric is within 1 % of the best. Compute is counted in
update steps (independent of the machine's load); training seconds are reported beside.

Usage (the figures in docs/verdicts.md "Early ranking and tune"):
    PYTHONPATH=. python benchmarks/early_ranking.py --workload mnist1d_mlp \
        --algorithms adamw,heavy_ball --seeds 0 --windows 5 --workers 2
"""
from __future__ import annotations

import argparse
import json
import math
import os
import resource
import sys
import time
from pathlib import Path

import numpy as np

# Early-stopping rules replayed: name -> (rungs as fractions of the budget, eta, the fewest
# estimates a rung decides on). The first is the tuner's (runners/run/early_stop.py DEFAULT_RUNGS,
# eta 3, workbench.early_stopping.rung_decision's default of eta estimates).
RULES = {"1/9,1/3 eta 3 (the tuner's)": ((1 / 9, 1 / 3), 3, 3),
         "1/9,1/3 eta 3, from 2 estimates": ((1 / 9, 1 / 3), 3, 2),
         "1/27,1/9,1/3 eta 3, from 2": ((1 / 27, 1 / 9, 1 / 3), 3, 2),
         "1/16,1/4 eta 4, from 2": ((1 / 16, 1 / 4), 4, 2),
         "1/4 eta 7, from 2": ((1 / 4,), 7, 2)}
METRIC_TOLERANCE = 0.01  # relative, when no setting reached the target


def _plan(workload: str, algorithm: str, seed: int, max_steps: int | None):
    """The TunePlan `pacebench tune` makes of these flags (runners/cli/tune.py)."""
    from runners.cli import build_parser
    from runners.cli.tune import _plan as cli_plan

    argv = ["tune", "--workload", workload, "--algorithm", algorithm, "--seed", str(seed),
            "--store", "unused-store-of-early-ranking"]
    return cli_plan(build_parser().parse_args(argv + (["--max-steps", str(max_steps)]
                                                      if max_steps else [])))


def _noise_cov(workload: str) -> float:
    """The CoV of the workload's noise floor (its target record, workbench/targets/)."""
    from workbench.catalog import noise_floor_of

    floor = noise_floor_of(workload)
    if floor is None:
        raise SystemExit(f"error: workload {workload!r} has no noise floor in its target record")
    return float(floor.cov)


class FullRuns:
    """Full-length runs of one (workload, algorithm, seed), one per learning rate, cached in
    `store`; each summarised as what a study would see."""

    def __init__(self, store, plan, max_steps: int | None) -> None:
        from workbench.catalog import get_workload

        self.store, self.plan, self.cache = store, plan, {}
        spec = get_workload(plan.workload)
        self.budget = min(spec.budget.steps, max_steps or spec.budget.steps)
        self.target = spec.target

    def get(self, value: float) -> dict:
        if value not in self.cache:
            self.cache[value] = self._run(value)
        return self.cache[value]

    def _recorded(self, value: float) -> str | None:
        """The run id of a complete full-length run of `value` the store already holds."""
        for doc in self.store.documents(study_name=f"full-{self.plan.algorithm}"):
            hparams = (doc.get("config") or {}).get("hparams") or {}
            recorded = hparams.get(self.plan.hparam)
            if isinstance(recorded, float) and math.isclose(recorded, value, rel_tol=1e-9) \
                    and doc.get("status") == "complete":
                return doc["run_id"]
        return None

    def _run(self, value: float) -> dict:
        from runners.run.loop import run
        from workbench.spec import RunConfig

        recorded = self._recorded(value)  # a rerun of the benchmark reads it again
        if recorded is not None:
            return self._summary(recorded, value)
        trial = len(list(self.store.documents(study_name=f"full-{self.plan.algorithm}")))
        config = RunConfig(workload=self.plan.workload, algorithm=self.plan.algorithm,
                           hparams={self.plan.hparam: value}, seed=self.plan.seed,
                           study_name=f"full-{self.plan.algorithm}", trial=trial,
                           stop_on_target=False, max_steps=self.budget,
                           algorithm_source=self.plan.algorithm_source,
                           algorithm_sha256=self.plan.algorithm_sha256)
        run_id = run(config, self.store)
        return self._summary(run_id, value)

    def _summary(self, run_id: str, value: float) -> dict:
        from workbench import query
        from workbench.records import metric_column

        t = self.target
        evals = query.evals_frame(self.store, [run_id]).sort_values("step")
        train = query.train_frame(self.store, [run_id]).sort_values("step")
        val = evals[metric_column("validation", t.metric)].to_numpy(float)
        test = evals[metric_column("test", t.metric)].to_numpy(float)
        meets = (lambda x, goal: x >= goal) if t.direction == "max" else (lambda x, g: x <= g)
        steps = evals["step"].to_numpy(int)
        hit_val = np.flatnonzero(meets(val, t.validation))
        hit_both = np.flatnonzero(meets(val, t.validation) & meets(test, t.test))
        return {"value": value, "run_id": run_id,
                "step_to_target": int(steps[hit_val[0]]) if len(hit_val) else None,
                "study_steps": int(steps[hit_both[0]]) if len(hit_both) else self.budget,
                "final_metric": float(val[-1]) if len(val) else math.nan,
                "train_seconds": float(evals["train_seconds"].max()),
                "train_steps": train["step"].astype(float).tolist(),
                "train_losses": train["loss"].astype(float).tolist()}


def _pick(rows: list[dict], direction: str) -> dict:
    """The full-length pick: fewest steps to target, else the best final metric."""
    hits = [r for r in rows if r["step_to_target"] is not None]
    if hits:
        return min(hits, key=lambda r: (r["step_to_target"], r["value"]))
    sign = -1.0 if direction == "max" else 1.0
    return min(rows, key=lambda r: (sign * r["final_metric"]
                                    if math.isfinite(r["final_metric"]) else math.inf))


def _same(pick: dict, best: dict, cov: float, direction: str) -> bool:
    if pick["value"] == best["value"]:
        return True
    if best["step_to_target"] is not None:
        return (pick["step_to_target"] is not None
                and pick["step_to_target"] <= (1 + cov) * best["step_to_target"])
    gap = (best["final_metric"] - pick["final_metric"]) * (1 if direction == "max" else -1)
    return gap <= METRIC_TOLERANCE * abs(best["final_metric"])


def replay_early_stop(rows: list[dict], budget: int, rng: np.random.Generator,
                      rungs: tuple[float, ...], eta: int, min_trials: int) -> dict:
    """`study --early-stop lcga` with one worker over `rows` (full-length runs) in a random
    order, rungs at the fractions `rungs` of the budget, keeping the best 1/eta:
    {"steps": spent, "stopped": values stopped early, "kept": rows not stopped}."""
    from runners.run.early_stop import estimate
    from workbench.early_stopping import rung_decision

    rung_steps = [max(1, int(round(f * budget))) for f in rungs]
    seen = {r: [] for r in range(len(rungs))}
    spent, stopped, kept = 0, [], []
    for i in rng.permutation(len(rows)):
        row, end = rows[i], rows[i]["study_steps"]
        for r, step in enumerate(rung_steps):
            if end < step:  # it met its targets before this rung
                break
            value = estimate("lcga", row["train_steps"], row["train_losses"], step, budget)
            keep, _, _ = rung_decision(value, seen[r], eta, min_trials)
            seen[r].append(value)
            if not keep:
                end = step
                stopped.append(row["value"])
                break
        spent += end
        if row["value"] not in stopped:
            kept.append(row)
    return {"steps": spent, "stopped": stopped, "kept": kept}


def sweep(workload: str, algorithm: str, seed: int, windows: int, root: str,
          max_steps: int | None) -> list[dict]:
    """The cases of one (algorithm, seed): one per window centre."""
    from dataclasses import replace

    from runners.run.loop import run
    from runners.procedures.tune import log_grid, run_tune
    from workbench.store import open_store

    store = open_store(Path(root) / f"{workload}-{algorithm}-{seed}", create=True)
    base = _plan(workload, algorithm, seed, max_steps)
    full = FullRuns(store, base, max_steps)
    cov, direction = _noise_cov(workload), base.target_direction
    lattice = log_grid(base, -(windows // 2), windows // 2)
    cases = []
    for j, center in sorted(lattice.items()):
        plan = replace(base, center=center)
        t0 = time.process_time()
        result = run_tune(plan, store, lambda configs: [run(c, store) for c in configs])
        window = [full.get(v) for v in log_grid(plan).values()]
        seen = window + [full.get(p.value) for p in result.points
                         if p.value not in {w["value"] for w in window}]
        best = _pick(seen, direction)
        study_cost = sum(r["study_steps"] for r in window)
        tune_steps = sum(plan.steps for p in result.points if p.run_id)
        early = {}
        for name, (rungs, eta, least) in RULES.items():
            es = replay_early_stop(window, full.budget, np.random.default_rng([seed, j + 1000]),
                                   rungs, eta, least)
            early[name] = {"steps": es["steps"], "stopped": len(es["stopped"]),
                           "pick": _pick(es["kept"], direction)["value"],
                           "same": _same(_pick(es["kept"], direction),
                                         _pick(window, direction), cov, direction)}
        cases.append({
            "algorithm": algorithm, "seed": seed, "window": j, "center": center,
            "full_pick": best["value"], "full_pick_steps_to_target": best["step_to_target"],
            "study_steps": study_cost, "budget_steps": full.budget * len(window),
            "tune_steps": tune_steps, "tune_pick": result.best.value,
            "tune_ranked_by": result.ranked_by, "tune_extensions": result.extensions,
            "tune_same": _same(full.get(result.best.value), best, cov, direction),
            "early_stop": early,
            "cpu_seconds": time.process_time() - t0})
        print("case " + json.dumps(cases[-1], default=str), flush=True)
    return cases


def summary(cases: list[dict]) -> dict:
    """The figures: compute ratios (steps) and same-pick rates over the cases."""
    study = sum(c["study_steps"] for c in cases)
    budget = sum(c["budget_steps"] for c in cases)
    tune = sum(c["tune_steps"] for c in cases)
    return {"cases": len(cases),
            "tune": {"less_compute_than_study": study / tune,
                     "less_compute_than_full_budget": budget / tune,
                     "same_pick_rate": float(np.mean([c["tune_same"] for c in cases])),
                     "ranked_by_estimate": sum(c["tune_ranked_by"] == "estimate"
                                               for c in cases),
                     "extended": sum(bool(c["tune_extensions"]) for c in cases)},
            "early_stop": {name: _rule_summary(cases, name, study) for name in RULES}}


def _rule_summary(cases: list[dict], name: str, study: float) -> dict:
    spent = sum(c["early_stop"][name]["steps"] for c in cases)
    return {"less_compute_than_study": study / spent, "saved_fraction": 1 - spent / study,
            "same_pick_rate": float(np.mean([c["early_stop"][name]["same"] for c in cases]))}


def main() -> int:
    from workbench.workers import WorkerPool

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workload", default="mnist1d_mlp")
    p.add_argument("--algorithms", default="adamw,heavy_ball")
    p.add_argument("--seeds", default="0")
    p.add_argument("--windows", type=int, default=5, help="cases per (algorithm, seed)")
    p.add_argument("--max-steps", type=int, help="cap on the step budget (quick checks)")
    p.add_argument("--workers", type=int, default=1, help="sweeps run at once")
    p.add_argument("--root", default="/tmp/pacebench-early-ranking", help="the stores")
    p.add_argument("--out", help="write the cases and the summary here (JSON)")
    args = p.parse_args()
    jobs = [{"workload": args.workload, "algorithm": a, "seed": int(s), "windows": args.windows,
             "root": args.root, "max_steps": args.max_steps}
            for a in args.algorithms.split(",") for s in args.seeds.split(",")]
    load_before, t0 = os.getloadavg(), time.time()
    with WorkerPool(args.workers) as pool:  # this file is module `early_ranking` there
        cases = [c for part in pool.map("early_ranking:sweep", jobs) for c in part]
    cpu = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = {"command": " ".join(sys.argv), "summary": summary(cases), "cases": cases,
           "wall_seconds": time.time() - t0, "cpu_seconds": cpu.ru_utime + cpu.ru_stime,
           "load_average_before": load_before, "load_average_after": os.getloadavg()}
    print(json.dumps(out["summary"], indent=2))
    print(f"wall {out['wall_seconds']:.0f} s, cpu {out['cpu_seconds']:.0f} s, load average "
          f"{load_before[0]:.1f} before, {out['load_average_after'][0]:.1f} after")
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(out, indent=1, default=str) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
