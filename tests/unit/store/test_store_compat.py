"""Old stores still read: a store written by schema 1 (tests/fixtures/store_v1, written at commit
0d44606) gives the same run table, its trials keep their keys, and --resume skips them."""
from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pandas as pd
import pytest

from runners.launch.study import run_configs
from workbench import query
from workbench import records as R
from workbench.run_index import refresh_index
from workbench.spec import RunConfig
from workbench.store import open_store

from locations import FIXTURES

FIXTURE = FIXTURES / "store_v1"
EXPECTED = json.loads((FIXTURE / "expected.json").read_text())


@pytest.fixture
def v1_store(tmp_path):
    """A copy of the schema-1 store (reading may not write, but a test may)."""
    shutil.copytree(FIXTURE / "store", tmp_path / "store")
    return open_store(tmp_path / "store")


def _plain(value):
    """A run-table cell as a plain Python value (None for NaN, NA and null)."""
    if value is None or (not isinstance(value, (str, dict)) and pd.isna(value)):
        return None
    return value.item() if hasattr(value, "item") else value


def _same(value, expected) -> bool:
    if isinstance(expected, float) and value is not None:
        return math.isclose(value, expected, rel_tol=1e-9)
    return value == expected


@pytest.mark.parametrize("index", [True, False], ids=["with-index", "from-folders"])
def test_a_schema_1_store_reads_as_it_did(v1_store, index):
    if not index:
        shutil.rmtree(v1_store.root / R.INDEX_DIR)
    runs = query.runs_frame(v1_store)
    assert {json.loads(p.read_text())["schema_version"]
            for p in map(Path, v1_store.doc_paths(runs["run_id"]))} == {1}
    rows = runs.set_index("run_id")
    assert sorted(rows.index) == sorted(r["run_id"] for r in EXPECTED["runs"])
    for expected in EXPECTED["runs"]:
        row = rows.loc[expected["run_id"]]
        for column, value in expected.items():
            if column == "run_id":
                continue
            got = _plain(row[column])
            assert _same(got, value), (expected["run_id"], column, got, value)
    assert len(query.evals_frame(v1_store)) == EXPECTED["eval_rows"]
    assert len(query.train_frame(v1_store)) == EXPECTED["train_rows"]


def test_schema_1_configs_keep_their_trial_keys(v1_store):
    docs = list(v1_store.documents(source="pacebench"))
    real = [d for d in docs if d["study_name"] == "real"]
    assert len(real) == 3 and all("threads" in d["config"] for d in real)  # the flat form
    for doc in docs:
        config = RunConfig.from_dict(doc["config"])
        assert config.trial_key == doc["trial_key"], doc["run_id"]
        assert config.to_dict()["execution"]["threads"] == doc["config"].get("threads", 1)


def test_resume_on_a_schema_1_store_skips_its_done_trials(v1_store):
    done = [RunConfig.from_dict(d["config"]) for d in v1_store.documents(study_name="real")
            if d["status"] in R.DONE_STATUSES]
    assert len(done) == 2
    result = run_configs(done, v1_store, "real", resume=True, progress=False)
    assert (result.skipped, result.succeeded, result.failed) == (2, 0, [])


def test_new_runs_beside_old_ones_are_of_the_current_schema_and_the_index_takes_both(v1_store, one_thread):
    from runners.run.loop import run

    run_id = run(RunConfig("synthetic", "adamw", study_name="new", max_steps=10), v1_store)
    doc = json.loads(Path(v1_store.doc_paths([run_id])[0]).read_text())
    assert doc["schema_version"] == R.SCHEMA_VERSION == 3
    assert doc["config"]["execution"] == {"device": "cpu", "precision": "fp32", "compile": False,
                                          "compile_mode": "default", "channels_last": False,
                                          "threads": 1}
    before = query.runs_frame(v1_store)
    # the fixture's index is of version 1 (RUN_COLUMNS have changed since): it is not read, and
    # the refresh indexes every finished run anew: the 7 old ones and the new one (the 8th old
    # run's document still says `running`: it reads as interrupted, and is never indexed)
    assert refresh_index(v1_store) == 8
    assert refresh_index(v1_store) == 0
    assert query.runs_frame(v1_store).equals(before)
