"""Reports: `workbench.report` (filters, HTML), `workbench.figures` (PNG/SVG for papers),
`pacebench report` and notebooks/report.ipynb run by papermill."""
from __future__ import annotations

import inspect
import logging
import struct
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import nbformat
import pandas as pd
import papermill as pm
import pytest

from runners.cli import main
from workbench.figures import FigureError, collect, save_figure, to_matplotlib, write_figures
from workbench.report import report_selection, write_report
from workbench.testing import make_store
from workbench.views.plotting import hv  # as the views have it: Bokeh's backend loaded
from workbench.views.selection import Selection

from locations import REPO

NOTEBOOK = REPO / "notebooks" / "report.ipynb"
ALGORITHMS = ("alg_fast", "alg_mid", "alg_slow")  # names no library code contains
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    path = tmp_path_factory.mktemp("report") / "store"
    make_store(path, algorithms=ALGORITHMS)
    return path


def png_size(path: Path) -> tuple[int, int]:
    """(width, height) in pixels from the PNG header (IHDR is the first chunk)."""
    data = path.read_bytes()
    assert data[:8] == PNG_SIGNATURE, f"{path} is not a PNG"
    return struct.unpack(">II", data[16:24])


def svg_texts(path: Path) -> str:
    """All text of an SVG (which must parse as XML), joined by newlines."""
    root = ET.parse(path).getroot()
    assert root.tag == f"{SVG}svg"
    return "\n".join("".join(t.itertext()) for t in root.iter(f"{SVG}text"))


# -- filters ---------------------------------------------------------------------------------
def test_filters_narrow_the_selection(store):
    selection = report_selection(store, workloads="digits_mlp", algorithms=["alg_slow", "alg_fast"])
    assert sorted(selection.runs["algorithm"].unique()) == ["alg_fast", "alg_slow"]
    assert set(selection.runs["workload"]) == {"digits_mlp"}
    everything = report_selection(store)
    assert sorted(everything.runs["algorithm"].unique()) == list(ALGORITHMS)


@pytest.mark.parametrize("filters, wrong, valid", [
    ({"algorithms": "alg_fast,adamw"}, "'adamw'", "alg_fast, alg_mid, alg_slow"),
    ({"workloads": ["cifar"]}, "'cifar'", "digits_cnn, digits_mlp"),
    ({"ruleset": "selff"}, "'selff'", "external"),
    ({"studies": "nope"}, "'nope'", "synthetic"),
    ({"algorithms": []}, "(none given)", "alg_fast, alg_mid, alg_slow"),
])
def test_a_bad_filter_value_names_the_valid_ones(store, tmp_path, filters, wrong, valid):
    out = tmp_path / "r.html"
    with pytest.raises(ValueError) as error:
        write_report(store, out, **filters)
    message = str(error.value)
    assert wrong in message and valid in message and next(iter(filters)) in message
    assert not out.exists()


def test_a_bad_format_or_a_missing_store_is_an_error(store, tmp_path):
    with pytest.raises(ValueError, match="'pdf': valid are png, svg"):
        write_report(store, tmp_path / "r.html", figures=tmp_path / "f", formats="png,pdf")
    with pytest.raises(ValueError, match="nothing to report"):
        write_report(tmp_path / "no-store", tmp_path / "r.html")
    assert not (tmp_path / "r.html").exists()


def test_cli_rejects_a_bad_filter(store, tmp_path, capsys):
    assert main(["report", "--store", str(store), "--out", str(tmp_path / "r.html"),
                 "--algorithms", "alg_fast,nope"]) == 2
    assert "unknown algorithms 'nope'" in capsys.readouterr().err


def test_the_report_reads_the_ruleset_studies_and_ad_hoc_runs_asked_for(tmp_path):
    from workbench.report import _filters_text
    from workbench.testing import make_mixed_store

    make_mixed_store(tmp_path / "mixed")
    default = report_selection(tmp_path / "mixed")  # as every analysis reads it by default
    assert (default.ruleset, default.studies, default.with_adhoc) == ("external",
                                                                       ["main", "wide"], False)
    assert "launched_by" in default.runs and "run" not in set(default.runs["launched_by"])
    assert _filters_text(default) == " Shown: ruleset external."
    own = report_selection(tmp_path / "mixed", ruleset="self")
    assert set(own.full_runs()["ruleset"]) == {"self"} and own.algorithms == ["adamw",
                                                                              "heavy_ball"]
    wide = report_selection(tmp_path / "mixed", studies="wide", with_adhoc=True)
    assert set(wide.full_runs()["study_name"]) == {"wide", "adhoc"}
    assert "studies wide" in _filters_text(wide) and "ad-hoc runs taken in" in _filters_text(wide)
    with pytest.raises(ValueError, match="adhoc: ad-hoc runs, not a study: take them in with "
                                         "with_adhoc"):
        report_selection(tmp_path / "mixed", studies="adhoc")
    with pytest.warns(FutureWarning, match="rulesets= is deprecated"):
        assert report_selection(tmp_path / "mixed", rulesets="self").ruleset == "self"
    with pytest.warns(FutureWarning), pytest.raises(ValueError, match="reads one ruleset"):
        report_selection(tmp_path / "mixed", rulesets="external,self")


