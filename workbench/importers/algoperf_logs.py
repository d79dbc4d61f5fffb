"""One AlgoPerf trial's log files, found and read safely (workbench/importers/algoperf.py
imports them into a store; research/algoperf.md section 2 describes the layout).

The log tree: `<submission>/study_<k>/<workload>_<jax|pytorch>[-timestamp]/trial_<i>/` holding
EVAL_FILE, META_FILE and HPARAMS_FILE (TrialLog, find_submissions, trial_logs). The reads: only
regular files are opened (_read_regular); eval CSVs become our eval rows (read_evals, and
read_evals_many, which parses many logs of one header as one CSV), with steps and times finite,
>= 0 and non-decreasing; meta and hparams JSON typed and nested at most MAX_DEPTH levels. A file
that fails a check raises _BadFile (a UserError) naming it and what was wrong.
"""
from __future__ import annotations

import json
import math
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

from workbench import records as R
from workbench.errors import UserError
from workbench.store_files import file_kind
from workbench.validate import eval_rows_problem

__all__ = ["EVAL_FILE", "META_FILE", "HPARAMS_FILE", "MAX_DEPTH", "TrialLog", "find_submissions",
           "trial_logs", "read_evals", "read_evals_many"]

EVAL_FILE = "eval_measurements.csv"
META_FILE = "meta_data_0.json"
HPARAMS_FILE = "hparams.json"
MAX_DEPTH = 8  # how deep a meta or hparams file may nest JSON objects and lists

_STUDY = re.compile(r"study_(\d+)")
_TRIAL = re.compile(r"trial_(\d+)")
_EXPERIMENT = re.compile(r"(?P<workload>.+)_(?P<framework>jax|pytorch)"
                         r"(?P<stamp>-\d{4}-\d{2}-\d{2}-\d{2}-\d{2}-\d{2})?")
# AlgoPerf eval columns -> ours (records.EVAL_COLUMNS); `<split>/<metric>` columns keep their name.
_COLUMNS = {"global_step": "step", "score": "train_seconds",
            "accumulated_eval_time": "eval_seconds", "total_duration": "wall_seconds"}
_REQUIRED = ("global_step", "score")


@dataclass(frozen=True)
class TrialLog:
    """One trial folder of an AlgoPerf log tree."""

    submission: str   # the submission folder's name: our algorithm
    study: int
    workload: str     # the experiment folder's name without framework and timestamp
    framework: str    # "jax" or "pytorch"
    experiment: str   # the experiment folder's name
    trial: int        # trial_<i>'s i (renumbered past the others if merged folders repeat it)
    path: Path

    def run_id(self, study_name: str) -> str:
        """The run's id in the store: the same trial always gets the same id."""
        return (f"{study_name}--{_folder_name(self.submission)}--study_{self.study}--"
                f"{self.experiment}--{self.path.name}")


def _folder_name(submission: str) -> str:
    """A submission's name as it appears in run ids: runs of other characters become '_'."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", submission)


def find_submissions(logdir: str | os.PathLike) -> list[Path]:
    """Submission folders (those holding study_<k> folders) at or below `logdir`."""
    logdir = Path(logdir)
    if not logdir.is_dir():
        raise FileNotFoundError(f"no AlgoPerf log folder {logdir}: pass the folder holding "
                                "<submission>/study_<k>/<workload>_<framework>/trial_<i>/")
    found = []
    for root, dirs, _ in os.walk(logdir):
        if any(_STUDY.fullmatch(d) for d in dirs):
            found.append(Path(root))
            dirs[:] = []
        else:
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
    return sorted(found)


def _subdirs(path: Path, pattern: re.Pattern) -> list[tuple[re.Match, Path]]:
    """(match, folder) of the sub-folders of `path` whose names match `pattern` in full."""
    out = []
    for child in path.iterdir():
        match = pattern.fullmatch(child.name)
        if match and child.is_dir():
            out.append((match, child))
    return out


def trial_logs(submission: str | os.PathLike) -> Iterator[TrialLog]:
    """The trials of one submission folder, study by study, merged experiment folders included."""
    submission = Path(submission)
    studies = sorted(_subdirs(submission, _STUDY), key=lambda mp: int(mp[0].group(1)))
    for study_match, study_dir in studies:
        groups: dict[str, list[tuple[re.Match, Path]]] = {}
        for match, exp in sorted(_subdirs(study_dir, _EXPERIMENT), key=lambda mp: mp[1].name):
            groups.setdefault(match.group("workload"), []).append((match, exp))
        for workload, experiments in sorted(groups.items()):
            used: set[int] = set()
            for match, exp in experiments:  # the un-stamped folder first, then by timestamp
                trials = sorted(_subdirs(exp, _TRIAL), key=lambda mp: int(mp[0].group(1)))
                for trial_match, trial_dir in trials:
                    number = int(trial_match.group(1))
                    number = number if number not in used else max(used) + 1
                    used.add(number)
                    yield TrialLog(submission.name, int(study_match.group(1)), workload,
                                   match.group("framework"), exp.name, number, trial_dir)


# -- one trial's files -----------------------------------------------------------------------
class _BadFile(UserError):
    """A file of a trial that cannot be read; the message names the file and the reason."""


def _not_regular(path, mode: int) -> str | None:
    """'<path>: not a regular file (a FIFO)' when `mode` is no regular file's, else None."""
    if stat.S_ISREG(mode):
        return None
    return f"{path}: not a regular file ({file_kind(mode)})"


