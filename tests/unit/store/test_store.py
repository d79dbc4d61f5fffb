"""The results store: layout, crash-safe writes, attempts, sealing and liveness."""
from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from workbench import records as R
from workbench import query
from workbench.store import Store, StoreError, atomic_write_json, open_store, read_jsonl

from locations import REPO



def _doc(trial_key: str = "k1", **extra) -> dict:
    return {"trial_key": trial_key, "workload": "synthetic", "base_workload": "synthetic",
            "variant": "base", "algorithm": "sgd", "study_name": "s", "ruleset": "external",
            "study": 0, "trial": 0, "seed": 0, "hparams": {"lr": 0.1},
            "target_metric": "loss", "target_direction": "min", "target_validation": 0.1,
            "target_test": 0.1, **extra}


def _eval(k: int, loss: float) -> dict:
    return {"eval_index": k, "step": 10 * (k + 1), "examples": 320 * (k + 1),
            "train_seconds": 1.0 * (k + 1), "eval_seconds": 0.1 * (k + 1),
            "wall_seconds": 1.2 * (k + 1), "validation/loss": loss}


def test_layout_and_schema_check(tmp_path):
    with pytest.raises(StoreError, match="not a Pacebench store"):
        open_store(tmp_path / "nope")
    store = open_store(tmp_path / "s", create=True)
    assert (tmp_path / "s" / R.STORE_DOC).exists() and store.runs_dir.is_dir()
    assert json.loads((tmp_path / "s" / R.STORE_DOC).read_text())["schema_version"] == R.SCHEMA_VERSION
    with store.new_run(_doc()) as w:
        run_dir = store.runs_dir / w.run_id
        assert {p.name for p in run_dir.iterdir()} >= {R.RUN_DOC, R.EVALS_LIVE, R.TRAIN_LIVE}
        doc = json.loads((run_dir / R.RUN_DOC).read_text())
        assert doc["status"] == "running" and doc["process"]["pid"] == os.getpid()
    assert open_store(tmp_path / "s").run_doc(w.run_id)["status"] == "complete"


def test_atomic_doc_write_keeps_old_file_on_failure(tmp_path, monkeypatch):
    path = tmp_path / "doc.json"
    atomic_write_json(path, {"a": 1, "nan": float("nan")})
    assert json.loads(path.read_text()) == {"a": 1, "nan": None}  # JSON has no NaN

    def crash(*args, **kwargs):
        raise OSError("disk full")
    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError):
        atomic_write_json(path, {"a": 2})
    assert json.loads(path.read_text()) == {"a": 1, "nan": None}  # readers never see a torn doc


def test_attempts_are_numbered_per_trial(tmp_path):
    store = open_store(tmp_path, create=True)
    ids = []
    for _ in range(3):
        with store.new_run(_doc("same")) as w:
            ids.append(w.run_id)
    with store.new_run(_doc("other")) as w:
        other = w.run_id
    assert [i.rsplit("-a", 1)[1] for i in ids] == ["1", "2", "3"]
    assert other.endswith("-a1")
    assert [store.run_doc(i)["attempt"] for i in ids] == [1, 2, 3]
    with store.new_run(_doc("x"), run_id="imported-1") as w:
        assert w.run_id == "imported-1" and w.doc["attempt"] == 1
    with pytest.raises(FileExistsError):
        store.new_run(_doc("x"), run_id="imported-1")


def test_torn_last_jsonl_line_is_ignored(tmp_path):
    store = open_store(tmp_path, create=True)
    w = store.new_run(_doc())
    w.append_eval(_eval(0, 0.5))
    w.append_eval(_eval(1, 0.3))
    w._evals.write('{"run_id": "' + w.run_id + '", "eval_index": 2, "validation/lo')
    w._evals.flush()
    assert [r["eval_index"] for r in read_jsonl(store.runs_dir / w.run_id / R.EVALS_LIVE)] == [0, 1]
    rows = query.evals_frame(store)
    assert rows["eval_index"].tolist() == [0, 1] and rows["run_id"].notna().all()
    w.finish("complete")


