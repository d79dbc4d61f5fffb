"""The stall rule (runners/run/stall.py): on hand-made eval rows, and on real runs that cannot learn."""
from __future__ import annotations

import pytest

from runners.run.loop import run
from runners.run.stall import FLAT_EVALS, MIN_USED, NO_PROGRESS, StallRule
from workbench import query
from workbench.cubes import final_cube
from workbench.spec import Budget, RunConfig, Target
from workbench.store import open_store

ACC = Target("accuracy", "max", validation=0.9, test=0.9)
BUDGET = Budget(seconds=1000.0, steps=1000)


def _rows(values, losses=None, every=50):
    """Eval rows every `every` steps (a tenth of a second each) with these accuracies/losses."""
    losses = losses or [1.0 - v for v in values]
    return [{"step": every * (i + 1), "train_seconds": 0.1 * (i + 1),
             "validation/accuracy": v, "validation/loss": l}
            for i, (v, l) in enumerate(zip(values, losses))]


def _first_stall(rule, rows):
    return next(((row["step"], why) for row in rows if (why := rule.check(row))), None)


def test_no_new_best_for_a_fifth_of_the_budget_and_three_evals_is_a_stall():
    # best at step 150 (u = 0.15), then worse and noisy: stalled once u - 0.15 >= 0.2 and 3 evals
    values = [0.3, 0.5, 0.6, 0.55, 0.58, 0.59, 0.57, 0.6, 0.58, 0.59]
    losses = [0.9, 0.7, 0.5, 0.55, 0.52, 0.51, 0.53, 0.5, 0.52, 0.51]
    step, why = _first_stall(StallRule(BUDGET, ACC), _rows(values, losses))
    assert step == 350 and "no new best" in why and "20 % of the budget" in why


def test_a_new_best_of_the_loss_alone_is_progress():
    # accuracy flat at 0.6 (a coarse metric), the loss still falling: never stalled
    values = [0.6] * 12
    losses = [1.0 - 0.01 * i for i in range(12)]
    assert _first_stall(StallRule(BUDGET, ACC), _rows(values, losses)) is None


def test_parameters_that_do_not_move_stop_the_run_at_a_tenth_of_the_budget():
    rows = _rows([0.1] * 6, [2.302585] * 6, every=25)  # u = 0.025 ... 0.15
    step, why = _first_stall(StallRule(BUDGET, ACC), rows)
    assert step == 100 and "flat" in why  # the first eval at u >= MIN_USED
    assert step / BUDGET.steps >= MIN_USED


def test_no_stall_once_the_target_is_met_nor_before_a_tenth_of_the_budget():
    rule = StallRule(BUDGET, ACC)
    assert _first_stall(rule, _rows([0.95] * 10)) is None  # met: its time is known
    early = _rows([0.2] * 4, [2.0] * 4, every=20)  # u <= 0.08
    assert _first_stall(StallRule(BUDGET, ACC), early) is None


def test_the_second_half_of_the_budget_is_left_alone():
    # improving until u = 0.4, then flat to the end: 0.4 + 0.2 is past half the budget
    values = [0.3 + 0.05 * i for i in range(8)] + [0.65] * 12
    losses = [1.0 - 0.05 * i for i in range(8)] + [0.62] * 12
    assert _first_stall(StallRule(BUDGET, ACC), _rows(values, losses)) is None


def test_sparse_evals_need_three_evals_without_progress():
    # evals every 30 % of the budget: one eval without a new best is not a stall
    rows = _rows([0.5, 0.4, 0.45, 0.4], [0.5, 0.6, 0.55, 0.6], every=300)[:3]
    assert _first_stall(StallRule(BUDGET, ACC), rows) is None
    assert FLAT_EVALS == 3 and NO_PROGRESS == 0.2


@pytest.mark.parametrize("stop_on_target", [True, False])
def test_a_run_with_learning_rate_zero_stalls_by_half_its_budget(tmp_path, one_thread,
                                                                 stop_on_target):
    store = open_store(tmp_path / "store", create=True)
    config = RunConfig("digits_mlp", "adamw", hparams={"learning_rate": 0.0},
                       stop_on_target=stop_on_target, max_steps=None if stop_on_target else 300)
    doc = store.run_doc(run(config, store))
    stalled_at = doc["stalled_at_step"]
    assert stalled_at is not None and stalled_at <= doc["budget_steps"] / 2
    if stop_on_target:
        assert doc["status"] == "stalled" and doc["steps"] == stalled_at
        assert doc["stop_reason"].startswith("stalled: validation loss flat")
        runs = query.runs_frame(store)
        cube = final_cube(runs)
        assert cube["time_to_target"].values.ravel()[0] == float("inf")  # a miss, not a gap
    else:  # trains to its end, and says where it stalled
        assert doc["status"] == "complete" and doc["steps"] == 300
