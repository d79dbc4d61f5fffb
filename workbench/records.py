"""The record schema: the one place where the store's file and folder names, column names,
statuses and the run identity document live.

A run is stored as a run document (`run.json`) plus eval rows and training-loss rows. While the run
is alive its rows are appended to JSON-lines files and flushed row by row; when it ends they are
sealed into Parquet. Every reader goes through these names (workbench/store.py is the only module
that turns them into paths), so a schema change is made here (and SCHEMA_VERSION bumped, with old
versions still readable).

Schema versions of the run document:
  1  the first; its `config` holds the execution options (device, precision, compile,
     channels_last, threads) flat beside the other RunConfig fields.
  2  `config.execution` holds them (workbench.spec.ExecutionOptions). RunConfig.from_dict reads
     both forms, and a trial keeps its trial key across them.
  3  the status `stalled`, and the timing fields of TIMING_FIELDS (trial order, machine speed,
     compilation, stalls). A version-2 document reads as before, with those fields null; a
     pacebench that reads only versions 1 and 2 refuses a version-3 document in one line
     instead of misreading a status it does not know.
A document of either version may hold an eval summary (EVAL_SUMMARY, below), added without a
version change: a reader that does not know the key ignores it, and a document without it only
means that readers compute its figures from the rows.
"""
from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

from workbench.errors import UserError

if TYPE_CHECKING:
    from workbench.spec import RunConfig, WorkloadSpec

__all__ = [
    "SCHEMA_VERSION", "READABLE_SCHEMA_VERSIONS", "STATUS_TABLE", "STATUSES", "TERMINAL",
    "DONE_STATUSES",
    "RUN_DOC", "EVALS_LIVE", "EVALS_SEALED", "TRAIN_LIVE", "TRAIN_SEALED", "HEARTBEAT", "STORE_DOC",
    "SCORING_DOC", "RUNS_DIR", "LOGS_DIR", "CHECKPOINTS_DIR", "INDEX_DIR", "INDEX_VERSION",
    "INDEX_PART_PREFIX", "RESERVE_PREFIX", "RESERVE_BYTES", "EARLY_STOP_DIR", "STUDIES_DIR",
    "SLURM_DIR", "SLURM_JOBS_FILE", "SLURM_OUTCOMES_DIR", "SLURM_SUBMITIT_DIR", "SLURM_FIELDS",
    "SLURM_JOB_ID", "slurm_job_id", "NOISE_COLUMNS", "EVAL_COLUMNS",
    "TRAIN_COLUMNS", "RUN_COLUMNS", "EXPORT_FILES",
    "TIMING_FIELDS", "SEARCH_SPACE_FIELDS", "MACHINE_COLUMNS",
    "AD_HOC_NAME", "PHASES", "TUNE_PREFIX", "IDENTITY_FIELDS", "SPLITS", "metric_column", "split_of",
    "check_row_columns", "REQUIRED_DOC_FIELDS", "run_doc_problem",
    "run_identity", "EVAL_SUMMARY", "eval_summary", "eval_summary_of_columns",
    "summary_columns", "LADDER_FIELDS",
    "LADDER_PHASES",
]

SCHEMA_VERSION = 3
READABLE_SCHEMA_VERSIONS = (1, 2, 3)

# Run statuses, one table: status -> (what it is, what it counts as in scores, comparisons and
# budgets, and what `--resume` does with its trial). `running` is what a live process writes;
# readers show a `running` run whose process is gone as `interrupted` (workbench.store). The docs
# print this table (docs/reference.md; tests/test_docs.py checks they agree).
STATUS_TABLE = {
    "complete": ("the run ended at its target, its budget, or its algorithm's request",
                 "a time when it met its target, else a miss", "done: not run again"),
    "diverged": ("a non-finite loss or validation metric", "a miss", "done: not run again"),
    "stalled": ("no progress (runners/run/stall.py): stopped between 10 % and 50 % of its budget",
                "a miss", "done: not run again"),
    "failed": ("a set-up error, a crash (its traceback recorded), or a watchdog kill",
               "neither a time nor a miss: left out, counted per algorithm and workload",
               "run again"),
    "interrupted": ("Ctrl-C, SIGTERM, preemption, a lost worker, a full disk",
                    "neither a time nor a miss: left out", "run again (from its checkpoint)"),
    "running": ("training now", "left out until it ends", "left alone"),
}
STATUSES = ("running", "complete", "diverged", "stalled", "failed", "interrupted")
TERMINAL = ("complete", "diverged", "stalled", "failed", "interrupted")
# Finished: a trial with one of these is not run again by --resume, and its run counts in scores
DONE_STATUSES = ("complete", "diverged", "stalled")

