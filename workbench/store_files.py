"""The files of a results store: safe reads and crash-safe writes (workbench/store.py's layer).

Every reader of a store opens only regular files inside it (file_problem, read_regular): a FIFO
would block it, a device never end, a link lead out of the store. Every writer writes so that a
reader (or a crash) sees the old file or the new one, never a torn one (atomic_write_json), and
makes what it wrote durable before it is named (fsync_path, sync_many, write_parquet).
"""
from __future__ import annotations

import datetime as _dt
import errno
import json
import math
import os
import re
import stat
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Mapping

from workbench.errors import UserError

__all__ = ["NO_SPACE_ERRNOS", "no_space", "full_path", "UnsafeFile", "file_problem",
           "read_regular", "not_regular", "file_kind", "StoreError", "UnknownRun", "utc_now",
           "json_safe", "atomic_write_json", "fsync_path", "sync_many", "write_parquet", "slug",
           "file_part", "read_jsonl", "nonempty"]

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


def file_kind(mode: int) -> str:
    """What a file that is no regular one is, in words ("a FIFO", "a socket", "a folder", ...),
    from its st_mode: one wording for every door's messages."""
    return next((words for test, words in _KINDS if test(mode)), "of an unknown kind")


def not_regular(path: str | os.PathLike) -> str | None:
    """'<path> is not a regular file (a FIFO)' when the file at `path` (links followed) is a
    FIFO, a socket, a device or a folder, else None (FileNotFoundError when there is none):
    for files a user names outside any store, checked before they are opened."""
    mode = os.stat(path).st_mode
    return None if stat.S_ISREG(mode) else f"{path} is not a regular file ({file_kind(mode)})"


def file_problem(path: str | os.PathLike, root: str | os.PathLike,
                 st: os.stat_result | None = None,
                 seen: dict[str, bool] | None = None) -> str | None:
    """Why the file at `path` may not be opened as part of the store at `root` (None when it may;
    FileNotFoundError when there is nothing there): every reader of a store opens only regular
    files inside it. A FIFO blocks its reader until a writer comes (DuckDB too), a device may
    give endless bytes, and a link may lead out of the store, the file's own name or a folder
    between the store and it (a run folder linked to another tree). One lstat of the file and
    one of each folder below the store (`st`: the file's, when the caller has it; `seen`: the
    folders' when it checks many files, see _folder_problem); a link costs a realpath more."""
    st = os.lstat(path) if st is None else st
    if stat.S_ISREG(st.st_mode):
        return _folder_problem(path, root, seen)
    if not stat.S_ISLNK(st.st_mode):
        return f"{path} is not a regular file ({file_kind(st.st_mode)})"
    real, inside = os.path.realpath(path), os.path.realpath(root)
    if os.path.commonpath([real, inside]) != inside:
        return f"{path} is a link out of the store (to {real[:120]})"
    target = os.stat(real)
    return None if stat.S_ISREG(target.st_mode) else \
        f"{path} is a link to {file_kind(target.st_mode)}, not a regular file"


def _folder_problem(path: str | os.PathLike, root: str | os.PathLike,
                    seen: dict[str, bool] | None = None) -> str | None:
    """Why a folder between the store `root` and its file `path` makes the file not the store's
    own: a link whose target is out of the store (None for plain folders and links inside).
    A path not spelled as under `root` (another spelling, '..') is judged where it really is.
    `seen`: {folder: is a link} of the folders already looked at, for a caller checking many
    files at once (it lstats each folder once)."""
    path, root = os.fspath(path), os.fspath(root).rstrip(os.sep) or os.sep
    if not path.startswith(root + os.sep):
        return _outside(path, root)
    folders = path[len(root) + 1:].split(os.sep)[:-1]
    if any(part in ("", ".", "..") for part in folders):
        return _outside(path, root)
    folder = root
    for part in folders:  # runs/, runs/<run id>: one lstat each, once per `seen`
        folder = f"{folder}{os.sep}{part}"
        link = seen.get(folder) if seen is not None else None
        if link is None:
            link = os.path.islink(folder)
            if seen is not None:
                seen[folder] = link
        if link:
            return _outside(path, root)
    return None


def _outside(path: str, root: str) -> str | None:
    real, inside = os.path.realpath(path), os.path.realpath(root)
    if os.path.commonpath([real, inside]) != inside:
        return f"{path} lies behind a link out of the store (it is {real[:120]})"
    return None


def read_regular(path: str | os.PathLike, root: str | os.PathLike,
                 seen: dict[str, bool] | None = None) -> tuple[bytes, os.stat_result]:
    """(the bytes, the fstat) of the store file `path` when file_problem allows it; UnsafeFile
    otherwise (FileNotFoundError when there is none). Opened without blocking and checked again
    after the open, in case another file was swapped in between. `seen`: see _folder_problem."""
    problem = file_problem(path, root, seen=seen)
    if problem:
        raise UnsafeFile(problem)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UnsafeFile(f"{path} is not a regular file ({file_kind(st.st_mode)})")
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks), st
    finally:
        os.close(fd)


class StoreError(UserError, RuntimeError):
    """The path is not a usable store, or a run document is unreadable."""


class UnknownRun(StoreError, KeyError):
    """A run id that names no run of the store (bad input; a KeyError too, for callers that
    look runs up by id)."""

    __str__ = StoreError.__str__  # the message as given (KeyError's would quote it)


def utc_now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="milliseconds")


def json_safe(value: Any) -> Any:
    """JSON-safe copy: non-finite floats become null (JSON has no NaN); tuples become lists."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if value is None or isinstance(value, (str, int)):  # before the Mapping check, which is slow
        return value
    if isinstance(value, Mapping):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if hasattr(value, "item") and callable(value.item):  # numpy / torch scalars
        return json_safe(value.item())
    return value


def atomic_write_json(path: Path, doc: Mapping[str, Any]) -> None:
    """Write JSON so that readers see the old file or the new one, never a torn one."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        with open(tmp, "w") as f:
            json.dump(json_safe(doc), f, indent=1, sort_keys=True)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def fsync_path(path: Path) -> None:
    """fsync a file or a directory by path (a directory: makes the names in it durable)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def sync_many(paths: list[Path], folder: Path) -> None:
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
            list(pool.map(fsync_path, paths))
    else:
        for path in paths:
            fsync_path(path)


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


def write_parquet(table: "pa.Table", path: Path, durable: bool = True) -> None:  # noqa: F821
    """Write a Parquet file and (durable) fsync it; the caller renames it into place. Plain
    encoding and no column statistics: a run's rows are a few kilobytes that readers scan
    whole (no reader of ours asks for statistics), and the two cost a quarter of each write
    (0.8 against 0.6 ms for a run of 60 evals; an import writes 3,700)."""
    import pyarrow.parquet as pq

    with open(path, "wb") as f:  # a Python file: pyarrow resolving the path took longer
        pq.write_table(table, f, use_dictionary=False, write_statistics=False)
        if durable:
            f.flush()
            os.fsync(f.fileno())


def slug(text: str) -> str:
    """A short plain part of a run folder's name."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_")[:40] or "x"


def file_part(name: str) -> str:
    """A study name as a file or folder name inside the store: letters, digits, '_', '.', '-',
    never hidden or a parent folder (a plain name is kept as it is)."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", str(name)).lstrip(".")[:120] or "_"


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


def nonempty(path: str) -> bool:
    try:
        return os.path.getsize(path) > 0
    except OSError:
        return False

