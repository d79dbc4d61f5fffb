"""A real single-node Slurm on loopback, for the tests of the Slurm backend (tests/
test_slurm_backend.py; docs/slurm.md shows its configuration).

Debian's munge, slurmctld and slurmd (`make install` installs them), started as root in a
temporary folder: a fresh munge key, no cgroups, no systemd, no accounting database (job state
comes from squeue and the store: runners/launch/slurm_backend.py), one node `localhost` with this
machine's CPUs in one partition `debug`, ports picked free. Clients find it through SLURM_CONF,
which `environ()` gives (the fixture sets it for the whole test session).
"""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

__all__ = ["SlurmCluster", "slurm_conf", "DAEMONS"]

DAEMONS = ("munged", "slurmctld", "slurmd", "sinfo", "sbatch", "squeue", "scancel", "scontrol")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def slurm_conf(root: Path, cpus: int, ctld_port: int, slurmd_port: int) -> str:
    """The cluster's slurm.conf: everything under `root`, plugins that need neither cgroups nor
    systemd, no accounting; KillWait 5 s (scancel: SIGTERM, then SIGKILL 5 s later); MinJobAge
    300 s (squeue lists a job for 5 minutes after it ended)."""
    return f"""\
ClusterName=pacebench-test
SlurmctldHost=localhost
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={root}/munge/munge.socket
SlurmUser=root
SlurmdUser=root
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool
SlurmctldPidFile={root}/slurmctld.pid
SlurmdPidFile={root}/slurmd.pid
SlurmctldLogFile={root}/log/slurmctld.log
SlurmdLogFile={root}/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=1
MpiDefault=none
ReturnToService=2
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
KillWait=5
MinJobAge=300
MaxArraySize=10000
NodeName=localhost NodeHostname=localhost NodeAddr=127.0.0.1 CPUs={cpus} State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
"""


class SlurmCluster:
    """munged, slurmctld and slurmd under `root` (a fresh folder), started by start() and ended
    by stop(); RuntimeError from start() with the daemon's own words when one cannot start."""

    def __init__(self, root: Path, cpus: int | None = None) -> None:
        self.root, self.cpus = Path(root), cpus or os.cpu_count() or 1
        self.conf = self.root / "slurm.conf"
        self.pids: list[int] = []

    def environ(self) -> dict[str, str]:
        return {"SLURM_CONF": str(self.conf)}

    def start(self, timeout_s: float = 60.0) -> "SlurmCluster":
        missing = [d for d in DAEMONS if shutil.which(d) is None and
                   not Path("/usr/sbin", d).exists()]
        if missing:
            raise RuntimeError(f"Slurm is not installed here ({', '.join(missing)} missing): "
                               "`make install` installs Debian's slurmctld, slurmd and munge")
        for sub in ("munge", "state", "spool", "log"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        (self.root / "munge").chmod(0o711)  # munged wants the socket's folder searchable
        key = self.root / "munge" / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        self.conf.write_text(slurm_conf(self.root, self.cpus, _free_port(), _free_port()))
        env = {**os.environ, **self.environ()}
        self._run(["munged", f"--key-file={key}", f"--socket={self.root}/munge/munge.socket",
                   f"--pid-file={self.root}/munge/munged.pid", "--force",
                   f"--log-file={self.root}/log/munged.log",
                   f"--seed-file={self.root}/munge/seed"], env, self.root / "munge/munged.pid")
        self._run(["slurmctld", "-i"], env, self.root / "slurmctld.pid")
        self._run(["slurmd", "-N", "localhost"], env, self.root / "slurmd.pid")
        deadline = time.monotonic() + timeout_s
        while True:
            out = subprocess.run(["sinfo", "--noheader", "--format=%t"], env=env,
                                 capture_output=True, text=True).stdout.split()
            if out == ["idle"]:
                return self
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"Slurm's node is not idle after {timeout_s:g} s "
                                   f"(sinfo: {out}); logs:\n{self.logs()}")
            time.sleep(0.2)

    def _run(self, cmd: list[str], env: dict, pid_file: Path) -> None:
        """Start a daemon (it forks into the background) and note its pid."""
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
        deadline = time.monotonic() + 10
        pid = _pid_in(pid_file)
        while pid is None and done.returncode == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
            pid = _pid_in(pid_file)
        if pid is None or done.returncode != 0:
            self.stop()
            raise RuntimeError(f"{cmd[0]} did not start (exit {done.returncode}): "
                               f"{(done.stderr or done.stdout).strip()[-1000:]}\n{self.logs()}")
        self.pids.append(pid)

    def logs(self) -> str:
        texts = []
        for log in sorted((self.root / "log").glob("*.log")):
            texts.append(f"--- {log.name}\n" + log.read_text(errors="replace")[-2000:])
        return "\n".join(texts)

    def stop(self) -> None:
        """Cancel every job, then end the daemons, each by its pid: all three told at once
        (slurmd first), then waited for together (up to 5 s), as each takes 1.5 to 2 s to
        save its state and go (one after another, 5.5 s of the session's end)."""
        env = {**os.environ, **self.environ()}
        if self.pids:
            subprocess.run(["scancel", "--full", "--user=root"], env=env, capture_output=True)
        alive = []
        for pid in reversed(self.pids):
            try:
                os.kill(pid, signal.SIGTERM)
                alive.append(pid)
            except ProcessLookupError:
                continue
        deadline = time.monotonic() + 5.0
        while alive and time.monotonic() < deadline:
            time.sleep(0.05)
            alive = [pid for pid in alive if _exists(pid)]
        self.pids.clear()


def _pid_in(pid_file: Path) -> int | None:
    """The pid a daemon wrote, or None while its file is missing or still empty: a daemon
    creates the file before it writes the number (CI once read an empty slurmctld.pid)."""
    try:
        words = pid_file.read_text().split()
    except FileNotFoundError:
        return None
    return int(words[0]) if words and words[0].isdigit() else None


def _exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
