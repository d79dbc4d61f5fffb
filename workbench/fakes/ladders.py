"""Fake model-size ladders whose truth is known: the reference's loss L(D) at every rung
(ladder_loss), a ladder store with planted speedups (make_ladder_store), and replicate one-rung
ladders with their intervals for calibration (ladder_replicates, replicate_intervals)."""
from __future__ import annotations

import json
import math
import os
from typing import Any, Mapping, Sequence

import numpy as np

from workbench import records as R
from workbench.fakes.runs import START
from workbench.store import Store, open_store

# A fake ladder's rungs: (name, non-embedding parameters), about 4x apart, as the GPT ladder's.
LADDER_RUNGS = (("gpt_tiny", 12_000), ("gpt_small", 48_000), ("gpt_medium", 192_000))
LADDER_EXPONENT = 0.35  # b of every fake rung's L(D)
LADDER_SEQUENCE = 64    # tokens per sequence x 8 sequences per step: tokens per step 512


def ladder_loss(non_embedding_params: float, tokens) -> np.ndarray:
    """The fake ladder's true final validation loss of the reference after `tokens` training
    tokens: L(D) = a D^-0.35 + c, with c = 1 + 20 N^-0.3 falling with size N and a set so that
    L - c = 1 at Chinchilla's 20 tokens per parameter."""
    n = float(non_embedding_params)
    a = (20 * n) ** LADDER_EXPONENT
    return a * np.power(np.asarray(tokens, float), -LADDER_EXPONENT) + 1.0 + 20 * n ** -0.3


def make_ladder_store(path: str | os.PathLike,
                      algorithms: Mapping[str, float] | None = None,
                      rungs: Sequence[tuple[str, int]] = LADDER_RUNGS,
                      budgets: Sequence[float] = (1, 2, 4, 8), seeds: int = 5,
                      noise: float = 0.01, seed: int = 0, seconds_per_token: Mapping[str, float]
                      | None = None, tuning_trials: Mapping[str, int] | None = None,
                      early: int = 0, repeated: bool = False, n_evals: int = 4,
                      study_name: str = "ladder",
                      sweeps: Mapping[str, Sequence[tuple[Mapping[str, Any], float]]]
                      | None = None) -> Store:
    """A fake model-size ladder's store: rungs x budgets x algorithms x seeds, each a complete
    run whose document's config holds the ladder record runners/procedures/ladder.py writes and whose last
    eval row holds its final validation loss.

    Algorithm `name` with factor m ends at the reference's true loss at m times its tokens
    (`ladder_loss`) plus N(0, noise): factor 0.5 is a planted speedup of 0.5, 2 one of 2. The
    first algorithm is the reference (default {"adamw": 1.0, "twin": 1.0}). Train seconds: tokens x seconds_per_token[name] (default
    1e-4). `early`: that many runs of the last algorithm stop at half their planned steps;
    `repeated`: every run records repeated_tokens. Names are written as given (hostile ones
    too): run folders are numbered. `sweeps`: {algorithm: [(hyperparameters, final validation
    loss), ...]}: that algorithm's sweep at every rung (ladder phase "tuning", study
    "<study_name>.tuning", the smallest budget, seed 0), its final runs given the sweep's best
    point (the lowest loss) as their hyperparameters."""
    store = open_store(path, create=True)
    rng = np.random.default_rng(seed)
    algorithms = dict(algorithms or {"adamw": 1.0, "twin": 1.0})
    names = list(algorithms)
    late = 0
    with store.sealed_batch(durable=False) as batch:
        for r, (rung, n) in enumerate(rungs):
            for name in names:
                for b, budget in enumerate(budgets):
                    for s in range(seeds):
                        shorten = name == names[-1] and late < early
                        late += shorten
                        doc, evals = _ladder_run(
                            rung, n, name, budget, s, b, study_name, algorithms[name],
                            noise * rng.standard_normal(),
                            (seconds_per_token or {}).get(name, 1e-4),
                            (tuning_trials or {}).get(name, 0), names[0], repeated, shorten,
                            n_evals)
                        best = min((sweeps or {}).get(name, [({}, 0.0)]), key=lambda p: p[1])[0]
                        doc["hparams"] = doc["config"]["hparams"] = dict(best)
                        batch.add(doc, evals, doc["run_id"])
                for k, (hparams, loss) in enumerate((sweeps or {}).get(name, [])):
                    batch.add(*_sweep_run(rung, n, name, budgets[0], k, study_name, names[0],
                                          hparams, loss, n_evals))
        batch.publish()
    return store


