"""Every door into a store checks what comes in (issue 39, items 1-4): one validation of rows for
merge, import-parquet, --reuse-from and the AlgoPerf import (workbench/validate.py); one design
per trial slot, whatever the door, launches included (the planning lock); no special file ever
opened by a reader; the run index a cache checked against the runs."""
from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
import threading
import warnings
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from runners.launch.study import run_configs
from runners.launch.resume import StudyChangedError
from workbench import query
from workbench.catalog import LADDER
from workbench.errors import UserError
from workbench.run_index import refresh_index
from workbench.spec import RunConfig
from workbench.store import Store, open_store
from workbench.testing import make_store
from workbench.transfer import copy_runs, export_parquet, import_parquet, merge_stores
from workbench.validate import eval_rows_problem, ladder_problem

from locations import REPO



def _small(path: Path, seed: int = 0) -> Store:
    """A store of one study: 1 workload x 1 algorithm x 1 study x 2 trials (hparams drawn by
    `seed`: another seed is another search space's draw for the same slots)."""
    return make_store(path, algorithms=("fast",), workloads=("digits_mlp",), studies=1,
                      trials=2, n_evals=6, seed=seed)


def _first(store: Store) -> dict:
    return next(store.documents())


def _caught(call):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = call()
    return result, [str(w.message) for w in caught]


# -- 1. one validation for every door ----------------------------------------------------------
_BROKEN = {  # eval rows no run could have measured, and the rule each breaks
    "steps go back": ("step", lambda v: [v[0], v[2], v[1], *v[3:]], "'step' decreases"),
    "training seconds fall": ("train_seconds", lambda v: [v[0], v[1] + 50, *v[2:]],
                              "'train_seconds' decreases"),
    "wall below training": ("wall_seconds", lambda v: [0.0] * len(v), "'wall_seconds' is below"),
}


def _break_rows(path: Path, run_id: str | None, column: str, change) -> None:
    """Rewrite `column` of the eval rows at `path` (of run `run_id` only, when given)."""
    table = pq.read_table(path)
    ids = table.column("run_id").to_pylist()
    values = table.column(column).to_pylist()
    rows = [i for i, r in enumerate(ids) if run_id in (None, r)]
    for i, new in zip(rows, change([values[i] for i in rows])):
        values[i] = new
    table = table.set_column(table.column_names.index(column), column,
                             pa.array(values, table.schema.field(column).type))
    pq.write_table(table, path)


@pytest.mark.parametrize("broken", list(_BROKEN))
def test_rows_no_run_could_measure_are_refused_at_every_door(tmp_path, broken):
    column, change, rule = _BROKEN[broken]
    source = _small(tmp_path / "src")
    victim = _first(source)
    _break_rows(source.run_path(victim["run_id"]) / "evals.parquet", None, column, change)
    out = tmp_path / "out"  # import-parquet: the exported rows, broken likewise
    export_parquet(_small(tmp_path / "clean"), out)
    _break_rows(out / "evals.parquet", victim["run_id"], column, change)
    doors = {"merge": lambda: merge_stores(Store(tmp_path / "m"), [source]).skipped,
             "import-parquet": lambda: import_parquet(out, Store(tmp_path / "p")).skipped,
             "reuse": lambda: copy_runs(open_store(tmp_path / "r", create=True),
                                        [(source, victim)])}
    for door, call in doors.items():
        result, lines = _caught(call)
        assert result == ([victim["run_id"]] if door != "reuse" else []), door
        assert len(lines) == 1 and victim["run_id"] in lines[0] and rule in lines[0], lines
        target = {"merge": "m", "import-parquet": "p", "reuse": "r"}[door]
        assert not open_store(tmp_path / target).run_path(victim["run_id"]).exists(), door


