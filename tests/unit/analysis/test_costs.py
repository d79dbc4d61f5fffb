"""Costs (workbench/costs.py), the Cost vs accuracy view and the inference latency measurement:
hand-computed costs to target, Pareto fronts and speedups at quality, a missing price flagged
(never a zero), and latency landing in run.json through the real training loop."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import panel as pn
import pytest

from workbench import query
from workbench import costs
from workbench.cubes import final_cube
from workbench.testing import make_store, markdown_text, runs_table

HOUR = 3600.0


# -- prices ----------------------------------------------------------------------------------
def test_default_prices_follow_the_documented_rules():
    table = costs.PriceTable.defaults(["8x Tesla V100-SXM2-16GB", "cpu: Intel Xeon (2 threads)",
                                       "cpu: AMD EPYC (1 thread)", "synthetic CPU x1",
                                       "NVIDIA H200 x1", None])
    assert table.usd_per_hour("8x Tesla V100-SXM2-16GB") == pytest.approx(8 * 3.06)
    assert table.usd_per_hour("cpu: Intel Xeon (2 threads)") == pytest.approx(2 * 0.0425)
    assert table.usd_per_hour("cpu: AMD EPYC (1 thread)") == pytest.approx(0.0425)
    assert table.usd_per_hour("synthetic CPU x1") == 1.0
    assert "p3.2xlarge" in table.prices["8x Tesla V100-SXM2-16GB"].source
    # no rule: no price, and the missing keys are named (runs without hardware get their own key)
    assert math.isnan(table.usd_per_hour("NVIDIA H200 x1"))
    assert table.missing(["NVIDIA H200 x1", None, "synthetic CPU x1"]) == \
        [costs.UNRECORDED, "NVIDIA H200 x1"]


def test_price_table_round_trips_and_refuses_bad_prices():
    table = costs.PriceTable.defaults(["synthetic CPU x1"]).with_price("gpu box", 2.5, "quote")
    frame = table.to_frame(["gpu box", "synthetic CPU x1", "unpriced box"])
    assert frame["usd_per_hour"].tolist()[:2] == [2.5, 1.0]
    assert math.isnan(frame["usd_per_hour"].iloc[2])
    back = costs.PriceTable.from_frame(frame)
    assert back.prices == table.prices  # the empty price stays missing, not zero
    with pytest.raises(ValueError, match="USD per hour >= 0"):
        costs.PriceTable.from_frame(pd.DataFrame({"hardware": ["x"], "usd_per_hour": [-1.0]}))
    with pytest.raises(ValueError, match="finite number"):
        costs.Price(math.inf, "nowhere")


# -- cost to target --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return make_store(tmp_path_factory.mktemp("costs") / "store", studies=3, trials=3)


def _hand_median_times(store) -> dict[tuple[str, str], float]:
    """Per (algorithm, workload): median over studies of the time of the trial that met the
    target at the smallest eval index, from the planned curves make_store records in each run
    document (eval k happens at (k + 1) x seconds_per_eval training seconds)."""
    per_study: dict[tuple, list[tuple[int, float]]] = {}
    for run_id in query.runs_frame(store)["run_id"]:
        doc = store.run_doc(run_id)
        hit, dt = doc["synthetic"]["hit_index"], doc["synthetic"]["seconds_per_eval"]
        if hit is not None:
            key = (doc["algorithm"], doc["workload"], doc["study"])
            per_study.setdefault(key, []).append((hit, (hit + 1) * dt))
    out: dict[tuple[str, str], list[float]] = {}
    for algorithm in ("fast", "slow"):
        for workload in ("digits_mlp", "digits_cnn"):
            times = [min(per_study[(algorithm, workload, s)])[1]
                     if (algorithm, workload, s) in per_study else math.inf for s in range(3)]
            out[(algorithm, workload)] = float(np.median(times))
    return out


def test_cost_to_target_is_the_median_study_time_times_the_price(store):
    runs = query.runs_frame(store)
    prices = costs.PriceTable({"synthetic CPU x1": costs.Price(7.2, "test")})
    table = costs.cost_table(final_cube(runs), runs, prices).set_index(["algorithm", "workload"])
    for key, seconds in _hand_median_times(store).items():
        row = table.loc[key]
        assert row["time_to_target"] == pytest.approx(seconds)
        assert row["cost_to_target"] == pytest.approx(seconds / HOUR * 7.2)  # inf for a miss
        assert row["usd_per_hour"] == 7.2 and not row["unpriced"]
        # make_store records a batch-1 latency of 1 ms x (1 + algorithm index) in each run
        latency = 0.001 * (1 + ["fast", "slow"].index(key[0]))
        assert row["inference_seconds"] == pytest.approx(latency)
        assert row["inference_usd_per_10k"] == pytest.approx(latency * 10_000 / HOUR * 7.2)
        assert row["inference_runs"] == 9
    assert np.isfinite(table.loc[("fast", "digits_mlp"), "cost_to_target"])


def test_gpu_energy_is_the_median_over_the_runs_that_measured_it():
    rows = [{"algorithm": "a", "workload": "w", "study": 0, "trial": t, "time": 10.0 + t,
             "index": 1, "energy_joules": joules} for t, joules in enumerate((100.0, 300.0, None))]
    rows.append({"algorithm": "b", "workload": "w", "study": 0, "trial": 0, "time": 20.0,
                 "index": 1})
    runs = runs_table(rows)
    prices = costs.PriceTable({"none": costs.Price(1.0, "test")})
    table = costs.cost_table(final_cube(runs), runs, prices).set_index("algorithm")
    assert table.loc["a", "energy_joules"] == pytest.approx(200.0)  # the unmeasured run is out
    assert math.isnan(table.loc["b", "energy_joules"])


def test_a_missing_price_is_flagged_never_zero():
    runs = runs_table([
        {"algorithm": "a", "workload": "w", "study": 0, "trial": 0, "time": 3600.0, "index": 2,
         "hardware": "mystery GPU x4"},
        {"algorithm": "a", "workload": "w", "study": 1, "trial": 0, "time": 7200.0, "index": 3,
         "hardware": "synthetic CPU x1"},
        {"algorithm": "b", "workload": "w", "study": 0, "trial": 0, "time": 1800.0, "index": 1,
         "hardware": "synthetic CPU x1"},
    ])
    prices = costs.PriceTable.defaults(runs["hardware"])
    assert prices.missing(runs["hardware"]) == ["mystery GPU x4"]
    table = costs.cost_table(final_cube(runs), runs, prices).set_index("algorithm")
    assert table.loc["a", "unpriced"] and math.isnan(table.loc["a", "cost_to_target"])
    assert table.loc["a", "hardware"] == "mystery GPU x4, synthetic CPU x1"
    assert table.loc["a", "time_to_target"] == pytest.approx(5400.0)  # the time is still known
    assert table.loc["b", "cost_to_target"] == pytest.approx(0.5)     # 0.5 h x $1/h
    priced = prices.with_price("mystery GPU x4", 4.0)                 # 1 h x $4 and 2 h x $1
    table = costs.cost_table(final_cube(runs), runs, priced).set_index("algorithm")
    assert table.loc["a", "cost_to_target"] == pytest.approx((4.0 + 2.0) / 2)


# -- Pareto fronts and speedups at quality ---------------------------------------------------
def test_pareto_front_by_hand():
    cost = [1.0, 2.0, 3.0, 4.0, 5.0, 2.0, np.nan, 0.5]
    quality = [0.5, 0.7, 0.6, 0.9, 0.9, 0.7, 1.0, np.nan]
    on = costs.pareto_front(cost, quality, "max")
    # (1, .5), (2, .7) once of its two copies, (4, .9); (3, .6) and (5, .9) are beaten
    assert np.flatnonzero(on).tolist() == [0, 1, 3]
    loss = [0.9, 0.5, 0.6, 0.2, 0.2, 0.5, 0.0, np.nan]  # lower is better
    assert np.flatnonzero(costs.pareto_front(cost, loss, "min")).tolist() == [0, 1, 3]
    with pytest.raises(ValueError, match="valid are"):
        costs.pareto_front(cost, quality, "up")


def _curves(rows: dict[tuple[str, int], tuple[list[float], list[float]]]) -> pd.DataFrame:
    """best_so_far-shaped rows from {(algorithm, study): (costs, qualities)}."""
    out = []
    for (algorithm, study), (cost, quality) in rows.items():
        best = np.maximum.accumulate(quality)
        out += [{"run_id": f"{algorithm}-{study}", "algorithm": algorithm, "study": study,
                 "eval_index": k, "train_seconds": c * HOUR, "cost_usd": c, "quality": q}
                for k, (c, q) in enumerate(zip(cost, best))]
    return pd.DataFrame(out)


def test_cost_to_quality_median_over_studies_and_speedup_by_hand():
    curves = _curves({
        ("ref", 0): ([1, 2, 3, 4], [0.1, 0.5, 0.6, 0.9]),
        ("ref", 1): ([2, 4, 6, 8], [0.2, 0.6, 0.4, 0.8]),   # best so far: .2 .6 .6 .8
        ("new", 0): ([1, 2], [0.6, 0.95]),
        ("new", 1): ([1, 3], [0.4, 0.9]),
    })
    grid = [0.5, 0.8, 0.9, 0.95]
    per_run = costs.cost_to_quality(curves, grid, "max")
    assert per_run.sel(run="ref-1").values.tolist() == [4, 8, math.inf, math.inf]
    medians = costs.median_cost_to_quality(per_run)
    assert medians.sel(algorithm="ref").values.tolist() == [3, 6, math.inf, math.inf]
    assert medians.sel(algorithm="new").values.tolist() == [2.0, 2.5, 2.5, math.inf]
    s = costs.speedup_at_quality(medians, "ref")
    assert s.dims == ("algorithm", "quality")
    assert s.sel(algorithm="new").values[:2].tolist() == [1.5, 2.4]
    assert np.isnan(s.sel(algorithm="new").values[2:]).all()  # the reference never got there
    assert s.sel(algorithm="ref").values[:2].tolist() == [1.0, 1.0]
    with pytest.raises(ValueError, match="unknown reference"):
        costs.speedup_at_quality(medians, "old")


def test_speedup_at_the_target_is_the_ratio_of_median_costs_to_target(store):
    """Reading each study's chosen trial from eval rows gives exactly the cost to target."""
    runs = query.runs_frame(store)
    cube = final_cube(runs)
    prices = costs.PriceTable.defaults(runs["hardware"])
    table = costs.cost_table(cube, runs, prices).set_index(["algorithm", "workload"])
    picked = costs.curve_runs(cube)
    assert len(picked) == 2 * 2 * 3  # one run per (algorithm, workload, study)
    for workload in ("digits_mlp", "digits_cnn"):
        ids = picked.loc[picked["workload"] == workload, "run_id"]
        mine = runs[runs["run_id"].isin(ids)]
        curves = costs.best_so_far(query.evals_frame(store, ids), mine, prices, "validation/accuracy", "max")
        target = float(mine["target_validation"].iloc[0])
        medians = costs.median_cost_to_quality(costs.cost_to_quality(curves, [target], "max"))
        for algorithm in ("fast", "slow"):
            expected = table.loc[(algorithm, workload), "cost_to_target"]
            assert medians.sel(algorithm=algorithm).item() == pytest.approx(expected)
        s = costs.speedup_at_quality(medians, "slow").sel(algorithm="fast").item()
        ratio = table.loc[("slow", workload), "cost_to_target"] / \
            table.loc[("fast", workload), "cost_to_target"]
        assert s == pytest.approx(ratio) if np.isfinite(ratio) else np.isnan(s)


