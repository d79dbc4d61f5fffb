"""Results never computed twice: the reuse key, `study --reuse-from`, `merge`, `export` and
`import-parquet` (runners/launch/reuse.py, workbench/transfer.py), hostile inputs included."""
from __future__ import annotations

import dataclasses
import json
import os
import shutil
import warnings
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from runners.cli import main
from runners.run.env import cpu_model
from runners.launch.study import run_study
from runners.launch.reuse import reuse_finished
from runners.run.reuse_key import reuse_context, reuse_inputs, reuse_key
from workbench import query
from workbench.catalog import get_workload
from workbench.results import Results, dumps
from workbench.spec import ExecutionOptions, RunConfig, StudySpec
from workbench.store import Store, open_store
from workbench.testing import make_store
from workbench.transfer import (MergeConflict, copy_runs, export_parquet, import_parquet,
                                merge_stores, reusable)

CPU = "cpu: test model"


def _score(path: Path) -> str:
    return dumps(Results(open_store(path)).score())


def _key(config: RunConfig, hardware: str = CPU, hooks=None) -> str:
    return reuse_key(config, get_workload(config.workload), hardware, reuse_context(hooks))


# -- the key ---------------------------------------------------------------------------------
def test_the_key_changes_with_what_a_result_depends_on_and_nothing_else(monkeypatch):
    config = RunConfig(workload="digits_mlp", algorithm="adamw", hparams={"learning_rate": 1e-3},
                       study_name="s", trial=1)
    key = _key(config)
    assert key == _key(config) and len(key) == 32
    # not in it: the study's design, a mix note, the device's name (its hardware class is)
    assert _key(dataclasses.replace(config, design="abc", mixed_execution="threads")) == key
    assert _key(dataclasses.replace(
        config, execution=ExecutionOptions(device="auto"))) == key
    changed = [dataclasses.replace(config, execution=ExecutionOptions(precision="bf16")),
               dataclasses.replace(config, execution=ExecutionOptions(threads=2)),
               dataclasses.replace(config, trial=2), dataclasses.replace(config, max_steps=7),
               dataclasses.replace(config, stop_on_target=False)]
    assert len({key, *(_key(c) for c in changed)}) == 1 + len(changed)
    assert _key(config, hardware="NVIDIA H100 80GB HBM3") != key
    assert _key(config, hooks={"goal": 0.9}) != key
    assert _key(config, hooks={"show_evals": True}) == key  # what is printed only
    monkeypatch.setattr("torch.__version__", "0.0.1")
    assert _key(config) != key
    inputs = reuse_inputs(config, get_workload("digits_mlp"), CPU, reuse_context({}))
    assert {"trial", "hardware", "runner_code", "pacebench", "torch", "dataset",
            "algorithm_source", "workload_source", "workload", "config"} <= set(inputs)
    assert "rng_seed" not in json.dumps(inputs) and "launch_position" not in json.dumps(inputs)


def test_the_study_name_is_in_the_key_only_where_it_seeds_the_draws():
    """Draw scheme 2 draws by design: two names' trial is one run; scheme 1 (older studies)
    seeded the draws and the rng_seed with the name, so there the name stays in the key."""
    old = RunConfig(workload="digits_mlp", algorithm="adamw", hparams={"learning_rate": 1e-3},
                    study_name="first", trial=1)
    new = dataclasses.replace(old, draw_scheme=2)
    assert _key(dataclasses.replace(new, study_name="second")) == _key(new)
    assert dataclasses.replace(new, study_name="second").rng_seed == new.rng_seed
    assert dataclasses.replace(new, study_name="second").trial_key != new.trial_key
    assert _key(dataclasses.replace(old, study_name="second")) != _key(old)
    assert dataclasses.replace(old, study_name="second").rng_seed != old.rng_seed
    assert len({_key(old), _key(new), _key(dataclasses.replace(new, trial=2))}) == 3
    inputs = reuse_inputs(new, get_workload("digits_mlp"), CPU, reuse_context({}))
    assert "first" not in json.dumps(inputs) and inputs["version"] == 2


def test_runs_without_a_key_are_never_reused(fake_store):
    docs = list(open_store(fake_store).documents())
    assert docs and all("reuse_key" not in d for d in docs)
    assert reusable([open_store(fake_store)], {d["trial_key"] for d in docs}) == {}


