"""AlgoPerf log trees -> a Pacebench store (research/algoperf.md sections 2, 5.2, 5.4 and 8).

AlgoPerf's scoring runs write one folder per trial::

    <submission>/study_<k>/<workload>_<jax|pytorch>[-YYYY-MM-DD-HH-MM-SS]/trial_<i>/
        eval_measurements.csv   one row per eval; `score` is the accumulated submission time
        meta_data_0.json        the workload's properties (targets, budget, eval period, step
                                hint), the hardware, the trial's rng_seed
        hparams.json            the trial's hyperparameters (external tuning only)

Each trial with an eval file becomes one sealed run of the store (source "algoperf"), under a
run id made from its path, so importing twice adds nothing. Experiment folders that differ only
by a timestamp suffix are one workload; folders without `trial_*` folders, `trial_*` folders
directly under a study, and workloads absent from the targets file are ignored, as the official
scorer does.

Foreign logs are checked before anything is written. A trial whose files cannot be read or fail
a check is reported (file and reason, one line) and left out; the rest is imported. The checks:
metric columns lower case and distinct in more than case (records.check_row_columns); steps and
times finite, >= 0 and non-decreasing along the log; meta files typed (_check_meta); JSON nested
at most MAX_DEPTH levels; no file read through a link out of the log folder; only regular files
opened (a FIFO, socket or device is a problem, never opened: _read_regular); among submission
folders whose names map to the same run ids, the one whose name needs no cleaning imported and
the others refused, and a name that cleans to one the store holds refused (_clashes, _existing).
`inf` metric values read as NaN.
Budgets are recomputed from every imported trial of the store at the end of each import
(_budgets), so importing again repairs an import that was killed.

The targets file (e.g. workload_targets_v05.json) gives each workload's target metric and
validation target, and the benchmark version's scoring rules, which are recorded in the store so
that `pacebench score` reproduces the official leaderboard. Files written since v0.6
(scoring/workload_targets.json: nine scored workloads with finewebedu_lm, no held-out ones, a
target_metric_goal per workload) read the same way; a scored workload that no imported log has
is reported and left out of the scored set (the v0.6 leaderboard's logs have eight workloads),
rather than counted as a miss for every submission. Self-tuning trees (one trial per study, no
hparams.json) import under the "self" ruleset, with their version's budget factor.
"""
from __future__ import annotations

import json
import math
import os
import re
import stat
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Mapping

from workbench import records as R
from workbench.errors import UserError
from workbench.importers.workers import WorkerPool
from workbench.store import SealedBatch, Store, open_store
from workbench.validate import eval_rows_problem

if TYPE_CHECKING:
    from workbench.scoring import ScoringConfig

__all__ = ["import_algoperf", "ImportReport", "AlgoPerfTargets", "load_targets", "TrialLog",
           "find_submissions", "trial_logs", "read_evals", "metric_direction"]

EVAL_FILE = "eval_measurements.csv"
META_FILE = "meta_data_0.json"
HPARAMS_FILE = "hparams.json"
WORKERS = 8  # worker processes at most (and one per core at most)
BATCH = 128  # trials a worker reads and makes durable together (store.SealedBatch)
MAX_DEPTH = 8  # how deep a meta or hparams file may nest JSON objects and lists

_STUDY = re.compile(r"study_(\d+)")
_TRIAL = re.compile(r"trial_(\d+)")
_EXPERIMENT = re.compile(r"(?P<workload>.+)_(?P<framework>jax|pytorch)"
                         r"(?P<stamp>-\d{4}-\d{2}-\d{2}-\d{2}-\d{2}-\d{2})?")
# Metric names by direction, as the official scorer decides it.
_MINIMIZE = frozenset({"loss", "ce_loss", "error_rate", "ctc_loss", "wer", "l1_loss", "ppl"})
_MAXIMIZE = frozenset({"mean_average_precision", "ssim", "accuracy", "bleu"})
_GOALS = {"minimize": "min", "maximize": "max"}  # target_metric_goal, in files since v0.6
# AlgoPerf eval columns -> ours (records.EVAL_COLUMNS); `<split>/<metric>` columns keep their name.
_COLUMNS = {"global_step": "step", "score": "train_seconds",
            "accumulated_eval_time": "eval_seconds", "total_duration": "wall_seconds"}
