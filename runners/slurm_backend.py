"""The Slurm backend of the launcher: each trial one job of a submitit job array.

A launch's trials are submitted together, in their launch order, as one job array (the first
poll after the launcher has started them all submits what it queued); Slurm runs
`--slurm-array-parallelism` of them at once (default: all it can place). Each job runs the very
same worker as the local pool and Ray (runners.launch.processes.spawn_worker: `python -m runners.launch.worker
JOB.json`, under torchrun with `--nproc-per-node` > 1) as a child of submitit's job process, so a
trial's records do not depend on the backend. The job asks for `threads x nproc_per_node` CPUs,
`--gpus-per-trial` GPUs, and a time limit of the trial's watchdog (runners/launch/scheduler.py) plus
START_MARGIN_S, in whole minutes; Slurm enforces it, not the launcher, which also lets a trial
wait in the queue for as long as the cluster makes it.

Preemption and time-out: submitit's protocol. Slurm sends the job SLURM_SIGNAL (USR1 here)
SIGNAL_DELAY_S before its limit, or on preemption; the job then stops its worker (SIGTERM: the run
records itself `interrupted`) and requeues itself (`scontrol requeue`), and the requeued job runs
the trial again, which resumes from its last checkpoint (`--checkpoint-every`, runners/
checkpoint.py) with its accumulated time. A job cancelled with `scancel` leaves its run
`interrupted`, and `--resume` runs it again. Ctrl-C in the launcher cancels every job it
submitted.

Job state without Slurm's accounting database: `squeue --states=all` (which lists a job that
ended for MinJobAge seconds after its end) plus the store: a job that left the queue has ended,
and how its trial ended is in its outcome file (below) and its run's record. Each submitted job is
registered in the store (SLURM_JOBS_FILE) so that `--resume` and `--status` see the trials that
Slurm still has pending or running, even after the launcher that submitted them has gone
(`--detach`).

Files under the store's `slurm/` folder (records.SLURM_DIR): submitit's folder (its pickled jobs
and the jobs' own output, which only submitit reads), the jobs file (JSON lines: trial key, study
name, job id, time) and one outcome file per finished job (JSON: exit code, pid, host), which is
all the launcher reads back, validated. The store must be on a path that every node sees at the
same place: a probe job checks it before the array is submitted (`--slurm-store-check off`
skips it).
"""
from __future__ import annotations

import json
import math
import os
import re
import shutil
import signal
import socket
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

import psutil

from runners.launch.processes import (STOP_GRACE_S, LaunchOptions, Outcome, SlurmOptions, kill_tree,
                                      spawn_worker, write_job)
from workbench import records as R
from workbench.errors import UserError
from workbench.spec import RunConfig

__all__ = ["SlurmBackend", "SlurmTrial", "sbatch_parameters", "time_limit_minutes",
           "parse_slurm_param", "check_setup_line", "check_options", "check_slurm_commands",
           "check_cluster", "squeue_states", "queued_trial_keys", "registered_jobs",
           "START_MARGIN_S", "SIGNAL_DELAY_S", "SLURM_SIGNAL", "QUEUED_STATES"]

START_MARGIN_S = 120.0  # a job's time limit: its trial's watchdog + this (job start, imports)
SIGNAL_DELAY_S = 60  # the stop signal comes this many seconds before the limit
SLURM_SIGNAL = "USR1"  # the signal of a coming time limit or preemption (submitit's protocol)
POLL_EVERY_S = 1.0  # how often the launcher asks squeue (each job's poll reads the answer)
PROBE_TIMEOUT_S = 600.0  # how long the store probe job may take, queueing included
# squeue states of a job that Slurm still has (pending, running or about to run again)
QUEUED_STATES = frozenset({"PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "REQUEUED",
                           "REQUEUE_FED", "REQUEUE_HOLD", "RESIZING", "SUSPENDED", "SIGNALING",
                           "STAGE_OUT", "RESV_DEL_HOLD", "STOPPED"})
