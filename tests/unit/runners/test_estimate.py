"""The time estimate that set-targets prints before it starts (runners/launch/estimate.py)."""
from __future__ import annotations

import pytest

from runners.launch.estimate import Probe, describe_plan, run_seconds


def test_a_plan_is_its_runs_in_waves_of_workers_times_one_run():
    measured = Probe(start_seconds=1.5, setup_seconds=0.5, warmup_seconds=2.0, step_seconds=0.01,
                     eval_seconds=0.1, warmup=5, steps=20, device="cuda:0")
    # 1.5 + 0.5 + 2 (warm-up: 5 steps) + 995 x 0.01 + 10 evals x 0.1
    assert run_seconds(measured, 1000, 100) == pytest.approx(14.95)
    seconds, line = describe_plan(measured, [("tuning", 8), ("rerun", 10)], 1000, 100, 4)
    assert seconds == pytest.approx((2 + 3) * 14.95)  # ceil(8 / 4) + ceil(10 / 4) waves
    assert line.startswith("estimate: 8 tuning + 10 rerun runs x 1000 steps x 10 ms/step")
    assert line.endswith("on 4 worker(s) on cuda:0: about 75 s")
    seconds, line = describe_plan(measured, [("tuning", 0), ("rerun", 3)], 1000, None, 1)
    assert seconds == pytest.approx(3 * (14.95 - 0.9)) and "0 tuning" not in line  # reused tuning


def test_estimate_only_prints_the_estimate_and_writes_nothing(tmp_path, capsys, monkeypatch):
    from runners.cli import main

    monkeypatch.chdir(tmp_path)
    assert main(["set-targets", "--workload", "synthetic", "--algorithm", "adamw", "--trials", "3",
                 "--reruns", "4", "--workers", "2", "--estimate-only", "--store", "s"]) == 0
    out = capsys.readouterr().out
    assert "synthetic: estimate: 3 tuning + 4 rerun runs x " in out and " about " in out
    assert list(tmp_path.iterdir()) == []  # no store, no targets/ record
