"""Which runs an analysis reads: one store holds every kind of run, and every surface reads it.

A store may hold several studies, ad-hoc runs (`pacebench run`), both tuning rulesets, runs that
failed and runs still going. Before a cube is built, `scoped_runs` makes the run table one
analysis can read, and says in `notes` what it left out or changed, one line each:

- **One ruleset.** External and self-tuning never share a score: `ruleset` picks one; by default
  the store's only one, else "external" (a note names the other and how to score it).
- **Ad-hoc runs** (records.py: launched by `pacebench run`) are left out unless `with_adhoc`;
  taken in, each distinct run (trial key) of an ad-hoc name is a trial of one study of its own.
- **Tuning runs** (records.py `phase` "tuning": the sweeps of `pacebench tune`, a quarter of
  the step budget each) are always left out: they are how a search space was measured, not
  trials of a study (a note counts them); documents without `phase` read as not tuning.
- **Study names.** `studies` narrows to some names. An algorithm whose runs come from several
  study names has them pooled (its studies renumbered across the names) when every name ran it
  with the same design (RunConfig.design: trials per study, search space, execution options;
  for runs recorded without one, trials per study, device and precision); otherwise each name's
  runs are shown apart, as "<algorithm> [<study name>]", and a note says why and how to pick one.
- **One trial, counted once.** Pooled names whose trials were drawn by design, not by name
  (draw scheme 2, workbench/spec.py DRAW_SCHEMES) hold the same trials: runs of one
  `design_trial_key` under several names are one trial, not independent draws. Its runs under
  one name only are kept (the name holding most of the study's trials), the names' copies of
  one study are one study, and a note and `duplicate_trials` ({algorithm: trials held by
  several names}) say so.
- **Finished trials only.** A trial counts through its latest finished attempt (complete,
  diverged, stalled: records.DONE_STATUSES); a trial with none (failed, interrupted, running)
  is neither a time nor a miss: it is left out and counted in `failed` per algorithm and
  workload. A study with fewer than half of its trials finished is dropped (a note says which).
- **Mixed set-ups.** When the runs read ran with different execution options (records.py
  `execution`: device, precision, threads, compile, channels-last) or on different hardware
  (`hardware`), a note says so and counts the runs of each (a study resumed with
  --allow-mixed-execution, or studies run on two machines): their times were not measured alike.
- `exclude_compile` takes each run's compile seconds off its times (cubes.excluding_compile).
- `relax_targets` R scores against easier targets (spec.relaxed_goal, AlgoPerf's relaxation: a
  minimised target times 1 + R, a maximised one times 1 - R): the first hits are recomputed
  from the eval rows (workbench.query.first_hits, which reads the store) and put in the run
  table by `relaxed_runs`, before compile seconds are taken off; a note says so.

Pure functions of the run table (records.RUN_COLUMNS); no store access.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pandas as pd

from workbench import records as R
from workbench.cubes import excluding_compile
from workbench.errors import UserError
from workbench.spec import check_relax

__all__ = ["Scope", "Scoped", "scoped_runs", "labelled_runs", "finished_runs", "relaxed_runs",
           "with_relaxed_targets", "is_ad_hoc", "is_tuning", "RULESETS_ORDER"]

RULESETS_ORDER = ("external", "self")  # the default ruleset of a store holding both: the first


@dataclass(frozen=True)
class Scope:
    """What part of a store an analysis reads, and how (every surface takes these options)."""

    ruleset: str | None = None          # None: the store's only ruleset, else "external"
    studies: tuple[str, ...] = ()       # study names to read (empty: every name)
    with_adhoc: bool = False            # take in the ad-hoc runs (`pacebench run`)
    time_axis: str = "train"            # train | wall | steps (workbench.cubes.on_time_axis)
    exclude_compile: bool = False       # take compile seconds off the times
    relax_targets: float = 0.0          # targets made easier by this share, in [0, 1)
                                        # (spec.relaxed_goal); 0: the recorded targets

    def __post_init__(self) -> None:
        object.__setattr__(self, "studies", tuple(self.studies or ()))
        object.__setattr__(self, "relax_targets", check_relax(self.relax_targets))


@dataclass
class Scoped:
    """The run table an analysis reads, and what was done to make it."""

    runs: pd.DataFrame                  # the runs, ready for cubes.final_cube
    ruleset: str | None                 # the ruleset read (None: the store has no runs)
    notes: list[str] = field(default_factory=list)  # one line per thing left out or changed
    failed: dict[str, dict[str, int]] = field(default_factory=dict)  # algorithm -> workload ->
                                        # trials with no finished attempt
    shown_apart: dict[str, list[str]] = field(default_factory=dict)  # algorithm -> its names
    duplicates: dict[str, int] = field(default_factory=dict)  # algorithm -> trials that several
                                        # study names held, counted once (see the module doc)

    def to_json(self) -> dict:
        return {"ruleset": self.ruleset, "notes": list(self.notes),
                "failed_trials": {a: dict(w) for a, w in self.failed.items()},
                "shown_apart": {a: list(n) for a, n in self.shown_apart.items()},
                **self._reused_json(),
                **({"duplicate_trials": dict(self.duplicates)} if self.duplicates else {})}

    def _reused_json(self) -> dict:
        """{"reused_runs": {algorithm: runs copied from other stores}}, when there are any."""
        if "reused_from" not in self.runs or not self.runs["reused_from"].notna().any():
            return {}
        reused = self.runs[self.runs["reused_from"].notna()]["algorithm"].value_counts()
        return {"reused_runs": {str(a): int(n) for a, n in reused.sort_index().items()}}


def is_ad_hoc(runs: pd.DataFrame) -> np.ndarray:
    """Which rows are ad-hoc runs (records.py: launched by `pacebench run`, or in documents that
    do not say, named records.AD_HOC_NAME)."""
    by = runs["launched_by"].astype(object)
    unknown = by.isna().to_numpy(bool)
    return (by.eq("run").to_numpy(bool, na_value=False)
            | (unknown & runs["study_name"].eq(R.AD_HOC_NAME).to_numpy(bool, na_value=False)))


def is_tuning(runs: pd.DataFrame) -> np.ndarray:
    """Which rows are tuning runs (records.py `phase` "tuning": `pacebench tune`'s sweeps); a
    table or document without the field reads as not tuning."""
    if "phase" not in runs:
        return np.zeros(len(runs), dtype=bool)
    return runs["phase"].astype(object).isin(R.PHASES).to_numpy(bool, na_value=False)


def _tuning(runs: pd.DataFrame, notes: list[str]) -> pd.DataFrame:
    mask = is_tuning(runs)
    if not mask.any():
        return runs
    notes.append(f"left out {int(mask.sum())} tuning runs (pacebench tune: a quarter of the "
                 "step budget each, how a search space was measured)")
    return runs[~mask]


def _one_ruleset(runs: pd.DataFrame, wanted: str | None, notes: list[str]
                 ) -> tuple[pd.DataFrame, str | None]:
    present = [r for r in RULESETS_ORDER if (runs["ruleset"] == r).any()]
    present += sorted(set(runs["ruleset"].dropna().unique()) - set(present))  # no Arrow loop
    if wanted is not None:
        if wanted not in present:
            raise UserError(f"--ruleset {wanted}: the store's runs are under "
                            f"{', '.join(present) or 'no ruleset'}")
        chosen = wanted
    elif not present:
        return runs, None
    else:
        chosen = present[0]
    for other in present:
        if other != chosen:
            n = int((runs["ruleset"] == other).sum())
            notes.append(f"left out {n} runs of the {other} ruleset (rulesets never share a "
                         f"score): --ruleset {other} reads them")
    return runs[runs["ruleset"] == chosen], chosen


def _ad_hoc(runs: pd.DataFrame, take: bool, notes: list[str]) -> pd.DataFrame:
    mask = is_ad_hoc(runs)
    if not mask.any():
        return runs
    if not take:
        notes.append(f"left out {int(mask.sum())} ad-hoc runs (pacebench run): --with-adhoc "
                     "takes them in")
        return runs[~mask]
    # each distinct ad-hoc run is a trial of one study of its own name: numbered in start order
    ad = runs[mask].sort_values("started_at", kind="stable")
    group = ["study_name", "algorithm", "workload", "ruleset"]
    first = ad.drop_duplicates("trial_key")
    rank = first.groupby(group, sort=False).cumcount()
    trial = dict(zip(first["trial_key"], rank))
    ad = ad.assign(study=0, seed=0, trial=ad["trial_key"].map(trial).astype("Int64"))
    return pd.concat([runs[~mask], ad]).sort_index()


def _studies(runs: pd.DataFrame, names: tuple[str, ...]) -> pd.DataFrame:
    if not names:
        return runs
    known = sorted(runs["study_name"].dropna().unique())
    unknown = [n for n in names if n not in known]
    if unknown:
        raise UserError(f"--study {', '.join(unknown)}: not in the store; its study names are "
                        f"{', '.join(known) or 'none'}")
    return runs[runs["study_name"].isin(names)]


def _design_keys(runs: pd.DataFrame) -> pd.Series:
    """Per (algorithm, study_name): its design, or for runs recorded without one (older stores,
    imports) "trials <n>, <device>, <precision>"; several in one group read as distinct."""
    trials = runs.groupby(["algorithm", "study_name", "workload", "study"])["trial"].nunique()
    per_name = trials.groupby(level=["algorithm", "study_name"]).max()
    out = {}
    for (algorithm, name), group in runs.groupby(["algorithm", "study_name"]):
        designs = set(group["design"].dropna())
        if designs:
            key = "|".join(sorted(designs))
        else:
            key = (f"trials {per_name[(algorithm, name)]}, "
                   f"{'/'.join(sorted(set(group['device'].dropna().astype(str))))}, "
                   f"{'/'.join(sorted(set(group['precision'].dropna().astype(str))))}")
        out[(algorithm, name)] = key
    return pd.Series(out, dtype=object)


class _Pairs:
    """Union-find over (study name, study) pairs: the names' copies of one study."""

    def __init__(self) -> None:
        self.parent: dict[tuple, tuple] = {}

    def find(self, pair: tuple) -> tuple:
        self.parent.setdefault(pair, pair)
        while self.parent[pair] != pair:
            self.parent[pair] = self.parent[self.parent[pair]]
            pair = self.parent[pair]
        return pair

    def join(self, pairs: list[tuple]) -> None:
        roots = sorted({self.find(p) for p in pairs})
        for root in roots[1:]:
            self.parent[root] = roots[0]


def _one_per_trial(mine: pd.DataFrame) -> tuple[pd.DataFrame, int, list[str]]:
    """(one algorithm's pooled runs `mine` with each trial that several study names hold, one
    design_trial_key, kept under one name, and each study those names share labelled as the
    one holding most of its trials; the number of such trials; the names that shared)."""
    if "design_trial_key" not in mine:  # a table made before the column (tests, notebooks)
        return mine, 0, []
    keyed = mine[mine["design_trial_key"].notna()]
    names = keyed.groupby("design_trial_key")["study_name"].nunique()
    shared = set(names[names > 1].index)
    if not shared:
        return mine, 0, []
    both = keyed[keyed["design_trial_key"].isin(shared)]
    target = _shared_studies(mine, both)
    done = both[both["status"].isin(R.DONE_STATUSES)]
    finished = set(zip(done["design_trial_key"], done["study_name"]))
    rows = list(zip(mine["design_trial_key"], mine["study_name"], target))
    keep_name: dict[str, str] = {}  # of a shared trial, a name with a finished run, the
    for key, name, pair in sorted(  # shared study's own name first
            (r for r in rows if r[0] in shared),
            key=lambda r: ((r[0], r[1]) not in finished, r[1] != r[2][0], r[1])):
        keep_name.setdefault(key, name)
    keep = [key not in shared or name == keep_name[key] for key, name, _ in rows]
    out = mine[keep].assign(study_name=[t[0] for t, k in zip(target, keep) if k],
                            study=[t[1] for t, k in zip(target, keep) if k])
    clash = out.groupby(["study_name", "workload", "study", "trial", "seed"])[
        "design_trial_key"].nunique()
    if (clash > 1).any():  # two trials in one place (a mixed-execution resume): not one study
        out = mine[keep]
    return (out.astype({"study": mine["study"].dtype}), len(shared),
            sorted(set(both["study_name"])))


def _shared_studies(mine: pd.DataFrame, both: pd.DataFrame) -> list[tuple]:
    """For each row of `mine`, the (study name, study) it belongs to: a study that several
    names hold (their runs `both` share design keys) is labelled as the name holding most of
    its trials (then the first name); other rows keep their own."""
    pairs = _Pairs()
    for _, group in both.groupby("design_trial_key"):
        pairs.join(list(set(zip(group["study_name"], group["study"]))))
    held = mine.groupby(["study_name", "study"])["design_trial_key"].nunique()
    canonical: dict[tuple, tuple] = {}
    for pair in sorted(pairs.parent, key=lambda p: (-held.get(p, 0), p)):
        canonical.setdefault(pairs.find(pair), pair)
    return [canonical[pairs.find(p)] if p in pairs.parent else p
            for p in zip(mine["study_name"], mine["study"])]


def _pool_or_split(runs: pd.DataFrame, notes: list[str], apart: dict,
                   duplicates: dict[str, int]) -> pd.DataFrame:
    names = runs.groupby("algorithm")["study_name"].nunique()
    several = names[names > 1].index
    if len(several) == 0:
        return runs
    keys = _design_keys(runs[runs["algorithm"].isin(several)])
    parts = [runs[~runs["algorithm"].isin(several)]]
    for algorithm in several:
        mine = runs[runs["algorithm"] == algorithm]
        own = keys[algorithm]
        if own.nunique() == 1:  # one design: the names' studies are one sample, renumbered
            mine, same, names = _one_per_trial(mine)
            if same:
                duplicates[algorithm] = same
                notes.append(f"{algorithm}: {same} trials are in more than one of the studies "
                             f"{', '.join(names)} (one design, drawn alike: the same trials), "
                             "counted once")
            pairs = mine[["study_name", "study"]].drop_duplicates().sort_values(
                ["study_name", "study"])
            number = {(n, s): i for i, (n, s) in enumerate(pairs.itertuples(index=False))}
            pooled = mine.assign(study=[number[(n, s)] for n, s in
                                        zip(mine["study_name"], mine["study"])])
            parts.append(pooled.astype({"study": "Int64"}))
            notes.append(f"{algorithm}: the studies of {', '.join(own.index)} pooled (one "
                         "design)")
            continue
        labelled = mine.assign(algorithm=[f"{algorithm} [{n}]" for n in mine["study_name"]])
        parts.append(labelled)
        apart[algorithm] = list(own.index)
        notes.append(f"{algorithm}: studies {', '.join(own.index)} ran it with different designs "
                     f"(trials per study, search space or execution options), so they are shown "
                     f"apart as {', '.join(f'{algorithm} [{n}]' for n in own.index)}: --study "
                     "NAME reads one")
    return pd.concat(parts).sort_index()


_TRIAL = ["study_name", "algorithm", "workload", "ruleset", "study", "trial", "seed"]
_STUDY = _TRIAL[:5]


def _finished_only(runs: pd.DataFrame, notes: list[str],
                   failed: dict[str, dict[str, int]]) -> pd.DataFrame:
    """The finished attempts; trials with none counted in `failed`; studies with fewer than half
    their trials finished dropped."""
    done = runs["status"].isin(R.DONE_STATUSES).to_numpy(bool)
    flags = runs[_TRIAL].assign(_done=done)
    trials = flags.groupby(_TRIAL, dropna=False, sort=False)["_done"].any().reset_index()
    for (algorithm, workload), n in trials[~trials["_done"]].groupby(
            ["algorithm", "workload"]).size().items():
        failed.setdefault(str(algorithm), {})[str(workload)] = int(n)
    if failed:
        total = sum(n for w in failed.values() for n in w.values())
        notes.append(f"left out {total} trials with no finished attempt (failed, interrupted or "
                     "running): neither a time nor a miss")
    share = trials.groupby(_STUDY, dropna=False, sort=False)["_done"].mean()
    short = share[share < 0.5]
    kept = runs[done]
    if len(short):
        index = pd.MultiIndex.from_frame(kept[_STUDY])
        kept = kept[~index.isin(short.index)]
        where = "; ".join(f"{a} on {w}, study {s} of {n}" for n, a, w, _, s in short.index[:3])
        notes.append(f"dropped {len(short)} studies with fewer than half their trials finished "
                     f"({where}{'; ...' if len(short) > 3 else ''})")
    return kept


def _mixed_setups(runs: pd.DataFrame, notes: list[str]) -> None:
    """A note when `runs` ran with different execution options or on different hardware, with
    the number of runs of each set-up (the three largest)."""
    if runs.empty:
        return
    how = runs["execution"].astype(object)
    if how.isna().any():  # runs recorded before `execution`: their device and precision
        how = (runs["device"].astype(object).fillna("?").astype(str) + ", "
               + runs["precision"].astype(object).fillna("?").astype(str))
    where = runs["hardware"].astype(object).fillna("unrecorded hardware").astype(str)
    setups = pd.Series(how.fillna("?").astype(str) + " on " + where).value_counts()
    if len(setups) < 2:
        return
    shown = "; ".join(f"{n} run{'s' if n != 1 else ''} {setup}"
                      for setup, n in setups.iloc[:3].items())
    notes.append(f"pooled runs of {len(setups)} different execution options or hardware "
                 f"({shown}{'; ...' if len(setups) > 3 else ''}): their times were not "
                 "measured alike")


def _reused(runs: pd.DataFrame, notes: list[str]) -> None:
    """A note counting the runs copied from other stores (`pacebench study --reuse-from`), per
    algorithm: they were timed at another moment, perhaps on another machine."""
    if runs.empty or "reused_from" not in runs:
        return
    reused = runs[runs["reused_from"].notna()]
    if reused.empty:
        return
    per = "; ".join(f"{a}: {n}" for a, n in reused["algorithm"].value_counts().sort_index().items())
    notes.append(f"{len(reused)} of {len(runs)} runs reused from other stores ({per}): timed at "
                 "another moment, perhaps on another machine; the machine-speed check of "
                 "compare covers them, and its verdict by steps is shown beside")


def labelled_runs(runs: pd.DataFrame, scope: Scope = Scope()) -> Scoped:
    """Every attempt (any status) of the runs `scope` reads: one ruleset, the study names asked
    for, ad-hoc runs only when asked, an algorithm's study names pooled or shown apart (see the
    module doc). What a view of runs (statuses, curves) shows."""
    notes: list[str] = []
    runs, ruleset = _one_ruleset(runs, scope.ruleset, notes)
    runs = _studies(runs, scope.studies)
    runs = _tuning(runs, notes)
    runs = _ad_hoc(runs, scope.with_adhoc, notes)
    apart: dict[str, list[str]] = {}
    duplicates: dict[str, int] = {}
    runs = _pool_or_split(runs, notes, apart, duplicates)
    return Scoped(runs, ruleset, notes, {}, apart, duplicates)


def finished_runs(labelled: Scoped, exclude_compile: bool = False) -> Scoped:
    """The runs of `labelled` a result is made of: each trial's finished attempts (trials with
    none counted in `failed`), studies with fewer than half their trials finished dropped,
    compile seconds taken off the times if asked."""
    notes, failed = list(labelled.notes), {}
    runs = _finished_only(labelled.runs, notes, failed)
    _mixed_setups(runs, notes)
    _reused(runs, notes)
    if exclude_compile:
        runs = excluding_compile(runs)
    return Scoped(runs.reset_index(drop=True), labelled.ruleset, notes, failed,
                  dict(labelled.shown_apart), dict(labelled.duplicates))


def relaxed_runs(labelled: Scoped, hits: pd.DataFrame, relax: float) -> Scoped:
    """`labelled` with each run's first-hit columns (query.FIRST_HIT_COLUMNS) taken from `hits`
    (query.first_hits of its runs at `relax`; a run `hits` lacks reads as a miss), and a note
    saying the targets were relaxed. relax = 0: `labelled` as it is."""
    if not check_relax(relax):
        return labelled
    columns = [c for c in hits.columns if c != "run_id"]
    by_id = hits.drop_duplicates("run_id").set_index("run_id")
    found = by_id.reindex(labelled.runs["run_id"].astype(str).to_numpy())
    runs = labelled.runs.copy()
    for c in columns:
        values = found[c].to_numpy()
        runs[c] = pd.Series(values, index=runs.index).astype(runs[c].dtype) \
            if c != "reached_target" else pd.Series(values, index=runs.index).eq(True)
    note = (f"targets relaxed by {100 * relax:g} % (a minimised target times {1 + relax:g}, a "
            f"maximised one times {1 - relax:g}): first hits recomputed from the eval rows")
    return Scoped(runs, labelled.ruleset, [*labelled.notes, note], dict(labelled.failed),
                  dict(labelled.shown_apart), dict(labelled.duplicates))


def scoped_runs(runs: pd.DataFrame, scope: Scope = Scope(),
                first_hits: Callable[[pd.DataFrame, float], pd.DataFrame] | None = None
                ) -> Scoped:
    """The run table an analysis of `scope` reads (see the module doc): labelled_runs, then
    (relax_targets > 0) relaxed_runs with `first_hits(runs, relax)` (query.first_hits over the
    store; needed then: it reads eval rows), then finished_runs."""
    labelled = with_relaxed_targets(labelled_runs(runs, scope), scope.relax_targets,
                                    first_hits)
    return finished_runs(labelled, scope.exclude_compile)


def with_relaxed_targets(labelled: Scoped, relax: float,
                         first_hits: Callable[[pd.DataFrame, float], pd.DataFrame] | None
                         ) -> Scoped:
    """relaxed_runs of `labelled` with `first_hits(its finished runs, relax)` (query.first_hits
    over the store: it reads their eval rows); `labelled` itself when relax is 0."""
    if not check_relax(relax):
        return labelled
    if first_hits is None:
        raise ValueError("relaxed targets need the eval rows: pass first_hits")
    finished = labelled.runs[labelled.runs["status"].isin(R.DONE_STATUSES)]
    return relaxed_runs(labelled, first_hits(finished, relax), relax)
