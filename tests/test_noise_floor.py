"""The noise floor and the reach-quantile target rule: statistics, set-targets, pacebench noise."""
from __future__ import annotations

import json
import re
import math

import pytest

from workbench.catalog import get_workload
from workbench.noise_floor import NoiseFloor, noise_floor, reach_quantile_value
from workbench.power import min_detectable_speedup, studies_needed


def test_noise_floor_of_times_and_misses():
    floor = noise_floor([4.0, 2.0, None, 3.0, 1.0, math.nan])
    assert (floor.runs, floor.reached, floor.reach_rate) == (6, 4, 4 / 6)
    assert floor.median_s == 2.5 and (floor.q25_s, floor.q75_s) == (1.75, 3.25)
    assert floor.iqr_s == 1.5
    assert floor.cov == pytest.approx(1.2909944 / 2.5)  # sample std / mean
    assert NoiseFloor.from_dict(json.loads(json.dumps(floor.to_dict()))) == floor
    assert "CoV 51.6 %" in floor.describe() and "reached 4 of 6" in floor.describe()
    nothing = noise_floor([None, None])
    assert nothing.reached == 0 and math.isnan(nothing.cov)
    assert nothing.to_dict()["median_s"] is None and "reached 0 of 2" in nothing.describe()
    one = noise_floor([None, 2.0])
    assert one.median_s == 2.0 and math.isnan(one.cov) and "n/a (1 run reached)" in one.describe()


def test_reach_quantile_value_is_reached_by_that_share_of_reruns():
    best = [0.91, 0.95, 0.90, 0.99, 0.93, 0.97, 0.92, 0.96, 0.94, 0.98]
    target = reach_quantile_value(best, "max", 0.9)
    assert target == 0.91 and sum(b >= target for b in best) == 9  # the second worst
    assert reach_quantile_value(best, "max", 0.5) == 0.95
    assert reach_quantile_value(best, "max", 1.0) == 0.90
    losses = [1.0 + b for b in best]
    assert reach_quantile_value(losses, "min", 0.9) == pytest.approx(1.98)
    # a rerun that diverged at once (NaN) is the worst: with 10 reruns, 0.9 passes over it
    assert reach_quantile_value([math.nan, *best[1:]], "max", 0.9) == 0.90
    for bad in (0.0, 1.5):
        with pytest.raises(ValueError, match="reach quantile must be in"):
            reach_quantile_value(best, "max", bad)


def test_min_detectable_speedup_is_compares_model_with_its_floor():
    """The power model of workbench.power: 1 and 3 studies a side can never reach 95 % on one
    workload (smallest p-values 1/2 and 1/20 > 0.025), whatever the noise; from 4 on, the
    z-test size times pi / 3 (the rank test's efficiency), inverted."""
    var = math.log1p(0.1 ** 2)
    assert min_detectable_speedup(var, 1) is None and min_detectable_speedup(var, 3) is None
    z = 1.959964 + 0.841621
    expected = 1 - math.exp(-z * math.sqrt(2 * var * math.pi / 3 / 5))
    assert min_detectable_speedup(var, 5) == pytest.approx(expected, rel=1e-5)
    assert min_detectable_speedup(var, 10) < min_detectable_speedup(var, 5)
    assert min_detectable_speedup(4 * var, 5) > min_detectable_speedup(var, 5)
    assert min_detectable_speedup(0.0, 4) == 0.0
    assert math.isnan(min_detectable_speedup(math.nan, 5))
    assert min_detectable_speedup(var, 2, workloads=3) is not None  # (1/6)^3 < 0.025
    with pytest.raises(ValueError):
        min_detectable_speedup(var, 0)
    for k in (4, 5, 7, 12):  # the inverse of studies_needed
        mds = min_detectable_speedup(var, k)
        assert studies_needed(var, 1, 1 / (1 - mds) * (1 + 1e-9)) <= k
        assert studies_needed(var, 1, 1 / (1 - mds) * (1 - 1e-3)) > k


def test_noise_compare_and_sequential_give_one_studies_needed_figure():
    """One power model behind `noise`, `compare` and `study --until-decided`: the same times
    give the same studies needed to detect 1.25x."""
    import numpy as np
    import pandas as pd
    import xarray as xr

    from runners.procedures.noise_floor import noise_report
    from workbench.compare import compare
    from workbench.sequential import _spread_and_effect

    times = np.array([10.0, 11.5, 9.2, 12.8, 10.9])
    runs = pd.DataFrame({"run_id": list("abcde"), "seed": range(5), "status": "complete",
                         "reached_target": True, "time_to_target": times})
    report = noise_report(noise_floor(list(times)), runs)
    study = xr.DataArray(np.stack([times, times])[:, None, :], dims=("algorithm", "workload",
                         "study"), coords={"algorithm": ["a", "b"], "workload": ["w"]})
    by_compare = compare(study, "a", "b", replicates=200).studies_needed
    spread, _ = _spread_and_effect([[(times, times)]], [math.inf])
    by_sequential = studies_needed(spread, 1, 1.25, 0.95)
    assert report["studies_needed"] == by_compare == by_sequential
    assert report["studies_needed"] > 5 and report["min_detectable_speedup"]["3"] is None
    from runners.cli.targets import noise_lines
    text = "\n".join(noise_lines(report))
    assert "with 3 studies per algorithm: none: 3 + 3 studies can never reach 95 %" in text
    assert f"to detect 1.25x: {by_compare}" in text