def test_quality_grid_spans_first_evals_to_the_best_and_keeps_the_target():
    curves = _curves({("a", 0): ([1, 2, 3], [0.2, 0.5, 0.7]), ("a", 1): ([1, 2], [0.4, 0.9])})
    grid = costs.quality_grid(curves, "max", num=5, include=[0.61, 2.0])
    assert grid[0] == pytest.approx(0.3) and grid[-1] == pytest.approx(0.9)  # median first: .3
    assert 0.61 in grid and 2.0 not in grid and len(grid) == 6


# -- inference latency -----------------------------------------------------------------------
def test_inference_latency_is_a_positive_median_and_restores_the_mode(one_thread):
    import torch

    from runners.run.inference import inference_latency, measure_after_run

    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))
    model.train()
    calls = []
    model.register_forward_hook(lambda m, args, out: calls.append(args[0].shape[0]))
    seconds = inference_latency(model, torch.randn(10, 8), torch.device("cpu"), repeats=20,
                                warmup=3)
    assert 0 < seconds < 1.0
    assert calls == [1] * 23 and model.training  # batch 1 every time; train mode restored

    class NoInputs:
        spec = type("Spec", (), {"name": "opaque"})()

    latency, note = measure_after_run(model, NoInputs(), torch.device("cpu"), "complete")
    assert latency is None and "exposes no validation inputs" in note
    assert measure_after_run(model, NoInputs(), torch.device("cpu"), "diverged") == \
        (None, "not measured: the run ended diverged")


