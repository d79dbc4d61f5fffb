"""The result objects Results returns (workbench/results.py): each holds what one analysis
computed and renders it as the CLI prints it (`to_json`, `text`, and for scores `csv`).

ScoreResult (`pacebench score`), CompareResult (`compare`), BudgetResult (`budget`),
LadderResult (`ladder --summary`) and RankResult (`rank`). They compute nothing but what a
rendering needs (the eval share of a score is read on first use); import them from
workbench.results.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import pandas as pd
import xarray as xr

from workbench import budget as B
from workbench import compare as C
from workbench import ladder as LD
from workbench import costs, scoring, sensitivity
from workbench import tuning_tables as TT
from workbench.catalog import noise_floor_of
from workbench.cubes import AXIS_LABELS, AXIS_UNITS, axis_column
from workbench.early_stopping import MIN_RUNS
from workbench.scope import Scope, Scoped

__all__ = ["ScoreResult", "CompareResult", "BudgetResult", "LadderResult", "RankResult",
           "dumps", "BOOTSTRAP_DRAWS", "COMPARE_DRAWS", "INTERVAL_LEVEL"]

# The draws every surface makes (seed 0), owned by scoring and compare.
BOOTSTRAP_DRAWS = scoring.BOOTSTRAP_DRAWS  # resamplings of the studies behind score and
                                           # speedup intervals
COMPARE_DRAWS = C.BOOTSTRAP_REPLICATES  # behind a head-to-head's ratio intervals
INTERVAL_LEVEL = scoring.INTERVAL_LEVEL  # of the score and speedup intervals


def _axis_json(scope: Scope) -> dict[str, Any]:
    return {"time_axis": scope.time_axis, "unit": AXIS_UNITS[axis_column(scope.time_axis)],
            "exclude_compile": bool(scope.exclude_compile),
            "relax_targets": scope.relax_targets}


def _number(value: float) -> float | None:
    return round(float(value), 6) if value is not None and math.isfinite(value) else None


@dataclass
class ScoreResult:
    """The scores of a store (Results.score_result): to_json, text and csv renderings."""

    table: pd.DataFrame          # scoring.score_table_with_intervals, best first
    times: xr.DataArray          # median time to target per (algorithm, workload)
    speedups: tuple | None       # (frame, reference, budgets) of _speedups
    scoped: Scoped
    scope: Scope
    skipped: dict[str, str] = field(default_factory=dict)
    rank_shift: dict[str, dict] | None = None  # sensitivity.rank_shift over rank_axes
    rank_axes: tuple[str, str | None] = ("train", None)  # (the scope's axis, the other one)
    pool: dict[str, dict] = field(default_factory=dict)  # sensitivity.pool_sensitivity
    clock: Callable[[list[str]], pd.DataFrame] | None = None  # eval_share's (None: empty)
    tuning: dict[str, dict] = field(default_factory=dict)  # tuning.tuning_report

    def eval_share(self) -> pd.DataFrame:
        """costs.eval_share of the scoped runs (their eval rows are read on the first call:
        most of a `score --json` of the v0.5 logs, so the text and CSV outputs skip it)."""
        if not hasattr(self, "_eval_share"):
            runs = self.scoped.runs
            clock = self.clock(runs["run_id"].tolist()) if self.clock is not None and \
                len(runs) else \
                pd.DataFrame(columns=["run_id", "eval_seconds", "wall_seconds"])
            self._eval_share = costs.eval_share(runs, clock)
        return self._eval_share

    def to_json(self) -> dict[str, Any]:
        t = self.table
        times = self.times.transpose("algorithm", "workload")  # by position: .sel took 0.2 s
        ttt = {str(a): {str(w): _number(times.values[i, j].item())
                        for j, w in enumerate(times.workload.values)}
               for i, a in enumerate(times.algorithm.values)}
        out: dict[str, Any] = {
            "scores": {r.algorithm: round(float(r.score), 6) for r in t.itertuples()},
            "studies": {r.algorithm: int(r.studies) for r in t.itertuples()},
            "intervals": {r.algorithm: None if not np.isfinite(r.low) else
                          [_number(r.low), _number(r.high)] for r in t.itertuples()},
            "interval_level": INTERVAL_LEVEL, "time_to_target": ttt}
        if self.speedups is not None:
            frame, reference, _ = self.speedups
            out["speedups"] = {
                "reference": reference,
                "faster_by": {str(a): _number(v) for a, v in frame["faster_by"].items()},
                "intervals": {str(a): None if not np.isfinite(r.low) else
                              [_number(r.low), _number(r.high)] for a, r in frame.iterrows()},
                "interval_level": INTERVAL_LEVEL}
        out["pool_sensitivity"] = {
            a: {"without": {b: round(v, 6) for b, v in e["without"].items()},
                "largest_change": round(e["largest_change"], 6)} for a, e in self.pool.items()}
        out["eval_share"] = {
            str(a): {str(r.workload): _number(r.share) for r in rows.itertuples()}
            for a, rows in self.eval_share().groupby("algorithm", sort=True)}
        if self.rank_shift is not None:
            out["rank_shift"] = {a: {k: [round(p, 6) for p in v] if isinstance(v, list) else v
                                     for k, v in e.items()} for a, e in self.rank_shift.items()}
            out["rank_shift_spearman"] = _number(sensitivity.spearman(self.rank_shift,
                                                                      *self.rank_axes))
        out["tuning"] = {a: dict(v) for a, v in self.tuning.items()}
        return {**out, **_axis_json(self.scope), **self.scoped.to_json(),
                "skipped_runs": dict(self.skipped)}

    def text(self) -> str:
        """What `pacebench score` prints."""
        column = axis_column(self.scope.time_axis)
        label = AXIS_LABELS[column] + (", compilation excluded" if self.scope.exclude_compile
                                       else "")
        lines = [f"ruleset: {self.scoped.ruleset}; time axis: {label}",
                 self.table.drop(columns=["low", "high"]).to_string(
                     index=False, float_format=lambda v: f"{v:.4f}"),
                 f"(interval: {100 * INTERVAL_LEVEL:.0f} % bootstrap over each algorithm's "
                 f"studies; n/a below {scoring.MIN_STUDIES_FOR_INTERVAL} studies)\n"
                 "(workloads_reached: of the workloads_scored, those where the median study "
                 "reached the target within 4x of the fastest time, after the rules)",
                 f"\nmedian {AXIS_LABELS[column]} to target (inf = not reached):",
                 self.times.to_pandas().to_string(float_format=lambda v: f"{v:.2f}")]
        floors = {str(w): f for w in self.times.workload.values
                  if (f := noise_floor_of(str(w))) is not None}
        if floors:
            lines.append("\nnoise floor (the tuned baseline's time to target over the seeds "
                         "that set the target):")
            lines += [f"  {w}: {floor.describe()}" for w, floor in floors.items()]
        if self.speedups is not None:
            frame, reference, budgets = self.speedups
            rule = "misses cost the budget + 1 s" if budgets else "workloads both missed left out"
            lines.append(f"\nspeedup over {reference} in {AXIS_LABELS[column]} (1 - geometric "
                         f"mean of ratios to target over the scored workloads; {rule}):")
            lines.append(_speedup_lines(frame, reference))
        if (reason := scoring.all_zero_reason(self.table)) is not None:
            lines.append("\n" + reason)
        lines += self._sensitivity_lines()
        if self.tuning:
            lines += ["\ntuning (each algorithm's trials and search space; edge: the best "
                      "trial at an end of its range, beyond the noise floor):",
                      TT.report_table(self.tuning).to_string(index=False)]
        lines += _left_out_lines(self.scoped, self.skipped)
        return "\n".join(lines)

    def _sensitivity_lines(self) -> list[str]:
        """The rank shift (when asked for) and the pool sensitivity, one line per algorithm."""
        lines: list[str] = []
        width = max((len(a) for a in self.pool), default=0)
        if self.rank_shift is not None:
            first, second = self.rank_axes
            lines.append(f"\nrank by {first} and by {second} (spearman "
                         f"{sensitivity.spearman(self.rank_shift, first, second):.3f}; the "
                         f"probability of each rank over {BOOTSTRAP_DRAWS:,} bootstrap draws of "
                         "each algorithm's studies, ranks under 5 % left out):")
            for a, e in self.rank_shift.items():
                one, two = (f"{e[f'rank_{c}']:>2} ({_ranks_text(e[f'p_rank_{c}'])})"
                            for c in (first, second))
                lines.append(f"{a.ljust(width)}  {one}  ->  {two}")
        if len(self.pool) > 1:
            lines.append("\npool sensitivity (the largest change of each score when one other "
                         "algorithm is left out of the pool):")
            for a in self.table["algorithm"]:
                e = self.pool[a]
                who = [b for b, v in e["without"].items()
                       if math.isclose(v - e["score"], e["largest_change"])]
                lines.append(f"{a.ljust(width)}  {e['largest_change']:+.4f}"
                             + (f" (without {', '.join(who)})" if e["largest_change"] else ""))
        return lines

    def csv(self) -> str:
        """What `pacebench score --csv` prints: one row per algorithm, in score order."""
        from workbench.csvout import to_csv

        column = axis_column(self.scope.time_axis)
        out = self.table.rename(columns={"low": "score_low", "high": "score_high"}) \
            .set_index("algorithm")
        ttt = self.times.to_pandas()
        for workload in ttt.columns:
            out[f"{_CSV_TIMES[column]}/{workload}"] = ttt[workload].reindex(out.index)
        if self.speedups is not None:
            frame, reference, _ = self.speedups
            for source, name in (("faster_by", "faster_by"), ("low", "faster_by_low"),
                                 ("high", "faster_by_high")):
                values = frame[source].reindex(out.index).astype(float)
                out[f"{name} (vs {reference})"] = values.where(np.isfinite(values))
        return to_csv(out, index=True)


def _ranks_text(p: list[float]) -> str:
    """'1: 75 %, 2: 15 %, 3: 9 %': the ranks at least 5 % likely."""
    return ", ".join(f"{k}: {100 * q:.0f} %" for k, q in enumerate(p, 1) if q >= 0.05)


# The CSV's column of median times to target, per time axis.
_CSV_TIMES = {"train_seconds": "time_to_target_s", "wall_seconds": "wall_to_target_s",
              "step": "steps_to_target"}


def _speedup_lines(frame: pd.DataFrame, reference: str) -> str:
    """One line per algorithm: its speedup over the reference and its interval."""
    width = max(len(str(a)) for a in frame.index)
    lines = []
    for algorithm, r in frame.iterrows():
        value = f"{r.faster_by:+.4f}" if math.isfinite(r.faster_by) else "n/a (a miss)"
        if algorithm == reference:
            interval = "(the reference)"
        elif not math.isnan(r.low):
            interval = f"{100 * INTERVAL_LEVEL:.0f} % interval {r.low:+.4f} to {r.high:+.4f}"
        else:
            interval = scoring.interval_text(math.nan, math.nan, int(r.studies))
        lines.append(f"{str(algorithm).ljust(width)}  {value.rjust(12)}  {interval}")
    return "\n".join(lines)


def _left_out_lines(scoped: Scoped, skipped: dict[str, str]) -> list[str]:
    """What a result left out or changed, one line each (workbench/scope.py), and the runs that
    could not be read."""
    lines = [f"note: {n}" for n in scoped.notes]
    for algorithm, workloads in scoped.failed.items():
        lines.append(f"failed trials of {algorithm}: " + ", ".join(
            f"{w} {n}" for w, n in workloads.items()))
    if skipped:
        lines.append(f"{len(skipped)} runs of the store skipped: their files cannot be read "
                     "(the warnings above name them and say why)")
    return [""] + lines if lines else []


@dataclass
class BudgetResult:
    """Tuning-budget curves of a store (Results.budget_result)."""

    curves: list
    trials: dict
    config: scoring.ScoringConfig | None
    scored: list[str]
    scoped: Scoped
    scope: Scope

    def to_json(self) -> dict[str, Any]:
        return {**B.budget_json(self.curves, self.trials, self.config, self.scored),
                **_axis_json(self.scope), **self.scoped.to_json()}

    def text(self) -> str:
        body = B.budget_text(self.curves, self.trials, self.config, self.scored,
                             axis_column(self.scope.time_axis))
        return "\n".join([body, *_left_out_lines(self.scoped, {})])


@dataclass
class CompareResult:
    """A head-to-head of a store (Results.compare_result): a fixed design's, or a sequential
    one's (workbench.sequential.SequentialComparison)."""

    comparison: Any
    scoped: Scoped
    scope: Scope

    def to_json(self) -> dict[str, Any]:
        return {**self.comparison.to_json(), **_axis_json(self.scope), **self.scoped.to_json()}

    def text(self) -> str:
        """What `pacebench compare` prints."""
        result, label = self.comparison, AXIS_LABELS[axis_column(self.scope.time_axis)]
        sequential = None
        if not isinstance(result, C.Comparison):  # a sequential comparison (its last look's)
            sequential, result = result, result.comparison
        lines = [f"ruleset: {self.scoped.ruleset}; time axis: {label}"
                 + (", compilation excluded" if self.scope.exclude_compile else "")
                 + f" (ratios of median study {label} to target)",
                 C.comparison_table(result).to_string(index=False)]
        lines += [f"  {w}: left out ({why})" for w, why in result.left_out.items()]
        lines += [f"  {w}: {why}" for w, why in result.counted_as_missed.items()]
        if result.study_time != "algoperf":
            lines.append("study time: each study's fastest trial (--study-time fastest), not "
                         "AlgoPerf's rule (the trial that met the target at the smallest eval "
                         "index)")
        lines += [f"warning: {caution}" for caution in result.warnings]
        if result.withheld_line():
            lines.append(f"warning: {result.withheld_line()}")
        lines += [TT.tuning_line(result.tuning, result.a, result.b, result.fair_tuning,
                                result.tuning_warnings),
                  f"\nverdict in {label}: {result.verdict}",
                  f"verdict by steps to target: {result.verdict_by_steps}"]
        if sequential is not None:
            lines += [f"studies used: {sequential.studies_used} a side of "
                      f"{sequential.max_studies}; stopped because: "
                      f"{sequential.stopped_because or 'not decided yet'}",
                      "\n" + sequential.sentence()]
        else:
            lines.append("\n" + result.sentence())
        lines += _tuning_lines(result)
        return "\n".join(lines + _left_out_lines(self.scoped, {}))


