"""Cost vs accuracy (DAWNBench and the compute-efficiency survey): dollars to the target, the
Pareto front of cost against the best quality reached, cost-to-quality and speedup-at-quality
curves, and batch-1 inference latency and cost per 10,000 examples.

Every number comes from `workbench.costs` with the prices of an editable price table (one row per
hardware key of the shown runs, filled from costs.PRICE_RULES); editing a price recomputes the
view. A hardware key without a price shows "n/a" and a notice naming it. The curve plots are drawn
for one workload, picked in the view; they read the eval rows of one run per study
(costs.curve_runs), never every run of the store.

This module is the view; its tables are workbench/views/cost_tables.py's, its plots
workbench/views/cost_plots.py's (all importable from here).
"""
from __future__ import annotations

import math

import pandas as pd
import panel as pn
import param

from workbench import costs
from workbench.views.cost_plots import (PLOTS, cost_quality_data, cost_quality_plot, figures,
                                        pareto_data, pareto_plot, speedup_data, speedup_plot)
from workbench.views.cost_tables import (COST_TITLES, EDITED, MAX_PARETO_POINTS, NOT_MEASURED,
                                         NOT_PRICED, PRICE_TITLES, QUALITY_POINTS, cost_frame,
                                         cost_pivot, cost_table, cost_text, energy_text,
                                         eval_share, eval_share_frame, missing_prices_note,
                                         price_frame, prices_key, shown_workloads,
                                         significant, train_time_cube, usd)
from workbench.views.formats import MISS, md
from workbench.views.base import FILTERS, View
from workbench.views.leaderboard import GROUP_TITLES, TABLE_CSS, wrap_title
from workbench.views.live import LivePlot

__all__ = ["Costs", "figures", "cost_table", "cost_frame", "cost_pivot", "price_frame",
           "train_time_cube", "missing_prices_note", "pareto_data", "pareto_plot",
           "cost_quality_data", "cost_quality_plot", "speedup_data", "speedup_plot", "usd",
           "NOT_PRICED", "MAX_PARETO_POINTS", "QUALITY_POINTS", "eval_share", "eval_share_frame",
           "EDITED", "NOT_MEASURED", "cost_text", "energy_text", "significant"]