def test_the_loop_records_inference_seconds_in_run_json(tmp_path, one_thread):
    from runners.run.loop import run
    from workbench.spec import RunConfig
    from workbench.store import open_store

    store = open_store(tmp_path / "store", create=True)
    run_id = run(RunConfig("synthetic", "adamw", max_steps=20, stop_on_target=False), store)
    doc = store.run_doc(run_id)
    assert doc["status"] == "complete" and doc["inference_note"] is None
    assert 0 < doc["inference_seconds"] < 0.5
    assert query.runs_frame(store).set_index("run_id").loc[run_id, "inference_seconds"] == \
        pytest.approx(doc["inference_seconds"])


# -- the view --------------------------------------------------------------------------------
def _drawn_plots(view) -> list[bool]:
    """Per plot of the Costs view: whether one of its figures is shown with something drawn."""
    out = []
    for plots in view._live.values():
        shown = [p for p in plots.values() if p.pane.visible]
        out.append(len(shown) == 1 and bool(len(shown[0].source.data["xs"])))
    return out


def test_costs_view_renders_follows_price_edits_and_flags_missing_prices(store):
    from workbench.views.costs import (NOT_PRICED, Costs, cost_frame, figures, significant,
                                       train_time_cube, usd)
    from workbench.views.selection import Selection

    selection = Selection(store_path=str(store.root))
    view = Costs(selection=selection)
    assert pn.panel(view).get_root() is not None
    assert view._prices.value["hardware"].tolist() == ["synthetic CPU x1"]
    assert not view._notice.visible
    hand = _hand_median_times(store)
    before = cost_frame(selection, view.prices).set_index(["algorithm", "workload"])
    # a CPU at its default example price: core-seconds (1 core), not "$0.000..."
    assert before.loc[("fast", "digits_mlp"), "cost_to_target"] == \
        f"{significant(hand[('fast', 'digits_mlp')])} core-s"
    assert before.loc[("fast", "digits_mlp"), "inference_ms"] == "1 ms"

    edited = view._prices.value.copy()
    edited.loc[0, "usd_per_hour"] = 3600.0  # one dollar per second: costs read as seconds
    view._prices.value = edited
    assert view._prices.value["source"].tolist() == ["edited in the dashboard"]
    after = cost_frame(selection, view.prices).set_index(["algorithm", "workload"])
    assert after.loc[("fast", "digits_mlp"), "cost_to_target"] == \
        usd(hand[("fast", "digits_mlp")])
    selection.time_axis = "step"  # the sidebar's time axis never changes what training costs
    steps = selection.cube["time_to_target"]
    assert not steps.equals(train_time_cube(selection)["time_to_target"])
    assert cost_frame(selection, view.prices).equals(after.reset_index())
    selection.time_axis = "train_seconds"
    title, table = view._overview.objects  # one table per group of workloads: scored
    assert "Scored" in title.object
    overview = table.value.set_index("algorithm")  # algorithm x workload
    assert overview.loc["fast", "digits_mlp"] == usd(hand[("fast", "digits_mlp")])
    assert overview.loc["slow", "digits_cnn"] == usd(hand[("slow", "digits_cnn")])
    view.workload = "digits_cnn"
    detail = view._detail.objects[0].value  # the picked workload's rows, cheapest first
    assert detail["algorithm"].tolist() == ["fast", "slow"] and "workload" not in detail
    assert detail["inference_ms"].tolist() == ["1 ms", "2 ms"]

    cleared = view._prices.value.copy()
    cleared.loc[0, "usd_per_hour"] = np.nan  # an emptied price falls back to the default
    view._prices.value = cleared
    assert view.prices.usd_per_hour("synthetic CPU x1") == 1.0

    view._edited.clear()
    selection.param.update(algorithms=["fast"])  # the price table follows the filters
    unpriced = costs.PriceTable()  # as if no rule knew the hardware
    frame = cost_frame(selection, unpriced)
    # a CPU's cost needs no price: its core-seconds
    assert all(t == "miss" or t.endswith(" core-s") for t in frame["cost_to_target"])
    assert set(frame["algorithm"]) == {"fast"}

    plots = figures(selection)
    assert sorted(plots) == sorted(f"{kind}_{w}" for kind in ("cost_pareto", "cost_quality")
                                   for w in ("digits_cnn", "digits_mlp"))  # no reference pair
    selection.param.update(algorithms=["fast", "slow"])
    assert len(figures(selection)) == 6
    assert _drawn_plots(view) == [True] * 3


