"""DuckDB queries over a store: the run table, time to target, eval and train rows."""
from __future__ import annotations

import json
import math
import shutil
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from workbench import query
from workbench import eval_clock as EC
from workbench.eval_clock import eval_clock
from workbench import records as R
from workbench.store import open_store
from workbench.testing import make_store


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return make_store(tmp_path_factory.mktemp("q") / "s", interrupted=2, failed=2)


def _doc(key, metric="accuracy", direction="max", target=0.9, workload="w"):
    return {"trial_key": key, "workload": workload, "base_workload": workload, "variant": "base",
            "algorithm": "a", "study_name": "s", "ruleset": "external", "study": 0, "trial": 0,
            "seed": 0, "hparams": {"lr": 0.5}, "target_metric": metric,
            "target_direction": direction, "target_validation": target, "target_test": target}


def _row(k, **metrics):
    return {"eval_index": k, "step": 10 * (k + 1), "examples": 100 * (k + 1),
            "train_seconds": 2.0 * (k + 1), "eval_seconds": 0.5 * (k + 1),
            "wall_seconds": 3.0 * (k + 1), **metrics}


def test_connect_is_fresh_in_memory():
    a, b = query.connect(), query.connect()
    a.execute("CREATE TABLE t AS SELECT 1 AS x")
    with pytest.raises(Exception):
        b.execute("SELECT * FROM t")


def test_empty_store_gives_empty_frames(tmp_path):
    store = open_store(tmp_path, create=True)
    runs = query.runs_frame(store)
    assert list(runs.columns) == list(R.RUN_COLUMNS) and len(runs) == 0
    assert list(query.evals_frame(store).columns) == list(R.EVAL_COLUMNS)
    assert list(query.train_frame(store).columns) == list(R.TRAIN_COLUMNS)


def test_runs_frame_columns_statuses_and_attempts(store):
    runs = query.runs_frame(store)
    assert list(runs.columns) == list(R.RUN_COLUMNS)
    assert len(runs) == 2 * 2 * 2 * 3 + 2  # trials + the failed first attempts
    assert runs["status"].value_counts().to_dict() == {"complete": 22, "failed": 2,
                                                        "interrupted": 2}
    assert all(isinstance(h, dict) and "learning_rate" in h for h in runs["hparams"])
    retried = runs[runs["trial_key"].isin(runs.loc[runs["status"] == "failed", "trial_key"])]
    assert sorted(retried["attempt"].tolist()) == [1, 1, 2, 2]
    assert runs["run_id"].is_unique and runs["run_id"].is_monotonic_increasing


def test_time_to_target_matches_the_planned_curves(store):
    runs = query.runs_frame(store).set_index("run_id")
    for run_id, row in runs.iterrows():
        doc = json.loads((store.runs_dir / run_id / R.RUN_DOC).read_text())
        planned, per_eval = doc["synthetic"]["hit_index"], doc["synthetic"]["seconds_per_eval"]
        n_rows = 20 if row["status"] == "complete" else 10
        hit = planned if planned is not None and planned < n_rows else None
        assert bool(row["reached_target"]) == (hit is not None), run_id
        if hit is None:
            assert pd.isna(row["eval_index_to_target"]) and math.isnan(row["time_to_target"])
        else:
            assert row["eval_index_to_target"] == hit
            assert row["time_to_target"] == pytest.approx((hit + 1) * per_eval)
            assert row["step_to_target"] == 25 * (hit + 1)


def test_summaries_agree_with_pandas_on_the_rows(store):
    runs = query.runs_frame(store).set_index("run_id")
    evals = query.evals_frame(store)
    for run_id, rows in evals.groupby("run_id"):
        r = runs.loc[run_id]
        value = rows[f"validation/{r['target_metric']}"]
        met = rows[value >= r["target_validation"]]  # all synthetic targets are "max"
        assert r["best_validation"] == pytest.approx(value.max())
        assert r["steps"] == rows["step"].max() and r["train_seconds"] == rows["train_seconds"].max()
        if len(met):
            assert r["eval_index_to_target"] == met["eval_index"].iloc[0]


