"""Results never computed twice: a run's reuse key, and finished runs reused from other stores.

A run's `reuse_key` (in its run.json) names everything its result depends on, so that two runs
of one key compute the same thing on the same class of machine; `pacebench study --reuse-from
STORE` copies a finished run of the same key from STORE instead of running the trial again
(workbench/transfer.py copies it, validated like an import), whatever the name of the study
that made it: the copy becomes the planned trial of this study (its study name, trial key,
run id and config are this study's; `reused_from` says where it came from). The key hashes
(reuse_inputs, recorded in full in the run document as `reuse_inputs`):

  trial            the trial's design identity (RunConfig.design_identity: workload,
                   algorithm, ruleset, study, trial, seed, hyperparameters, batch size, step
                   cap, sparsity, sources, precision, draw scheme, ...), without the study's
                   name under draw scheme 2, whose draws depend on the study's design only
                   (workbench/spec.py DRAW_SCHEMES). Under scheme 1 (studies begun before it)
                   the name seeds the draws and the rng_seed, so it stays in.
  config           the rest of the run's config: budget multiplier, stop on target, eval
                   cadence, and every execution option but the device (the hardware, next)
  hardware         the hardware class the device resolved to: a GPU's name, or "cpu: <model>"
  context          what the launcher adds to the run: its workers' hooks (early stopping, a
                   scaling goal, noise measurements) and --nproc-per-node
  workload         the workload's catalog entry (targets, budget, model knobs, cadence)
  algorithm_source, workload_source
                   the sha256 of a plug-in's file (or of its module's file); built-ins are in
  runner_code      the sha256 of the runners/ package's .py sources (computed once per process)
  pacebench, torch their versions
  dataset          the dataset's checksum (runners/data/checksums.py)

Not in it: the study's name (scheme 2), the trial's place in the launch order, its rng_seed (a
function of the trial's identity), the study's design (how many trials it has: more trials
extend a study), --resume and --allow-mixed-execution, the checkpoint cadence, the data folder.
The trial key and --resume are unchanged by it. A run without a key (older stores, imports, a
library call with hooks of its own) is never reused, nor one of key version 1 (made before the
study's name left the key).

`pacebench study --dry-run --reuse-from S` (reuse_plan) says how many planned trials S would
give, and for each other trial the first reuse input that differs from the run in its place
(workload, algorithm, study, trial, seed) in S, e.g. "config.max_steps: 20 here, 10 in S".
"""
from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from workbench.digest import file_sha256
from workbench.records import DONE_STATUSES
from workbench.spec import RunConfig, WorkloadSpec, stable_hash, to_plain

if TYPE_CHECKING:
    from workbench.store import Store

__all__ = ["REUSE_KEY_VERSION", "reuse_finished", "runner_code_hash", "source_hash",
           "reuse_context", "reuse_inputs", "reuse_key", "reuse_record", "reuse_plan",
           "first_difference"]

REUSE_KEY_VERSION = 2  # changes when reuse_inputs changes what it hashes (2: no study name)
RUNNERS = Path(__file__).resolve().parent
# config fields that never change a run's result, or that the trial's identity holds
_NOT_KEYED = ("design", "mixed_execution", "study_name")