def test_the_rules_of_rows_and_ladder_records():
    clock = {"step": [0, 10, 20], "train_seconds": [0.0, 1.0, 2.0], "wall_seconds": [0.5, 2, 3]}
    assert eval_rows_problem(clock) is None
    assert "'wall_seconds' decreases" in eval_rows_problem({**clock, "wall_seconds": [0.5, 2, 1.9]})
    assert "is below" in eval_rows_problem({**clock, "wall_seconds": [0.5, 0.9, 1.5]})
    assert "finite and >= 0" in eval_rows_problem({**clock, "step": [0, -1, 2]})
    assert "losses are >= 0" in eval_rows_problem({**clock, "validation/loss": [1, -0.1, 0]})
    assert "[0, 1]" in eval_rows_problem({**clock, "validation/accuracy": [0.1, None, 1.5]})
    assert "infinite" in eval_rows_problem({**clock, "train/loss": [1, float("inf"), 0.5]})
    assert eval_rows_problem({**clock, "train/loss": [1, float("inf"), 0.5]}, diverged=True) \
        is None
    assert eval_rows_problem({**clock, "validation/ssim": [-0.05, 0.2, 0.3],
                              "validation/wer": [4.2, 1.0, 0.5]}) is None  # AlgoPerf's ranges
    rung = next(iter(LADDER.values()))
    per_step = 8 * rung.model["block_size"]
    doc = {"status": "complete", "workload": rung.name, "batch_size": 8,
           "config": {"ladder": {"steps": 100, "tokens": 100 * per_step}}}
    assert ladder_problem(doc) is None
    doc["config"]["ladder"]["tokens"] = 200 * per_step  # twice what its steps saw
    assert "steps x batch size x context" in ladder_problem(doc)


@pytest.mark.parametrize("kind", ["fifo", "folder"])
def test_import_parquet_names_a_file_that_is_no_regular_file_and_opens_nothing(tmp_path, kind):
    out = tmp_path / "out"
    export_parquet(_small(tmp_path / "src"), out)
    (out / "train.parquet").unlink()
    os.mkfifo(out / "train.parquet") if kind == "fifo" else (out / "train.parquet").mkdir()
    with pytest.raises(UserError, match=r"train\.parquet is not a regular file \(a "
                       + ("FIFO" if kind == "fifo" else "folder")):
        import_parquet(out, Store(tmp_path / "p"))


# -- 2. one design per trial slot ---------------------------------------------------------------
def test_a_run_of_another_search_space_is_refused_from_an_occupied_slot(tmp_path):
    here, other = _small(tmp_path / "here"), _small(tmp_path / "other", seed=1)
    mine = {d["trial_key"] for d in here.documents()}
    report, lines = _caught(lambda: merge_stores(here, [other]))
    assert report.added == 0 and len(report.skipped) == 2
    assert len(lines) == 2 and all("hparams:" in line and "another design" in line
                                   for line in lines), lines
    assert {d["trial_key"] for d in here.documents()} == mine
    export_parquet(other, tmp_path / "out")
    report, lines = _caught(lambda: import_parquet(tmp_path / "out", here))
    assert report.imported == 0 and len(lines) == 2 and "hparams:" in lines[0]
    assert {d["trial_key"] for d in here.documents()} == mine
    more = make_store(tmp_path / "more", algorithms=("fast",), workloads=("digits_mlp",),
                      studies=1, trials=3, n_evals=6)  # one trial more: welcome
    fewer = tmp_path / "fewer"
    shutil.copytree(tmp_path / "more", fewer)
    extra = next(d["run_id"] for d in more.documents() if d["trial"] == 2)
    shutil.rmtree(fewer / "runs" / extra)
    assert merge_stores(open_store(fewer), [more]).added == 1


def test_two_launches_of_another_design_cannot_both_plan(tmp_path):
    store = open_store(tmp_path / "s", create=True)
    ours = [RunConfig(workload="digits_mlp", algorithm="adamw", study_name="s", trial=t,
                      hparams={"learning_rate": 1e-3 * (t + 1)}, max_steps=1) for t in range(2)]
    theirs = [dataclasses.replace(c, hparams={"learning_rate": 0.5}) for c in ours]
    errors = []

    def second() -> None:
        try:
            run_configs(theirs, store, "s", resume=True, progress=False)
        except StudyChangedError as err:
            errors.append(str(err))

    with store.planning_lock():  # the first launch plans: the second waits for the lock
        launch = threading.Thread(target=second)
        launch.start()
        launch.join(0.5)
        assert launch.is_alive()
        store.record_plan("s", [c.to_dict() for c in ours])
    launch.join(60)
    assert not launch.is_alive() and len(errors) == 1 and "hparams" in errors[0]
    assert list(store.documents()) == []
    assert (tmp_path / "s" / "planning.lock").is_file()


# -- 3. no special file opened --------------------------------------------------------------------
def test_a_fifo_for_eval_rows_never_blocks_score(tmp_path):
    store = _small(tmp_path / "s")
    victim = _first(store)["run_id"]
    rows = store.run_path(victim) / "evals.parquet"
    rows.unlink()
    os.mkfifo(rows)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, "-m", "runners.cli", "score", "--store",
                          str(tmp_path / "s"), "--json"], capture_output=True, text=True,
                         timeout=120, env=env, cwd=REPO)
    skipped = json.loads(out.stdout)["skipped_runs"]
    assert list(skipped) == [victim] and "FIFO" in skipped[victim]


