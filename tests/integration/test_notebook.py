"""The notebooks papermill runs: notebooks/study.ipynb (its parameters are the study's fields; it
runs a study end to end) and notebooks/analysis.ipynb (the API over a store, a view inline, and
the view still there once the notebook is exported to HTML)."""
from __future__ import annotations

import dataclasses

import nbformat
import papermill as pm
import pytest

from workbench import query
from workbench.spec import ExecutionOptions, StudySpec
from workbench.store import open_store

from locations import REPO

NOTEBOOK = REPO / "notebooks" / "study.ipynb"
ANALYSIS = NOTEBOOK.with_name("analysis.ipynb")
LION = NOTEBOOK.parents[1] / "examples" / "lion.py:Lion"
EXTRA = {"store", "workers"}  # where and how to run, not what


def test_parameters_are_the_study_fields_and_the_execution_options():
    params = set(pm.inspect_notebook(str(NOTEBOOK)))
    study = {f.name for f in dataclasses.fields(StudySpec)} - {"execution"}
    assert params == study | {f.name for f in dataclasses.fields(ExecutionOptions)} | EXTRA


@pytest.mark.parametrize("path", [NOTEBOOK, ANALYSIS], ids=["study", "analysis"])
def test_committed_notebook_has_no_outputs(path):
    nb = nbformat.read(path, as_version=4)
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


def test_analysis_parameters_are_the_store_the_pair_and_the_scope():
    from workbench.scope import Scope

    params = set(pm.inspect_notebook(str(ANALYSIS)))
    assert params == {"store", "a", "b"} | {f.name for f in dataclasses.fields(Scope)}


def _outputs(nb) -> list[dict]:
    return [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]


@pytest.mark.slow
def test_papermill_runs_the_analysis_and_its_view_survives_an_html_export(tmp_path):
    """One kernel (about 20 s, most of it importing Panel and drawing): the API's numbers, the
    Leaderboard inline, and the exported page's static copy of it."""
    from nbconvert import HTMLExporter

    from workbench.testing import make_store

    make_store(tmp_path / "store", workloads=("digits_mlp",), studies=4, trials=2)
    out = tmp_path / "analysis.ipynb"
    pm.execute_notebook(str(ANALYSIS), str(out), cwd=str(tmp_path), kernel_name="python3",
                        parameters={"store": str(tmp_path / "store"), "studies": "synthetic"})
    nb = nbformat.read(out, as_version=4)
    outputs = _outputs(nb)
    assert not [o for o in outputs if o.output_type == "error"]
    assert not [o for o in outputs if o.get("name") == "stderr" and "Error" in o.get("text", "")]
    text = "\n".join(str(o.get("text", "")) + str(o.get("data", {}).get("text/plain", ""))
                     for o in outputs)
    assert "nothing left out" in text and "verdict: fast faster" in text
    view = [o for o in outputs if o.output_type == "execute_result"
            and "application/vnd.holoviews_exec.v0+json" in o.data]
    assert len(view) == 1  # the Leaderboard, live in JupyterLab (after Panel's loader)
    static = view[0]["data"]["text/html"]
    static = static[static.index('class="pb-static"'):]
    assert "<td>fast</td>" in static and "<td>slow</td>" in static
    page, _ = HTMLExporter().from_notebook_node(nb)  # what nbconvert --to html writes
    exported = page[page.index('class="pb-static"'):]
    assert "<td>fast</td>" in exported and "Score (grid)" in exported
