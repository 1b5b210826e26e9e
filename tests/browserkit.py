"""The report as people see it: opened in Chromium (Debian's, driven by Playwright; no
browser download) at 1,280 × 800, the size of a laptop's first screen."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

VIEWPORT = {"width": 1280, "height": 800}


def chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    try:
        import playwright  # noqa: F401
    except ImportError:
        path = None
    if path is None:
        if os.environ.get("RACKOPS_REQUIRE_LAB") == "1":
            pytest.fail("CI needs chromium (scripts/lab-deps) and playwright (.[test])")
        pytest.skip("no chromium or no playwright")
    return path


def look(report_html: Path) -> dict[str, Any]:
    """Open the report and read what a person would: the first viewport, the width, the
    collapsed sections (each clicked open), console errors, the pictures' labels."""
    from playwright.sync_api import sync_playwright

    seen: dict[str, Any] = {"errors": []}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium(), args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport=VIEWPORT)  # type: ignore[arg-type]
            page.on(
                "console", lambda m: seen["errors"].append(m.text) if m.type == "error" else None
            )
            page.on("pageerror", lambda e: seen["errors"].append(str(e)))
            page.goto(report_html.as_uri())
            page.wait_for_load_state("load")
            seen["first_screen"] = {
                sel: _box(page, sel) for sel in ("#verdict", "#counts", "#culprits")
            }
            seen["fix_groups"] = page.locator(".fixgroup h3").all_inner_texts()
            seen["scroll_width"] = page.evaluate("document.documentElement.scrollWidth")
            seen["inner_width"] = page.evaluate("window.innerWidth")
            closed = page.locator("details:not([open])")
            seen["closed"] = closed.count()
            seen["opened"] = []
            for _ in range(seen["closed"]):
                d = page.locator("details:not([open])").first
                name = d.get_attribute("id")
                d.locator(":scope > summary").click()  # its own, not a nested one's
                body = page.locator(f"details#{name} > :not(summary)").first
                seen["opened"].append(
                    (name, page.evaluate(f"document.getElementById('{name}').open"),
                     body.count() > 0 and body.is_visible())
                )  # fmt: skip
            seen["outliers"] = page.locator("svg.dist text.outlier").all_text_contents()
            seen["still_closed"] = page.locator("details:not([open])").count()
        finally:
            browser.close()
    return seen


def _box(page: Any, selector: str) -> dict[str, float] | None:
    box = page.locator(selector).first.bounding_box()
    return dict(box) if box else None


def assert_readable(seen: dict[str, Any]) -> None:
    """What the issue asks of every report, at 4 or 1,024 nodes."""
    height = VIEWPORT["height"]
    for sel in ("#verdict", "#counts", "#culprits"):
        box = seen["first_screen"][sel]
        assert box is not None and box["y"] < height, f"{sel} is not on the first screen: {box}"
    assert seen["scroll_width"] <= seen["inner_width"], "the page scrolls sideways at 1,280 px"
    assert seen["errors"] == [], seen["errors"]
    assert seen["still_closed"] == 0 and all(o and v for _, o, v in seen["opened"]), seen["opened"]
