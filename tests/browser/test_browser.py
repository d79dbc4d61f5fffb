"""The served dashboard and the HTML report in a real browser (Playwright + Debian's Chromium).

The dashboard runs as `panel serve workbench/app.py` in a subprocess over a synthetic store; the
report is opened from disk with every non-file request aborted. Screenshots go to
/tmp/pacebench-shots/ for a human to look at.
"""
from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.browser
import playwright.sync_api as playwright_api  # installed by `make install`; missing = failure

from locations import REPO

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run", "--disable-sync"]
SHOTS = Path("/tmp/pacebench-shots")
TIMEOUT_MS = 30_000


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_http(url: str, proc: subprocess.Popen, seconds: float = 180) -> None:
    """Until `url` answers 200 (its first request builds the app: slow on a busy machine)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"panel serve exited with {proc.returncode}")
        try:
            # a page takes seconds to build (the Ladder tab, first on a ladder store: 10 s at
            # load 13); a shorter wait asks again and again, each ask a new page to build
            with urllib.request.urlopen(url, timeout=60) as reply:
                if reply.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    raise TimeoutError(f"{url} did not answer within {seconds} s")


@pytest.fixture(scope="module")
def browser():
    if not CHROMIUM.exists():  # a missing browser is a failure, never a skip
        pytest.fail(f"no Chromium at {CHROMIUM}: `make install` installs Debian's chromium")
    SHOTS.mkdir(parents=True, exist_ok=True)
    with playwright_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), headless=True,
                                     args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser):
    """A fresh page whose console errors and uncaught exceptions are collected in `page.errors`."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    context.set_default_timeout(TIMEOUT_MS)
    page = context.new_page()
    page.errors = []
    page.on("console", lambda m: page.errors.append(m.text) if m.type == "error" else None)
    # An uncaught exception with the top of its stack, so a rare one says where it came from.
    page.on("pageerror", lambda exc: page.errors.append(
        "\n".join((exc.stack or str(exc)).splitlines()[:14])))
    yield page
    context.close()