def _tuning_lines(result: C.Comparison) -> list[str]:
    """The tuning report under compare's verdict: each side's trials and edges, its search space
    as a table (never as JSON), the warnings, and the tuning runs behind each space."""
    if not result.tuning:
        return []
    lines = ["\ntuning report (workbench/tuning.py; edge: the best trial in the outer 10 % of "
             "a range, beating the best of the inner 80 % by more than the noise floor):",
             TT.report_table(result.tuning).to_string(index=False)]
    spaces = TT.space_table(result.tuning)
    if len(spaces):
        lines += ["search spaces (best: the best trial's value; position: 0 low end, 1 high "
                  "end, in the range's scaling):", spaces.to_string(index=False)]
    lines += [f"finding: {e['finding']}" for per in result.tuning.values() for e in per.values()]
    findings = {e["finding"] for per in result.tuning.values() for e in per.values()}
    lines += [f"tuning warning: {w}" for w in result.tuning_warnings if w not in findings]
    for side, info in result.tuning_runs.items():
        where = info.get("origin") or "unrecorded"
        lines.append(f"tuning runs of {side}: {info.get('runs', 0)}"
                     + (f" ({', '.join(info['study_names'])})" if info.get("study_names")
                        else "") + f"; its search space: {where}"
                     + (f" ({info['file']})" if info.get("file") else ""))
    return lines


