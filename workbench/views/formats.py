"""How the views write numbers (durations in seconds or hours, shares as percentages), names
into Markdown and runs into labels, tick log axes, and style their tables."""
from __future__ import annotations

import html
import math
import re
from typing import TYPE_CHECKING, Iterable

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["md", "duration", "amount", "unit_for", "percent", "ratio_color", "wrap_title",
           "group_header", "run_labels", "picker_labels", "log_ticks", "MISS", "NO_RUNS",
           "HOURS_FROM", "TABLE_CSS"]

MISS = "miss"        # shown where the target was not reached
NO_RUNS = "no runs"  # shown where there is nothing to show
HOURS_FROM = 10_000  # seconds from which a duration reads better in hours
# Long workload names wrap in a table header (after an underscore: wrap_title) instead of
# widening every column. Tabulator's fit_columns layout adds an empty filler column that shows as
# a clipped sliver at the right edge: hidden. A long algorithm or hardware name wraps in its
# cell, read whole, instead of being cut or squeezing the other columns.
TABLE_CSS = """
.tabulator .tabulator-header .tabulator-col .tabulator-col-content .tabulator-col-title {
  white-space: normal !important; overflow-wrap: normal; text-overflow: clip; font-size: 12px;
}
.tabulator .tabulator-header .tabulator-col .tabulator-col-content { padding: 4px 3px; }
.tabulator .tabulator-col.empty, .tabulator .tabulator-cell.empty { display: none !important; }
.tabulator .tabulator-cell[tabulator-field="algorithm"],
.tabulator .tabulator-cell[tabulator-field="hardware"] {
  white-space: normal !important; overflow-wrap: anywhere;
}
"""


# What makes markup in Markdown (emphasis, code, links, images, headings, lists, tables,
# strikethrough): backslash-escaped, so that it shows as itself.
_MARKDOWN_PUNCTUATION = re.compile(r"([\\`*_\[\]#+\-!|~])")


def md(value: object) -> str:
    """`value` as literal text inside Markdown: every name that comes from a store, a log or a
    user (algorithms, workloads, studies, hyperparameters, hardware, titles, messages) goes
    through here before it joins a Markdown pane, so that it shows as written and never as
    markup (Markdown panes render inline HTML). Markdown's punctuation is backslash-escaped,
    then HTML's special characters become entities."""
    return html.escape(_MARKDOWN_PUNCTUATION.sub(r"\\\1", str(value)), quote=True)


def group_header(values: pd.Series) -> pd.Series:
    """A grouped table's group column, escaped: Tabulator writes group headers as HTML."""
    return values.astype(str).map(html.escape)


def wrap_title(name: str) -> str:
    """A table column title (HTML) of a name: escaped, and free to break after each underscore
    (zero-width space)."""
    return html.escape(str(name)).replace("_", "_\u200b")


def unit_for(seconds: Iterable[float]) -> str:
    """"h" when the largest finite duration is at least HOURS_FROM seconds, else "s": one unit
    per table keeps its numbers comparable at a glance."""
    finite = [s for s in seconds if s is not None and math.isfinite(s)]
    return "h" if finite and max(finite) >= HOURS_FROM else "s"


def duration(seconds: float, unit: str | None = None) -> str:
    """'3.2 s', '5,043 s', '0.92 h' or '13.2 h' (unit None: hours from HOURS_FROM s); MISS for +inf,
    NO_RUNS for NaN."""
    if seconds is None or math.isnan(seconds):
        return NO_RUNS
    if math.isinf(seconds):
        return MISS
    if (unit or unit_for([seconds])) == "h":
        hours = seconds / 3600
        return f"{hours:,.1f} h" if hours >= 10 else f"{hours:.2f} h"
    return f"{seconds:,.1f} s" if seconds < 100 else f"{seconds:,.0f} s"


def amount(value: float, units: str, unit: str | None = None) -> str:
    """A time to target in its own units: steps as '1,250 steps', seconds as `duration`."""
    if units == "steps" and value is not None and math.isfinite(value):
        return f"{value:,.0f} steps"
    return duration(value, unit)


def ratio_color(ratio: float) -> str:
    """CSS background for a time that is `ratio` x the best on its workload: green at 1 fading
    to white at 2 and red at 4 and beyond; grey for a miss (+inf); none where there is no run."""
    if ratio is None or math.isnan(ratio):
        return ""
    if math.isinf(ratio):
        return "background-color: #e9ecef"
    if ratio <= 2.0:
        share = (ratio - 1.0)  # 0 at the best, 1 at twice the best
        g = (198 + round(57 * share), 239 + round(16 * share), 206 + round(49 * share))
    else:
        share = min(1.0, (ratio - 2.0) / 2.0)
        g = (255, 255 - round(55 * share), 255 - round(55 * share))
    return f"background-color: rgb{g}"


