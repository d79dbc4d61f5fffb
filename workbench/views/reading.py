"""What the dashboard reads of a store: its runs as read (workbench/views/cache.py) and as the
scope reads them (workbench/scope.py), the base of the one Selection (workbench/views/selection.py).

The scope is three parameters, as every analysis takes them: `ruleset` (one: rulesets never
share a score; by default the store's only one, else external), `studies` (the study names read,
of the ruleset's studies) and `with_adhoc` (ad-hoc runs of `pacebench run` taken in). From them
come the labelled runs (scope.labelled_runs: every status; an algorithm whose study names ran
different designs shown apart as "<algorithm> [<study name>]") and, in Selection.scoped, the
finished ones everything is scored from. A change of the scope changes what the selection's
filters offer: `_dependants` (the Selection's) gives their new values, set in the same update,
before any view draws.

No widget: the sidebar (workbench/views/sidebar.py) sets these parameters.
"""
from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pandas as pd
import param

from workbench.results import RULESETS_ORDER, Results, Scope, Scoped, ScoringConfig
from workbench.views.cache import LEVELS, SHARED, StoreRead, read_store

__all__ = ["ScopedRead", "SCOPE_PARAMETERS", "keep_and_add", "LOG"]

LOG = logging.getLogger("workbench.views")
# What part of the store is read (workbench/scope.py's options): the labelled table's key.
SCOPE_PARAMETERS = ("ruleset", "studies", "with_adhoc")
_FAILED_SCOPE = "Could not read the store with these settings"


def frozen(value):
    """A parameter's value as part of a cache key (lists as tuples)."""
    return tuple(value) if isinstance(value, list) else value


def keep_and_add(selected: list[str], known: list[str], names: list[str]) -> list[str]:
    """New selection after a reload: keep what was selected, and select names not seen before."""
    return [n for n in names if n in selected or n not in known]


