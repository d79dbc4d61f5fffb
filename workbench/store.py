"""A results store on disk: its layout, crash-safe writes and document-level reads.

A store is a directory (the names are records.py's; this module is the only one that turns them
into paths)::

    <store>/pacebench-store.json        schema version, creation time
    <store>/runs/<run_id>/run.json      the run document (rewritten atomically on each status change)
    <store>/runs/<run_id>/evals.jsonl   eval rows, appended and flushed one by one while the run lives
    <store>/runs/<run_id>/train.jsonl   training-loss rows, likewise
    <store>/runs/<run_id>/evals.parquet sealed eval rows, written when the run ends (then the
    <store>/runs/<run_id>/train.parquet   JSON-lines files are removed)
    <store>/runs/<run_id>/heartbeat     touched while the run lives
    <store>/pacebench-scoring.json      optional: the scoring rules of an imported benchmark
    <store>/index/runs-v1-*.parquet     optional: the run table of finished runs (derived data,
                                        written by workbench.run_index.refresh_index)
    <store>/logs/<study>-<trial>.log    a worker's output
    <store>/checkpoints/<trial>.pt      a long run's training state (runners/run/checkpoint.py)
    <store>/pruning/<study>/<trial>.json  the early-stopping tuner's record of a trial
    <store>/studies/<study>.json        a study's summary
    <store>/planning.lock               launches check and record their plans one at a time
    <store>/plans/<study>.json          every trial config the study's launches planned

Each attempt at a trial gets its own folder, created with an atomic mkdir, so many processes on
many machines can write one store at once and nothing written is ever overwritten by another run.
A run killed at any moment keeps every row it flushed; its document still says `running`, and
readers show it as `interrupted` once its process is gone (same host: psutil finds no process of
its pid that started when the document says) or its heartbeat is stale (another host).
Nothing is pickled: documents are JSON, rows are JSON lines and Parquet.

Importers add finished runs in one step with Store.write_sealed_run: the folder is built and
fsynced under a hidden temporary name and renamed into place, so a reader (or a crash) sees the
whole run or none of it. A finished run's document changes afterwards only through Store.amend,
which keeps its identity and status.

Every reader opens only regular files inside the store (file_problem, read_regular): a FIFO
would block it, a device never end, a link lead out of the store; such a run is skipped with a
warning naming it.

This module reads documents and files; tables of runs and rows (pandas, DuckDB) are
workbench.query's, which reads the files this module lists.
"""
from __future__ import annotations

import contextlib
import datetime as _dt
import errno
import fcntl
import glob
import hashlib
import json
import math
import os
import re
import shutil
import socket
import stat
import sys
import tempfile
import threading
import time
import uuid
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

import psutil

from workbench import records as R
from workbench.errors import UserError

__all__ = ["Store", "SealedBatch", "RunWriter", "TrialClaim", "SpaceReserve", "open_store",
           "StoreError", "atomic_write_json", "utc_now", "read_jsonl", "no_space", "full_path",
           "NO_SPACE_ERRNOS", "ROW_KINDS", "UnsafeFile", "file_problem", "read_regular"]

# The two kinds of rows of a run: kind -> (sealed Parquet file, live JSON-lines file).
ROW_KINDS = {"evals": (R.EVALS_SEALED, R.EVALS_LIVE), "train": (R.TRAIN_SEALED, R.TRAIN_LIVE)}
# What Store.amend may not change: who the run is, how it ended and what its rows say.
_FIXED = frozenset(R.IDENTITY_FIELDS) | {"run_id", "schema_version", "attempt", "status",
                                         "stop_reason", "started_at", "ended_at", "process",
                                         R.EVAL_SUMMARY}

HEARTBEAT_EVERY_S = 10.0   # a live run touches its heartbeat file this often
EVAL_SYNC_EVERY_S = 1.0    # a live run fsyncs its eval rows at most this often (each is flushed)
STALE_AFTER_S = 120.0      # a `running` run on another host with an older heartbeat is interrupted


STALE_TEMP_S = 24 * 3600.0  # a batch's temp folder from another host, or unowned, this old is
                           # left by a killed importer (one of this host: its process is gone)
NO_SPACE_ERRNOS = (errno.ENOSPC, errno.EDQUOT)  # a full disk, or a full quota


def no_space(err: BaseException | None) -> OSError | None:
    """The full-disk (or full-quota) error that `err` is or was raised while handling (its
    causes and contexts), or None."""
    seen = 0
    while err is not None and seen < 20:
        if isinstance(err, OSError) and err.errno in NO_SPACE_ERRNOS:
            return err
        err, seen = err.__cause__ or err.__context__, seen + 1
    return None


def full_path(err: OSError, root: str | os.PathLike) -> str:
    """The folder to name for a full disk: the store at `root` when the write that failed was
    in it (or named no file), else the file's path."""
    name = err.filename
    if not name or Path(os.path.abspath(name)).is_relative_to(os.path.abspath(root)):
        return str(root)
    return str(name)


class UnsafeFile(OSError):
    """A path in a store that is no regular file inside it (a FIFO, a socket, a device, a folder,
    a link out of the store): never opened. Its text names the file and what it is."""


_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))


def _kind(mode: int) -> str:
    return next((words for test, words in _KINDS if test(mode)), "of an unknown kind")