_REQUIRED = ("global_step", "score")


def metric_direction(metric: str) -> str:
    """"min" or "max" for an AlgoPerf target metric name."""
    if metric in _MINIMIZE:
        return "min"
    if metric in _MAXIMIZE:
        return "max"
    raise ValueError(f"unknown AlgoPerf target metric {metric!r}: known are "
                     f"{sorted(_MINIMIZE | _MAXIMIZE)}")


# -- the targets file ------------------------------------------------------------------------
@dataclass(frozen=True)
class AlgoPerfTargets:
    """A benchmark version's targets file: workloads' targets and the scored workload lists."""

    version: str                              # e.g. "0.5"
    base_workloads: tuple[str, ...]
    held_out_workloads: tuple[str, ...]
    workloads: Mapping[str, Mapping[str, Any]]  # name -> target_metric_name, ..._value, step_hint

    def base_of(self, workload: str) -> tuple[str, str]:
        """(base workload, variant): the base is the longest base workload prefixing the name."""
        if workload in self.base_workloads:
            return workload, "base"
        bases = [b for b in self.base_workloads if workload.startswith(b + "_")]
        if not bases:
            return workload, "base"  # not a variant of a scored workload (e.g. mnist)
        base = max(bases, key=len)
        return base, workload[len(base) + 1:]

    def direction(self, workload: str) -> str:
        """"min" or "max": the file's target_metric_goal where it has one (the files written
        since v0.6 do), else decided by the metric's name as the official scorer does."""
        entry = self.workloads[workload]
        goal = entry.get("target_metric_goal")
        return _GOALS[goal] if goal is not None else metric_direction(entry["target_metric_name"])

    def scoring_config(self, budgets: Mapping[str, float],
                       logged: Iterable[str] | None = None) -> ScoringConfig:
        """The version's scoring rules; the held-out rule applies before v0.6. `logged`: the
        workloads that have logs; a base workload without any is not scored (with it, every
        submission would count a miss there: the v0.6 file lists finewebedu_lm, which the v0.6
        leaderboard's logs do not have), nor are held-out variants of it."""
        from workbench.scoring import ScoringConfig  # xarray: not loaded by import workers

        old = tuple(int(x) for x in re.findall(r"\d+", self.version)[:2]) < (0, 6)
        logged = None if logged is None else set(logged)
        bases = tuple(w for w in self.base_workloads if logged is None or w in logged)
        held_out = {w: self.base_of(w)[0] for w in self.held_out_workloads}
        held_out = {w: b for w, b in held_out.items() if b in bases}
        return ScoringConfig(
            base_workloads=bases, held_out=held_out,
            apply_held_out=old and bool(held_out),
            budgets={w: float(b) for w, b in sorted(budgets.items())},
            self_tuning_budget_factor=3.0 if old else 1.5, benchmark_version=self.version)


