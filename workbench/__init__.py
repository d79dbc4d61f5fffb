"""Analysis side of Pacebench: specs, the results store, DuckDB queries, xarray cubes, scoring, views.

`import workbench` never imports torch, panel or runners: the training side depends on this
package, never the reverse.
"""
from workbench.spec import Budget, EvalCadence, RunConfig, StudySpec, Target, WorkloadSpec
from workbench.store import Store, open_store

__all__ = ["open_store", "Store", "Budget", "EvalCadence", "RunConfig", "StudySpec", "Target",
           "WorkloadSpec"]
__version__ = "0.1.0"