# -- reuse: a real study ---------------------------------------------------------------------
@pytest.mark.slow
def test_reuse_from_runs_only_the_other_algorithms_trials(tmp_path):
    """A store holding AdamW's runs: a study of AdamW and heavy ball (same name, seeds, plan)
    runs heavy ball's trials only, and the reused runs' rows equal the originals'."""
    def spec(*algorithms):
        return StudySpec(workloads=("synthetic",), algorithms=algorithms, trials=2,
                         max_steps=5, name="s")
    first = open_store(tmp_path / "a", create=True)
    assert run_study(spec("adamw"), first, progress=False).succeeded == 2
    second = open_store(tmp_path / "b", create=True)
    result = run_study(spec("adamw", "heavy_ball"), second, progress=False, reuse_from=[first])
    assert (result.reused, result.succeeded, result.planned) == (2, 2, 4)  # 2 launched, not 4
    assert "reused 2 of 4 trials from" in result.summary()
    originals = {d["run_id"]: d for d in first.documents()}
    reused = [d for d in second.documents() if d["reused_from"] is not None]
    assert len(reused) == 2 and {d["algorithm"] for d in reused} == {"adamw"}
    for doc in reused:
        source = doc["reused_from"]
        assert source["store"] == str(first.root.resolve())
        original = originals[source["run_id"]]
        assert doc["reuse_key"] == original["reuse_key"] is not None
        # timed there: its machine-speed reading travels with it (compare's speed check)
        assert doc["probe_seconds"] == original["probe_seconds"] is not None
        mine = query.evals_frame(second, [doc["run_id"]]).drop(columns="run_id")
        theirs = query.evals_frame(first, [source["run_id"]]).drop(columns="run_id")
        assert mine.columns.tolist() == theirs.columns.tolist()
        assert mine.equals(theirs)  # every column, times included
    made_here = [d for d in second.documents() if d["reused_from"] is None]
    assert {d["algorithm"] for d in made_here} == {"heavy_ball"}
    assert all(d["reuse_key"] for d in made_here)
    score = Results(second).score()
    assert score["reused_runs"] == {"adamw": 2}
    assert any("2 of 4 runs reused from other stores (adamw: 2)" in n for n in score["notes"])
    assert "reused_runs" not in Results(first).score()


