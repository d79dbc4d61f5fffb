"""The steps Results' analyses are made of, as Results' methods, for a caller that makes them
itself: the dashboard's Selection and views (workbench/views/) score a cube cut by the filters
cell by cell and cache each step, so they cannot take a finished `score_result`. They take the
steps here, from Results, the CLI's one door too: tests/test_architecture.py checks that the
views, the app and the CLI import none of the analysis modules (query, scope, cubes, scoring,
compare, sequential, budget, ladder, noise_floor, sensitivity, early_stopping, tuning, run_index)
but through workbench.results.

ResultSteps holds the pure steps: each is the analysis module's own function as a static method
(its docstring is the function's), so that a view computes exactly what the commands compute.
Results (workbench/results.py) adds the steps that read its store. The constants and types a
view names are exported by workbench.results too (STEP_NAMES lists them).
"""
from __future__ import annotations

from workbench import budget as B
from workbench import compare as C
from workbench import cubes, early_stopping, power, scope, scoring, sensitivity
from workbench import ladder as LD
from workbench import tuning_tables as TT

__all__ = ["ResultSteps", "STEP_NAMES", *(
    "AXIS_LABELS", "AXIS_UNITS", "TIME_TO_TARGET", "MIN_STUDIES_FOR_INTERVAL", "TAU_MAX",
    "SCORE_COLUMNS", "RULESETS_ORDER", "EXACT_BOOTSTRAP", "LADDER_INTERVAL_LEVEL",
    "RANKING_GROUP_KEYS", "RANKING_MIN_RUNS", "RANKED", "Scope", "Scoped", "ScoringConfig",
    "Comparison", "BudgetCurve")]

# Names a view or command reads (constants and types), owned by the analysis modules.
AXIS_LABELS = cubes.AXIS_LABELS  # time-axis column -> its label
AXIS_UNITS = cubes.AXIS_UNITS  # time-axis column -> its unit
TIME_TO_TARGET = cubes.TIME_TO_TARGET  # the final cube's time-to-target variable
MIN_STUDIES_FOR_INTERVAL = scoring.MIN_STUDIES_FOR_INTERVAL  # fewer: no bootstrap interval
TAU_MAX = scoring.TAU_MAX  # the performance profile's largest ratio (AlgoPerf: 4)
SCORE_COLUMNS = scoring.SCORE_COLUMNS  # the score table's columns
RULESETS_ORDER = scope.RULESETS_ORDER  # the default ruleset of a store holding both: the first
EXACT_BOOTSTRAP = C.EXACT_BOOTSTRAP  # a comparison's exact bootstrap up to this many resamples
LADDER_INTERVAL_LEVEL = LD.INTERVAL_LEVEL  # of the ladder's speedup intervals
RANKING_GROUP_KEYS = early_stopping.GROUP_KEYS  # what the early ranking ranks within
RANKING_MIN_RUNS = early_stopping.MIN_RUNS  # fewer ranked runs: no rank correlation
RANKED = early_stopping.RANKED  # the runs the early ranking ranks (status, source)
Scope, Scoped = scope.Scope, scope.Scoped  # what an analysis reads; the runs it read
ScoringConfig = scoring.ScoringConfig  # a store's scoring rules (an AlgoPerf import's)
Comparison = C.Comparison  # a head-to-head's result
BudgetCurve = B.BudgetCurve  # one tuning-budget curve

STEP_NAMES = tuple(n for n in __all__ if n not in ("ResultSteps", "STEP_NAMES"))


class ResultSteps:
    """The pure steps of Results' analyses (see the module doc), grouped by the module that
    owns each."""

    # which runs an analysis reads (workbench/scope.py)
    labelled_runs = staticmethod(scope.labelled_runs)
    finished_runs = staticmethod(scope.finished_runs)
    with_relaxed_targets = staticmethod(scope.with_relaxed_targets)
    is_ad_hoc = staticmethod(scope.is_ad_hoc)
    # the cubes (workbench/cubes.py)
    final_cube = staticmethod(cubes.final_cube)
    on_time_axis = staticmethod(cubes.on_time_axis)
    axis_column = staticmethod(cubes.axis_column)
    axis_name = staticmethod(cubes.axis_name)
    # AlgoPerf scoring (workbench/scoring.py)
    study_times = staticmethod(scoring.study_times)
    study_choices = staticmethod(scoring.study_choices)
    median_over_studies = staticmethod(scoring.median_over_studies)
    bootstrap_medians = staticmethod(scoring.bootstrap_medians)
    score_table_of_times = staticmethod(scoring.score_table_of_times)
    with_score_intervals = staticmethod(scoring.with_score_intervals)
    rank_scores = staticmethod(scoring.rank_scores)
    all_zero_reason = staticmethod(scoring.all_zero_reason)
    scored_workloads = staticmethod(scoring.scored_workloads)
    scored_names = staticmethod(scoring.scored_names)
    workload_roles = staticmethod(scoring.workload_roles)
    default_reference = staticmethod(scoring.default_reference)
    scored_times = staticmethod(scoring.scored_times)
    performance_profile = staticmethod(scoring.performance_profile)
    speedup_table_with_intervals = staticmethod(scoring.speedup_table_with_intervals)
    uses_budgets = staticmethod(scoring.uses_budgets)
    interval_text = staticmethod(scoring.interval_text)
    studies_per_algorithm = staticmethod(scoring.studies_per_algorithm)
    # what the clock and the pool change (workbench/sensitivity.py)
    rank_shift = staticmethod(sensitivity.rank_shift)
    pool_sensitivity = staticmethod(sensitivity.pool_sensitivity)
    # tuning budgets (workbench/budget.py)
    trial_times = staticmethod(B.trial_times)
    budget_curves = staticmethod(B.budget_curves)
    fastest_probabilities = staticmethod(B.fastest_probabilities)
    scores_by_budget = staticmethod(B.scores_by_budget)
    # head-to-head (workbench/compare.py)
    comparison_table = staticmethod(C.comparison_table)
    level_text = staticmethod(C.level_text)
    # the one power model (workbench/power.py: compare's, with the permutation floor)
    min_detectable_speedup = staticmethod(power.min_detectable_speedup)
    studies_needed = staticmethod(power.studies_needed)
    # the ladder (workbench/ladder.py)
    ladder_analysis = staticmethod(LD.ladder_analysis)
    ladder_budget_text = staticmethod(LD.budget_text)
    ladder_tuning_table = staticmethod(LD.tuning_table)
    # the tuning report's words and tables (workbench/tuning_tables.py)
    tuning_report_table = staticmethod(TT.report_table)
    tuning_space_table = staticmethod(TT.space_table)
    tuning_line = staticmethod(TT.tuning_line)
    # early ranking (workbench/early_stopping.py)
    ranked_groups = staticmethod(early_stopping.ranked_groups)
    final_values = staticmethod(early_stopping.final_values)
    ranking_table = staticmethod(early_stopping.ranking_table)
