"""A worker's log: everything a trial's processes print, with a size cap.

A worker's stdout and stderr (and those of every process it starts) go to a pipe; a thread of the
process that started it (the launcher, or the Ray task) copies the pipe into the trial's log file
(`<store>/logs/<study>-<trial>.log`, Store.log_path). Each attempt keeps its first HEAD_BYTES and
its last TAIL_BYTES; what lies between is dropped and one marker line says how many bytes:

    [pacebench: 45,088,768 bytes of this attempt's output dropped here; the log keeps its first
    2 MiB and its last 2 MiB]

A plug-in that prints 50 MB thus leaves a log of about 4 MiB, with the start of the run and the
traceback at its end. While the attempt runs the file holds at most HEAD_BYTES + 2 x TAIL_BYTES
(the tail is cut back to TAIL_BYTES whenever it has doubled), so a log read at any moment, or
left by a launcher that was killed, ends with the latest output. Earlier attempts' logs in the
same file are kept as they are (each attempt appends).

The pump also keeps the last RECENT_BYTES of the output in memory (LogPump.recent), so the
launcher can say what ended a worker even when the log could not be written (a full disk); a
write that fails never stops the pump: it goes on draining the pipe (a worker whose output is
not read would block), and remembers the error (LogPump.error).
"""
from __future__ import annotations

import os
import select
import threading
from pathlib import Path

__all__ = ["CappedLog", "LogPump", "HEAD_BYTES", "TAIL_BYTES", "RECENT_BYTES"]

HEAD_BYTES = 2 << 20  # the first 2 MiB of an attempt's output are kept
TAIL_BYTES = 2 << 20  # and its last 2 MiB
READ_BYTES = 1 << 16  # one read from the pipe
RECENT_BYTES = 8 << 10  # the last 8 KiB of the output, kept in memory
WAIT_S = 0.2          # how often a pump waiting on a quiet pipe checks whether to stop


class CappedLog:
    """One attempt's output appended to `path`: its first `head` bytes and its last `tail`
    bytes, with a marker line where bytes were dropped (see the module doc)."""

    def __init__(self, path: str | os.PathLike, head: int = HEAD_BYTES,
                 tail: int = TAIL_BYTES) -> None:
        self.head, self.tail = head, tail
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
        self.start = os.lseek(self.fd, 0, os.SEEK_END)  # after earlier attempts' output
        self.written = 0            # bytes of the head written
        self.kept = bytearray()     # the tail kept so far (at most 2 x tail)
        self.dropped = 0            # bytes dropped between head and tail

    def write(self, data: bytes) -> None:
        """Add `data`, the attempt's next output."""
        room = max(0, self.head - self.written)
        if room:
            os.pwrite(self.fd, data[:room], self.start + self.written)
            self.written += min(room, len(data))
            data = data[room:]
        if not data:
            return
        self.kept += data
        if len(self.kept) > 2 * self.tail:  # cut the tail back, rewrite it after the marker
            cut = len(self.kept) - self.tail
            self.dropped += cut
            del self.kept[:cut]
            self._rewrite_tail()
        else:
            os.pwrite(self.fd, data, self.start + self.written + self._marker_length()
                      + len(self.kept) - len(data))

    def close(self) -> None:
        """Cut the tail to its size, for good, and close the file."""
        try:
            if len(self.kept) > self.tail:
                cut = len(self.kept) - self.tail
                self.dropped += cut
                del self.kept[:cut]
                self._rewrite_tail()
        finally:
            os.close(self.fd)

    def _marker(self) -> bytes:
        if not self.dropped:
            return b""
        return (f"\n[pacebench: {self.dropped:,} bytes of this attempt's output dropped here; "
                f"the log keeps its first {_size(self.head)} and its last {_size(self.tail)}]\n"
                ).encode()

    def _marker_length(self) -> int:
        return len(self._marker())

    def _rewrite_tail(self) -> None:
        at = self.start + self.written
        os.pwrite(self.fd, self._marker() + bytes(self.kept), at)
        os.ftruncate(self.fd, at + self._marker_length() + len(self.kept))


def _size(n: int) -> str:
    return f"{n / (1 << 20):g} MiB" if n >= 1 << 20 else f"{n:,} bytes"


class LogPump:
    """A pipe whose every byte lands in a CappedLog at `path`, copied by a thread of this
    process. Give `write_fd` to the worker (its stdout and stderr), call `started()` once it
    has been started (this process's copy of the write end is closed, so the pump sees the end
    of the output when the worker and its children have exited), and `finish()` once the
    worker has ended."""

    def __init__(self, path: str | os.PathLike, head: int = HEAD_BYTES,
                 tail: int = TAIL_BYTES, echo: int | None = None) -> None:
        self.recent = bytearray()  # the output's last RECENT_BYTES
        self.error: OSError | None = None  # why the log could not be written, if it could not
        self.echo = echo  # a file descriptor that gets the output too (`pacebench run`: 1)
        try:
            self.log: CappedLog | None = CappedLog(Path(path), head, tail)
        except OSError as err:
            self.log, self.error = None, err
        self.read_fd, self.write_fd = os.pipe()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._pump, name="worker-log", daemon=True)
        self._thread.start()

    def started(self) -> None:
        """The worker holds the write end now: close this process's copy."""
        if self.write_fd >= 0:
            os.close(self.write_fd)
            self.write_fd = -1

    def finish(self, timeout: float = 2.0) -> None:
        """Copy what is left and close the log: wait up to `timeout` seconds for the end of the
        output (a process the worker started may still hold the pipe open), then stop."""
        self.started()
        self._thread.join(timeout)
        self._stop.set()
        self._thread.join()

    def _pump(self) -> None:
        waiting = select.poll()  # (not select.select: it fails on descriptors past 1023)
        waiting.register(self.read_fd, select.POLLIN)
        try:
            while not self._stop.is_set():
                if not waiting.poll(WAIT_S * 1000):
                    continue
                data = os.read(self.read_fd, READ_BYTES)
                if not data:
                    break  # every writer has closed the pipe
                self._take(data)
        finally:
            os.close(self.read_fd)
            self._close_log()

    def _take(self, data: bytes) -> None:
        self.recent += data
        del self.recent[:-RECENT_BYTES]
        if self.echo is not None:
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(self.echo, view):]
            except OSError:
                self.echo = None  # (the terminal went away) the log still gets it
        if self.log is not None and self.error is None:
            try:
                self.log.write(data)
            except OSError as err:  # e.g. a full disk: drain on, keep the tail in memory
                self.error = err

    def _close_log(self) -> None:
        if self.log is not None:
            try:
                self.log.close()
            except OSError as err:
                self.error = self.error or err

    def recent_text(self) -> str:
        """The output's last RECENT_BYTES as text (read once the worker has ended)."""
        return self.recent.decode(errors="replace")
