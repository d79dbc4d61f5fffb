"""How the views write numbers: durations in seconds or hours, shares as percentages."""
from __future__ import annotations

import math
from typing import Iterable

__all__ = ["duration", "unit_for", "percent", "MISS", "NO_RUNS", "HOURS_FROM"]

MISS = "miss"        # shown where the target was not reached
NO_RUNS = "no runs"  # shown where there is nothing to show
HOURS_FROM = 10_000  # seconds from which a duration reads better in hours


def unit_for(seconds: Iterable[float]) -> str:
    """"h" when the largest finite duration is at least HOURS_FROM seconds, else "s": one unit
    per table column keeps its numbers comparable at a glance."""
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


def percent(share: float, signed: bool = True) -> str:
    """0.279 -> '+27.9 %'; 'n/a' when not finite."""
    if share is None or not math.isfinite(share):
        return "n/a"
    return f"{share:+.1%}".replace("%", " %") if signed else f"{share:.1%}".replace("%", " %")