# Options the backend sets itself (or submitit does): --slurm-param may not set them.
_OWN_PARAMS = frozenset({"array", "time", "t", "signal", "s", "output", "o", "error", "e",
                         "open-mode", "job-name", "J", "cpus-per-task", "c", "gpus-per-node",
                         "partition", "p", "requeue", "no-requeue", "wrap", "chdir", "D"})
_PARAM_KEY = re.compile(r"[a-z][a-z0-9-]{0,39}")
_PARAM_VALUE = re.compile(r"[A-Za-z0-9_.,:=@%+/\-\[\]]{0,200}")
_JOB_ID = R.SLURM_JOB_ID


def parse_slurm_param(item: str) -> tuple[str, str]:
    """An sbatch option from `--slurm-param KEY=VALUE` (e.g. account=proj1, qos=high,
    mem=16G, constraint=a100): UserError in one line when KEY is not an sbatch option's name
    or is one the backend sets itself, or VALUE holds characters an option value never needs."""
    key, sep, value = item.partition("=")
    key = key.strip().lstrip("-")
    if not sep or not _PARAM_KEY.fullmatch(key):
        raise UserError(f"--slurm-param {item!r}: give KEY=VALUE, KEY an sbatch option's long "
                        "name in lower case (letters, digits, '-'), e.g. account=proj1")
    if key in _OWN_PARAMS:
        raise UserError(f"--slurm-param {key}: set by Pacebench itself (time limit, array, "
                        "signal, logs, CPUs) or by its own flag (--slurm-partition, "
                        "--gpus-per-trial); not settable here")
    if not _PARAM_VALUE.fullmatch(value):
        raise UserError(f"--slurm-param {key}: value {value[:60]!r} is not valid: up to 200 "
                        "letters, digits and _.,:=@%+/-[] (no spaces, quotes or newlines)")
    return key, value


def check_setup_line(line: str) -> str:
    """A `--slurm-setup` line as given: one shell line (a command the job runs before its trial,
    e.g. `module load cuda` or `source ~/venv/bin/activate`); UserError on an empty one or one
    holding a newline or another control character."""
    if not line.strip() or any(ord(ch) < 32 and ch != "\t" for ch in line):
        raise UserError(f"--slurm-setup {line[:60]!r}: give one non-empty shell line (no "
                        "newlines or control characters); repeat the flag for more lines")
    return line


def check_options(slurm: SlurmOptions) -> SlurmOptions:
    """UserError in one line naming the first bad Slurm option."""
    if slurm.partition is not None and not re.fullmatch(r"[A-Za-z0-9_.\-]{1,64}",
                                                        slurm.partition):
        raise UserError(f"--slurm-partition {slurm.partition[:60]!r}: not a partition name "
                        "(letters, digits, _ . -)")
    if slurm.array_parallelism is not None and slurm.array_parallelism < 1:
        raise UserError(f"--slurm-array-parallelism must be >= 1, got "
                        f"{slurm.array_parallelism}")
    for line in slurm.setup:
        check_setup_line(line)
    for key, value in slurm.params:
        parse_slurm_param(f"{key}={value}")
    return slurm


def check_slurm_commands() -> None:
    """UserError (one line) unless Slurm's sbatch, squeue and scancel are on the PATH."""
    missing = [c for c in ("sbatch", "squeue", "scancel") if shutil.which(c) is None]
    if missing:
        raise UserError(f"--backend slurm needs Slurm's commands on this machine's PATH "
                        f"({', '.join(missing)} not found): run it from a login node")


