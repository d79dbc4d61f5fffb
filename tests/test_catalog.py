"""The catalog: entries are valid data, variants restate targets, targets match their records."""
from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

from workbench.catalog import (CATALOG, PUBLISHED_TARGETS, base_workloads, get_workload,
                               noise_floor_of, variants_of)

TARGETS_DIR = Path(__file__).resolve().parents[1] / "targets"


def test_every_base_workload_has_two_variants_with_their_own_targets():
    for base in base_workloads():
        variants = variants_of(base)
        assert len(variants) >= 2, base
        for name in variants:
            v = get_workload(name)
            assert v.base == base and v.variant != "base"
            assert v.model != get_workload(base).model  # a variant changes knobs


def test_entries_are_complete():
    for w in CATALOG.values():
        assert w.step_hint > 0 and w.budget.seconds > 0 and w.budget.steps > 0
        assert w.batch_size > 0 and w.eval_every.steps
        assert w.target.direction in ("min", "max")


def test_unknown_workload_lists_the_valid_names():
    with pytest.raises(KeyError, match="known are digits_mlp"):
        get_workload("cifar")


@pytest.mark.parametrize("name", sorted(CATALOG))
def test_target_equals_the_target_setting_record(name):
    """Targets are set by `pacebench set-targets`; its record is committed under targets/.

    The entries of PUBLISHED_TARGETS are the exception: their record says `"source": "published"`,
    cites the same source as the catalog, names the command still owed, and claims no reruns."""
    record = json.loads((TARGETS_DIR / f"{name}.json").read_text())
    target = get_workload(name).target
    assert record["workload"] == name
    assert record["metric"] == target.metric and record["direction"] == target.direction
    assert target.validation == pytest.approx(record["validation_target"], abs=1e-9)
    assert target.test == pytest.approx(record["test_target"], abs=1e-9)
    if name in PUBLISHED_TARGETS:
        assert record["source"] == "published" and record["citation"] == PUBLISHED_TARGETS[name]
        assert "set-targets --workload " + name in record["owed"]
        assert "reruns" not in record and "tuning" not in record
    else:
        assert record.get("source", "set-targets") == "set-targets"
        # the reach-quantile rule: >= 10 seeded reruns, of which the recorded share reach it
        assert len(record["reruns"]) >= 10 and record["reach_quantile"] == 0.9
        assert record["reach_rate"] >= record["reach_quantile"]
        reached = [r for r in record["reruns"] if r["time_to_target_s"] is not None]
        assert len(reached) / len(record["reruns"]) == record["reach_rate"]
        floor = noise_floor_of(name)
        assert floor is not None and floor.runs == len(record["reruns"])
        assert floor.reached == len(reached)
        assert floor.median_s == statistics.median(r["time_to_target_s"] for r in reached)


def test_every_published_target_names_a_catalog_entry():
    assert set(PUBLISHED_TARGETS) <= set(CATALOG)
    assert get_workload("cifar10_resnet").target.test == 0.94  # DAWNBench's CIFAR10 threshold


def test_targets_from_reruns_median_and_worst_test_among_reaching():
    from runners.target_setting import targets_from_reruns
    from workbench.spec import Target

    target = Target("accuracy", "max", 0.0, 0.0)
    tests = {0.97: 0.95, 0.98: 0.96, 0.99: 0.975}  # test value at the eval reaching the median

    def rerun(best, test_at):
        return {"best_validation": best, "test_at": lambda goal: test_at}

    reruns = [rerun(0.97, None), rerun(0.98, tests[0.98]), rerun(0.99, tests[0.99])]
    validation, test = targets_from_reruns(target, reruns)
    assert validation == 0.98                     # median of 0.97, 0.98, 0.99
    assert test == 0.96                           # worst test among the two reaching 0.98
    # a rerun that diverged at once (NaN best) counts as the worst value, not as missing
    validation, _ = targets_from_reruns(target, [rerun(float("nan"), None), *reruns[1:]])
    assert validation == 0.98


def test_targets_round_towards_the_easy_side():
    from runners.target_setting import lenient_round

    assert lenient_round(296 / 300, "max") == 0.9866  # 0.98667 must still meet its own target
    assert lenient_round(0.98, "max") == 0.98
    assert lenient_round(1.7931254, "min") == 1.7932
    assert lenient_round(1.7166, "min") == 1.7166
