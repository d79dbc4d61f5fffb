"""A Selection narrowed by names, as a report (`pacebench report`) or a notebook
(`Results.view`) asks for it: the scope's options and the filters, each checked against what the
store holds."""
from __future__ import annotations

import os
from typing import Iterable

from workbench.errors import UserError
from workbench.results import Results
from workbench.spec import check_relax
from workbench.views.selection import Selection

__all__ = ["selection_of", "names"]


def names(value: str | Iterable[str] | None) -> list[str] | None:
    """A filter value as a list of names: "a,b" (CLI flags, papermill -p) or a list; None: all."""
    if value is None:
        return None
    items = value.split(",") if isinstance(value, str) else list(value)
    return [str(item).strip() for item in items if str(item).strip()]


def _check(what: str, values: list[str], valid: list[str], store_path) -> None:
    """ValueError naming the values of `what` the store does not hold, and those it does."""
    unknown = [v for v in values if v not in valid]
    if unknown or not values:
        raise UserError(f"unknown {what} {', '.join(map(repr, unknown)) or '(none given)'}: "
                        f"the store at {store_path} holds {', '.join(valid) or 'none'}")


def selection_of(store_path: str | os.PathLike, *, ruleset: str | None = None,
                 studies: str | Iterable[str] | None = None, with_adhoc: bool = False,
                 workloads: str | Iterable[str] | None = None,
                 algorithms: str | Iterable[str] | None = None,
                 time_axis: str | None = None, relax_targets: float = 0.0,
                 reference: str | None = None) -> Selection:
    """The selection of the store at `store_path` with the scope and filters given (None: the
    defaults, everything the scope reads): what a report and a notebook's view show.

    ruleset, studies, with_adhoc: what is read (workbench/scope.py); workloads, algorithms:
    names or "a,b", as the scope labels them; time_axis: train, wall or steps; relax_targets:
    R in [0, 1), targets made easier (spec.relaxed_goal); reference: the algorithm speedups
    are measured against (None: scoring.default_reference). A name the store does not hold is
    an error that lists the ones it does; so is a filter that leaves nothing.
    """
    selection = Selection(store_path=str(store_path))
    if selection.message:
        raise UserError(f"nothing to show: {selection.message}")
    if ruleset is not None:
        _check("ruleset", [ruleset], selection.param.ruleset.objects, store_path)
        selection.ruleset = ruleset
    scope: dict = {"with_adhoc": bool(with_adhoc)}
    if (chosen := names(studies)) is not None:
        valid, ad_hoc = selection.study_names()
        if any(n in ad_hoc for n in chosen):
            raise UserError(f"{', '.join(n for n in chosen if n in ad_hoc)}: ad-hoc runs, "
                            "not a study: take them in with with_adhoc (--with-adhoc); the "
                            f"store's studies are {', '.join(valid) or 'none'}")
        _check("studies", chosen, valid, store_path)
        scope["studies"] = [n for n in valid if n in chosen]  # the store's order
    selection.param.update(**scope)
    update = {}
    for name, values in (("workloads", names(workloads)), ("algorithms", names(algorithms))):
        if values is not None:
            valid = list(selection.param[name].objects)
            _check(name, values, valid, store_path)
            update[name] = [v for v in valid if v in values]
    if time_axis is not None:
        update["time_axis"] = Results.axis_column(time_axis)
    if relax_targets:
        update["relax_targets"] = check_relax(relax_targets)  # one line on a bad value
    selection.param.update(**update)
    if reference is not None:  # after the filters, which choose the default one
        valid = list(selection.param.reference.objects)
        if reference not in valid:
            raise UserError(f"unknown reference {reference!r}: the shown algorithms with "
                            f"finished runs are {', '.join(valid) or 'none'}")
        selection.reference = reference
    return selection
