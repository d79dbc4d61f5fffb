"""The parts of multiprocessing's and Ray's insides that the launcher relies on, in one place.

- multiprocessing (the local backend's fork-server workers, runners/launch/processes.py): a process
  class whose workers are forked from a fork server that imported `preload` once
  (`ForkServerWorker`), whose launch data leaves the launcher's main module out (a worker
  never runs a user's unguarded script again: it swaps `spawn.get_preparation_data` for the
  launch); the server started ahead of the first worker (`start_server`) and killed at exit
  if no worker came of it (its pid: `forkserver._forkserver._forkserver_pid`); a file
  descriptor handed to such a worker (`InheritedFd`, as multiprocessing hands over its own
  pipes: `reduction.DupFd`).
- Ray (runners/launch/ray_backend.py): the driver's token authentication turned on as a new head
  turned it on (`enable_ray_token_auth`).

Each is written for the pinned Python and Ray (constraints.txt) and exercised by
tests/test_process_internals.py, which fails when they behave differently.
"""
from __future__ import annotations

import atexit
import contextlib
import multiprocessing.context
import os
import signal
import threading
from multiprocessing import forkserver, popen_forkserver, reduction, spawn
from typing import Any

__all__ = ["ForkServerWorker", "InheritedFd", "enable_ray_token_auth", "MAIN_KEYS", "server_pid"]

# What multiprocessing's launch data says about the parent's main module (spawn.
# get_preparation_data): a new process imports it again (as __mp_main__) from its name or path.
MAIN_KEYS = ("init_main_from_name", "init_main_from_path")
_LAUNCHING = threading.Lock()  # one launch at a time swaps get_preparation_data
_SERVERS_UNUSED: set[int | None] = set()  # fork servers started ahead, no worker forked yet


def _without_main(prepare):
    """`spawn.get_preparation_data` with the main module left out of its result."""
    def without_main(name: str) -> dict:
        data = prepare(name)
        for key in MAIN_KEYS:
            data.pop(key, None)
        return data
    return without_main


class _PopenWithoutMain(popen_forkserver.Popen):
    """multiprocessing's fork-server launch, without the launcher's main module: a worker runs
    its target and needs nothing from `__main__`, whose top level may start a study again."""

    def _launch(self, process_obj) -> None:
        prepare = spawn.get_preparation_data
        with _LAUNCHING:
            spawn.get_preparation_data = _without_main(prepare)
            try:
                super()._launch(process_obj)
            finally:
                spawn.get_preparation_data = prepare


class ForkServerWorker(multiprocessing.context.ForkServerProcess):
    """A process forked from the fork server (started on first use, with the modules of the
    class's `preload` imported; one server per launcher process), launched without the
    launcher's main module. Subclass it at a module's top level (the process object is pickled
    to the server, its class by name) and set `preload`."""

    preload: list[str] = []

    @classmethod
    def _Popen(cls, process_obj):
        forkserver.set_forkserver_preload(cls.preload)  # read when the server starts
        popen = _PopenWithoutMain(process_obj)
        _SERVERS_UNUSED.discard(server_pid())
        return popen

    @classmethod
    def start_server(cls) -> None:
        """Start the fork server now, without waiting for it: it imports `preload` while the
        caller goes on, and the first worker launched later uses it (or waits for its imports
        to end). A server already running is kept. If this process forks no worker from it,
        the server is killed when this process exits (a command that stopped at bad input
        leaves no server importing torch behind it)."""
        forkserver.set_forkserver_preload(cls.preload)
        prepare = spawn.get_preparation_data
        with _LAUNCHING:
            running = server_pid()
            spawn.get_preparation_data = _without_main(prepare)
            try:
                forkserver.ensure_running()
            finally:
                spawn.get_preparation_data = prepare
            if server_pid() != running:  # a new server (ensure_running replaces a dead one)
                _SERVERS_UNUSED.add(server_pid())


def server_pid() -> int | None:
    """The process id of this process's fork server, None before it is started."""
    return forkserver._forkserver._forkserver_pid


@atexit.register
def _kill_unused_server() -> None:
    pid = server_pid()
    if pid is not None and pid in _SERVERS_UNUSED:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)


class InheritedFd:
    """A file descriptor handed to a forked worker (through the fork server, as multiprocessing
    hands over its own pipes); it arrives as an int."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def __reduce__(self):
        return _inherited, (reduction.DupFd(self.fd),)


def _inherited(dup: Any) -> int:
    return dup.detach()


def enable_ray_token_auth() -> bool:
    """Turn Ray's token authentication on in this driver when a token exists and RAY_AUTH_MODE
    does not say otherwise, as a new head does and as ray.init(address="auto") would: a driver
    joining by address does not, and then fails with InvalidAuthToken. Whether it is on."""
    from ray._private.authentication.authentication_token_setup import \
        maybe_enable_token_auth_if_token_available

    return bool(maybe_enable_token_auth_if_token_available(warn_if_disabled=False))
