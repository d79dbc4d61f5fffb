"""The served dashboard and the HTML report in a real browser (Playwright + Debian's Chromium).

The dashboard runs as `panel serve workbench/app.py` in a subprocess over a synthetic store; the
report is opened from disk with every non-file request aborted. Screenshots go to
/tmp/pacebench-shots/ for a human to look at.
"""
from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.browser
import playwright.sync_api as playwright_api  # installed by `make install`; missing = failure

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run", "--disable-sync"]
REPO = Path(__file__).resolve().parents[1]
SHOTS = Path("/tmp/pacebench-shots")
TIMEOUT_MS = 30_000


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_http(url: str, proc: subprocess.Popen, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"panel serve exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=5) as reply:
                if reply.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    raise TimeoutError(f"{url} did not answer within {seconds} s")


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    from workbench.testing import make_store

    path = tmp_path_factory.mktemp("browser") / "store"
    make_store(path)
    return path


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
    page.on("pageerror", lambda exc: page.errors.append(str(exc)))
    yield page
    context.close()


@contextlib.contextmanager
def _panel_serve(store: Path):
    """URL of `panel serve workbench/app.py` over `store`, served while the block runs."""
    port = _free_port()
    env = {**os.environ, "PACEBENCH_STORE": str(store), "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "panel", "serve", "workbench/app.py", "--port", str(port),
         "--address", "127.0.0.1", "--allow-websocket-origin", f"127.0.0.1:{port}"],
        cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/app"
    try:
        _wait_http(url, proc)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture
def served(store):
    with _panel_serve(store) as url:
        yield url


def _open_tab(page, title: str) -> None:
    page.locator(".bk-tab", has_text=title).first.click()


def _leaderboard_algorithms(page) -> list[str]:
    cells = page.locator(".pb-scores .tabulator-row .tabulator-cell[tabulator-field='algorithm']")
    cells.first.wait_for()
    return [text.strip() for text in cells.all_inner_texts()]


def _wait_rows(page, expected: list[str]) -> None:
    deadline = time.monotonic() + TIMEOUT_MS / 1000
    while _leaderboard_algorithms(page) != expected:
        assert time.monotonic() < deadline, f"leaderboard shows {_leaderboard_algorithms(page)}"
        page.wait_for_timeout(200)


def test_dashboard(page, served):
    page.goto(served)
    _wait_rows(page, ["fast", "slow"])
    page.screenshot(path=SHOTS / "app-leaderboard.png", full_page=True)

    _open_tab(page, "Profiles")
    page.locator(".pb-profiles canvas").first.wait_for()
    page.wait_for_timeout(500)
    page.screenshot(path=SHOTS / "app-profiles.png", full_page=True)

    _open_tab(page, "Curves")
    page.locator(".pb-curve canvas").first.wait_for()
    page.wait_for_timeout(500)
    page.screenshot(path=SHOTS / "app-curves.png", full_page=True)

    _open_tab(page, "Leaderboard")
    page.get_by_role("checkbox", name="fast").uncheck()
    _wait_rows(page, ["slow"])
    page.screenshot(path=SHOTS / "app-filtered.png", full_page=True)
    assert page.errors == []


def test_report_offline(page, store, tmp_path):
    from workbench.report import write_report

    out = write_report(store, tmp_path / "report.html", title="Browser test report")
    blocked: list[str] = []

    def only_files(route) -> None:
        if route.request.url.startswith(("file://", "data:")):
            route.continue_()
        else:
            blocked.append(route.request.url)
            route.abort()

    page.route("**/*", only_files)
    page.goto(out.as_uri())
    _wait_rows(page, ["fast", "slow"])
    page.screenshot(path=SHOTS / "report-leaderboard.png", full_page=True)
    _open_tab(page, "Profiles")
    page.locator(".pb-profiles canvas").first.wait_for()
    page.wait_for_timeout(500)
    page.screenshot(path=SHOTS / "report-profiles.png", full_page=True)
    _open_tab(page, "Curves")
    page.locator(".pb-curve canvas").first.wait_for()
    page.wait_for_timeout(500)
    page.screenshot(path=SHOTS / "report-curves.png", full_page=True)
    assert blocked == []
    assert page.errors == []


def test_dashboard_on_a_missing_store(page, tmp_path):
    with _panel_serve(tmp_path / "no-store-here") as url:
        page.goto(url)
        page.get_by_text("No results to show").first.wait_for()
        page.screenshot(path=SHOTS / "app-missing-store.png", full_page=True)
    assert page.errors == []


def test_dashboard_shows_runs_written_while_it_is_open(page, tmp_path):
    from workbench.testing import make_store

    path = tmp_path / "live"
    make_store(path, algorithms=("fast",), workloads=("digits_mlp",), studies=1, trials=2)
    with _panel_serve(path) as url:
        page.goto(url)
        _wait_rows(page, ["fast"])
        make_store(path, algorithms=("later",), workloads=("digits_mlp",), studies=1, trials=2)
        deadline = time.monotonic() + TIMEOUT_MS / 1000  # the app re-reads every REFRESH_MS
        while sorted(_leaderboard_algorithms(page)) != ["fast", "later"]:
            assert time.monotonic() < deadline, f"leaderboard shows {_leaderboard_algorithms(page)}"
            page.wait_for_timeout(250)
        playwright_api.expect(page.get_by_role("checkbox", name="later")).to_be_checked()
    assert page.errors == []
