"""A results store on disk: layout, crash-safe writes and listing.

A store is a directory::

    <store>/pacebench-store.json        schema version, creation time
    <store>/runs/<run_id>/run.json      the run document (rewritten atomically on each status change)
    <store>/runs/<run_id>/evals.jsonl   eval rows, appended and flushed one by one while the run lives
    <store>/runs/<run_id>/train.jsonl   training-loss rows, likewise
    <store>/runs/<run_id>/evals.parquet sealed eval rows, written when the run ends (then the
    <store>/runs/<run_id>/train.parquet   JSON-lines files are removed)
    <store>/runs/<run_id>/heartbeat     touched while the run lives
    <store>/pacebench-scoring.json      optional: the scoring rules of an imported benchmark
    <store>/index/runs-v1-*.parquet     optional: the run table of finished runs (derived data,
                                        written by workbench.query.refresh_index)

Each attempt at a trial gets its own folder, created with an atomic mkdir, so many processes on
many machines can write one store at once and nothing written is ever overwritten by another run.
A run killed at any moment keeps every row it flushed; its document still says `running`, and
readers show it as `interrupted` once its process is gone (same host) or its heartbeat is stale.
Nothing is pickled: documents are JSON, rows are JSON lines and Parquet.

Importers add finished runs in one step with Store.write_sealed_run: the folder is built and
fsynced under a hidden temporary name and renamed into place, so a reader (or a crash) sees the
whole run or none of it.
"""
from __future__ import annotations

import datetime as _dt
import json
import math
import os
import re
import shutil
import socket
import threading
import time
import uuid
from pathlib import Path
from typing import Any, Iterable, Mapping

from workbench import records as R

__all__ = ["Store", "RunWriter", "open_store", "StoreError", "atomic_write_json", "utc_now"]

HEARTBEAT_EVERY_S = 10.0   # a live run touches its heartbeat file this often
STALE_AFTER_S = 120.0      # a `running` run on another host with an older heartbeat is interrupted


class StoreError(RuntimeError):
    """The path is not a usable store, or a run document is unreadable."""


def utc_now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="milliseconds")


def _clean(value: Any) -> Any:
    """JSON-safe copy: non-finite floats become null (JSON has no NaN); tuples become lists."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if hasattr(value, "item") and callable(value.item):  # numpy / torch scalars
        return _clean(value.item())
    return value


def atomic_write_json(path: Path, doc: Mapping[str, Any]) -> None:
    """Write JSON so that readers see the old file or the new one, never a torn one."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        with open(tmp, "w") as f:
            json.dump(_clean(doc), f, indent=1, sort_keys=True)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _proc_start_ticks(pid: int) -> int | None:
    """Start time of a live process `pid` in clock ticks since boot (Linux), to tell a reused pid
    apart; None when there is no such process or it is dead (a zombie nobody has reaped yet)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return None if fields[0] in ("Z", "X", "x") else int(fields[19])
    except (OSError, IndexError, ValueError):
        return None


def _process_alive(process: Mapping[str, Any] | None, heartbeat: Path) -> bool:
    """Is the process that wrote a `running` document still alive?"""
    if not process:
        return False
    if process.get("host") == socket.gethostname() and Path("/proc").is_dir():
        ticks = _proc_start_ticks(int(process.get("pid") or -1))
        return ticks is not None and ticks == process.get("start_ticks")
    try:
        return time.time() - heartbeat.stat().st_mtime < STALE_AFTER_S
    except OSError:
        return False


def _fsync_path(path: Path) -> None:
    """fsync a file or a directory by path (a directory: makes the names in it durable)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_parquet_durable(table: "pa.Table", path: Path) -> None:  # noqa: F821
    """Write a Parquet file and fsync it (the caller renames it into place)."""
    import pyarrow.parquet as pq

    pq.write_table(table, path)
    _fsync_path(path)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_")[:40] or "x"


