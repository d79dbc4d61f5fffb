"""A machine whose speed changes during a study must not make a verdict: the launch order
(runners/launch/study.py) and the machine-speed check (workbench/compare.py) against a fake clock.

A null study: AdamW against itself under another name ("twin"), 4 studies x 3 trials on one
workload, one trial's steps to target depending on its place (study, trial) only, as common
random numbers make it. The fake clock runs 3x slower for the first half of the study's
schedule (its launch positions). Under the old order, all of AdamW's trials ran first: its
times are 3x and the comparison finds a difference that is not there; under the interleaved
launch order each block holds one trial of each, both halves hit both alike, and nothing is
found. When the machine's probe slowed down with the clock, the check sees the difference in
speed and withholds the verdict in seconds, and says why.
"""
from __future__ import annotations

import json

import pytest

from runners.cli import main
from runners.launch.study import launch_order
from workbench.spec import RunConfig
from workbench.testing import algorithm_after_algorithm, make_planned_store

WORKLOAD, STUDIES, TRIALS, SLOW = "digits_mlp", 4, 3, 3.0


def _configs() -> list[RunConfig]:
    return [RunConfig(WORKLOAD, algorithm, study_name="drift", study=study, trial=trial)
            for algorithm in ("adamw", "twin") for study in range(STUDIES)
            for trial in range(TRIALS)]


def _simulate(root, order, probe_slows: bool) -> str:
    """A store of the study run in `order` on the fake machine; returns its path."""
    plan, half = {}, len(order) / 2
    for config, place in order:
        factor = SLOW if place["position"] < half else 1.0  # the fake clock's first half
        plan[(config.algorithm, WORKLOAD, config.study, config.trial)] = {
            "hit": 2 + (3 * config.study + 2 * config.trial) % 5,  # the same for both sides
            "seconds": 0.5 * factor, "launch_position": place["position"],
            "probe_seconds": 0.002 * (factor if probe_slows else 1.0)}
    return str(make_planned_store(root, plan, study_name="drift").root)


@pytest.fixture()
def verdict(tmp_path, capsys):
    """compare --json of the simulated study run in an order."""
    def compare(order, probe_slows=False):
        root = _simulate(tmp_path / f"s{len(list(tmp_path.iterdir()))}", order, probe_slows)
        assert main(["compare", "--store", root, "--algorithms", "adamw,twin", "--json"]) == 0
        return json.loads(capsys.readouterr().out)
    return compare


def test_the_old_order_makes_a_false_verdict_and_the_launch_order_none(verdict):
    old = verdict(algorithm_after_algorithm(_configs()))
    assert old["verdict"] == "twin faster" and old["warnings"] == []
    assert old["speedup"]["estimate"] == pytest.approx(1 / SLOW)  # every adamw time 3x
    new = verdict(launch_order(_configs(), "drift"))
    assert new["verdict"] == "no difference shown" and new["withheld"] is None
    assert new["speedup"]["estimate"] == pytest.approx(1.0)
    for result in (old, new):  # steps do not see the clock
        assert result["verdict_by_steps"] == "no difference shown"


def test_a_probe_that_slowed_with_the_clock_withholds_the_old_orders_verdict(verdict):
    old = verdict(algorithm_after_algorithm(_configs()), probe_slows=True)
    assert old["verdict"] == "no difference shown"
    assert "machine's speed differed" in old["withheld"]
    assert len(old["warnings"]) == 1 and f"machine speed differed on {WORKLOAD}" in \
        old["warnings"][0]
    new = verdict(launch_order(_configs(), "drift"), probe_slows=True)
    assert new["warnings"] == [] and new["withheld"] is None  # both sides slowed alike
    assert new["verdict"] == "no difference shown"