def test_finish_seals_rows_into_parquet(tmp_path):
    store = open_store(tmp_path, create=True)
    w = store.new_run(_doc())
    for k, loss in enumerate([0.5, 0.2, 0.05]):
        w.append_eval(_eval(k, loss))
    w.append_train({"step": 5, "examples": 160, "train_seconds": 0.5, "loss": 0.7})
    w.finish("complete", stop_reason="done", steps=30)
    w.finish("failed")  # idempotent: a sealed run stays as it is
    run_dir = store.runs_dir / w.run_id
    assert not (run_dir / R.EVALS_LIVE).exists() and not (run_dir / R.TRAIN_LIVE).exists()
    table = pq.read_table(run_dir / R.EVALS_SEALED)
    assert table.column("validation/loss").to_pylist() == [0.5, 0.2, 0.05]
    assert pq.read_table(run_dir / R.TRAIN_SEALED).num_rows == 1
    doc = store.run_doc(w.run_id)
    assert (doc["status"], doc["stop_reason"], doc["steps"]) == ("complete", "done", 30)
    with pytest.raises(ValueError, match="final status"):
        store.new_run(_doc("k2")).finish("running")


def test_exception_marks_run_failed_with_traceback(tmp_path):
    store = open_store(tmp_path, create=True)
    with pytest.raises(RuntimeError):
        with store.new_run(_doc()) as w:
            w.append_eval(_eval(0, 0.5))
            raise RuntimeError("boom")
    doc = store.run_doc(w.run_id)
    assert doc["status"] == "failed" and "RuntimeError: boom" in doc["error"]
    assert (store.runs_dir / w.run_id / R.EVALS_SEALED).exists()


_KILLED = textwrap.dedent("""
    import os, signal, sys
    from workbench.store import open_store
    store = open_store(sys.argv[1], create=True)
    w = store.new_run(json.loads(sys.argv[2]))
    for k in range(3):
        w.append_eval({"eval_index": k, "step": k + 1, "examples": k + 1, "train_seconds": k + 1.0,
                       "eval_seconds": 0.1, "wall_seconds": k + 2.0, "validation/loss": 0.5 - 0.2 * k})
    print(w.run_id, flush=True)
    os.kill(os.getpid(), signal.SIGKILL)
""")


def test_killed_process_reads_interrupted(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-c", "import json\n" + _KILLED, str(tmp_path),
                           json.dumps(_doc())], capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == -9, proc.stderr
    run_id = proc.stdout.strip()
    store = open_store(tmp_path)
    assert json.loads((store.runs_dir / run_id / R.RUN_DOC).read_text())["status"] == "running"
    doc = store.run_doc(run_id)
    assert doc["status"] == "interrupted" and "without sealing" in doc["stop_reason"]
    runs = query.runs_frame(store)
    row = runs.set_index("run_id").loc[run_id]
    assert row["status"] == "interrupted"
    assert (row["steps"], row["train_seconds"]) == (3, 3.0)  # from the flushed rows
    assert bool(row["reached_target"]) and row["eval_index_to_target"] == 2  # 0.1 <= 0.1
    assert store.done_trial_keys() == set()


def test_done_trial_keys(tmp_path):
    store = open_store(tmp_path, create=True)
    for key, status in [("a", "complete"), ("b", "diverged"), ("c", "failed"), ("d", "interrupted")]:
        store.new_run(_doc(key)).finish(status)
    store.new_run(_doc("e"))  # still running (this process is alive)
    assert store.done_trial_keys() == {"a", "b"}
    assert query.runs_frame(store).set_index("trial_key").loc["e", "status"] == "running"