def load_targets(path: str | os.PathLike) -> AlgoPerfTargets:
    """Read an AlgoPerf targets file (scoring/workload_targets*.json) and check its shape."""
    path = Path(path)
    try:
        doc = json.loads(_read_regular(path))
    except FileNotFoundError:
        raise FileNotFoundError(f"no targets file {path}: pass AlgoPerf's "
                                "scoring/workload_targets_v05.json (or another version's)") from None
    except _BadFile as e:
        raise UserError(f"targets file {e}; pass AlgoPerf's scoring/workload_targets_v05.json "
                        "(or another version's)") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise UserError(f"targets file {path} is not valid JSON: {e}") from None
    need = ("benchmark_version", "base_workloads", "held_out_workloads", "workloads")
    missing = [k for k in need if k not in doc] if isinstance(doc, dict) else list(need)
    if missing == ["held_out_workloads"]:  # a version without held-out workloads may omit it
        doc["held_out_workloads"], missing = [], []
    if missing:
        raise UserError(f"targets file {path} lacks keys {missing}: an AlgoPerf targets file has "
                        f"{list(need)}")
    targets = AlgoPerfTargets(str(doc["benchmark_version"]), tuple(doc["base_workloads"]),
                              tuple(doc["held_out_workloads"]), doc["workloads"])
    for name in targets.base_workloads + targets.held_out_workloads:
        entry = targets.workloads.get(name)
        if not entry or "target_metric_name" not in entry or "validation_target_value" not in entry:
            raise UserError(f"targets file {path}: workload {name!r} needs target_metric_name "
                            "and validation_target_value under 'workloads'")
        if entry.get("target_metric_goal", "minimize") not in _GOALS:
            raise UserError(f"targets file {path}: workload {name!r} has target_metric_goal "
                            f"{entry['target_metric_goal']!r}: valid are {', '.join(_GOALS)}")
        targets.direction(name)
    return targets


# -- the log tree ----------------------------------------------------------------------------
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
class _BadFile(ValueError):
    """A file of a trial that cannot be read; the message names the file and the reason."""


_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))


def _not_regular(path, mode: int) -> str | None:
    """'<path>: not a regular file (a FIFO)' when `mode` is no regular file's, else None."""
    if stat.S_ISREG(mode):
        return None
    kind = next((words for test, words in _KINDS if test(mode)), "of an unknown kind")
    return f"{path}: not a regular file ({kind})"


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


def _document(log: TrialLog, targets: AlgoPerfTargets, study_name: str, ruleset: str,
              meta: Mapping[str, Any], hparams: Mapping[str, Any], evals: "pa.Table",  # noqa: F821
              run_id: str) -> dict[str, Any]:
    """The run document of one imported trial (records.RUN_COLUMNS plus AlgoPerf details)."""
    import pyarrow.compute as pc

    entry = targets.workloads[log.workload]
    metric = entry["target_metric_name"]
    base, variant = targets.base_of(log.workload)

    def last(column: str) -> Any:
        return pc.max(evals[column]).as_py() if evals.num_rows else None

    return {
        "run_id": run_id, "trial_key": run_id, "attempt": 1, "study_name": study_name,
        "workload": log.workload, "base_workload": base, "variant": variant,
        "algorithm": log.submission, "ruleset": ruleset, "study": log.study, "trial": log.trial,
        "seed": 0, "rng_seed": meta.get("rng_seed"), "hparams": dict(hparams),
        "batch_size": None, "status": "complete", "stop_reason": "imported from AlgoPerf logs",
        "hardware": _hardware(meta), "source": "algoperf", "target_metric": metric,
        "target_direction": targets.direction(log.workload),
        "target_validation": float(entry["validation_target_value"]),
        "target_test": meta.get("workload.test_target_value"),
        "budget_seconds": meta.get("workload.max_allowed_runtime_sec"), "budget_steps": None,
        "steps": last("step"), "train_seconds": last("train_seconds"),
        "wall_seconds": last("wall_seconds"), "started_at": None, "ended_at": None, "error": None,
        "step_hint": entry.get("step_hint", meta.get("workload.step_hint")),
        "eval_period_seconds": meta.get("workload.eval_period_time_sec"),
        "framework": log.framework,
        "algoperf": {"benchmark_version": targets.version, "experiment": log.experiment,
                     "trial_dir": log.path.name, "path": str(log.path)},
    }