# File names inside a store.
STORE_DOC = "pacebench-store.json"  # at the store's root: schema version, creation time
RUNS_DIR = "runs"                   # one sub-folder per run attempt
RUN_DOC = "run.json"                # identity, config, hparams, environment, status, summary
EVALS_LIVE = "evals.jsonl"          # eval rows, appended and flushed while the run lives
EVALS_SEALED = "evals.parquet"      # the same rows, sealed when the run ends
TRAIN_LIVE = "train.jsonl"          # training-loss rows every `train_loss_every` steps
TRAIN_SEALED = "train.parquet"
HEARTBEAT = "heartbeat"             # touched by a live run; its age tells a dead run from a live one
SCORING_DOC = "pacebench-scoring.json"  # at the root, optional: how to score the store (an import
                                        # of AlgoPerf logs writes the benchmark version's rules)
LOGS_DIR = "logs"                   # a worker's output: <study_name>-<trial_key>.log
CHECKPOINTS_DIR = "checkpoints"     # a long run's training state: <trial_key>.pt, removed at its end
# The run index: Parquet parts, each holding finished runs' rows of the run table (RUN_COLUMNS,
# hparams as JSON text), so that the run table of a large store is read in one scan. Derived data
# only: every row is recomputable from the run folders, and deleting the folder is always safe.
# Its version changes with RUN_COLUMNS, not with the run document. Version 5: each row also holds
# its run document's size and modification time (query.INDEX_STAT_COLUMNS), and a part's name
# ends with its bytes' digest: a row whose document changed, or a part edited, is not believed.
INDEX_DIR = "index"
INDEX_VERSION = 6  # 5: each row's document size and mtime; the run table gained `phase`;
# 6: each row's eval clock (query.INDEX_CLOCK_COLUMNS)
INDEX_PART_PREFIX = f"runs-v{INDEX_VERSION}-"  # + a unique name + ".parquet"
# The early-stopping tuner (runners/run/early_stop.py): one JSON document per trial at
# <store>/pruning/<study_name>/<trial_key>.json = {"trial_key", "workload", "algorithm", "group",
# "estimator", "budget_steps", "rungs": {"<rung>": {"step", "estimate"}}, "pruned_at_rung"
# (null while alive), "reason"}; other trials of the same study read them at each rung. (The
# folder and the keys keep the names of the first stores, written before early stopping had
# its own words; "prune" elsewhere means sparsity at initialisation.)
EARLY_STOP_DIR = "pruning"
# A launcher's claim on a trial it is about to run: <store>/claims/<trial_key>.lock, held with an
# exclusive flock(2) for as long as its attempt runs, so that two launchers of one study never run
# a trial at the same time. The lock dies with its process; the empty files stay (removing a lock
# file while another process may hold it open would let two claims pass).
CLAIMS_DIR = "claims"
# Launches plan one at a time: <store>/planning.lock, held with an exclusive flock(2) while a
# launcher checks its plan against the study's runs and plans and records it in
# <store>/plans/<study_name>.json = {"configs": [RunConfig.to_dict(), ...]} (every trial any
# launch of the study planned), so that a second launch of another design is refused even before
# the first one's runs have documents. On a network file system the lock needs locks that every
# machine sees (NFSv4, or NFSv3 with lockd; Lustre mounted with `flock`).
PLANNING_LOCK = "planning.lock"
PLANS_DIR = "plans"
# A launcher's space reserve (Store.reserve_space): <store>/.space-reserve-*, removed from the
# folder as soon as it is made (its blocks stay allocated while the launcher holds it open).
RESERVE_PREFIX = ".space-reserve-"
RESERVE_BYTES = 256 << 10  # room to record a launch's end on a full disk (about 16 run documents)
# Study summaries (compute spent and saved by early stopping, a scaling study's spec, ...):
# <store>/studies/<study_name>.json
STUDIES_DIR = "studies"
# The Slurm backend's files (runners/launch/slurm_backend.py), transient job state, never records:
SLURM_DIR = "slurm"
SLURM_JOBS_FILE = "jobs.jsonl"        # one JSON line per submitted job: trial_key, study_name,
                                      # job_id ("ARRAY_TASK"), submitted_at (UTC)
