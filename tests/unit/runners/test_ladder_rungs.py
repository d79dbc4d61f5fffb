"""The ladder's rungs: catalog data, analytic counts equal to the built model's, FLOPs checked
against the op counter."""
from __future__ import annotations

import torch

from runners.run.flops import count_step_flops
from runners.workloads import build_workload
from runners.workloads.ladder import LadderGPT, counted_counts
from workbench.catalog import (CATALOG, GENERATED_VOCAB, LADDER, TOKENS_PER_PARAM, get_workload,
                               ladder_rungs, rung_counts)


def test_rungs_are_catalog_entries_ordered_by_size_about_4x_apart():
    rungs = ladder_rungs()
    assert [w.name for w in rungs] == list(LADDER) and all(w.name in CATALOG for w in rungs)
    sizes = [rung_counts(w)["non_embedding_params"] for w in rungs]
    assert 5_000 <= sizes[0] <= 25_000 and sizes[-1] >= 100_000_000
    assert all(3.5 <= b / a <= 4.5 for a, b in zip(sizes, sizes[1:])), sizes
    for w in rungs:  # the step hint is the 1x Chinchilla budget at the rung's batch size
        tokens = w.step_hint * w.batch_size * w.model["block_size"]
        n = rung_counts(w)["non_embedding_params"]
        assert TOKENS_PER_PARAM * n <= tokens < TOKENS_PER_PARAM * n + w.batch_size * \
            w.model["block_size"]


def test_counted_parameters_equal_the_analytic_ones_for_every_rung():
    for w in ladder_rungs():
        m = w.model
        with torch.device("meta"):  # the 113 M rung costs nothing on the meta device
            model = LadderGPT(GENERATED_VOCAB, m["block_size"], m["n_layer"], m["n_head"],
                              m["n_embd"])
        analytic = rung_counts(w)
        assert counted_counts(model) == {k: analytic[k] for k in ("non_embedding_params",
                                                                  "params")}, w.name
    assert rung_counts(get_workload("gpt_7k"), vocab_size=65)["params"] == \
        rung_counts(get_workload("gpt_7k"))["params"] + 24  # one more token, 24 wide


def test_analytic_flops_match_the_op_counter_on_the_smallest_rung():
    """The counter adds attention's recomputed scores in the backward pass (2 T d per token and
    layer, runners/run/flops.py); everything else agrees exactly."""
    spec = get_workload("gpt_7k")
    workload = build_workload(spec)
    model = workload.init_model(0)
    counted = count_step_flops(model, workload, batch_size=4, seed=0)
    m = spec.model
    tokens = 4 * m["block_size"]
    recompute = 2 * m["n_layer"] * m["block_size"] * m["n_embd"]
    assert counted == (rung_counts(spec)["flops_per_token"] + recompute) * tokens


def test_ladder_list_json_prints_every_rung_with_its_counts(capsys):
    import json

    from runners.cli import main

    assert main(["ladder", "--list", "--json"]) == 0
    rungs = json.loads(capsys.readouterr().out)["rungs"]
    assert [r["name"] for r in rungs] == [w.name for w in ladder_rungs()]
    for r in rungs:
        assert r == {"name": r["name"], **rung_counts(get_workload(r["name"]))}
    assert main(["ladder", "--list"]) == 0
    assert "gpt_113m" in capsys.readouterr().out
    assert main(["ladder"]) == 2  # nothing asked: one line saying what is valid
    assert capsys.readouterr().err.count("\n") == 1


def test_budget_steps_cover_the_budget_s_tokens():
    import pytest

    from workbench.catalog import budget_steps

    for w in ladder_rungs():
        assert budget_steps(w, 1) == w.step_hint
        tokens = 4 * TOKENS_PER_PARAM * rung_counts(w)["non_embedding_params"]
        steps = budget_steps(w, 4, batch_size=8)
        per_step = 8 * w.model["block_size"]
        assert (steps - 1) * per_step < tokens <= steps * per_step
    with pytest.raises(ValueError, match="bad budget -1"):
        budget_steps(get_workload("gpt_7k"), -1)
