"""Performance profiles: for each algorithm, the fraction of workloads it solves within tau
times the fastest algorithm's time, drawn as right-continuous step lines for tau in [1, 4].

The profile itself is `workbench.scoring.performance_profile` of the times after the selection's
scoring rules (the store's, e.g. AlgoPerf v0.5's held-out rule, when it records them); this view
only draws it.
"""
from __future__ import annotations

import holoviews as hv
import numpy as np
import panel as pn
import param

from workbench import scoring
from workbench.views.selection import Selection

hv.extension("bokeh", logo=False)  # the backend whose options the plots below set

__all__ = ["Profiles", "profile_plot", "PROFILE_TAUS"]

# Drawn on a fine grid so each step sits where the ratio is; the score uses the official grid.
PROFILE_TAUS = np.linspace(1.0, 4.0, 601)


def profile_plot(selection: Selection) -> hv.Overlay | None:
    """Step lines rho(tau) over the scored workloads, one per algorithm; None if none is scored."""
    if not len(selection.runs) or not selection.workload_groups()["scored"]:
        return None
    times = scoring.scored_times(selection.cube, selection.scoring_config)
    if times.sizes.get("workload", 0) == 0 or times.sizes.get("algorithm", 0) == 0:
        return None
    profile = scoring.performance_profile(times, taus=PROFILE_TAUS)
    colors = selection.colors
    lines = [
        hv.Curve((profile["tau"].values, profile.sel(algorithm=name).values),
                 kdims="tau", vdims="rho", label=str(name)).opts(color=colors.get(name, "gray"))
        for name in profile["algorithm"].values
    ]
    return hv.Overlay(lines).opts(
        hv.opts.Curve(interpolation="steps-post", line_width=2.5, tools=["hover"]),
        hv.opts.Overlay(xlim=(1, 4), ylim=(-0.02, 1.02), responsive=True, min_height=380,
                        xlabel="tau (time / fastest algorithm's time)",
                        ylabel="fraction of workloads within tau", legend_position="right",
                        title="Performance profiles", show_grid=True))


class Profiles(pn.viewable.Viewer):
    """Performance-profile plot of the selection, redrawn when data or filters change."""

    selection = param.ClassSelector(class_=Selection)

    def __init__(self, **params) -> None:
        super().__init__(**params)
        self._pane = pn.pane.HoloViews(sizing_mode="stretch_width", min_height=400,
                                       css_classes=["pb-profiles"])
        self._empty = pn.pane.Markdown("No workload can be scored with the current selection.",
                                       visible=False)
        self._update()

    @param.depends("selection.version", "selection.workloads", "selection.algorithms",
                   watch=True)
    def _update(self) -> None:
        plot = profile_plot(self.selection)
        self._pane.param.update(object=plot, visible=plot is not None)
        self._empty.visible = plot is None

    def __panel__(self) -> pn.viewable.Viewable:
        return pn.Column(
            pn.pane.Markdown(
                "### Performance profiles\nrho(tau): share of the shown scored workloads on "
                "which an algorithm reaches the target within tau times the fastest algorithm's "
                "median time, after the same rules as the leaderboard score (held-out variants "
                "and the 4x cut-off where they apply). Higher and further left is better; a "
                "line that never rises missed every target."),
            self._empty, self._pane, sizing_mode="stretch_width")
