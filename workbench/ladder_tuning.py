"""The tuning report's edge rule applied to a model-size ladder's rung (workbench/ladder.py): each
algorithm's sweep at a rung judged against the search space shipped for it (workbench/tuning.py
`report_entry`, the one rule), for the ladder summary's `tuning_report`.
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Mapping, Sequence

import pandas as pd

from workbench import records as R
from workbench.hparams import SPACES_DIR
from workbench.tuning import (_NAME, DEFAULT_JUDGED, Outcome, _plain, hparams_of,
                              report_entry)

__all__ = ["shipped_space", "ladder_entry"]


def shipped_space(algorithm: str, spaces_dir: str | Path = SPACES_DIR) -> Any:
    """The search space shipped for a built-in `algorithm` (<spaces_dir>/<algorithm>.json), or
    None (an unknown name, a plug-in, unreadable JSON)."""
    if not isinstance(algorithm, str) or not _NAME.fullmatch(algorithm) \
            or algorithm.startswith("."):
        return None
    path = Path(spaces_dir) / f"{algorithm}.json"
    try:
        return json.loads(path.read_text()) if path.is_file() else None
    except (OSError, ValueError):
        return None


def ladder_entry(algorithm: str, space: Any, sweep: pd.DataFrame, chosen: Mapping[str, Any],
                 floor: float | None, judged: Sequence[str] = DEFAULT_JUDGED
                 ) -> dict[str, Any]:
    """The ladder summary's `tuning_report` of one algorithm at one rung: {"trials", "chosen",
    "edge", "bracketed", "position", "why", "finding"} from its sweep (`sweep`: the rung's
    tuning runs, columns hparams, status, final_loss; lower loss is better, a run without a
    finite loss counts as the worst), the hyperparameters its final runs used (`chosen`) and
    the relative noise `floor` of its final losses (None: DEFAULT_NOISE_FLOOR)."""
    rows = list(sweep.itertuples(index=False))
    done = [r for r in rows if r.status in R.DONE_STATUSES]
    outcomes = [Outcome(False, math.inf, float(r.final_loss) if r.status == "complete"
                        and pd.notna(r.final_loss) else math.nan, "min") for r in done]
    bad = sum(1 for r in rows if r.status != "complete" or not pd.notna(r.final_loss))
    why = ("not swept: its declared setting or transfer rule" if not rows else
           "its sweep's range is not known here (no search space shipped under that name)"
           if space is None else None)
    entry = report_entry(algorithm, space, [hparams_of(r.hparams) for r in done], outcomes,
                         trials=len(rows), bad=bad, planned=len(rows) or None, floor=floor,
                         judged=judged, why=why)
    return {"trials": len(rows), "chosen": {k: _plain(v) for k, v in chosen.items()},
            "edge": entry["edge"], "bracketed": entry["bracketed"],
            "position": {hp: info["position"] for hp, info in entry["hparams"].items()
                         if info.get("position") is not None},
            "why": entry["why"], "finding": entry["finding"]}
