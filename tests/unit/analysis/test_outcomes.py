"""The first hit and the final value of a run (workbench/outcomes.py): hand-computed cases, and
every other reader of eval rows checked against the owner on the same rows."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from workbench import ladder_reads, query
from workbench import records as R
from workbench.outcomes import final_rows, first_hit, first_hit_positions
from workbench.spec import relaxed_goal
from workbench.store import open_store

NAN, INF = math.nan, math.inf


@pytest.mark.parametrize("values, seconds, goal, direction, relax, expected", [
    ([0.5, 0.9, 0.95], None, 0.9, "max", 0.0, 1),        # a value equal to the goal meets it
    ([0.95, 0.97, 0.99], None, 0.9, "max", 0.0, 0),      # the first, not the best
    ([NAN, INF, 0.91], None, 0.9, "max", 0.0, 2),        # NaN and +inf never meet
    ([2.0, -INF, 1.0], None, 1.0, "min", 0.0, 2),        # -inf never meets a min goal
    ([0.95, 0.95], [-1.0, 3.0], 0.9, "max", 0.0, 1),     # an unusable clock does not count
    ([0.95, 0.95], [NAN, NAN], 0.9, "max", 0.0, None),
    ([0.5, 0.85, 0.95], None, 0.9, "max", 0.1, 1),       # relaxed: 0.81 is the goal
    ([1.2, 1.05, 0.9], None, 1.0, "min", 0.1, 1),        # relaxed: 1.1 is the goal
    ([0.5, 0.6], None, 0.9, "max", 0.0, None),
    ([], None, 0.9, "max", 0.0, None),
])
def test_first_hit_by_hand(values, seconds, goal, direction, relax, expected):
    assert first_hit(values, goal, direction, seconds, relax) == expected


def test_positions_run_by_run():
    values = np.array([[0.1, 0.95, 0.99], [NAN, NAN, NAN], [0.99, 0.1, 0.99]])
    assert first_hit_positions(values, 0.9, "max").tolist() == [1, -1, 0]


def _doc(key, direction, target):
    metric = "accuracy" if direction == "max" else "loss"
    return {"trial_key": key, "workload": "w", "base_workload": "w", "variant": "base",
            "algorithm": "a", "study_name": "s", "ruleset": "external", "study": 0, "trial": 0,
            "seed": 0, "hparams": {}, "target_metric": metric, "target_direction": direction,
            "target_validation": target, "target_test": target}


def _random_store(path, rng, n=24):
    """Runs whose rows hit every branch: NaN, +-inf, values equal to the (relaxed) goal, both
    directions, negative and missing times, no rows; sealed runs whose documents carry no
    summary, so the run table's SQL reads their rows."""
    store = open_store(path, create=True)
    rows_of = {}
    for i in range(n):
        direction = ["max", "min"][i % 2]
        doc = _doc(f"r{i}", direction, 1.0)
        column = R.metric_column("validation", doc["target_metric"])
        rows = []
        for k in range(int(rng.integers(0, 7))):
            value = rng.choice([0.9, 1.0, 1.1, 0.95, 1.05, NAN, INF, -INF])
            rows.append({"eval_index": k, "step": 10 * (k + 1), "examples": 10 * (k + 1),
                         "train_seconds": float(rng.choice([k + 1.0, -1.0, NAN])),
                         "eval_seconds": 0.1, "wall_seconds": 2.0 * (k + 1),
                         column: float(value)})
        rng.shuffle(rows)  # rows in any order: eval order is by eval_index
        store.write_sealed_run({**doc, "status": "complete"},
                               pa.Table.from_pylist(rows) if rows else None, f"run{i}")
        rows_of[f"run{i}"] = (doc, rows)
    return store, rows_of


def _owner(doc, rows, relax):
    column = R.metric_column("validation", doc["target_metric"])
    rows = sorted(rows, key=lambda r: r["eval_index"])
    at = first_hit([r[column] for r in rows], doc["target_validation"], doc["target_direction"],
                   [r["train_seconds"] for r in rows], relax)
    return None if at is None else rows[at]


