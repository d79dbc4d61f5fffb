"""Worker processes: batches of work run in several processes at once, the one process pool of
Pacebench (the AlgoPerf importer's, and the benchmarks' that write or train in parallel).

An import reads, checks and writes thousands of small files: Python and Arrow work of which one
process runs one core's worth (its threads share one interpreter lock). A WorkerPool runs a
function ("module:name", importable with the caller's sys.path) on batches of work in N worker
processes and yields the results in the batches' order::

    with WorkerPool(2) as pool:
        for result in pool.map("workbench.importers.algoperf:_import_batch", batches):
            ...

The workers are plain subprocesses of this interpreter (`python -c ...`, given this process's
sys.path), not multiprocessing's: nothing forks a process that may hold threads, and the
caller's main module is never run again (multiprocessing's spawn runs a script that lacks an
`if __name__ == "__main__":` guard once more in every worker). A batch's arguments and result
are JSON (keyword arguments in, a JSON value out; numpy scalars as their Python values), one
line each way; nothing is pickled. A worker's stdout is its channel to the pool, so what the
function prints goes to stderr.

An exception in a worker is raised again in the caller: an OSError as an OSError of the same
errno, text and file name (a full disk reads as one), anything else as WorkerError with the
worker's traceback. Ctrl-C reaches the workers too (one process group): each drops its batch
(SealedBatch removes what it had not published) and exits. Leaving the `with` block cancels the
batches not started, closes the workers' input (they exit), and kills any worker still running
after KILL_AFTER_S.
"""
from __future__ import annotations

import importlib
import json
import os
import queue
import subprocess
import sys
import traceback
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Iterator, Mapping, Sequence

from workbench.errors import UserError

__all__ = ["WorkerPool", "WorkerError", "serve", "KILL_AFTER_S"]

KILL_AFTER_S = 10.0  # how long a worker may take to exit once the pool is left

# What a worker runs: this process's sys.path arrives as its first line of input.
_BOOT = ("import json, sys; sys.path[:] = json.loads(sys.stdin.readline()); "
         "from workbench.workers import serve; serve()")


class WorkerError(RuntimeError):
    """A worker process failed (its traceback is in the message) or ended unexpectedly."""


class WorkerPool:
    """`processes` worker processes running batches (see the module docstring)."""

    def __init__(self, processes: int) -> None:
        if processes < 1:
            raise UserError(f"a worker pool needs at least 1 process, got {processes}")
        self.processes = processes
        self._workers: list[subprocess.Popen] = []
        self._idle: queue.Queue = queue.Queue()
        self._threads: ThreadPoolExecutor | None = None
        self._futures: list = []

    def __enter__(self) -> "WorkerPool":
        path = json.dumps(sys.path) + "\n"
        try:
            for _ in range(self.processes):
                worker = subprocess.Popen([sys.executable, "-c", _BOOT], stdin=subprocess.PIPE,
                                          stdout=subprocess.PIPE, text=True, encoding="utf-8")
                self._workers.append(worker)
                worker.stdin.write(path)
                worker.stdin.flush()
                self._idle.put(worker)
        except BaseException:
            self._stop()
            raise
        self._threads = ThreadPoolExecutor(self.processes)  # one waits on each busy worker
        return self

    def map(self, function: str, batches: Sequence[Mapping[str, Any]]) -> Iterator[Any]:
        """Start `function` ("package.module:name") on every batch (its keyword arguments) and
        return an iterator over the results, in the batches' order."""
        futures = [self._threads.submit(self._run, function, batch) for batch in batches]
        self._futures += futures
        return (future.result() for future in futures)

    def _run(self, function: str, batch: Mapping[str, Any]) -> Any:
        worker = self._idle.get()  # one of the pool's threads has each worker in turn
        try:
            try:
                worker.stdin.write(json.dumps({"function": function, "kwargs": batch}) + "\n")
                worker.stdin.flush()
                line = worker.stdout.readline()
            except (OSError, ValueError):  # its pipe is broken, or the pool is being left
                line = ""
            if not line:
                raise WorkerError(f"a worker process ended (exit status "
                                  f"{worker.poll()}) before it finished its batch")
        finally:
            self._idle.put(worker)
        reply = json.loads(line)
        if "error" in reply:
            raise _error(reply["error"])
        return reply["result"]

    def __exit__(self, exc_type, exc, tb) -> None:
        self._stop()

    def _stop(self) -> None:
        for future in self._futures:
            future.cancel()
        for worker in self._workers:
            try:
                worker.stdin.close()  # a worker ends at the end of its input
            except OSError:
                pass
        for worker in self._workers:
            try:
                worker.wait(KILL_AFTER_S)
            except subprocess.TimeoutExpired:
                worker.kill()
                worker.wait()
        if self._threads is not None:  # their workers have ended: every read has returned
            self._threads.shutdown(wait=True, cancel_futures=True)
        for worker in self._workers:
            worker.stdout.close()


def _error(described: Mapping[str, Any]) -> Exception:
    """The exception a worker described (see _describe), to raise in the caller."""
    if described.get("errno") is not None:  # OSError picks the subclass from the errno
        return OSError(described["errno"], described["strerror"], described["filename"])
    if described.get("user"):  # bad input stays bad input: its one line, not a traceback
        return UserError(described["message"])
    return WorkerError(f"{described['type']}: {described['message']} (in a worker "
                       f"process)\n{described['traceback']}")


def _describe(error: BaseException) -> dict[str, Any]:
    described = {"type": type(error).__name__, "message": str(error),
                 "traceback": traceback.format_exc(), "user": isinstance(error, UserError)}
    if isinstance(error, OSError) and error.errno is not None:
        described.update(errno=error.errno, strerror=error.strerror,
                         filename=None if error.filename is None else os.fsdecode(error.filename))
    return described


def _plain(value: Any) -> Any:
    """A numpy scalar's Python value (json cannot write numpy's bool, integer or float)."""
    item = getattr(value, "item", None)
    if item is None or getattr(value, "shape", None) != ():
        raise TypeError(f"a worker's result holds a {type(value).__name__}, which is not JSON")
    return item()


def serve() -> None:
    """A worker's loop: one batch per line of input, one result per line of output."""
    channel = os.fdopen(os.dup(sys.stdout.fileno()), "w", encoding="utf-8")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # what the work prints goes to stderr
    try:
        for line in sys.stdin:
            message = json.loads(line)
            module, name = message["function"].split(":")
            try:
                reply = json.dumps({"result": getattr(importlib.import_module(module), name)(
                    **message["kwargs"])}, default=_plain)
            except Exception as error:  # a result that is not JSON, too
                reply = json.dumps({"error": _describe(error)})
            channel.write(reply + "\n")
            channel.flush()
    except KeyboardInterrupt:  # Ctrl-C reaches the whole process group: the caller reports it
        sys.exit(130)
