"""The catalog: entries are valid data, variants restate targets, targets match their records."""
from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

from workbench.catalog import (CADENCE_SHARE, CATALOG, LADDER, PUBLISHED_TARGETS, base_workloads,
                               cadence_limit, get_workload, median_steps_to_target,
                               noise_floor_of, variants_of)

from workbench.catalog import TARGETS_DIR


def test_every_base_workload_has_two_variants_with_their_own_targets():
    """Ladder rungs are the exception: they differ from each other by size only, and the ladder
    (not the variant rule of scoring) compares them."""
    for base in (b for b in base_workloads() if b not in LADDER):
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
    """Targets are set by `pacebench set-targets`; its record is committed under workbench/targets/.

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
        assert "median_steps_to_target" in record and record["median_steps_to_target"] is None
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
        _check_steps_to_target(record)


def _check_steps_to_target(record: dict) -> None:
    """A procedure's record holds its median steps to target and how they were measured: the
    tuned baseline under the reruns' seeds, each seed's first step at the validation target
    (None: a miss, left out of the median), the eval cadence they were read at, and where,
    when and by what command."""
    block = record["steps_to_target"]
    assert record["median_steps_to_target"] == block["median"] > 0
    assert block["seeds"] == sorted(r["seed"] for r in record["reruns"])
    assert len(block["steps"]) == block["runs"] == len(block["seeds"])
    hits = [s for s in block["steps"] if s is not None]
    assert block["reached"] == len(hits) >= 1 and all(isinstance(s, int) and s > 0 for s in hits)
    assert block["median"] == statistics.median(hits)
    assert set(block["eval_every"]) == {"steps"} and block["eval_every"]["steps"] >= 1
    for key in ("stop", "hardware", "date", "command"):
        assert block[key], key


@pytest.mark.parametrize("name", sorted(CATALOG))
def test_eval_cadence_is_in_steps_and_at_most_a_twentieth_of_the_steps_to_target(name):
    """Evals quantize the time to target: a built-in evaluates every n steps, n at most 1/20 of
    its tuned baseline's median steps to target (its record's), or of its step hint where no
    median is measured (a published target)."""
    w = get_workload(name)
    record = json.loads((TARGETS_DIR / f"{name}.json").read_text())
    median = record["median_steps_to_target"]
    assert w.eval_every.seconds is None and isinstance(w.eval_every.steps, int)
    assert median_steps_to_target(name) == median
    assert 1 <= w.eval_every.steps <= (median or w.step_hint) / CADENCE_SHARE
    assert w.eval_every.steps <= cadence_limit(name)
    assert (median is None) == (name in PUBLISHED_TARGETS)
    base = get_workload(w.base)
    if w.is_variant and w.step_hint == base.step_hint:
        # a variant keeps its base's cadence unless its own median needs finer (one with a step
        # hint of its own, shakespeare_char_gpu, sets its own)
        assert w.eval_every.steps == base.eval_every.steps or \
            base.eval_every.steps > cadence_limit(name), (name, base.eval_every.steps)


def test_cadence_limit_falls_back_to_the_step_hint_without_a_median(monkeypatch):
    import workbench.catalog as catalog

    monkeypatch.setattr(catalog, "target_record",
                        lambda name: {"median_steps_to_target": 333.0} if name == "digits_mlp"
                        else {"median_steps_to_target": None})
    assert catalog.cadence_limit("digits_mlp") == 16            # 333 / 20 = 16.65
    assert catalog.cadence_limit("mnist_cnn") == 3000 // 20     # step hint 3000
    monkeypatch.setattr(catalog, "target_record", lambda name: {"median_steps_to_target": 7})
    assert catalog.cadence_limit("digits_mlp") == 1             # never below one step


def test_every_published_target_names_a_catalog_entry():
    assert set(PUBLISHED_TARGETS) <= set(CATALOG)
    assert get_workload("cifar10_resnet").target.test == 0.94  # DAWNBench's CIFAR10 threshold


def test_targets_from_reruns_median_and_worst_test_among_reaching():
    from runners.procedures.target_setting import targets_from_reruns
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
    from runners.procedures.target_setting import lenient_round

    assert lenient_round(296 / 300, "max") == 0.9866  # 0.98667 must still meet its own target
    assert lenient_round(0.98, "max") == 0.98
    assert lenient_round(1.7931254, "min") == 1.7932
    assert lenient_round(1.7166, "min") == 1.7166


def test_the_target_setting_record_holds_the_median_steps_to_target_of_its_reruns():
    from runners.procedures.target_setting import _targets_record, steps_measurement

    spec = get_workload("digits_mlp")  # accuracy, max

    def rerun(seed, best, first_steps):
        """A rerun summary whose validation value first meets goal g at first_steps[g]."""
        hit = lambda goal: first_steps.get(goal) if best >= goal else None  # noqa: E731
        return {"run_id": f"r{seed}", "algorithm": "nadamw", "seed": seed, "hparams": {},
                "best_validation": best, "train_seconds": 1.0,
                "test_at": lambda goal: 0.99 if best >= goal else None,
                "time_at": lambda goal: None if hit(goal) is None else hit(goal) / 100,
                "step_at": lambda goal: hit(goal)}

    # the 0.9 reach quantile of these bests is 0.97: three reach it, one misses
    reruns = [rerun(1, 0.98, {0.97: 120.0}), rerun(2, 0.99, {0.97: 90.0}),
              rerun(3, 0.97, {0.97: 200.0}), rerun(4, 0.50, {})]
    record = _targets_record(spec, reruns, reach_quantile=0.75)
    assert record["validation_target"] == 0.97
    assert [r["steps_to_target"] for r in record["reruns"]] == [120, 90, 200, None]
    assert record["median_steps_to_target"] == 120.0  # of 90, 120, 200; the miss left out
    block = steps_measurement([1, 2, 3, 4], [120, 90, 200, None], {"steps": 25}, "reruns",
                              date="2026-01-01")
    assert block == {"median": 120.0, "runs": 4, "reached": 3, "seeds": [1, 2, 3, 4],
                     "steps": [120, 90, 200, None], "eval_every": {"steps": 25},
                     "stop": "reruns", "date": "2026-01-01"}
    assert steps_measurement([1, 2], [10, 30], {"steps": 1}, "x")["median"] == 20.0
    assert steps_measurement([1], [None], {"steps": 1}, "x")["median"] is None