def test_interrupted_runs_read_live_rows_and_fill_totals(store):
    runs = query.runs_frame(store)
    live = runs[runs["status"] == "interrupted"]
    assert len(live) == 2
    for run_id in live["run_id"]:
        assert (store.runs_dir / run_id / R.EVALS_LIVE).exists()
    assert (live["steps"] == 25 * 10).all()  # no totals in the document: max over the rows
    assert live["stop_reason"].str.contains("without sealing").all()
    evals = query.evals_frame(store, live["run_id"])
    assert len(evals) == 2 * 10 and evals["run_id"].notna().all()  # the torn lines are dropped
    assert len(query.train_frame(store, live["run_id"])) == 2 * 10


def test_target_boundary_nan_and_direction(tmp_path):
    store = open_store(tmp_path, create=True)
    with store.new_run(_doc("max")) as w:  # NaN never meets; == target meets (>=)
        for k, v in enumerate([0.5, float("nan"), 0.9, 0.95]):
            w.append_eval(_row(k, **{"validation/accuracy": v}))
    with store.new_run(_doc("min", "loss", "min", 2.0, workload="v")) as m:
        for k, v in enumerate([3.0, 2.0000001, 1.5, 1.9]):
            m.append_eval(_row(k, **{"validation/loss": v}))
    with store.new_run(_doc("never")) as n:
        n.append_eval(_row(0, **{"validation/accuracy": 0.1}))
    runs = query.runs_frame(store).set_index("trial_key")
    assert runs.loc["max", "eval_index_to_target"] == 2
    assert runs.loc["max", "time_to_target"] == 6.0 and runs.loc["max", "step_to_target"] == 30
    assert runs.loc["max", "best_validation"] == 0.95
    assert runs.loc["min", "eval_index_to_target"] == 2 and runs.loc["min", "best_validation"] == 1.5
    assert not runs.loc["never", "reached_target"]
    assert pd.isna(runs.loc["never", "eval_index_to_target"])
    assert runs.loc["never", "best_validation"] == 0.1
    evals = query.evals_frame(store)  # different metric columns across runs: a union, sorted
    assert list(evals.columns) == list(R.EVAL_COLUMNS) + ["validation/accuracy", "validation/loss"]
    assert evals["validation/accuracy"].isna().sum() == 1 + 4  # the NaN row and the loss run


def test_evals_frame_selects_runs_and_rejects_unknown_ids(store):
    runs = query.runs_frame(store)
    some = runs["run_id"].iloc[:3].tolist()
    evals = query.evals_frame(store, some)
    assert sorted(evals["run_id"].unique()) == sorted(some)
    assert evals.groupby("run_id")["eval_index"].apply(lambda s: s.is_monotonic_increasing).all()
    with pytest.raises(KeyError, match="no run 'missing'"):
        query.evals_frame(store, ["missing"])


def test_runs_frame_is_fast_on_a_larger_store(tmp_path):
    store = make_store(tmp_path / "big", algorithms=("a", "b", "c", "d"), studies=5, trials=5,
                       n_evals=20)
    start = time.perf_counter()
    runs = query.runs_frame(store)
    assert len(runs) == 200 and time.perf_counter() - start < 5.0
    assert np.isfinite(runs["best_validation"]).all()


