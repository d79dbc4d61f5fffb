"""What a launch checks before it adds runs to a study the store already holds (`--resume`, and
the implicit resumes of `noise` and `set-targets`), so that a study is never two studies mixed.

- **The plan** (check_same_plan): a planned trial must have the settings of the store's runs in
  its place (workload, algorithm, ruleset, study, trial, seed): another search space, budget or
  batch size is StudyChangedError, naming what differs; new places (more trials, studies or
  seeds) extend the study.
- **Its draws** (study_draw_scheme): a study keeps the draw scheme it began with
  (workbench/spec.py DRAW_SCHEMES), so that its trials keep their points.
- **How it runs** (check_mix): the plan's execution options (workbench.spec.ExecutionOptions:
  device, precision, compile, channels_last, threads) and this machine's hardware class (its CPU
  model, or its GPU's name; not compared on Ray, whose trials run elsewhere) must be those of
  the study's finished runs. A difference is ExecutionChangedError (one line naming each field
  with its value in the store and now) unless the mix is allowed (`--allow-mixed-execution`);
  then every new run records the difference (RunConfig.mixed_execution, the run table's
  `mixed_execution`), and workbench/scope.py notes each result that pools runs of different
  execution options or hardware. Precision, compile and channels-last are part of a trial's
  identity: with the mix allowed, a trial finished under other values of them counts as done.
"""
from __future__ import annotations

import contextlib
import subprocess
import sys
from dataclasses import fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from runners.run.env import cpu_model
from workbench.errors import UserError
from workbench.records import DONE_STATUSES
from workbench.spec import DRAW_SCHEME, DRAW_SCHEMES, ExecutionOptions, RunConfig
from workbench.validate import PLACE as _PLACE, design_differences

if TYPE_CHECKING:
    from workbench.store import Store

__all__ = ["queued_on_slurm", "study_status", "STATUS_STATES", "StudyExistsError", "StudyChangedError", "ExecutionChangedError", "check_same_plan",
           "hardware_class", "hardware_class_here", "recorded_mix", "check_mix",
           "study_draw_scheme"]

HARDWARE = "hardware"  # the name of the hardware class among the compared fields


class StudyExistsError(UserError, RuntimeError):
    """The store already holds runs of a study with this name and resume was not asked for."""


class StudyChangedError(StudyExistsError):
    """--resume of a study whose plan gives some trial other settings than its runs in the store
    have (another search space, budget, batch size...): resuming would mix two studies."""


class ExecutionChangedError(StudyChangedError, ValueError):
    """A launch would add runs of other execution options or hardware to a study's finished
    runs, and the mix was not allowed (a ValueError too: bad input, whatever command ran it)."""


def check_same_plan(root: Path, name: str, configs: list[RunConfig], docs: list[dict],
                    execution_may_differ: bool = False) -> dict[str, str]:
    """StudyChangedError when a planned trial of study `name` has other settings than the runs
    in its place (`docs`: the documents of the study's runs in the store at `root`), naming what
    differs; new places (more trials, studies or seeds) are welcome. Runs that are not ours
    (e.g. imported logs) have no plan to differ from.
    `execution_may_differ`: a trial that differs in its execution options only is not a change;
    returns {its planned trial key: the recorded one}."""
    recorded = {}
    for doc in docs:
        with contextlib.suppress(KeyError, TypeError, ValueError):
            old = RunConfig.from_dict(doc["config"])
            recorded.setdefault(tuple(getattr(old, k) for k in _PLACE), old)
    changed, same = [], {}
    for config in configs:  # the checks every door makes (workbench/validate.py)
        old = recorded.get(tuple(getattr(config, k) for k in _PLACE))
        if old is None or old.trial_key == config.trial_key:
            continue
        if not design_differences(old, config, execution_may_differ):
            same[config.trial_key] = old.trial_key
        else:
            changed.append((config, old))
    if changed:
        config, old = changed[0]
        where = ", ".join(f"{k} {getattr(config, k)}" for k in _PLACE)
        what = "; ".join(f"{field}: {stored!r} in the store, {planned!r} now"
                         for field, stored, planned in old.differences(config))
        raise StudyChangedError(
            f"study {name!r} in {root} was planned with other settings: at {where}, "
            f"{what} ({len(changed)} trials differ). Resume with the study's own settings "
            "(more --trials, --studies or --seeds are fine), or use --name for a new study")
    return same


def study_draw_scheme(store: "Store | None", name: str) -> int:
    """The draw scheme of study `name` (workbench/spec.py DRAW_SCHEMES): that of its runs in
    `store` (a run recorded without one was drawn by scheme 1, as every run before schemes
    were recorded), so that --resume continues it with its own draws; DRAW_SCHEME for a study
    the store does not hold (or no store)."""
    if store is None or not store.runs_dir.is_dir():
        return DRAW_SCHEME
    for doc in store.documents(study_name=name):
        scheme = doc.get("draw_scheme", 1)
        return scheme if scheme in DRAW_SCHEMES else 1
    return DRAW_SCHEME


