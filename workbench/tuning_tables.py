"""The tuning report (workbench/tuning.py) in words and tables: compare's one "tuning: ..."
line, the report table (one row per algorithm and workload) and the search-space table (one row
per judged hyperparameter), as text cells for the CLI and the dashboard alike.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import pandas as pd

from workbench.tuning import planned_trials, value_text

__all__ = ["tuning_line", "space_table", "report_table"]


def tuning_line(report: Mapping[str, Mapping[str, Mapping[str, Any]]], a: str, b: str,
                fair: bool | None, warnings: Sequence[str]) -> str:
    """The one "tuning: ..." line of compare's text: "comparable", what differs (in short; the
    report under the verdict has the sentences), or why it cannot be judged."""
    if fair is True:
        line = "tuning: comparable (no best learning rate at an edge of its range, under half " \
               "the trials bad, equal trials per study)"
        return line + ("; but " + "; ".join(w.split(":")[0] for w in warnings)
                       if warnings else "")
    if fair is None:
        whys = sorted({str(e["why"]) for x in (a, b) for e in report.get(x, {}).values()
                       if e.get("why")})
        return "tuning: cannot be judged (" + ("; ".join(whys) or "no search spaces") + ")"
    parts = []
    for side in (a, b):
        for workload, e in report.get(side, {}).items():
            if e["bracketed"] is not False:
                continue
            edges = [f"{hp} at the {edge} edge" for hp, edge in e["edge"].items() if edge]
            parts.append(f"{side}'s best {', '.join(edges)} of its range on {workload}" if edges
                         else f"{side}: {100 * e['bad_fraction']:.0f} % of its trials bad on "
                              f"{workload}")
    planned = {x: planned_trials(report.get(x, {})) for x in (a, b)}
    if None not in planned.values() and planned[a] != planned[b]:
        parts.append(f"{planned[a]} against {planned[b]} trials per study")
    findings = {e["finding"] for x in (a, b) for e in report.get(x, {}).values()}
    parts += [w.split(":")[0] for w in warnings
              if w not in findings and not w.startswith("unequal tuning")]
    return "tuning: not comparable: " + "; ".join(parts) + " (the tuning report below says more)"


def space_table(report: Mapping[str, Mapping[str, Mapping[str, Any]]]) -> pd.DataFrame:
    """The search spaces as a table: one row per hyperparameter, algorithm and workload
    (hyperparameter, algorithm, workload, low, high, scaling, best, position, edge); feasible
    points read "points" with the values in low. Text cells (escape before HTML)."""
    rows = []
    for side, per in report.items():
        for workload, entry in per.items():
            for hp, info in entry["hparams"].items():
                points = info.get("points")
                rows.append({
                    "hyperparameter": hp, "algorithm": side, "workload": workload,
                    "low": (", ".join(value_text(p) for p in points[:4])
                            + (", ..." if len(points) > 4 else "")) if points is not None
                    else value_text(info.get("low")),
                    "high": "" if points is not None else value_text(info.get("high")),
                    "scaling": "points" if points is not None else str(info.get("scaling")),
                    "best": value_text(info.get("value")),
                    "position": "" if info.get("position") is None
                    else f"{info['position']:.2f}",
                    "edge": (entry["edge"].get(hp) or "none") if hp in entry["edge"] else ""})
    columns = ["hyperparameter", "algorithm", "workload", "low", "high", "scaling", "best",
               "position", "edge"]
    frame = pd.DataFrame(rows, columns=columns)
    return frame.sort_values(["hyperparameter", "workload", "algorithm"], kind="stable") \
        .reset_index(drop=True)


def report_table(report: Mapping[str, Mapping[str, Mapping[str, Any]]]) -> pd.DataFrame:
    """One row per algorithm and workload: trials, finished, bad share, planned trials per
    study, where the space came from, edges, bracketed (text cells; escape before HTML)."""
    rows = []
    for side, per in report.items():
        for workload, e in per.items():
            edges = ", ".join(f"{hp} {edge}" for hp, edge in e["edge"].items() if edge)
            rows.append({"algorithm": side, "workload": workload, "trials": e["trials"],
                         "finished": e["finished"],
                         "bad": "-" if e["bad_fraction"] is None
                         else f"{100 * e['bad_fraction']:.0f} %",
                         "per study": "-" if e["planned_trials"] is None
                         else str(e["planned_trials"]),
                         "space": str(e["origin"] or "unrecorded"), "edge": edges or "none",
                         "bracketed": {True: "yes", False: "no", None: "n/a"}[e["bracketed"]]})
    return pd.DataFrame(rows, columns=["algorithm", "workload", "trials", "finished", "bad",
                                       "per study", "space", "edge", "bracketed"])
