"""How long an exported HTML report takes to show its first tab in Chromium (issue 28).

    .venv/bin/python benchmarks/report_load.py --store results/demo [--store results/algoperf-v05]
        [--code OTHER_CHECKOUT] [--rounds 3] [--tabs]

For each store the report is written by `pacebench report` (in a fresh process, with the code of
this checkout and, with --code, of another checkout too, say the commit before a change), then
opened from disk in headless Chromium (Debian's, /usr/bin/chromium, `--no-sandbox`) with every
network request blocked, as a reader who got the file by mail would. Timed from navigation to the
first leaderboard row on screen (the first tab drawn), the median and slowest of --rounds fresh
pages; with --tabs, also each later tab from its click to its first plot or table row. The load
average is printed: the figures are wall-clock times on a shared machine.
Goal: the first tab within 5 s.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
GOAL_FIRST_TAB_S = 5.0
FIRST_TAB = ".pb-scores .tabulator-row"
# each later tab, and what shows that it has drawn (as tests/browser/test_browser.py's VIEW_READY)
TAB_READY = {
    "Studies": ".pb-studies .tabulator-row", "Speedups": ".pb-speedups .tabulator-row",
    "Compare": ".pb-compare canvas", "Tuning budget": ".pb-budget canvas",
    "Profiles": ".pb-profiles canvas", "Curves": ".pb-curve canvas",
    "Robustness": ".pb-robustness .tabulator-row", "Costs": ".pb-costs .tabulator-row",
    "Hyperparameters": ".pb-hparams-scatter canvas",
}


def write(code: Path, store: Path, out: Path) -> float:
    """Seconds `pacebench report` (the code at `code`) took to write `out` from `store`."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "runners.cli", "report", "--store", str(store),
                    "--out", str(out)], cwd=code, env={**os.environ, "PYTHONPATH": str(code)},
                   check=True, capture_output=True, text=True)
    return time.perf_counter() - start


def _painted(page) -> None:
    page.evaluate("() => new Promise(d => requestAnimationFrame(() => requestAnimationFrame(d)))")


def open_report(browser, html: Path, tabs: bool) -> tuple[float, dict[str, float]]:
    """(seconds to the first tab, {later tab: seconds from its click to drawn}) in a new page."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.route("**/*", lambda r: r.continue_() if r.request.url.startswith(("file:", "data:"))
               else r.abort())
    try:
        start = time.perf_counter()
        page.goto(html.as_uri(), timeout=300_000)
        page.locator(FIRST_TAB).first.wait_for(timeout=300_000)
        _painted(page)
        first, later = time.perf_counter() - start, {}
        for tab, ready in (TAB_READY.items() if tabs else ()):
            start = time.perf_counter()
            page.locator(".bk-tab", has_text=tab).first.click()
            page.locator(ready).first.wait_for(timeout=300_000)
            _painted(page)
            later[tab] = time.perf_counter() - start
        return first, later
    finally:
        page.close()


def main() -> None:
    from playwright.sync_api import sync_playwright

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--store", type=Path, action="append", required=True)
    parser.add_argument("--code", type=Path, action="append", default=[],
                        help="another checkout whose report to time too (e.g. the commit before)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tabs", action="store_true", help="also time each later tab")
    parser.add_argument("--out", type=Path, default=Path("/tmp/pacebench-report-load"))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    codes = [ROOT, *[c.resolve() for c in args.code]]
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())} "
          f"({os.cpu_count()} cores)", flush=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True,
                                     args=["--no-sandbox"])
        for store in args.store:
            for i, code in enumerate(codes):
                html = args.out / f"{store.name}-{i}.html"
                written = write(code, store.resolve(), html)
                runs = [open_report(browser, html, args.tabs) for _ in range(args.rounds)]
                firsts = [first for first, _ in runs]
                worst = max(firsts)
                print(f"{store.name}, code {code}: written in {written:.1f} s, "
                      f"{html.stat().st_size / 1e6:.1f} MB; first tab {statistics.median(firsts):.1f}"
                      f" s median, {worst:.1f} s slowest of {args.rounds} "
                      f"({'ok' if worst <= GOAL_FIRST_TAB_S else 'OVER GOAL'} of "
                      f"{GOAL_FIRST_TAB_S:g} s); load average "
                      f"{os.getloadavg()[0]:.2f}", flush=True)
                for tab in runs[0][1]:
                    times = [later[tab] for _, later in runs]
                    print(f"    {tab:16s} {statistics.median(times):5.1f} s median, "
                          f"{max(times):5.1f} s slowest", flush=True)
        browser.close()


if __name__ == "__main__":
    main()
