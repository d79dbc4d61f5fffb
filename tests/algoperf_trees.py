"""AlgoPerf data the tests share: a tiny log tree in AlgoPerf's layout (its targets and when
each trial met them) and the published v0.5 external-tuning leaderboard. A module of its
own (tests/ is on the path, conftest.py): a test file importing another test file works
only where that file was collected in the same process."""
from __future__ import annotations

import json

__all__ = ["TARGETS", "HITS", "write_algoperf_tree", "PUBLISHED_V05_EXTERNAL"]

TARGETS = {
    "benchmark_version": "0.5", "base_workloads": ["wa", "wb"], "held_out_workloads": ["wa_tanh"],
    "workloads": {
        "wa": {"target_metric_name": "accuracy", "validation_target_value": 0.8, "step_hint": 10},
        "wa_tanh": {"target_metric_name": "accuracy", "validation_target_value": 0.8,
                    "step_hint": 10},
        "wb": {"target_metric_name": "loss", "validation_target_value": 0.5, "step_hint": 10},
    },
}
# (algorithm, workload) -> per study, per trial: seconds at which the trial met its target
# (None: it never did). wa_tanh is held out: baseline misses it, which (v0.5's held-out rule)
# makes baseline's wa count as a miss in the score though its wa time is finite.
HITS = {
    ("baseline", "wa"): [[100.0, 130.0], [None, 120.0]], ("baseline", "wb"): [[200.0, None]] * 2,
    ("baseline", "wa_tanh"): [[None, None]] * 2,
    ("fast", "wa"): [[50.0, 60.0], [70.0, None]], ("fast", "wb"): [[100.0, 150.0], [140.0, None]],
    ("fast", "wa_tanh"): [[90.0, None]] * 2,
    ("slow", "wa"): [[None, None]] * 2, ("slow", "wb"): [[400.0, None]] * 2,
    ("slow", "wa_tanh"): [[90.0, None]] * 2,
}


def _trial_csv(workload: str, hit: float | None) -> str:
    metric = "loss" if workload == "wb" else "accuracy"
    good, bad = (0.4, 0.9) if metric == "loss" else (0.9, 0.1)
    end = hit if hit is not None else 500.0
    last = good if hit is not None else bad
    return (f"global_step,score,accumulated_eval_time,total_duration,validation/{metric},"
            f"train/loss\n1,{end / 2},1.0,{end},{bad},2.0\n2,{end},2.0,{end * 1.5},{last},1.0\n")


def write_algoperf_tree(root) -> tuple:
    """An AlgoPerf log tree (submission/study_k/<workload>_jax/trial_i) and its targets file."""
    for (algorithm, workload), studies in HITS.items():
        for study, trials in enumerate(studies):
            for trial, hit in enumerate(trials, start=1):
                path = root / "logs" / algorithm / f"study_{study}" / f"{workload}_jax" / \
                    f"trial_{trial}"
                path.mkdir(parents=True)
                (path / "eval_measurements.csv").write_text(_trial_csv(workload, hit))
                (path / "meta_data_0.json").write_text(
                    json.dumps({"workload.max_allowed_runtime_sec": 1000, "rng_seed": trial}))
                (path / "hparams.json").write_text(json.dumps({"learning_rate": 0.1 * trial}))
    (root / "targets.json").write_text(json.dumps(TARGETS))
    return root / "logs", root / "targets.json"


# The published v0.5 external-tuning leaderboard (research/algoperf.md).
PUBLISHED_V05_EXTERNAL = {
    "shampoo_submission": 0.7784, "schedule_free_adamw": 0.7077, "generalized_adam": 0.6383,
    "cyclic_lr": 0.6301, "nadamp": 0.5909, "baseline": 0.5707, "amos": 0.4918,
    "caspr_adaptive": 0.4722, "lawa_queue": 0.3699, "lawa_ema": 0.3384,
    "schedule_free_prodigy": 0.0,
}