def hardware_class(environment: Any) -> str | None:
    """The class of machine a run document's `environment` names (runners/run/env.py
    capture_environment): its GPU's name on a CUDA device, else "cpu: <model>"; None when it
    does not say (older or imported runs)."""
    if not isinstance(environment, Mapping):
        return None
    if str(environment.get("device", "")).startswith("cuda"):
        return environment.get("gpu") or None
    return f"cpu: {environment['cpu']}" if environment.get("cpu") else None


def hardware_class_here(device: str) -> str | None:
    """hardware_class of runs with --device `device` on this machine. A device other than cpu is
    resolved in a short child process, so that the launcher never holds a CUDA context of its
    own; None when it cannot be resolved there (the runs then fail and say why)."""
    if device == "cpu":
        return f"cpu: {cpu_model()}"
    code = ("import sys, torch; n = sys.argv[1]\n"
            "if n == 'auto': n = 'cuda' if torch.cuda.is_available() else 'cpu'\n"
            "print(torch.cuda.get_device_name(torch.device(n)) if n != 'cpu' else '')")
    try:
        out = subprocess.run([sys.executable, "-c", code, device], capture_output=True,
                             text=True, timeout=120)
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0:
        return None
    name = out.stdout.strip()
    return name or f"cpu: {cpu_model()}"


def recorded_mix(docs: Iterable[Mapping[str, Any]]) -> dict[str, set]:
    """{field: the values the finished runs among `docs` ran with}: each execution option, and
    HARDWARE (their hardware classes, where known). Documents without a readable config (not
    ours: imports) are left out."""
    values: dict[str, set] = {f.name: set() for f in fields(ExecutionOptions)}
    values[HARDWARE] = set()
    for doc in docs:
        if doc.get("status") not in DONE_STATUSES:
            continue  # failed and interrupted runs count nowhere, and run again
        try:
            execution = RunConfig.from_dict(doc["config"]).execution
        except (KeyError, TypeError, ValueError):
            continue
        for f in fields(ExecutionOptions):
            values[f.name].add(getattr(execution, f.name))
        if (where := hardware_class(doc.get("environment"))) is not None:
            values[HARDWARE].add(where)
    return values


def _text(values: Iterable[Any]) -> str:
    return " and ".join(sorted(str(v) for v in values))


def check_mix(docs: Iterable[Mapping[str, Any]], name: str, configs: list[RunConfig],
              allow: bool, compare_hardware: bool = True) -> str | None:
    """What the planned `configs` of study `name` would mix with its finished runs among `docs`
    ("threads: 1 in the store, 2 now; ..."), or None when nothing. Raises ExecutionChangedError
    naming it unless `allow`. `compare_hardware`: whether this machine runs the trials (not so
    on Ray)."""
    before = recorded_mix(docs)
    now: dict[str, set] = {f.name: {getattr(c.execution, f.name) for c in configs}
                           for f in fields(ExecutionOptions)}
    if compare_hardware and before[HARDWARE]:
        here = {hardware_class_here(device) for device in now["device"]}
        now[HARDWARE] = {h for h in here if h is not None}
    differ = [f"{key.replace('_', '-')}: {_text(before[key])} in the store, {_text(values)} now"
              for key, values in now.items() if before[key] and values
              and before[key] != values]
    if not differ:
        return None
    text = "; ".join(differ)
    if not allow:
        raise ExecutionChangedError(
            f"study {name!r} has finished runs of other execution options or hardware than this "
            f"launch ({text}): run it as it ran, or mix them with --allow-mixed-execution "
            "(pacebench study and scale), which the new runs record and score and compare note")
    return text


def queued_on_slurm(store, name: str) -> set[str]:
    """Trial keys of study `name` whose Slurm job is still pending or running (none when the
    study was never submitted to Slurm)."""
    from runners.launch.slurm_backend import queued_trial_keys

    return queued_trial_keys(store.root, name)


STATUS_STATES = ("finished", "running", "queued on Slurm", "failed", "interrupted", "not started")


def study_status(configs: list[RunConfig], store, name: str) -> dict[str, int]:
    """Where each planned trial of study `name` stands (`pacebench study --resume --status`):
    {state: trials} over STATUS_STATES. A trial is finished when an attempt of it is (complete,
    diverged or stalled), else running when an attempt's process is alive, else queued when its
    Slurm job is pending or running, else as its newest attempt ended (failed, interrupted),
    else not started."""
    newest: dict[str, dict] = {}
    finished, running = set(), set()
    for doc in store.documents(effective=True, study_name=name):
        key = doc.get("trial_key")
        if doc.get("status") in DONE_STATUSES:
            finished.add(key)
        elif doc.get("status") == "running":
            running.add(key)
        if (doc.get("started_at") or "") >= (newest.get(key, {}).get("started_at") or ""):
            newest[key] = doc
    queued = queued_on_slurm(store, name)
    counts = dict.fromkeys(STATUS_STATES, 0)
    for config in configs:
        key = config.trial_key
        state = ("finished" if key in finished else "running" if key in running
                 else "queued on Slurm" if key in queued
                 else "failed" if newest.get(key, {}).get("status") == "failed"
                 else "interrupted" if key in newest else "not started")
        counts[state] += 1
    return counts