SLURM_OUTCOMES_DIR = "outcomes"       # <job_id>.json: the job's worker exit code, pid and host
SLURM_SUBMITIT_DIR = "submitit"       # submitit's folder: its pickled jobs and their output (only
                                      # submitit reads them)

SPLITS = ("train", "validation", "test")

# The files `pacebench export` writes in its folder and `pacebench import-parquet` reads
# (workbench/transfer.py): the run table with each run's document, the eval rows, the
# training-loss rows. Not a store's files: their own folder, read by DuckDB and pandas directly.
EXPORT_FILES = {"runs": "runs.parquet", "evals": "evals.parquet", "train": "train.parquet"}

# Columns of every eval row, in order; the metric columns `<split>/<metric>` follow them.
EVAL_COLUMNS = (
    "run_id",         # str: the run attempt's id (its folder name)
    "eval_index",     # int: 0-based ordinal of the eval within the run
    "step",           # int: update steps done when the eval ran
    "examples",       # int: training examples consumed so far
    "train_seconds",  # float s: accumulated training time (AlgoPerf's `score`/submission time)
    "eval_seconds",   # float s: accumulated evaluation time (off the training clock)
    "wall_seconds",   # float s: wall clock since the training clock started
)

TRAIN_COLUMNS = (
    "run_id",         # str
    "step",           # int: step whose minibatch loss this is
    "examples",       # int
    "train_seconds",  # float s
    "loss",           # float: minibatch training loss (what the update saw)
)

# Columns of Store.runs(): one row per run attempt.
RUN_COLUMNS = (
    "run_id", "trial_key", "attempt", "study_name", "workload", "base_workload", "variant",
    "algorithm", "ruleset", "study", "trial", "seed", "rng_seed", "hparams", "batch_size",
    "status", "stop_reason", "hardware", "source", "target_metric", "target_direction",
    "target_validation", "target_test", "budget_seconds", "budget_steps", "steps",
    "train_seconds", "wall_seconds", "reached_target", "time_to_target", "step_to_target",
    "wall_to_target", "eval_index_to_target", "best_validation", "inference_seconds",
    "device", "precision", "peak_memory_bytes", "mfu", "energy_joules",
    "compile_seconds", "compile_cache", "probe_seconds", "launch_position", "stalled_at_step",
    "launched_by", "design", "execution", "mixed_execution", "started_at", "ended_at", "error",
    "reused_from", "design_trial_key", "phase",
)

# Top-level run-document fields of where a run came from and how it ran (schema 3; null in older
# documents):
#   "launched_by": "study" (a launcher: study, noise, set-targets, scale; their runs carry a
#       launch order) | "run" (`pacebench run`: an ad-hoc run) | null (a library call, an import)
#   "design": RunConfig.design, the hash of its study's design for its algorithm (trials per study,
#       search space, execution options); workbench/scope.py pools two study names' runs of one
#       algorithm only when their designs match
#   "execution": ExecutionOptions.label of how it ran, its device resolved ("cpu, fp32, 1 thread",
#       "cuda:0, bf16, 1 thread, compile"); null in documents written before it (readers then
#       take `device` and `precision`)
#   "mixed_execution": RunConfig.mixed_execution: what --allow-mixed-execution let this run
#       differ in from its study's finished runs (runners/launch/resume.py); null when nothing was mixed
#   "reuse_key": runners/run/reuse_key.py reuse_key: the hash of everything the run's result depends on
#       (its trial key, every execution option, the hardware class, the sources' hashes, the
#       Pacebench version and runner code hash, the torch version, the dataset's checksum); null
#       in older documents, imports and runs with hooks of a library caller: never reused
#   "reused_from": {"store": the source store's path, "run_id": the run's id there} for a run
#       copied by `pacebench study --reuse-from` (workbench/transfer.py); null for runs made
#       here. The run table's column of the same name holds it as JSON text (null: made here).
#   "reuse_inputs": runners/run/reuse_key.py reuse_inputs, what the reuse key hashes, in full (so that
#       `study --dry-run --reuse-from` can name the first input that differs); null where
#       reuse_key is
# Top-level run-document fields of how a trial was drawn (run_identity; absent in documents
# written before them, which read as draw scheme 1 and have no design key):
#   "draw_scheme": RunConfig.draw_scheme, how its hyperparameters and rng_seed were drawn
#       (workbench/spec.py DRAW_SCHEMES: 1 by the study's name, 2 by the study's design)
#   "design_trial_key": RunConfig.design_trial_key, the trial's identity without its study's
#       name under scheme 2: two study names' runs of one key are one trial (workbench/scope.py
#       counts it once). Also a run-table column (null for older documents).
#   "phase": "tuning" for a run of a `pacebench tune` sweep (study name "tune-<algorithm>", a
#       quarter of the step budget, the schedule over those steps: runners/procedures/tune.py); null for
#       every other run and in documents written before it (read as not tuning). workbench/
#       scope.py leaves tuning runs out of every score and comparison.
# A run is ad hoc when launched_by is "run", or, in documents without it, when its study name is
# AD_HOC_NAME (the name `pacebench run` gave its runs before).
AD_HOC_NAME = "adhoc"
PHASES = ("tuning",)  # the values of a run document's `phase` (null: a run of a study or ad hoc)
TUNE_PREFIX = "tune-"  # the study name of `pacebench tune`'s runs: TUNE_PREFIX + the algorithm