@pytest.mark.parametrize("relax", [0.0, 0.05])
def test_the_run_tables_sql_is_the_owner_on_the_same_rows(tmp_path, relax):
    store, rows_of = _random_store(tmp_path / "s", np.random.default_rng(1))
    runs = query.runs_frame(store)
    hits = query.first_hits(store, runs, relax).set_index("run_id")
    reached = 0
    for run_id, (doc, rows) in rows_of.items():
        row = _owner(doc, rows, relax)
        got = hits.loc[run_id]
        assert bool(got["reached_target"]) == (row is not None), run_id
        if row is not None:
            reached += 1
            assert got["eval_index_to_target"] == row["eval_index"]
            assert got["time_to_target"] == row["train_seconds"]
            assert got["step_to_target"] == row["step"]
    assert 5 < reached < len(rows_of) - 5  # both branches exercised


def test_the_sealed_summary_is_the_owner(tmp_path):
    _, rows_of = _random_store(tmp_path / "s", np.random.default_rng(2), n=30)
    for doc, rows in rows_of.values():
        rows = [{k: (None if k == "train_seconds" and math.isnan(v) else v)
                 for k, v in r.items()} for r in rows]  # a missing time, as a row writes it
        summary = R.eval_summary(rows, doc)
        row = _owner(doc, [{**r, "train_seconds": r["train_seconds"] if r["train_seconds"]
                            is not None else NAN} for r in rows], 0.0)
        assert summary["reached_target"] == (row is not None)
        assert summary["eval_index_to_target"] == (row and row["eval_index"])
        # an importer's rows come as a table's columns (SealedBatch.add): the same summary
        table = pa.Table.from_pylist(rows)
        assert R.eval_summary_of_columns(table.to_pydict(), doc) == summary


def test_scaling_and_target_setting_use_the_owner(tmp_path):
    from runners.procedures.target_setting import _summarise
    from workbench.cubes import curve_cube
    from workbench.scaling import first_hit_steps
    from workbench.spec import Target

    store, rows_of = _random_store(tmp_path / "s", np.random.default_rng(3), n=30)
    runs = query.runs_frame(store)
    evals = query.evals_frame(store)
    for direction in ("max", "min"):
        mine = runs[runs.target_direction == direction].reset_index(drop=True)
        metric = "validation/" + ("accuracy" if direction == "max" else "loss")
        steps = first_hit_steps(curve_cube(mine[["run_id"]], evals, [metric]), metric, 1.0,
                                direction)
        target = Target(metric.split("/")[1], direction, 1.0, 1.0)
        for run_id, got in zip(mine.run_id, steps.values):
            row = _owner(*rows_of[run_id], 0.0)
            assert (math.isnan(got) if row is None else got == row["step"]), run_id
            run = mine[mine.run_id == run_id].iloc[0].copy()
            run["train_seconds"] = 0.0
            summary = _summarise(run, evals.assign(**{
                f"test/{target.metric}": evals.get(metric)}), target)
            assert summary["step_at"](1.0) == (row and row["step"])


def test_relaxing_is_spec_relaxed_goal():
    assert first_hit([0.85], 0.9, "max", relax=0.05) == (0 if 0.85 >= relaxed_goal(
        0.9, "max", 0.05) else None)


def test_the_final_row_is_the_largest_eval_index_where_the_step_says_otherwise(tmp_path):
    """Two old rules disagreed: the ladder's runner took the largest step, the store's reader
    the largest eval index. A step may repeat or be missing; the eval index orders the rows."""
    from runners.procedures.ladder import _final_losses
    from workbench.ladder import LOSS_COLUMN

    rows = [{"eval_index": 0, "step": 100, "train_seconds": 1.0, LOSS_COLUMN: 3.0},
            {"eval_index": 1, "step": 200, "train_seconds": 2.0, LOSS_COLUMN: 2.5},
            {"eval_index": 2, "step": 150, "train_seconds": 2.1, LOSS_COLUMN: 2.4}]
    # the last eval's step went back (a resumed run's recount): the old runner rule took row 1
    evals = pd.DataFrame(rows).assign(run_id="x")
    assert evals.sort_values("step").groupby("run_id").tail(1)[LOSS_COLUMN].item() == 2.5
    assert final_rows(evals)[LOSS_COLUMN].item() == 2.4
    assert _final_losses(evals) == {"x": 2.4}
    store = open_store(tmp_path / "s", create=True)
    doc = {**_doc("k", "min", 1.0), "target_metric": "loss"}
    full = [{**r, "examples": 1, "eval_seconds": 0.1, "wall_seconds": 3.0} for r in rows]
    store.write_sealed_run({**doc, "status": "complete"}, pa.Table.from_pylist(full), "x")
    assert ladder_reads.last_evals(store, ["x"], LOSS_COLUMN)[LOSS_COLUMN].item() == 2.4
