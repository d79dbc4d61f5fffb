"""Each dashboard tab in a real browser: how long it takes to open and to answer a filter change
(issue 28: a newcomer's first hour on the demo store).

    .venv/bin/python benchmarks/dashboard_tabs.py [--store results/demo] [--rounds 2] [--code DIR]

`panel serve workbench/app.py` runs over the store (PACEBENCH_STORE) as a user starts it, and
headless Chromium (Debian's, /usr/bin/chromium, `--no-sandbox`) opens the page. `--code DIR`
serves the dashboard of another checkout (e.g. main's, for a before/after ratio in one run).
Timed:
- the server's start: from starting `panel serve` until the first page's first tab has drawn
  (what a user of `pacebench serve` waits; goal 10 s);
- first page: from navigation to the first leaderboard row drawn;
- each tab: from the click on its title (a tab under "More": the click on More first, when it
  is not open) until its content is drawn (its first table row or plot, where the tab has one)
  and the server has sent the last message of its answer;
- a filter change with that tab open: from the click on a sidebar box (untick an algorithm,
  tick it again, untick a workload, tick it again) until the server's last message of the
  answer, plus the browser's next two frames (the redraw).
"The server's last message": every message the page receives over its websocket is
timestamped; an answer is over once none has come for QUIET_S (its last one is what counts).
The load average is printed before and after: the machine may be shared, and every figure
is wall-clock time. benchmarks/dashboard.py measures the server side alone on a big store.
Goals: every tab open within 1 s, every filter change answered within 0.3 s.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
GOAL_OPEN_S = 1.0
GOAL_FILTER_S = 0.3
GOAL_SERVE_S = 10.0
QUIET_S = 0.5  # no message for this long: the answer is complete
MORE = "More"  # the tab that holds the views a store cannot fill
FIRST_TAB = ".pb-scores .tabulator-row"
# what shows that a tab has drawn (tabs not named: the server's answer alone)
READY = {
    "Leaderboard": FIRST_TAB, "Studies": ".pb-studies .tabulator-row",
    "Speedups": ".pb-speedups .tabulator-row", "Compare": ".pb-compare canvas",
    "Tuning budget": ".pb-budget canvas", "Profiles": ".pb-profiles canvas",
    "Curves": ".pb-curve canvas", "Robustness": ".pb-held-out .tabulator-row",
    "Costs": ".pb-costs .tabulator-row", "Hyperparameters": ".pb-hparams-scatter canvas",
    "Early ranking": ".pb-early-ranking canvas",
}


@contextlib.contextmanager
def served(store: Path, code: Path = ROOT):
    """The dashboard's URL, `panel serve workbench/app.py` of the checkout `code` over `store`
    running meanwhile."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "PACEBENCH_STORE": str(store), "PYTHONPATH": str(code)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "panel", "serve", "workbench/app.py", "--port", str(port),
         "--address", "127.0.0.1", "--allow-websocket-origin", f"127.0.0.1:{port}"],
        cwd=code, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/app"
    try:
        deadline = time.monotonic() + 120
        while True:  # listening (a HEAD request would build a page: not counted)
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("panel serve did not start")
            time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=20)


class Messages:
    """The messages the page sends and receives over its websocket, with their times
    (time.perf_counter). A change counts from the page's first message after the click (the
    click itself is Playwright's round trip, ~0.1 s, not the user's) to the last message of the
    server's answer that changes the page; the server is done when the template's busy spinner
    goes off (Panel turns it off once every callback of the change has returned, which may be
    later: the last content message is what the user sees). Message headers and buffers'
    headers do not count."""

    def __init__(self, page) -> None:
        self.sent: list[float] = []
        self.content: list[float] = []
        self.idle: list[float] = []  # the spinner turned off

        def watch(ws) -> None:
            ws.on("framesent", lambda _: self.sent.append(time.perf_counter()))
            ws.on("framereceived", self._received)
        page.on("websocket", watch)

    def _received(self, payload) -> None:
        now = time.perf_counter()
        text = payload if isinstance(payload, str) else ""
        if '"attr":"css_classes","new":["loader"' in text:
            if '"spin"' not in text:
                self.idle.append(now)
        elif not (text.startswith(('{"msgid"', '{"id"')) or text == "{}"):
            self.content.append(now)

    def answer(self, click: float, page, timeout: float = 120.0
               ) -> tuple[float, float | None, float] | None:
        """(the page's first message after `click`, the last content message of the answer
        (None: none), the server idle again), once the server is idle and nothing has come
        for QUIET_S; None when the page sent nothing."""
        deadline = time.perf_counter() + timeout
        while True:
            page.wait_for_timeout(50)  # lets Playwright deliver the events
            sent = [t for t in self.sent if t >= click]
            idle = [t for t in self.idle if sent and t >= sent[0]]
            latest = max([click, *self.content[-1:], *self.idle[-1:]])
            if idle and time.perf_counter() - latest >= QUIET_S:
                break
            if time.perf_counter() > deadline:
                return None if not sent else (sent[0], None, time.perf_counter())
        content = [t for t in self.content if t >= sent[0]]
        return sent[0], (content[-1] if content else None), idle[-1]


