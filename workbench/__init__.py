"""Analysis side of Pacebench: specs, the results store, DuckDB queries, xarray cubes, scoring, views.

    import workbench
    res = workbench.open("results/demo")   # workbench.results.Results: runs, score, compare, ...

`import workbench` never imports torch, panel or runners: the training side depends on this
package, never the reverse. The dashboard's libraries load only when a view is asked for.
"""
from workbench.spec import Budget, EvalCadence, RunConfig, StudySpec, Target, WorkloadSpec
from workbench.store import Store, open_store

__all__ = ["open", "Results", "Scope", "open_store", "Store", "Budget", "EvalCadence",
           "RunConfig", "StudySpec", "Target", "WorkloadSpec"]
__version__ = "0.1.0"

_LAZY = {"open": "workbench.results", "Results": "workbench.results", "Scope": "workbench.scope"}


def __getattr__(name: str):
    """workbench.open, Results and Scope, imported when first used: `import workbench` stays as
    light as the store (the training side imports it in every worker)."""
    if name in _LAZY:
        import importlib
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'workbench' has no attribute {name!r}")
