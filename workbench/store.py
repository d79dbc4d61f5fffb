"""A results store on disk: its layout, crash-safe writes and document-level reads.

A store is a directory (the names are records.py's; this module is the only one that turns them
into paths)::

    <store>/pacebench-store.json        schema version, creation time
    <store>/runs/<run_id>/run.json      the run document (rewritten atomically on each status change)
    <store>/runs/<run_id>/evals.jsonl   eval rows, appended and flushed one by one while the run lives
    <store>/runs/<run_id>/train.jsonl   training-loss rows, likewise
    <store>/runs/<run_id>/evals.parquet sealed eval rows, written when the run ends (then the
    <store>/runs/<run_id>/train.parquet   JSON-lines files are removed)
    <store>/runs/<run_id>/heartbeat     touched while the run lives
    <store>/pacebench-scoring.json      optional: the scoring rules of an imported benchmark
    <store>/index/runs-v1-*.parquet     optional: the run table of finished runs (derived data,
                                        written by workbench.run_index.refresh_index)
    <store>/logs/<study>-<trial>.log    a worker's output
    <store>/checkpoints/<trial>.pt      a long run's training state (runners/run/checkpoint.py)
    <store>/pruning/<study>/<trial>.json  the early-stopping tuner's record of a trial
    <store>/studies/<study>.json        a study's summary
    <store>/planning.lock               launches check and record their plans one at a time
    <store>/plans/<study>.json          every trial config the study's launches planned

Each attempt at a trial gets its own folder, created with an atomic mkdir, so many processes on
many machines can write one store at once and nothing written is ever overwritten by another run.
A run killed at any moment keeps every row it flushed; its document still says `running`, and
readers show it as `interrupted` once its process is gone (same host: psutil finds no process of
its pid that started when the document says) or its heartbeat is stale (another host).
Nothing is pickled: documents are JSON, rows are JSON lines and Parquet.

Importers add finished runs in one step with Store.write_sealed_run: the folder is built and
fsynced under a hidden temporary name and renamed into place, so a reader (or a crash) sees the
whole run or none of it. A finished run's document changes afterwards only through Store.amend,
which keeps its identity and status.

Every reader opens only regular files inside the store (file_problem, read_regular): a FIFO
would block it, a device never end, a link lead out of the store; such a run is skipped with a
warning naming it.

This module reads documents and files; tables of runs and rows (pandas, DuckDB) are
workbench.query's, which reads the files this module lists.
"""
from __future__ import annotations

import errno
import glob
import hashlib
import json
import os
import shutil
import socket
import time
import uuid
import warnings
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

from workbench import records as R
from workbench.errors import UserError
# The store's parts, each a module of its own; their public names are importable from here.
from workbench.run_writer import RunWriter, process_alive, started_after_boot
from workbench.sealed_batch import SealedBatch, temp_left
from workbench.store_files import (NO_SPACE_ERRNOS, StoreError, UnknownRun, UnsafeFile,
                                   atomic_write_json, file_problem, full_path, no_space, nonempty,
                                   read_jsonl, read_regular, slug, utc_now)
from workbench.store_studies import SpaceReserve, StudyFiles, TrialClaim

__all__ = ["Store", "SealedBatch", "RunWriter", "TrialClaim", "SpaceReserve", "open_store",
           "StoreError", "UnknownRun", "atomic_write_json", "utc_now", "read_jsonl", "no_space",
           "full_path", "NO_SPACE_ERRNOS", "ROW_KINDS", "UnsafeFile", "file_problem",
           "read_regular"]

# The two kinds of rows of a run: kind -> (sealed Parquet file, live JSON-lines file).
ROW_KINDS = {"evals": (R.EVALS_SEALED, R.EVALS_LIVE), "train": (R.TRAIN_SEALED, R.TRAIN_LIVE)}
# What Store.amend may not change: who the run is, how it ended and what its rows say.
_FIXED = frozenset(R.IDENTITY_FIELDS) | {"run_id", "schema_version", "attempt", "status",
                                         "stop_reason", "started_at", "ended_at", "process",
                                         R.EVAL_SUMMARY}