# Top-level run-document fields of where a run ran on a cluster (null in runs made elsewhere and
# in documents written before them):
SLURM_FIELDS = (
    "slurm_job_id",  # str: the Slurm job that ran it ("ARRAYID_TASK" for a job array's task, as
                     # squeue shows it; runners/launch/slurm_backend.py)
)
SLURM_JOB_ID = re.compile(r"[0-9]{1,12}(_[0-9]{1,9})?")  # what a valid slurm_job_id looks like


def slurm_job_id(environ: Mapping[str, str]) -> str | None:
    """The Slurm job id that the environment `environ` of a process gives ("ARRAYID_TASK" for
    a job array's task), or None outside a Slurm job (or when the variables are not ids)."""
    array, task = environ.get("SLURM_ARRAY_JOB_ID"), environ.get("SLURM_ARRAY_TASK_ID")
    job = f"{array}_{task}" if array and task else environ.get("SLURM_JOB_ID")
    return job if job and SLURM_JOB_ID.fullmatch(job) else None

# Top-level run-document fields of how a run was timed (schema 3; null in older documents and in
# imported logs, which do not measure them). The first five are also run-table columns.
TIMING_FIELDS = (
    "compile_seconds",  # float s: compilation inside the training time (0 without --compile)
    "compile_cache",    # "cold" | "warm": the compiler's cache when the run started; null
                        # without --compile
    "probe_seconds",    # float s: the machine-speed probe (runners/run/machine.py), mean of its
                        # readings before and after the run; smaller is a faster machine
    "launch_position",  # int: the run's place in its study's launch order (runners/launch/study.py)
    "stalled_at_step",  # int: the eval step where the stall rule fired (runners/run/stall.py); null
                        # when it did not
    "launch_order",     # {"position", "block", "blocks", "seed"}: the launch order in full
    "machine",          # {"probe": what it times, "start": reading, "end": reading}; a reading
                        # is {"probe_seconds", "load_average", "other_cpu"} (MACHINE_COLUMNS)
)

# Top-level run-document fields of the search space a run's hyperparameters were drawn from
# (runners/tuning.py ChosenSpace, set by the study's launcher); null in older documents, in
# imported logs, and where none was drawn from (`pacebench run`, the self-tuning ruleset).
SEARCH_SPACE_FIELDS = (
    "search_space",         # the space, as JSON in AlgoPerf's format (an object or a list)
    "search_space_origin",  # "declared" (the algorithm class gives it) | "file" | "signature"
                            # (derived from an optimizer's constructor: runners/algorithms/
                            # wrapper.py) | "tuned" (a file `pacebench tune` wrote, its
                            # sidecar <file>.origin.json beside it: runners/procedures/tune.py)
    "search_space_file",    # the JSON file's absolute path, for origin "file" or "tuned"; else
                            # null
)

# Extra eval-row columns of the machine's speed during a run (runners/run/machine.py), read at each
# eval, off the clock; null where a platform does not tell:
MACHINE_COLUMNS = (
    "steps_per_second",  # float: update steps per training second since the previous eval
    "load_average",      # float: the 1-minute load average (runnable processes)
    "other_cpu",         # float cores: CPU time used by other processes per wall second, since
                         # the previous reading (whole machine minus this run's process)
)


