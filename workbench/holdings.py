"""What a store holds, study by study: time-to-target studies, model-size ladders, scaling
(batch-size and sparsity) studies, and early-stopping data. The dashboard and the report show
the tabs these can fill first and the others under "more" (workbench/views/registry.py), and
`pacebench score` points a ladder-only store to `pacebench ladder --summary`.

A study's kind is read from one run document per study (its config's ladder record, runners/
ladder.py) and from the study's summary document (kind "scaling", runners/procedures/scaling_study.py), so
a store of 100,000 runs costs one read per study, not per run.
"""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from workbench import ladder_reads

__all__ = ["Holdings", "holdings", "store_holdings", "study_kinds", "KINDS", "ladder_pointer",
           "LADDER_NOTE"]

# What the Leaderboard says instead of advice on a ladder-only store (its zeros are by design).
LADDER_NOTE = ("This store holds a model-size ladder: its runs are compared by final loss at "
               "fixed token budgets (the Ladder tab; `pacebench ladder --summary`), not by time "
               "to target, so every score here is 0 by design.")
# A study's kind: what its runs measure.
KINDS = ("time_to_target", "ladder", "scaling")


@dataclass(frozen=True)
class Holdings:
    """The study kinds of a store's runs and whether early-stopping data exists."""

    kinds: frozenset[str]        # of KINDS; empty for a store without runs
    early_stopping: bool         # the early-stopping tuner's documents (records.EARLY_STOP_DIR)
    variants: bool = False       # a workload variant (not "base") is among the runs

    @property
    def ladder_only(self) -> bool:
        """Only model-size ladders: nothing has a time to target worth scoring."""
        return self.kinds == frozenset({"ladder"})


def study_kinds(store, runs: pd.DataFrame) -> dict[str, str]:
    """{study name: its kind (KINDS)} of the studies of `runs` (a runs_frame)."""
    if runs.empty:
        return {}
    first = runs.drop_duplicates("study_name")[["study_name", "run_id"]]
    ladders = ladder_reads.ladder_records(store, first["run_id"].tolist())
    kinds = {}
    for study, run_id in zip(first["study_name"], first["run_id"]):
        summary = store.study_summary(str(study)) or {}
        if run_id in ladders or summary.get("kind") == "ladder":
            kinds[str(study)] = "ladder"
        elif summary.get("kind") == "scaling":
            kinds[str(study)] = "scaling"
        else:
            kinds[str(study)] = "time_to_target"
    return kinds


def holdings(store, runs: pd.DataFrame) -> Holdings:
    """What the runs `runs` (a runs_frame of `store`) hold (see the module doc)."""
    kinds = study_kinds(store, runs)
    studies = sorted(kinds)
    early = any(store.has_early_stop_docs(s) for s in studies)
    variants = bool((runs["variant"].fillna("base").astype(str) != "base").any()) \
        if "variant" in runs else False
    return Holdings(frozenset(kinds.values()), early, variants)


def store_holdings(selection) -> Holdings:
    """What the store of a dashboard Selection (workbench/views/selection.py) holds, once per
    read of it; a store without runs holds nothing."""
    def make() -> Holdings:
        store, runs = selection.store, selection._runs
        if store is None or runs.empty:
            return Holdings(frozenset(), False)
        return holdings(store, runs)
    return selection.cached("holdings", make, "read")


def ladder_pointer(store_root) -> str:
    """The one line that says a store holds a ladder and what reads it."""
    return (f"store {store_root} holds a model-size ladder, compared by final loss at fixed "
            f"token budgets, not by time to target: use `pacebench ladder --summary --store "
            f"{store_root}`")