# -- the import ------------------------------------------------------------------------------
@dataclass
class ImportReport:
    """What an import did: counts, and every file that could not be read."""

    imported: int = 0            # runs added to the store
    existing: int = 0            # trials already in the store (left untouched)
    without_evals: int = 0       # trial folders without eval_measurements.csv (nothing to import)
    ignored: list[str] = field(default_factory=list)   # what the official scorer ignores, and why
    without_logs: list[str] = field(default_factory=list)  # scored workloads no log has: not scored
    problems: list[str] = field(default_factory=list)  # files that could not be read: not imported
    submissions: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def summary(self) -> str:
        """One line: what was imported, skipped and wrong."""
        return (f"imported {self.imported} runs from {len(self.submissions)} submissions in "
                f"{self.seconds:.1f} s ({self.existing} already in the store, "
                f"{self.without_evals} trial folders without {EVAL_FILE}, "
                f"{len(self.ignored)} folders ignored, {len(self.problems)} problems)")

    def unscored(self) -> str | None:
        """One line on the targets file's scored workloads that no log has, or None."""
        if not self.without_logs:
            return None
        return (f"not scored: {', '.join(self.without_logs)} (scored workloads of the targets "
                "file that no log has; counting them would give every submission a miss there)")


def _ruleset_of(submission: Path, given: str | None) -> str | None:
    """"external" / "self" from `given`, else from an external_tuning / self_tuning folder."""
    if given is not None:
        return given
    parts = submission.resolve().parts
    if "self_tuning" in parts:
        return "self"
    if "external_tuning" in parts:
        return "external"
    return None  # decided per trial: hparams.json exists only for external tuning


def _inside(path: Path, root: Path) -> Path:
    """`path`, which must not lead out of the log tree `root` (resolved) through a link."""
    try:
        if path.resolve().is_relative_to(root):
            return path
    except (OSError, RuntimeError):  # a link loop
        pass
    raise _BadFile(f"{path}: a link out of the log tree {root}; links out of it are not followed")


def _import_trial(batch: SealedBatch, log: TrialLog, targets: AlgoPerfTargets,
                  ruleset: str | None, root: Path,
                  read: Mapping[Path, Any] | None = None) -> tuple[str, str | None]:
    """Read and check one trial and add it to `batch`: ("staged", its run id) (the batch's
    publish imports it), ("existing", run id) or ("without_evals", None); _BadFile on errors.
    `read`: what read_evals_many gave for eval files read ahead (the others are read here).

    Nothing outside the log tree `root` is read. A run of the same id already in the store must
    be this submission's (the same folder name), else the trial is refused.
    """
    store = batch.store
    eval_file = _inside(log.path / EVAL_FILE, root)
    if not os.path.exists(eval_file):  # (a link to nothing, too)
        return "without_evals", None
    hparams = _read_json(_inside(log.path / HPARAMS_FILE, root), required=False)
    ruleset = ruleset or ("external" if hparams is not None else "self")
    study_name = f"algoperf-v{targets.version}-{ruleset}"
    run_id = log.run_id(study_name)
    if store.run_path(run_id).exists():
        return _existing(store, run_id, log), run_id
    evals = read[eval_file] if read and eval_file in read else read_evals(eval_file)
    if isinstance(evals, Exception):
        raise evals
    meta = _read_json(_inside(log.path / META_FILE, root), required=False) or {}
    _check_meta(meta, log.path / META_FILE)
    doc = _document(log, targets, study_name, ruleset, meta, hparams or {}, evals, run_id)
    if batch.add(doc, evals, run_id):
        return "staged", run_id
    return _existing(store, run_id, log), run_id


def _existing(store: Store, run_id: str, log: TrialLog) -> str:
    """"existing" when run `run_id` in the store is this trial's; _BadFile when another
    submission's name maps to the same run id."""
    try:
        algorithm = store.run_doc(run_id).get("algorithm")
    except (KeyError, ValueError, OSError):
        algorithm = None  # unreadable: the store's readers report it; nothing is overwritten
    if algorithm is not None and algorithm != log.submission:
        raise _BadFile(f"{log.path}: submission {log.submission!r} maps to run id {run_id!r}, "
                       f"which the store holds for submission {algorithm!r}; rename one of "
                       "the two submission folders")
    return "existing"


