"""The noise floor and the reach-quantile target rule: statistics, set-targets, pacebench noise."""
from __future__ import annotations

import json
import math

import pytest

from workbench.noise_floor import (NoiseFloor, min_detectable_speedup, noise_floor,
                                   reach_quantile_value)


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


def test_min_detectable_speedup_shrinks_with_studies_and_grows_with_noise():
    # (1.96 + 0.8416) * sqrt(ln 1.01) * sqrt(2/3) = 0.2283 in log time -> 20.4 %
    assert min_detectable_speedup(0.1, 3) == pytest.approx(0.2040, abs=1e-4)
    assert min_detectable_speedup(0.1, 10) < min_detectable_speedup(0.1, 3)
    assert min_detectable_speedup(0.3, 3) > min_detectable_speedup(0.1, 3)
    assert min_detectable_speedup(0.0, 3) == 0.0
    assert math.isnan(min_detectable_speedup(math.nan, 3))
    with pytest.raises(ValueError):
        min_detectable_speedup(0.1, 0)


def test_targets_from_reruns_reach_quantile_and_median():
    from runners.target_setting import targets_from_reruns
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
    from runners.target_setting import set_targets

    out, store = tmp_path / "targets", tmp_path / "store"
    record = set_targets("synthetic", "adamw", trials=2, reruns=3, out_dir=out,
                         store_path=store, workers=2)
    assert len(record["tuning"]) == 2 and len(record["reruns"]) == 3
    assert record["reach_quantile"] == 0.9 and record["reach_rate"] == 1.0  # ceil(2.7) = 3 of 3
    floor = record["noise_floor"]
    assert floor["runs"] == 3 and floor["reached"] == 3
    times = sorted(r["time_to_target_s"] for r in record["reruns"])
    assert floor["median_s"] == times[1]
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