def _read_regular(path: str | os.PathLike) -> bytes:
    """The bytes of the regular file at `path` (links followed). Anything else (a FIFO, a
    socket, a device, a folder) is refused before it is opened: opening a FIFO blocks until a
    writer comes, a device may do anything. It is opened without blocking and checked again,
    in case another file was swapped in between. FileNotFoundError when there is no file;
    _BadFile naming the file otherwise."""
    try:
        problem = _not_regular(path, os.stat(path).st_mode)
        if problem:
            raise _BadFile(problem)
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except (FileNotFoundError, _BadFile):
        raise
    except OSError as e:  # unreadable, a link loop, ...
        raise _BadFile(f"{path}: cannot be read ({_short(e)})") from None
    try:
        problem = _not_regular(path, os.fstat(fd).st_mode)
        if problem:
            raise _BadFile(problem)
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError as e:
        raise _BadFile(f"{path}: cannot be read ({_short(e)})") from None
    finally:
        os.close(fd)


def read_evals(path: str | os.PathLike) -> "pa.Table":  # noqa: F821
    """An eval_measurements.csv as eval rows: records.EVAL_COLUMNS (less run_id) + metrics.

    eval_index is the row order, step = global_step, train_seconds = score, eval_seconds =
    accumulated_eval_time, wall_seconds = total_duration; `<split>/<metric>` columns are kept
    as floats (empty cells are null); examples is unknown (null). Raises ValueError naming the
    file when it is not a readable AlgoPerf eval log.
    """
    import pyarrow as pa
    import pyarrow.csv as pcsv

    try:
        data = _read_regular(path)
    except FileNotFoundError:
        raise _BadFile(f"{path}: missing") from None
    try:
        raw = pcsv.read_csv(pa.BufferReader(data),
                            read_options=pcsv.ReadOptions(use_threads=False))
    except (pa.ArrowInvalid, OSError) as e:
        raise _BadFile(f"{path}: not a readable CSV ({_short(e)})") from None
    return _eval_rows(raw, path)


def read_evals_many(paths: Iterable[Path]) -> dict[Path, "pa.Table | ValueError"]:  # noqa: F821
    """read_evals of each file of `paths`: its rows, or the error read_evals raises (a
    ValueError naming the file). The same tables and errors, at a fraction of the cost: logs
    with the same header line are parsed as one CSV (one Arrow parse and one conversion for a
    batch's logs of a workload, instead of one per log, which cost 1 to 2 ms each) and checked
    together; a group where any log fails is read again log by log, and so is a log that could
    parse otherwise in a group (_groupable). A file that is not a regular file is never opened
    (_read_regular), and read_evals names the problem."""
    import pyarrow as pa
    import pyarrow.csv as pcsv

    out: dict[Path, Any] = {}
    groups: dict[bytes, list[tuple[Path, bytes]]] = {}
    for path in paths:
        try:
            data = _read_regular(path)
        except (OSError, _BadFile):  # not there, or no regular file: read_evals names it
            data = None
        header, _, body = (data or b"").partition(b"\n")
        if data is not None and _groupable(data, header):
            groups.setdefault(header, []).append((path, body))
        else:
            out[path] = None
    for header, logs in groups.items():
        bodies = [body if body.endswith(b"\n") or not body else body + b"\n" for _, body in logs]
        counts = [sum(1 for line in body.split(b"\n") if line) for body in bodies]  # Arrow skips
        try:  # empty lines
            raw = pcsv.read_csv(pa.BufferReader(b"\n".join([header, b"".join(bodies)])),
                                read_options=pcsv.ReadOptions(use_threads=False))
            rows = _eval_rows(raw, "", counts) if raw.num_rows == sum(counts) else None
        except (pa.ArrowInvalid, OSError, _BadFile):
            rows = None
        starts = [sum(counts[:i]) for i in range(len(counts))]
        for (path, _), start, count in zip(logs, starts, counts):
            out[path] = None if rows is None else rows.slice(start, count)
    for path, rows in out.items():
        if rows is None:
            try:
                out[path] = read_evals(path)
            except _BadFile as e:
                out[path] = e
    return out