def _clashes(submissions: list[Path], store: Store, version: str) -> dict[Path, str]:
    """Submission folders not to import, each with its problem: among folders whose names map
    to one run-id prefix (e.g. 'shampoo submission' and 'shampoo_submission'), the one whose
    name needs no cleaning is imported and the others are refused, naming it; so is a folder
    whose name cleans to the name of a submission that the store holds. Where no name is exact
    (e.g. 'mallöry' and 'mallüry', or two folders of one name) all are refused."""
    by_id: dict[str, list[Path]] = {}
    for folder in submissions:
        by_id.setdefault(_folder_name(folder.name), []).append(folder)
    held = _held_names(store, version, {c for c, fs in by_id.items()
                                        if all(f.name != c for f in fs)})
    out = {}
    for clean, folders in by_id.items():
        exact = [f for f in folders if f.name == clean]
        owner = (f"the folder {clean!r}" if len(exact) == 1 else
                 f"the store's submission {clean!r}" if not exact and clean in held else None)
        for folder in folders:
            if owner and folder.name != clean:
                out[folder] = (f"{folder}: its name cleans to {clean!r}, which {owner} has; "
                               "not imported: rename the folder so that its name differs in "
                               "letters, digits, '.', '_' or '-'")
            elif not owner and len(folders) > 1:
                others = ", ".join(repr(str(f)) for f in folders if f != folder)
                out[folder] = (f"{folder}: submission {folder.name!r} maps to the same run ids as "
                               f"{others}; not imported: rename the folders so that their names "
                               "differ in letters, digits, '.', '_' or '-'")
    return out


def _held_names(store: Store, version: str, wanted: set[str]) -> set[str]:
    """Those of the run-id parts `wanted` that the store's runs imported from this version's
    logs give to a submission of exactly that name (one listing of the store, and one run
    document per part found)."""
    if not wanted:
        return set()
    pattern = re.compile(rf"algoperf-v{re.escape(version)}-(?:external|self)--"
                         r"([A-Za-z0-9_.-]+?)--study_\d+--")
    first: dict[str, str] = {}  # run-id part -> one run id holding it
    for name in store.run_names() or ():
        if (match := pattern.match(name)) and match.group(1) in wanted:
            first.setdefault(match.group(1), name)
    names = set()
    for clean, run_id in first.items():
        try:
            if store.run_doc(run_id).get("algorithm") == clean:
                names.add(clean)
        except (KeyError, ValueError, OSError):
            continue  # unreadable: the store's readers report it
    return names


def _budgets(store: Store, targets: AlgoPerfTargets,
             report: "ImportReport") -> tuple[dict[str, float], set[str]]:
    """(each workload's time budget, the workloads with logs), from every imported trial of this
    version in the store (so an import repeated after an aborted one repairs the budgets). A
    budget is the value most trials give (the larger one on a tie); trials that disagree are
    reported, and so are scored workloads of the targets file that no trial has."""
    from workbench import query  # the read side (DuckDB): only needed at the end of an import

    runs = query.runs_frame(store)
    if not runs.empty:
        runs = runs[(runs["source"] == "algoperf")
                    & runs["study_name"].str.startswith(f"algoperf-v{targets.version}-")]
    logged = set(runs["workload"]) if not runs.empty else set()
    report.without_logs = [w for w in targets.base_workloads if w not in logged]
    budgets = {}
    timed = runs[runs["budget_seconds"].gt(0)] if not runs.empty else runs
    for workload, values in (timed.groupby("workload")["budget_seconds"] if not timed.empty
                             else ()):
        counts = values.value_counts()
        budgets[workload] = float(max(counts.index, key=lambda v: (counts[v], v)))
        if len(counts) > 1:
            report.problems.append(
                f"workload {workload!r}: trials disagree on workload.max_allowed_runtime_sec "
                f"({', '.join(f'{n} at {v:g} s' for v, n in counts.items())}); scored with "
                f"{budgets[workload]:g} s")
    return budgets, logged


def _check_version(store: Store, targets: AlgoPerfTargets) -> dict | None:
    """The store's recorded AlgoPerf scoring rules (None: none yet); ValueError when they are
    another benchmark version's."""
    old = store.scoring_config()
    if old is not None and (
            old.get("benchmark_version") != targets.version
            or not set(old.get("base_workloads") or ()) <= set(targets.base_workloads)
            or not set(old.get("held_out") or {}) <= set(targets.held_out_workloads)):
        raise ValueError(f"store {store.root} holds AlgoPerf v{old.get('benchmark_version')} "
                         f"results with other scoring rules than v{targets.version}'s: import "
                         "each benchmark version into its own store")
    return old


