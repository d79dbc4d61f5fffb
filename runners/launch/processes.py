"""Worker processes: how one trial's process is started, watched, killed and described.

A trial runs in a process of its own, which writes its own run folder (runners/launch/worker.py). This
module holds what every backend shares: the launch options, the job file, the worker command,
dying with the parent, reading an exit code, and the local backend, which keeps the workers as
descendants of the launcher. The Ray backend (runners/launch/ray_backend.py) builds on the same pieces.

Start methods of the local backend (LaunchOptions.start_method):
  "forkserver" (the default for one process per trial): a server process imports torch and the
    training side once; each trial is forked from it instead of a fresh interpreter importing
    torch again (`benchmarks/worker_start.py` measures both side by side). Each trial is still
    a fresh process that ran no trial before. The worker takes the launcher's environment and
    working directory of the moment it is started; only what the preloaded modules read at
    import time (e.g. torch's OMP_NUM_THREADS) comes from the first launch of the launcher's
    process. A script that launches studies needs no `if __name__ == "__main__":` guard: a
    worker does not import the launcher's main module (runners/launch/process_internals.py,
    which holds the multiprocessing internals this needs).
  "spawn": a fresh interpreter per trial, `python -m runners.launch.worker JOB.json`; always used
    under torchrun (nproc_per_node > 1) and by the Ray backend.
Either way a worker dies with its launcher: by Linux's PR_SET_PDEATHSIG (spawn: the launcher is
its parent), or by watching the launcher (forkserver: its parent is the fork server; see
_die_with_launcher). Each worker leads a process group of its own, which the processes it starts
join: a terminal's Ctrl-C reaches the launcher alone, which stops its workers itself, and
kill_tree ends a worker with everything it started (its group, and every descendant psutil
finds); a worker's group is killed when the worker ends, so nothing a trial started outlives it.
Out of reach: a process that started a session (or group) of its own and whose parent has died.
A worker's output goes through a pipe into its capped log (runners/launch/worker_log.py).
"""
from __future__ import annotations

import ctypes
import functools
import json
import math
import multiprocessing
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

import psutil

from runners.launch.process_internals import ForkServerWorker, InheritedFd
from runners.launch.worker_log import LogPump
from workbench.errors import UserError

__all__ = ["LaunchOptions", "SlurmOptions", "BACKENDS", "START_METHODS", "Outcome", "LocalBackend",
           "worker_command", "write_job", "describe_exit", "die_with", "spawn_worker",
           "kill_tree", "name_process", "PRELOADED", "run_child", "STOP_GRACE_S"]

BACKENDS = ("local", "ray", "slurm")
START_METHODS = ("forkserver", "spawn")
STOP_GRACE_S = 3.0  # a stopped worker's time to record its run after SIGTERM, before SIGKILL
# What the fork server imports once, before it forks any worker: the training side, and what a
# run imports on first use (torch's compiler stack, reached through the FLOP counter; scikit-
# learn's datasets and SciPy for the digits data and the curve fits; Parquet for the seal).
# (benchmarks/worker_start.py measures what a trial's start costs with and without them.)
PRELOADED = ["runners.launch.worker", "runners.run.loop", "runners.workloads", "runners.algorithms",
             "torch._dynamo", "torch.utils.flop_counter", "sklearn.datasets", "scipy.optimize",
             "scipy.stats", "pyarrow.parquet"]
PROCESS_NAME = b"pacebench-run"  # a worker's name in `ps -o comm` / /proc/<pid>/comm


@dataclass(frozen=True)
class SlurmOptions:
    """How the Slurm backend submits a launch's trials (runners/launch/slurm_backend.py); checked there."""

    partition: str | None = None        # --slurm-partition; None: the cluster's default
    setup: tuple[str, ...] = ()         # --slurm-setup: shell lines run in the job before the
                                        # trial (module loads, a venv's activate), in order
    array_parallelism: int | None = None  # --slurm-array-parallelism: array tasks at once
    params: tuple[tuple[str, str], ...] = ()  # --slurm-param KEY=VALUE: more sbatch options
    store_check: bool = True            # probe job checking the nodes see the store first
    detach: bool = False                # --detach: submit the array and return