def check_cluster() -> None:
    """UserError (one line, Slurm's own words) unless this machine reaches a Slurm controller
    (`sinfo` answers)."""
    try:
        done = subprocess.run(["sinfo", "--noheader", "--format=%P"], capture_output=True,
                              text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as err:
        raise UserError(f"--backend slurm: sinfo did not answer ({err})") from None
    if done.returncode != 0:
        said = next((line for line in done.stderr.splitlines() if line.strip()), "no message")
        raise UserError(f"--backend slurm: no Slurm controller answers here (sinfo: "
                        f"{said.strip()[:200]}); run it where sbatch works (a login node, "
                        "SLURM_CONF set)")


def _submitted(submit: Callable[[], Any]) -> Any:
    """`submit()`, with a refused submission as a one-line UserError in sbatch's words."""
    try:
        return submit()
    except (OSError, subprocess.SubprocessError, RuntimeError) as err:
        said = next((line for line in str(err).splitlines() if line.strip()), type(err).__name__)
        raise UserError(f"Slurm refused the submission: {said.strip()[:300]} (check the "
                        "--slurm-* options)") from None


def time_limit_minutes(watchdog_s: float) -> int:
    """A job's Slurm time limit: the trial's watchdog plus START_MARGIN_S, in whole minutes
    (rounded up)."""
    return max(1, math.ceil((watchdog_s + START_MARGIN_S) / 60.0))


def sbatch_parameters(options: LaunchOptions, watchdog_s: float, threads: int,
                      name: str = "pacebench") -> dict[str, Any]:
    """submitit's SlurmExecutor parameters of a launch's jobs: `watchdog_s` the longest watchdog
    of its trials, `threads` the most torch threads one of them uses (see the module doc)."""
    slurm = options.slurm or SlurmOptions()
    params: dict[str, Any] = {
        "job_name": name, "time": time_limit_minutes(watchdog_s),
        "cpus_per_task": max(threads, 1) * options.nproc_per_node, "ntasks_per_node": 1,
        "stderr_to_stdout": True,
        # submitit's stop signal, on both sides: sbatch's, and the job's submitit reads it from
        # its environment (set here, not in the launcher's, where submitit may be imported)
        "additional_parameters": {**dict(slurm.params),
                                  "signal": f"{SLURM_SIGNAL}@{SIGNAL_DELAY_S}"},
        "setup": [f"export SUBMITIT_PREEMPT_SIGNAL={SLURM_SIGNAL}", *slurm.setup],
    }
    if options.gpus_per_trial:
        params["gpus_per_node"] = int(options.gpus_per_trial)
    if slurm.partition:
        params["partition"] = slurm.partition
    if slurm.array_parallelism:
        params["array_parallelism"] = slurm.array_parallelism
    return params


def _submitit():
    """submitit, or UserError saying how to install it."""
    try:
        import submitit
    except ImportError:
        raise UserError("--backend slurm needs submitit: pip install 'submitit==1.5.4' "
                        "(pinned in constraints.txt)") from None
    return submitit


def _slurm_folder(store_root: str | Path) -> Path:
    return Path(store_root) / R.SLURM_DIR


def _outcome_path(store_root: str | Path, job_id: str) -> Path:
    return _slurm_folder(store_root) / R.SLURM_OUTCOMES_DIR / f"{job_id}.json"


class SlurmTrial:
    """The body of a trial's Slurm job (pickled by submitit): run the worker command to its end
    and write the job's outcome file. On SLURM_SIGNAL submitit calls `checkpoint`: stop the
    worker (SIGTERM: its run records itself `interrupted`; its last checkpoint stays) and
    requeue the same trial."""

    def __init__(self, job: Mapping[str, Any], log_path: str, nproc_per_node: int) -> None:
        self.job, self.log_path, self.nproc_per_node = dict(job), log_path, nproc_per_node
        self._pid: int | None = None

    def __call__(self) -> dict[str, Any]:
        job_path = write_job(self.job)
        try:
            proc, pump = spawn_worker(job_path, self.nproc_per_node, Path(self.log_path))
            self._pid = proc.pid
            try:
                while proc.poll() is None:  # (not wait(): the signal handler may run meanwhile)
                    time.sleep(0.2)
            finally:
                kill_tree(proc.pid, reaped=proc.poll() is not None)
                pump.finish()
            out = {"returncode": proc.returncode, "pid": proc.pid, "host": socket.gethostname(),
                   "job_id": R.slurm_job_id(os.environ)}
            self._write_outcome(out)
            return out
        finally:
            os.unlink(job_path)

    def _write_outcome(self, out: Mapping[str, Any]) -> None:
        if out["job_id"] is None:
            return
        path = _outcome_path(self.job["store"], out["job_id"])
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(out))
        os.replace(tmp, path)

    def checkpoint(self, *args: Any, **kwargs: Any):
        """submitit's hook on SLURM_SIGNAL: stop the worker, then requeue this trial."""
        if self._pid is not None:
            _stop(self._pid)
        submitit = _submitit()
        return submitit.helpers.DelayedSubmission(
            SlurmTrial(self.job, self.log_path, self.nproc_per_node))