def test_write_sealed_run_is_all_or_nothing_and_never_overwrites(tmp_path):
    import pyarrow as pa

    store = open_store(tmp_path, create=True)
    rows = pa.Table.from_pylist([_eval(0, 0.5), _eval(1, 0.05)])
    doc = _doc("imp", status="complete")
    assert store.write_sealed_run(doc, rows, "imported-1")
    assert not store.write_sealed_run({**doc, "algorithm": "other"}, rows, "imported-1")
    assert store.run_doc("imported-1")["algorithm"] == "sgd"  # the first write stands
    sealed = pq.read_table(store.runs_dir / "imported-1" / R.EVALS_SEALED)
    assert sealed.column_names[0] == "run_id" and sealed["run_id"].to_pylist() == ["imported-1"] * 2
    (store.runs_dir / ".tmp-crashed-abc").mkdir()  # what a crash mid-write leaves
    (store.runs_dir / ".tmp-crashed-abc" / R.RUN_DOC).write_text("{}")
    assert [d.name for d in store.run_dirs()] == ["imported-1"]
    runs = query.runs_frame(store)
    assert runs["run_id"].tolist() == ["imported-1"] and runs["time_to_target"].item() == 2.0
    with pytest.raises(ValueError, match="final status"):
        store.write_sealed_run(_doc("x", status="running"), rows, "imported-2")
    with pytest.raises(ValueError, match="plain folder name"):
        store.write_sealed_run(doc, rows, "../escape")
    with pytest.raises(ValueError, match=r"lack columns \['step'"):
        store.write_sealed_run(doc, rows.drop_columns(["step"]), "imported-3")


def test_a_sealed_batch_publishes_its_runs_together_and_drops_the_rest(tmp_path):
    import pyarrow as pa

    store = open_store(tmp_path, create=True)
    rows = pa.Table.from_pylist([_eval(0, 0.5), _eval(1, 0.05)])
    doc = _doc("imp", status="complete")
    assert store.write_sealed_run(doc, rows, "there-already")
    with store.sealed_batch() as batch:
        assert batch.add(doc, rows, "b-1") and batch.add(doc, rows, "b-2")
        assert not batch.add(doc, rows, "there-already")  # nothing written for it
        assert store.run_ids() == ["there-already"]  # nothing visible before publish
        (store.runs_dir / "b-2").mkdir()  # another writer's run appears meanwhile
        (store.runs_dir / "b-2" / R.RUN_DOC).write_text("{}")
        assert batch.publish() == {"b-1": True, "b-2": False}
    assert store.run_ids() == ["b-1", "b-2", "there-already"]
    assert (store.runs_dir / "b-2" / R.RUN_DOC).read_text() == "{}"  # never overwritten
    with pytest.warns(UserWarning, match="skipped run b-2"):  # the other writer's "{}"
        assert query.runs_frame(store).set_index("run_id").loc["b-1", "time_to_target"] == 2.0
    with pytest.raises(RuntimeError), store.sealed_batch() as batch:
        batch.add(doc, rows, "b-3")
        raise RuntimeError("the import stops")
    assert not any(n.startswith(".") for n in os.listdir(store.runs_dir))  # nothing left


# -- document-level reads: what the launcher, progress and the dashboard ask the store -----------
def test_documents_and_attempts_filter_and_order(tmp_path):
    store = open_store(tmp_path, create=True)
    with store.new_run(_doc("a", study_name="one")):
        pass
    with store.new_run(_doc("a", study_name="one")) as w:
        w.finish("failed", stop_reason="boom")
    with store.new_run(_doc("b", study_name="two")):
        pass
    assert [d["trial_key"] for d in store.documents(study_name="one")] == ["a", "a"]
    assert len(list(store.documents())) == 3
    attempts = store.attempts("a")
    assert [d["attempt"] for d in attempts] == [1, 2]
    assert [d["status"] for d in attempts] == ["complete", "failed"]
    assert store.attempts("nope") == []


def test_an_unreadable_document_is_skipped_with_a_warning_naming_its_run(tmp_path):
    store = open_store(tmp_path, create=True)
    with store.new_run(_doc("good")):
        pass
    bad = store.run_path("torn--run")
    bad.mkdir()
    (bad / R.RUN_DOC).write_text('{"status": "compl')
    with pytest.warns(UserWarning, match="skipped run torn--run"):
        assert [d["trial_key"] for d in store.documents()] == ["good"]
    with pytest.warns(UserWarning):
        assert store.done_trial_keys() == {"good"}