def test_cli_report_passes_the_scope_flags_and_knows_no_rulesets_flag(store, tmp_path,
                                                                     capsys, monkeypatch):
    import workbench.report

    asked = []
    monkeypatch.setattr(workbench.report, "write_report",
                        lambda store, out, **kwargs: asked.append(kwargs) or out)
    out = ["report", "--store", str(store), "--out", str(tmp_path / "r.html")]
    assert main([*out, "--ruleset", "self", "--study", "a", "--study", "b", "--with-adhoc"]) == 0
    assert {k: asked[-1][k] for k in ("ruleset", "studies", "with_adhoc")} == {
        "ruleset": "self", "studies": ["a", "b"], "with_adhoc": True}
    assert main(out) == 0 and asked[-1]["studies"] is None and not asked[-1]["with_adhoc"]
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_:  # never released: --ruleset names the one ruleset
        main([*out, "--rulesets", "external"])
    assert exit_.value.code == 2 and len(asked) == 2
    assert "unrecognized arguments: --rulesets external" in capsys.readouterr().err


# -- figures ---------------------------------------------------------------------------------
def test_matplotlib_keeps_the_bokeh_styling():
    line = hv.Curve([(1, 2.0), (10, 0.5)], label="adamw").opts(
        color="#123456", line_width=4, line_dash="dashed", tools=["hover"])
    dots = hv.Scatter([(1, 2.0)], label="hits").opts(color="red", size=10, marker="circle")
    plot = (line * dots).opts(hv.opts.Overlay(title="T", xlabel="steps", ylabel="loss",
                                              logy=True, responsive=True, show_grid=True))
    mpl = to_matplotlib(plot)
    top = hv.Store.lookup_options("matplotlib", mpl, "plot").kwargs
    assert {k: top[k] for k in ("title", "xlabel", "ylabel", "logy")} == \
        {"title": "T", "xlabel": "steps", "ylabel": "loss", "logy": True}
    assert "responsive" not in top and "fig_inches" in top
    curve, scatter = mpl
    style = hv.Store.lookup_options("matplotlib", curve, "style").kwargs
    assert style["color"] == "#123456" and style["linestyle"] == "dashed"
    assert style["linewidth"] == pytest.approx(3.0)  # 4 px = 3 pt
    style = hv.Store.lookup_options("matplotlib", scatter, "style").kwargs
    assert style["marker"] == "o" and style["s"] == pytest.approx(56.25)  # (10 px = 7.5 pt)^2
    assert hv.Store.lookup_options("matplotlib", curve, "plot").kwargs["show_grid"] is True


def test_profiles_figure_as_png_and_svg(store, tmp_path):
    selection = Selection(store_path=str(store))
    figures = collect(selection, ["profiles"])
    assert list(figures) == ["profiles"]
    png, svg = save_figure(figures["profiles"], tmp_path / "profiles")
    width, height = png_size(png)
    assert 1200 <= width <= 2400 and 700 <= height <= 1400 and width > height  # 300 dpi, ~5 in
    text = svg_texts(svg)
    for label in ("Performance profiles", "fraction of workloads within tau", *ALGORITHMS):
        assert label in text
    source = svg.read_text()
    for color in selection.colors.values():  # each algorithm keeps its dashboard colour
        assert f"stroke: {color}" in source


def test_collect_skips_unknown_views_and_views_without_plots_with_a_note(store, caplog):
    caplog.set_level(logging.WARNING, logger="workbench.figures")
    figures = collect(Selection(store_path=str(store)),
                      ["profiles", "no_such_view", "leaderboard"])  # a leaderboard draws no plots
    assert list(figures) == ["profiles"]
    notes = " ".join(r.getMessage() for r in caplog.records)
    assert "unknown view 'no_such_view'" in notes and "view leaderboard has no figures" in notes