class Store(StudyFiles):
    """A results store rooted at a directory. See the module docstring for the layout."""

    def __init__(self, root: str | os.PathLike) -> None:
        self.root = Path(root)
        self.runs_dir = self.root / R.RUNS_DIR

    def __repr__(self) -> str:
        return f"Store({str(self.root)!r})"

    # -- creating ---------------------------------------------------------------------------
    def ensure(self) -> "Store":
        """Create the store's layout if absent; check the schema version if present. A new
        store's folder appears whole (_create): a launch started beside this one never sees
        the folder without its document."""
        if not self.root.exists():
            self._create()
        self.runs_dir.mkdir(parents=True, exist_ok=True)
        doc_path = self.root / R.STORE_DOC
        if not doc_path.exists():
            atomic_write_json(doc_path, self._new_doc())
        self.check()
        return self

    @staticmethod
    def _new_doc() -> dict[str, Any]:
        return {"schema_version": R.SCHEMA_VERSION, "created": utc_now(),
                "format": "pacebench results store"}

    def _create(self) -> None:
        """The store's folder, runs/ and document made in a hidden folder beside it and renamed
        into place; when another process made the store first (the rename finds it full),
        theirs stays and this one's is removed."""
        self.root.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.root.parent / f".{self.root.name}.{uuid.uuid4().hex[:12]}.new-store"
        tmp.mkdir()  # the user's umask, as any folder of the store
        try:
            (tmp / R.RUNS_DIR).mkdir()
            atomic_write_json(tmp / R.STORE_DOC, self._new_doc())
            try:
                os.rename(tmp, self.root)
            except OSError as err:
                if err.errno not in (errno.EEXIST, errno.ENOTEMPTY):
                    raise
        finally:
            shutil.rmtree(tmp, ignore_errors=True)  # gone already when the rename was done

    def check(self) -> None:
        doc_path = self.root / R.STORE_DOC
        if not doc_path.exists():
            raise StoreError(f"{self.root} is not a Pacebench store (no {R.STORE_DOC}); "
                             "create one with `pacebench study --store DIR` or open_store(DIR, create=True)")
        try:
            doc = json.loads(doc_path.read_text())
        except (OSError, UnicodeDecodeError, ValueError) as err:
            raise StoreError(f"{doc_path} cannot be read as a store's document ({err}); it is "
                             "a JSON object written by Pacebench") from None
        if not isinstance(doc, dict):
            raise StoreError(f"{doc_path} holds {json.dumps(doc)[:40]}, not a store's "
                             "document (a JSON object written by Pacebench)")
        version = doc.get("schema_version")
        if version not in R.READABLE_SCHEMA_VERSIONS:
            raise StoreError(f"{self.root} has schema version {version}; this Pacebench reads "
                             f"{R.READABLE_SCHEMA_VERSIONS}: upgrade Pacebench")

    def new_run(self, doc: Mapping[str, Any], run_id: str | None = None) -> RunWriter:
        """Allocate a run folder (a new attempt of `doc['trial_key']`) and start writing it.

        `doc` holds the run's identity and config (see records.RUN_COLUMNS); `run_id` may be given
        by importers that need stable ids, and then must not exist yet.
        """
        self.ensure()
        doc = dict(doc)
        if run_id is None:
            prefix = f"{slug(doc.get('workload', 'run'))}--{slug(doc.get('algorithm', ''))}--" \
                     f"{doc['trial_key']}"
            attempt = 1 + sum(1 for _ in self.runs_dir.glob(f"{prefix}-a*"))
            while True:
                path = self.runs_dir / f"{prefix}-a{attempt}"
                try:
                    path.mkdir()
                    break
                except FileExistsError:
                    attempt += 1
            doc["attempt"] = attempt
        else:
            path = self.runs_dir / run_id
            path.mkdir()
            doc.setdefault("attempt", 1)
        doc.update(schema_version=R.SCHEMA_VERSION, run_id=path.name, status="running",
                   started_at=utc_now(), ended_at=None,
                   process={"host": socket.gethostname(), "pid": os.getpid(),
                            "started_after_boot": started_after_boot(os.getpid())})
        try:
            atomic_write_json(path / R.RUN_DOC, doc)
        except BaseException:  # e.g. a full disk: leave no empty attempt folder behind
            shutil.rmtree(path, ignore_errors=True)
            raise
        return RunWriter(path, doc)

    def write_sealed_run(self, doc: Mapping[str, Any], evals: "pa.Table | None",  # noqa: F821
                         run_id: str, train: "pa.Table | None" = None,  # noqa: F821
                         durable: bool = True) -> bool:
        """Add a finished run in one step (for importers): its document and its sealed rows.

        `doc` is the run document (see records.RUN_COLUMNS; its status must be terminal);
        `evals` and `train` are the rows as Arrow tables, records.EVAL_COLUMNS / TRAIN_COLUMNS
        and metric columns (`run_id` is set here). The files are written and fsynced in a hidden
        folder under runs/, which is then renamed to `run_id`: readers and crashes see the whole
        run or nothing (a crash leaves only a hidden `.tmp-*` folder that readers ignore).
        `durable=False` skips the fsyncs (fake stores that nobody reads while they are made).
        Thread-safe. Returns False, writing nothing, when run `run_id` already exists. Many runs
        at once: sealed_batch, which makes them durable together.
        """
        with self.sealed_batch(durable) as batch:
            return batch.add(doc, evals, run_id, train) and batch.publish()[run_id]

    def sealed_batch(self, durable: bool = True) -> "SealedBatch":
        """A SealedBatch of this store: finished runs added together (see SealedBatch)."""
        return SealedBatch(self, durable)

    def remove_left_temps(self) -> int:
        """Remove the `.tmp-*` folders under runs/ that killed importers (merge, import) left
        (_temp_left: never a live one's); how many were removed."""
        now, removed = time.time(), 0
        try:
            names = [n for n in os.listdir(self.runs_dir) if n.startswith(".tmp-")]
        except OSError:
            return 0
        for name in names:
            path = self.runs_dir / name
            if not path.is_symlink() and path.is_dir() and temp_left(path, now):
                shutil.rmtree(path, ignore_errors=True)
                removed += 1
        return removed

    # -- the scoring rules and the run index ------------------------------------------------
    def scoring_config(self) -> dict[str, Any] | None:
        """The store's scoring rules (records.SCORING_DOC), or None: score by the plain rules."""
        path = self.root / R.SCORING_DOC
        try:
            return json.loads(self.read_file(path))
        except FileNotFoundError:
            return None
        except UnsafeFile as e:
            raise StoreError(f"{e}: the scoring rules are a regular JSON file") from None
        except json.JSONDecodeError as e:
            raise StoreError(f"{path} is not valid JSON ({e}); delete it to score by the plain "
                             "rules, or import the benchmark's logs again") from None

    def write_scoring_config(self, doc: Mapping[str, Any]) -> None:
        """Record how the store is scored (see workbench.scoring.ScoringConfig.to_dict)."""
        self.ensure()
        atomic_write_json(self.root / R.SCORING_DOC, doc)

    def index_parts(self) -> list[Path]:
        """Parquet parts of the run index readable by this schema version, sorted by name."""
        folder = self.root / R.INDEX_DIR
        if not folder.is_dir():
            return []
        with os.scandir(folder) as entries:  # regular files only: DuckDB would block on a FIFO
            return sorted(folder / e.name for e in entries
                          if e.name.startswith(R.INDEX_PART_PREFIX)
                          and e.name.endswith(".parquet") and e.is_file(follow_symlinks=False))

    def write_index_part(self, table: "pa.Table") -> Path:  # noqa: F821
        """Add one part to the run index, atomically (readers see all of it or none of it). Its
        name ends with the start of its bytes' sha256 (read_index_part checks it)."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        folder = self.root / R.INDEX_DIR
        folder.mkdir(exist_ok=True)
        sink = pa.BufferOutputStream()
        pq.write_table(table, sink)
        data = sink.getvalue().to_pybytes()
        name = f"{R.INDEX_PART_PREFIX}{time.time_ns():020d}-{_digest(data)}.parquet"
        tmp = folder / f".{name}.{uuid.uuid4().hex[:8]}.tmp"
        try:
            with open(tmp, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, folder / name)
        finally:
            tmp.unlink(missing_ok=True)
        return folder / name

    def read_index_part(self, path: Path) -> bytes | None:
        """The bytes of index part `path`, or None when it cannot be read or they are not what
        was written (the digest in its name differs: the part was edited, or torn)."""
        try:
            data = self.read_file(path)
        except OSError:
            return None
        return data if path.name.endswith(f"-{_digest(data)}.parquet") else None

    def older_index_parts(self) -> list[Path]:
        """Parts of the run index written by older index versions (never read)."""
        folder = self.root / R.INDEX_DIR
        if not folder.is_dir():
            return []
        return [p for p in folder.glob("runs-v*.parquet")
                if not p.name.startswith(R.INDEX_PART_PREFIX)]

    def drop_index_parts(self, parts: Iterable[Path]) -> None:
        """Remove index parts (after their rows were written into a merged part)."""
        for part in parts:
            Path(part).unlink(missing_ok=True)

    # -- the layout of other files ---------------------------------------------------------
    def run_path(self, run_id: str) -> Path:
        """The folder of run `run_id` (it may not exist)."""
        return self.runs_dir / run_id

    def read_file(self, path: str | os.PathLike) -> bytes:
        """The bytes of a file of this store: a regular file inside it only (read_regular;
        UnsafeFile otherwise, FileNotFoundError when there is none)."""
        return read_regular(path, self.root)[0]

    # -- run documents ----------------------------------------------------------------------
    def run_names(self) -> list[str] | None:
        """The names of the folders under runs/, sorted, a writer's temporary folder (a name
        starting with '.') left out; None when there is no runs folder. One directory listing,
        which run_ids and signature can share."""
        try:
            return sorted(n for n in os.listdir(self.runs_dir) if not n.startswith("."))
        except OSError:
            return None

    def run_ids(self, known: set[str] | frozenset[str] = frozenset(),
                names: list[str] | None = None) -> list[str]:
        """Ids of the runs in the store (folders holding a run document), sorted. A folder
        named in `known` (runs known to be finished, e.g. listed by the run index) is taken
        without a look inside, so a big indexed store costs one directory listing (none when
        `names`, what run_names returned, is given)."""
        names = self.run_names() if names is None else names
        if not names:
            return []
        runs_dir = str(self.runs_dir)
        # set operations: a loop over 100,000 names in Python costs more than the listing
        # a folder whose run.json is no regular file is a run: its readers skip it and say why
        docless = {n for n in set(names).difference(known)
                   if not os.path.lexists(os.path.join(runs_dir, n, R.RUN_DOC))}
        return [n for n in names if n not in docless] if docless else list(names)

    def run_dirs(self) -> list[Path]:
        """Folders of the runs (hidden folders, i.e. runs being added, are not runs yet)."""
        return [self.runs_dir / run_id for run_id in self.run_ids()]

    def doc_paths(self, run_ids: Iterable[str]) -> list[str]:
        """The run-document files of `run_ids` (for readers that parse many at once)."""
        runs_dir = str(self.runs_dir)
        return [os.path.join(runs_dir, run_id, R.RUN_DOC) for run_id in run_ids]

    def run_doc(self, run_id: str) -> dict[str, Any]:
        """The document of run `run_id`, its status the effective one (a `running` document
        whose process is gone reads `interrupted`)."""
        path = self.runs_dir / run_id / R.RUN_DOC
        try:
            return self._effective(json.loads(self.read_file(path)), path.parent)
        except FileNotFoundError:
            raise UnknownRun(f"no run {run_id!r} in {self.root}") from None

    def _effective(self, doc: dict[str, Any], run_dir: Path) -> dict[str, Any]:
        """A `running` document whose process is gone reads as `interrupted`."""
        if doc.get("status") == "running" and not process_alive(doc.get("process"),
                                                                run_dir / R.HEARTBEAT):
            doc = {**doc, "status": "interrupted",
                   "stop_reason": doc.get("stop_reason") or "process ended without sealing the run"}
        return doc

    def _read_doc(self, run_dir: Path) -> dict[str, Any] | None:
        """A run folder's document as written, or None (with a warning naming the folder) when
        it cannot be read: one bad document never hides the others."""
        try:
            doc = json.loads(self.read_file(run_dir / R.RUN_DOC))
        except FileNotFoundError:
            return None  # removed since it was listed
        except (OSError, ValueError, RecursionError) as exc:
            warnings.warn(f"skipped run {run_dir.name}: its {R.RUN_DOC} cannot be read ({exc})",
                          stacklevel=3)
            return None
        if isinstance(doc, dict):
            doc.setdefault("run_id", run_dir.name)
        problem = R.run_doc_problem(doc)
        if problem:
            warnings.warn(f"skipped run {run_dir.name}: {problem}", stacklevel=3)
            return None
        return doc

    def documents(self, effective: bool = False, unreadable: list[str] | None = None,
                  **equals: Any) -> Iterator[dict[str, Any]]:
        """The run documents, in run-id order, whose keys equal the values given (e.g.
        `study_name="s"`). `effective`: statuses as run_doc gives them (a dead `running` run
        reads `interrupted`), else as written. Unreadable documents are skipped with a warning
        (their run ids appended to `unreadable` when given)."""
        for run_dir in self.run_dirs():
            doc = self._read_doc(run_dir)
            if doc is None:
                if unreadable is not None:
                    unreadable.append(run_dir.name)
                continue
            if effective:
                doc = self._effective(doc, run_dir)
            if all(doc.get(k) == v for k, v in equals.items()):
                yield doc

    def attempts(self, trial_key: str, effective: bool = False) -> list[dict[str, Any]]:
        """The documents of every attempt at trial `trial_key` that this store's writers made,
        oldest first (see `documents` for `effective`)."""
        found = []
        for run_dir in self.runs_dir.glob(f"*--{glob.escape(trial_key)}-a*"):
            doc = self._read_doc(run_dir)
            if doc is not None and doc.get("trial_key") == trial_key:
                found.append(self._effective(doc, run_dir) if effective else doc)
        return sorted(found, key=lambda d: (int(d.get("attempt") or 0), d["run_id"]))

    def done_trial_keys(self) -> set[str]:
        """Trial keys with a complete or diverged attempt: what `--resume` does not run again."""
        return {doc.get("trial_key") for doc in self.documents()
                if doc.get("status") in R.DONE_STATUSES}


    def live_trial_keys(self) -> set[str]:
        """Trial keys with an attempt whose process is alive (this host) or whose heartbeat is
        fresh (another host): running in some launcher now."""
        return {doc.get("trial_key") for doc in self.documents(effective=True, status="running")}

    def latest_eval(self, trial_key: str) -> dict[str, Any] | None:
        """The last eval row flushed by the newest running attempt of `trial_key`, or None."""
        for doc in reversed(self.attempts(trial_key)):
            if doc.get("status") == "running":
                rows = self.live_rows(doc["run_id"], "evals")
                return rows[-1] if rows else None
        return None

    def live_rows(self, run_id: str, kind: str) -> list[dict[str, Any]]:
        """The rows a live run has flushed so far (kind "evals" or "train"); [] once sealed."""
        live = self.runs_dir / run_id / ROW_KINDS[kind][1]
        try:
            return read_jsonl(live, self.root)
        except FileNotFoundError:
            return []

    def row_files(self, kind: str, run_ids: Iterable[str] | None = None,
                  problems: dict[str, str] | None = None) -> tuple[list[str], list[str]]:
        """(sealed Parquet files, non-empty live JSON-lines files) holding the rows of `kind`
        ("evals" or "train") of `run_ids` (None: every run); a sealed file wins over a live one.
        Only regular files inside the store are listed (file_problem): a run with another kind
        of file there is left out, with the reason in `problems` ({run id: why}) when given.
        KeyError naming the first unknown run id."""
        sealed, live = ROW_KINDS[kind]
        if run_ids is None:
            pattern = os.path.join(glob.escape(str(self.runs_dir)), "*", "{}")
            parquet = sorted(glob.glob(pattern.format(sealed)))
            jsonl = sorted(glob.glob(pattern.format(live)))
        else:  # os.path on strings: pathlib took 3x longer on 100,000 runs
            ids = list(dict.fromkeys(run_ids))
            dirs = [os.path.join(str(self.runs_dir), rid) for rid in ids]
            missing = [rid for rid, d in zip(ids, dirs)
                       if not os.path.lexists(os.path.join(d, R.RUN_DOC))]
            parquet = [p for p in (os.path.join(d, sealed) for d in dirs) if os.path.lexists(p)]
            jsonl = [p for p in (os.path.join(d, live) for d in dirs) if os.path.lexists(p)]
            if missing:
                raise UnknownRun(f"no run {missing[0]!r} in {self.root} ({len(missing)} unknown "
                                 "run ids); valid ids are the run_id column of "
                                 "query.runs_frame(store)")
        bad = self._unsafe(parquet + jsonl)
        if bad and problems is not None:
            problems.update(bad)
        parquet = [p for p in parquet if os.path.basename(os.path.dirname(p)) not in bad]
        done = {os.path.dirname(p) for p in parquet}
        return parquet, [p for p in jsonl if os.path.dirname(p) not in done and nonempty(p)
                         and os.path.basename(os.path.dirname(p)) not in bad]

    def _unsafe(self, paths: Iterable[str]) -> dict[str, str]:
        """{run id: why} for the runs among whose files `paths` one may not be opened
        (file_problem); one lstat a file and one a folder."""
        bad: dict[str, str] = {}
        seen: dict[str, bool] = {}  # the folders looked at: each once
        for path in paths:
            try:
                problem = file_problem(path, self.root, seen=seen)
            except OSError:
                continue  # gone since it was listed: the reader retries
            if problem:
                bad.setdefault(os.path.basename(os.path.dirname(path)), problem)
        return bad

    def unsafe_runs(self, run_ids: Iterable[str]) -> dict[str, str]:
        """{run id: why} for the runs of `run_ids` with a file that may not be opened (their
        document or row files: file_problem): readers skip them, naming why."""
        names = (R.RUN_DOC, R.EVALS_SEALED, R.EVALS_LIVE, R.TRAIN_SEALED, R.TRAIN_LIVE)
        runs_dir = str(self.runs_dir)
        return self._unsafe(p for rid in run_ids for p in
                            (os.path.join(runs_dir, rid, n) for n in names) if os.path.lexists(p))

    def signature(self, finished: set[str] | frozenset[str] = frozenset(),
                  names: list[str] | None = None) -> tuple:
        """A cheap fingerprint of the store: it changes when a run folder is added or removed,
        or when a run not in `finished` (runs known to have ended, which never change again)
        writes, seals or ends. A 100,000-run store costs one directory listing (none when
        `names`, what run_names returned, is given) and a few stat calls for its unfinished
        runs."""
        names = self.run_names() if names is None else names
        if names is None:
            return ((self.root / R.STORE_DOC).exists(),)
        files = (R.RUN_DOC, R.EVALS_LIVE, R.EVALS_SEALED, R.TRAIN_LIVE, R.TRAIN_SEALED)
        runs_dir, changing = str(self.runs_dir), []
        for run_id in names:  # os.path on strings: pathlib took 2x as long (5.6 s -> 2.6 s on
            if run_id in finished:  # a never-indexed 100,000-run store, none known finished)
                continue
            folder, stats = os.path.join(runs_dir, run_id), []
            for name in files:
                try:
                    st = os.stat(os.path.join(folder, name))
                    stats.append((st.st_mtime_ns, st.st_size))
                except OSError:
                    stats.append(None)
            changing.append((run_id, *stats))
        return (True, len(names), hash(tuple(names)), tuple(changing))

    # -- changing a run's document after the fact ---------------------------------------------
    def amend(self, run_id: str, /, **fields: Any) -> dict[str, Any]:
        """Add or update fields of a finished run's document (e.g. the early-stopping tuner's
        verdict), atomically; returns the new document. The identity, the status, the times and
        the eval summary of a run (_FIXED) never change, and a run still running cannot be
        amended."""
        fixed = sorted(set(fields) & _FIXED)
        if fixed:
            raise UserError(f"cannot amend {fixed} of run {run_id!r}: a run's identity, status, "
                            "times and eval summary are fixed once written")
        path = self.runs_dir / run_id / R.RUN_DOC
        try:
            doc = json.loads(self.read_file(path))
        except FileNotFoundError:
            raise UnknownRun(f"no run {run_id!r} in {self.root}") from None
        if doc.get("status") not in R.TERMINAL:
            raise UserError(f"run {run_id!r} is {doc.get('status')}: only a finished run can be "
                            "amended")
        doc.update(fields)
        atomic_write_json(path, doc)
        return doc

    def mark_interrupted(self, run_id: str, reason: str, status: str = "interrupted") -> None:
        """Record that a run's process died (called by the launcher that saw it die), as
        `status`: interrupted, or failed when the launcher killed it for the run's own doing
        (the watchdog)."""
        path = self.runs_dir / run_id / R.RUN_DOC
        doc = json.loads(self.read_file(path))
        if doc.get("status") == "running":
            doc.update(status=status, stop_reason=reason, ended_at=utc_now())
            atomic_write_json(path, doc)


def _digest(data: bytes) -> str:
    """The name-part digest of an index part's bytes (16 hex digits of their sha256)."""
    return hashlib.sha256(data).hexdigest()[:16]


def open_store(path: str | os.PathLike, create: bool = False) -> Store:
    """Open the results store at `path` (create it when `create` is true); StoreError when
    `path` is not a store (or, with `create`, is a file)."""
    store = Store(path)
    if store.root.exists() and not store.root.is_dir():
        raise StoreError(f"{store.root} is a file, not a store folder: give a folder's path")
    if create:
        return store.ensure()
    store.check()
    return store