def test_a_reuse_source_that_is_not_a_store_is_refused_in_one_line(tmp_path, capsys):
    (tmp_path / "nope").mkdir()
    code = main(["study", "--workloads", "synthetic", "--algorithms", "adamw", "--trials", "1",
                 "--store", str(tmp_path / "s"), "--reuse-from", str(tmp_path / "nope")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "nope is not a Pacebench store" in err
    assert not (tmp_path / "s").exists()


def test_a_bad_run_in_a_reuse_source_is_skipped_with_a_warning(tmp_path):
    source = make_store(tmp_path / "src", algorithms=("fast",), workloads=("digits_mlp",),
                        studies=1, trials=2)
    docs = list(source.documents())
    bad = docs[0]["run_id"]
    path = source.run_path(bad) / "evals.parquet"
    table = pq.read_table(path)
    seconds = table.column("train_seconds").to_pylist()
    seconds[3] = -1.0
    pq.write_table(table.set_column(table.column_names.index("train_seconds"), "train_seconds",
                                    pa.array(seconds)), path)
    with pytest.warns(UserWarning, match=f"skipped run {bad} .*train_seconds has -1.0"):
        copied = copy_runs(open_store(tmp_path / "dst", create=True),
                           [(source, d) for d in docs])
    assert [d["run_id"] for d in copied] == [docs[1]["run_id"]]
    assert copied[0]["reused_from"]["run_id"] == docs[1]["run_id"]


def test_a_run_whose_key_names_another_trial_is_not_reused(tmp_path):
    """A document whose reuse key is forged (or corrupted) to match a trial it is not."""

    source = make_store(tmp_path / "src", algorithms=("fast",), workloads=("digits_mlp",),
                        studies=1, trials=1)
    doc = next(source.documents())
    config = RunConfig(workload="digits_mlp", algorithm="fast", study_name="other")
    context = reuse_context({})
    here = f"cpu: {cpu_model()}"  # this machine's class: the key the launcher looks for
    forged = {**doc, "reuse_key": reuse_key(config, get_workload("digits_mlp"), here, context)}
    source.run_path(doc["run_id"]).joinpath("run.json").write_text(json.dumps(forged))
    target = open_store(tmp_path / "dst", create=True)
    with pytest.warns(UserWarning, match="its reuse key is that of trial .*: not reused"):
        assert reuse_finished([config], target, [source], context) == set()
    assert list(target.documents()) == []


# -- merge -----------------------------------------------------------------------------------
def _split(whole: Path, into: Path, keep) -> Path:
    """A copy of store `whole` with only the runs whose document `keep` accepts."""
    shutil.copytree(whole, into)
    for doc in open_store(into).documents():
        if not keep(doc):
            shutil.rmtree(open_store(into).run_path(doc["run_id"]))
    return into


def test_merge_of_two_halves_equals_the_whole_and_keeps_copies_once(fake_store, tmp_path):
    a = _split(fake_store, tmp_path / "a", lambda d: d["study"] == 0)
    b = _split(fake_store, tmp_path / "b", lambda d: d["study"] == 1)
    report = merge_stores(open_store(tmp_path / "c", create=True),
                          [open_store(a), open_store(b)])
    n = len(list(open_store(fake_store).documents()))
    assert report.added == n and report.identical == 0
    assert _score(tmp_path / "c") == _score(fake_store)
    again = merge_stores(open_store(tmp_path / "c"), [open_store(fake_store)])
    assert (again.added, again.identical) == (0, n)


def test_a_conflicting_merge_is_refused_by_name_writing_nothing(fake_store, tmp_path, capsys):
    a = _split(fake_store, tmp_path / "a", lambda d: d["study"] == 0)
    b = _split(fake_store, tmp_path / "b", lambda d: d["study"] == 0)
    victim = next(open_store(b).documents())["run_id"]
    doc_path = open_store(b).run_path(victim) / "run.json"
    doc = json.loads(doc_path.read_text())
    doc["hparams"] = {**doc["hparams"], "learning_rate": 0.5}
    doc_path.write_text(json.dumps(doc))
    with pytest.raises(MergeConflict, match=victim):
        merge_stores(_new_store(tmp_path / "c"), [open_store(a), open_store(b)])
    assert not (tmp_path / "c").exists()
    assert main(["merge", "--store", str(tmp_path / "c"), str(a), str(b)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and victim in err and "nothing was written" in err
    assert not (tmp_path / "c").exists()


def _new_store(path: Path) -> Store:
    """A Store object over a folder that need not exist (the command creates it)."""
    return Store(path)


# -- export / import-parquet -----------------------------------------------------------------
def test_export_then_import_parquet_gives_the_same_score(fake_store, tmp_path):
    counts = export_parquet(open_store(fake_store), tmp_path / "out")
    import duckdb  # the files are read directly, as a user reads them
    evals = tmp_path / "out" / "evals.parquet"
    n = duckdb.sql(f"SELECT count(*) FROM '{evals}'").fetchall()[0][0]
    assert n == counts["evals"] > 0
    report = import_parquet(tmp_path / "out", _new_store(tmp_path / "t"))
    assert (report.imported, report.skipped) == (counts["runs"], [])
    assert _score(tmp_path / "t") == _score(fake_store)


def _exported(fake_store: Path, out: Path) -> Path:
    export_parquet(open_store(fake_store), out)
    return out


def _rewrite(path: Path, column: str, change) -> None:
    table = pq.read_table(path)
    values = change(table.column(column).to_pylist())
    pq.write_table(table.set_column(table.column_names.index(column), column,
                                    pa.array(values)), path)


def test_hostile_parquet_runs_are_skipped_one_line_each(fake_store, tmp_path):
    out = _exported(fake_store, tmp_path / "out")
    runs = pq.read_table(out / "runs.parquet").column("run_id").to_pylist()
    evals = pq.read_table(out / "evals.parquet")
    first_row = {r: evals.column("run_id").to_pylist().index(r) for r in runs[:3]}

    def doc_with(values):  # a bad name in the first run's document
        doc = json.loads(values[0])
        values[0] = json.dumps({**doc, "algorithm": "<script>alert(1)</script>"})
        return values

    def nan_and_negative(values):  # NaN and a negative time in the next two runs' rows
        values[first_row[runs[1]]] = float("nan")
        values[first_row[runs[2]]] = -5.0
        return values
    _rewrite(out / "runs.parquet", "document", doc_with)
    _rewrite(out / "evals.parquet", "train_seconds", nan_and_negative)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        report = import_parquet(out, _new_store(tmp_path / "t"))
    lines = [str(w.message) for w in caught]
    assert report.skipped == runs[:3] and report.imported == len(runs) - 3
    assert len(lines) == 3 and all("\n" not in line for line in lines)
    assert "algorithm '<script>" in lines[0] and "is not a plain name" in lines[0]
    assert "train_seconds has nan" in lines[1] and "train_seconds has -5.0" in lines[2]


def test_wrong_types_are_skipped_and_a_malformed_file_refused(fake_store, tmp_path, capsys):
    out = _exported(fake_store, tmp_path / "out")
    _rewrite(out / "evals.parquet", "step", lambda v: [str(x) for x in v])  # text, not integers
    with pytest.warns(UserWarning, match="evals column step holds (large_)?string, not integ"):
        report = import_parquet(out, _new_store(tmp_path / "t"))
    assert report.imported == 0 and len(report.skipped) > 0
    (out / "runs.parquet").write_bytes(b"not parquet at all")
    assert main(["import-parquet", str(out), "--store", str(tmp_path / "u")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "not a readable Parquet" in err
    assert not (tmp_path / "u").exists()


def test_the_dashboard_counts_reused_runs(tmp_path):
    """The status line and the scope notes say how many of the shown runs were reused."""
    from workbench.views.selection import Selection
    from workbench.views.status import RunStatus, scope_notes

    source = make_store(tmp_path / "src", algorithms=("fast",), workloads=("digits_mlp",),
                        studies=1, trials=2)
    target = make_store(tmp_path / "dst", algorithms=("slow",), workloads=("digits_mlp",),
                        studies=1, trials=2)
    assert len(copy_runs(target, [(source, d) for d in source.documents()])) == 2
    selection = Selection(store_path=str(target.root))
    line = RunStatus(selection=selection)._line.object
    assert line.startswith("**4 runs shown:** 4 complete; 2 reused from other stores.")
    assert any("2 of 4 runs reused from other stores (fast: 2)" in n
               for n in scope_notes(selection))


def test_the_machine_speed_check_covers_reused_runs(tmp_path):
    """Runs reused from a store timed on a slower machine (their probe twice as long) keep their
    probe: compare withholds its verdict in seconds, naming the speed, with the verdict by
    steps beside."""
    from workbench.testing import make_timing_store

    slow = make_timing_store(tmp_path / "slow", {"a": 1.0}, studies=3, trials=3)
    here = make_timing_store(tmp_path / "here", {"b": 1.0}, studies=3, trials=3)
    for store, probe in ((slow, 0.2), (here, 0.1)):
        for i, doc in enumerate(store.documents()):
            store.amend(doc["run_id"], probe_seconds=probe * (1 + 0.01 * (i % 3)))
    assert len(copy_runs(here, [(slow, d) for d in slow.documents()])) == 9
    result = Results(here).compare("a", "b")
    assert any("machine speed differed" in w for w in result["warnings"])
    assert result["withheld"] and result["verdict_by_steps"]
    assert result["reused_runs"] == {"a": 9}


def test_deeply_nested_json_is_a_skipped_run_and_leaves_no_store_behind(tmp_path, capsys):
    """json.loads of a document nested 100,000 deep raises RecursionError (was "internal
    error", with an empty store folder left behind)."""
    out = tmp_path / "out"
    out.mkdir()
    nested = '{"a": ' + "[" * 100_000 + "]" * 100_000 + "}"
    pq.write_table(pa.table({"run_id": ["r1"], "document": [nested]}), out / "runs.parquet")
    pq.write_table(pa.table({"run_id": pa.array([], pa.string())}), out / "evals.parquet")
    assert main(["import-parquet", str(out), "--store", str(tmp_path / "t")]) == 1
    captured = capsys.readouterr()
    assert captured.err.strip() == (f"warning: skipped run r1 of {out}: its document is JSON "
                                    "nested too deeply to read"), captured.err
    assert "imported 0 runs" in captured.out and "1 bad runs skipped" in captured.out
    assert not (tmp_path / "t").exists()


def test_merge_removes_the_temp_folders_a_killed_merge_left(fake_store, tmp_path):
    """A killed merge leaves `.tmp-*` folders under runs/ (readers ignore them); the next merge
    removes those whose owner is gone, never a live importer's."""
    import subprocess
    import sys

    from workbench.sealed_batch import host_tag as _host_tag

    target = open_store(tmp_path / "c", create=True)
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    left = target.runs_dir / f".tmp-{'a' * 12}-{gone}-{_host_tag()}-run-1"
    live = target.runs_dir / f".tmp-{'b' * 12}-{os.getpid()}-{_host_tag()}-run-2"
    for folder in (left, live):
        folder.mkdir(parents=True)
        (folder / "run.json").write_text("{}")
    a = _split(fake_store, tmp_path / "a", lambda d: d["study"] == 0)
    merge_stores(target, [open_store(a)])
    assert not left.exists() and live.exists()