def test_every_view_with_plots_gives_figures_through_the_registry(store):
    from workbench.views.registry import VIEWS

    with_plots = [v.key for v in VIEWS if v.figures is not None]
    assert with_plots == ["compare", "budget", "profiles", "curves", "robustness", "costs",
                          "hparams", "early_ranking", "scaling", "ladder"]
    assert {"profiles", "curves_digits_mlp"} <= set(collect(Selection(store_path=str(store))))


def test_a_figure_that_fails_does_not_stop_the_others(store, tmp_path):
    from workbench.views.registry import ViewEntry

    broken = ViewEntry("broken_view", "Broken", object, figures=lambda selection: {
        "good": hv.Curve([(0, 1), (1, 2)]), "bad": object()})
    with pytest.raises(FigureError, match=r"failed, 1 figures are in [\s\S]*\n  bad: "):
        write_figures(Selection(store_path=str(store)), tmp_path, "png", views=[broken])
    assert [p.name for p in tmp_path.iterdir()] == ["good.png"]


# -- the notebook ----------------------------------------------------------------------------
def test_notebook_parameters_are_write_report_arguments():
    arguments = {"store_path": "store", "out_path": "out"}
    expected = {arguments.get(name, name) for name in inspect.signature(write_report).parameters}
    assert set(pm.inspect_notebook(str(NOTEBOOK))) == expected


def test_committed_notebook_has_no_outputs():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    assert all(not c.get("outputs") and c.get("execution_count") is None
               for c in nb.cells if c.cell_type == "code")