# Extra eval-row columns of the gradient noise scale (runners/run/noise.py), measured off the clock:
NOISE_COLUMNS = (
    "noise/b_small",      # int examples: the small batch (the run's batch size)
    "noise/b_big",        # int examples: the big batch
    "noise/grad_sq",      # float: unbiased |G|^2 estimate of this measurement
    "noise/trace_sigma",  # float: unbiased tr(Sigma) estimate of this measurement
    "noise/b_simple",     # float examples: EMA(tr Sigma) / EMA(|G|^2) over the run so far
)


def metric_column(split: str, metric: str) -> str:
    """Column name of a metric on a split, e.g. ("validation", "accuracy") -> "validation/accuracy"."""
    if split not in SPLITS:
        raise UserError(f"unknown split {split!r}: valid are {', '.join(SPLITS)}")
    return f"{split}/{metric}"


def check_row_columns(columns: Iterable[str]) -> None:
    """Refuse row columns that another run's could be confused with: readers match the columns
    of many runs' files by name without regard to case (DuckDB's union_by_name), so two names
    that differ only in case, or a metric column not in lower case, would mix up runs' metrics.
    Raises UserError naming the column and saying what is valid."""
    seen: dict[str, str] = {}
    for column in columns:
        twin = seen.setdefault(column.lower(), column)
        if twin != column:
            raise UserError(f"columns {twin!r} and {column!r} differ only in case; column "
                            "names must differ in more than case")
        if split_of(column) and column != column.lower():
            raise UserError(f"metric column {column!r} is not lower case; metric columns are "
                            "<split>/<metric> in lower case, e.g. 'validation/accuracy'")


# A ladder run's place (runners/procedures/ladder.py): run.json's top-level "ladder" and config.ladder hold
# the same mapping, with these keys; absent (null) in every other run and in older documents,
# which read as before (no schema change: a reader that does not know the key ignores it).
LADDER_FIELDS = (
    "rung",                  # str: the rung's workload name (`pacebench ladder --list`)
    "non_embedding_params",  # int: the rung's parameters outside the token/position embeddings
    "params",                # int: all its parameters
    "flops_per_token",       # float: training FLOPs per token (forward + backward, LM head in)
    "budget",                # float: the data budget as a multiple of Chinchilla (20 tokens per
                             # non-embedding parameter x budget)
    "tokens",                # int: planned training tokens, steps x batch x block
    "steps",                 # int: planned steps; the schedule's horizon (step hint) and the
                             # step budget: the run's last eval is at this step
    "data",                  # str: "generated" | "shakespeare" | "bytes:PATH" | a token-file path
    "repeated_tokens",       # bool: the plan needs more tokens than the data source holds
    "transfer",              # str | null: the transfer rule that set its hyperparameters
    "tuning_trials",         # int: tuning trials this algorithm got at this rung (0: its
                             # declared setting or transfer rule, no sweep)
    "phase",                 # "final": a run the ladder compares | "tuning": a sweep trial (its
                             # study is "<ladder name>.tuning"); analyses read "final" only
    "reference",             # str: the ladder's reference algorithm (its first)
    "eval_windows",          # int: windows per split each eval scores, when the plan sized
                             # them (no --evals); absent (--evals N, older records): 256
)
LADDER_PHASES = ("final", "tuning")
# Beside it, run.json's top-level "data" says what a workload with a data record trained on
# (a ladder rung: {"kind": "generated" | "shakespeare" | "bytes" | "token_files", its seed or
# path, "sha256", "tokens_available", ...}; runners/workloads/ladder.py data_record); null for
# other workloads.


# Keys that every run document has, whatever wrote it; a document without one is not a run.
REQUIRED_DOC_FIELDS = ("run_id", "trial_key", "study_name", "workload", "algorithm", "status")