def _sweep_run(rung: str, n: int, algorithm: str, budget: float, trial: int, study_name: str,
               reference: str, hparams: Mapping[str, Any], loss: float, n_evals: int
               ) -> tuple[dict, Any, str]:
    """(document, eval rows, run id) of one fake ladder sweep run ending at `loss`."""
    import pyarrow as pa

    doc, evals = _ladder_run(rung, n, algorithm, budget, trial, 0, f"{study_name}.tuning", 1.0,
                             0.0, 1e-4, 0, reference, False, False, n_evals)
    run_id = f"sweep-{_run_number(rung, algorithm, trial)}"
    doc.update(run_id=run_id, trial_key=run_id, trial=trial, seed=0, hparams=dict(hparams))
    doc["config"].update(hparams=dict(hparams), seed=0, trial=trial)
    doc["config"]["ladder"]["phase"] = "tuning"
    rows = evals.to_pylist()
    rows = [{**r, "run_id": run_id} for r in rows]
    rows[-1]["validation/loss"] = float(loss)
    return doc, pa.Table.from_pylist(rows), run_id


def _ladder_run(rung: str, n: int, algorithm: str, budget: float, seed: int, place: int,
                study_name: str, factor: float, noise: float, seconds_per_token: float,
                tuning_trials: int, reference: str, repeated: bool, shorten: bool,
                n_evals: int) -> tuple[dict, Any]:
    """The document and eval rows (an Arrow table) of one fake ladder run."""
    import pyarrow as pa

    tokens_per_step = 8 * LADDER_SEQUENCE
    steps = max(n_evals, math.ceil(budget * 20 * n / tokens_per_step))
    tokens = steps * tokens_per_step
    ran = steps // 2 if shorten else steps
    run_id = f"ladder-{_run_number(rung, algorithm, budget, seed)}"
    record = {"rung": rung, "non_embedding_params": n, "params": 2 * n + 4096,
              "flops_per_token": 6.0 * n, "budget": float(budget), "tokens": tokens,
              "steps": steps, "data": "generated", "repeated_tokens": repeated,
              "transfer": None, "tuning_trials": tuning_trials, "phase": "final",
              "reference": reference}
    config = {"workload": rung, "algorithm": algorithm, "hparams": {}, "seed": seed,
              "study_name": study_name, "study": place, "trial": 0, "ladder": record}
    evals = []
    for k in range(1, n_evals + 1):
        step = ran * k // n_evals
        seen = step * tokens_per_step
        loss = float(ladder_loss(n, seen * factor)) + (noise if k == n_evals else 0.0)
        evals.append({"run_id": run_id, "eval_index": k - 1, "step": step,
                      "examples": step * 8, "train_seconds": seen * seconds_per_token,
                      "eval_seconds": 0.1 * k, "wall_seconds": seen * seconds_per_token + 0.1 * k,
                      "validation/loss": loss, "train/loss": loss * 0.98})
    last = evals[-1]
    doc = {"schema_version": R.SCHEMA_VERSION, "run_id": run_id, "attempt": 1,
           "trial_key": run_id, "study_name": study_name, "workload": rung,
           "base_workload": rung, "variant": "base", "algorithm": algorithm,
           "ruleset": "external", "study": place, "trial": 0, "seed": seed, "rng_seed": seed,
           "hparams": {}, "source": "pacebench", "config": config, "batch_size": 8,
           "target_metric": "loss", "target_direction": "min", "target_validation": 0.0,
           "target_test": 0.0, "budget_seconds": None, "budget_steps": steps,
           "hardware": "synthetic CPU x1", "status": "complete",
           "stop_reason": f"step budget of {steps} steps used" if not shorten else "stopped early",
           "error": None, "launched_by": "study",
           "started_at": START.isoformat(), "ended_at": START.isoformat(), "steps": last["step"],
           "train_seconds": last["train_seconds"], "wall_seconds": last["wall_seconds"],
           "eval_seconds": last["eval_seconds"]}
    return doc, pa.Table.from_pylist(evals)


