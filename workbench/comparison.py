"""The result of a head-to-head comparison (workbench/compare.py) and its words: per-workload
rows, the overall verdict, the sentence `pacebench compare` prints, its JSON and its table.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from workbench.cubes import AXIS_UNITS, axis_column
from workbench.power import P_TOLERANCE

__all__ = ["WorkloadComparison", "Comparison", "comparison_table", "level_text",
           "NO_DIFFERENCE"]

NO_DIFFERENCE = "no difference shown"


@dataclass(frozen=True)
class WorkloadComparison:
    workload: str
    ratio: float | None               # median study time of B / of A; None: both always missed
    low: float | None                 # bootstrap interval of the ratio; None: too few studies
    high: float | None
    studies_a: int
    studies_b: int
    misses_a: int                     # studies in which no trial reached the target
    misses_b: int
    probability_of_improvement: float | None  # P(a study of A beats one of B), ties half
    note: str = ""                    # why a number is missing

    def to_json(self) -> dict[str, Any]:
        return {"ratio": _num(self.ratio), "low": _num(self.low), "high": _num(self.high),
                "studies": min(self.studies_a, self.studies_b), "studies_a": self.studies_a,
                "studies_b": self.studies_b, "misses_a": self.misses_a,
                "misses_b": self.misses_b,
                "probability_of_improvement": _num(self.probability_of_improvement),
                **({"note": self.note} if self.note else {})}


@dataclass(frozen=True)
class Comparison:
    a: str
    b: str
    verdict: str                      # "<a> faster", "<b> faster" or "no difference shown"
    confidence: float
    speedup: float | None             # geometric mean over workloads of t_B / t_A (> 1: A faster)
    low: float | None
    high: float | None
    p_value: float | None             # one-sided, "A is faster than B"
    p_value_b: float | None           # one-sided, "B is faster than A"
    probability_of_improvement: float | None
    studies_needed: int | None        # per side, to detect `detect` with 80 % power
    detect: float
    per_workload: list[WorkloadComparison]
    left_out: dict[str, str] = field(default_factory=dict)  # workload -> why
    method: str = ""                  # how the p-value was computed
    smallest_p: float = 0.0           # the smallest one-sided p-value the design allows
    time_axis: str = "train"          # what the times are: train, wall or steps (cubes)
    verdict_by_steps: str | None = None  # the same comparison on steps to target (compare_runs)
    seconds_per_step: dict[str, float | None] = field(default_factory=dict)  # algorithm -> s
    step_cost_ratio: float | None = None  # seconds_per_step of a / of b
    warnings: tuple[str, ...] = ()    # cautions, one line each (machine speed, under-tuning)
    withheld: str | None = None       # why the verdict in time was withheld; None: it was not
    measured_verdict: str | None = None  # the verdict the times gave, when it was withheld
    interval_method: str = ""         # exact bootstrap, or Monte Carlo replicates
    design: str = ""                  # the studies the test had, in words ("3 + 3 studies")
    studies_to_reach: int | None = None  # k + k studies could reach the confidence; None: these can
    counted_as_missed: dict[str, str] = field(default_factory=dict)  # workload -> why (imports)
    study_time: str = "algoperf"      # the study-time rule (STUDY_TIME_RULES)
    search_spaces: dict[str, dict[str, Any]] = field(default_factory=dict)  # compare.fairness
    tuning: dict[str, dict[str, Any]] = field(default_factory=dict)  # tuning.tuning_report
    fair_tuning: bool | None = None   # tuning.fair_tuning of a and b
    tuning_warnings: tuple[str, ...] = ()  # tuning.tuning_warnings (under-tuning included)
    tuning_runs: dict[str, dict[str, Any]] = field(default_factory=dict)  # tuning.tuning_runs

    @property
    def unit(self) -> str:
        """What the times are counted in: "seconds" or "steps"."""
        return AXIS_UNITS[axis_column(self.time_axis)]

    def to_json(self) -> dict[str, Any]:
        return {"a": self.a, "b": self.b, "verdict": self.verdict,
                "verdict_by_steps": self.verdict_by_steps, "sentence": self.sentence(),
                "warnings": list(self.warnings), "withheld": self.withheld,
                "time_axis": self.time_axis, "unit": self.unit, "study_time": self.study_time,
                "confidence": self.confidence,
                "speedup": {"estimate": _num(self.speedup), "low": _num(self.low),
                            "high": _num(self.high)},
                "interval_method": self.interval_method,
                "p_value": _num(self.p_value), "p_value_b_faster": _num(self.p_value_b),
                "probability_of_improvement": _num(self.probability_of_improvement),
                "studies_needed": self.studies_needed, "detect": self.detect,
                "seconds_per_step": {k: _num(v) for k, v in self.seconds_per_step.items()},
                "step_cost_ratio": _num(self.step_cost_ratio),
                "per_workload": {w.workload: w.to_json() for w in self.per_workload},
                "left_out": dict(self.left_out),
                "counted_as_missed": dict(self.counted_as_missed), "method": self.method,
                "smallest_possible_p_value": self.smallest_p,
                "can_reach_confidence": self.p_value is not None
                and self.studies_to_reach is None,
                "studies_to_reach": self.studies_to_reach,
                "search_spaces": {k: dict(v) for k, v in self.search_spaces.items()},
                "tuning": {k: dict(v) for k, v in self.tuning.items()},
                "fair_tuning": self.fair_tuning, "tuning_warnings": list(self.tuning_warnings),
                "tuning_runs": {k: dict(v) for k, v in self.tuning_runs.items()}}

    def withheld_line(self) -> str | None:
        """Why the verdict in time was withheld, one line of its own (shown before the verdict,
        never inside it); None when it was not."""
        if not self.withheld:
            return None
        return (f"verdict in time withheld ({self.verdict}): {self.withheld}, so time cannot "
                "separate them; rerun with the interleaved order or compare by steps")

    def sentence(self) -> str:
        """The verdict in words, with its numbers (when the verdict was withheld: what the times
        measured say, as measurements, not as a verdict; withheld_line says why); the verdict
        by steps when it differs, with what a step costs each side."""
        text = self._measured(labelled=not self.withheld)
        if self.withheld:
            text = f"The times measured, not a verdict (withheld, see above): {text}"
        if self.verdict_by_steps is not None and self.verdict_by_steps != self.verdict:
            text += f". By steps to target: {self.verdict_by_steps}"
            if self.step_cost_ratio is not None:
                text += f"; {self.a}'s steps cost {_x(self.step_cost_ratio)} {self.b}'s"
                by_steps, by_time = self.verdict_by_steps, self.verdict
                for x, y in ((self.a, self.b), (self.b, self.a)):
                    if by_steps == f"{x} faster" and by_time == f"{y} faster":
                        text += f": {x} is faster per step, slower per second"
        return text

    def _sides(self, verdict: str) -> tuple[str, str, float, float | None, float | None]:
        """(named first, the other, its speedup, interval): the winner of the verdict, else
        the side the estimate favours, so the factor is above 1 whenever it can be."""
        b_first = verdict == f"{self.b} faster" or (verdict != f"{self.a} faster"
                                                    and self.speedup < 1)
        if not b_first:
            return self.a, self.b, self.speedup, self.low, self.high
        low = None if self.high is None else 1 / self.high
        high = None if self.low is None else 1 / self.low
        return self.b, self.a, 1 / self.speedup, low, high

    def _measured(self, labelled: bool = True) -> str:
        """The sentence of the verdict the times gave; `labelled`: led by the verdict (else
        the test's reading comes after the numbers, so no verdict is nested in another)."""
        verdict = self.measured_verdict or self.verdict
        level = level_text(self.confidence)
        if self.speedup is None:
            return (f"{verdict}: " if labelled else "") + \
                f"no workload where both {self.a} and {self.b} have a time"
        first, other, factor, low, high = self._sides(verdict)
        how = " in steps to target" if self.unit == "steps" else ""
        if factor == 1:
            claim = f"{first} and {other} are equally fast{how} by median study times"
        elif factor > 1:
            claim = f"{first} is {_x(factor)} faster than {other}{how}"
        else:  # the test's winner, though its median ratio is below 1
            claim = (f"{first} wins more studies than it loses, though its median ratio is "
                     f"{_x(factor)}{how} against {other}")
        if self.p_value is None:  # out of a verdict: too few studies on every workload
            why = self.method.removeprefix("no verdict: ")
            return (f"{verdict}: " if labelled else "") + \
                f"{why}, so no test; {claim} in the studies there are"
        interval = (f" ({_x(low)} to {_x(high)}, {level} interval)" if low is not None
                    else " (no interval: too few studies)")
        p_first = self.p_value if first == self.a else self.p_value_b
        poi = (self.probability_of_improvement if first == self.a
               else 1 - self.probability_of_improvement)
        lead = f"{verdict} at {level} confidence: " if labelled else ""
        text = (f"{lead}{claim}{interval}; p = {p_first:.3g} for "
                f"'{first} is faster' ({self.method}")
        if p_first <= self.smallest_p * (1 + P_TOLERANCE):
            text += ", the smallest p-value these studies can give"
        text += f"); P({first} faster in a study) = {poi:.2f}"
        if (factor - 1) * (poi - 0.5) < 0:  # the two numbers seem to disagree: say what each is
            text += (f" (no contradiction: {_x(factor)} is the ratio of the median studies' "
                     f"times, {poi:.2f} the chance that one study of {first} beats one of "
                     f"{other}; they point different ways when the two sides' studies overlap "
                     "and a few differ most)")
        tied = [r.workload for r in self.per_workload if r.ratio is None
                and r.probability_of_improvement is not None]
        if tied:
            text += (f" (counting {', '.join(tied)}, missed by both in every study, as 1/2: "
                     "rliable's definition)")
        if self.studies_to_reach is not None:
            k = self.studies_to_reach
            text += (f"; this design cannot reach {level} (the smallest p-value of "
                     f"{self.design} is {self.smallest_p:.3g}); {k} + {k} studies"
                     f"{' on each workload' if ' on ' in self.design else ''} could")
        text += self._studies_text()
        if not labelled:
            text += f"; the test on these times alone: '{verdict}' at {level} confidence"
        return text


    def _studies_text(self) -> str:
        """The studies a verdict would need, or why the spread of studies is not what hides a
        difference ("" when no estimate was made)."""
        scored = [r for r in self.per_workload if r.ratio is not None]
        have = min((min(r.studies_a, r.studies_b) for r in scored), default=0)
        if self.studies_needed is None:
            return ""
        if self.studies_needed > have:
            return (f"; to detect a {_x(self.detect)} speedup with 80 % power, about "
                    f"{self.studies_needed} studies per algorithm")
        faster = sum(r.ratio > 1 for r in scored)
        slower = sum(r.ratio < 1 for r in scored)
        return (f"; {have} studies would detect a {_x(self.detect)} speedup on every "
                f"workload alike, so the spread of studies is not what hides a "
                f"difference: {self.a} is faster on {faster} of {len(scored)} workloads "
                f"and slower on {slower}")


def _num(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(value) else float(value)


def _digits(value: float) -> str:
    """`value` to 3 significant digits, more when that would round a number near 1 to "1"
    (1.001 is "1.001", never "1")."""
    for digits in range(3, 16):
        text = f"{value:.{digits}g}"
        if value == 1 or float(text) != 1:
            return text
    return text


def _x(value: float | None) -> str:
    return "n/a" if value is None else f"{_digits(value)}x"


def level_text(confidence: float) -> str:
    """A confidence level as a percentage, with the digits it has (95%, 99.9%)."""
    for digits in range(0, 6):
        text = f"{100 * confidence:.{digits}f}"
        if abs(float(text) - 100 * confidence) < 1e-9:
            return f"{text}%"
    return f"{100 * confidence:g}%"


def comparison_table(result: Comparison, names: bool = True) -> pd.DataFrame:
    """The per-workload rows of a comparison, formatted. `names`: headers name the algorithms
    (a terminal); else they say A and B (a web table, whose headers are HTML: names from a store
    never go there)."""
    a, b = (result.a, result.b) if names else ("A", "B")
    rows = []
    for r in result.per_workload:
        interval = (f"{r.low:.3g} to {r.high:.3g}" if r.low is not None
                    else r.note or "n/a")
        rows.append({"workload": r.workload,
                     f"t_{b} / t_{a}": "n/a" if r.ratio is None else f"{r.ratio:.3g}",
                     f"{result.confidence:.0%} interval": interval if r.ratio is not None
                     else r.note,
                     "studies": f"{r.studies_a} + {r.studies_b}",
                     "misses": f"{r.misses_a} + {r.misses_b}",
                     f"P({a} faster)": "n/a" if r.probability_of_improvement is None
                     else f"{r.probability_of_improvement:.2f}"})
    return pd.DataFrame(rows)


# -- the whole head-to-head of a run table: verdict by steps, step costs, machine speed -----------
