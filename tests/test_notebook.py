"""notebooks/study.ipynb: its parameters are the study's fields, and papermill runs it end to end."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import nbformat
import papermill as pm
import pytest

from workbench import query
from workbench.spec import ExecutionOptions, StudySpec
from workbench.store import open_store

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "study.ipynb"
LION = NOTEBOOK.parents[1] / "examples" / "lion.py:Lion"
EXTRA = {"store", "workers"}  # where and how to run, not what


def test_parameters_are_the_study_fields_and_the_execution_options():
    params = set(pm.inspect_notebook(str(NOTEBOOK)))
    study = {f.name for f in dataclasses.fields(StudySpec)} - {"execution"}
    assert params == study | {f.name for f in dataclasses.fields(ExecutionOptions)} | EXTRA


def test_committed_notebook_has_no_outputs():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    assert all(not c.get("outputs") and c.get("execution_count") is None
               for c in nb.cells if c.cell_type == "code")


@pytest.mark.slow
def test_papermill_runs_a_tiny_study(tmp_path):
    out = tmp_path / "out.ipynb"
    store = tmp_path / "store"
    pm.execute_notebook(str(NOTEBOOK), str(out), cwd=str(tmp_path), kernel_name="python3",
                        parameters={"workloads": "synthetic",  # a plug-in optimizer by path:
                                    "algorithms": f"adamw,lion={LION}",
                                    "studies": 1, "trials": 2, "max_steps": 60, "store": str(store),
                                    "workers": 2, "name": "tiny"})
    runs = query.runs_frame(open_store(store))
    assert len(runs) == 4 and set(runs.study_name) == {"tiny"}
    assert set(runs.algorithm) == {"adamw", "lion"}
    nb = nbformat.read(out, as_version=4)
    text = "\n".join(str(o.get("text", "")) + str(o.get("data", {}).get("text/plain", ""))
                     for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    assert "4 trials planned" in text
    assert "exact_score" in text  # the score table was shown
    assert nb.metadata["papermill"]["parameters"]["workloads"] == "synthetic"