class RunWriter:
    """Writes one run attempt: its document, its eval and train rows, and the final seal.

    Use as a context manager: an exception inside marks the run `failed` with its traceback.
    """

    def __init__(self, path: Path, doc: dict[str, Any]) -> None:
        self.path = path
        self.doc = doc
        self._evals = open(path / R.EVALS_LIVE, "a")
        self._train = open(path / R.TRAIN_LIVE, "a")
        self._finished = False
        self._stop = threading.Event()
        self._beat = threading.Thread(target=self._heartbeat, daemon=True)
        self._beat.start()

    @property
    def run_id(self) -> str:
        return self.doc["run_id"]

    def _heartbeat(self) -> None:
        beat = self.path / R.HEARTBEAT
        while not self._stop.is_set():
            beat.touch()
            self._stop.wait(HEARTBEAT_EVERY_S)

    def update(self, **fields: Any) -> None:
        """Merge `fields` into the run document and rewrite it atomically."""
        self.doc.update(fields)
        atomic_write_json(self.path / R.RUN_DOC, self.doc)

    def append_eval(self, row: Mapping[str, Any]) -> None:
        """Append one eval row and make it durable before returning (evals are off the clock)."""
        self._evals.write(json.dumps(_clean({"run_id": self.run_id, **row})) + "\n")
        self._evals.flush()
        os.fsync(self._evals.fileno())

    def append_train(self, row: Mapping[str, Any]) -> None:
        """Append one training-loss row; flushed to the OS (survives a killed process)."""
        self._train.write(json.dumps(_clean({"run_id": self.run_id, **row})) + "\n")
        self._train.flush()

    def finish(self, status: str, stop_reason: str | None = None, error: str | None = None,
               **summary: Any) -> None:
        """Seal the rows into Parquet and record the final status; idempotent."""
        if self._finished:
            return
        if status not in R.TERMINAL:
            raise ValueError(f"final status must be one of {R.TERMINAL}, got {status!r}")
        self._finished = True
        self._stop.set()
        self._evals.close()
        self._train.close()
        _seal(self.path / R.EVALS_LIVE, self.path / R.EVALS_SEALED)
        _seal(self.path / R.TRAIN_LIVE, self.path / R.TRAIN_SEALED)
        self.update(status=status, stop_reason=stop_reason, error=error, ended_at=utc_now(),
                    **summary)

    def __enter__(self) -> "RunWriter":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc is not None:
            import traceback
            text = "".join(traceback.format_exception(exc_type, exc, tb))
            reason = "interrupted" if isinstance(exc, KeyboardInterrupt) else "failed"
            self.finish(reason, stop_reason=f"{exc_type.__name__}: {exc}"[:500], error=text)
        else:
            self.finish("complete")


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Rows of a JSON-lines file; a torn last line (the writer was killed mid-write) is dropped."""
    rows = []
    with open(path) as f:
        for line in f:
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                break
    return rows


def _seal(live: Path, sealed: Path) -> None:
    """JSON lines -> Parquet (atomic), then drop the JSON lines. Rows are never lost on the way."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if not live.exists():
        return
    rows = read_jsonl(live)
    if rows:
        # Columns are the union over all rows (a metric may first appear in a later row).
        keys = list(dict.fromkeys(k for row in rows for k in row))
        table = pa.Table.from_pydict({k: [row.get(k) for row in rows] for k in keys})
        tmp = sealed.with_name(f".{sealed.name}.tmp")
        pq.write_table(table, tmp)
        os.replace(tmp, sealed)
    live.unlink()


def _with_run_id(table: "pa.Table", run_id: str) -> "pa.Table":  # noqa: F821
    """`table` with its first column `run_id` set to `run_id` on every row."""
    import pyarrow as pa

    if "run_id" in table.column_names:
        table = table.drop_columns(["run_id"])
    return table.add_column(0, "run_id", pa.array([run_id] * table.num_rows, pa.string()))


