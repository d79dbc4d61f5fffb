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
at most MAX_DEPTH levels (algoperf_logs.py finds and reads a trial's files); no file read
through a link out of the log folder; only regular files
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
import os
import re
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Mapping

from workbench.importers.algoperf_logs import (  # noqa: F401  (public names callers import here)
    _EXPERIMENT, _STUDY, _TRIAL, EVAL_FILE, HPARAMS_FILE, META_FILE, TrialLog, _BadFile,
    _check_meta, _folder_name, _hardware, _read_json, _read_regular, _subdirs, find_submissions,
    read_evals, read_evals_many, trial_logs)
from workbench.errors import UserError
from workbench.workers import WorkerPool
from workbench.store import SealedBatch, Store, open_store

if TYPE_CHECKING:
    from workbench.scoring import ScoringConfig

__all__ = ["import_algoperf", "ImportReport", "AlgoPerfTargets", "load_targets", "TrialLog",
           "find_submissions", "trial_logs", "read_evals", "metric_direction"]

WORKERS = 8  # worker processes at most (and one per core at most)
BATCH = 128  # trials a worker reads and makes durable together (store.SealedBatch)
# Metric names by direction, as the official scorer decides it.
_MINIMIZE = frozenset({"loss", "ce_loss", "error_rate", "ctc_loss", "wer", "l1_loss", "ppl"})
_MAXIMIZE = frozenset({"mean_average_precision", "ssim", "accuracy", "bleu"})
_GOALS = {"minimize": "min", "maximize": "max"}  # target_metric_goal, in files since v0.6

def metric_direction(metric: str) -> str:
    """"min" or "max" for an AlgoPerf target metric name."""
    if metric in _MINIMIZE:
        return "min"
    if metric in _MAXIMIZE:
        return "max"
    raise UserError(f"unknown AlgoPerf target metric {metric!r}: known are "
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

def _document(log: TrialLog, targets: AlgoPerfTargets, study_name: str, ruleset: str,
              meta: Mapping[str, Any], hparams: Mapping[str, Any], evals: "pa.Table",  # noqa: F821
              run_id: str) -> dict[str, Any]:
    """The run document of one imported trial (records.RUN_COLUMNS plus AlgoPerf details)."""
    entry = targets.workloads[log.workload]
    metric = entry["target_metric_name"]
    base, variant = targets.base_of(log.workload)

    def last(column: str) -> Any:  # the largest (read_evals: steps and times are finite)
        return max((v for v in evals[column].to_pylist() if v is not None), default=None)

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


class _Tree:
    """The log tree `root` (resolved) of one batch, and the check that a path in it leads
    nowhere out of it through a link. Each folder is resolved once per batch, and a file only
    when it is a link itself (resolving every file's whole path took 3 s of CPU of an import of
    the v0.5 logs): a name that is no link lies where its folder really is. Paths are handled
    as text (pathlib's parsing was a tenth of the batch's work)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._prefix = os.path.join(str(root), "")  # the root and a separator
        self._folders: dict[str, str] = {}

    def inside(self, path: Path) -> Path:
        """`path`, which must not lead out of the tree through a link (_BadFile)."""
        try:
            parent, name = os.path.split(str(path))
            folder = self._folders.get(parent)
            if folder is None:
                folder = self._folders[parent] = os.path.realpath(parent)
            real = _link_target(path) if os.path.islink(path) else os.path.join(folder, name)
            if real == str(self.root) or real.startswith(self._prefix):
                return path
        except OSError:  # a link loop
            pass
        raise _BadFile(f"{path}: a link out of the log tree {self.root}; links out of it are "
                       "not followed")


def _link_target(path: Path) -> str:
    """Where the link `path` leads, all links resolved (Path.resolve: a link to nothing leads
    where it names); OSError for a link loop."""
    try:
        return os.path.realpath(path, strict=True)
    except FileNotFoundError:
        return os.path.realpath(path)


def _import_trial(batch: SealedBatch, log: TrialLog, targets: AlgoPerfTargets,
                  ruleset: str | None, tree: _Tree,
                  read: Mapping[Path, Any] | None = None) -> tuple[str, str | None]:
    """Read and check one trial and add it to `batch`: ("staged", its run id) (the batch's
    publish imports it), ("existing", run id) or ("without_evals", None); _BadFile on errors.
    `read`: what read_evals_many gave for eval files read ahead (the others are read here).

    Nothing outside the log tree (`tree`) is read. A run of the same id already in the store must
    be this submission's (the same folder name), else the trial is refused.
    """
    store = batch.store
    eval_file = tree.inside(log.path / EVAL_FILE)
    if not os.path.exists(eval_file):  # (a link to nothing, too)
        return "without_evals", None
    hparams = _read_json(tree.inside(log.path / HPARAMS_FILE), required=False)
    ruleset = ruleset or ("external" if hparams is not None else "self")
    study_name = f"algoperf-v{targets.version}-{ruleset}"
    run_id = log.run_id(study_name)
    if store.run_path(run_id).exists():
        return _existing(store, run_id, log), run_id
    evals = read[eval_file] if read and eval_file in read else read_evals(eval_file)
    if isinstance(evals, Exception):
        raise evals
    meta = _read_json(tree.inside(log.path / META_FILE), required=False) or {}
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
        raise UserError(f"store {store.root} holds AlgoPerf v{old.get('benchmark_version')} "
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
        raise UserError(f"unknown ruleset {ruleset!r}: valid are 'external', 'self' or None")
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
    tree = _Tree(Path(root))
    read = read_evals_many(_new_eval_files(store_, logs, targets_, tree))
    with store_.sealed_batch() as batch:
        for log, rules in logs:
            try:
                outcome, run_id = _import_trial(batch, log, targets_, rules, tree, read)
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
                    targets: AlgoPerfTargets, tree: _Tree) -> list[Path]:
    """The eval files worth reading ahead (read_evals_many) among those of `logs` (trial,
    ruleset): regular files inside the log tree of trials not in the store yet."""
    files = []
    for log, rules in logs:
        path = log.path / EVAL_FILE
        ids = [log.run_id(f"algoperf-v{targets.version}-{r}")
               for r in ([rules] if rules else ["external", "self"])]
        if any(store.run_path(i).exists() for i in ids) or not path.is_file():
            continue
        try:
            files.append(tree.inside(path))
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
