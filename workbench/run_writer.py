"""One run attempt being written (RunWriter), and whether the process writing a run still lives.

A live run rewrites its document atomically at each status change, appends its eval rows (each
made durable before the next step) and its train rows, touches its heartbeat every
HEARTBEAT_EVERY_S, and at its end seals its rows into Parquet (_seal: never losing one). Readers
tell a `running` document whose writer is gone (process_alive): on this host psutil finds no
process of its pid that started when the document says; on another its heartbeat is stale.
"""
from __future__ import annotations

import json
import math
import os
import socket
import threading
import time
from pathlib import Path
from typing import Any, Mapping

import psutil

from workbench import records as R
from workbench.store_files import (atomic_write_json, full_path, fsync_path, json_safe,
                                   no_space, read_jsonl, utc_now, write_parquet)

__all__ = ["RunWriter", "process_alive", "started_after_boot", "HEARTBEAT_EVERY_S",
           "EVAL_SYNC_EVERY_S",
           "STALE_AFTER_S"]

HEARTBEAT_EVERY_S = 10.0   # a live run touches its heartbeat file this often
EVAL_SYNC_EVERY_S = 1.0    # a live run fsyncs its eval rows at most this often (each is flushed)
STALE_AFTER_S = 120.0      # a `running` run on another host with an older heartbeat is interrupted


def started_after_boot(pid: int) -> float | None:
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


def process_alive(process: Mapping[str, Any] | None, heartbeat: Path) -> bool:
    """Is the process that wrote a `running` document still alive? On this host psutil says
    (its pid, started when the document says); on another, the heartbeat's age."""
    if not process:
        return False
    if process.get("host") == socket.gethostname():
        started = started_after_boot(int(process.get("pid") or -1))
        return started is not None and _same_start(process, started)
    try:
        return time.time() - heartbeat.stat().st_mtime < STALE_AFTER_S
    except OSError:
        return False


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
        self._evals.write(json.dumps(json_safe({"run_id": self.run_id, **row})) + "\n")
        self._evals.flush()
        now = time.monotonic()
        if now - self._synced >= EVAL_SYNC_EVERY_S:
            os.fsync(self._evals.fileno())
            self._synced = now

    def append_train(self, row: Mapping[str, Any]) -> None:
        """Append one training-loss row; flushed to the OS (survives a killed process)."""
        self._train.write(json.dumps(json_safe({"run_id": self.run_id, **row})) + "\n")
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
            write_parquet(table, tmp)  # fsynced
        except BaseException:  # e.g. a full disk: no half-written file left behind
            tmp.unlink(missing_ok=True)
            raise
        os.replace(tmp, sealed)
        fsync_path(sealed.parent)
    live.unlink()
    return rows