def file_problem(path: str | os.PathLike, root: str | os.PathLike,
                 st: os.stat_result | None = None) -> str | None:
    """Why the file at `path` may not be opened as part of the store at `root` (None when it may;
    FileNotFoundError when there is nothing there): every reader of a store opens only regular
    files inside it. A FIFO blocks its reader until a writer comes (DuckDB too), a device may
    give endless bytes, and a link may lead out of the store. One lstat (`st`: its result, when
    the caller has it); a link costs a realpath more."""
    st = os.lstat(path) if st is None else st
    if stat.S_ISREG(st.st_mode):
        return None
    if not stat.S_ISLNK(st.st_mode):
        return f"{path} is not a regular file ({_kind(st.st_mode)})"
    real, inside = os.path.realpath(path), os.path.realpath(root)
    if os.path.commonpath([real, inside]) != inside:
        return f"{path} is a link out of the store (to {real[:120]})"
    target = os.stat(real)
    return None if stat.S_ISREG(target.st_mode) else \
        f"{path} is a link to {_kind(target.st_mode)}, not a regular file"


def read_regular(path: str | os.PathLike, root: str | os.PathLike
                 ) -> tuple[bytes, os.stat_result]:
    """(the bytes, the fstat) of the store file `path` when file_problem allows it; UnsafeFile
    otherwise (FileNotFoundError when there is none). Opened without blocking and checked again
    after the open, in case another file was swapped in between."""
    problem = file_problem(path, root)
    if problem:
        raise UnsafeFile(problem)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UnsafeFile(f"{path} is not a regular file ({_kind(st.st_mode)})")
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks), st
    finally:
        os.close(fd)


class StoreError(UserError, RuntimeError):
    """The path is not a usable store, or a run document is unreadable."""


def utc_now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="milliseconds")