def test_merge_refuses_a_run_whose_eval_rows_are_a_fifo_rather_than_copying_it_rowless(
        tmp_path):
    store = _small(tmp_path / "s")
    victim = _first(store)["run_id"]
    rows = store.run_path(victim) / "evals.parquet"
    rows.unlink()
    os.mkfifo(rows)
    with pytest.warns(UserWarning, match=f"skipped run {victim}.*FIFO"):
        report = merge_stores(Store(tmp_path / "merged"), [store])
    assert report.skipped == [victim]
    assert not Store(tmp_path / "merged").run_path(victim).exists()


@pytest.mark.parametrize("kind", ["fifo", "link to /dev/zero", "link out of the store"])
def test_a_run_document_that_is_no_regular_file_is_skipped_with_a_warning(tmp_path, kind):
    store = _small(tmp_path / "s")
    victim = _first(store)["run_id"]
    doc = store.run_path(victim) / "run.json"
    (tmp_path / "outside.json").write_text(doc.read_text())
    doc.unlink()
    if kind == "fifo":
        os.mkfifo(doc)
    else:
        doc.symlink_to("/dev/zero" if kind == "link to /dev/zero" else tmp_path / "outside.json")
    runs, lines = _caught(lambda: query.runs_frame(store))
    assert victim not in runs["run_id"].tolist() and len(runs) == 1
    assert list(runs.attrs["skipped"]) == [victim] and any(victim in line for line in lines)
    docs, lines = _caught(lambda: list(store.documents()))
    assert len(docs) == 1 and any(victim in line for line in lines)


def test_a_run_folder_linked_out_of_the_store_is_skipped_and_one_linked_inside_is_read(
        tmp_path):
    """The run's files are regular, but its folder is a link to another tree: readers and merge
    skip it, saying why (merge counts it); a link to a folder inside the store is the store's."""
    store = _small(tmp_path / "s")
    first = _first(store)["run_id"]
    shutil.copytree(store.run_path(first), tmp_path / "elsewhere")
    outside = "digits_mlp--adamw--0123456789ab-a1"
    store.run_path(outside).symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    runs, lines = _caught(lambda: query.runs_frame(store))
    assert outside not in runs["run_id"].tolist() and list(runs.attrs["skipped"]) == [outside]
    assert any("behind a link out of the store" in line for line in lines)
    with pytest.warns(UserWarning, match=f"skipped run {outside}.*link out of the store"):
        report = merge_stores(Store(tmp_path / "merged"), [store])
    assert report.skipped == [outside] and report.added == 2
    store.run_path(outside).unlink()
    (tmp_path / "s" / "kept").mkdir()
    shutil.move(str(store.run_path(first)), tmp_path / "s" / "kept" / first)
    store.run_path(first).symlink_to(tmp_path / "s" / "kept" / first, target_is_directory=True)
    runs, lines = _caught(lambda: query.runs_frame(store))
    assert first in runs["run_id"].tolist() and len(runs) == 2 and not runs.attrs["skipped"]


# -- 4. the index is a cache ----------------------------------------------------------------------
def test_an_edited_index_is_not_believed_over_the_runs(tmp_path):
    store = _small(tmp_path / "s")
    refresh_index(store)
    own = query.runs_frame(store).set_index("run_id")["time_to_target"]
    (part,) = store.index_parts()
    table = pq.read_table(part)  # the cached times edited in place, under the part's own name
    column = table.column_names.index("time_to_target")
    pq.write_table(table.set_column(column, "time_to_target",
                                    pa.array([0.0] * table.num_rows)), part)
    assert query.runs_frame(store).set_index("run_id")["time_to_target"].equals(own)
    refresh_index(store)  # a new index, then a run's own document changes
    assert len(store.index_parts()) == 1 and store.index_parts()[0] != part
    doc_path = store.run_path(own.index[0]) / "run.json"
    doc = json.loads(doc_path.read_text())
    doc["hardware"] = "edited"
    doc_path.write_text(json.dumps(doc))
    runs = query.runs_frame(store).set_index("run_id")
    assert runs.loc[own.index[0], "hardware"] == "edited"
