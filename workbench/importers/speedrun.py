"""Speedrun logs -> eval rows (`pacebench import-table --kind speedrun-logs`).

modded-nanogpt-style boards keep one text log per run (seed), whose eval lines read

    step:3250/3400 val_loss:3.2787 train_time:612345ms step_avg:188.4ms

(`train_time` in ms or s, optional). Every `*.txt` under the folder with such lines is one run
and one study of one trial (the self-tuning ruleset: n seeds are n studies); its algorithm is
the name of the file's folder unless `--algorithm` names it; its workload is the import's name;
`val_loss` is stored as `validation/loss`, train_time as train seconds, and T (the planned
steps) as the run's step budget. Other lines are ignored. Seeds are numbered per algorithm in
file-name order. A bad eval line is one LogError naming file and line; nothing is written.
This module reads the logs into eval rows (`log_rows`); importers/tables.py checks and writes
them as it does an eval table's.
"""
from __future__ import annotations

import math
import os
import re
import stat
from pathlib import Path

import pandas as pd

from workbench.errors import UserError
from workbench.spec import NAME

__all__ = ["EVAL_LINE", "LogError", "read_log", "log_rows"]

EVAL_LINE = re.compile(r"step:(\d+)/(\d+)\s+val_loss:(\S+)(?:\s+train_time:(\S+?)(ms|s)\b)?")
MAX_BYTES = 64 << 20  # of one log


class LogError(UserError):
    """A log that cannot be imported: one line naming the file (and line) and what is valid."""


def _size(path: Path) -> int:
    """The size of `path`, a regular file (a FIFO or device is never opened)."""
    try:
        info = os.stat(path)
    except OSError as e:
        raise LogError(f"{path}: cannot be read ({e.strerror})") from None
    if not stat.S_ISREG(info.st_mode):
        raise LogError(f"{path}: not a regular file; a speedrun log is a text file")
    return info.st_size


def read_log(path: Path) -> list[dict]:
    """The eval lines of one log: [{"step", "steps", "loss", "train_seconds"}], checked (loss
    finite and >= 0, steps and times non-decreasing, one planned T)."""
    if _size(path) > MAX_BYTES:
        raise LogError(f"{path}: larger than {MAX_BYTES >> 20} MiB; a speedrun log is smaller")
    out = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for number, line in enumerate(f, start=1):
            match = EVAL_LINE.search(line)
            if match:
                out.append(_eval(path, number, match, out[-1] if out else None))
    return out


def _eval(path: Path, number: int, match: re.Match, before: dict | None) -> dict:
    step, steps, loss, time, unit = match.groups()
    where = f"{path}: line {number}"
    try:
        value = float(loss)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise LogError(f"{where}: val_loss {loss!r} is not valid; valid is a finite loss >= 0")
    seconds = None
    if time is not None:
        try:
            seconds = float(time) / (1000 if unit == "ms" else 1)
        except ValueError:
            seconds = math.nan
        if not math.isfinite(seconds) or seconds < 0:
            raise LogError(f"{where}: train_time {time + unit!r} is not valid; valid is a "
                             "finite time >= 0 in ms or s")
    row = {"step": int(step), "steps": int(steps), "loss": value, "train_seconds": seconds}
    if before is not None:
        if row["step"] < before["step"]:
            raise LogError(f"{where}: step {step} after step {before['step']}; valid are "
                             "steps non-decreasing along a log")
        if row["steps"] != before["steps"]:
            raise LogError(f"{where}: planned steps {steps} after {before['steps']}; valid is "
                             "one planned T per log")
        if (seconds is None) != (before["train_seconds"] is None) or \
                (seconds is not None and seconds < before["train_seconds"]):
            raise LogError(f"{where}: train_time {time}{unit or ''} is not valid; valid is a "
                             "time on every eval line or none, non-decreasing")
    return row


def _logs(folder: Path) -> list[Path]:
    """The regular *.txt files under `folder` (links out of it are not followed), sorted."""
    if not folder.is_dir():
        raise LogError(f"{folder}: not a folder; --kind speedrun-logs reads a folder of *.txt "
                         "logs")
    root = folder.resolve()
    out = []
    for dirpath, _, files in os.walk(folder):
        for file in files:
            path = Path(dirpath) / file
            if path.suffix == ".txt" and path.resolve().is_relative_to(root):
                out.append(path)
    return sorted(out)


def log_rows(folder: str | os.PathLike, name: str,
             algorithm: str | None = None) -> tuple[pd.DataFrame, dict[str, int]]:
    """(eval rows of every log with eval lines under `folder`, in the columns of an eval
    table: algorithm, workload, run, seed, step, validation/loss[, train_seconds];
    {run: its planned steps T}) (see the module doc)."""
    folder = Path(folder)
    rows, budgets, seeds = [], {}, {}
    for path in _logs(folder):
        evals = read_log(path)
        if not evals:
            continue
        owner = algorithm or path.parent.name
        if not NAME.fullmatch(owner):
            raise LogError(f"{path}: its folder name {owner[:60]!r} is not a plain algorithm "
                           "name (letters, digits, '.', '_', '-'); give --algorithm")
        run = str(path.relative_to(folder))
        seeds[owner] = seed = seeds.get(owner, -1) + 1
        budgets[run] = evals[0]["steps"]
        rows += [{"algorithm": owner, "workload": name, "run": run, "seed": seed,
                  "step": e["step"], "validation/loss": e["loss"],
                  "train_seconds": e["train_seconds"]} for e in evals]
    if not rows:
        raise LogError(f"{folder}: no *.txt log with 'step:N/T val_loss:X' lines")
    frame = pd.DataFrame(rows)
    if frame["train_seconds"].isna().all():
        frame = frame.drop(columns="train_seconds")
    return frame, budgets