def test_targets_from_reruns_reach_quantile_and_median():
    from runners.procedures.target_setting import targets_from_reruns
    from workbench.spec import Target

    target = Target("accuracy", "max", 0.0, 0.0)
    reruns = [{"best_validation": b, "test_at": (lambda goal, b=b: b - 0.01)}
              for b in (0.90, 0.91, 0.92, 0.93, 0.94, 0.95, 0.96, 0.97, 0.98, 0.99)]
    validation, test = targets_from_reruns(target, reruns, 0.9)
    assert validation == 0.91 and test == pytest.approx(0.90)  # worst test among the 9 reaching
    validation, _ = targets_from_reruns(target, reruns)
    assert validation == pytest.approx(0.945)  # AlgoPerf's median


@pytest.mark.slow
def test_set_targets_then_reuse_its_tuning_and_measure_the_noise_floor(tmp_path, capsys):
    from runners.cli import main
    from runners.procedures.target_setting import set_targets

    out, store = tmp_path / "targets", tmp_path / "store"
    record = set_targets("synthetic", "adamw", trials=2, reruns=3, out_dir=out,
                         store_path=store, workers=2)
    # an estimate first, before the tuning (its accuracy depends on the machine's load, so it is
    # measured in docs/gpu.md, not asserted here)
    printed = capsys.readouterr().out
    estimate = re.search(r"estimate: 2 tuning \+ 3 rerun runs x 400 steps .* about (\d+) s", printed)
    assert estimate and int(estimate[1]) > 0 and estimate.start() < printed.index("best tuning")
    assert len(record["tuning"]) == 2 and len(record["reruns"]) == 3
    assert record["reach_quantile"] == 0.9 and record["reach_rate"] == 1.0  # ceil(2.7) = 3 of 3
    floor = record["noise_floor"]
    assert floor["runs"] == 3 and floor["reached"] == 3
    times = sorted(r["time_to_target_s"] for r in record["reruns"])
    assert floor["median_s"] == times[1]
    # steps to target: each rerun's first eval step at the target, read at the catalog's cadence
    cadence = get_workload("synthetic").eval_every.steps
    steps = sorted(r["steps_to_target"] for r in record["reruns"])
    assert all(s % cadence == 0 for s in steps)
    assert record["median_steps_to_target"] == steps[1] == record["steps_to_target"]["median"]
    assert record["steps_to_target"]["eval_every"] == {"steps": cadence}
    assert record["steps_to_target"]["seeds"] == [1, 2, 3]
    saved = json.loads((out / "synthetic.json").read_text())
    assert saved["validation_target"] == record["validation_target"]
    # the median rule on the same reruns (nothing new runs: the reruns are in the store)
    again = set_targets("synthetic", "adamw", reruns=3, reach_quantile=None, out_dir=out,
                        store_path=store, reuse_tuning=True)
    assert again["tuning"] == record["tuning"] and again["tuning_reused"]
    assert again["validation_target"] <= record["validation_target"]  # median: harder (a loss)
    capsys.readouterr()
    # pacebench noise: the tuned baseline of a record is what it measures by default
    assert main(["noise", "--workload", "synthetic", "--algorithm", "adamw", "--hparams",
                 json.dumps(record["best_hparams"]), "--seeds", "3", "--store", str(store),
                 "--json", "--quiet"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["noise_floor"]["runs"] == 3 and len(report["runs"]) == 3
    assert {r["seed"] for r in report["runs"]} == {1000, 1001, 1002}
    assert set(report["min_detectable_speedup"]) == {"1", "3", "5", "10"}


@pytest.mark.slow
def test_measure_steps_to_target_reruns_the_recorded_baseline_finely(tmp_path):
    """The steps-to-target mode: the record's baseline under its reruns' seeds, stopping at the
    targets, evaluated every step; the record gains the median and how it was measured, and
    keeps its targets."""
    from runners.procedures.target_setting import measure_steps_to_target
    from workbench.catalog import TARGETS_DIR

    measured = ("steps_to_target", "median_steps_to_target")
    record = {k: v for k, v in json.loads((TARGETS_DIR / "synthetic.json").read_text()).items()
              if k not in measured}
    record["reruns"] = record["reruns"][:3]  # seeds 1, 2, 3: enough to take a median
    (tmp_path / "synthetic.json").write_text(json.dumps(record, indent=1) + "\n")
    block = measure_steps_to_target("synthetic", tmp_path, tmp_path / "store", eval_every=1,
                                    command="test")
    saved = json.loads((tmp_path / "synthetic.json").read_text())
    assert saved["steps_to_target"] == block and saved["median_steps_to_target"] == block["median"]
    assert {k: v for k, v in saved.items() if k not in measured} == record
    assert block["seeds"] == [1, 2, 3] and block["eval_every"] == {"steps": 1}
    assert block["study_name"] == "targets-synthetic-reruns" and block["algorithm"] == "nadamw"
    hits = [s for s in block["steps"] if s is not None]
    assert block["reached"] == len(hits) and block["median"] == sorted(hits)[len(hits) // 2]
    assert all(0 < s <= get_workload("synthetic").budget.steps for s in hits)
    published = json.loads((TARGETS_DIR / "mnist_cnn.json").read_text())
    (tmp_path / "mnist_cnn.json").write_text(json.dumps(published))
    with pytest.raises(ValueError, match="nothing to rerun"):
        measure_steps_to_target("mnist_cnn", tmp_path, tmp_path / "store")