def _stop(pid: int) -> None:
    """SIGTERM the worker `pid`; after STOP_GRACE_S, SIGKILL it with all it started. (Polled
    through psutil: this runs in a signal handler, which must not wait on the Popen.)"""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + STOP_GRACE_S
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                break
        except psutil.Error:
            break
        time.sleep(0.1)
    kill_tree(pid)


def _probe(path: str, token: str) -> None:
    """A probe job's body: reply to the launcher's token file through the store."""
    text = Path(path).read_text()
    if text == token:
        Path(path + ".reply").write_text(socket.gethostname())


def squeue_states(job_ids: Iterable[str]) -> dict[str, str]:
    """{job id: its Slurm state} of the `job_ids` that squeue still lists ("PENDING",
    "RUNNING", ..., or a final state for MinJobAge seconds after the end); a job missing from
    the answer has left Slurm's memory (ended). An array's pending tasks are listed one by one
    (--array). RuntimeError when squeue fails."""
    ids = sorted(set(job_ids))
    if not ids:
        return {}
    done = subprocess.run(["squeue", "--noheader", "--array", "--states=all",
                           "--format=%i %T", "--jobs=" + ",".join(ids)],
                          capture_output=True, text=True, timeout=60)
    if done.returncode != 0 and "Invalid job id" not in done.stderr:
        raise RuntimeError(f"squeue failed: {done.stderr.strip()[:300]}")
    states = {}
    for line in done.stdout.splitlines():
        parts = line.split()
        if len(parts) == 2 and _JOB_ID.fullmatch(parts[0]):
            states[parts[0]] = parts[1]
    wanted = set(ids)
    return {job: state for job, state in states.items() if job in wanted}


def registered_jobs(store_root: str | Path, study_name: str | None = None) -> dict[str, str]:
    """{trial key: its newest Slurm job id} from the store's jobs file (of study `study_name`,
    or all); lines that do not parse or validate are skipped."""
    path = _slurm_folder(store_root) / R.SLURM_JOBS_FILE
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return {}
    jobs = {}
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if not isinstance(entry, dict):
            continue
        key, job = entry.get("trial_key"), entry.get("job_id")
        if not (isinstance(key, str) and re.fullmatch(r"[0-9a-f]{1,64}", key)
                and isinstance(job, str) and _JOB_ID.fullmatch(job)):
            continue
        if study_name is None or entry.get("study_name") == study_name:
            jobs[key] = job
    return jobs


def queued_trial_keys(store_root: str | Path, study_name: str) -> set[str]:
    """Trial keys of study `study_name` whose newest job Slurm still has pending or running
    (what `--resume` does not submit again); empty when none was submitted to Slurm."""
    jobs = registered_jobs(store_root, study_name)
    if not jobs:
        return set()
    if shutil.which("squeue") is None:
        raise UserError(f"study {study_name!r} has Slurm jobs in store {store_root} but "
                        "squeue is not found here: resume it where Slurm's commands are")
    states = squeue_states(jobs.values())
    return {key for key, job in jobs.items() if states.get(job) in QUEUED_STATES}


