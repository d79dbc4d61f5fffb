"""notebooks/scaling.ipynb: its parameters are the scaling study's fields; papermill runs it."""
from __future__ import annotations

import dataclasses

import nbformat
import papermill as pm
import pytest

from workbench import query
from workbench.spec import ScalingSpec
from workbench.store import open_store

from locations import REPO

NOTEBOOK = REPO / "notebooks" / "scaling.ipynb"
EXTRA = {"store", "workers"}


def test_parameters_are_the_scaling_fields():
    params = set(pm.inspect_notebook(str(NOTEBOOK)))
    scaling = {f.name for f in dataclasses.fields(ScalingSpec)} - {"execution"}
    assert params == scaling | {"threads"} | EXTRA  # the one execution option a scaling study takes


def test_committed_notebook_has_no_outputs():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    assert all(not c.get("outputs") and c.get("execution_count") is None
               for c in nb.cells if c.cell_type == "code")


@pytest.mark.slow
def test_papermill_runs_a_tiny_scaling_study(tmp_path):
    out, store = tmp_path / "out.ipynb", tmp_path / "store"
    pm.execute_notebook(str(NOTEBOOK), str(out), cwd=str(tmp_path), kernel_name="python3",
                        parameters={"batch_sizes": "32,256", "sparsities": "0,0.5", "trials": 1,
                                    "goal": 0.8, "max_steps": 300, "store": str(store),
                                    "workers": 2, "name": "tiny"})
    assert len(query.runs_frame(open_store(store))) == 4
    nb = nbformat.read(out, as_version=4)
    text = "\n".join(str(o.get("text", "")) + str(o.get("data", {}).get("text/plain", ""))
                     for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    assert "4 trials planned" in text and "b_crit" in text
