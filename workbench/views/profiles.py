"""Performance profiles: for each algorithm, the fraction of workloads it solves within tau
times the fastest algorithm's time, drawn as right-continuous step lines for tau in [1, 4].

The profile itself is `workbench.scoring.performance_profile` of the times after the selection's
scoring rules (the store's, e.g. AlgoPerf v0.5's held-out rule, when it records them); this view
only draws it.
"""
from __future__ import annotations

import numpy as np
import panel as pn
import param

from workbench.results import TAU_MAX, Results
from workbench.views.base import View
from workbench.views.live import LivePlot, steps
from workbench.views.selection import Selection
from workbench.views.plotting import hv


__all__ = ["Profiles", "profile_lines", "profile_plot", "figures", "PROFILE_TAUS"]

# Drawn on a fine grid so each step sits where the ratio is; the score uses the official grid.
PROFILE_POINTS = 601
PROFILE_TAUS = np.linspace(1.0, TAU_MAX, PROFILE_POINTS)
TAU_MAX_CHOICES = (1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 10.0, 16.0)  # the view's tau_max slider
YLABEL = "fraction of workloads within tau"


def profile_lines(selection: Selection, tau_max: float = TAU_MAX) -> dict | None:
    """What the profile plot draws: {"lines": step lines rho(tau) for tau in [1, tau_max]
    over the scored workloads, one per algorithm in score order (the legend reads as the
    leaderboard), "widths" and "alphas" (the leaders thicker and opaque: eleven overlapping
    step lines stay readable), "xlabel", "title"}; None if no workload is scored. The cut-off
    moves with tau_max (at AlgoPerf's 4 the profile is the one the score integrates)."""
    if not selection.n_runs or not selection.workload_groups()["scored"]:
        return None
    times = Results.scored_times(selection.cube, selection.scoring_config, cutoff=tau_max)
    if times.sizes.get("workload", 0) == 0 or times.sizes.get("algorithm", 0) == 0:
        return None
    taus = PROFILE_TAUS if tau_max == TAU_MAX else np.linspace(1.0, tau_max,
                                                                        PROFILE_POINTS)
    profile = Results.performance_profile(times, taus=taus)
    units = selection.cube["time_to_target"].attrs.get("units", "s")
    what = "steps" if units == "steps" else "time"
    colors, table = selection.colors, selection.scores()
    ranked = [a for a in table["algorithm"] if a in profile["algorithm"].values]
    order = ranked + [a for a in profile["algorithm"].values if a not in ranked]
    tau = profile["tau"].values
    return {
        "lines": [(str(name), colors.get(name, "gray"), tau, profile.sel(algorithm=name).values)
                  for name in order],
        "widths": [4.0 if i == 0 else 3.0 if i < 3 else 1.8 for i in range(len(order))],
        "alphas": [1.0 if i < 3 else 0.75 for i in range(len(order))],
        "xlabel": f"tau ({what} / fastest algorithm's {what})",
        "title": f"Performance profiles ({_studies(selection)}; the scores' 90 % intervals "
                 "are on the Leaderboard)"}


def profile_plot(selection: Selection, tau_max: float = TAU_MAX) -> hv.Overlay | None:
    """profile_lines as HoloViews step lines (paper figures and the report); None if no
    workload is scored."""
    drawn = profile_lines(selection, tau_max)
    if drawn is None:
        return None
    lines = [hv.Curve((x, y), kdims="tau", vdims="rho", label=label).opts(
        color=color, line_width=width, alpha=alpha)
        for (label, color, x, y), width, alpha in zip(drawn["lines"], drawn["widths"],
                                                      drawn["alphas"])]
    return hv.Overlay(lines).opts(
        hv.opts.Curve(interpolation="steps-post", tools=["hover"]),
        hv.opts.Overlay(xlim=(1, tau_max), ylim=(-0.02, 1.02), responsive=True, min_height=380,
                        xlabel=drawn["xlabel"], ylabel=YLABEL, legend_position="right",
                        title=drawn["title"], show_grid=True))


def _studies(selection: Selection) -> str:
    """'5 studies each' or '3 to 5 studies per algorithm': the studies with runs behind each
    algorithm's profile."""
    times = selection.study_times()
    counts = times.notnull().any("workload").sum("study").values.tolist() or [0]
    low, high = int(min(counts)), int(max(counts))
    return f"{high} studies each" if low == high else f"{low} to {high} studies per algorithm"


def figures(selection: Selection) -> dict[str, hv.Overlay]:
    """The profile plot for `workbench.figures` ("profiles"); none when nothing is scored."""
    plot = profile_plot(selection)
    return {} if plot is None else {"profiles": plot}


class Profiles(View):
    """Performance-profile plot of the selection, redrawn when data or filters change; tau_max
    is picked in the view."""

    tau_max = param.Selector(default=TAU_MAX, objects=list(TAU_MAX_CHOICES),
                             doc="Right end of the profile (AlgoPerf's score uses 4).")

    def __init__(self, **params) -> None:
        super().__init__(**params)
        # made once, redrawn in place (workbench.views.live); the report draws it once too
        self._plot = LivePlot(xlabel="tau", ylabel=YLABEL, height=400, y_range=(-0.02, 1.02),
                              x_range=(1.0, self.tau_max), css_classes=["pb-profiles"])
        self._pane = self._plot.pane
        self._empty = pn.pane.Markdown("No workload can be scored with the current selection.",
                                       visible=False)
        self.param.watch(lambda _: self._selection_changed(), "tau_max")
        self._first_draw()

    def _update(self) -> None:
        drawn = profile_lines(self.selection, self.tau_max)
        if drawn is not None:
            self._plot.draw([(label, color, *steps(x, y)) for label, color, x, y in
                             drawn["lines"]], drawn["title"], widths=drawn["widths"],
                            alphas=drawn["alphas"], xlim=(1.0, self.tau_max),
                            xlabel=drawn["xlabel"])
        self._pane.visible = drawn is not None
        self._empty.visible = drawn is None

    def __panel__(self) -> pn.viewable.Viewable:
        return pn.Column(
            pn.pane.Markdown(
                "### Performance profiles\nrho(tau): share of the shown scored workloads on "
                "which an algorithm reaches the target within tau times the fastest algorithm's "
                "median time, after the same rules as the leaderboard score (held-out variants "
                "and a cut-off at tau_max x the best time, AlgoPerf's 4 by default). Higher and "
                "further left is better; a line that never rises missed every target."
                + (" The sidebar's time axis switches between time and steps to target."
                   if self.live else "")),
            pn.widgets.DiscreteSlider.from_param(self.param.tau_max, name="tau_max", width=320,
                                                 visible=self.live),  # dead in a report
            self._empty, self._pane, sizing_mode="stretch_width")