def run_doc_problem(doc: Any) -> str | None:
    """Why a run document cannot be read as a run of this schema (None when it can): not an
    object, a schema version this code does not read (a newer pacebench wrote it), a required
    key missing or not text, or an unknown status."""
    if not isinstance(doc, dict):
        return f"{RUN_DOC} is not a JSON object"
    version = doc.get("schema_version")
    if version not in READABLE_SCHEMA_VERSIONS:
        return (f"{RUN_DOC} has schema version {version!r}; this pacebench reads versions "
                f"{', '.join(map(str, READABLE_SCHEMA_VERSIONS))} (a newer one wrote it?)")
    lacking = [k for k in REQUIRED_DOC_FIELDS if not isinstance(doc.get(k), str) or not doc[k]]
    if lacking:
        return f"{RUN_DOC} lacks {', '.join(lacking)} (or they are not text)"
    if doc["status"] not in STATUSES:
        return f"{RUN_DOC} has status {doc['status']!r}; valid are {', '.join(STATUSES)}"
    return None


def split_of(column: str) -> str | None:
    """The split of a metric column, or None for a non-metric column."""
    head, sep, _ = column.partition("/")
    return head if sep and head in SPLITS else None


# Keys of the run identity document (run_identity), the part every writer of a run document shares.
IDENTITY_FIELDS = ("trial_key", "study_name", "workload", "base_workload", "variant", "algorithm",
                   "ruleset", "study", "trial", "seed", "rng_seed", "hparams", "source",
                   "target_metric", "target_direction", "target_validation", "target_test",
                   "config", "draw_scheme", "design_trial_key")


def run_identity(config: "RunConfig", spec: "WorkloadSpec | None") -> dict[str, Any]:
    """Who a run is: its trial, study, workload, algorithm, seeds and targets (IDENTITY_FIELDS),
    from its config and its workload's catalog entry. `spec` None: the workload is unknown (a
    typo recorded as a failed run): its name is kept, the catalog's fields are left out."""
    c = config
    doc: dict[str, Any] = {
        "trial_key": c.trial_key, "study_name": c.study_name, "workload": c.workload,
        "algorithm": c.algorithm, "ruleset": c.ruleset, "study": c.study, "trial": c.trial,
        "seed": c.seed, "rng_seed": c.rng_seed, "hparams": dict(c.hparams),
        "source": "pacebench", "config": c.to_dict(), "draw_scheme": c.draw_scheme,
        "design_trial_key": c.design_trial_key}
    if c.ladder is not None:
        doc["ladder"] = dict(c.ladder)
    if spec is not None:
        t = spec.target
        doc.update(workload=spec.name, base_workload=spec.base, variant=spec.variant,
                   target_metric=t.metric, target_direction=t.direction,
                   target_validation=t.validation, target_test=t.test)
    return doc


# The eval summary: the run table's figures of a run computed from its eval rows, kept in its
# document under this key when the rows are sealed (RunWriter.finish, Store.write_sealed_run), so
# that reading a store's run table does not read every run's rows again. Derived data, like the
# run index: workbench.query uses it only when it is well formed and names the document's own
# target, and computes the figures from the rows otherwise (older stores, interrupted runs).
#   {"target": [metric, direction, validation target], "reached_target": bool,
#    "eval_index_to_target", "time_to_target", "step_to_target", "wall_to_target" (the first eval
#    that met the target; null when none did), "best_validation", and the rows' largest "steps",
#    "train_seconds", "wall_seconds" (null when there are no rows), and "eval_clock": [eval
#    seconds, wall seconds] of eval_clock.eval_clock (null when no row counts; absent when a row's
#    eval seconds are not a number: then readers read the rows)}
EVAL_SUMMARY = "eval_summary"


def _plain_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _plain_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# Fast paths of the checks below: a list whose values are all None, int or float (bool is not
# int's type) passes without a call per value (an import checks 3,700 runs of 60 rows).
_NONE, _PLAIN, _INT = type(None), {int, float}, {int}


def _numbers(values: list) -> bool:
    """Each value None or a plain number (_plain_number)."""
    return set(map(type, values)) - {_NONE} <= _PLAIN or \
        all(v is None or _plain_number(v) for v in values)


def _integers(values: list) -> bool:
    """Each value None or a plain integer (_plain_int)."""
    return set(map(type, values)) - {_NONE} <= _INT or \
        all(v is None or _plain_int(v) for v in values)


def _times(values: list) -> bool:
    """Each value None or a finite plain number (a time or a step count read as the run table
    reads it)."""
    return _numbers(values) and all(math.isfinite(v) for v in values if v is not None)