@pytest.mark.slow
def test_papermill_writes_a_filtered_report_with_figures(store, tmp_path):
    html, figures, executed = tmp_path / "r.html", tmp_path / "figures", tmp_path / "out.ipynb"
    pm.execute_notebook(str(NOTEBOOK), str(executed), cwd=str(tmp_path), kernel_name="python3",
                        parameters={"store": str(store), "out": str(html), "title": "Filtered",
                                    "workloads": "digits_mlp", "algorithms": "alg_fast,alg_slow",
                                    "figures": str(figures)})
    page = html.read_text()
    assert "Filtered" in page and "alg_fast" in page and "alg_slow" in page
    assert "alg_mid" not in page and "digits_cnn" not in page  # left out by the filters
    assert "Shown: workloads digits_mlp; algorithms alg_fast, alg_slow." in page

    names = {p.name for p in figures.iterdir()}
    assert {f"{stem}.{fmt}" for stem in ("profiles", "curves_digits_mlp")
            for fmt in ("png", "svg")} <= names
    assert not any("digits_cnn" in n or "alg_mid" in n for n in names)
    for png in figures.glob("*.png"):
        width, height = png_size(png)
        assert 800 <= width <= 4000 and 500 <= height <= 3000, (png.name, width, height)
    curves = svg_texts(figures / "curves_digits_mlp.svg")
    assert "train seconds" in curves and "validation accuracy" in curves
    assert "alg_fast" in curves and "alg_slow" in curves and "alg_mid" not in curves
    for svg in figures.glob("*.svg"):
        assert "alg_mid" not in svg_texts(svg)

    nb = nbformat.read(executed, as_version=4)
    text = "\n".join(str(o.get("text", "")) + str(o.get("data", {}).get("text/plain", ""))
                     for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    assert f"report written to {html}" in text and "profiles.svg" in text
    assert "exact_score" in text  # the score table was shown
    assert any("image/png" in o.get("data", {}) for c in nb.cells if c.cell_type == "code"
               for o in c.outputs)  # the profiles figure, inline
    assert nb.metadata["papermill"]["parameters"]["algorithms"] == "alg_fast,alg_slow"


@pytest.mark.slow
def test_cli_writes_only_the_asked_formats(store, tmp_path, capsys):
    figures = tmp_path / "figures"
    assert main(["report", "--store", str(store), "--out", str(tmp_path / "r.html"),
                 "--algorithms", "alg_mid", "--figures", str(figures), "--formats", "svg"]) == 0
    assert "figures (svg) written" in capsys.readouterr().out
    files = list(figures.iterdir())
    assert files and all(p.suffix == ".svg" for p in files)
    assert "alg_mid" in svg_texts(figures / "profiles.svg")


def test_matplotlib_options_set_by_a_view_win(store):
    from workbench.views.registry import ViewEntry

    def figures(selection):  # a view that sizes its figure for Matplotlib itself
        plot = hv.Curve([(1, 2), (2, 3)]).opts(color="red", title="bokeh title")
        return {"big": plot.opts(backend="matplotlib", color="blue", fig_inches=(9, 4))}

    view = ViewEntry("sized_view", "Sized", object, figures=figures)
    mpl = to_matplotlib(collect(Selection(store_path=str(store)), [view])["big"])
    assert hv.Store.lookup_options("matplotlib", mpl, "style").kwargs["color"] == "blue"
    options = hv.Store.lookup_options("matplotlib", mpl, "plot").kwargs
    assert options["fig_inches"] == (9, 4) and options["title"] == "bokeh title"


def test_every_figure_written_without_a_note_about_views_that_draw_none(store, tmp_path, caplog,
                                                                       monkeypatch):
    """`pacebench report --figures` printed "figures: view leaderboard has no figures, skipped"
    (and the same of studies and speedups) on every store: a line nobody can act on."""
    from workbench import figures
    from workbench.views.registry import view_entry

    monkeypatch.setattr(figures, "VIEWS", [view_entry("leaderboard"), view_entry("profiles")])
    caplog.set_level(logging.INFO, logger="workbench.figures")
    written = write_figures(Selection(store_path=str(store)), tmp_path, "svg")
    assert list(written) == ["profiles"] and caplog.records == []


def _drawn(obj, tmp_path, monkeypatch):
    """The Matplotlib figure that save_figure draws of `obj` and writes as a PNG (kept open)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from workbench.views import mpl

    kept = []
    with monkeypatch.context() as patch:
        patch.setattr(mpl.plt, "close", kept.append)
        save_figure(obj, tmp_path / "figure", "png")
    figure = kept[-1]  # (HoloViews closes figures of its own before)
    if not hasattr(figure.canvas, "get_renderer"):
        FigureCanvasAgg(figure)
    figure.canvas.draw()
    return figure


def _ticks_in_view(axis) -> list:
    """The tick labels Matplotlib draws: those of ticks inside the axis's view (the others
    keep stale positions)."""
    low, high = sorted(axis.get_view_interval())
    return [label for which, locs in (("major", axis.get_majorticklocs()),
                                      ("minor", axis.get_minorticklocs()))
            for loc, label in zip(locs, axis.get_ticklabels(which=which))
            if low <= loc <= high]


def _overlapping_texts(figure) -> list[tuple[str, str]]:
    """Pairs of tick labels of one axis, or of texts inside one plot, drawn over each other
    (labels turned by some degrees are left out: their boxes overlap where their letters do
    not)."""
    import matplotlib.pyplot as plt

    renderer = figure.canvas.get_renderer()
    out = []
    for axes in figure.axes:
        groups = [[t for t in _ticks_in_view(axis) if t.get_visible() and t.get_text().strip()
                   and t.get_rotation() == 0] for axis in (axes.xaxis, axes.yaxis)]
        groups.append([t for t in axes.texts if t.get_text()])
        for texts in groups:
            boxes = [(t.get_text(), t.get_window_extent(renderer)) for t in texts]
            out += [(a, b) for i, (a, box) in enumerate(boxes) for b, other in boxes[i + 1:]
                    if box.overlaps(other)]
    plt.close(figure)
    return out


def test_paper_figures_draw_no_tick_label_over_another(store, tmp_path, monkeypatch):
    """Measured on the demo store's figures: a log axis under two decades (the Compare forest
    plot, the hyperparameter scatters) labelled every minor tick as 2x10^-1, 3x10^-1, ...
    overlapping; a cost axis in dollars (0.00002 steps) ran its labels together; the parallel
    coordinates of 7 hyperparameters (the v0.5 store) ran each axis's value labels into the
    next axis's."""
    from workbench.views import hparams

    log_axis = hv.Scatter([(0.15, 1.0), (6.5, 2.0)]).opts(logx=True)
    dollars = hv.Scatter([(0.0, 0.66), (1.2e-4, 0.79)])
    for plot in (log_axis, dollars):  # (as in the demo store's figures)
        assert _overlapping_texts(_drawn(plot, tmp_path, monkeypatch)) == []
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"run_id": [f"r{i}" for i in range(20)], "algorithm": "a",
                          "workload": "w", "study": 0, "trial": range(20), "seed": 0,
                          "status": "complete", "reached": True, "best_validation": 0.9,
                          "time_to_target": rng.uniform(7208, 7229, 20),
                          **{f"hparams/p{k}": rng.uniform(0.0008, 0.005, 20) for k in range(7)}})
    monkeypatch.setattr(hparams, "trials_for", lambda *_: frame)
    monkeypatch.setattr(hparams, "_metric", lambda *_: "accuracy")
    parallel = collect(Selection(store_path=str(store)), ["hparams"])["hparams_parallel"]
    assert _overlapping_texts(_drawn(parallel, tmp_path, monkeypatch)) == []
