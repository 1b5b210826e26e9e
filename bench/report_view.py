"""The report at scale: build and write the reports of a synthetic run
(rackops.validate.synthrun) of 4 to 1,024 nodes, the HTML's size, and how long Chromium
(Debian's, through Playwright) takes to load and render it at 1,280 × 800: navigation to the
load event, and to the first contentful paint.

    .venv/bin/python bench/report_view.py --nodes 4 64 256 1024
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from rackops.validate.report import write_reports
from rackops.validate.rundir import RunDir
from rackops.validate.synthrun import make_run


def render_times(html: Path, repeat: int) -> tuple[float, float]:
    """Best of ``repeat``: seconds to the load event, and to the first contentful paint."""
    from playwright.sync_api import sync_playwright

    browser_path = shutil.which("chromium") or shutil.which("chromium-browser")
    assert browser_path, "no chromium (scripts/lab-deps installs it)"
    loads, paints = [], []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=browser_path, args=["--no-sandbox"])
        for _ in range(repeat):
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            started = time.perf_counter()
            page.goto(html.as_uri(), wait_until="load")
            loads.append(time.perf_counter() - started)
            page.wait_for_function(  # headless Chromium records the paint after the load
                "performance.getEntriesByName('first-contentful-paint').length > 0"
            )
            fcp = page.evaluate(
                "performance.getEntriesByName('first-contentful-paint')[0].startTime"
            )
            paints.append(fcp / 1000)
            page.close()
        browser.close()
    return min(loads), min(paints)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, nargs="+", default=[4, 1024])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    print("| nodes | write reports (s) | report.html (KB) | Chromium: load (s) | first paint (s) |")
    print("| ---: | ---: | ---: | ---: | ---: |")
    for n in args.nodes:
        with tempfile.TemporaryDirectory() as tmp:
            run = make_run(Path(tmp) / "run", nodes=n)
            started = time.perf_counter()
            write_reports(RunDir(run))
            written = time.perf_counter() - started
            html = run / "report.html"
            load, paint = render_times(html, args.repeat)
            print(
                f"| {n} | {written:.1f} | {html.stat().st_size / 1000:.0f} | {load:.2f} | "
                f"{paint:.2f} |"
            )


if __name__ == "__main__":
    main()