@dataclass
class LadderResult:
    """A store's ladder analysis (Results.ladder_result): the JSON and the finals it came from."""

    analysis: dict[str, Any]
    finals: pd.DataFrame

    def to_json(self) -> dict[str, Any]:
        studies = sorted(set(self.finals["study_name"].dropna().astype(str)))
        return {**self.analysis, "ladders": studies,
                "skipped_runs": dict(self.finals.attrs.get("skipped", {}))}

    def text(self) -> str:
        """What `pacebench ladder --summary` prints."""
        lines = [LD.ladder_text(self.analysis)]
        studies = sorted(set(self.finals["study_name"].dropna().astype(str)))
        if len(studies) > 1:
            lines.append(f"\nnote: the runs of {len(studies)} ladders are pooled "
                         f"({', '.join(studies)}); pick one with --study NAME")
        skipped = self.finals.attrs.get("skipped", {})
        if skipped:
            lines.append(f"\n{len(skipped)} ladder runs skipped: their ladder records cannot "
                         "be read (the warnings above name them and say why)")
        return "\n".join(lines)


@dataclass
class RankResult:
    """How well the early estimators (TSE, LCGA) rank a store's runs, and what early stopping
    saved (Results.rank_result): what `pacebench rank` prints."""

    tables: dict[tuple, pd.DataFrame]  # (study_name, workload, algorithm) ->
                                       # early_stopping.ranking_table (estimator x fraction)
    summaries: list[dict[str, Any]]    # early_stopping.study_summary of each study name
    fractions: tuple[float, ...]       # the budget fractions ranked at

    def to_json(self) -> dict[str, Any]:
        """{"fractions", "rankings": [{"study_name", "workload", "algorithm", "spearman",
        "kendall": {estimator: {fraction: value or None}}}], "early_stopping": the summaries}."""
        rankings = []
        for (name, workload, algorithm), table in self.tables.items():
            entry = {"study_name": name, "workload": workload, "algorithm": algorithm}
            for stat in ("spearman", "kendall"):
                pivot = table.pivot(index="estimator", columns="fraction", values=stat)
                entry[stat] = {str(e): {str(f): _number(v) for f, v in row.items()}
                               for e, row in pivot.iterrows()}
            rankings.append(entry)
        return {"fractions": list(self.fractions), "rankings": rankings,
                "early_stopping": self.summaries}

    def text(self) -> str:
        """What `pacebench rank` prints (a line saying why when nothing could be ranked)."""
        lines = []
        for (name, workload, algorithm), table in self.tables.items():
            lines.append(f"\n{name}: {workload} / {algorithm}")
            for stat in ("spearman", "kendall"):
                lines.append(f"{stat}:\n" + table.pivot(index="estimator", columns="fraction",
                                                         values=stat).round(3).to_string())
        for summary in self.summaries:
            name = summary["study_name"]
            for g in summary["groups"]:
                if g["pruned_trials"]:
                    lines.append(
                        f"\nearly stopping in {name} ({g['workload']} / {g['algorithm']}): "
                        f"{len(g['pruned_trials'])} trials stopped early, "
                        f"{g['saved_train_seconds']:.1f} training s saved of "
                        f"{g['saved_train_seconds'] + g['spent_train_seconds']:.1f} "
                        f"({100 * g['saved_fraction_seconds']:.0f} %); best trial "
                        f"{(g['best'] or {}).get('trial')}")
        return "\n".join(lines) if lines else (
            f"nothing to rank: early ranking needs {MIN_RUNS} or more complete runs "
            "of Pacebench's runner (the only runs with per-step training loss; imported logs "
            "have evals only) of one study, workload and algorithm, and no study here stopped "
            "trials early")


def dumps(value: dict[str, Any]) -> str:
    """JSON as the CLI prints it."""
    return json.dumps(value, indent=2)