def _clean(value: Any) -> Any:
    """JSON-safe copy: non-finite floats become null (JSON has no NaN); tuples become lists."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if value is None or isinstance(value, (str, int)):  # before the Mapping check, which is slow
        return value
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


def _started_after_boot(pid: int) -> float | None:
    """When the live process `pid` started, in seconds after the machine booted (psutil), to tell
    a reused pid apart; None when there is no such process or it is dead (a zombie nobody has
    reaped yet). Seconds after boot, not after the epoch: a wall-clock start moves when the
    clock is set, and so does the boot time; their difference does not."""
    for _ in range(3):  # the boot time read twice alike: the clock was not set in between
        try:
            process, boot = psutil.Process(pid), psutil.boot_time()
            started = process.create_time() - boot
            if process.status() == psutil.STATUS_ZOMBIE:
                return None
        except (psutil.Error, OSError, ValueError):
            return None
        if psutil.boot_time() == boot:
            return started
    return None


def _same_start(process: Mapping[str, Any], started: float) -> bool:
    """Whether a run document's `process` entry names the process that started `started`
    seconds after boot. Documents written before psutil was used give clock ticks after boot
    (`start_ticks`, read from Linux's /proc)."""
    recorded = process.get("started_after_boot")
    if recorded is None and process.get("start_ticks") is not None and hasattr(os, "sysconf"):
        recorded = process["start_ticks"] / os.sysconf("SC_CLK_TCK")
    # the kernel counts the start in clock ticks (10 ms); psutil's float sum rounds below that
    return isinstance(recorded, (int, float)) and abs(recorded - started) < 0.005


def _process_alive(process: Mapping[str, Any] | None, heartbeat: Path) -> bool:
    """Is the process that wrote a `running` document still alive? On this host psutil says
    (its pid, started when the document says); on another, the heartbeat's age."""
    if not process:
        return False
    if process.get("host") == socket.gethostname():
        started = _started_after_boot(int(process.get("pid") or -1))
        return started is not None and _same_start(process, started)
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


def _sync_many(paths: list[Path], folder: Path) -> None:
    """Make the files and folders `paths`, all under `folder`, durable: on Linux one syncfs(2)
    of the file system holding `folder` (it returns once everything written to it is on disk);
    elsewhere, or when that fails, an fsync of each path from parallel threads (the file system
    commits many at once). Measured on this project's 2-core machine with 128 imported runs:
    syncfs 0.01 ms of CPU and 0.04 to 0.16 ms of wall time a run, the fsyncs 0.3 to 0.45 ms of
    each (one run's fsyncs after another's: 11 ms a run)."""
    if len(paths) > 1 and _syncfs(folder):
        return
    if len(paths) > 1:
        with ThreadPoolExecutor(min(8, len(paths))) as pool:
            list(pool.map(_fsync_path, paths))
    else:
        for path in paths:
            _fsync_path(path)


def _syncfs(folder: Path) -> bool:
    """syncfs(2) of the file system holding `folder`; False where there is none (not Linux)
    or it failed (the caller then fsyncs file by file, which reports the error)."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    try:
        syncfs = ctypes.CDLL(None, use_errno=True).syncfs
    except (OSError, AttributeError):
        return False
    fd = os.open(folder, os.O_RDONLY)
    try:
        return syncfs(fd) == 0
    finally:
        os.close(fd)


def _write_parquet(table: "pa.Table", path: Path, durable: bool = True) -> None:  # noqa: F821
    """Write a Parquet file and (durable) fsync it; the caller renames it into place."""
    import pyarrow.parquet as pq

    with open(path, "wb") as f:  # a Python file: pyarrow resolving the path took longer
        pq.write_table(table, f)
        if durable:
            f.flush()
            os.fsync(f.fileno())


def _slug(text: str) -> str:
    """A short plain part of a run folder's name."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_")[:40] or "x"


class SpaceReserve:
    """Disk space held by a launcher (Store.reserve_space): an open file with no name, whose
    blocks are freed by release() or by the process's end."""

    def __init__(self, fd: int) -> None:
        self._fd: int | None = fd

    def release(self) -> bool:
        """Free the space; whether there was any to free."""
        if self._fd is None:
            return False
        os.close(self._fd)
        self._fd = None
        return True


class TrialClaim:
    """A held claim on a trial (Store.claim); release() ends it, as does the process's end."""

    def __init__(self, fd: int) -> None:
        self._fd: int | None = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor releases its lock
            self._fd = None


def _file_part(name: str) -> str:
    """A study name as a file or folder name inside the store: letters, digits, '_', '.', '-',
    never hidden or a parent folder (a plain name is kept as it is)."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", str(name)).lstrip(".")[:120] or "_"


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
        self._synced = -math.inf  # time.monotonic() of the last fsync of the eval rows
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
        """Append one eval row, flushed to the OS before returning (a killed process keeps it),
        and fsynced when the last fsync is EVAL_SYNC_EVERY_S old: a machine's crash loses at
        most that much of rows. An fsync per row cost more wall time than the 5 training steps
        between two evals of digits_mlp (docs/performance.md)."""
        self._evals.write(json.dumps(_clean({"run_id": self.run_id, **row})) + "\n")
        self._evals.flush()
        now = time.monotonic()
        if now - self._synced >= EVAL_SYNC_EVERY_S:
            os.fsync(self._evals.fileno())
            self._synced = now

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
        evals = _seal(self.path / R.EVALS_LIVE, self.path / R.EVALS_SEALED)
        _seal(self.path / R.TRAIN_LIVE, self.path / R.TRAIN_SEALED)
        self.doc.pop(R.EVAL_SUMMARY, None)
        sealed = R.eval_summary(evals, self.doc)
        if sealed is not None:
            summary[R.EVAL_SUMMARY] = sealed
        self.update(status=status, stop_reason=stop_reason, error=error, ended_at=utc_now(),
                    **summary)

    def __enter__(self) -> "RunWriter":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc is not None:
            import traceback
            text = "".join(traceback.format_exception(exc_type, exc, tb))
            reason = f"{exc_type.__name__}: {exc}"[:500]
            full = no_space(exc)  # not the run's fault: `interrupted`, and --resume runs it again
            if full is not None:
                reason = f"no space left on {full_path(full, self.path.parent.parent)}"
            status = "interrupted" if isinstance(exc, KeyboardInterrupt) or full else "failed"
            self.finish(status, stop_reason=reason, error=text)
        else:
            self.finish("complete")


def read_jsonl(path: Path, root: str | os.PathLike | None = None) -> list[dict[str, Any]]:
    """Rows of a JSON-lines file; a torn last line (the writer was killed mid-write) is dropped.
    `root`: the store the file belongs to, when it is read from a store others wrote (then only
    a regular file inside it is opened: read_regular)."""
    if root is not None:
        lines = read_regular(path, root)[0].decode("utf-8").splitlines()
    else:
        with open(path) as f:
            lines = f.readlines()
    rows = []
    for line in lines:
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            break
    return rows


def _seal(live: Path, sealed: Path) -> list[dict[str, Any]]:
    """JSON lines -> Parquet, then drop the JSON lines; returns the rows sealed. Rows are never
    lost on the way: the Parquet file is written under a temporary name and fsynced, renamed
    into place and its folder fsynced (the new name is durable), and only then is the live file
    removed. A crash in between leaves both files, and readers take the sealed one."""
    import pyarrow as pa

    if not live.exists():
        return []
    rows = read_jsonl(live)
    if rows:
        # Columns are the union over all rows (a metric may first appear in a later row).
        keys = list(dict.fromkeys(k for row in rows for k in row))
        table = pa.Table.from_pydict({k: [row.get(k) for row in rows] for k in keys})
        tmp = sealed.with_name(f".{sealed.name}.tmp")
        try:
            _write_parquet(table, tmp)  # fsynced
        except BaseException:  # e.g. a full disk: no half-written file left behind
            tmp.unlink(missing_ok=True)
            raise
        os.replace(tmp, sealed)
        _fsync_path(sealed.parent)
    live.unlink()
    return rows


def _with_run_id(table: "pa.Table", run_id: str) -> "pa.Table":  # noqa: F821
    """`table` with its first column `run_id` set to `run_id` on every row."""
    import pyarrow as pa

    if "run_id" in table.column_names:
        table = table.drop_columns(["run_id"])
    return table.add_column(0, "run_id", pa.repeat(pa.scalar(run_id, pa.string()), table.num_rows))


def _host_tag(host: str | None = None) -> str:
    """8 hex digits naming a host in temp folder names (any hostname fits a file name so)."""
    return hashlib.sha256((host or socket.gethostname()).encode()).hexdigest()[:8]


_TEMP_NAME = re.compile(r"\.tmp-[0-9a-f]{12}-(\d+)-([0-9a-f]{8})-")


def _temp_left(path: Path, now: float) -> bool:
    """Whether the batch temp folder `path` was left by a killed importer: its owner (pid and
    host in its name) is a process of this host that is gone (or a later one under its pid);
    of another host, or unnamed, when untouched for STALE_TEMP_S."""
    try:
        mtime = path.stat().st_mtime
    except OSError:
        return False
    owner = _TEMP_NAME.match(path.name)
    if owner is None or owner.group(2) != _host_tag():
        return now - mtime > STALE_TEMP_S
    try:
        return psutil.Process(int(owner.group(1))).create_time() > mtime + 1.0
    except (psutil.Error, ValueError, OverflowError):
        return True


class SealedBatch:
    """Finished runs added to a store together (importers): `add` writes each run, as
    Store.write_sealed_run describes, into a hidden folder under runs/; `publish` makes them
    durable and renames them into place. The files and folders of the whole batch are made
    durable together before any rename (_sync_many), and runs/ is fsynced once after the
    renames, so readers and crashes still see each run whole or not at all. Leaving the `with`
    block removes the folders added and not published. `add` is thread-safe; `publish` is
    called once, from one thread.

        with store.sealed_batch() as batch:
            for doc, evals, run_id in runs:
                batch.add(doc, evals, run_id)    # False: the run exists, nothing written
            added = batch.publish()              # run id -> True, or False when it exists now
    """

    def __init__(self, store: "Store", durable: bool = True) -> None:
        self.store = store
        self.durable = durable
        self._staged: list[tuple[str, Path, list[Path]]] = []  # run id, folder, files written

    def add(self, doc: Mapping[str, Any], evals: "pa.Table | None",  # noqa: F821
            run_id: str, train: "pa.Table | None" = None) -> bool:  # noqa: F821
        """Write one finished run into its hidden folder (see Store.write_sealed_run for the
        arguments and the checks); False, writing nothing, when run `run_id` exists."""
        status = doc.get("status")
        if status not in R.TERMINAL:
            raise ValueError(f"a sealed run needs a final status, one of {R.TERMINAL}; got {status!r}")
        if not re.fullmatch(r"[A-Za-z0-9_.-]+", run_id) or run_id.startswith("."):
            raise ValueError(f"run id {run_id!r} is not a plain folder name: use letters, digits, "
                             "'_', '.', '-' (not leading '.')")
        lacking = [] if evals is None else \
            [c for c in R.EVAL_COLUMNS[1:] if c not in evals.column_names]
        if lacking:
            raise ValueError(f"eval rows lack columns {lacking}: give {list(R.EVAL_COLUMNS[1:])} "
                             "(null where unknown) and the <split>/<metric> columns")
        for table in (evals, train):
            if table is not None:
                R.check_row_columns(table.column_names)
        runs_dir = self.store.runs_dir
        if (runs_dir / run_id).exists():
            return False
        tmp = runs_dir / f".tmp-{uuid.uuid4().hex[:12]}-{os.getpid()}-{_host_tag()}-{run_id}"
        tmp.mkdir(parents=True)
        try:
            files = []
            for table, name in ((evals, R.EVALS_SEALED), (train, R.TRAIN_SEALED)):
                if table is not None and table.num_rows:
                    _write_parquet(_with_run_id(table, run_id), tmp / name, durable=False)
                    files.append(tmp / name)
            full = {"attempt": 1, **doc, "schema_version": R.SCHEMA_VERSION, "run_id": run_id}
            full.pop(R.EVAL_SUMMARY, None)  # what the rows say, never what the caller says
            rows = [] if evals is None else \
                evals.select(R.summary_columns(evals.column_names, full)).to_pylist()
            sealed = R.eval_summary(rows, full)
            if sealed is not None:
                full[R.EVAL_SUMMARY] = sealed
            with open(tmp / R.RUN_DOC, "w") as f:  # one write: json.dump writes piece by piece
                f.write(json.dumps(_clean(full), indent=1, sort_keys=True))
            files.append(tmp / R.RUN_DOC)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        self._staged.append((run_id, tmp, files))
        return True

    def publish(self) -> dict[str, bool]:
        """Make the added runs durable and rename them into place: run id -> True, or False
        when a run of that id appeared meanwhile (its folder is removed, nothing overwritten)."""
        staged, self._staged = self._staged, []
        try:
            if self.durable:
                _sync_many([p for _, tmp, files in staged for p in (*files, tmp)],
                           self.store.runs_dir)
            added = {}
            for run_id, tmp, _ in staged:
                try:
                    os.rename(tmp, self.store.runs_dir / run_id)  # fails when it exists, not empty
                    added[run_id] = True
                except OSError:
                    added[run_id] = False
            if self.durable and any(added.values()):
                _fsync_path(self.store.runs_dir)
            return added
        finally:
            for _, tmp, _ in staged:
                if tmp.exists():
                    shutil.rmtree(tmp, ignore_errors=True)

    def __enter__(self) -> "SealedBatch":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        staged, self._staged = self._staged, []
        for _, tmp, _ in staged:
            shutil.rmtree(tmp, ignore_errors=True)


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
        try:
            doc = json.loads(doc_path.read_text())
        except (OSError, UnicodeDecodeError, ValueError) as err:
            raise StoreError(f"{doc_path} cannot be read as a store's document ({err}); it is "
                             "a JSON object written by Pacebench") from None
        if not isinstance(doc, dict):
            raise StoreError(f"{doc_path} holds {json.dumps(doc)[:40]}, not a store's "
                             "document (a JSON object written by Pacebench)")
        version = doc.get("schema_version")
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
                            "started_after_boot": _started_after_boot(os.getpid())})
        try:
            atomic_write_json(path / R.RUN_DOC, doc)
        except BaseException:  # e.g. a full disk: leave no empty attempt folder behind
            shutil.rmtree(path, ignore_errors=True)
            raise
        return RunWriter(path, doc)

    def write_sealed_run(self, doc: Mapping[str, Any], evals: "pa.Table | None",  # noqa: F821
                         run_id: str, train: "pa.Table | None" = None,  # noqa: F821
                         durable: bool = True) -> bool:
        """Add a finished run in one step (for importers): its document and its sealed rows.

        `doc` is the run document (see records.RUN_COLUMNS; its status must be terminal);
        `evals` and `train` are the rows as Arrow tables, records.EVAL_COLUMNS / TRAIN_COLUMNS
        and metric columns (`run_id` is set here). The files are written and fsynced in a hidden
        folder under runs/, which is then renamed to `run_id`: readers and crashes see the whole
        run or nothing (a crash leaves only a hidden `.tmp-*` folder that readers ignore).
        `durable=False` skips the fsyncs (fake stores that nobody reads while they are made).
        Thread-safe. Returns False, writing nothing, when run `run_id` already exists. Many runs
        at once: sealed_batch, which makes them durable together.
        """
        with self.sealed_batch(durable) as batch:
            return batch.add(doc, evals, run_id, train) and batch.publish()[run_id]

    def sealed_batch(self, durable: bool = True) -> "SealedBatch":
        """A SealedBatch of this store: finished runs added together (see SealedBatch)."""
        return SealedBatch(self, durable)

    def remove_left_temps(self) -> int:
        """Remove the `.tmp-*` folders under runs/ that killed importers (merge, import) left
        (_temp_left: never a live one's); how many were removed."""
        now, removed = time.time(), 0
        try:
            names = [n for n in os.listdir(self.runs_dir) if n.startswith(".tmp-")]
        except OSError:
            return 0
        for name in names:
            path = self.runs_dir / name
            if not path.is_symlink() and path.is_dir() and _temp_left(path, now):
                shutil.rmtree(path, ignore_errors=True)
                removed += 1
        return removed

    # -- the scoring rules and the run index ------------------------------------------------
    def scoring_config(self) -> dict[str, Any] | None:
        """The store's scoring rules (records.SCORING_DOC), or None: score by the plain rules."""
        path = self.root / R.SCORING_DOC
        try:
            return json.loads(self.read_file(path))
        except FileNotFoundError:
            return None
        except UnsafeFile as e:
            raise StoreError(f"{e}: the scoring rules are a regular JSON file") from None
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
        with os.scandir(folder) as entries:  # regular files only: DuckDB would block on a FIFO
            return sorted(folder / e.name for e in entries
                          if e.name.startswith(R.INDEX_PART_PREFIX)
                          and e.name.endswith(".parquet") and e.is_file(follow_symlinks=False))

    def write_index_part(self, table: "pa.Table") -> Path:  # noqa: F821
        """Add one part to the run index, atomically (readers see all of it or none of it). Its
        name ends with the start of its bytes' sha256 (read_index_part checks it)."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        folder = self.root / R.INDEX_DIR
        folder.mkdir(exist_ok=True)
        sink = pa.BufferOutputStream()
        pq.write_table(table, sink)
        data = sink.getvalue().to_pybytes()
        name = f"{R.INDEX_PART_PREFIX}{time.time_ns():020d}-{_digest(data)}.parquet"
        tmp = folder / f".{name}.{uuid.uuid4().hex[:8]}.tmp"
        try:
            with open(tmp, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, folder / name)
        finally:
            tmp.unlink(missing_ok=True)
        return folder / name

    def read_index_part(self, path: Path) -> bytes | None:
        """The bytes of index part `path`, or None when it cannot be read or they are not what
        was written (the digest in its name differs: the part was edited, or torn)."""
        try:
            data = self.read_file(path)
        except OSError:
            return None
        return data if path.name.endswith(f"-{_digest(data)}.parquet") else None

    def older_index_parts(self) -> list[Path]:
        """Parts of the run index written by older index versions (never read)."""
        folder = self.root / R.INDEX_DIR
        if not folder.is_dir():
            return []
        return [p for p in folder.glob("runs-v*.parquet")
                if not p.name.startswith(R.INDEX_PART_PREFIX)]

    def drop_index_parts(self, parts: Iterable[Path]) -> None:
        """Remove index parts (after their rows were written into a merged part)."""
        for part in parts:
            Path(part).unlink(missing_ok=True)

    # -- the layout of other files ---------------------------------------------------------
    def run_path(self, run_id: str) -> Path:
        """The folder of run `run_id` (it may not exist)."""
        return self.runs_dir / run_id

    def read_file(self, path: str | os.PathLike) -> bytes:
        """The bytes of a file of this store: a regular file inside it only (read_regular;
        UnsafeFile otherwise, FileNotFoundError when there is none)."""
        return read_regular(path, self.root)[0]

    def has_run(self, run_id: str) -> bool:
        return (self.runs_dir / run_id / R.RUN_DOC).exists()

    def log_path(self, study_name: str, trial_key: str) -> Path:
        """Where a worker running trial `trial_key` of `study_name` writes its output (the
        folder is created)."""
        folder = self.root / R.LOGS_DIR
        folder.mkdir(parents=True, exist_ok=True)
        return folder / f"{_file_part(study_name)}-{trial_key}.log"

    def checkpoint_path(self, trial_key: str) -> Path:
        """Where the training state of trial `trial_key` is saved (runners/run/checkpoint.py)."""
        return self.root / R.CHECKPOINTS_DIR / f"{trial_key}.pt"

    # -- run documents ----------------------------------------------------------------------
    def run_names(self) -> list[str] | None:
        """The names of the folders under runs/, sorted, a writer's temporary folder (a name
        starting with '.') left out; None when there is no runs folder. One directory listing,
        which run_ids and signature can share."""
        try:
            return sorted(n for n in os.listdir(self.runs_dir) if not n.startswith("."))
        except OSError:
            return None

    def run_ids(self, known: set[str] | frozenset[str] = frozenset(),
                names: list[str] | None = None) -> list[str]:
        """Ids of the runs in the store (folders holding a run document), sorted. A folder
        named in `known` (runs known to be finished, e.g. listed by the run index) is taken
        without a look inside, so a big indexed store costs one directory listing (none when
        `names`, what run_names returned, is given)."""
        names = self.run_names() if names is None else names
        if not names:
            return []
        runs_dir = str(self.runs_dir)
        # set operations: a loop over 100,000 names in Python costs more than the listing
        # a folder whose run.json is no regular file is a run: its readers skip it and say why
        docless = {n for n in set(names).difference(known)
                   if not os.path.lexists(os.path.join(runs_dir, n, R.RUN_DOC))}
        return [n for n in names if n not in docless] if docless else list(names)

    def run_dirs(self) -> list[Path]:
        """Folders of the runs (hidden folders, i.e. runs being added, are not runs yet)."""
        return [self.runs_dir / run_id for run_id in self.run_ids()]

    def doc_paths(self, run_ids: Iterable[str]) -> list[str]:
        """The run-document files of `run_ids` (for readers that parse many at once)."""
        runs_dir = str(self.runs_dir)
        return [os.path.join(runs_dir, run_id, R.RUN_DOC) for run_id in run_ids]

    def run_doc(self, run_id: str) -> dict[str, Any]:
        """The document of run `run_id`, its status the effective one (a `running` document
        whose process is gone reads `interrupted`)."""
        path = self.runs_dir / run_id / R.RUN_DOC
        try:
            return self._effective(json.loads(self.read_file(path)), path.parent)
        except FileNotFoundError:
            raise KeyError(f"no run {run_id!r} in {self.root}") from None

    def _effective(self, doc: dict[str, Any], run_dir: Path) -> dict[str, Any]:
        """A `running` document whose process is gone reads as `interrupted`."""
        if doc.get("status") == "running" and not _process_alive(doc.get("process"),
                                                                run_dir / R.HEARTBEAT):
            doc = {**doc, "status": "interrupted",
                   "stop_reason": doc.get("stop_reason") or "process ended without sealing the run"}
        return doc

    def _read_doc(self, run_dir: Path) -> dict[str, Any] | None:
        """A run folder's document as written, or None (with a warning naming the folder) when
        it cannot be read: one bad document never hides the others."""
        try:
            doc = json.loads(self.read_file(run_dir / R.RUN_DOC))
        except FileNotFoundError:
            return None  # removed since it was listed
        except (OSError, ValueError, RecursionError) as exc:
            warnings.warn(f"skipped run {run_dir.name}: its {R.RUN_DOC} cannot be read ({exc})",
                          stacklevel=3)
            return None
        if isinstance(doc, dict):
            doc.setdefault("run_id", run_dir.name)
        problem = R.run_doc_problem(doc)
        if problem:
            warnings.warn(f"skipped run {run_dir.name}: {problem}", stacklevel=3)
            return None
        return doc

    def documents(self, effective: bool = False, **equals: Any) -> Iterator[dict[str, Any]]:
        """The run documents, in run-id order, whose keys equal the values given (e.g.
        `study_name="s"`). `effective`: statuses as run_doc gives them (a dead `running` run
        reads `interrupted`), else as written. Unreadable documents are skipped with a warning."""
        for run_dir in self.run_dirs():
            doc = self._read_doc(run_dir)
            if doc is None:
                continue
            if effective:
                doc = self._effective(doc, run_dir)
            if all(doc.get(k) == v for k, v in equals.items()):
                yield doc

    def attempts(self, trial_key: str, effective: bool = False) -> list[dict[str, Any]]:
        """The documents of every attempt at trial `trial_key` that this store's writers made,
        oldest first (see `documents` for `effective`)."""
        found = []
        for run_dir in self.runs_dir.glob(f"*--{glob.escape(trial_key)}-a*"):
            doc = self._read_doc(run_dir)
            if doc is not None and doc.get("trial_key") == trial_key:
                found.append(self._effective(doc, run_dir) if effective else doc)
        return sorted(found, key=lambda d: (int(d.get("attempt") or 0), d["run_id"]))

    def done_trial_keys(self) -> set[str]:
        """Trial keys with a complete or diverged attempt: what `--resume` does not run again."""
        return {doc.get("trial_key") for doc in self.documents()
                if doc.get("status") in R.DONE_STATUSES}

    def claim(self, trial_key: str) -> "TrialClaim | None":
        """Claim trial `trial_key` for this process (see records.CLAIMS_DIR): a TrialClaim to
        release when its attempt has ended, or None when another process holds it now."""
        folder = self.root / R.CLAIMS_DIR
        folder.mkdir(exist_ok=True)
        fd = os.open(folder / f"{_file_part(trial_key)}.lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return None
        return TrialClaim(fd)

    @contextlib.contextmanager
    def planning_lock(self) -> Iterator[None]:
        """Hold the store's planning lock (records.PLANNING_LOCK) for the `with` block: launches
        check and record their plans one at a time. Blocks until the lock is free; a process's
        end releases it."""
        self.ensure()
        fd = os.open(self.root / R.PLANNING_LOCK, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing the descriptor releases its lock

    def _plan_path(self, study_name: str) -> Path:
        return self.root / R.PLANS_DIR / f"{_file_part(study_name)}.json"

    def planned(self, study_name: str) -> list[dict[str, Any]]:
        """The trial configs (RunConfig.to_dict) launches of study `study_name` have planned
        (records.PLANS_DIR); [] when none, or when the record cannot be read (a warning)."""
        try:
            doc = json.loads(self.read_file(self._plan_path(study_name)))
        except FileNotFoundError:
            return []
        except (OSError, ValueError, RecursionError) as exc:
            warnings.warn(f"the plan of study {study_name!r} cannot be read ({exc}): not "
                          "compared", stacklevel=2)
            return []
        configs = doc.get("configs") if isinstance(doc, dict) else None
        return [c for c in configs if isinstance(c, dict)] if isinstance(configs, list) else []

    def record_plan(self, study_name: str, configs: Iterable[Mapping[str, Any]]) -> None:
        """Add `configs` (RunConfig.to_dict) to study `study_name`'s plan, atomically; call it
        under planning_lock."""
        known = self.planned(study_name)
        texts = {json.dumps(c, sort_keys=True) for c in known}
        new = [dict(c) for c in configs if json.dumps(_clean(c), sort_keys=True) not in texts]
        if new or not self._plan_path(study_name).exists():
            self._plan_path(study_name).parent.mkdir(exist_ok=True)
            atomic_write_json(self._plan_path(study_name), {"configs": known + new})

    def live_trial_keys(self) -> set[str]:
        """Trial keys with an attempt whose process is alive (this host) or whose heartbeat is
        fresh (another host): running in some launcher now."""
        return {doc.get("trial_key") for doc in self.documents(effective=True, status="running")}

    def live_status(self, run_ids: Iterable[str]) -> dict[str, str]:
        """Effective status of runs whose documents say `running` (alive or interrupted)."""
        return {rid: self.run_doc(rid)["status"] for rid in run_ids}

    def latest_eval(self, trial_key: str) -> dict[str, Any] | None:
        """The last eval row flushed by the newest running attempt of `trial_key`, or None."""
        for doc in reversed(self.attempts(trial_key)):
            if doc.get("status") == "running":
                rows = self.live_rows(doc["run_id"], "evals")
                return rows[-1] if rows else None
        return None

    def live_rows(self, run_id: str, kind: str) -> list[dict[str, Any]]:
        """The rows a live run has flushed so far (kind "evals" or "train"); [] once sealed."""
        live = self.runs_dir / run_id / ROW_KINDS[kind][1]
        try:
            return read_jsonl(live, self.root)
        except FileNotFoundError:
            return []

    def row_files(self, kind: str, run_ids: Iterable[str] | None = None,
                  problems: dict[str, str] | None = None) -> tuple[list[str], list[str]]:
        """(sealed Parquet files, non-empty live JSON-lines files) holding the rows of `kind`
        ("evals" or "train") of `run_ids` (None: every run); a sealed file wins over a live one.
        Only regular files inside the store are listed (file_problem): a run with another kind
        of file there is left out, with the reason in `problems` ({run id: why}) when given.
        KeyError naming the first unknown run id."""
        sealed, live = ROW_KINDS[kind]
        if run_ids is None:
            pattern = os.path.join(glob.escape(str(self.runs_dir)), "*", "{}")
            parquet = sorted(glob.glob(pattern.format(sealed)))
            jsonl = sorted(glob.glob(pattern.format(live)))
        else:  # os.path on strings: pathlib took 3x longer on 100,000 runs
            ids = list(dict.fromkeys(run_ids))
            dirs = [os.path.join(str(self.runs_dir), rid) for rid in ids]
            missing = [rid for rid, d in zip(ids, dirs)
                       if not os.path.lexists(os.path.join(d, R.RUN_DOC))]
            parquet = [p for p in (os.path.join(d, sealed) for d in dirs) if os.path.lexists(p)]
            jsonl = [p for p in (os.path.join(d, live) for d in dirs) if os.path.lexists(p)]
            if missing:
                raise KeyError(f"no run {missing[0]!r} in {self.root} ({len(missing)} unknown run "
                               "ids); valid ids are the run_id column of query.runs_frame(store)")
        bad = self._unsafe(parquet + jsonl)
        if bad and problems is not None:
            problems.update(bad)
        parquet = [p for p in parquet if os.path.basename(os.path.dirname(p)) not in bad]
        done = {os.path.dirname(p) for p in parquet}
        return parquet, [p for p in jsonl if os.path.dirname(p) not in done and _nonempty(p)
                         and os.path.basename(os.path.dirname(p)) not in bad]

    def _unsafe(self, paths: Iterable[str]) -> dict[str, str]:
        """{run id: why} for the runs among whose files `paths` one may not be opened
        (file_problem); one lstat a file."""
        bad = {}
        for path in paths:
            try:
                problem = file_problem(path, self.root)
            except OSError:
                continue  # gone since it was listed: the reader retries
            if problem:
                bad.setdefault(os.path.basename(os.path.dirname(path)), problem)
        return bad

    def unsafe_runs(self, run_ids: Iterable[str]) -> dict[str, str]:
        """{run id: why} for the runs of `run_ids` with a file that may not be opened (their
        document or row files: file_problem): readers skip them, naming why."""
        names = (R.RUN_DOC, R.EVALS_SEALED, R.EVALS_LIVE, R.TRAIN_SEALED, R.TRAIN_LIVE)
        runs_dir = str(self.runs_dir)
        return self._unsafe(p for rid in run_ids for p in
                            (os.path.join(runs_dir, rid, n) for n in names) if os.path.lexists(p))

    def signature(self, finished: set[str] | frozenset[str] = frozenset(),
                  names: list[str] | None = None) -> tuple:
        """A cheap fingerprint of the store: it changes when a run folder is added or removed,
        or when a run not in `finished` (runs known to have ended, which never change again)
        writes, seals or ends. A 100,000-run store costs one directory listing (none when
        `names`, what run_names returned, is given) and a few stat calls for its unfinished
        runs."""
        names = self.run_names() if names is None else names
        if names is None:
            return ((self.root / R.STORE_DOC).exists(),)
        files = (R.RUN_DOC, R.EVALS_LIVE, R.EVALS_SEALED, R.TRAIN_LIVE, R.TRAIN_SEALED)
        runs_dir, changing = str(self.runs_dir), []
        for run_id in names:  # os.path on strings: pathlib took 2x as long (5.6 s -> 2.6 s on
            if run_id in finished:  # a never-indexed 100,000-run store, none known finished)
                continue
            folder, stats = os.path.join(runs_dir, run_id), []
            for name in files:
                try:
                    st = os.stat(os.path.join(folder, name))
                    stats.append((st.st_mtime_ns, st.st_size))
                except OSError:
                    stats.append(None)
            changing.append((run_id, *stats))
        return (True, len(names), hash(tuple(names)), tuple(changing))

    # -- changing a run's document after the fact ---------------------------------------------
    def amend(self, run_id: str, /, **fields: Any) -> dict[str, Any]:
        """Add or update fields of a finished run's document (e.g. the early-stopping tuner's
        verdict), atomically; returns the new document. The identity, the status, the times and
        the eval summary of a run (_FIXED) never change, and a run still running cannot be
        amended."""
        fixed = sorted(set(fields) & _FIXED)
        if fixed:
            raise ValueError(f"cannot amend {fixed} of run {run_id!r}: a run's identity, status, "
                             "times and eval summary are fixed once written")
        path = self.runs_dir / run_id / R.RUN_DOC
        try:
            doc = json.loads(self.read_file(path))
        except FileNotFoundError:
            raise KeyError(f"no run {run_id!r} in {self.root}") from None
        if doc.get("status") not in R.TERMINAL:
            raise ValueError(f"run {run_id!r} is {doc.get('status')}: only a finished run can be "
                             "amended")
        doc.update(fields)
        atomic_write_json(path, doc)
        return doc

    def mark_interrupted(self, run_id: str, reason: str, status: str = "interrupted") -> None:
        """Record that a run's process died (called by the launcher that saw it die), as
        `status`: interrupted, or failed when the launcher killed it for the run's own doing
        (the watchdog)."""
        path = self.runs_dir / run_id / R.RUN_DOC
        doc = json.loads(self.read_file(path))
        if doc.get("status") == "running":
            doc.update(status=status, stop_reason=reason, ended_at=utc_now())
            atomic_write_json(path, doc)

    def reserve_space(self, nbytes: int = R.RESERVE_BYTES) -> "SpaceReserve":
        """Hold `nbytes` of the store's disk for this process (SpaceReserve): a launcher takes
        it before it starts anything, so a store with no room fails at once (OSError ENOSPC
        naming the store, nothing written), and releases it when the disk fills up, to record
        how its launch ended."""
        self.ensure()
        fd, path = tempfile.mkstemp(prefix=R.RESERVE_PREFIX, dir=self.root)
        os.unlink(path)  # nothing left behind, whatever happens: the blocks live while fd does
        try:
            written = 0
            while written < nbytes:  # random bytes: a compressing file system stores them all
                written += os.write(fd, os.urandom(min(1 << 16, nbytes - written)))
            os.fsync(fd)
        except OSError as err:
            os.close(fd)
            if err.errno in NO_SPACE_ERRNOS:
                raise OSError(err.errno, err.strerror, str(self.root)) from None
            raise
        return SpaceReserve(fd)

    def no_space_path(self, err: OSError) -> str:
        """What to name for the full disk of `err`: the store, or a file outside it."""
        return full_path(err, self.root)

    # -- study-level documents --------------------------------------------------------------
    def _early_stop_folder(self, study_name: str) -> Path:
        return self.root / R.EARLY_STOP_DIR / _file_part(study_name)

    def write_early_stop_doc(self, study_name: str, trial_key: str,
                             doc: Mapping[str, Any]) -> None:
        """Record the early-stopping tuner's state of one trial (see records.EARLY_STOP_DIR)."""
        folder = self._early_stop_folder(study_name)
        folder.mkdir(parents=True, exist_ok=True)
        atomic_write_json(folder / f"{trial_key}.json", doc)

    def has_early_stop_docs(self, study_name: str) -> bool:
        """Whether the early-stopping tuner wrote a document of one of the study's trials."""
        folder = self._early_stop_folder(study_name)
        return folder.is_dir() and next(folder.glob("*.json"), None) is not None

    def early_stop_docs(self, study_name: str) -> list[dict[str, Any]]:
        """The early-stopping tuner's documents of one study's trials; [] when none."""
        folder = self._early_stop_folder(study_name)
        if not folder.is_dir():
            return []
        docs = []
        for path in sorted(folder.glob("*.json")):
            try:
                docs.append(json.loads(self.read_file(path)))
            except (ValueError, OSError):
                continue  # being replaced right now: atomic writes make this rare and harmless
        return docs

    def _summary_path(self, study_name: str) -> Path:
        return self.root / R.STUDIES_DIR / f"{_file_part(study_name)}.json"

    def write_study_summary(self, study_name: str, doc: Mapping[str, Any]) -> None:
        """Record a study's summary document (see records.STUDIES_DIR), atomically."""
        path = self._summary_path(study_name)
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_json(path, doc)

    def study_summary(self, study_name: str) -> dict[str, Any] | None:
        """A study's summary document, or None when it has none (or it cannot be read)."""
        try:
            return json.loads(self.read_file(self._summary_path(study_name)))
        except (OSError, ValueError):
            return None


def _digest(data: bytes) -> str:
    """The name-part digest of an index part's bytes (16 hex digits of their sha256)."""
    return hashlib.sha256(data).hexdigest()[:16]


def _nonempty(path: str) -> bool:
    try:
        return os.path.getsize(path) > 0
    except OSError:
        return False


def open_store(path: str | os.PathLike, create: bool = False) -> Store:
    """Open the results store at `path` (create it when `create` is true); StoreError when
    `path` is not a store (or, with `create`, is a file)."""
    store = Store(path)
    if store.root.exists() and not store.root.is_dir():
        raise StoreError(f"{store.root} is a file, not a store folder: give a folder's path")
    if create:
        return store.ensure()
    store.check()
    return store