def test_one_unreadable_run_is_skipped_by_name_never_the_whole_store(tmp_path, capsys):
    """A torn run.json, one not UTF-8 and a corrupt evals.parquet: the other runs read, the
    bad ones are named."""
    from runners.cli import main

    store = make_store(tmp_path / "s", algorithms=("fast", "slow"), workloads=("digits_mlp",),
                       studies=1, trials=3)
    torn, corrupt, binary, *good = store.run_ids()
    _drop_summary(store.runs_dir / corrupt)  # the run table reads the rows of this one
    doc = store.runs_dir / torn / R.RUN_DOC
    doc.write_text(doc.read_text()[:50])
    doc = store.runs_dir / binary / R.RUN_DOC
    doc.write_bytes(doc.read_bytes().replace(b'"digits_mlp"', b'"digits\xff_mlp"', 1))
    (store.runs_dir / corrupt / R.EVALS_SEALED).write_bytes(b"PAR1 not a parquet file")
    with pytest.warns(UserWarning) as caught:
        runs = query.runs_frame(store)
    assert sorted(runs.run_id) == sorted(good)
    named = " ".join(str(w.message) for w in caught)
    assert f"skipped run {torn}" in named and f"skipped run {corrupt}" in named
    assert f"skipped run {binary}" in named
    with pytest.warns(UserWarning, match=f"skipped run {corrupt}"):
        evals = query.evals_frame(store)
    assert corrupt not in set(evals.run_id) and set(good) <= set(evals.run_id)
    assert main(["score", "--store", str(store.root)]) == 0
    err = capsys.readouterr().err
    assert f"warning: skipped run {corrupt}: its files cannot be read" in err
    assert "Traceback" not in err


def _drop_summary(run: Path) -> None:
    """The run's document without its eval summary, as a store written before them has it: the
    run table computes the run's figures from its rows."""
    doc = json.loads((run / R.RUN_DOC).read_text())
    doc.pop(R.EVAL_SUMMARY)
    (run / R.RUN_DOC).write_text(json.dumps(doc))


def _doc_edit(**fields):
    def corrupt(run: Path) -> None:
        doc = json.loads((run / R.RUN_DOC).read_text())
        for key, value in fields.items():
            if value is _DROP:
                doc.pop(key, None)
            else:
                doc[key] = value
        (run / R.RUN_DOC).write_text(json.dumps(doc))
    return corrupt


_DROP = object()


def _live_evals(text: str):
    def corrupt(run: Path) -> None:
        (run / R.EVALS_SEALED).unlink()
        (run / R.EVALS_LIVE).write_text(text.replace("RUN", run.name))
    return corrupt


def _upper_metric(run: Path) -> None:
    import pyarrow.parquet as pq

    table = pq.read_table(run / R.EVALS_SEALED)
    pq.write_table(table.rename_columns([c.replace("validation/accuracy", "validation/ACCURACY")
                                         for c in table.column_names]), run / R.EVALS_SEALED)


def _times(value: float):
    """Every training time of the run set to `value`: it then never reaches its target."""
    def corrupt(run: Path) -> None:
        import pyarrow.parquet as pq

        table = pq.read_table(run / R.EVALS_SEALED)
        i = table.column_names.index("train_seconds")
        pq.write_table(table.set_column(i, "train_seconds", pa.array([value] * len(table))),
                       run / R.EVALS_SEALED)
    return corrupt


def _evals_with(column: str):
    def corrupt(run: Path) -> None:
        import pyarrow.parquet as pq

        table = pq.read_table(run / R.EVALS_SEALED)
        table = table.append_column(column, table["validation/accuracy"])
        pq.write_table(table, run / R.EVALS_SEALED)
    return corrupt


