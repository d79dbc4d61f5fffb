"""A run's reuse key: everything its result depends on, hashed (a finished run of the same key
is reused from another store instead of run again: runners/launch/reuse.py).

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
study's name left the key) or 2 (before runners/ moved into its sub-packages).
"""
from __future__ import annotations

import functools
import hashlib
import importlib.util
from pathlib import Path
from typing import Any, Mapping

from workbench.digest import file_sha256
from workbench.spec import RunConfig, WorkloadSpec, stable_hash, to_plain

__all__ = ["REUSE_KEY_VERSION", "runner_code_hash", "source_hash", "reuse_context",
           "reuse_inputs", "reuse_key", "reuse_record"]

REUSE_KEY_VERSION = 3  # changes when reuse_inputs changes what it hashes (2: no study name;
#                        3: runners/ in sub-packages, every runner file's path changed)
RUNNERS = Path(__file__).resolve().parents[1]
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
