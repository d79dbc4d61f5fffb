"""What `pacebench study --dry-run` prints: each algorithm's search space and its origin, the
planned trials of each study (each checked by building its algorithm) and the draw scheme;
nothing is run or written (runners/launch/study.py plans, this module only describes)."""
from __future__ import annotations

import json
from typing import Any, Mapping

from runners.tuning import DRAW_WORDS, ChosenSpace
from workbench.spec import DRAW_SCHEME, RunConfig, StudySpec

__all__ = ["describe_plan", "space_rows"]

_ORIGIN_WORDS = {"declared": "the class's search_space", "file": "",
                 "signature": "derived from the constructor's defaults",
                 "tuned": "measured by `pacebench tune`"}


def describe_plan(spec: StudySpec, configs: list[RunConfig],
                  chosen: Mapping[str, ChosenSpace],
                  sources: Mapping[str, Any] | None = None) -> str:
    """What `pacebench study --dry-run` prints: per algorithm, where it comes from, its search
    space and that space's origin, and each study's trials (hyperparameters shown to 4
    significant digits), each checked by building the algorithm; nothing is run or written."""
    from runners.algorithms.sources import describe

    runs = len(configs)
    lines = [f"study {spec.name!r} (dry run): {len(spec.workloads)} workload(s) "
             f"({', '.join(spec.workloads)}) x {len(spec.algorithms)} algorithm(s) x "
             f"{spec.studies} study(ies) x {spec.trials if spec.ruleset == 'external' else 1} "
             f"trial(s) x {len(spec.seeds)} seed(s) = {runs} runs, ruleset {spec.ruleset}"]
    for algorithm in spec.algorithms:
        source = (sources or {}).get(algorithm)
        lines.append(describe(source) if source is not None else algorithm)
        space = chosen.get(algorithm)
        if space is None:
            lines.append("  no search space: self-tuning runs its defaults once per study")
        else:
            where = space.file or _ORIGIN_WORDS[space.origin]
            lines.append(f"  search space, origin {space.origin} ({where}):")
            lines += [f"    {row}" for row in space_rows(space.space)]
        # scheme 1 draws the same points on every workload, scheme 2 a workload's own
        per_workload = space is not None and len(spec.workloads) > 1 and \
            any(c.draw_scheme != 1 for c in configs)
        for workload in spec.workloads if per_workload else spec.workloads[:1]:
            mine = [c for c in configs if c.algorithm == algorithm
                    and c.workload == workload and c.seed == spec.seeds[0]]
            for config in mine:
                if config.trial == 0:
                    lines.append(f"  study {config.study}"
                                 + (f" on {workload}" if per_workload else ""))
                problem = _build_problem(config)
                lines.append(f"    trial {config.trial}: {_short(config.hparams)}"
                             + (f"  CANNOT BE BUILT: {problem}" if problem else ""))
    lines.append(DRAW_WORDS[configs[0].draw_scheme if configs else DRAW_SCHEME])
    lines.append(f"nothing was run or written; {runs} runs would be (every trial once per "
                 "workload and seed)")
    return "\n".join(lines)


def _short(hparams: Mapping[str, Any]) -> str:
    """Hyperparameters as JSON, numbers to 4 significant digits."""
    return json.dumps({k: float(f"{v:.4g}") if isinstance(v, float) else v
                       for k, v in hparams.items()})


def _build_problem(config: RunConfig) -> str | None:
    """Why the trial's algorithm cannot be built with its hyperparameters, or None."""
    from runners.algorithms import get_algorithm

    if (config.algorithm_source or config.algorithm).startswith("algoperf:"):
        return None  # a submission's hyperparameters are checked when it runs
    try:
        get_algorithm(config.algorithm, config.hparams, config.algorithm_source,
                      config.algorithm_sha256)
    except Exception as err:  # noqa: BLE001 - any error is what the dry run reports
        return f"{type(err).__name__}: {err}"
    return None


def space_rows(space: Any) -> list[str]:
    """A search space as the lines of a table (hyperparameter, low, high, scaling; feasible
    points listed under low), never as JSON; a list of points as one line per point."""
    import pandas as pd

    if not isinstance(space, Mapping):
        return [f"point {i}: {_short(point)}" for i, point in enumerate(space)]
    rows = []
    for name, spec in space.items():
        if "feasible_points" in spec:
            rows.append((name, ", ".join(str(p) for p in spec["feasible_points"]), "", "points"))
        else:
            rows.append((name, f"{spec['min']:.4g}", f"{spec['max']:.4g}", spec["scaling"]))
    table = pd.DataFrame(rows, columns=["hyperparameter", "low", "high", "scaling"])
    return table.to_string(index=False).splitlines()
