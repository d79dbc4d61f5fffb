"""A worker's capped log: head and tail kept with a note of what was cut; a failing disk never
blocks the worker (the pump drains on and keeps the last output in memory)."""
from __future__ import annotations

import errno
import os
import threading

from runners.launch import worker_log
from runners.launch.worker_log import CappedLog, LogPump


def _feed(pump: LogPump, data: bytes, chunk: int = 4096) -> None:
    """Write `data` into the pump's pipe as a worker would, then close the write end."""
    fd, pump.write_fd = pump.write_fd, -1
    for i in range(0, len(data), chunk):
        os.write(fd, data[i:i + chunk])
    os.close(fd)


def test_a_log_keeps_its_head_and_tail_and_says_how_much_it_dropped(tmp_path):
    path = tmp_path / "t.log"
    path.write_bytes(b"earlier attempt\n")
    data = bytes(range(256)) * 400  # 102,400 bytes
    log = CappedLog(path, head=1000, tail=2000)
    for i in range(0, len(data), 777):  # the tail is cut back as it doubles, then at the end
        log.write(data[i:i + 777])
    log.close()
    text = path.read_bytes()
    marker = (b"\n[pacebench: 99,400 bytes of this attempt's output dropped here; the log keeps "
              b"its first 1,000 bytes and its last 2,000 bytes]\n")
    assert text == b"earlier attempt\n" + data[:1000] + marker + data[-2000:]


def test_a_short_output_is_kept_whole(tmp_path):
    pump = LogPump(tmp_path / "t.log", head=100, tail=100)
    _feed(pump, b"step 1\nstep 2\n")
    pump.finish()
    assert (tmp_path / "t.log").read_bytes() == b"step 1\nstep 2\n"
    assert pump.recent_text() == "step 1\nstep 2\n" and pump.error is None


def test_a_log_that_cannot_be_written_never_blocks_the_worker(tmp_path, monkeypatch):
    """A full disk: the pump drains the pipe to its end (a worker writing into a pipe that
    nobody reads would block forever) and keeps the last output in memory for the launcher."""
    def full(self, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(CappedLog, "write", full)
    pump = LogPump(tmp_path / "t.log")
    data = b"x" * (1 << 20) + b"\npacebench: no space left on /store\n"
    feeder = threading.Thread(target=_feed, args=(pump, data))
    feeder.start()
    feeder.join(10.0)
    assert not feeder.is_alive()  # 1 MiB went through a 64 KiB pipe: it was read
    pump.finish()
    assert pump.error.errno == errno.ENOSPC
    assert pump.recent_text().endswith("no space left on /store\n")
    assert len(pump.recent) == worker_log.RECENT_BYTES