def _record_config(store: Store, targets: AlgoPerfTargets, budgets: Mapping[str, float],
                   logged: set[str]) -> None:
    """Write the version's scoring rules into the store: the scored workloads are those with
    logs (`logged`, and those an earlier import recorded)."""
    old = _check_version(store, targets) or {}
    logged = logged | set(old.get("base_workloads") or ())
    store.write_scoring_config(targets.scoring_config(budgets, logged).to_dict())


def import_algoperf(logdir: str | os.PathLike, store: Store | str | os.PathLike,
                    targets_path: str | os.PathLike, ruleset: str | None = None,
                    workers: int = WORKERS) -> ImportReport:
    """Import every trial under `logdir` into `store`; see the module docstring.

    `ruleset` ("external" or "self") defaults to the external_tuning / self_tuning folder in
    the path, else to external for trials with hparams.json. Runs already in the store are left
    as they are. Finishes by recording the scoring rules (budgets from every imported trial of
    the store) and refreshing the store's run index. Raises FileNotFoundError, before the store
    is touched, when `logdir` holds no submission.
    """
    if ruleset not in (None, "external", "self"):
        raise ValueError(f"unknown ruleset {ruleset!r}: valid are 'external', 'self' or None")
    start = time.perf_counter()
    targets = load_targets(targets_path)
    submissions = find_submissions(logdir)  # checks logdir before the store is touched
    if not submissions:
        raise FileNotFoundError(f"no AlgoPerf submission under {logdir}: expected "
                                "<submission>/study_<k>/<workload>_<framework>/trial_<i>/ folders")
    root = Path(logdir).resolve()
    store = store if isinstance(store, Store) else open_store(store, create=True)
    store.ensure()
    report = ImportReport()
    _check_version(store, targets)  # fails early on a store of another version
    clashes = _clashes(submissions, store, targets.version)
    jobs = []
    for submission in submissions:
        report.submissions.append(submission.name)
        if submission in clashes:
            report.problems.append(clashes[submission])
            continue
        rules = _ruleset_of(submission, ruleset)
        jobs += [(log, rules) for log in _scored_trials(submission, targets, report)]
    batches = [jobs[first:first + BATCH] for first in range(0, len(jobs), BATCH)]
    for counts, problems in _import_batches(store, batches, targets, root, workers):
        report.problems += problems
        for outcome, n in counts.items():
            setattr(report, outcome, getattr(report, outcome) + n)
    from workbench.run_index import refresh_index  # the read side (DuckDB, pandas)

    refresh_index(store)
    budgets, logged = _budgets(store, targets, report)
    logged |= {log.workload for log, _ in jobs}  # a workload whose every log was unreadable
    report.without_logs = [w for w in report.without_logs if w not in logged]  # stays scored
    _record_config(store, targets, budgets, logged)
    report.seconds = time.perf_counter() - start
    return report


def _import_batches(store: Store, batches: list[list[tuple[TrialLog, str | None]]],
                    targets: AlgoPerfTargets, root: Path, workers: int
                    ) -> Iterator[tuple[dict[str, int], list[str]]]:
    """_import_batch's result for each batch, in order. Reading and writing a trial is Python
    and Arrow work, one core's worth per process, so several batches go to up to `workers`
    worker processes, one per core at most (workers.WorkerPool); a single batch is imported in
    this process."""
    messages = [{"store": str(store.root), "root": str(root), "targets": asdict(targets),
                 "jobs": [[*_fields(log), rules] for log, rules in jobs]} for jobs in batches]
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    processes = min(workers, len(batches), cores or 1)
    if processes <= 1:
        for message in messages:
            yield tuple(_import_batch(**message))
        return
    with WorkerPool(processes) as pool:
        results = pool.map(f"{__name__}:_import_batch", messages)
        import workbench.run_index  # noqa: F401  # the end's modules (DuckDB, pandas, xarray):
        import workbench.scoring  # noqa: F401  # loaded while the workers work

        for counts, problems in results:
            yield counts, problems


