"""`pacebench list`: the workloads (built in and installed) and the algorithms, as text, as the
Markdown table of docs/workloads.md, or as JSON."""
from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

__all__ = ["list_names"]


def list_names(args: argparse.Namespace) -> int:
    """`pacebench list`: the workloads and algorithms (`--json`: as data, see _listing)."""
    from runners.algorithms import algorithm_names
    from runners.plugins import ALGORITHM_GROUP, WORKLOAD_GROUP
    from workbench.catalog import CATALOG, PUBLISHED_TARGETS

    if args.markdown:
        print(_catalog_table())
        return 0
    if getattr(args, "json", False):
        print(json.dumps(_listing(), indent=1))
        return 0
    from runners.workloads import WORKLOADS

    print("workloads (built in, from workbench/catalog.py and the runners/workloads/ file named; "
          "* = published target, not yet set by `pacebench set-targets`):")
    for name, w in CATALOG.items():
        t = w.target
        mark = "*" if name in PUBLISHED_TARGETS else " "
        builder = WORKLOADS.get(f"{w.dataset}/{w.model.get('arch')}")
        where = f"{builder.__module__.rpartition('.')[2]}.py" if builder else "?"
        print(f"  {name:28} {t.metric} {'>=' if t.direction == 'max' else '<='} {t.validation:g}"
              f"{mark} (budget {w.budget.seconds:g} s / {w.budget.steps} steps, "
              f"{_cadence_words(w.eval_every)}, {where})  "
              f"{w.description}")
    _list_plugins(WORKLOAD_GROUP, "workload plug-ins")
    print("algorithms (built in; any other is named by --algorithms path/file.py:Class, "
          "package.module:Class, torch.optim:Name or algoperf:path/submission.py):")
    for name in algorithm_names():
        print(f"  {name:28} runners/algorithms/{name}.py, search space {name}.json")
    _list_plugins(ALGORITHM_GROUP, "algorithm plug-ins")
    return 0


def _cadence_words(cadence) -> str:
    """'eval every 25 steps' (and/or 'every 2 s' of training time) for the text listing."""
    parts = ([f"{cadence.steps} steps"] if cadence.steps else []) + \
        ([f"{cadence.seconds:g} s"] if cadence.seconds else [])
    return "eval every " + " / ".join(parts)


def _listing() -> dict:
    """`pacebench list --json`: {"workloads": {name: entry}, "algorithms": {name: entry}} for
    the built-ins and the installed plug-ins (a plug-in that fails to load is named under
    "plugin_errors" with its error). A workload's entry holds its target, its eval cadence, the
    median steps and time to target of its tuned baseline (null: not measured, e.g. a published
    target) and eval_fraction = cadence steps / median steps (null without either)."""
    from runners.plugins import WORKLOAD_GROUP, PluginError, entry_points, load_workloads
    from runners.workloads import WORKLOADS
    from workbench.catalog import CATALOG, get_workload

    root = Path(__file__).resolve().parents[2]
    workloads, errors = {}, {}
    for name, w in CATALOG.items():
        builder = WORKLOADS.get(f"{w.dataset}/{w.model.get('arch')}")
        where = Path(sys.modules[builder.__module__].__file__).resolve().relative_to(root) \
            if builder else None
        workloads[name] = _workload_entry(w, {"source": "built-in",
                                              "builder": str(where) if where else None})
    for plugin, value in entry_points(WORKLOAD_GROUP).items():
        try:
            names = load_workloads(value).names
        except PluginError as err:
            errors[f"workload plug-in {plugin}"] = str(err)
            continue
        for name in names:
            workloads[name] = _workload_entry(get_workload(name), {
                "source": "installed plug-in", "plugin": plugin, "entry_point": value})
    algorithms = dict(_algorithm_entries(root, errors))
    return {"workloads": workloads, "algorithms": algorithms,
            **({"plugin_errors": errors} if errors else {})}