# Digits alike and line breaks like commas: _long_integer finds a long integer cell by memchr.
_CELLS = bytes.maketrans(b"0123456789\n", b"0000000000,")


def _long_integer(data: bytes) -> bool:
    """Whether a cell of the CSV text `data` is an integer of 16 digits or more (a `-`, then
    digits only). Arrow reads a column of them as int64 in one log, whose cast to float64 fails
    when it is not exact, but as float64 beside a decimal in a group of logs, so a log that has
    one is read alone. (A regular expression took 0.2 ms a log, 0.7 s of an import of v0.5.)"""
    text = b"," + data.translate(_CELLS) + b","
    for start in (b",0000000000000000", b",-0000000000000000"):
        at = text.find(start)
        while at != -1:
            end = text.index(b",", at + 1)
            if not text[at + 1:end].lstrip(b"-").strip(b"0"):  # digits only
                return True
            at = text.find(start, end)
    return False


def _groupable(data: bytes, header: bytes) -> bool:
    """Whether the eval log whose bytes are `data` (first line `header`) parses in a group of
    logs with the same header line exactly as it parses alone: no quotes (a quoted field may
    hold a line break), no carriage return, no byte-order mark, no header name twice, no long
    integer (_long_integer). Arrow infers a column's type from all the group's values, but the
    casts that follow give every value the same result as alone (an int64 column of one log
    and the float64 one of the group hold the same numbers), and a group that fails anywhere is
    read again log by log."""
    names = header.split(b",")
    return not (b'"' in data or b"\r" in data or data.startswith(b"\xef\xbb\xbf")
                or len(set(names)) < len(names) or _long_integer(data))


def _eval_rows(raw: "pa.Table", path, counts: list[int] | None = None) -> "pa.Table":  # noqa: F821
    """read_evals's rows from the CSV table `raw` of eval log `path`, checked (_BadFile
    otherwise); `counts`: `raw` holds several logs one after another, of so many rows each
    (read_evals_many), whose eval indices and clocks start again at each log."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    missing = [c for c in _REQUIRED if c not in raw.column_names]
    if missing:
        raise _BadFile(f"{path}: lacks columns {missing}; an AlgoPerf eval log has "
                       f"{', '.join(_COLUMNS)} and <split>/<metric> columns")
    try:
        R.check_row_columns(raw.column_names)
    except ValueError as e:
        raise _BadFile(f"{path}: {e}") from None
    twice = sorted({c for c in raw.column_names if raw.column_names.count(c) > 1})
    if twice:
        raise _BadFile(f"{path}: columns {twice} appear more than once; each column of an "
                       "eval log has its own name")
    n, counts = raw.num_rows, [raw.num_rows] if counts is None else counts
    # the row's place in its log (np.arange: pa.array(range(n)) took 100x as long)
    index = np.arange(n, dtype=np.int64) - np.repeat(np.cumsum([0] + counts[:-1]), counts)
    columns = {"eval_index": pa.array(index)}
    for theirs, ours in (("global_step", "step"), (None, "examples"), ("score", "train_seconds"),
                         ("accumulated_eval_time", "eval_seconds"),
                         ("total_duration", "wall_seconds")):
        kind = pa.int64() if ours in ("step", "examples") else pa.float64()
        columns[ours] = _column(raw, theirs, kind, path) if theirs in raw.column_names \
            else pa.nulls(n, kind)
    for name in sorted(c for c in raw.column_names if R.split_of(c)):
        values = _column(raw, name, pa.float64(), path)  # inf and -inf read as NaN: no metric
        if np.isinf(values.to_numpy(zero_copy_only=False)).any():  # value meets a target
            values = pc.if_else(pc.is_inf(values), float("nan"), values)
        columns[name] = values
    _check_clocks(columns, path, np.repeat(np.arange(len(counts)), counts))
    return pa.table(columns)


def _check_clocks(columns: Mapping[str, "pa.Array"], path,  # noqa: F821
                  log: "np.ndarray") -> None:  # noqa: F821
    """Steps and times of an eval log must be given on every row (the training time `score` and
    the step), and the rows must pass every door's rules (workbench.validate: clocks finite,
    >= 0 and non-decreasing, wall >= training time, metrics in range): a log that breaks them
    would move every other submission's score, so its trial is refused.
    `log`: each row's log (0 on every row of a single log), along which clocks never fall."""
    import numpy as np

    theirs = {"step": "global_step", "train_seconds": "score",
              "eval_seconds": "accumulated_eval_time", "wall_seconds": "total_duration"}
    for ours in ("step", "train_seconds"):
        given = ~np.isnan(columns[ours].to_numpy(zero_copy_only=False).astype(float))
        if not given.all():
            raise _BadFile(f"{path}: column {theirs[ours]!r} has empty cells (row "
                           f"{int(np.argmin(given)) + 1}); every eval needs a step and a time")
    problem = eval_rows_problem(columns, log, theirs)  # every door's rules (workbench/validate)
    if problem:
        raise _BadFile(f"{path}: {problem}")