def _fields(log: TrialLog) -> list:
    """A TrialLog as JSON values (TrialLog(*fields) makes it again, its path a string)."""
    return [log.submission, log.study, log.workload, log.framework, log.experiment, log.trial,
            str(log.path)]


def _import_batch(store: str, jobs: list[list], targets: Mapping[str, Any],
                  root: str) -> tuple[dict[str, int], list[str]]:
    """Import the trials of `jobs` (_fields of a TrialLog, then its ruleset) one after another
    into the store at `store` as one SealedBatch (`targets`: an AlgoPerfTargets's fields; `root`:
    the resolved log tree): (how many trials had each outcome, "imported", "existing" or
    "without_evals"; the problems, one line each). JSON in, JSON out: it runs in a worker
    process (workers.WorkerPool) or in the importing one."""
    store_, problems, staged = Store(store), [], []
    targets_ = AlgoPerfTargets(targets["version"], tuple(targets["base_workloads"]),
                               tuple(targets["held_out_workloads"]), targets["workloads"])
    counts = dict.fromkeys(("imported", "existing", "without_evals"), 0)
    logs = [(TrialLog(*fields[:6], Path(fields[6])), rules) for *fields, rules in jobs]
    read = read_evals_many(_new_eval_files(store_, logs, targets_, Path(root)))
    with store_.sealed_batch() as batch:
        for log, rules in logs:
            try:
                outcome, run_id = _import_trial(batch, log, targets_, rules, Path(root), read)
            except _BadFile as e:
                problems.append(str(e))
                continue
            if outcome == "staged":
                staged.append((log, run_id))
            else:
                counts[outcome] += 1
        added = batch.publish()
    for log, run_id in staged:
        try:  # a run of its id written meanwhile by another import: it must be the same trial's
            counts["imported" if added[run_id] else _existing(store_, run_id, log)] += 1
        except _BadFile as e:
            problems.append(str(e))
    return counts, problems


def _new_eval_files(store: Store, logs: list[tuple[TrialLog, str | None]],
                    targets: AlgoPerfTargets, root: Path) -> list[Path]:
    """The eval files worth reading ahead (read_evals_many) among those of `logs` (trial,
    ruleset): regular files inside the log tree `root` of trials not in the store yet."""
    files = []
    for log, rules in logs:
        path = log.path / EVAL_FILE
        ids = [log.run_id(f"algoperf-v{targets.version}-{r}")
               for r in ([rules] if rules else ["external", "self"])]
        if any(store.run_path(i).exists() for i in ids) or not path.is_file():
            continue
        try:
            files.append(_inside(path, root))
        except _BadFile:
            pass  # _import_trial names the problem
    return files


def _scored_trials(submission: Path, targets: AlgoPerfTargets,
                   report: ImportReport) -> Iterator[TrialLog]:
    """The trials of a submission whose workload the targets file knows; notes what is ignored."""
    unknown: set[str] = set()
    for log in trial_logs(submission):
        if log.workload in targets.workloads:
            yield log
        elif log.workload not in unknown:
            unknown.add(log.workload)
            report.ignored.append(f"{submission.name}: workload {log.workload!r} is not in the "
                                  "targets file")
    for study_dir in sorted(submission.iterdir()):
        if not _STUDY.fullmatch(study_dir.name) or not study_dir.is_dir():
            continue
        for child in sorted(study_dir.iterdir()):
            if _TRIAL.fullmatch(child.name):
                report.ignored.append(f"{child}: trial folder directly under a study")
            elif child.is_dir() and not _EXPERIMENT.fullmatch(child.name):
                report.ignored.append(f"{child}: not a <workload>_<jax|pytorch> folder")
            elif child.is_dir() and not _subdirs(child, _TRIAL):
                report.ignored.append(f"{child}: no trial_* folders")
