"""Evals that do not dominate a ladder run (runners/procedures/ladder.py eval_plan): sized by the run when
--evals is not given, the same windows at every budget of a rung, and the loss exact over the
windows scored, a few per forward pass, whatever the vocabulary."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from runners.procedures.ladder import (EVAL_SHARE, MAX_EVAL_WINDOWS, catalog_rungs, eval_plan,
                                       eval_work_share, final_configs)
from workbench import records as R
from workbench.spec import LadderSpec

BUDGETS = (1.0, 2.0, 4.0, 8.0)


@pytest.fixture(scope="module")
def gpt2_tokens(tmp_path_factory):
    """A nanoGPT folder of token ids below GPT-2's 50,257."""
    folder = tmp_path_factory.mktemp("gpt2")
    rng = np.random.default_rng(0)
    for name, n in (("train.bin", 20_000), ("val.bin", 5_000)):
        rng.integers(0, 50_257, n).astype("<u2").tofile(folder / name)
    return str(folder)


def test_planned_eval_work_is_at_most_its_share_at_every_rung_and_budget(gpt2_tokens):
    rungs = catalog_rungs(gpt2_tokens)
    spec = LadderSpec(sizes=tuple(rungs), algorithms=("adamw",), budgets=BUDGETS,
                      data=gpt2_tokens)
    configs = final_configs(spec, rungs)
    assert len(configs) == len(rungs) * len(BUDGETS)
    for c in configs:
        share = eval_work_share(c.max_steps, c.batch_size, c.eval_every,
                                c.ladder["eval_windows"])
        assert share <= EVAL_SHARE <= 0.10, (c.workload, c.ladder["budget"], share)
    # what a gpt_7k run on these tokens planned before: 8 evals of 256 windows, eval FLOPs
    # about as large as training's (on a CPU it spent 483 of its 509 s in evals)
    old = LadderSpec(sizes=("gpt_7k",), algorithms=("adamw",), budgets=(1,), data=gpt2_tokens,
                     evals=8)
    [c] = final_configs(old, rungs)
    assert "eval_windows" not in c.ladder and c.eval_every == math.ceil(137 / 8)  # 256: default
    assert set(configs[0].ladder) == set(R.LADDER_FIELDS)  # a sized plan records its windows
    assert eval_work_share(c.max_steps, c.batch_size, c.eval_every, 256) > 0.9


def test_a_rung_scores_the_same_windows_at_every_budget_and_more_evals_when_longer():
    rungs = catalog_rungs("generated")
    spec = LadderSpec(sizes=("gpt_7k", "gpt_111k"), algorithms=("adamw",), budgets=BUDGETS)
    plans = {(c.workload, c.ladder["budget"]): (c.max_steps, c.eval_every,
                                                c.ladder["eval_windows"])
             for c in final_configs(spec, rungs)}
    # gpt_7k: 137 steps x 16 sequences at 1x; windows floor(137 x 16 / 20 / 4) = 27
    assert [plans[("gpt_7k", b)] for b in BUDGETS] == [
        (137, 35, 27), (273, 35, 27), (546, 69, 27), (1092, 137, 27)]  # 4, 8, 8, 8 evals
    assert {plans[("gpt_111k", b)][2] for b in BUDGETS} == {MAX_EVAL_WINDOWS}
    assert [math.ceil(s / e) for s, e, _ in (plans[("gpt_111k", b)] for b in BUDGETS)] == \
        [6, 8, 8, 8]
    # --evals N keeps its meaning: N evals of 256 windows
    assert eval_plan(LadderSpec(sizes=("gpt_7k",), algorithms=("adamw",), evals=3),
                     rungs["gpt_7k"], 137) == (46, 256)
    # a run far below budget 1 still gets its last eval
    assert eval_plan(LadderSpec(sizes=("gpt_7k",), algorithms=("adamw",)),
                     rungs["gpt_7k"], 3) == (3, 27)


def test_the_plans_windows_match_the_workloads_default():
    from runners.workloads.ladder import EVAL_WINDOWS

    assert MAX_EVAL_WINDOWS == EVAL_WINDOWS


def test_a_large_vocabulary_eval_is_exact_over_its_windows_a_few_per_pass(gpt2_tokens):
    import dataclasses

    from runners.workloads import build_workload
    from workbench.catalog import get_workload

    spec = get_workload("gpt_7k")
    spec = dataclasses.replace(spec, model={**spec.model, "data": gpt2_tokens,
                                            "eval_windows": 6})
    workload = build_workload(spec)
    assert workload._chunk == 1  # 64 x 50,257 logits a window: one window per pass on a CPU
    model = workload.init_model(0)
    inputs, targets = workload._eval["validation"]
    assert inputs.shape == (6, 64)
    with torch.no_grad():  # by hand: every logit of the six windows at once
        logits = model(inputs).flatten(0, 1)
        loss = torch.nn.functional.cross_entropy(logits.double(), targets.flatten()).item()
        accuracy = (logits.argmax(-1) == targets.flatten()).double().mean().item()
    metrics = workload.evaluate(model, "validation")
    assert metrics["loss"] == pytest.approx(loss, rel=1e-6)
    assert metrics["accuracy"] == pytest.approx(accuracy, abs=1e-12)
    assert abs(metrics["loss"] - math.log(50_257)) < 0.5 and model.training


@pytest.mark.parametrize("bad", ["many", 0, True])
def test_a_bad_eval_windows_knob_is_a_one_line_error(bad):
    import dataclasses

    from runners.workloads import build_workload
    from workbench.catalog import get_workload

    spec = get_workload("gpt_7k")
    spec = dataclasses.replace(spec, model={**spec.model, "eval_windows": bad})
    with pytest.raises(ValueError, match="model knob eval_windows=.*an integer >= 1"):
        build_workload(spec)