@functools.cache
def runner_code_hash() -> str:
    """sha256 over the runners/ package's .py files (their paths and bytes), once per process:
    a change to the training loop, a built-in algorithm or workload changes every key."""
    digest = hashlib.sha256()
    for path in sorted(RUNNERS.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        digest.update(path.relative_to(RUNNERS).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


@functools.cache
def source_hash(spec: str | None, sha256: str | None) -> str | None:
    """The source hash of a plug-in (RunConfig.algorithm_source / workload_source): the file's
    sha256 recorded when the study was planned, else for "package.module:Name" the module
    file's sha256 (found without importing it); None for a built-in (runner_code covers it)."""
    if sha256 or not spec:
        return sha256 or None
    module = spec.rpartition(":")[0] or spec
    try:
        found = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        found = None
    if found is None or not found.origin or not Path(found.origin).is_file():
        return f"module {module} (not found)"
    return file_sha256(found.origin)


def reuse_context(hooks: Mapping[str, Any] | None, nproc_per_node: int = 1) -> dict[str, Any]:
    """The launcher's part of a key: the workers' hooks (but `show_evals`, which changes only
    what is printed) and the data-parallel width."""
    return {"hooks": {k: v for k, v in (hooks or {}).items() if k != "show_evals"},
            "nproc_per_node": int(nproc_per_node)}


def reuse_inputs(config: RunConfig, spec: WorkloadSpec, hardware: str,
                 context: Mapping[str, Any]) -> dict[str, Any]:
    """What a reuse key hashes (the module doc lists it), as a plain dict."""
    import torch

    from runners.data.checksums import dataset_checksum
    from workbench import __version__

    plain = config.to_dict()
    for name in _NOT_KEYED:
        plain.pop(name, None)
    plain["execution"] = {k: v for k, v in plain["execution"].items() if k != "device"}
    return {"version": REUSE_KEY_VERSION, "trial": to_plain(config.design_identity()),
            "config": plain,
            "hardware": hardware, "context": dict(context), "workload": spec.to_dict(),
            "algorithm_source": source_hash(config.algorithm_source, config.algorithm_sha256),
            "workload_source": source_hash(config.workload_source, config.workload_sha256),
            "runner_code": runner_code_hash(), "pacebench": __version__,
            "torch": torch.__version__, "dataset": dataset_checksum(spec.dataset)}


def reuse_key(config: RunConfig, spec: WorkloadSpec, hardware: str | None,
              context: Mapping[str, Any] | None) -> str | None:
    """The run's reuse key (32 hex digits), or None when the hardware or the context is not
    known (such a run is never reused)."""
    return reuse_record(config, spec, hardware, context)["reuse_key"]


def reuse_record(config: RunConfig, spec: WorkloadSpec, hardware: str | None,
                 context: Mapping[str, Any] | None) -> dict[str, Any]:
    """The run document's `reuse_key` and `reuse_inputs` (both None when the hardware or the
    context is not known: such a run is never reused)."""
    if hardware is None or context is None:
        return {"reuse_key": None, "reuse_inputs": None}
    inputs = reuse_inputs(config, spec, hardware, context)
    return {"reuse_key": stable_hash(inputs, 32), "reuse_inputs": inputs}


def _planned_keys(configs: list[RunConfig], context: Mapping[str, Any]
                  ) -> dict[str, tuple[RunConfig, dict | None]]:
    """{reuse key: (the first config of `configs` with it, its reuse inputs)} on this machine;
    a config whose key cannot be known (unknown workload or hardware) is left out."""
    from runners.launch.resume import hardware_class_here
    from workbench.catalog import get_workload

    hardware = {d: hardware_class_here(d) for d in {c.execution.device for c in configs}}
    keys: dict[str, tuple[RunConfig, dict | None]] = {}
    for config in configs:
        try:
            spec = get_workload(config.workload)
        except KeyError:
            continue  # an unknown workload fails when it runs, and says why
        record = reuse_record(config, spec, hardware[config.execution.device], context)
        if record["reuse_key"] is not None:
            keys.setdefault(record["reuse_key"], (config, record["reuse_inputs"]))
    return keys


def _as_planned(doc: Mapping[str, Any], config: RunConfig) -> dict[str, Any]:
    """The fields a copy of run `doc` takes to be the planned trial `config` of this study
    (workbench/transfer.py copy_runs `changes`): its study name, trial key, config and design,
    and a run id made of its trial key."""
    run_id, key = str(doc.get("run_id")), doc.get("trial_key")
    return {"study_name": config.study_name, "trial_key": config.trial_key,
            "config": config.to_dict(), "design": config.design,
            "mixed_execution": config.mixed_execution,
            "run_id": run_id.replace(key, config.trial_key) if isinstance(key, str) and key
            else run_id}


def reuse_finished(configs: list[RunConfig], store: "Store", sources: list["Store"],
                   context: Mapping[str, Any]) -> set[str]:
    """Copy into `store` the finished runs of `sources` whose reuse key one of `configs` (the
    trials about to run) would have on this machine (workbench/transfer.py validates and copies
    them, each recording `reused_from`, each made the planned trial of this study); the trial
    keys of the configs now done by a copy."""
    from workbench.transfer import copy_runs, reusable

    keys = _planned_keys(configs, context)
    found = reusable(sources, keys)
    picked = []
    for key, (source, doc) in found.items():
        config = keys[key][0]
        if doc.get("design_trial_key") != config.design_trial_key:  # forged or corrupted
            warnings.warn(f"skipped run {str(doc.get('run_id'))[:80]} of {source.root}: its "
                          "reuse key is "
                          f"that of trial {config.trial_key}, its design key "
                          f"{str(doc.get('design_trial_key'))[:40]}: not reused", stacklevel=2)
            continue
        picked.append((source, doc, _as_planned(doc, config)))
    return {doc["trial_key"] for doc in copy_runs(store, picked)}


def first_difference(ours: Any, theirs: Any, path: str = "") -> tuple[str, Any, Any] | None:
    """(dotted path, our value, theirs) of the first leaf where two reuse inputs differ, in
    our keys' order (then keys only they have), or None when they are equal."""
    if isinstance(ours, Mapping) and isinstance(theirs, Mapping):
        for key in [*ours, *(k for k in theirs if k not in ours)]:
            if key not in ours or key not in theirs:
                return (f"{path}{key}", ours.get(key, "(none)"), theirs.get(key, "(none)"))
            found = first_difference(ours[key], theirs[key], f"{path}{key}.")
            if found:
                return found
        return None
    return None if ours == theirs else (path.rstrip("."), ours, theirs)


_PLACE = ("workload", "algorithm", "study", "trial", "seed")  # a trial's place in a plan


def reuse_plan(configs: list[RunConfig], sources: list["Store"],
               context: Mapping[str, Any]) -> str:
    """What `study --dry-run --reuse-from` prints: how many of the planned trials `configs`
    a finished run of `sources` would give, and for the others, grouped, the first reuse input
    that differs from the finished run in their place (or that none is there)."""
    from workbench.transfer import reusable

    keys = _planned_keys(configs, context)
    found = reusable(sources, keys)
    reused = {keys[k][0].trial_key for k in found}
    places: dict[tuple, list[dict]] = {}
    for source in sources:
        for doc in source.documents():
            place = tuple(doc.get(k) for k in _PLACE)
            if doc.get("status") in DONE_STATUSES and \
                    all(isinstance(v, (str, int)) for v in place):
                places.setdefault(place, []).append(doc)
    inputs = {config.trial_key: ours for config, ours in keys.values()}
    why: dict[str, list[RunConfig]] = {}
    for config in configs:
        if config.trial_key not in reused:
            reason = _why_not(config, inputs.get(config.trial_key), places)
            why.setdefault(reason, []).append(config)
    where = ", ".join(str(s.root) for s in sources)
    lines = [f"reuse from {where}: {len(configs) - sum(map(len, why.values()))} of "
             f"{len(configs)} planned trials would be reused, {sum(map(len, why.values()))} "
             "would run"]
    for reason, mine in sorted(why.items(), key=lambda item: -len(item[1])):
        c = mine[0]
        lines.append(f"  {len(mine)} trial(s), e.g. {c.algorithm} on {c.workload} study "
                     f"{c.study} trial {c.trial} seed {c.seed}: {reason}")
    return "\n".join(lines)


def _why_not(config: RunConfig, ours: dict | None,
             places: Mapping[tuple, list[dict]]) -> str:
    """Why planned trial `config` (reuse inputs `ours`) finds no run to reuse in its place."""
    if ours is None:
        return "its reuse key cannot be known here (unknown workload or hardware)"
    docs = places.get(tuple(getattr(config, k) for k in _PLACE), [])
    if not docs:
        return "no finished run in its place in the source store(s)"
    keyed = [d for d in docs if isinstance(d.get("reuse_inputs"), Mapping)]
    if not keyed:
        return ("the runs in its place record no reuse inputs (made before reuse key version "
                f"{REUSE_KEY_VERSION}, or imported): never reused")
    found = [f for d in keyed if (f := first_difference(ours, d["reuse_inputs"])) is not None]
    if not found:
        return "the run in its place has the same reuse inputs but another key (edited?)"
    field, mine, theirs = found[0]
    name = json.dumps(field)[1:-1][:80]  # a key of the source's may be anything
    return f"{name} differs: {_shown(mine)} here, {_shown(theirs)} there"


def _shown(value: Any) -> str:
    """A reuse input's value (or name) as JSON in at most 60 characters: one line, control
    characters escaped (a source store's values are not trusted)."""
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= 60 else text[:57] + "..."