@contextlib.contextmanager
def _panel_serve(store: Path):
    """URL of `panel serve workbench/app.py` over `store`, served while the block runs."""
    port = _free_port()
    env = {**os.environ, "PACEBENCH_STORE": str(store), "PYTHONPATH": str(REPO),
           "PYTHONUNBUFFERED": "1"}
    log = tempfile.TemporaryFile(mode="w+")  # the server's output: shown when the block fails
    proc = subprocess.Popen(
        [sys.executable, "-m", "panel", "serve", "workbench/app.py", "--port", str(port),
         "--address", "127.0.0.1", "--allow-websocket-origin", f"127.0.0.1:{port}"],
        cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/app"
    try:
        _wait_http(url, proc)
        yield url
    except BaseException:
        log.seek(0)
        print("panel serve's output, its last 60 lines:\n" +
              "\n".join(log.read().splitlines()[-60:]))
        raise
    finally:
        # Killed, not stopped: its shutdown is not under test here (test_pacebench_serve_stops_
        # ... is that test), and SIGTERM waited for whatever the server was still computing (8 s
        # after the filter change on the imported v0.5 store); it starts no process of its own.
        proc.kill()
        proc.wait()
        log.close()


def _offline(page) -> list[str]:
    """Abort every request that is not a file or data URL; returns the list of blocked URLs."""
    blocked: list[str] = []

    def only_files(route) -> None:
        if route.request.url.startswith(("file://", "data:")):
            route.continue_()
        else:
            blocked.append(route.request.url)
            route.abort()

    page.route("**/*", only_files)
    return blocked


def _shoot(page, tab: str, selector: str, name: str) -> None:
    """Open `tab`, wait for `selector` to draw, and take a full-page screenshot `name`."""
    _open_tab(page, tab)
    page.locator(selector).first.wait_for()
    _painted(page)
    page.screenshot(path=SHOTS / name, full_page=True)


def _painted(page) -> None:
    """Wait until the browser has painted twice more (Bokeh draws its canvases in animation
    frames), then a little longer for the last plots of a tab to settle."""
    page.evaluate("() => new Promise(done => requestAnimationFrame(() => "
                  "requestAnimationFrame(done)))")
    page.wait_for_timeout(200)


MORE = "More"  # the tab of the views the store cannot fill (workbench/views/registry.py)


def _open_tab(page, title: str) -> None:
    """Click the tab `title`, opening the More tab first when it is one of More's."""
    header = page.locator(".bk-tab", has_text=title).first
    if not header.is_visible():
        page.locator(".bk-tab", has_text=MORE).first.click()
        header.wait_for(state="visible")
    header.click()


def _top_tabs(page) -> list[str]:
    """The titles of the tabs shown without opening More (More's last)."""
    headers = page.locator(".bk-tab")
    return [headers.nth(i).inner_text().strip() for i in range(headers.count())
            if headers.nth(i).is_visible()]


def _leaderboard_algorithms(page, timeout_ms: int | None = None) -> list[str]:
    cells = page.locator(".pb-scores .tabulator-row .tabulator-cell[tabulator-field='algorithm']")
    cells.first.wait_for(timeout=timeout_ms)
    return [text.strip() for text in cells.all_inner_texts()]


def _untick(page, name: str) -> None:
    """Untick an algorithm's box in the sidebar. The box must read ticked first:
    unticking a box that reads unticked sends nothing (Playwright's uncheck() returns). (A
    refresh once sent a box's name and its tick in two messages, seconds apart on a busy machine:
    a test that unticked in between sent nothing, and read it as a lost click; app.py now sends
    a refresh in one message.)"""
    box = page.get_by_role("checkbox", name=name, exact=True)
    playwright_api.expect(box).to_be_checked()
    box.uncheck()


def _wait_rows(page, expected: list[str], timeout_ms: int | None = None) -> None:
    """Wait until the leaderboard lists `expected`, in order, for `timeout_ms` (None: the
    page's default timeout)."""
    deadline = time.monotonic() + (timeout_ms or TIMEOUT_MS) / 1000
    while _leaderboard_algorithms(page, timeout_ms) != expected:
        assert time.monotonic() < deadline, f"leaderboard shows {_leaderboard_algorithms(page)}"
        page.wait_for_timeout(200)


def test_dashboard_on_a_missing_store_then_runs_written_while_it_is_open(page, tmp_path):
    """Opened before its store exists: a notice, then the runs as studies write them; a filter
    recomputes the leaderboard; runs that come from a foreign store with hostile names show
    those names as text on every tab."""
    from workbench.testing import hostile, make_hostile_store, make_store

    path = tmp_path / "live"
    with _panel_serve(path) as url:
        page.goto(url)
        page.get_by_text("No results to show").first.wait_for()
        page.screenshot(path=SHOTS / "app-missing-store.png", full_page=True)
        make_store(path, algorithms=("fast",), workloads=("digits_mlp",), studies=1, trials=2)
        # the app re-reads every REFRESH_MS; with the suite's other worker busy, reading the
        # new store and drawing it once took longer than 30 s
        _wait_rows(page, ["fast"], timeout_ms=2 * TIMEOUT_MS)
        foreign = make_hostile_store(tmp_path / "foreign", algorithms=("later",),
                                     workloads=("digits_mlp",), studies=1, trials=2)
        for run in foreign.runs_dir.iterdir():  # as another machine's launcher would add them
            shutil.copytree(run, path / run.relative_to(foreign.root))
        later = hostile("algorithm-later")
        # their hardware is another machine's: offered, not ticked (its times are not pooled
        # with this machine's unless asked for); ticked, its runs join the leaderboard
        other = page.get_by_role("checkbox", name=hostile("hardware-synthetic CPU x1"))
        other.wait_for()
        assert not other.is_checked() and _leaderboard_algorithms(page) == ["fast"]
        other.check()
        deadline = time.monotonic() + TIMEOUT_MS / 1000
        while sorted(_leaderboard_algorithms(page)) != sorted(["fast", later]):
            assert time.monotonic() < deadline, f"leaderboard shows {_leaderboard_algorithms(page)}"
            page.wait_for_timeout(250)
        shown = _leaderboard_algorithms(page)  # in score order
        playwright_api.expect(page.get_by_role("checkbox", name=later)).to_be_checked()
        page.screenshot(path=SHOTS / "app-leaderboard.png", full_page=True)
        _untick(page, "fast")  # a filter on the first tab shown recomputes
        _wait_rows(page, [later])
        page.screenshot(path=SHOTS / "app-filtered.png", full_page=True)
        page.get_by_role("checkbox", name="fast", exact=True).check()
        _wait_rows(page, shown)
        _visit_every_tab(page, "app-hostile")
    assert page.errors == [], "\n\n".join(page.errors)


def _visit_every_tab(page, prefix: str) -> None:
    """Open every tab (a screenshot of each), then assert that no markup in a name ran."""
    ran = {}
    more = page.locator(".bk-tab", has_text=MORE)
    if more.count():  # its tabs' titles show once it is open
        more.first.click()
        page.wait_for_timeout(300)
    titles = [t.strip() for t in page.locator(".bk-tab").all_inner_texts() if t.strip()]
    for tab in [t for t in dict.fromkeys(titles) if t != MORE]:
        _open_tab(page, tab)
        page.wait_for_timeout(500)
        # a served page: until the server has drawn the tab (its busy spinner stops), else the
        # check below would look at an empty tab; a report has no spinner
        page.locator(".loader.spin").first.wait_for(state="hidden", timeout=120_000)
        _painted(page)
        page.screenshot(path=SHOTS / f"{prefix}-{tab.lower().replace(' ', '-')}.png")
        ran[tab] = page.evaluate("window.__pwned")
        page.evaluate("window.__pwned = undefined")
    assert not any(ran.values()), f"names ran as markup, per tab: {ran}"


def test_the_report_works_offline_and_runs_no_name_as_script(page, hostile_report):
    """The report opens with every network request blocked, draws every tab, and no name of its
    hostile store (algorithm, workload, variant, study, hyperparameters, hardware, stop reason,
    error, title) runs as markup."""
    from workbench.testing import hostile

    blocked = _offline(page)
    page.goto(hostile_report.as_uri())
    _wait_rows(page, sorted([hostile("algorithm-fast"), hostile("algorithm-slow")],
                            key=lambda name: "slow" in name))  # fast first
    _visit_every_tab(page, "report-hostile")
    _shoot(page, "Profiles", ".pb-profiles canvas", "report-profiles.png")
    _shoot(page, "Curves", ".pb-curve canvas", "report-curves.png")
    assert blocked == [] and page.errors == [], (blocked, "\n\n".join(page.errors))


# -- the real AlgoPerf v0.5 logs, imported ---------------------------------------------------
PUBLISHED_V05 = [  # the published v0.5 external-tuning leaderboard, in its order
    ("shampoo_submission", "0.7784"), ("schedule_free_adamw", "0.7077"),
    ("generalized_adam", "0.6383"), ("cyclic_lr", "0.6301"), ("nadamp", "0.5909"),
    ("baseline", "0.5707"), ("amos", "0.4918"), ("caspr_adaptive", "0.4722"),
    ("lawa_queue", "0.3699"), ("lawa_ema", "0.3384"), ("schedule_free_prodigy", "0.0000"),
]


@pytest.fixture(scope="module")
def algoperf_store(algoperf_v05):
    """The real AlgoPerf v0.5 external-tuning logs imported into a store (3,700 runs)."""
    assert algoperf_v05.problems == [] and algoperf_v05.imported == 3700
    return algoperf_v05.path


def _leaderboard_scores(page) -> list[tuple[str, str]]:
    scores = page.locator(".pb-scores .tabulator-row .tabulator-cell[tabulator-field='score']")
    return list(zip(_leaderboard_algorithms(page), [t.strip() for t in scores.all_inner_texts()]))


# Every view tab, and what shows that it has drawn.
VIEW_READY = {
    "Studies": ".pb-studies .tabulator-row", "Speedups": ".pb-speedups .tabulator-row",
    "Profiles": ".pb-profiles canvas", "Curves": ".pb-curve canvas",
    "Robustness": ".pb-robustness .tabulator-row", "Costs": ".pb-costs .tabulator-row",
    "Hyperparameters": ".pb-hparams-scatter canvas",
    "Compare": ".pb-compare canvas", "Tuning budget": ".pb-budget canvas",
    "Ladder": ".pb-ladder",  # a store without ladder runs: the line saying so
}


LAYOUT_PROBLEMS_JS = (REPO / "tests" / "fixtures" / "layout_problems.js").read_text()


def _layout_problems(page, settle_ms: int = 20_000) -> list[str]:
    """What a person would see wrong on the page as it is shown (tests/fixtures/
    layout_problems.js): an axis without tick labels, a legend over its plot or cut off by its
    edge, a table wider than its box, a column narrower than its header, a tab title cut off,
    text of one kind in two sizes. A table re-measures its columns a moment
    after its tab is shown, later on a busy machine (the 3,700-run report's held-out table, back
    on its tab, was still being re-measured after 4 s in 3 runs of the browser tests on two
    workers, never in a run alone; once more than 10 s in a fresh clone's CI run, with the Slurm
    tests' jobs on the same two cores): problems count once they last `settle_ms`."""
    deadline = time.monotonic() + settle_ms / 1000
    while (problems := page.evaluate(LAYOUT_PROBLEMS_JS)) and time.monotonic() < deadline:
        page.wait_for_timeout(300)
    return problems


def _shoot_tabs(page, prefix: str, ready: dict[str, str] = VIEW_READY) -> None:
    """A full-page screenshot of each view tab, after its content has drawn; every tab is
    checked for layout problems (_layout_problems)."""
    problems = {}
    for tab, selector in ready.items():
        _open_tab(page, tab)
        page.locator(selector).first.wait_for(timeout=60_000)
        _painted(page)
        page.screenshot(path=SHOTS / f"{prefix}-{tab.lower().replace(' ', '-')}.png",
                        full_page=True)
        problems.update({tab: found for found in [_layout_problems(page)] if found})
    _open_tab(page, "Leaderboard")
    _painted(page)
    problems.update({"Leaderboard": found for found in [_layout_problems(page)] if found})
    assert problems == {}, problems


@pytest.mark.slow
def test_dashboard_on_the_imported_algoperf_v05_logs(page, algoperf_store):
    with _panel_serve(algoperf_store) as url:
        start = time.monotonic()
        page.goto(url)
        _wait_rows(page, [name for name, _ in PUBLISHED_V05])
        # printed, not asserted: benchmarks/dashboard.py measures first renders side by side
        print(f"\nfirst render of the imported store: {time.monotonic() - start:.1f} s")
        assert _leaderboard_scores(page) == PUBLISHED_V05
        # tabs by what the store holds: time-to-target studies with held-out variants; the
        # views it cannot fill (no ladder, scaling study or early-stopping data) under More
        assert _top_tabs(page) == ["Leaderboard", "Compare", "Curves", "Tuning budget",
                                   "Hyperparameters", "Profiles", "Costs", "Robustness", MORE]
        page.screenshot(path=SHOTS / "algoperf-app-leaderboard.png", full_page=True)
        _shoot_tabs(page, "algoperf-app")
        _open_tab(page, "Speedups")
        faster = page.locator(".pb-speedups .tabulator-cell[tabulator-field='faster_by']")
        faster.first.wait_for()
        assert faster.all_inner_texts()[1].strip() == "+27.9 %"  # shampoo over the baseline
        _open_tab(page, "Leaderboard")
        _untick(page, "shampoo_submission")  # scores recompute
        deadline = time.monotonic() + TIMEOUT_MS / 1000
        while _leaderboard_algorithms(page)[:1] != ["schedule_free_adamw"]:
            assert time.monotonic() < deadline, f"leaderboard shows {_leaderboard_algorithms(page)}"
            page.wait_for_timeout(250)
        page.screenshot(path=SHOTS / "algoperf-app-filtered.png", full_page=True)
    assert page.errors == [], "\n\n".join(page.errors)


@pytest.mark.slow
def test_report_of_the_imported_algoperf_v05_logs_offline(page, algoperf_store, tmp_path):
    from workbench.report import write_report

    out = write_report(algoperf_store, tmp_path / "algoperf.html", title="AlgoPerf v0.5")
    print(f"\nreport of the imported store: {out.stat().st_size / 1e6:.1f} MB")
    blocked = _offline(page)
    page.set_default_timeout(90_000)  # a 3,700-run report: more to parse on 2 shared cores
    page.goto(out.as_uri())
    _wait_rows(page, [name for name, _ in PUBLISHED_V05])
    assert _leaderboard_scores(page) == PUBLISHED_V05
    page.screenshot(path=SHOTS / "algoperf-report-leaderboard.png", full_page=True)
    # one plot tab here (every tab of this store is drawn by the dashboard test above, and
    # every tab of a report by the hostile report test): 7 tabs of 3,700 runs cost ~50 s
    _shoot_tabs(page, "algoperf-report", {"Profiles": VIEW_READY["Profiles"]})
    assert blocked == [] and page.errors == [], (blocked, "\n\n".join(page.errors))
    assert out.stat().st_size < 30e6


# -- a study of our own, run by the runner ----------------------------------------------------
@pytest.fixture(scope="module")
def own_study(tmp_path_factory):
    """A real (small) study: adamw and nadamw on digits_mlp and its tanh variant, 4 trials."""
    from runners.launch.study import run_study
    from workbench.spec import StudySpec
    from workbench.store import open_store

    path = tmp_path_factory.mktemp("own") / "store"
    spec = StudySpec(name="browser", workloads=("digits_mlp", "digits_mlp_tanh"),
                     algorithms=("adamw", "nadamw"), studies=1, trials=4)
    result = run_study(spec, open_store(path, create=True), workers=2, progress=False)
    assert result.failed == [] and result.succeeded == 16
    return path


def _time_cell(page, algorithm: str, workload: str) -> str:
    row = page.locator(".pb-times-scored .tabulator-row", has_text=algorithm).first
    return row.locator(f".tabulator-cell[tabulator-field='{workload}']").inner_text().strip()


@pytest.mark.slow
def test_every_view_of_our_own_study_with_filters(page, own_study):
    from workbench import scoring
    from workbench.views.formats import amount
    from workbench.views.selection import Selection

    sel = Selection(store_path=str(own_study))
    expected_order = list(sel.scores()["algorithm"])
    times = scoring.workload_times(sel.cube).sel(workload="digits_mlp")
    reached = [a for a in expected_order if np.isfinite(float(times.sel(algorithm=a)))]
    assert reached, f"no algorithm of the study reached digits_mlp's target: {times.values}"
    algorithm = reached[0]  # its time to target is known from the store
    expected = amount(float(times.sel(algorithm=algorithm)), "s")
    other = [a for a in expected_order if a != algorithm][0]
    sel.time_axis = "step"
    steps = amount(float(sel.workload_times().sel(algorithm=algorithm, workload="digits_mlp")),
                   "steps")
    with _panel_serve(own_study) as url:
        page.goto(url)
        _wait_rows(page, expected_order)
        assert _time_cell(page, algorithm, "digits_mlp") == expected  # a known time to target
        page.screenshot(path=SHOTS / "own-leaderboard.png", full_page=True)
        _shoot_tabs(page, "own", {k: v for k, v in VIEW_READY.items() if k != "Speedups"})
        steps_button = page.locator(".bk-btn", has_text="steps").first  # the time axis
        steps_button.click()
        playwright_api.expect(steps_button).to_have_class(re.compile(r"\bbk-active\b"))
        deadline = time.monotonic() + TIMEOUT_MS / 1000
        while _time_cell(page, algorithm, "digits_mlp") != steps:
            assert time.monotonic() < deadline, _time_cell(page, algorithm, "digits_mlp")
            page.wait_for_timeout(250)
        _open_tab(page, "Profiles")  # a hidden view redraws when opened, on the new axis
        page.locator(".pb-profiles canvas").first.wait_for()
        _open_tab(page, "Leaderboard")
        _untick(page, other)  # back from other tabs: still recomputes
        _wait_rows(page, [algorithm])
        page.screenshot(path=SHOTS / "own-filtered-steps.png", full_page=True)
        # after the filter changes every tab draws again, with its axes, legends and columns
        _shoot_tabs(page, "own-filtered", {k: v for k, v in VIEW_READY.items()
                                           if k not in ("Speedups", "Compare")})
    assert page.errors == [], "\n\n".join(page.errors)


def _accepts(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def _refuses_connections(port: int, seconds: float = 15) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not _accepts(port):
            return True
        time.sleep(0.2)
    return False


@pytest.mark.parametrize("how", ["SIGTERM", "SIGKILL"])  # SIGINT: test_run_child_...
def test_pacebench_serve_stops_its_server_when_stopped_or_killed(fake_store, how):
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "runners.cli", "serve", "--store", str(fake_store), "--port",
         str(port)], cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while not _accepts(port):  # listening (no page asked for: building one is slow)
            assert proc.poll() is None and time.monotonic() < deadline, "serve did not start"
            time.sleep(0.2)
        proc.send_signal(getattr(signal, how))
        code = proc.wait(timeout=20)
        assert code == (-signal.SIGKILL if how == "SIGKILL" else 128 + getattr(signal, how))
        assert _refuses_connections(port), f"the panel server outlived `pacebench serve` ({how})"
    finally:
        if proc.poll() is None:
            proc.kill()


def test_the_dashboard_shows_its_store_to_this_machine_only_unless_told():
    from workbench.app import remote_allowed

    assert remote_allowed("127.0.0.1", {}) and remote_allowed("::1", {})
    assert remote_allowed(None, {})  # not served (a report, a notebook)
    assert not remote_allowed("192.168.1.7", {}) and not remote_allowed("junk", {})
    assert remote_allowed("192.168.1.7", {"PACEBENCH_ALLOW_REMOTE": "1"})


# (title, y start, y end) of every drawn validation plot of the page (Bokeh's models)
VALIDATION_RANGES_JS = """() => {
  const out = []
  for (const doc of Bokeh.documents)
    for (const m of doc.all_models)
      if (m.title != null && m.title.text != null && m.title.text.includes(": validation")
          && m.y_range != null)
        out.push([m.title.text, m.y_range.start, m.y_range.end])
  return out
}"""


def test_the_ladder_tab_draws_a_hostile_ladder_and_runs_no_name(page, tmp_path):
    """A fake ladder whose rung and candidate names are markup: the tab draws its speedup plot,
    table and one loss plot per rung, nothing is cut off or overlapping, no name runs."""
    from workbench.testing import hostile, make_ladder_store

    store = make_ladder_store(tmp_path / "ladder", {"adamw": 1.0, hostile("candidate"): 2.0},
                              rungs=((hostile("rung"), 12_000), ("gpt_small", 48_000)), seeds=3)
    with _panel_serve(store.root) as url:
        page.goto(url)
        # a ladder-only store opens on the Ladder tab (no click), Curves beside it
        page.locator(".pb-ladder-speedup canvas").first.wait_for(timeout=60_000)
        assert _top_tabs(page) == ["Ladder", "Curves", MORE]
        assert page.locator(".bk-tab.bk-active").first.inner_text().strip() == "Ladder"
        page.locator(".pb-ladder-loss canvas").nth(1).wait_for(timeout=60_000)  # 2 rungs
        _painted(page)
        page.screenshot(path=SHOTS / "app-ladder-hostile.png", full_page=True)
        assert page.evaluate("window.__pwned") is None
        assert _layout_problems(page) == []
        _shoot(page, "Curves", ".pb-curve canvas", "app-ladder-curves.png")
        # the fake rungs' target, 0 nats, is out of reach: the axis fits the losses (about 2
        # to 3.2), the target a labelled line at its lower edge
        ranges = page.evaluate(VALIDATION_RANGES_JS)
        assert ranges and all(low > 1.0 for _, low, _ in ranges), ranges
        _open_tab(page, "Leaderboard")  # zeros by design: the pointer, not the advice
        page.get_by_text("holds a model-size ladder").first.wait_for()
        assert page.get_by_text("Every score is 0").count() == 0
    assert page.errors == [], "\n\n".join(page.errors)


def test_the_ladder_tab_draws_an_imported_table_with_a_hostile_rung(page, tmp_path):
    """A finals table imported by `pacebench import-table` (one seed, a rung named with
    markup): the tab draws the speedups, each rung's loss and D_eff-against-D plots and the
    verdicts, nothing cut off or overlapping, no name runs."""
    import pandas as pd

    from workbench.importers.tables import import_table
    from workbench.testing import hostile

    rows = []
    for rung, n in ((hostile("rung"), 10**6), ("4M", 4 * 10**6)):
        for name, speed in (("adamw", 1.0), ("muon", 1.3)):
            for b in (1, 2, 4, 8):
                d = 20.0 * n * b
                rows.append({"algorithm": name, "rung": rung, "non_embedding_params": n,
                             "tokens": d, "final_loss": 0.9 * (speed * d / 1e9) ** -0.3 + 3})
    table = tmp_path / "finals.jsonl"
    pd.DataFrame(rows).to_json(table, orient="records", lines=True)
    import_table(table, tmp_path / "store", "finals")
    with _panel_serve(tmp_path / "store") as url:
        page.goto(url)
        _open_tab(page, "Ladder")
        page.locator(".pb-ladder-speedup canvas").first.wait_for(timeout=60_000)
        page.locator(".pb-ladder-deff canvas").nth(1).wait_for(timeout=60_000)  # 2 rungs
        page.locator(".pb-ladder-verdicts").first.wait_for(timeout=60_000)
        _painted(page)
        page.screenshot(path=SHOTS / "app-ladder-imported.png", full_page=True)
        # the verdict in words (a Markdown pane: its text is inside the pane, once drawn)
        page.locator(".pb-ladder-verdicts").get_by_text("muon: not shown").first.wait_for(
            timeout=60_000)
        assert page.evaluate("window.__pwned") is None
        assert _layout_problems(page) == []
    assert page.errors == [], "\n\n".join(page.errors)