def test_live_trials_latest_eval_and_effective_status(tmp_path):
    store = open_store(tmp_path, create=True)
    writer = store.new_run(_doc("live"))
    assert store.latest_eval("live") is None  # running, no eval yet
    writer.append_eval(_eval(0, 0.5))
    writer.append_eval(_eval(1, 0.4))
    assert store.latest_eval("live")["eval_index"] == 1
    assert store.live_trial_keys() == {"live"}
    assert [r["step"] for r in store.live_rows(writer.run_id, "evals")] == [10, 20]
    writer.finish("complete")
    assert store.latest_eval("live") is None and store.live_trial_keys() == set()
    assert store.live_rows(writer.run_id, "evals") == []  # sealed


def test_amend_changes_a_finished_document_but_never_who_or_how_it_ended(tmp_path):
    store = open_store(tmp_path, create=True)
    writer = store.new_run(_doc("k"))
    with pytest.raises(ValueError, match="only a finished run"):
        store.amend(writer.run_id, pruned=True)
    writer.finish("complete")
    doc = store.amend(writer.run_id, pruned=True, pruned_rung=1)
    assert store.run_doc(writer.run_id)["pruned_rung"] == 1 and doc["status"] == "complete"
    for field in ("status", "trial_key", "run_id", "hparams"):
        with pytest.raises(ValueError, match="fixed once written"):
            store.amend(writer.run_id, **{field: "x"})
    with pytest.raises(KeyError, match="no run 'nope'"):
        store.amend("nope", pruned=True)


def test_signature_moves_with_unfinished_runs_only(tmp_path):
    store = open_store(tmp_path, create=True)
    with store.new_run(_doc("done")) as w:
        done = w.run_id
    before = store.signature({done})
    assert store.signature({done}) == before
    writer = store.new_run(_doc("live"))
    after_start = store.signature({done})
    assert after_start != before
    writer.append_eval(_eval(0, 0.5))
    assert store.signature({done}) != after_start
    assert open_store(tmp_path).signature({done, writer.run_id})[1] == 2  # two runs listed
    (store.runs_dir / ".tmp-being-added").mkdir()  # a writer's folder: not a run
    names = store.run_names()  # one listing, shared by the dashboard's signature and read
    assert names == sorted([done, writer.run_id])
    assert store.signature({done}, names) == store.signature({done})
    assert store.run_ids({done}, names) == store.run_ids() == names
    writer.finish("complete")
    assert Store(tmp_path / "none").run_names() is None


def test_study_documents_and_other_files_live_where_the_store_says(tmp_path):
    store = open_store(tmp_path, create=True)
    store.write_study_summary("my study", {"kind": "study"})
    assert store.study_summary("my study") == {"kind": "study"}
    assert store.study_summary("other") is None
    store.write_early_stop_doc("s", "k1", {"trial_key": "k1", "rungs": {}})
    assert store.early_stop_docs("s") == [{"trial_key": "k1", "rungs": {}}]
    assert store.early_stop_docs("none") == []
    for path in (store.log_path("../up", "k1"), store.checkpoint_path("k1")):
        assert tmp_path in path.parents  # a hostile study name stays inside the store


class _FakeProcess:
    """psutil.Process over a table {pid: (seconds after boot it started, status)}."""

    table: dict[int, tuple[float, str]] = {}

    def __init__(self, pid: int) -> None:
        import psutil
        if pid not in self.table:
            raise psutil.NoSuchProcess(pid)
        self.pid = pid

    def create_time(self) -> float:
        return 1_000_000.0 + self.table[self.pid][0]  # boot at 1e6 s after the epoch

    def status(self) -> str:
        return self.table[self.pid][1]