def summary_columns(columns: Iterable[str], doc: Mapping[str, Any]) -> list[str]:
    """The columns among `columns` that eval_summary reads for a run whose document is `doc`
    (the step, time and index columns, and the target metric's in any case): rows cut down to
    them give the same summary, and cost less to make from a table."""
    metric = doc.get("target_metric")
    target = metric_column("validation", metric).lower() if isinstance(metric, str) else None
    read = ("eval_index", "step", "train_seconds", "eval_seconds", "wall_seconds")
    return [c for c in columns if c in read or c.lower() == target]


def eval_summary(rows: Iterable[Mapping[str, Any]], doc: Mapping[str, Any]) -> dict | None:
    """The EVAL_SUMMARY of a run whose eval rows are `rows` and whose document is `doc`: the
    first hit by its one rule (workbench.outcomes.first_hit: the first eval whose finite
    validation value meets the target, with a finite training time >= 0). None when the target
    or the rows are not plain (a metric column in another case, an eval index twice, a value
    that is not a number, ...): then readers compute the figures from the rows themselves, as
    for a document without a summary. tests/test_query.py checks it against the run table's
    SQL, tests/test_outcomes.py against the rule."""
    rows = list(rows)
    names = dict.fromkeys(k for row in rows for k in row)
    return eval_summary_of_columns({k: [row.get(k) for row in rows] for k in names}, doc)


def eval_summary_of_columns(columns: Mapping[str, Sequence[Any]],
                            doc: Mapping[str, Any]) -> dict | None:
    """eval_summary of the rows whose values are `columns` (name -> one value per row, as
    pyarrow's Table.to_pydict gives them; a column not given reads None on every row): an
    importer's rows are a table, and a dict per row cost as much as the rest of the summary."""
    from workbench.outcomes import first_hit
    from workbench.spec import COMPARISONS

    metric, direction = doc.get("target_metric"), doc.get("target_direction")
    target = doc.get("target_validation")
    if not (isinstance(metric, str) and direction in COMPARISONS and _plain_number(target)
            and math.isfinite(target)):
        return None
    column = metric_column("validation", metric)
    if any(k != column and k.lower() == column.lower() for k in columns):
        return None
    rows = max((len(v) for v in columns.values()), default=0)
    indices, values, steps, times, walls, evals = (
        list(columns.get(k) or [None] * rows) for k in
        ("eval_index", column, "step", "train_seconds", "wall_seconds", "eval_seconds"))
    if not all(_plain_int(i) for i in indices) or len(set(indices)) < len(indices):
        return None
    if not (_numbers(values) and _integers(steps) and _times(times) and _times(walls)):
        return None

    def largest(of: list) -> Any:
        return max((v for v in of if v is not None), default=None)

    finite = [float(v) for v in values if v is not None and math.isfinite(v)]
    order = sorted(range(rows), key=indices.__getitem__)  # eval order
    position = first_hit([math.nan if values[i] is None else values[i] for i in order], target,
                         direction, [math.nan if times[i] is None else times[i] for i in order])
    first = order[position] if position is not None else None

    def at_first(of: list) -> Any:
        return None if first is None else of[first]

    best = (max if direction == "max" else min)(finite) if finite else None
    as_float = (lambda v: None if v is None else float(v))
    out = {"target": [metric, direction, float(target)], "reached_target": first is not None,
           "eval_index_to_target": at_first(indices),
           "time_to_target": as_float(at_first(times)), "step_to_target": at_first(steps),
           "wall_to_target": as_float(at_first(walls)), "best_validation": best,
           "steps": largest(steps), "train_seconds": as_float(largest(times)),
           "wall_seconds": as_float(largest(walls))}
    if _numbers(evals):
        out["eval_clock"] = _eval_clock(order, times, evals, walls)
    return out


def _eval_clock(order: list[int], times: list, evals: list, walls: list) -> list[float] | None:
    """[eval seconds, wall seconds] of the last row (largest eval_index; `order`: the rows in
    eval order) whose training, eval and wall seconds are all finite and >= 0
    (workbench.eval_clock.eval_clock's rule, which tests/unit/store/test_query.py checks this
    against); None when no row is such."""
    def counts(i: int) -> bool:
        return all(v is not None and math.isfinite(v) and v >= 0
                   for v in (times[i], evals[i], walls[i]))

    # from the last eval back: the last row counts, as a rule, and ends the search
    last = next((i for i in reversed(order) if counts(i)), None)
    return None if last is None else [float(evals[last]), float(walls[last])]