def percent(share: float, signed: bool = True) -> str:
    """0.279 -> '+27.9 %'; 'n/a' when not finite."""
    if share is None or not math.isfinite(share):
        return "n/a"
    return f"{share:+.1%}".replace("%", " %") if signed else f"{share:.1%}".replace("%", " %")


KEY_HPARAMS = 3  # hyperparameters named in a run's label, at most


def _number(value) -> str:
    return f"{value:.3g}" if isinstance(value, float) else str(value)


def run_labels(runs: pd.DataFrame) -> dict[str, str]:
    """{run_id: "algorithm, study s, trial t[, seed k], lr=...}": the hyperparameters named are
    those that vary among the algorithm's runs in `runs` (the learning rate first), at most
    KEY_HPARAMS; never the run id. (Columns are read as lists: iterating Arrow-backed columns
    row by row is ten times slower, and the run picker labels 2,000 runs per filter change.)"""
    n = len(runs)
    column = {c: runs[c].tolist() if c in runs else [None] * n
              for c in ("run_id", "algorithm", "study", "trial", "seed", "hparams")}
    seeds = len({s for s in column["seed"] if isinstance(s, int)}) > 1  # pd.NA: no seed
    docs = [h if isinstance(h, dict) else {} for h in column["hparams"]]
    mine: dict[str, list[int]] = {}
    for i, algorithm in enumerate(column["algorithm"]):
        mine.setdefault(algorithm, []).append(i)
    labels = {}
    for algorithm, rows in mine.items():
        keys = list(dict.fromkeys(k for i in rows for k in docs[i]))
        varying = [k for k in keys if len({repr(docs[i].get(k)) for i in rows}) > 1]
        varying = sorted(varying, key=lambda k: (k != "learning_rate", k))[:KEY_HPARAMS]
        for i in rows:
            parts = [str(algorithm), f"study {column['study'][i]}", f"trial {column['trial'][i]}"]
            parts += [f"seed {column['seed'][i]}"] if seeds else []
            parts += [f"{k}={_number(docs[i][k])}" for k in varying if k in docs[i]]
            labels[column["run_id"][i]] = ", ".join(parts)
    return labels


def picker_labels(runs: pd.DataFrame) -> dict[str, str]:
    """{label: run_id} for a run picker: run_labels with the workload, and the study name and
    attempt where the runs differ in them; a label that still repeats gets " #2", " #3"...
    Escaped: the picker writes its labels as HTML."""
    labels, seen, named = {}, {}, run_labels(runs)
    names = runs["study_name"].nunique() > 1 if "study_name" in runs else False
    n = len(runs)
    attempts = runs["attempt"].tolist() if "attempt" in runs else [1] * n
    studies = runs["study_name"].tolist() if names else [None] * n
    for run_id, workload, study_name, attempt in zip(runs["run_id"].tolist(),
                                                     runs["workload"].tolist(), studies, attempts):
        extra = [workload] + ([study_name] if names else [])
        extra += [f"attempt {attempt}"] if isinstance(attempt, int) and attempt != 1 else []
        text = f"{named[run_id]} ({', '.join(map(str, extra))})"
        seen[text] = seen.get(text, 0) + 1
        text = text if seen[text] == 1 else f"{text} #{seen[text]}"
        labels[html.escape(text)] = run_id
    return labels


def log_ticks(values: pd.Series) -> list[float]:
    """Ticks for a log axis over `values`: the decades when there are four, else 1, 2 and 5 in
    every decade when that makes two, else 1, 2, 3, 5 and 7, else every digit: a range under a
    decade still has labelled ticks, and they never run into each other in a small plot."""
    values = values[np.isfinite(values) & (values > 0)]
    if not len(values):
        return []
    low, high = float(values.min()), float(values.max())
    decades = range(int(np.floor(np.log10(low))), int(np.ceil(np.log10(high))) + 1)
    for mantissas, enough in (((1,), 4), ((1, 2, 5), 2), ((1, 2, 3, 5, 7), 2),
                              (range(1, 10), 0)):
        ticks = [m * 10.0 ** k for k in decades for m in mantissas
                 if low / 1.05 <= m * 10.0 ** k <= high * 1.05]
        if len(ticks) >= enough:
            break
    return [float(f"{t:.6g}") for t in ticks]