def _frames(page) -> float:
    """Seconds until the browser has drawn two more frames (Bokeh draws in animation frames)."""
    start = time.perf_counter()
    page.evaluate("() => new Promise(d => requestAnimationFrame(() => requestAnimationFrame(d)))")
    return time.perf_counter() - start


def open_tab(page, messages: Messages, tab: str) -> tuple[float, float]:
    """(seconds from the page's message that opens `tab` to its content drawn, the server's
    answer in and two frames drawn after; seconds until the server was idle again)."""
    click = time.perf_counter()
    header = page.locator(".bk-tab", has_text=tab).first
    if not header.is_visible():  # under the More tab (workbench/views/registry.py)
        page.locator(".bk-tab", has_text=MORE).first.click()
        header.wait_for(state="visible", timeout=120_000)
    if "bk-active" not in (header.get_attribute("class") or ""):
        header.click()
    if tab in READY:
        page.locator(READY[tab]).first.wait_for(timeout=120_000)
    drawn = time.perf_counter()
    start, last, idle = messages.answer(click, page)
    return max(drawn, last or start) - start + _frames(page), idle - start


def change_filter(page, messages: Messages, box: str) -> tuple[float | None, float]:
    """(seconds for the page to answer a click on the sidebar box named `box`, and two frames
    drawn after (None: the server sent nothing that changes the page); seconds until the server
    was idle again)."""
    click = time.perf_counter()
    page.get_by_role("checkbox", name=box, exact=True).click()
    start, last, idle = messages.answer(click, page)
    return (None if last is None else last - start + _frames(page)), idle - start


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    from playwright.sync_api import sync_playwright

    from workbench.views.selection import Selection

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--store", type=Path, default=ROOT / "results" / "demo")
    parser.add_argument("--rounds", type=int, default=2,
                        help="times each filter change is made with each tab open")
    parser.add_argument("--code", type=Path, default=ROOT,
                        help="the checkout whose dashboard is served (default: this one)")
    args = parser.parse_args()
    selection = Selection(store_path=str(args.store))
    algorithm = list(selection.param.algorithms.objects)[-1]
    workload = list(selection.param.workloads.objects)[-1]
    boxes = [algorithm, algorithm, workload, workload] * args.rounds  # untick, tick again
    print(f"store {args.store}: {len(selection.runs)} runs; filter changes: untick and tick "
          f"again algorithm {algorithm!r}, workload {workload!r}")
    print(f"load average at start: {_load()} ({os.cpu_count()} cores)", flush=True)
    print(f"code served: {args.code.resolve()}")
    with sync_playwright() as pw:  # the browser started before the server's clock
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True,
                                     args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        messages = Messages(page)
        started = time.perf_counter()
        with served(args.store.resolve(), args.code.resolve()) as url:
            start = time.perf_counter()
            page.goto(url, timeout=180_000)
            page.locator(FIRST_TAB).first.wait_for(timeout=180_000)
            end = time.perf_counter() + _frames(page)
            print(f"server start to first page drawn: {end - started:.2f} s (goal "
                  f"{GOAL_SERVE_S:g} s); first page (a new session; the server had read "
                  f"nothing): {end - start:.2f} s", flush=True)
            worst_open, worst_change = _tabs(page, messages, boxes)
        browser.close()
    print(f"slowest tab open {worst_open:.2f} s (goal {GOAL_OPEN_S:g} s: "
          f"{'ok' if worst_open <= GOAL_OPEN_S else 'OVER GOAL'}); slowest filter change "
          f"{worst_change:.2f} s (goal {GOAL_FILTER_S:g} s: "
          f"{'ok' if worst_change <= GOAL_FILTER_S else 'OVER GOAL'})")
    print(f"load average at end: {_load()}")


def _tabs(page, messages: Messages, boxes: list[str]) -> tuple[float, float]:
    """Open each tab and make the filter changes `boxes` with it open, printing the times;
    returns (the slowest open, the slowest change)."""
    from workbench.views.registry import VIEWS

    worst_open, worst_change = 0.0, 0.0
    page.wait_for_timeout(1000)  # whatever the first page still sends
    print(f"{'tab':16s} {'open':>7s} {'(idle)':>8s}   filter change: median / slowest "
          f"of {len(boxes)} (server idle: slowest)")
    for entry in VIEWS:
        opened, open_idle = (open_tab(page, messages, entry.title)
                             if entry.title != "Leaderboard" else (0.0, 0.0))
        answers = [change_filter(page, messages, box) for box in boxes]
        timed = [a for a, _ in answers if a is not None]
        worst_open = max(worst_open, opened)
        worst_change = max([worst_change, *timed])
        silent = len(answers) - len(timed)
        print(f"{entry.title:16s} {opened:6.2f} s ({open_idle:5.2f} s)   "
              + (f"{statistics.median(timed):5.2f} s / {max(timed):5.2f} s" if timed
                 else "no change shown")
              + f" ({max(idle for _, idle in answers):5.2f} s)"
              + (f"; {silent} changes changed nothing shown" if silent else ""),
              flush=True)
    return worst_open, worst_change


if __name__ == "__main__":
    main()