# A run of the store corrupted as a shared or half-written store could hold it: each is left
# out (True: named, and in runs_frame.attrs["skipped"]; every other run's score is what it is
# in the same store without that run), read without its bad rows (False: scores as in the store
# where the run has no rows; also for rows with times that are no times), or read as it was
# (None: a metric column in other letter case).
STORE_CORRUPTIONS = {
    "torn run.json": (lambda run: (run / R.RUN_DOC).write_text('{"run_id": "x", "sta'), True),
    "run.json a list": (lambda run: (run / R.RUN_DOC).write_text("[1, 2]"), True),
    "run.json empty": (lambda run: (run / R.RUN_DOC).write_text(""), True),
    "run.json of a future schema": (_doc_edit(schema_version=99), True),
    "run.json without schema version": (_doc_edit(schema_version=_DROP), True),
    "run.json without algorithm": (_doc_edit(algorithm=_DROP), True),
    "run.json with an unknown status": (_doc_edit(status="weird"), True),
    "run.json with a numeric algorithm": (_doc_edit(algorithm=7), True),
    "run.json with a text study": (_doc_edit(study="abc"), True),
    "run.json with a text target": (_doc_edit(target_validation="high"), True),
    "evals.parquet with minus infinite times": (_times(-math.inf), False),
    "evals.parquet with negative times": (_times(-1.0), False),
    "evals.parquet not Parquet": (lambda run: (run / R.EVALS_SEALED).write_bytes(b"PAR1 junk"),
                                  True),
    "evals.parquet empty file": (lambda run: (run / R.EVALS_SEALED).write_bytes(b""), True),
    "evals.parquet with the metric again in upper case": (
        _evals_with("validation/ACCURACY"), None),
    "evals.parquet with the metric only in upper case": (_upper_metric, None),
    "live evals torn first line": (_live_evals('{"run_id": "RUN", "eval_ind\n'), False),
    "live evals mistyped row": (_live_evals('{"run_id": "RUN", "eval_index": "zero", '
                                            '"step": "x", "train_seconds": "soon"}\n'), False),
}


@pytest.fixture(scope="module")
def scored_store(tmp_path_factory):
    return make_store(tmp_path_factory.mktemp("scored") / "s", algorithms=("fast", "slow"),
                      workloads=("digits_mlp", "digits_cnn"), studies=2, trials=2)


def _score_json(path: Path) -> dict:
    import contextlib
    import io

    from runners.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["score", "--store", str(path), "--json"]) == 0
    return json.loads(out.getvalue())


@pytest.mark.parametrize("case", list(STORE_CORRUPTIONS))
def test_a_corrupt_run_is_skipped_and_changes_no_other_score(scored_store, tmp_path, case):
    corrupt, skipped = STORE_CORRUPTIONS[case]
    victim = scored_store.run_ids()[0]  # its files are the first DuckDB reads
    without = tmp_path / "without"
    shutil.copytree(scored_store.root, without)
    _drop_summary(without / R.RUNS_DIR / victim)  # its figures come from its rows
    if skipped:  # the same store without the run
        shutil.rmtree(without / R.RUNS_DIR / victim)
    elif skipped is False:  # the same store with the run and none of its rows
        (without / R.RUNS_DIR / victim / R.EVALS_SEALED).unlink()
    shutil.copytree(scored_store.root, tmp_path / "bad")
    shutil.rmtree(tmp_path / "bad" / R.INDEX_DIR, ignore_errors=True)
    _drop_summary(tmp_path / "bad" / R.RUNS_DIR / victim)
    corrupt(tmp_path / "bad" / R.RUNS_DIR / victim)
    bad = open_store(tmp_path / "bad")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        runs = query.runs_frame(bad)
        evals = query.evals_frame(bad)
    named = [str(w.message) for w in caught if victim in str(w.message)]
    if skipped:
        assert victim not in set(runs.run_id) and victim in runs.attrs["skipped"], named
        assert named and len(named[0]) < 400
        assert victim not in set(evals.run_id)
    elif skipped is False:  # the bad live rows are dropped; the run is listed, without rows
        assert victim in set(runs.run_id) and not runs.set_index("run_id").loc[victim,
                                                                             "reached_target"]
    else:
        assert "validation/accuracy" in evals and not named
        assert evals.loc[evals.run_id == victim, "validation/accuracy"].notna().all()
    assert len(runs) == len(scored_store.run_ids()) - bool(skipped)
    expected, got = _score_json(without), _score_json(tmp_path / "bad")
    assert list(got.pop("skipped_runs")) == ([victim] if skipped else [])
    assert expected.pop("skipped_runs") == {} and got == expected