class ScopedRead(param.Parameterized):
    """The store, read when it changes, and the scope it is read with (see the module doc)."""

    store_path = param.String(default="results", doc="Directory of the results store.")
    ruleset = param.Selector(default=None, objects=[], allow_None=True, doc=(
        "The tuning ruleset read (rulesets never share a score): by default the store's only "
        "one, else external (workbench/scope.py)."))
    studies = param.ListSelector(default=[], objects=[], doc=(
        "Study names read, of the ruleset's studies (ad-hoc runs are with_adhoc's)."))
    with_adhoc = param.Boolean(default=False, doc=(
        "Take in the ad-hoc runs (`pacebench run`): each distinct run a trial of a study of "
        "its own name."))
    message = param.String(default="", doc="Why there is nothing to show; empty when all is well.")
    version = param.Integer(default=0, doc="Bumped each time a refresh read new data.")

    def __init__(self, **params) -> None:
        super().__init__(**params)
        self._read: StoreRead | None = None  # the data shown (workbench/views/cache.py)
        self._data_key = 0  # identifies the data read (the same in every session that read it)
        self._rescoping = False  # set while the scope's dependants are being updated
        self.refresh()

    def refresh(self) -> bool:
        """Re-read the store if anything in it changed; returns whether new data was read."""
        read = read_store(self.store_path, self._read)
        if read is None:
            return False
        self._read = read
        self._data_key = hash((str(Path(self.store_path).resolve()), read.signature))
        self._rescoping = True
        try:
            new = self._scope_choices()
            new.update(self._dependants(new["ruleset"], new["studies"], self.with_adhoc))
            self.param.update(**new, message=read.message, version=self.version + 1)
        finally:
            self._rescoping = False
        self._after_scope()
        return True

    def _dependants(self, ruleset, studies, with_adhoc: bool) -> dict:
        """The new values of the parameters that follow the scope (the Selection's filters)."""
        return {}

    def _after_scope(self) -> None:
        """What to do once a new scope and its dependants are set (the Selection: its
        reference)."""

    def _scope_choices(self) -> dict:
        """The ruleset (kept if the store still holds it, else the scope's default) and the
        study names offered under it (the ticked ones kept, new ones ticked); sets the
        parameters' objects, returns their values."""
        rulesets = self.rulesets_present()
        ruleset = self.ruleset if self.ruleset in rulesets else (rulesets or [None])[0]
        self.param.ruleset.objects = rulesets
        names = self.study_names(ruleset)[0]
        studies = keep_and_add(self.studies, self.param.studies.objects, names)
        self.param.studies.objects = names
        return {"ruleset": ruleset, "studies": studies}

    @param.depends(*SCOPE_PARAMETERS, watch=True)
    def _scope_changed(self) -> None:
        """A new ruleset offers its own study names; a new scope its own (labelled) algorithms,
        workloads and hardware: set in one update, before the views (which watch the same
        parameters and run after this, an internal watcher) draw, so that they draw once."""
        if self._rescoping:
            return
        self._rescoping = True
        try:
            new = self._scope_choices()
            new.update(self._dependants(new["ruleset"], new["studies"], self.with_adhoc))
            self.param.update(**new)
        except Exception as exc:  # said on the page (StoreNotice), not only in the log
            LOG.error("the scope of %s could not be read", self.store_path, exc_info=exc)
            first = (str(exc).splitlines() or [""])[0]
            self.message = (f"{_FAILED_SCOPE} ({type(exc).__name__}: {first}): pick another "
                            "ruleset or studies. The server log has the traceback.")
            return
        finally:
            self._rescoping = False
        if self.message.startswith(_FAILED_SCOPE):
            self.message = self._read.message
        self._after_scope()

    # -- the store as read -------------------------------------------------------------------
    @property
    def _runs(self) -> pd.DataFrame:
        """Every run of the store as read (records.RUN_COLUMNS), whatever the scope."""
        return self._read.runs

    @property
    def skipped(self) -> dict[str, str]:
        """Runs of the store left out of the read because their files cannot be read: why."""
        return dict(self._runs.attrs.get("skipped", {}))

    @property
    def store(self):
        """The open Store once a read succeeded, else None."""
        return self._read.store

    @property
    def results(self) -> Results | None:
        """workbench.results.Results of the store read (None: it could not be opened): the
        views' one door to the analysis (its reads and its steps)."""
        return self._read.results

    @property
    def store_config(self) -> ScoringConfig | None:
        """The scoring rules the store records (an AlgoPerf import), None for our own studies."""
        return self._read.config

    def cached(self, name: str, make, level: str | tuple[str, ...] = "shown"):
        """`make()`, computed once per (name, data read, `level`) and shared by the sessions of
        this server process (workbench/views/cache.py). `level`: "read", "labelled", "scope",
        "axis" or "shown" (the default: every filter), or the tuple of parameters the value
        depends on. Never modify the value in place."""
        names = LEVELS[level] if isinstance(level, str) else level
        key = (name, self._data_key, *((n, frozen(getattr(self, n))) for n in names))
        return SHARED.value(key, make)

    # -- the scope ---------------------------------------------------------------------------
    def rulesets_present(self) -> list[str]:
        """The rulesets the store's runs are under, in workbench/scope.py's order (its default
        first)."""
        def make():
            found = set(self._runs["ruleset"].dropna().unique())
            return [r for r in RULESETS_ORDER if r in found] + sorted(found - set(RULESETS_ORDER))
        return self.cached("rulesets_present", make, "read")

    def _ad_hoc_rows(self) -> np.ndarray:
        return self.cached("ad_hoc_rows", lambda: Results.is_ad_hoc(self._runs), "read")

    def study_names(self, ruleset: str | None = None) -> tuple[list[str], list[str]]:
        """(the study names under `ruleset` (default: the selection's), the names of its ad-hoc
        runs): the first are offered as `studies`, the second follow `with_adhoc`."""
        ruleset = self.ruleset if ruleset is None else ruleset

        def make():
            runs = self._runs
            mine = runs["ruleset"].eq(ruleset).to_numpy(bool, na_value=False)
            ad_hoc = self._ad_hoc_rows()
            names = sorted(runs.loc[mine & ~ad_hoc, "study_name"].dropna().unique())
            others = sorted(set(runs.loc[mine & ad_hoc, "study_name"].dropna()) - set(names))
            return names, others
        return SHARED.value(("study_names", self._data_key, ruleset), make)

    def ad_hoc_count(self) -> int:
        """How many ad-hoc runs (`pacebench run`) the store holds under the ruleset."""
        def make():
            mine = self._runs["ruleset"].eq(self.ruleset).to_numpy(bool, na_value=False)
            return int((mine & self._ad_hoc_rows()).sum())
        return self.cached("ad_hoc_count", make, ("ruleset",))

    def scope_for(self, ruleset, studies, with_adhoc: bool) -> Scope | None:
        """The workbench.scope.Scope these settings read: every study name when all are
        ticked, else the ticked ones and the ad-hoc runs' names (with_adhoc decides those);
        None when no study name is ticked although the ruleset has some."""
        names, ad_hoc_names = self.study_names(ruleset)
        ticked = [n for n in names if n in set(studies)]
        if names and not ticked:
            return None
        chosen = () if len(ticked) == len(names) else (*ticked, *ad_hoc_names)
        return Scope(ruleset=ruleset, studies=chosen, with_adhoc=bool(with_adhoc))

    @property
    def scope(self) -> Scope | None:
        """The Scope the dashboard reads (scope_for of its settings): with every filter open,
        `Results(store).score(ruleset=..., studies=..., with_adhoc=...)` of it gives the
        dashboard's numbers."""
        return self.scope_for(self.ruleset, self.studies, self.with_adhoc)

    def _labelled_for(self, ruleset, studies, with_adhoc) -> Scoped:
        """scope.labelled_runs of the store for these settings (cached: shared by every view
        and session, keyed as `cached(..., "labelled")` keys it)."""
        def make() -> Scoped:
            scope = self.scope_for(ruleset, studies, with_adhoc)
            if scope is None:  # no study name ticked: nothing is read
                return Scoped(self._runs.iloc[:0], ruleset,
                              ["no study is ticked: tick one under Studies"])
            return Results.labelled_runs(self._runs, scope)
        key = ("labelled", self._data_key, ("ruleset", ruleset),
               ("studies", frozen(list(studies))), ("with_adhoc", bool(with_adhoc)))
        return SHARED.value(key, make)

    def labelled(self) -> Scoped:
        """The scope's labelled runs (every status) and its notes (scope.labelled_runs)."""
        return self._labelled_for(self.ruleset, self.studies, self.with_adhoc)