class _SlurmJob:
    """A handle on one trial's Slurm job, with the launcher's poll / kill / wait."""

    def __init__(self, backend: "SlurmBackend", store_root: str) -> None:
        self.backend, self.store_root = backend, store_root
        self.job_id: str | None = None  # set when its array is submitted
        self.killed = False

    def poll(self) -> Outcome | None:
        self.backend.flush()
        state = self.backend.state(self.job_id)
        if state in QUEUED_STATES:
            return None
        return self._outcome(state)

    def _outcome(self, state: str | None) -> Outcome:
        out = _read_outcome(self.store_root, self.job_id)
        if out is not None and state in (None, "COMPLETED"):
            return Outcome(out["returncode"], out["pid"], out["host"])
        said = f"in state {state}" if state else "without an outcome"
        note = "" if self.killed else \
            f"Slurm job {self.job_id} ended {said} (cancelled, timed out, or its node lost)"
        return Outcome(None, note=note)

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """Cancel the job (scancel: Slurm sends its processes SIGTERM, then SIGKILL after the
        cluster's KillWait); once is enough."""
        if not self.killed and self.job_id is not None:
            self.killed = True
            subprocess.run(["scancel", self.job_id], capture_output=True, timeout=60)

    def wait(self, timeout: float | None = None) -> bool:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                return False
            time.sleep(POLL_EVERY_S / 4)
        return True


def _read_outcome(store_root: str, job_id: str | None) -> dict[str, Any] | None:
    """A job's outcome file, validated; None when missing or not valid."""
    if job_id is None:
        return None
    try:
        out = json.loads(_outcome_path(store_root, job_id).read_text())
    except (OSError, ValueError):
        return None
    if not (isinstance(out, dict) and isinstance(out.get("returncode"), int)
            and isinstance(out.get("pid"), int) and isinstance(out.get("host"), str)):
        return None
    return {"returncode": out["returncode"], "pid": out["pid"], "host": out["host"][:255]}


