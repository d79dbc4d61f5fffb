"""What launches and studies keep in a store beside its runs (the StudyFiles part of Store).

Claims on trials and the planning lock (flock: a process's end releases them), the plans of a
study's launches, the disk space a launcher reserves before it starts anything, the
early-stopping tuner's documents, study summaries, and where workers' logs and checkpoints go.
Names from users (study names, trial keys) become plain file names first (file_part).
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
import tempfile
import warnings
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

from workbench import records as R
from workbench.store_files import (NO_SPACE_ERRNOS, atomic_write_json, file_part, full_path,
                                   json_safe)

__all__ = ["StudyFiles", "TrialClaim", "SpaceReserve"]


class SpaceReserve:
    """Disk space held by a launcher (Store.reserve_space): an open file with no name, whose
    blocks are freed by release() or by the process's end."""

    def __init__(self, fd: int) -> None:
        self._fd: int | None = fd

    def release(self) -> bool:
        """Free the space; whether there was any to free."""
        if self._fd is None:
            return False
        os.close(self._fd)
        self._fd = None
        return True


class TrialClaim:
    """A held claim on a trial (Store.claim); release() ends it, as does the process's end."""

    def __init__(self, fd: int) -> None:
        self._fd: int | None = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor releases its lock
            self._fd = None


class StudyFiles:
    """Store's methods for what launches and studies keep beside the runs (see the module
    docstring); Store holds `root` and gives `ensure` and `read_file`."""

    root: Path

    def log_path(self, study_name: str, trial_key: str) -> Path:
        """Where a worker running trial `trial_key` of `study_name` writes its output (the
        folder is created)."""
        folder = self.root / R.LOGS_DIR
        folder.mkdir(parents=True, exist_ok=True)
        return folder / f"{file_part(study_name)}-{trial_key}.log"

    def checkpoint_path(self, trial_key: str) -> Path:
        """Where the training state of trial `trial_key` is saved (runners/run/checkpoint.py)."""
        return self.root / R.CHECKPOINTS_DIR / f"{trial_key}.pt"

    # -- claims, plans and the disk reserve of launches -------------------------------
    def claim(self, trial_key: str) -> "TrialClaim | None":
        """Claim trial `trial_key` for this process (see records.CLAIMS_DIR): a TrialClaim to
        release when its attempt has ended, or None when another process holds it now."""
        folder = self.root / R.CLAIMS_DIR
        folder.mkdir(exist_ok=True)
        fd = os.open(folder / f"{file_part(trial_key)}.lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return None
        return TrialClaim(fd)

    @contextlib.contextmanager
    def planning_lock(self) -> Iterator[None]:
        """Hold the store's planning lock (records.PLANNING_LOCK) for the `with` block: launches
        check and record their plans one at a time. Blocks until the lock is free; a process's
        end releases it."""
        self.ensure()
        fd = os.open(self.root / R.PLANNING_LOCK, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing the descriptor releases its lock

    def _plan_path(self, study_name: str) -> Path:
        return self.root / R.PLANS_DIR / f"{file_part(study_name)}.json"

    def planned(self, study_name: str) -> list[dict[str, Any]]:
        """The trial configs (RunConfig.to_dict) launches of study `study_name` have planned
        (records.PLANS_DIR); [] when none, or when the record cannot be read (a warning)."""
        try:
            doc = json.loads(self.read_file(self._plan_path(study_name)))
        except FileNotFoundError:
            return []
        except (OSError, ValueError, RecursionError) as exc:
            warnings.warn(f"the plan of study {study_name!r} cannot be read ({exc}): not "
                          "compared", stacklevel=2)
            return []
        configs = doc.get("configs") if isinstance(doc, dict) else None
        return [c for c in configs if isinstance(c, dict)] if isinstance(configs, list) else []

    def record_plan(self, study_name: str, configs: Iterable[Mapping[str, Any]]) -> None:
        """Add `configs` (RunConfig.to_dict) to study `study_name`'s plan, atomically; call it
        under planning_lock."""
        known = self.planned(study_name)
        texts = {json.dumps(c, sort_keys=True) for c in known}
        new = [dict(c) for c in configs if json.dumps(json_safe(c), sort_keys=True) not in texts]
        if new or not self._plan_path(study_name).exists():
            self._plan_path(study_name).parent.mkdir(exist_ok=True)
            atomic_write_json(self._plan_path(study_name), {"configs": known + new})

    def reserve_space(self, nbytes: int = R.RESERVE_BYTES) -> "SpaceReserve":
        """Hold `nbytes` of the store's disk for this process (SpaceReserve): a launcher takes
        it before it starts anything, so a store with no room fails at once (OSError ENOSPC
        naming the store, nothing written), and releases it when the disk fills up, to record
        how its launch ended."""
        self.ensure()
        fd, path = tempfile.mkstemp(prefix=R.RESERVE_PREFIX, dir=self.root)
        os.unlink(path)  # nothing left behind, whatever happens: the blocks live while fd does
        try:
            written = 0
            while written < nbytes:  # random bytes: a compressing file system stores them all
                written += os.write(fd, os.urandom(min(1 << 16, nbytes - written)))
            os.fsync(fd)
        except OSError as err:
            os.close(fd)
            if err.errno in NO_SPACE_ERRNOS:
                raise OSError(err.errno, err.strerror, str(self.root)) from None
            raise
        return SpaceReserve(fd)

    def no_space_path(self, err: OSError) -> str:
        """What to name for the full disk of `err`: the store, or a file outside it."""
        return full_path(err, self.root)

    # -- study-level documents --------------------------------------------------------------
    def _early_stop_folder(self, study_name: str) -> Path:
        return self.root / R.EARLY_STOP_DIR / file_part(study_name)

    def write_early_stop_doc(self, study_name: str, trial_key: str,
                             doc: Mapping[str, Any]) -> None:
        """Record the early-stopping tuner's state of one trial (see records.EARLY_STOP_DIR)."""
        folder = self._early_stop_folder(study_name)
        folder.mkdir(parents=True, exist_ok=True)
        atomic_write_json(folder / f"{trial_key}.json", doc)

    def has_early_stop_docs(self, study_name: str) -> bool:
        """Whether the early-stopping tuner wrote a document of one of the study's trials."""
        folder = self._early_stop_folder(study_name)
        return folder.is_dir() and next(folder.glob("*.json"), None) is not None

    def early_stop_docs(self, study_name: str) -> list[dict[str, Any]]:
        """The early-stopping tuner's documents of one study's trials; [] when none."""
        folder = self._early_stop_folder(study_name)
        if not folder.is_dir():
            return []
        docs = []
        for path in sorted(folder.glob("*.json")):
            try:
                docs.append(json.loads(self.read_file(path)))
            except (ValueError, OSError):
                continue  # being replaced right now: atomic writes make this rare and harmless
        return docs

    def _summary_path(self, study_name: str) -> Path:
        return self.root / R.STUDIES_DIR / f"{file_part(study_name)}.json"

    def write_study_summary(self, study_name: str, doc: Mapping[str, Any]) -> None:
        """Record a study's summary document (see records.STUDIES_DIR), atomically."""
        path = self._summary_path(study_name)
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_json(path, doc)

    def study_summary(self, study_name: str) -> dict[str, Any] | None:
        """A study's summary document, or None when it has none (or it cannot be read)."""
        try:
            return json.loads(self.read_file(self._summary_path(study_name)))
        except (OSError, ValueError):
            return None

