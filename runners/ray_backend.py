"""The Ray backend of the launcher: each trial one Ray task, on a local instance or a cluster.

A task runs the very same worker as the local pool (runners.launch.processes.worker_command, a
`python -m runners.launch.worker JOB.json` child of the task's Ray worker), so a trial's records do not
depend on the backend, and a task that is cancelled or lost with its node is just a dead worker
process: the child dies with its Ray worker (PR_SET_PDEATHSIG) and its run reads `interrupted`.
Each task asks Ray for the trial's resources: `threads x nproc_per_node` CPUs and
`gpus_per_trial` GPUs. The store (and so the logs under `<store>/logs/`) must be on a path that
every node sees at the same place, and every node needs this package in the same environment.

Ray is started here only when no `address` is given and Ray is not running in this process yet:
a local instance (LocalRay) with `workers x cpus per trial` CPUs (so as many trials at once as
the local pool would run), no dashboard; it is shut down when the launch ends. With `address` (e.g.
"ray://head:10001" or "auto"), the launcher joins that cluster and leaves it running.
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Mapping

from runners.launch.process_internals import enable_ray_token_auth
from runners.launch.processes import (STOP_GRACE_S, LaunchOptions, Outcome, kill_tree, spawn_worker,
                                      write_job)
from workbench.errors import UserError
from workbench.spec import RunConfig

__all__ = ["RayBackend", "run_trial_task", "LocalRay"]


def run_trial_task(job: Mapping[str, Any], log_path: str, nproc_per_node: int,
                   niceness: int = 0) -> dict[str, Any]:
    """The body of a trial's Ray task: run the worker command to its end; (exit code, pid, host).

    The worker runs at `niceness` (the launcher's) when this process runs at a lower one.
    Cancelled gently (KeyboardInterrupt in the task), it passes SIGTERM on to the worker, which
    then records its run as `interrupted`, and kills it with everything it started after half
    of STOP_GRACE_S (before the launcher, after STOP_GRACE_S, cancels the task by force, which
    would leave the worker's children to live on); whatever the worker started dies when it
    ends (its process group).
    """
    if niceness > os.nice(0):
        os.nice(niceness - os.nice(0))  # this task's worker process only serves this trial
    job_path = write_job(job)
    try:
        proc, pump = spawn_worker(job_path, nproc_per_node, Path(log_path))
        try:
            returncode = proc.wait()
        except KeyboardInterrupt:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(STOP_GRACE_S / 2)
            except subprocess.TimeoutExpired:
                kill_tree(proc.pid)
                proc.wait()
            raise
        finally:
            kill_tree(proc.pid, reaped=proc.poll() is not None)
            pump.finish()
        return {"returncode": returncode, "pid": proc.pid, "host": socket.gethostname()}
    finally:
        os.unlink(job_path)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("", 0))
        return sock.getsockname()[1]


def _normal_priority() -> None:
    """Run Ray's own processes at normal priority when allowed, even under `nice`: they must meet
    Ray's hard-coded start-up deadlines. (Trials go back to the launcher's niceness, see
    run_trial_task.)"""
    try:
        os.setpriority(os.PRIO_PROCESS, 0, 0)
    except OSError:
        pass


class LocalRay:
    """A local Ray instance for one launch (or one test module), joined by this process.

    Started as `ray start --head --block` at normal priority: the raylet waits at most 15 s (not
    configurable in Ray 2.60) for its Python agents to report their ports and aborts otherwise,
    which happens on a small, busy machine (seen on a loaded 2-core machine, where each agent
    took 8 to 16 s to start, 4 s of it importing jsonschema's rfc3987_syntax); start-up is
    therefore tried up to `attempts` times. `stop()` (or leaving the `with` block) disconnects
    and ends the instance: `ray start --block` stops the processes it started on SIGTERM.
    """

    def __init__(self, num_cpus: int, num_gpus: float | None = None,
                 timeout_s: float = 300.0, attempts: int = 3) -> None:
        self.num_cpus, self.num_gpus, self.timeout_s = num_cpus, num_gpus, timeout_s
        self.attempts = attempts
        self.proc: subprocess.Popen | None = None

    def start(self) -> "LocalRay":
        """Start and join the instance, trying up to `attempts` times (each start-up that misses
        one of Ray's deadlines leaves the file caches warmer for the next)."""
        for attempt in range(1, self.attempts + 1):
            try:
                return self._start_once()
            except RuntimeError:
                if attempt == self.attempts:
                    raise
        raise AssertionError("unreachable")

    def _start_once(self) -> "LocalRay":
        import ray

        port, *agent_ports = (_free_port() for _ in range(5))
        cmd = [sys.executable, "-m", "ray.scripts.scripts", "start", "--head", "--block",
               f"--num-cpus={self.num_cpus}", "--include-dashboard=false",
               "--disable-usage-stats", f"--port={port}", f"--metrics-export-port={agent_ports[0]}",
               f"--dashboard-agent-grpc-port={agent_ports[1]}",
               f"--dashboard-agent-listen-port={agent_ports[2]}",
               f"--runtime-env-agent-port={agent_ports[3]}"]
        if self.num_gpus:
            cmd.append(f"--num-gpus={self.num_gpus}")
        self.log = tempfile.NamedTemporaryFile("w+", prefix="pacebench-ray-", suffix=".log")
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT,
                                     preexec_fn=_normal_priority)
        deadline = time.monotonic() + self.timeout_s
        while "Ray runtime started" not in Path(self.log.name).read_text():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                text = Path(self.log.name).read_text()[-2000:]
                self.stop()
                raise RuntimeError(f"could not start a local Ray instance: {text}")
            time.sleep(0.5)
        # One auth mode for the instance and this driver: a new head turns token auth on (unless
        # RAY_AUTH_MODE says otherwise), a driver joining by address does not and then fails with
        # InvalidAuthToken; this turns it on here as ray.init(address="auto") would.
        enable_ray_token_auth()
        try:
            ray.init(address=f"{ray.util.get_node_ip_address()}:{port}", log_to_driver=False)
        except BaseException:
            self.stop()  # leave no instance behind
            raise
        return self

    def stop(self) -> None:
        import ray

        ray.shutdown()
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait()
        self.proc = None

    def __enter__(self) -> "LocalRay":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


class _RayTask:
    """A handle on one trial's Ray task, with the launcher's poll / kill / wait."""

    def __init__(self, ray, ref) -> None:
        self.ray, self.ref, self.killed = ray, ref, False

    def poll(self) -> Outcome | None:
        ready, _ = self.ray.wait([self.ref], timeout=0)
        if not ready:
            return None
        try:
            out = self.ray.get(self.ref)
        except self.ray.exceptions.RayError as e:  # cancelled, worker crashed, node lost
            first = (str(e).strip().splitlines() or [""])[0]
            return Outcome(None, note="" if self.killed else
                           f"Ray task failed: {type(e).__name__}: {first}"[:300])
        return Outcome(out["returncode"], out["pid"], out["host"])

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """SIGKILL: end the task's Ray worker (the trial's process dies with it); else ask the
        task to stop its worker with SIGTERM."""
        self.killed = True
        self.ray.cancel(self.ref, force=sig == signal.SIGKILL)

    def wait(self, timeout: float | None = None) -> bool:
        """Wait up to `timeout` seconds (None: no limit) for the task to end; whether it has."""
        ready, _ = self.ray.wait([self.ref], timeout=timeout)
        return bool(ready)


class RayBackend:
    """Starts each trial as a Ray task with its CPU and GPU resources (see the module doc)."""

    def __init__(self, options: LaunchOptions, workers: int, threads: int = 1) -> None:
        try:
            import ray
        except ImportError:
            raise UserError("--backend ray needs Ray: pip install 'ray==2.60.0' (pinned in "
                            "constraints.txt), or use the default local backend") from None
        self.ray, self.options = ray, options
        self.local: LocalRay | None = None
        if not ray.is_initialized():
            if options.address:
                ray.init(address=options.address, log_to_driver=False)
            else:
                self.local = LocalRay(num_cpus=workers * max(threads, 1) * options.nproc_per_node,
                                      num_gpus=workers * options.gpus_per_trial or None).start()
        self.task = ray.remote(max_retries=0)(run_trial_task)

    def start(self, job: Mapping[str, Any], log_path: Path) -> _RayTask:
        threads = RunConfig.from_dict(job["config"]).execution.threads
        task = self.task.options(num_cpus=threads * self.options.nproc_per_node,
                                 num_gpus=self.options.gpus_per_trial)
        return _RayTask(self.ray, task.remote(dict(job), str(log_path),
                                              self.options.nproc_per_node, os.nice(0)))

    def close(self) -> None:
        if self.local is not None:
            self.local.stop()