class SlurmBackend:
    """Submits a launch's trials as one submitit job array and tracks them with squeue (see the
    module doc). `watchdog`: a trial's watchdog seconds (runners/scheduler.watchdog_seconds).
    The launcher starts every trial at once (`queues_all`); Slurm's time limit, not the
    launcher's watchdog, ends an overlong one (`enforces_time_limit`)."""

    queues_all = True
    enforces_time_limit = True

    def __init__(self, options: LaunchOptions, threads: int,
                 watchdog: Callable[[RunConfig], float]) -> None:
        self.options, self.threads, self.watchdog = options, threads, watchdog
        self.slurm = options.slurm or SlurmOptions()
        check_options(self.slurm)
        self.submitit = _submitit()
        check_slurm_commands()
        check_cluster()
        self.detach = self.slurm.detach
        self.queued: list[tuple[Mapping[str, Any], Path, _SlurmJob]] = []
        self.submitted: list[_SlurmJob] = []
        self._states: dict[str, str] = {}
        self._asked = -math.inf
        self._probed: set[str] = set()

    def start(self, job: Mapping[str, Any], log_path: Path) -> _SlurmJob:
        """Queue the trial of `job`; the first poll submits what is queued as one array."""
        handle = _SlurmJob(self, job["store"])
        self.queued.append((job, log_path, handle))
        return handle

    def flush(self) -> None:
        """Submit the queued trials as one job array, in their order, and register each job in
        the store (SLURM_JOBS_FILE)."""
        if not self.queued:
            return
        queued, self.queued = self.queued, []
        store_root = queued[0][0]["store"]
        if self.slurm.store_check and store_root not in self._probed:
            self.check_store(store_root)
            self._probed.add(store_root)
        configs = [RunConfig.from_dict(job["config"]) for job, _, _ in queued]
        executor = self.executor(store_root)
        executor.update_parameters(**sbatch_parameters(
            self.options, max(self.watchdog(c) for c in configs), self.threads,
            f"pacebench-{configs[0].study_name}"[:64]))
        jobs = _submitted(lambda: self._submit_array(executor, queued))
        for (_, _, handle), job in zip(queued, jobs):
            handle.job_id = str(job.job_id)
        self._register(store_root, configs, [h for _, _, h in queued])
        self.submitted += [h for _, _, h in queued]
        self._asked = -math.inf  # ask squeue afresh

    def _submit_array(self, executor, queued: list) -> list:
        with executor.batch():
            return [executor.submit(SlurmTrial(job, str(log), self.options.nproc_per_node))
                    for job, log, _ in queued]

    def executor(self, store_root: str):
        folder = _slurm_folder(store_root) / R.SLURM_SUBMITIT_DIR
        folder.mkdir(parents=True, exist_ok=True)
        return self.submitit.SlurmExecutor(folder=folder / "%j", max_num_timeout=100)

    def _register(self, store_root: str, configs: list[RunConfig],
                  handles: list[_SlurmJob]) -> None:
        path = _slurm_folder(store_root) / R.SLURM_JOBS_FILE
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        lines = "".join(json.dumps({"trial_key": c.trial_key, "study_name": c.study_name,
                                    "job_id": h.job_id, "submitted_at": now}) + "\n"
                        for c, h in zip(configs, handles))
        with open(path, "a") as f:
            f.write(lines)
            f.flush()
            os.fsync(f.fileno())

    def state(self, job_id: str | None) -> str | None:
        """The job's squeue state (asked for every submitted job at most every POLL_EVERY_S);
        None when squeue no longer lists it."""
        if time.monotonic() - self._asked > POLL_EVERY_S:
            self._states = squeue_states(h.job_id for h in self.submitted if h.job_id)
            self._asked = time.monotonic()
        return self._states.get(job_id) if job_id else None

    def check_store(self, store_root: str) -> None:
        """Run a probe job that reads a token file in the store and answers beside it:
        UserError (one line) when the answer does not come, i.e. the nodes do not see the
        store at this path."""
        folder = _slurm_folder(store_root) / "probe"
        folder.mkdir(parents=True, exist_ok=True)
        token = uuid.uuid4().hex
        path = folder / token
        path.write_text(token)
        executor = self.executor(store_root)
        params = sbatch_parameters(self.options, 0.0, 1, "pacebench-store-probe")
        params.pop("gpus_per_node", None)
        params.pop("array_parallelism", None)
        executor.update_parameters(**params)
        job = _submitted(lambda: executor.submit(_probe, str(path), token))
        deadline = time.monotonic() + PROBE_TIMEOUT_S
        reply = Path(str(path) + ".reply")
        try:
            while squeue_states([str(job.job_id)]).get(str(job.job_id)) in QUEUED_STATES:
                if time.monotonic() > deadline:
                    subprocess.run(["scancel", str(job.job_id)], capture_output=True)
                    raise UserError(f"the store probe job {job.job_id} did not run within "
                                    f"{PROBE_TIMEOUT_S:g} s; or pass --slurm-store-check off")
                time.sleep(0.2)
            for _ in range(10):  # (a shared filesystem may show the answer a moment later)
                if reply.exists():
                    return
                time.sleep(0.5)
            raise UserError(f"store {store_root} is not shared with the Slurm nodes: the probe "
                            f"job {job.job_id} could not answer through it; put the store on "
                            "a filesystem every node mounts at the same path (or pass "
                            "--slurm-store-check off)")
        finally:
            path.unlink(missing_ok=True)
            reply.unlink(missing_ok=True)

    def close(self) -> None:
        pass