def _run_number(*parts: Any) -> str:
    """A folder-safe number for a fake run from its parts (any text: hostile names too)."""
    import hashlib

    return hashlib.sha256(json.dumps([str(p) for p in parts]).encode()).hexdigest()[:16]


# Replicate one-rung ladders for calibration (tests/unit/analysis/test_ladder.py, benchmarks/
# ladder_coverage.py): the middle fake rung at budgets 1, 2, 4, 8.
REPLICATE_TOKENS = 20.0 * LADDER_RUNGS[1][1] * np.array([1.0, 2.0, 4.0, 8.0])


def ladder_replicates(rng: np.random.Generator, factor: float, replicates: int,
                      seeds: int = 5, noise: float = 0.01) -> np.ndarray:
    """Final (loss, train seconds) of `replicates` independent arms of the middle fake rung
    (the truth at `factor` x the tokens, plus N(0, noise)): replicates x budgets x seeds x 2."""
    n = LADDER_RUNGS[1][1]
    loss = ladder_loss(n, REPLICATE_TOKENS * factor)[None, :, None] + \
        noise * rng.standard_normal((replicates, len(REPLICATE_TOKENS), seeds))
    seconds = np.broadcast_to(REPLICATE_TOKENS[None, :, None] * 1e-4, loss.shape)
    return np.stack([loss, seconds], -1)


def replicate_intervals(ref: np.ndarray, arms: Mapping[str, np.ndarray], draws: int,
                        rng: np.random.Generator, dof: int | None = None,
                        loss_noise: float | None = None) -> dict:
    """{name: [(low, high) per replicate]}: the geometric-mean speedup intervals of many
    one-rung ladders at once (arrays as ladder_replicates makes them), by the steps of
    workbench.ladder.rung_analysis (a point fit per replicate; rescaled_means, one vectorised
    refit of the reference for all replicates x draws, invert, the geometric mean, interval)
    with the replicates as a leading axis. `dof`: of the widening (default rung_analysis's,
    n_ref + n_X - 2; a huge one gives the plain percentile interval). `loss_noise`: the
    parametric bootstrap of `--loss-noise` (each mean plus N(0, loss_noise^2 / seeds), no
    widening) in place of resampling seeds."""
    from workbench import ladder

    replicates, budgets, seeds = ref.shape[:3]
    tokens = REPLICATE_TOKENS

    def drawn(values):  # replicates x draws x budgets x 2
        if loss_noise is not None:
            means = np.repeat(values.mean(2)[:, None], draws, 1)
            means[..., 0] += rng.standard_normal(means.shape[:3]) * loss_noise / math.sqrt(seeds)
            return means
        return np.stack([ladder.rescaled_means(values[:, k], draws, rng)
                         for k in range(budgets)], 2)

    points = [ladder.fit_power_law(tokens, row) for row in ref.mean(2)[..., 0]]
    refits = [v.reshape(replicates, draws, 1)
              for v in ladder.fit_power_laws(tokens, drawn(ref)[..., 0].reshape(-1, budgets))]
    out = {}
    for name, arm in arms.items():
        means = arm.mean(2)[..., 0]
        logs = np.log(ladder.invert(*refits, drawn(arm)[..., 0]) / tokens).mean(-1)
        out[name] = []
        for r, fit in enumerate(points):
            value = math.exp(np.log(fit.inverse(means[r]) / tokens).mean())
            out[name].append(ladder.interval(np.exp(logs[r]), ladder.INTERVAL_LEVEL, value,
                                             math.inf if loss_noise is not None else
                                             2 * seeds - 2 if dof is None else dof))
    return out
