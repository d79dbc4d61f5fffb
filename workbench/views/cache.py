"""The dashboard's shared cache: the last read of each store, and the values computed from it.

A read (StoreRead) is the run table and scoring rules of a store at one moment. A session reads
the store again only when its change signature (Store.signature) moved, and takes another
session's read when that one saw the store as it is now.

`panel serve` runs app.py once per browser tab, and every tab's Selection filters the same store.
So that a new tab, or a filter setting seen before, costs nothing, the reads of a store and the
values derived from them are shared by every session of the server process (and by a report).
Shared values are never modified in place.

A value is keyed by its name, the data read it comes from, and the filters it depends on: its
LEVEL. The levels, from the broadest to the narrowest:

  READ     once per data read (e.g. the rulesets the store holds): no filter matters.
  LABELLED once per scope: ruleset, studies and with_adhoc, what workbench/scope.py reads (the
           labelled run table, its columns' codes).
  SCOPE    LABELLED, the hardware filter and the target relaxation: values "over every algorithm and workload" (the
           finished runs and notes of the scope, the full cube), from which the shown ones are
           cut.
  AXIS     SCOPE and the time axis (values over every algorithm and workload that measure time,
           e.g. study times, bootstrap draws).
  SHOWN    every filter, the runs picked for the curves and the time axis (the default).

Ticking algorithms and workloads changes only SHOWN values, which are cut from SCOPE and AXIS
values (Selection.cut), so that a filter change costs a slice, not a recomputation. The last
CACHE_SIZE values are kept, least recently used dropped first.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, Callable

import pandas as pd

from workbench import records as R
from workbench.results import Results, ScoringConfig
from workbench.store import Store, StoreError, open_store

__all__ = ["SharedCache", "SHARED", "StoreRead", "read_store", "LEVELS", "CACHE_SIZE", "READ",
           "LABELLED", "SCOPE", "AXIS", "SHOWN"]

CACHE_SIZE = 64  # cubes and frames kept for recent filter settings (switching back is instant)

# The filters each level depends on (Selection parameter names).
READ: tuple[str, ...] = ()
LABELLED = ("ruleset", "studies", "with_adhoc")
SCOPE = (*LABELLED, "hardware", "relax_targets")
AXIS = (*SCOPE, "time_axis")
SHOWN = ("workloads", "algorithms", *SCOPE, "curve_runs", "time_axis")
LEVELS = {"read": READ, "labelled": LABELLED, "scope": SCOPE, "axis": AXIS, "shown": SHOWN}


class SharedCache:
    """What every dashboard session of one server process shares: per store, the last read
    (`reads`: store path -> whatever Selection keeps of it) and the values computed from it."""

    def __init__(self, size: int = CACHE_SIZE) -> None:
        self.lock = threading.Lock()
        self.size = size
        self.reads: dict[str, "StoreRead"] = {}
        self._values: OrderedDict[tuple, Any] = OrderedDict()

    def value(self, key: tuple, make: Callable[[], Any]) -> Any:
        """The value of `key`, made by `make()` on first use (outside the lock: two sessions
        may make the same value at once, and the second one's is kept)."""
        with self.lock:
            if key in self._values:
                self._values.move_to_end(key)
                return self._values[key]
        value = make()
        with self.lock:
            self._values[key] = value
            while len(self._values) > self.size:  # least recently used first
                self._values.popitem(last=False)
        return value


SHARED = SharedCache()


@dataclass(frozen=True)
class StoreRead:
    """One read of a store, shared by the sessions that show it."""

    runs: pd.DataFrame                      # Results.read_runs of the store (its attrs
                                            # ["skipped"]: the runs it could not read, and why)
    config: ScoringConfig | None            # its scoring rules (None: the plain rules)
    store: Store | None                     # the open store (None: it could not be opened)
    finished: frozenset[str]                # runs that had ended: never written again
    signature: tuple                        # Store.signature at the read, finished runs left out
    message: str = ""                       # why there is nothing to show ("": all is well)

    @cached_property
    def results(self) -> Results | None:
        """workbench.results.Results of the store (None: it could not be opened): the views'
        door to the analysis, one per read."""
        return None if self.store is None else Results(self.store)


def _forget_finished(signature: tuple, finished: frozenset[str]) -> tuple:
    """`signature` as Store.signature would have written it, taken at the same moment, had it
    been told that the runs in `finished` had ended (their entries dropped)."""
    if len(signature) < 4:
        return signature
    return (*signature[:3], tuple(e for e in signature[3] if e[0] not in finished))


def _index_of(root: Path) -> tuple | None:
    """The store's run index as Results.run_index reads it (its runs are finished: never
    written again); None when there is no store."""
    try:
        return Results(open_store(root)).run_index()
    except StoreError:
        return None
    except Exception:  # a hostile part: _read reads the index again and says what is wrong
        return None


def _read(root: Path, signature: tuple, last: StoreRead | None, index: tuple | None = None,
          names: list[str] | None = None) -> StoreRead:
    """A new read of the store (`index`, `names`: its run index and run folders, if just read);
    when it fails, the last read's data with a message saying why."""
    try:
        store = open_store(root)
        results = Results(store)
        runs = results.read_runs(index, names)
        config = results.config()
    except Exception as exc:  # a store being written may be half-readable: say so, keep going
        message = f"No results to show. {exc}" if isinstance(exc, StoreError) else \
            f"Could not read the store at {root}: {type(exc).__name__}: {exc}"
        runs = last.runs if last else pd.DataFrame(columns=list(R.RUN_COLUMNS))
        finished = frozenset(runs.loc[runs["status"].isin(R.TERMINAL), "run_id"].tolist())
        return StoreRead(runs, last.config if last else None, last.store if last else None,
                         finished, _forget_finished(signature, finished), message)
    finished = frozenset(runs.loc[runs["status"].isin(R.TERMINAL), "run_id"].tolist())
    message = "" if len(runs) else (
        f"The store at {root} has no runs yet. Start a study with "
        f"pacebench study --store {root} ...; runs appear here as they are written.")
    return StoreRead(runs, config, store, finished, _forget_finished(signature, finished),
                     message)


def read_store(root: str | Path, last: StoreRead | None = None) -> StoreRead | None:
    """The store at `root` as it is now: None when it did not change since `last` (this
    session's read), else the read another session made of it as it is now, else a new read
    (shared when it succeeded). The signature is taken before reading, so that a run that
    writes during the read is read again next time."""
    root = Path(root)
    key = str(root.resolve())
    shared = SHARED.reads.get(key)
    index = None if last or shared else _index_of(root)  # read once: here and by _read
    finished = last.finished if last else shared.finished if shared else \
        frozenset(index[0]["run_id"].tolist() if index else ())
    store = Store(root)
    names = store.run_names()  # listed once: for the signature and for the read
    signature = store.signature(finished, names)
    if last is not None and signature == last.signature:
        return None
    if shared is not None and shared.signature == _forget_finished(signature, shared.finished):
        return shared
    read = _read(root, signature, last, index, names)
    if not read.message:
        SHARED.reads[key] = read
    return read