def _column(raw: "pa.Table", name: str, kind: "pa.DataType", path) -> "pa.Array":  # noqa: F821
    import pyarrow as pa

    try:
        return raw[name].cast(kind)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise _BadFile(f"{path}: column {name!r} is not numeric ({_short(e)})") from None


def _short(error: Exception) -> str:
    """An error's first line, cut to 160 characters (a parser may quote a whole line of a file)."""
    text = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    return text if len(text) <= 160 else text[:157] + "..."


def _read_json(path: Path, required: bool) -> dict[str, Any] | None:
    """A JSON object file; None when it is absent and not required."""
    try:
        doc = json.loads(_read_regular(path))
    except FileNotFoundError:
        if required:
            raise _BadFile(f"{path}: missing") from None
        return None
    except (ValueError, RecursionError) as e:  # JSON, Unicode, or nested past Python's stack
        if isinstance(e, _BadFile):
            raise
        raise _BadFile(f"{path}: not valid JSON ({_short(e)})") from None
    if not isinstance(doc, dict):
        raise _BadFile(f"{path}: expected a JSON object, got {type(doc).__name__}")
    if _depth(doc) > MAX_DEPTH:
        raise _BadFile(f"{path}: nested deeper than {MAX_DEPTH} levels; hyperparameters and "
                       "metadata are flat objects of numbers, strings and short lists")
    return doc


def _depth(value: Any) -> int:
    """How deep JSON containers nest in `value` (0 for a scalar), without recursion."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            deepest = max(deepest, depth + 1)
            if deepest > MAX_DEPTH:
                return deepest
            children = item.values() if isinstance(item, dict) else item
            stack.extend((v, depth + 1) for v in children)
    return deepest


# Keys of meta_data_0.json that the import reads, and what each must be when present.
_META_NUMBERS = ("workload.max_allowed_runtime_sec", "workload.eval_period_time_sec",
                 "workload.test_target_value", "workload.step_hint")
_META_TEXTS = ("gpu_model_name", "cpu_model_name")


def _check_meta(meta: Mapping[str, Any], path: Path) -> None:
    """A meta file's keys that the import reads have the types AlgoPerf writes, else _BadFile."""
    for key in _META_NUMBERS:
        value = meta.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) \
                or not math.isfinite(value) or value < 0:
            raise _BadFile(f"{path}: {key} is {json.dumps(value)[:40]}; expected a finite "
                           "number >= 0")
    if meta.get("workload.max_allowed_runtime_sec") == 0:
        raise _BadFile(f"{path}: workload.max_allowed_runtime_sec is 0; a budget is > 0 seconds")
    for key in ("rng_seed", "gpu_count"):
        value = meta.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise _BadFile(f"{path}: {key} is {json.dumps(value)[:40]}; expected an integer")
    for key in _META_TEXTS:
        value = meta.get(key)
        if value is not None and not isinstance(value, str):
            raise _BadFile(f"{path}: {key} is {json.dumps(value)[:40]}; expected a string")


def _hardware(meta: Mapping[str, Any]) -> str | None:
    model, count = meta.get("gpu_model_name"), meta.get("gpu_count")
    if not model:
        return meta.get("cpu_model_name")
    return f"{count}x {model}" if count else str(model)
