"""The run index: the run table of finished runs kept as Parquet parts, refreshed by launchers and
importers, never by a read; it can never hide or change a run."""
from __future__ import annotations

import shutil

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from workbench import query, run_index
from workbench.run_index import refresh_index
from workbench.testing import make_store


def _row(k, **metrics):
    return {"eval_index": k, "step": 10 * (k + 1), "examples": 100 * (k + 1),
            "train_seconds": 2.0 * (k + 1), "eval_seconds": 0.5 * (k + 1),
            "wall_seconds": 3.0 * (k + 1), **metrics}


def test_a_read_never_writes_the_index(tmp_path):
    store = make_store(tmp_path / "s", algorithms=("a", "b", "c", "d"), studies=5, trials=5,
                       n_evals=4)
    assert len(query.runs_frame(store)) == 200
    assert store.index_parts() == []


def test_run_index_gives_the_same_table_and_never_hides_a_run(tmp_path):
    store = make_store(tmp_path / "s", interrupted=2, failed=2)
    from_folders = query.runs_frame(store)
    assert store.index_parts() == []  # a read never writes the index
    added = refresh_index(store)
    assert added == len(from_folders) - 2  # every run but the two `running` (interrupted) ones
    pd.testing.assert_frame_equal(query.runs_frame(store), from_folders)
    # A run folder that is gone drops out although the index lists it.
    gone = from_folders["run_id"].iloc[0]
    shutil.rmtree(store.run_path(gone))
    assert gone not in set(query.runs_frame(store)["run_id"])
    # An unreadable part is ignored: the runs are read from their folders.
    good = store.index_parts()[0]
    bad = good.with_name(good.name.replace(".parquet", "-bad.parquet"))
    bad.write_bytes(b"not parquet")
    expected = from_folders.iloc[1:].reset_index(drop=True)
    pd.testing.assert_frame_equal(query.runs_frame(store), expected)
    good.write_bytes(b"torn")
    pd.testing.assert_frame_equal(query.runs_frame(store), expected)
    # So is a part whose values are of other types (steps as text): it never blinds the store.
    table = pa.table({**{c: [None] for c in expected.columns if c != "steps"},
                      "steps": ["many"], "run_id": [expected["run_id"].iloc[0]]})
    pq.write_table(table, good.with_name(good.name.replace(".parquet", "-typed.parquet")))
    pd.testing.assert_frame_equal(query.runs_frame(store), expected)
    assert refresh_index(store) == len(expected) - 2  # bad parts are merged away
    assert len(store.index_parts()) == 1
    pd.testing.assert_frame_equal(query.runs_frame(store), expected)


def test_run_index_parts_merge(tmp_path, monkeypatch):
    store = make_store(tmp_path / "s", algorithms=("a",), workloads=("digits_mlp",), studies=1,
                       trials=2)
    monkeypatch.setattr(run_index, "MAX_INDEX_PARTS", 2)
    refresh_index(store)
    assert refresh_index(store) == 0 and len(store.index_parts()) == 1
    for k in range(2):  # two more finished runs, indexed one part each; the third part merges
        doc = {**store.run_doc(query.runs_frame(store)["run_id"].iloc[0]), "status": "complete"}
        rows = pa.Table.from_pylist([_row(0, **{"validation/accuracy": 0.95})])
        store.write_sealed_run(doc, rows, f"extra-{k}")
        assert refresh_index(store) == 1
    assert len(store.index_parts()) == 1
    assert sorted(query.runs_frame(store)["run_id"])[-2:] == ["extra-0", "extra-1"]
    assert len(query.runs_frame(store)) == 4