@dataclass(frozen=True)
class LaunchOptions:
    """Where and how each trial runs; the defaults are the local process pool, one process each."""

    backend: str = "local"              # BACKENDS: "local" (process pool), "ray" (one task each)
                                        # or "slurm" (one job of a job array each)
    address: str | None = None          # Ray cluster address; None: start a local Ray instance
    nproc_per_node: int = 1             # > 1: each trial is a torchrun data-parallel run
    gpus_per_trial: float = 0.0         # Ray `num_gpus` of each trial's task; Slurm: GPUs per job
    trial_timeout: float | None = None  # wall-clock seconds an attempt may take (watchdog);
                                        # None: 3 x its seconds budget + 60 s (runners/launch/scheduler)
    checkpoint_minutes: float | None = None  # save training state this often (runners/run/checkpoint)
    start_method: str = "forkserver"    # START_METHODS: how the local pool starts a worker
    slurm: SlurmOptions | None = None   # the Slurm backend's options (None: its defaults)

    def check(self) -> None:
        """Raise UserError naming the bad option and what is valid."""
        if self.backend not in BACKENDS:
            raise UserError(f"unknown backend {self.backend!r}: valid are {', '.join(BACKENDS)}")
        if self.start_method not in START_METHODS:
            raise UserError(f"unknown start method {self.start_method!r}: valid are "
                            f"{', '.join(START_METHODS)}")
        if self.slurm is not None and self.backend != "slurm":
            raise UserError("the --slurm-* options and --detach go with --backend slurm")
        if self.backend == "slurm" and self.gpus_per_trial != int(self.gpus_per_trial):
            raise UserError(f"--gpus-per-trial {self.gpus_per_trial:g}: Slurm gives whole GPUs, "
                            "give an integer >= 0")
        if self.address and self.backend != "ray":
            raise UserError("--address goes with --backend ray")
        if self.nproc_per_node < 1:
            raise UserError(f"--nproc-per-node must be >= 1, got {self.nproc_per_node}")
        if self.gpus_per_trial < 0:
            raise UserError(f"--gpus-per-trial must be >= 0, got {self.gpus_per_trial}")
        if self.trial_timeout is not None and not (math.isfinite(self.trial_timeout)
                                                   and self.trial_timeout > 0):
            raise UserError(f"--trial-timeout must be a finite number of seconds > 0, got "
                            f"{self.trial_timeout}")
        if self.checkpoint_minutes is not None and self.checkpoint_minutes < 0:
            raise UserError(f"--checkpoint-every must be >= 0 minutes (0: at every eval), got "
                            f"{self.checkpoint_minutes}")


@dataclass
class Outcome:
    """How an attempt ended: the worker's exit code (None when it is unknown, e.g. a Ray task
    that was lost with its node), where it ran, and a note on what happened."""

    returncode: int | None
    pid: int | None = None
    host: str | None = None
    note: str = ""
    status: str | None = None  # what its unsealed run is recorded as, when the launcher says
                               # (the watchdog: "failed"); None: "interrupted"
    output: str = ""  # the worker's last output (runners/launch/worker_log.py), where the backend has it


def describe_exit(returncode: int) -> str:
    """'killed by signal 9 (SIGKILL)' or 'exited with code 1'."""
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = "unknown signal"
        return f"killed by signal {-returncode} ({name})"
    return f"exited with code {returncode}"


def worker_command(job_path: str | Path, nproc_per_node: int = 1) -> list[str]:
    """The command that runs one trial from its job file (runners/launch/worker.py), under torchrun
    (one process per rank, on this node) when `nproc_per_node` > 1."""
    if nproc_per_node == 1:
        return [sys.executable, "-m", "runners.launch.worker", str(job_path)]
    return [sys.executable, "-m", "torch.distributed.run", "--standalone",
            f"--nproc-per-node={nproc_per_node}", "-m", "runners.launch.worker", str(job_path)]


def write_job(job: Mapping[str, Any]) -> str:
    """Write a worker's job to a fresh temporary file; returns its path (the caller removes it)."""
    fd, path = tempfile.mkstemp(prefix="pacebench-run-", suffix=".json")
    with os.fdopen(fd, "w") as f:
        json.dump(job, f)
    return path


@functools.cache
def _prctl():
    """libc's prctl, loaded in the launcher (loading it in a freshly forked child could block)."""
    return ctypes.CDLL(None).prctl if sys.platform.startswith("linux") else None


def die_with(parent: int) -> None:
    """Ask Linux to SIGKILL this process when its parent dies; exit if `parent` (a pid; 0 =
    do not check) is not its parent (any more). Safe in a Popen preexec_fn once _prctl() has
    been called."""
    prctl = _prctl()
    if prctl is not None:
        prctl(1, signal.SIGKILL)  # 1 = PR_SET_PDEATHSIG
    if parent and os.getppid() != parent:
        os._exit(1)


