"""Issue 38's end-to-end case: AdamW (its file space) against a copy of AdamW given by path
whose learning-rate range is 30x too low (tests/fixtures/low_adamw.py). Its study is planted
(the point is the tuning report's logic); `pacebench tune` on the copy is real (mnist1d_mlp, 50
steps a run, in this process). Unequal tuning is flagged; after the tune it is not."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from runners.cli import main
from workbench.store import open_store
from workbench.testing import make_planned_store

from locations import FIXTURES, REPO

LOW = f"low={FIXTURES / 'low_adamw.py'}:LowAdamW"
ADAMW_SPACE = json.loads((REPO / "runners" / "algorithms" /
                          "adamw.json").read_text())


def _log_points(low: float, high: float, positions=(0.2, 0.45, 0.7, 0.95)) -> list[float]:
    """Learning rates at `positions` of [low, high] in log scale (the last in its top 10 %,
    where the edge rule looks)."""
    return [math.exp(math.log(low) + u * (math.log(high) - math.log(low))) for u in positions]


def _planted_study(path: Path, low_space: dict, low_hits) -> None:
    """2 studies x 4 trials of adamw (best inside its range) and of `low` (the learning rates
    of low_space's range; trial t first meets the target at eval low_hits[t]), each run's
    document recording its side's search space as a study would."""
    plan = {}
    adamw_lrs = _log_points(3e-3, 0.1)
    low_range = low_space["learning_rate"]
    low_lrs = _log_points(low_range["min"], low_range["max"])
    for study in range(2):
        for trial in range(4):
            plan[("adamw", "mnist1d_mlp", study, trial, "main")] = {
                "hit": [6, 3, 4, 7][trial], "launched_by": "study", "design": "adamw",
                "hparams": {"learning_rate": adamw_lrs[trial]}}
            plan[("low", "mnist1d_mlp", study, trial, "main")] = {
                "hit": low_hits[trial], "launched_by": "study", "design": "low",
                "hparams": {"learning_rate": low_lrs[trial]}}
    store = make_planned_store(path, plan, n_evals=12)
    spaces = {"adamw": (ADAMW_SPACE, "file"), "low": (low_space, "declared")}
    for doc in store.documents():
        space, origin = spaces[doc["algorithm"]]
        store.amend(doc["run_id"], search_space=space, search_space_origin=origin)


def _inline_run_configs(configs, store, name, *rest, **kw):
    """runners.launch.study.run_configs without worker processes (each config run here)."""
    from runners.launch.scheduler import StudyResult
    from runners.launch.worker import run_job

    for config in configs:
        run_job({"config": config.to_dict(), "store": str(store.root), "data_dir": None,
                 "hooks": {}, "launch_order": None, "search_space": None})
    return StudyResult(planned=len(configs), succeeded=len(configs))


def test_a_badly_centred_copy_is_flagged_then_tuned_and_fair(tmp_path, monkeypatch, capsys):
    import runners.launch.study
    import workbench as wb
    from tests.fixtures.low_adamw import LowAdamW

    # 1. the copy's best learning rate is its range's highest trial, far ahead of the others
    _planted_study(tmp_path / "before", dict(LowAdamW.search_space), low_hits=[None, 11, 9, 3])
    before = wb.open(tmp_path / "before").compare("adamw", "low")
    assert before["fair_tuning"] is False
    assert any("low" in w and "learning_rate" in w and ("top" in w or "high" in w)
               for w in before["tuning_warnings"]), before["tuning_warnings"]

    # 2. pacebench tune on the copy: the best point is bracketed by the space it writes
    monkeypatch.setattr(runners.launch.study, "run_configs", _inline_run_configs)
    out = tmp_path / "low-space.json"
    assert main(["tune", "--workload", "mnist1d_mlp", "--algorithm", LOW, "--store",
                 str(tmp_path / "tune"), "--out", str(out), "--max-steps", "200",
                 "--quiet"]) == 0
    record = json.loads(Path(f"{out}.origin.json").read_text())
    tuned = json.loads(out.read_text())
    assert tuned["learning_rate"]["min"] < record["best"] < tuned["learning_rate"]["max"]
    assert record["unmeasured_sides"] == []
    assert {p["value"] for p in record["curve"]} >= {tuned["learning_rate"]["min"],
                                                     tuned["learning_rate"]["max"]}
    runs = wb.open(tmp_path / "tune").runs()
    assert set(runs["study_name"]) == {"tune-low"} and set(runs["phase"]) == {"tuning"}

    # 3. the same study with the tuned space: the copy's best sits inside its range
    _planted_study(tmp_path / "after", tuned, low_hits=[8, 3, 4, 9])
    store = open_store(tmp_path / "after")
    for doc in store.documents():
        if doc["algorithm"] == "low":
            store.amend(doc["run_id"], search_space_origin="tuned",
                        search_space_file=str(out.resolve()))
    after = wb.open(tmp_path / "after").compare("adamw", "low")
    assert after["fair_tuning"] is True and after["tuning_warnings"] == []