def test_the_liveness_of_a_local_run_is_what_psutil_says(tmp_path, monkeypatch):
    """A `running` run of this host is alive while psutil shows its process, started when the
    run document says; a reused pid, a zombie or no process at all reads `interrupted`."""
    import psutil

    import workbench.run_writer as writer_module
    monkeypatch.setattr(writer_module.psutil, "Process", _FakeProcess)
    monkeypatch.setattr(writer_module.psutil, "boot_time", lambda: 1_000_000.0)
    pid = os.getpid()
    monkeypatch.setattr(_FakeProcess, "table", {pid: (12.5, psutil.STATUS_RUNNING)})
    store = open_store(tmp_path, create=True)
    run_id = store.new_run(_doc()).run_id
    assert store.run_doc(run_id)["status"] == "running"
    # the clock was set back an hour: wall-clock start and boot time move together
    monkeypatch.setattr(writer_module.psutil, "boot_time", lambda: 1_000_000.0 - 3600.0)
    monkeypatch.setattr(_FakeProcess, "create_time",
                        lambda self: 1_000_000.0 - 3600.0 + self.table[self.pid][0])
    assert store.run_doc(run_id)["status"] == "running"
    for now in ({pid: (99.0, psutil.STATUS_RUNNING)},  # the pid now names another process
                {pid: (12.5, psutil.STATUS_ZOMBIE)},   # ended, not yet reaped
                {}):                                   # gone
        monkeypatch.setattr(_FakeProcess, "table", now)
        assert store.run_doc(run_id)["status"] == "interrupted", now


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux's /proc")
def test_a_running_document_of_an_earlier_version_still_reads_alive(tmp_path):
    """Run documents written before psutil recorded the start in clock ticks (/proc)."""
    store = open_store(tmp_path, create=True)
    writer = store.new_run(_doc())
    ticks = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])
    doc = json.loads((store.runs_dir / writer.run_id / R.RUN_DOC).read_text())
    doc["process"] = {"host": doc["process"]["host"], "pid": os.getpid(), "start_ticks": ticks}
    atomic_write_json(store.runs_dir / writer.run_id / R.RUN_DOC, doc)
    assert store.run_doc(writer.run_id)["status"] == "running"
    doc["process"]["start_ticks"] = ticks + 1000  # another process of this pid
    atomic_write_json(store.runs_dir / writer.run_id / R.RUN_DOC, doc)
    assert store.run_doc(writer.run_id)["status"] == "interrupted"


def test_sealing_makes_the_parquet_file_durable_before_it_drops_the_rows(tmp_path, monkeypatch):
    """Sealing writes the Parquet file, fsyncs it and its folder, and only then removes the
    JSON-lines rows: a crash at any moment leaves the rows in one file or the other."""
    import workbench.run_writer as store_module

    store = open_store(tmp_path, create=True)
    writer = store.new_run(_doc())
    writer.append_eval(_eval(0, 0.5))
    run_dir = store.runs_dir / writer.run_id
    events: list[tuple[str, str]] = []
    real_fsync, real_replace, real_unlink = os.fsync, os.replace, Path.unlink

    def fsync(fd: int) -> None:
        events.append(("fsync", os.path.basename(os.readlink(f"/proc/self/fd/{fd}"))))
        real_fsync(fd)

    def replace(src, dst) -> None:
        events.append(("replace", os.path.basename(dst)))
        real_replace(src, dst)

    def unlink(path: Path, missing_ok: bool = False) -> None:
        events.append(("unlink", path.name))
        real_unlink(path, missing_ok=missing_ok)

    monkeypatch.setattr(store_module.os, "fsync", fsync)
    monkeypatch.setattr(store_module.os, "replace", replace)
    monkeypatch.setattr(Path, "unlink", unlink)
    writer.finish("complete")
    monkeypatch.undo()
    live = events.index(("unlink", R.EVALS_LIVE))
    before = events[:live]
    sealed = before.index(("replace", R.EVALS_SEALED))
    assert any(kind == "fsync" and name.startswith(f".{R.EVALS_SEALED}")
               for kind, name in before[:sealed]), events  # the file, before its rename
    assert ("fsync", run_dir.name) in before[sealed:], events  # its folder, after the rename
    assert pq.read_table(run_dir / R.EVALS_SEALED).num_rows == 1


def _full(*args, **kwargs):
    raise OSError(errno.ENOSPC, "No space left on device")


def test_a_store_with_no_room_for_the_reserve_is_refused_naming_it(tmp_path, monkeypatch):
    """A launcher takes its space reserve first: on a full disk it fails naming the store,
    before anything is written, and the reserve leaves no file behind either way."""
    store = open_store(tmp_path / "s", create=True)
    before = sorted(store.root.iterdir())
    reserve = store.reserve_space(4096)
    assert sorted(store.root.iterdir()) == before and reserve.release()
    assert not reserve.release()  # once
    monkeypatch.setattr(os, "write", _full)
    with pytest.raises(OSError) as err:
        store.reserve_space()
    assert (err.value.errno, err.value.filename) == (errno.ENOSPC, str(store.root))
    assert sorted(store.root.iterdir()) == before