def run_child(cmd: list[str], env: Mapping[str, str], grace: float = 10.0) -> int:
    """Run `cmd` as a child that lives no longer than this process: SIGTERM or SIGINT here
    stops it (SIGTERM, then SIGKILL after `grace` seconds), and Linux kills it if this process
    is killed outright. Returns its exit status (that of the signal that stopped us, as a shell
    reports it: 128 + signal number)."""
    _prctl()
    child = subprocess.Popen(cmd, env=dict(env),
                             preexec_fn=functools.partial(die_with, os.getpid()))
    stopped_by: list[int] = []

    def stop(signum, frame) -> None:
        stopped_by.append(signum)
        if child.poll() is None:
            child.terminate()

    previous = {s: signal.signal(s, stop) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        while True:
            try:
                code = child.wait(timeout=grace if stopped_by else None)
                break
            except subprocess.TimeoutExpired:
                child.kill()
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    return 128 + stopped_by[0] if stopped_by else code


def name_process() -> None:
    """Name this process PROCESS_NAME (what `ps -o comm` and /proc/<pid>/comm show)."""
    prctl = _prctl()
    if prctl is not None:
        prctl(15, ctypes.c_char_p(PROCESS_NAME), 0, 0, 0)  # 15 = PR_SET_NAME


def spawn_worker(job_path: str | Path, nproc_per_node: int, log_path: Path,
                 echo: int | None = None) -> tuple[subprocess.Popen, LogPump]:
    """Start the worker command of `job_path` in a process group of its own, its output going
    to its capped log at `log_path` (and to the file descriptor `echo`, if given; finish the
    LogPump once the worker has ended); it dies with this process (and under torchrun its ranks
    die with the torchrun agent)."""
    _prctl()
    parent = os.getpid()
    env = {**os.environ, "PACEBENCH_PARENT_PID": str(parent)}
    pump = LogPump(log_path, echo=echo)
    try:
        return subprocess.Popen(worker_command(job_path, nproc_per_node), stdout=pump.write_fd,
                                stderr=subprocess.STDOUT, env=env, process_group=0,
                                preexec_fn=functools.partial(die_with, parent)), pump
    except BaseException:
        pump.finish(0.0)
        raise
    finally:
        pump.started()


def kill_tree(pid: int, reaped: bool = False) -> None:
    """SIGKILL the worker `pid` and what it started: its process group (a worker leads one)
    and every descendant psutil finds (one that left the group, too, while its parent lives).
    `reaped`: the worker has ended and its pid may name another process now, so only its
    group, whose id Linux does not reuse while a member lives, is killed."""
    found = []
    if not reaped:
        try:
            root = psutil.Process(pid)
            found = [*root.children(recursive=True), root]  # listed before any dies
        except psutil.Error:
            pass
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass  # no such group (left, or not made yet)
    for process in found:
        try:
            process.kill()  # (psutil checks the pid still names the process it listed)
        except psutil.Error:
            pass


class _SpawnedWorker:
    """A worker started as its own interpreter (the worker command)."""

    def __init__(self, job: Mapping[str, Any], log_path: Path, nproc_per_node: int,
                 echo: int | None = None) -> None:
        self.job_path = write_job(job)
        self.proc, self.pump = spawn_worker(self.job_path, nproc_per_node, log_path, echo)
        self.ended = False

    def poll(self) -> Outcome | None:
        if self.proc.poll() is None:
            return None
        self._end()
        return Outcome(self.proc.returncode, self.proc.pid, socket.gethostname(),
                       output=self.pump.recent_text())

    def _end(self) -> None:
        """The worker has ended: so does what it started, and its log is complete."""
        if not self.ended:
            self.ended = True
            kill_tree(self.proc.pid, reaped=True)
            self.pump.finish()
            Path(self.job_path).unlink(missing_ok=True)

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """Send `sig` to the worker; SIGKILL goes to everything it started too."""
        if self.proc.poll() is None:
            if sig == signal.SIGKILL:
                kill_tree(self.proc.pid)
            else:
                self.proc.send_signal(sig)

    def wait(self, timeout: float | None = None) -> bool:
        """Wait up to `timeout` seconds (None: no limit) for the worker to end; whether it has."""
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return False
        self._end()
        return True


class _WorkerProcess(ForkServerWorker):
    """A worker forked from the fork server, with PRELOADED imported (one server per launcher
    process), launched without the launcher's main module (runners/launch/process_internals.py)."""

    preload = PRELOADED


def _die_with_launcher() -> None:
    """In a forked worker: SIGKILL this process when the launcher that asked for it dies.

    Its Linux parent is the fork server, which cannot end first: every forked worker holds the
    server's "launcher alive" pipe open (multiprocessing passes it on), so the server sees the
    launcher's death only after its workers'. The worker therefore watches the launcher itself,
    through the sentinel multiprocessing gives it (readable once the launcher is gone)."""
    launcher = multiprocessing.parent_process()
    if launcher is None:
        return

    def watch() -> None:
        launcher.join()
        os.kill(os.getpid(), signal.SIGKILL)

    threading.Thread(target=watch, name="die-with-launcher", daemon=True).start()


def _forked_main(entry: Callable[[Mapping[str, Any]], int], job: Mapping[str, Any],
                 output: int, environ: Mapping[str, str], cwd: str) -> None:
    """A forked worker's life: lead a process group of its own, die with the launcher (and with
    the fork server), take the launcher's environment and working directory and write to
    `output` (its log's pipe), then `entry(job)`, whose result is the exit code."""
    os.setpgid(0, 0)
    parent = os.getppid()
    die_with(parent if parent != 1 else -1)  # 1: the server is already gone (-1: exit now)
    _die_with_launcher()
    name_process()
    os.dup2(output, 1)
    os.dup2(output, 2)
    os.close(output)
    os.environ.clear()
    os.environ.update(environ)
    os.chdir(cwd)
    code = entry(job)
    sys.stdout.flush()
    sys.stderr.flush()
    sys.exit(code)


class _ForkedWorker:
    """A worker forked from the fork server (see the module docstring)."""

    def __init__(self, entry: Callable[[Mapping[str, Any]], int], job: Mapping[str, Any],
                 log_path: Path, echo: int | None = None) -> None:
        _prctl()
        self.pump, self.ended = LogPump(log_path, echo=echo), False
        self.proc = _WorkerProcess(
            target=_forked_main, name="pacebench-run",
            args=(entry, dict(job), InheritedFd(self.pump.write_fd), dict(os.environ),
                  os.getcwd()))
        try:
            self.proc.start()
        except BaseException:
            self.pump.finish(0.0)
            raise
        finally:
            self.pump.started()

    def poll(self) -> Outcome | None:
        code = self.proc.exitcode
        if code is None:
            return None
        self._end()
        return Outcome(code, self.proc.pid, socket.gethostname(), output=self.pump.recent_text())

    def _end(self) -> None:
        """The worker has ended: so does what it started, and its log is complete."""
        if not self.ended:
            self.ended = True
            kill_tree(self.proc.pid, reaped=True)
            self.pump.finish()

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """Send `sig` to the worker; SIGKILL goes to everything it started too."""
        if self.proc.exitcode is None:
            if sig == signal.SIGKILL:
                kill_tree(self.proc.pid)
                return
            try:
                os.kill(self.proc.pid, sig)
            except ProcessLookupError:
                pass  # ended meanwhile

    def wait(self, timeout: float | None = None) -> bool:
        """Wait up to `timeout` seconds (None: no limit) for the worker to end; whether it has."""
        self.proc.join(timeout)
        if self.proc.exitcode is None:
            return False
        self._end()
        return True


def forks(options: LaunchOptions) -> bool:
    """Whether the local backend forks its workers from the fork server under `options`."""
    return options.backend == "local" and options.start_method == "forkserver" \
        and options.nproc_per_node == 1 and "forkserver" in multiprocessing.get_all_start_methods()


def start_fork_server(options: LaunchOptions) -> bool:
    """Start the fork server ahead of the first worker when `options` fork workers from it: its
    imports (PRELOADED: torch and its compiler stack, about 7 s here) then run while the
    launcher plans, checks and reads its store, instead of after. Whether it was started (a
    server already running counts)."""
    if not forks(options):
        return False
    _WorkerProcess.start_server()
    return True


class LocalBackend:
    """The default backend: each trial a process on this machine, a descendant of the launcher.
    `entry`: what a forked worker runs on its job (runners.launch.worker.run_job; the spawn method
    runs the worker command instead); `echo`: a file descriptor that gets every worker's output
    besides its log (`pacebench run` shows its run's output: 1)."""

    def __init__(self, options: LaunchOptions,
                 entry: Callable[[Mapping[str, Any]], int] | None = None,
                 echo: int | None = None) -> None:
        self.options, self.entry, self.echo = options, entry, echo
        self.forked = entry is not None and forks(options)

    def start(self, job: Mapping[str, Any], log_path: Path) -> _SpawnedWorker | _ForkedWorker:
        if self.forked:
            return _ForkedWorker(self.entry, job, log_path, self.echo)
        return _SpawnedWorker(job, log_path, self.options.nproc_per_node, self.echo)

    def close(self) -> None:
        pass