def test_bad_runs_are_found_by_halving_not_one_read_per_run(scored_store, tmp_path, monkeypatch):
    """A torn document among the store's 16 runs is skipped, and the search for it reads
    halves of the store, not each run alone (one bad file among thousands must not cost
    thousands of reads)."""
    shutil.copytree(scored_store.root, tmp_path / "bad")
    shutil.rmtree(tmp_path / "bad" / R.INDEX_DIR, ignore_errors=True)
    victim = scored_store.run_ids()[11]
    doc = tmp_path / "bad" / R.RUNS_DIR / victim / R.RUN_DOC
    doc.write_text(doc.read_text()[:40])
    reads = []
    read_docs = query._read_docs
    monkeypatch.setattr(query, "_read_docs", lambda con, files, root: (
        reads.append(len(files)), read_docs(con, files, root))[1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        runs = query.runs_frame(open_store(tmp_path / "bad"))
    assert len(scored_store.run_ids()) == 16 and list(runs.attrs["skipped"]) == [victim]
    assert len(runs) == 15
    # all 16, two halves at each of 4 levels, then the 15 good ones (one read per run: 18)
    assert len(reads) <= 1 + 2 * math.log2(16) + 1, reads


# -- the eval summary sealed into each run document (records.eval_summary) ---------------------
_FIGURES = ["reached_target", "eval_index_to_target", "time_to_target", "step_to_target",
            "wall_to_target", "best_validation", "steps", "train_seconds", "wall_seconds"]


def _random_runs(store, rng, n: int) -> None:
    """Runs with values, times and targets chosen to hit every branch of the first-hit rule:
    NaN, infinite and missing values, missing and negative times, both directions, ties with
    the target, no rows at all; half through RunWriter, half through write_sealed_run."""
    for i in range(n):
        direction = ["max", "min"][i % 2]
        doc = _doc(f"r{i}", "loss" if direction == "min" else "accuracy", direction,
                   float(rng.choice([0.5, 0.7])), workload=f"w{i % 3}")
        rows = []
        for k in range(int(rng.integers(0, 8))):
            value = rng.choice([0.5, 0.7, 0.3, 0.9, np.nan, np.inf, -np.inf, None])
            row = _row(k, **{f"validation/{doc['target_metric']}": None if value is None
                             else float(value)})
            row["train_seconds"] = rng.choice([row["train_seconds"], -1.0, None])
            row["wall_seconds"] = rng.choice([row["wall_seconds"], None])
            rows.append(row)
        if i % 2:
            with store.new_run(doc) as writer:
                for row in rows:
                    writer.append_eval(row)
        else:
            evals = pa.Table.from_pylist(rows) if rows else None
            store.write_sealed_run({**doc, "status": "complete"}, evals, f"sealed-{i}")


def test_the_sealed_summary_is_what_the_run_table_computes_from_the_rows(tmp_path):
    store = open_store(tmp_path / "s", create=True)
    _random_runs(store, np.random.default_rng(0), 80)
    docs = {r: store.run_doc(r) for r in store.run_ids()}
    assert all(R.EVAL_SUMMARY in d for d in docs.values())
    shutil.copytree(store.root, tmp_path / "old")
    for run_id in docs:
        _drop_summary(tmp_path / "old" / R.RUNS_DIR / run_id)
    sealed = query.runs_frame(store)
    computed = query.runs_frame(open_store(tmp_path / "old"))
    assert computed["reached_target"].sum() > 10 and (~computed["reached_target"]).sum() > 10
    pd.testing.assert_frame_equal(sealed[_FIGURES], computed[_FIGURES])


@pytest.mark.parametrize("summary", [
    "fast", [1, 2], {"target": ["accuracy", "max", 0.9]},
    "TARGET:other", "TARGET:min", "TARGET:0.1",
    {"reached_target": "yes"}, {"reached_target": True, "eval_index_to_target": None},
    {"time_to_target": -1.0}, {"time_to_target": True}, {"eval_index_to_target": 1.5},
    {"best_validation": "high"}, {"steps": -3}, {"reached_target": False}])
def test_a_summary_that_is_not_its_runs_is_not_used(tmp_path, summary):
    """A document whose summary is malformed, inconsistent or of another target: the run
    table computes that run's figures from its rows."""
    store = open_store(tmp_path / "s", create=True)
    with store.new_run(_doc("k")) as w:
        for k, v in enumerate([0.5, 0.95, 0.97]):
            w.append_eval(_row(k, **{"validation/accuracy": v}))
    path = store.runs_dir / store.run_ids()[0] / R.RUN_DOC
    doc = json.loads(path.read_text())
    truth = doc[R.EVAL_SUMMARY]
    if isinstance(summary, str) and summary.startswith("TARGET:"):
        target = {"other": ["loss", "max", 0.9], "min": ["accuracy", "min", 0.9],
                  "0.1": ["accuracy", "max", 0.1]}[summary[7:]]
        summary = {**truth, "target": target, "time_to_target": 0.001}
    elif isinstance(summary, dict) and "target" not in summary:
        summary = {**truth, **summary}
    doc[R.EVAL_SUMMARY] = summary
    path.write_text(json.dumps(doc))
    row = query.runs_frame(store).iloc[0]
    assert row["reached_target"] and row["eval_index_to_target"] == 1
    assert row["time_to_target"] == 4.0 and row["best_validation"] == 0.97


def test_rows_torn_after_sealing_leave_the_sealed_figures(tmp_path):
    """The run table reads a summarised run's figures from its document; the rows' reader still
    names the run whose rows it cannot read."""
    store = make_store(tmp_path / "s", algorithms=("fast",), workloads=("digits_mlp",),
                       studies=1, trials=2)
    before = query.runs_frame(store)
    victim = before["run_id"].iloc[0]
    (store.runs_dir / victim / R.EVALS_SEALED).write_bytes(b"PAR1 not a parquet file")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        after = query.runs_frame(store)
    pd.testing.assert_frame_equal(before, after)
    with pytest.warns(UserWarning, match=f"skipped run {victim}"):
        assert victim not in set(query.evals_frame(store).run_id)


def test_the_summary_is_the_rows_never_the_callers(tmp_path):
    store = open_store(tmp_path / "s", create=True)
    lie = {"target": ["accuracy", "max", 0.9], "reached_target": True, "time_to_target": 0.0}
    rows = pa.Table.from_pylist([_row(0, **{"validation/accuracy": 0.2})])
    assert store.write_sealed_run({**_doc("k"), "status": "complete", R.EVAL_SUMMARY: lie},
                                  rows, "one")
    assert store.run_doc("one")[R.EVAL_SUMMARY]["reached_target"] is False
    with pytest.raises(ValueError, match="eval summary are fixed"):
        store.amend("one", **{R.EVAL_SUMMARY: lie})
    assert not query.runs_frame(store)["reached_target"].any()


@pytest.mark.parametrize("rows", [
    [_row(0, **{"validation/accuracy": 0.95}), _row(0, **{"validation/accuracy": 0.2})],
    [{**_row(0), "validation/Accuracy": 0.95}],
    [{**_row(0, **{"validation/accuracy": 0.95}), "step": 2.5}],
    [_row(0, **{"validation/accuracy": "0.95"})]])
def test_rows_that_are_not_plain_get_no_summary(tmp_path, rows):
    """Rows the Python rule would have to guess about (an index twice, a metric in other case,
    a fractional step, a value as text): no summary, and the run table reads the rows."""
    store = open_store(tmp_path / "s", create=True)
    assert R.eval_summary(rows, _doc("k")) is None
    with store.new_run(_doc("k")) as writer:
        for row in rows:
            writer.append_eval(row)
    assert R.EVAL_SUMMARY not in store.run_doc(writer.run_id)
    assert len(query.runs_frame(store)) == 1


# -- each run's eval clock, kept in its summary and the run index (eval_clock.eval_clock) ----------
def _clock_runs(store, rng, n: int) -> None:
    """Sealed runs whose rows' training, eval and wall seconds are at times missing, negative,
    NaN or infinite (then no summary at all, or a summary whose clock is null), or absent."""
    for i in range(n):
        rows = []
        for k in range(int(rng.integers(0, 6))):
            row = _row(k, **{"validation/accuracy": float(rng.choice([0.5, 0.95]))})
            row["train_seconds"] = rng.choice([row["train_seconds"]] * 6 + [-1.0, None])
            row["wall_seconds"] = rng.choice([row["wall_seconds"]] * 6 + [-1.0, None])
            row["eval_seconds"] = rng.choice([row["eval_seconds"]] * 6 +
                                             [-1.0, None, np.nan, np.inf])
            rows.append(row)
        evals = pa.Table.from_pylist(rows) if rows else None
        store.write_sealed_run({**_doc(f"c{i}"), "status": "complete"}, evals, f"c{i}")


def _sorted(clock: pd.DataFrame) -> pd.DataFrame:
    return clock.astype({"run_id": "str"}).sort_values("run_id", ignore_index=True)


def test_the_indexed_eval_clock_is_what_the_rows_say(tmp_path):
    from workbench.run_index import refresh_index

    store = open_store(tmp_path / "s", create=True)
    _clock_runs(store, np.random.default_rng(3), 60)
    refresh_index(store)
    ids = store.run_ids()
    indexed = EC._indexed_clock(store, ids)
    # most runs' clocks come from the index; some of them are known to have no counting row
    assert len(indexed) > 40 and indexed["eval_seconds"].isna().sum() > 3
    from_rows = _sorted(EC._clock_from_rows(store, ids))
    assert 30 < len(from_rows) < 60
    pd.testing.assert_frame_equal(_sorted(eval_clock(store, ids)), from_rows,
                                  check_exact=True)
    truth = {r.run_id: [r.eval_seconds, r.wall_seconds] for r in from_rows.itertuples()}
    sealed = {r: store.run_doc(r).get(R.EVAL_SUMMARY, {}) for r in ids}
    assert {r: s["eval_clock"] for r, s in sealed.items() if "eval_clock" in s} == \
        {r: truth.get(r) for r, s in sealed.items() if "eval_clock" in s}
    # a store without summaries nor index (written before them) reads every run's rows
    shutil.copytree(store.root, tmp_path / "old")
    shutil.rmtree(tmp_path / "old" / R.INDEX_DIR)
    old = open_store(tmp_path / "old")
    for run_id in ids:
        _drop_summary(old.runs_dir / run_id)
    assert len(EC._indexed_clock(old, ids)) == 0
    pd.testing.assert_frame_equal(_sorted(eval_clock(old, ids)), from_rows,
                                  check_exact=True)


@pytest.mark.parametrize("clock", ["fast", [1.0], [-1.0, 2.0], [True, 1.0], [1.0, "2"], {}])
def test_a_malformed_eval_clock_in_a_summary_is_not_believed(tmp_path, clock):
    """The rows decide; the run table still reads the rest of the summary."""
    from workbench.run_index import refresh_index

    store = open_store(tmp_path / "s", create=True)
    rows = pa.Table.from_pylist([_row(k, **{"validation/accuracy": 0.95}) for k in range(3)])
    store.write_sealed_run({**_doc("k"), "status": "complete"}, rows, "one")
    assert store.run_doc("one")[R.EVAL_SUMMARY]["eval_clock"] == [1.5, 9.0]
    path = store.runs_dir / "one" / R.RUN_DOC
    doc = json.loads(path.read_text())
    doc[R.EVAL_SUMMARY]["eval_clock"] = clock
    path.write_text(json.dumps(doc))
    refresh_index(store)
    assert len(EC._indexed_clock(store, ["one"])) == 0
    assert eval_clock(store, ["one"]).to_dict("records") == \
        [{"run_id": "one", "eval_seconds": 1.5, "wall_seconds": 9.0}]
    assert query.runs_frame(store)["reached_target"].tolist() == [True]