def test_a_run_stopped_by_a_full_disk_is_interrupted_and_leaves_no_empty_folder(tmp_path,
                                                                                 monkeypatch):
    store = open_store(tmp_path / "s", create=True)
    with pytest.raises(RuntimeError):
        with store.new_run(_doc("k1")):
            try:
                raise OSError(errno.ENOSPC, "No space left on device")
            except OSError:
                raise RuntimeError("a write failed")  # raised while handling it: still seen
    (doc,) = store.documents()
    assert (doc["status"], doc["stop_reason"]) == ("interrupted",
                                                   f"no space left on {store.root}")
    monkeypatch.setattr("workbench.store.atomic_write_json", _full)
    with pytest.raises(OSError):
        store.new_run(_doc("k2"))
    assert [p.name for p in store.runs_dir.iterdir()] == [doc["run_id"]]


def test_bad_input_to_the_store_is_a_user_error(tmp_path):
    """An unknown run id, a fixed field to amend, a run id that is no plain folder name: bad
    input (UserError, which the command line reports in one line), an unknown run a KeyError
    too; a bug of ours (a writer finishing with no final status) stays a plain ValueError."""
    from workbench.errors import UserError

    store = open_store(tmp_path, create=True)
    writer = store.new_run(_doc())
    for call in (lambda: store.run_doc("nope"), lambda: store.amend("nope", x=1),
                 lambda: store.row_files("evals", ["nope"])):
        with pytest.raises(UserError, match="no run 'nope' in ") as err:
            call()
        assert isinstance(err.value, KeyError) and str(err.value).startswith("no run 'nope'")
    with pytest.raises(UserError, match="only a finished run can be amended"):
        store.amend(writer.run_id, x=1)
    with pytest.raises(UserError, match="is not a plain folder name"):
        store.write_sealed_run({"status": "complete"}, None, "../escape")
    with pytest.raises(ValueError) as err:
        writer.finish("running")
    assert not isinstance(err.value, UserError)
    writer.finish("complete")
    with pytest.raises(UserError, match="fixed once written"):
        store.amend(writer.run_id, status="failed")
def test_eval_rows_are_flushed_each_and_fsynced_at_most_once_a_second(tmp_path, monkeypatch):
    """Every eval row reaches the OS before append_eval returns; the file is fsynced with the
    first row and then at most every EVAL_SYNC_EVERY_S (run_writer.py), not once per row."""
    import workbench.run_writer as store_module

    store = open_store(tmp_path, create=True)
    writer = store.new_run(_doc())
    synced: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(store_module.os, "fsync", lambda fd: synced.append(fd) or real_fsync(fd))
    live = store.runs_dir / writer.run_id / R.EVALS_LIVE
    for i in range(20):
        writer.append_eval(_eval(i, 0.5))
        assert len(read_jsonl(live)) == i + 1  # flushed: another reader sees it now
    assert len(synced) == 1
    writer._synced -= store_module.EVAL_SYNC_EVERY_S
    writer.append_eval(_eval(20, 0.5))
    assert len(synced) == 2
    writer.finish("complete")


def test_a_new_store_appears_whole_to_launches_started_beside_it(tmp_path):
    """Launches into one new store at once: none sees its folder without the store document
    (two of four concurrent studies once failed with 'not a Pacebench store'), every one opens
    the same store, and no hidden folder is left beside it."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    path, bare, stop = tmp_path / "new", [], threading.Event()

    def watch() -> None:
        while not stop.is_set():
            if path.exists() and not (path / R.STORE_DOC).exists():
                bare.append(True)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        with ThreadPoolExecutor(8) as pool:
            stores = list(pool.map(lambda _: open_store(path, create=True), range(8)))
    finally:
        stop.set()
        watcher.join()
    assert bare == [] and {s.root for s in stores} == {path}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["new"]
    assert {p.name for p in path.iterdir()} == {R.STORE_DOC, R.RUNS_DIR}
