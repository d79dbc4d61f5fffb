"""The dashboard's sidebar: the widgets that set a Selection's filters, and the store notice.

The widgets follow the selection (a reload adds new names, a filter set elsewhere shows here)
and set it; what the filters mean and leave is workbench/views/selection.py's.
"""
from __future__ import annotations

import panel as pn
import param

from workbench.views.formats import md, picker_labels
from workbench.views.selection import TIME_AXES, Selection

__all__ = ["Filters", "StoreNotice", "MAX_PICKABLE"]

MAX_PICKABLE = 2000  # runs offered by the run picker (the most recent of the selection)
# The target relaxations offered (AlgoPerf's working group swept 0 to 20 %); a notebook view
# may set any value in [0, 1), which is then offered too.
RELAXATIONS = (0.0, 0.01, 0.02, 0.05, 0.1, 0.15, 0.2)


def _title(text: str) -> pn.pane.Markdown:
    """A filter's title, as a Markdown pane: a bare string in a layout makes Panel try every
    pane type on it, and its Matplotlib check imports Matplotlib (0.4 s of a first page)."""
    return pn.pane.Markdown(f"**{text}**")


class Filters(pn.viewable.Viewer):
    """Sidebar widgets bound to a Selection's scope and filters. What is read: the ruleset, the
    study names, the ad-hoc runs (workbench/scope.py); what is shown of it: algorithms,
    workloads (two lists, the base workloads and their variants, that together set
    `selection.workloads`) and hardware. A control is hidden while it offers no choice
    (ruleset, study, hardware: fewer than two values; ad-hoc runs: none in the ruleset)."""

    selection = param.ClassSelector(class_=Selection)

    def __init__(self, **params) -> None:
        super().__init__(**params)
        sel = self.selection.param
        self._bases = pn.widgets.CheckBoxGroup(css_classes=["pb-base-workloads"])
        self._variants = pn.widgets.CheckBoxGroup(css_classes=["pb-variant-filter"])
        self._runs_picker = pn.widgets.MultiChoice(
            placeholder="default: see the Curves tab", search_option_limit=50,
            css_classes=["pb-curve-runs"])
        self._choices = {  # filter name -> its titled widget
            "reference": pn.Column(_title("Speedups against"), pn.widgets.Select.from_param(
                sel.reference, name="")),
            "algorithms": pn.Column(_title("Algorithms"),
                                    pn.widgets.CheckBoxGroup.from_param(sel.algorithms, name="")),
            "workloads": pn.Column(_title("Workloads"), self._bases),
            "variants": pn.Column(_title("Variants"), self._variants),
            "ruleset": pn.Column(_title("Ruleset"), pn.widgets.RadioButtonGroup.from_param(
                sel.ruleset, name="", color="light", css_classes=["pb-ruleset"])),
            "studies": pn.Column(_title("Studies"), pn.widgets.CheckBoxGroup.from_param(
                sel.studies, name="", css_classes=["pb-studies-filter"])),
            "with_adhoc": pn.Column(pn.widgets.Checkbox.from_param(
                sel.with_adhoc, name="ad-hoc runs", css_classes=["pb-with-adhoc"])),
            "hardware": pn.Column(_title("Hardware"),
                                  pn.widgets.CheckBoxGroup.from_param(sel.hardware, name="")),
            "curve_runs": pn.Column(_title("Runs on the curves"), self._runs_picker),
        }
        self._relax = pn.widgets.Select(options=_relax_options(
            self.selection.relax_targets), value=self.selection.relax_targets,
            css_classes=["pb-relax-targets"], width=120)
        self._relax.param.watch(self._relax_picked, "value")
        self.selection.param.watch(self._relax_set, "relax_targets")
        self._syncing = False
        self._runs_picker.param.watch(self._picked, "value")
        self._bases.param.watch(self._boxes_changed, "value")
        self._variants.param.watch(self._boxes_changed, "value")
        self._show_filled()
        self._offer_runs()

    def _split(self) -> tuple[list[str], list[str]]:
        """The store's workloads: (base workloads, variants)."""
        names = self.selection.param.workloads.objects
        variant = self.selection.variant_workloads()
        return [w for w in names if w not in variant], [w for w in names if w in variant]

    @param.depends("selection.version", "selection.workloads", "selection.ruleset", watch=True)
    def _show_filled(self) -> None:
        bases, variants = self._split()
        shown = set(self.selection.workloads)
        self._syncing = True  # the boxes follow the selection here, not the other way round
        try:
            self._bases.param.update(options=bases, value=[w for w in bases if w in shown])
            self._variants.param.update(options=variants,
                                        value=[w for w in variants if w in shown])
        finally:
            self._syncing = False
        for name, column in self._choices.items():
            if name == "variants":
                column.visible = bool(variants)
            elif name == "workloads":
                column.visible = bool(bases)
            elif name == "with_adhoc":
                column.visible = self.selection.ad_hoc_count() > 0
            else:
                least = 2 if name in ("ruleset", "studies", "hardware") else 1
                column.visible = len(self.selection.param[name].objects) >= least

    @param.depends("selection.version", "selection.workloads", "selection.algorithms",
                   "selection.ruleset", "selection.studies", "selection.with_adhoc",
                   "selection.hardware", "selection.curve_runs", watch=True)
    def _offer_runs(self) -> None:
        """The picker offers the filtered runs, the most recent MAX_PICKABLE of them (a list of
        100,000 ids would weigh on the page), plus the ones picked."""
        sel = self.selection
        picked = list(sel.curve_runs)
        recent = sel.recent_runs(MAX_PICKABLE + len(picked))
        ids = picked + [r for r in recent if r not in picked][:MAX_PICKABLE]
        options = picker_labels(sel.run_rows(ids))  # label -> run id, in the picker's order
        self._syncing = True
        try:
            self._runs_picker.param.update(options=options, value=picked)
        finally:
            self._syncing = False

    def _relax_picked(self, event) -> None:
        if event.new != self.selection.relax_targets:
            self.selection.relax_targets = event.new

    def _relax_set(self, event) -> None:
        options = _relax_options(event.new)
        if list(options.values()) != list(self._relax.options.values()):
            self._relax.options = options
        if self._relax.value != event.new:
            self._relax.value = event.new

    def _picked(self, event) -> None:
        if not self._syncing and list(event.new) != list(self.selection.curve_runs):
            self.selection.curve_runs = list(event.new)

    def _boxes_changed(self, _event) -> None:
        if self._syncing:
            return
        chosen = set(self._bases.value) | set(self._variants.value)
        workloads = [w for w in self.selection.param.workloads.objects if w in chosen]
        if workloads != list(self.selection.workloads):
            self.selection.workloads = workloads

    def __panel__(self) -> pn.viewable.Viewable:
        time_axis = pn.widgets.RadioButtonGroup.from_param(
            self.selection.param.time_axis, name="", color="light",
            options={label: column for column, label in TIME_AXES.items()})
        c = self._choices
        return pn.Column(c["ruleset"], c["studies"], c["with_adhoc"], c["reference"],
                         _title("Time axis"), time_axis,
                         _title("Targets relaxed by"), self._relax,
                         c["algorithms"], c["workloads"],
                         c["variants"], c["hardware"], c["curve_runs"],
                         sizing_mode="stretch_width")


def _relax_options(current: float) -> dict[str, float]:
    """The relaxations offered ("0 %", "10 %", ...), `current` among them."""
    values = sorted({*RELAXATIONS, float(current)})
    return {f"{100 * v:g} %": v for v in values}


class StoreNotice(pn.viewable.Viewer):
    """A visible notice when the store is missing, unreadable or empty; hidden otherwise. The
    message (Selection.message, plain text that may quote a file's content) shows as text."""

    selection = param.ClassSelector(class_=Selection)

    def __panel__(self) -> pn.viewable.Viewable:
        alert = pn.pane.Alert(alert_type="warning", sizing_mode="stretch_width")

        def show(message: str) -> None:
            alert.param.update(object=md(message), visible=bool(message))

        show(self.selection.message)
        self.selection.param.watch(lambda event: show(event.new), "message")
        return alert