class Store:
    """A results store rooted at a directory. See the module docstring for the layout."""

    def __init__(self, root: str | os.PathLike) -> None:
        self.root = Path(root)
        self.runs_dir = self.root / R.RUNS_DIR

    def __repr__(self) -> str:
        return f"Store({str(self.root)!r})"

    # -- creating ---------------------------------------------------------------------------
    def ensure(self) -> "Store":
        """Create the store's layout if absent; check the schema version if present."""
        self.runs_dir.mkdir(parents=True, exist_ok=True)
        doc_path = self.root / R.STORE_DOC
        if not doc_path.exists():
            atomic_write_json(doc_path, {"schema_version": R.SCHEMA_VERSION, "created": utc_now(),
                                         "format": "pacebench results store"})
        self.check()
        return self

    def check(self) -> None:
        doc_path = self.root / R.STORE_DOC
        if not doc_path.exists():
            raise StoreError(f"{self.root} is not a Pacebench store (no {R.STORE_DOC}); "
                             "create one with `pacebench study --store DIR` or open_store(DIR, create=True)")
        version = json.loads(doc_path.read_text()).get("schema_version")
        if version not in R.READABLE_SCHEMA_VERSIONS:
            raise StoreError(f"{self.root} has schema version {version}; this Pacebench reads "
                             f"{R.READABLE_SCHEMA_VERSIONS}: upgrade Pacebench")

    def new_run(self, doc: Mapping[str, Any], run_id: str | None = None) -> RunWriter:
        """Allocate a run folder (a new attempt of `doc['trial_key']`) and start writing it.

        `doc` holds the run's identity and config (see records.RUN_COLUMNS); `run_id` may be given
        by importers that need stable ids, and then must not exist yet.
        """
        self.ensure()
        doc = dict(doc)
        if run_id is None:
            prefix = f"{_slug(doc.get('workload', 'run'))}--{_slug(doc.get('algorithm', ''))}--" \
                     f"{doc['trial_key']}"
            attempt = 1 + sum(1 for _ in self.runs_dir.glob(f"{prefix}-a*"))
            while True:
                path = self.runs_dir / f"{prefix}-a{attempt}"
                try:
                    path.mkdir()
                    break
                except FileExistsError:
                    attempt += 1
            doc["attempt"] = attempt
        else:
            path = self.runs_dir / run_id
            path.mkdir()
            doc.setdefault("attempt", 1)
        doc.update(schema_version=R.SCHEMA_VERSION, run_id=path.name, status="running",
                   started_at=utc_now(), ended_at=None,
                   process={"host": socket.gethostname(), "pid": os.getpid(),
                            "start_ticks": _proc_start_ticks(os.getpid())})
        atomic_write_json(path / R.RUN_DOC, doc)
        return RunWriter(path, doc)

    def write_sealed_run(self, doc: Mapping[str, Any], evals: "pa.Table",  # noqa: F821
                         run_id: str, train: "pa.Table | None" = None) -> bool:  # noqa: F821
        """Add a finished run in one step (for importers): its document and its sealed rows.

        `doc` is the run document (see records.RUN_COLUMNS; its status must be terminal);
        `evals` and `train` are the rows as Arrow tables, records.EVAL_COLUMNS / TRAIN_COLUMNS
        and metric columns (`run_id` is set here). The files are written and fsynced in a hidden
        folder under runs/, which is then renamed to `run_id`: readers and crashes see the whole
        run or nothing (a crash leaves only a hidden `.tmp-*` folder that readers ignore).
        Thread-safe. Returns False, writing nothing, when run `run_id` already exists.
        """
        status = doc.get("status")
        if status not in R.TERMINAL:
            raise ValueError(f"a sealed run needs a final status, one of {R.TERMINAL}; got {status!r}")
        if not re.fullmatch(r"[A-Za-z0-9_.-]+", run_id) or run_id.startswith("."):
            raise ValueError(f"run id {run_id!r} is not a plain folder name: use letters, digits, "
                             "'_', '.', '-' (not leading '.')")
        lacking = [c for c in R.EVAL_COLUMNS[1:] if c not in evals.column_names]
        if lacking:
            raise ValueError(f"eval rows lack columns {lacking}: give {list(R.EVAL_COLUMNS[1:])} "
                             "(null where unknown) and the <split>/<metric> columns")
        final = self.runs_dir / run_id
        if final.exists():
            return False
        tmp = self.runs_dir / f".tmp-{run_id}-{uuid.uuid4().hex[:12]}"
        tmp.mkdir(parents=True)
        try:
            for table, name in ((evals, R.EVALS_SEALED), (train, R.TRAIN_SEALED)):
                if table is not None and table.num_rows:
                    _write_parquet_durable(_with_run_id(table, run_id), tmp / name)
            full = {"attempt": 1, **doc, "schema_version": R.SCHEMA_VERSION, "run_id": run_id}
            with open(tmp / R.RUN_DOC, "w") as f:
                json.dump(_clean(full), f, indent=1, sort_keys=True)
                f.flush()
                os.fsync(f.fileno())
            _fsync_path(tmp)
            try:
                os.rename(tmp, final)  # fails when `final` exists and is not empty
            except OSError:
                return False
            _fsync_path(self.runs_dir)
            return True
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)

    # -- the scoring rules and the run index ------------------------------------------------
    def scoring_config(self) -> dict[str, Any] | None:
        """The store's scoring rules (records.SCORING_DOC), or None: score by the plain rules."""
        path = self.root / R.SCORING_DOC
        try:
            return json.loads(path.read_text())
        except FileNotFoundError:
            return None
        except json.JSONDecodeError as e:
            raise StoreError(f"{path} is not valid JSON ({e}); delete it to score by the plain "
                             "rules, or import the benchmark's logs again") from None

    def write_scoring_config(self, doc: Mapping[str, Any]) -> None:
        """Record how the store is scored (see workbench.scoring.ScoringConfig.to_dict)."""
        self.ensure()
        atomic_write_json(self.root / R.SCORING_DOC, doc)

    def index_parts(self) -> list[Path]:
        """Parquet parts of the run index readable by this schema version, sorted by name."""
        folder = self.root / R.INDEX_DIR
        if not folder.is_dir():
            return []
        return sorted(p for p in folder.iterdir()
                      if p.name.startswith(R.INDEX_PART_PREFIX) and p.name.endswith(".parquet"))

    def write_index_part(self, table: "pa.Table") -> Path:  # noqa: F821
        """Add one part to the run index, atomically (readers see all of it or none of it)."""
        folder = self.root / R.INDEX_DIR
        folder.mkdir(exist_ok=True)
        name = f"{R.INDEX_PART_PREFIX}{time.time_ns():020d}-{uuid.uuid4().hex[:8]}.parquet"
        tmp = folder / f".{name}.tmp"
        try:
            _write_parquet_durable(table, tmp)
            os.replace(tmp, folder / name)
        finally:
            tmp.unlink(missing_ok=True)
        return folder / name

    def drop_index_parts(self, parts: Iterable[Path]) -> None:
        """Remove index parts (after their rows were written into a merged part)."""
        for part in parts:
            Path(part).unlink(missing_ok=True)

    # -- reading ----------------------------------------------------------------------------
    def run_dirs(self) -> list[Path]:
        """Folders of the runs (hidden folders, i.e. runs being added, are not runs yet)."""
        if not self.runs_dir.is_dir():
            return []
        return sorted(p for p in self.runs_dir.iterdir()
                      if not p.name.startswith(".") and (p / R.RUN_DOC).exists())

    def run_doc(self, run_id: str) -> dict[str, Any]:
        path = self.runs_dir / run_id / R.RUN_DOC
        try:
            return self._effective(json.loads(path.read_text()), path.parent)
        except FileNotFoundError:
            raise KeyError(f"no run {run_id!r} in {self.root}") from None

    def _effective(self, doc: dict[str, Any], run_dir: Path) -> dict[str, Any]:
        """A `running` document whose process is gone reads as `interrupted`."""
        if doc.get("status") == "running" and not _process_alive(doc.get("process"),
                                                                run_dir / R.HEARTBEAT):
            doc = {**doc, "status": "interrupted",
                   "stop_reason": doc.get("stop_reason") or "process ended without sealing the run"}
        return doc

    def live_status(self, run_ids: Iterable[str]) -> dict[str, str]:
        """Effective status of runs whose documents say `running` (alive or interrupted)."""
        return {rid: self.run_doc(rid)["status"] for rid in run_ids}

    def runs(self) -> "pd.DataFrame":  # noqa: F821
        """One row per run attempt, columns records.RUN_COLUMNS (see workbench.query.runs_frame)."""
        from workbench import query
        return query.runs_frame(self)

    def evals(self, run_ids: Iterable[str] | None = None) -> "pd.DataFrame":  # noqa: F821
        """One row per eval: records.EVAL_COLUMNS then the `<split>/<metric>` columns."""
        from workbench import query
        return query.evals_frame(self, run_ids)

    def train_rows(self, run_ids: Iterable[str] | None = None) -> "pd.DataFrame":  # noqa: F821
        """One row per recorded training loss: records.TRAIN_COLUMNS."""
        from workbench import query
        return query.train_frame(self, run_ids)

    def done_trial_keys(self) -> set[str]:
        """Trial keys with a complete or diverged attempt: what `--resume` does not run again."""
        done = set()
        for d in self.run_dirs():
            doc = json.loads((d / R.RUN_DOC).read_text())
            if doc.get("status") in R.DONE_STATUSES:
                done.add(doc.get("trial_key"))
        return done

    def mark_interrupted(self, run_id: str, reason: str) -> None:
        """Record that a run's process died (called by the launcher that saw it die)."""
        path = self.runs_dir / run_id / R.RUN_DOC
        doc = json.loads(path.read_text())
        if doc.get("status") == "running":
            doc.update(status="interrupted", stop_reason=reason, ended_at=utc_now())
            atomic_write_json(path, doc)


def open_store(path: str | os.PathLike, create: bool = False) -> Store:
    """Open the results store at `path` (create it when `create` is true)."""
    store = Store(path)
    if create:
        return store.ensure()
    store.check()
    return store