def _workload_entry(w, where: dict) -> dict:
    """One workload of `list --json`: target, cadence, medians from its target record."""
    from workbench.catalog import median_steps_to_target, target_record

    t, cadence = w.target, w.eval_every
    steps = median_steps_to_target(w.name)
    seconds = (target_record(w.name) or {}).get("median_time_to_target_s")
    seconds = float(seconds) if isinstance(seconds, (int, float)) and \
        math.isfinite(seconds) else None
    return {"target": {"metric": t.metric, "direction": t.direction,
                       "validation": t.validation, "test": t.test},
            "eval_every": {k: v for k, v in (("steps", cadence.steps),
                                             ("seconds", cadence.seconds)) if v is not None},
            "median_steps_to_target": steps, "median_time_to_target_s": seconds,
            "eval_fraction": cadence.steps / steps if steps and cadence.steps else None,
            "step_hint": w.step_hint,
            "budget": {"seconds": w.budget.seconds, "steps": w.budget.steps}, **where}


def _algorithm_entries(root: Path, errors: dict):
    """(name, entry) of each built-in algorithm (its file and search space file, relative to
    the repository) and each installed algorithm plug-in (its entry point and search space: a
    file, or the space itself when its class gives or derives it); errors go into `errors`."""
    from runners.algorithms import ALGORITHMS, search_space_path
    from runners.algorithms.sources import AlgorithmSource, search_space_of
    from runners.plugins import ALGORITHM_GROUP, PluginError, entry_points

    for name, cls in ALGORITHMS.items():
        file = Path(sys.modules[cls.__module__].__file__).resolve().relative_to(root)
        yield name, {"source": "built-in", "file": str(file),
                     "search_space": str(search_space_path(name).relative_to(root))}
    for name, value in entry_points(ALGORITHM_GROUP).items():
        try:
            space = search_space_of(AlgorithmSource(name, value, "plugin"))
        except PluginError as err:
            errors[f"algorithm plug-in {name}"] = str(err)
            continue
        yield name, {"source": "installed plug-in", "entry_point": value,
                     "search_space": str(space) if isinstance(space, Path) else space}


def _list_plugins(group: str, title: str) -> None:
    """The installed entry points of `group`: name, where from, and a workload factory's
    entries (a plug-in that fails to load is listed with its error)."""
    from runners.plugins import WORKLOAD_GROUP, PluginError, entry_points, load_workloads

    installed = entry_points(group)
    print(f"{title} (installed, entry-point group {group}): {'' if installed else 'none'}")
    for name, value in installed.items():
        detail = ""
        if group == WORKLOAD_GROUP:
            try:
                detail = f" -> {', '.join(load_workloads(value).names)}"
            except PluginError as err:
                detail = f" (cannot load: {err})"
        print(f"  {name:28} {value}{detail}")


def _catalog_table() -> str:
    """The workload catalog as a Markdown table: data, splits, metric, targets, what the
    target-setting record measured (reach rate, noise floor, median time to target), the
    median steps to target (with how many reruns reached it) and the eval cadence."""
    from workbench.catalog import CATALOG, DATASETS, PUBLISHED_TARGETS, noise_floor_of, \
        target_record

    rows = ["| workload | data | train / validation / test | metric | target (validation / "
            "test) | reach rate | noise floor (CoV) | median time to target | median steps to "
            "target | eval every |",
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for name, w in CATALOG.items():
        data, splits = DATASETS.get(w.dataset, (w.dataset, "?"))
        t, floor = w.target, noise_floor_of(name)
        sign = ">=" if t.direction == "max" else "<="
        if name in PUBLISHED_TARGETS:
            measured = ["published target", "not measured", "not measured"]
        elif floor is None:
            record = target_record(name) or {}
            median = record.get("median_time_to_target_s")
            measured = [f"median of {len(record.get('reruns', []))} reruns (old rule)",
                        "not measured", f"{median:.2f} s" if median else "n/a"]
        else:
            cov = "n/a" if math.isnan(floor.cov) else f"{100 * floor.cov:.1f} %"
            measured = [f"{floor.reached} of {floor.runs}", cov, f"{floor.median_s:.2f} s"]
        measured += [_steps_cell(target_record(name) or {}),
                     _cadence_words(w.eval_every).removeprefix("eval every ")]
        rows.append(f"| `{name}` | {data} | {splits} | {t.metric} | {sign} {t.validation:g} / "
                    f"{t.test:g} | " + " | ".join(measured) + " |")
    return "\n".join(rows)


def _steps_cell(record: dict) -> str:
    """'684.5 (10 of 10)': a record's median steps to target and its reach count."""
    block = record.get("steps_to_target")
    if record.get("median_steps_to_target") is None or not isinstance(block, dict):
        return "not measured"
    return f"{record['median_steps_to_target']:g} ({block['reached']} of {block['runs']})"