class Costs(View):
    """The price table, the median cost to target of every shown workload and, for the workload
    picked here, its costs and inference table and its Pareto, quality-for-the-money and
    speedup-at-quality plots. Draws only while shown (workbench.views.base.View)."""

    WATCHES = FILTERS + ("reference",)
    workload = param.Selector(default=None, objects=[], allow_None=True,
                              doc="Workload of the table and plots of one workload.")
    show_eval_share = param.Boolean(default=False, doc=(
        "Show the eval share of wall clock per algorithm and workload (eval_share_frame: it "
        "reads the last eval row of every shown run)."))

    def __init__(self, **params) -> None:
        super().__init__(**params)
        self._edited: dict[str, costs.Price] = {}  # prices typed into the table, kept on refresh
        self._applying = False  # True while the view itself writes the price table
        self._prices = pn.widgets.Tabulator(
            show_index=False, layout="fit_data_stretch", sizing_mode="stretch_width",
            titles=PRICE_TITLES, css_classes=["pb-prices"], stylesheets=[TABLE_CSS],
            editors={"hardware": None, "source": None,
                     "usd_per_hour": {"type": "number", "min": 0, "step": 0.01}},
            formatters={"source": {"type": "textarea"}}, widths={"source": "50%"})
        self._prices.param.watch(self._prices_edited, "value")
        self._notice = pn.pane.Alert(alert_type="warning", sizing_mode="stretch_width",
                                     visible=False, css_classes=["pb-missing-prices"])
        self._overview = pn.Column(sizing_mode="stretch_width")
        self._overview_tables: dict[str, tuple] = {}  # group -> (title, table), made once
        # made now, not at the first draw: a table first rendered after the page lost
        # TABLE_CSS's header style to the page's theme
        for group in GROUP_TITLES:
            self._overview_table(group)
        self._cost_table = pn.widgets.Tabulator(  # the picked workload's table
            disabled=True, show_index=False, layout="fit_columns", sortable=False,
            widths={"algorithm": 190, "hardware": 200},
            sizing_mode="stretch_width", titles=COST_TITLES, css_classes=["pb-costs"],
            stylesheets=[TABLE_CSS], text_align={c: "right" for c in COST_TITLES
                                                 if c not in ("algorithm", "hardware")})
        self._detail = pn.Column(sizing_mode="stretch_width")
        # the plots are made once and redrawn in place (workbench.views.live)
        self._live = {css: {log: LivePlot(xlabel="", ylabel="", height=380, x_log=log, **opts)
                            for log in ((False,) if opts.get("y_log") else (False, True))}
                      for css, (_, _, opts) in PLOTS.items()}
        self._notes = {css: pn.pane.Markdown(visible=False) for css in PLOTS}
        self._slots = {css: pn.Column(*(p.pane for p in self._live[css].values()),
                                      self._notes[css], sizing_mode="stretch_width",
                                      css_classes=[css]) for css in PLOTS}
        self._plots = pn.Column(*self._slots.values(), sizing_mode="stretch_width")
        self._drawn: dict[str, tuple] = {}  # part -> the state it was last drawn for
        self._share_toggle = pn.widgets.Toggle.from_param(
            self.param.show_eval_share, name="Show the eval share of wall clock",
            color="light", css_classes=["pb-eval-share-toggle"], width=320)
        self._share = pn.widgets.Tabulator(
            disabled=True, show_index=False, layout="fit_columns", sortable=False,
            sizing_mode="stretch_width", css_classes=["pb-eval-share"], stylesheets=[TABLE_CSS],
            widths={"algorithm": 190}, visible=False)
        self.param.watch(lambda _: self._draw_eval_share(), "show_eval_share")
        self.param.watch(lambda _: self._draw_workload(), "workload")
        self._first_draw()

    # -- prices ------------------------------------------------------------------------------
    @property
    def prices(self) -> costs.PriceTable:
        """The prices in use: the defaults of the shown hardware, with the edits over them."""
        defaults = costs.PriceTable.defaults(self.selection.present("hardware", nulls=True))
        return costs.PriceTable({**defaults.prices, **self._edited})

    def _show_prices(self) -> None:
        prices = self.prices
        frame = price_frame(self.selection, prices)
        # unchanged by most filter changes (it lists the shown hardware): a table set anew is
        # sent and rendered again by the browser (Tabulator), the most of a change's time there
        if self._prices.value is None or not frame.equals(self._prices.value):
            self._applying = True
            try:
                self._prices.value = frame
            finally:
                self._applying = False
        note = missing_prices_note(self.selection, prices)
        self._notice.param.update(object=note, visible=bool(note))

    def _prices_edited(self, event: param.parameterized.Event) -> None:
        """Prices typed into the table: keep them (source: edited) and recompute the view; an
        emptied price falls back to the default, an invalid one is refused with a notice."""
        if self._applying:
            return
        shown, refused, changed = self.prices, [], False
        for row in event.new.to_dict("records"):
            key, value = row["hardware"], row["usd_per_hour"]
            old = shown.usd_per_hour(key)
            if value is None or pd.isna(value):
                changed |= self._edited.pop(key, None) is not None
            elif math.isnan(old) or float(value) != old:
                try:
                    self._edited[key] = costs.Price(float(value), EDITED)
                    changed = True
                except (TypeError, ValueError) as exc:
                    refused.append(f"**Price of {md(key)} not used:** {md(exc)}")
        if not (changed or refused):
            return  # the browser echoed the table back unchanged: nothing to recompute
        self._show_prices()
        if refused:
            self._notice.param.update(object="\n\n".join(refused), visible=True)
        self._draw_costs()

    # -- drawing -----------------------------------------------------------------------------
    def _update(self) -> None:
        """The selection changed: prices of the shown hardware, workload choices, everything."""
        shown = shown_workloads(self.selection)
        self.param.workload.objects = shown
        self._show_prices()
        before = self.workload
        if self.workload not in shown:
            self.workload = shown[0] if shown else None  # a new workload draws its own part
        if self.workload == before:
            self._draw_workload()
        self._draw_overview()
        self._draw_eval_share()

    def _draw_costs(self) -> None:
        self._draw_overview()
        self._draw_workload()

    def _draw_eval_share(self) -> None:
        """The eval share table (eval_share_frame), while show_eval_share is on."""
        shown = self.show_eval_share and self.selection.n_runs > 0
        if shown:
            workloads = shown_workloads(self.selection)
            self._share.param.update(
                value=eval_share_frame(self.selection, workloads),
                titles={"algorithm": "Algorithm", **{w: wrap_title(w) for w in workloads}},
                text_align={w: "right" for w in workloads})
        self._share.visible = shown

    def _state(self, *extra) -> tuple:
        """What a part drawn from the selection depends on: data, filters, prices and `extra`."""
        filters = (getattr(self.selection, f) for f in FILTERS)
        return (*(tuple(v) if isinstance(v, list) else v for v in filters),
                prices_key(self.prices), *extra)

    def _redraw(self, part: str, state: tuple) -> bool:
        """Whether `part` needs drawing for `state` (remembered as drawn): one filter change
        can notify twice (algorithms, then the reference they imply); only changed parts redraw."""
        if self._drawn.get(part) == state:
            return False
        self._drawn[part] = state
        return True

    def _draw_overview(self) -> None:
        """Median cost to target, algorithm x workload (cost_pivot), one table per group of
        workloads as on the leaderboard (scored, held out, other)."""
        if not self._redraw("overview", self._state()):
            return
        groups = self.selection.workload_groups() if self.selection.n_runs else {}
        parts, prices = [], self.prices
        for name, workloads in groups.items():
            workloads = [w for w in workloads if w in self.selection.workloads]
            if not workloads:
                continue
            title, table = self._overview_table(name)  # kept: only its values change
            table.param.update(
                value=cost_pivot(self.selection, prices, workloads),
                titles={"algorithm": "Algorithm", **{w: wrap_title(w) for w in workloads}},
                text_align={w: "right" for w in workloads})
            parts += [title, table]
        if not parts:
            parts = [pn.pane.Markdown("No runs with the current selection.")]
        if [id(p) for p in parts] != [id(p) for p in self._overview.objects]:
            self._overview.objects = parts  # a layout set anew rebuilds its page models

    def _overview_table(self, group: str) -> tuple[pn.pane.Markdown, pn.widgets.Tabulator]:
        """The title and table of one group of workloads in the overview (made once)."""
        if group not in self._overview_tables:
            self._overview_tables[group] = (
                pn.pane.Markdown(f"**{GROUP_TITLES[group]}**"), pn.widgets.Tabulator(
                    disabled=True, show_index=False, layout="fit_columns", sortable=False,
                    sizing_mode="stretch_width", css_classes=[f"pb-cost-overview-{group}"],
                    stylesheets=[TABLE_CSS], widths={"algorithm": 190}))
        return self._overview_tables[group]

    def _draw_workload(self) -> None:
        """The picked workload's cost table (cost_frame) and plots."""
        if not self.shown:
            self._mark_stale()
            return
        workload, prices = self.workload, self.prices
        if workload is None:
            self._drawn.clear()
            self._detail.objects = [pn.pane.Markdown("No runs with the current selection.")]
            for css in PLOTS:
                self._show_plot(css, None)
            return
        if self._redraw("detail", self._state(workload)):
            self._cost_table.value = cost_frame(self.selection, prices,
                                                workload).drop(columns="workload")
            if self._detail.objects != [self._cost_table]:
                self._detail.objects = [self._cost_table]
        for css, (data_of, _, _) in PLOTS.items():
            extra = (self.selection.reference,) if css == "pb-speedup-quality" else ()
            if self._redraw(css, self._state(workload, *extra)):
                self._show_plot(css, data_of(self.selection, workload, prices))

    def _show_plot(self, css: str, data: dict | None) -> None:
        """Draw plot `css` from `data` in place, or say why there is none (data None)."""
        log = bool(data and data.get("log"))
        for key, plot in self._live[css].items():
            if data is not None and key == log:
                PLOTS[css][1](plot, data, self.selection.colors)
            elif data is not None:
                plot.make()  # the other scale too, now: a change of scale then costs no models
            plot.pane.visible = data is not None and key == log
        missing = data is None and self.workload is not None
        self._notes[css].param.update(object=self._nothing(css) if missing else "",
                                      visible=missing)

    def _nothing(self, css: str) -> str:
        if css == "pb-speedup-quality":
            return (f"*{md(self.workload)}: no speedup-at-quality curve: it needs priced curves "
                    f"of the reference algorithm ({md(self.selection.reference)}) and of another "
                    "algorithm.*")
        return (f"*{md(self.workload)}: nothing to draw: no run has both a priced cost and a "
                "quality.*")

    def __panel__(self) -> pn.viewable.Viewable:
        return pn.Column(
            pn.pane.Markdown(
                "### Cost vs accuracy\nCost = training hours (the training clock, evals off it, "
                "as DAWNBench counted) x the hourly price of the run's hardware. **Prices** are "
                "on-demand USD per hour by hardware; edit a price and every cost below "
                "recomputes."),
            self._prices, self._notice,
            pn.pane.Markdown(
                "#### Median cost to target\nPer study the trial the leaderboard's rule chose "
                "(first to meet the validation target), its training time x its price; the "
                f"median over studies (*{MISS}*: the median study missed; *{NOT_PRICED}*: its "
                "hardware has no price above). On a CPU whose price is the default example "
                "rate, in *core-s* (training seconds x cores); type a price above for dollars. "
                "Three significant digits."),
            self._overview,
            pn.pane.Markdown(
                "#### Eval share of wall clock\nThe training clock pauses while a run "
                "evaluates, so no score counts that time: per algorithm and workload, the eval "
                "seconds over the wall seconds of its shown finished runs, each run's read at "
                "its last eval row (accumulated values) and summed over the runs before "
                "dividing (*pacebench score --json*'s *eval_share*). Off until asked: it reads "
                "every shown run's eval rows."),
            *([self._share_toggle] if self.live else []), self._share,
            pn.pane.Markdown(
                "#### One workload\nIts costs per algorithm, cheapest first. *Inference*: the "
                "median over runs of the batch-1 latency measured at the end of each run (median "
                "of 50 single-example forward passes, off the training clock), and what 10,000 "
                "such inferences cost at the run's price. *GPU energy*: the median over runs of "
                "a whole run's GPU energy (NVML). "
                f"*{NOT_MEASURED}*: not measured (an imported run, or no GPU). Then its curves. "
                "*Cost vs best quality*: every run at its whole cost and best validation value; "
                "black rings and steps: the Pareto front (no run is both cheaper and better). "
                "*Quality for the money*: best validation value so far against cost so far, thin "
                "grey per study (the chosen trial, or the best one of a study that missed), bold "
                "the median over studies of the cost to reach each quality. *Speedup at "
                "quality*: s(q) = the reference's median cost to reach q / the algorithm's "
                "(above 1: cheaper than the reference), where both reach q."),
            pn.widgets.Select.from_param(self.param.workload, name="Workload", width=320),
            self._detail, self._plots,
            sizing_mode="stretch_width")