def test_missing_price_notice_names_the_hardware(tmp_path):
    import json

    from workbench.views.costs import NOT_PRICED, Costs, cost_frame
    from workbench.views.selection import Selection

    path = tmp_path / "store"
    make_store(path, algorithms=("a",), workloads=("digits_mlp",), studies=1, trials=2)
    for doc_path in (path / "runs").glob("*/run.json"):  # as if measured on an unknown box
        doc = json.loads(doc_path.read_text())
        doc_path.write_text(json.dumps({**doc, "hardware": "TPU v9 x8"}))
    selection = Selection(store_path=str(path))
    view = Costs(selection=selection)
    assert view._notice.visible and "No price for TPU v9 x8:" in markdown_text(view._notice.object)
    assert cost_frame(selection, view.prices)["cost_to_target"].tolist() == [NOT_PRICED]
    assert view._prices.value["usd_per_hour"].isna().all()  # its row waits for a price
    typed = view._prices.value.copy()
    typed.loc[0, "usd_per_hour"] = 10.0
    view._prices.value = typed
    assert not view._notice.visible
    assert cost_frame(selection, view.prices)["cost_to_target"].iloc[0].startswith("$")


@pytest.mark.slow
def test_costs_on_the_imported_algoperf_v05_logs(algoperf_v05):
    """The real v0.5 logs: every run priced as 8 x V100; a cost to target is the leaderboard's
    median time x $24.48 / h; the view and its figures build."""
    from workbench import scoring
    from workbench.views.costs import Costs, figures
    from workbench.views.selection import Selection

    selection = Selection(store_path=str(algoperf_v05.path))
    view = Costs(selection=selection)
    assert view._prices.value["hardware"].tolist() == ["8x Tesla V100-SXM2-16GB"]
    assert not view._notice.visible
    table = costs.cost_table(selection.cube, selection.runs, view.prices) \
        .set_index(["algorithm", "workload"])
    times = scoring.workload_times(selection.cube)
    for algorithm, workload in [("shampoo_submission", "wmt"), ("baseline", "ogbg")]:
        seconds = float(times.sel(algorithm=algorithm, workload=workload))
        assert table.loc[(algorithm, workload), "cost_to_target"] == \
            pytest.approx(seconds / HOUR * 24.48)
    assert pn.panel(view).get_root() is not None
    view.workload = "wmt"
    assert _drawn_plots(view) == [True] * 3
    plots = figures(selection)
    assert "speedup_at_quality_wmt" in plots and "cost_pareto_criteo1tb" in plots


def test_money_is_never_written_in_scientific_notation():
    from workbench.views.costs import usd

    assert [usd(v) for v in (1234.5, 12.345, 0.5, 0.0123, 2.46e-6, 1e-12, 0.0, 999.7)] == [
        "$1,230", "$12.3", "$0.500", "$0.0123", "$0.00000246", "< $0.000000001", "$0", "$1,000"]
