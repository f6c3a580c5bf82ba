#!/usr/bin/env python3
"""Render two shipped tools inside an MCP Apps host page and save a screenshot (docs/app-in-host.png).

The host is the one the browser tests use (tests/apphost.py): the official ext-apps AppBridge and
TypeScript MCP client, connected to a real `mcpgen serve specs/ --http`, in Debian's headless
Chromium. It needs what .ci/run installs (chromium, and tests/node/ into tests/.artifacts/node).

    python docs/app_screenshot.py [--out docs/app-in-host.png]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

import apphost  # noqa: E402

SHOWN = [
    ("top_cities", {"top_n": 8}, "light"),
    ("life_expectancy_trend", {"from_year": 1967}, "light"),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "app-in-host.png")
    opts = ap.parse_args()
    reason = apphost.missing()
    if reason:
        sys.exit(f"app_screenshot: {reason}")
    from playwright.sync_api import sync_playwright

    with (
        apphost.mcpgen_http(ROOT / "specs", apphost.ARTIFACTS / "app-screenshot.log") as url,
        sync_playwright() as pw,
    ):
        browser = apphost.launch(pw)
        page = browser.new_page(viewport={"width": 980, "height": 800}, device_scale_factor=1)
        host = apphost.Host(url)
        apphost.open_host(page, host)
        frames = []
        for name, arguments, theme in SHOWN:
            result, frame = apphost.show(page, name, arguments, theme=theme)
            if result.get("isError"):
                sys.exit(f"app_screenshot: {name} answered with an error: {result['content']}")
            frames.append(frame)
        for frame in frames:  # the final frame of every chart, even those scrolled out of view
            frame.evaluate(
                "() => document.querySelectorAll('canvas').forEach(c => { const ch = Chart.getChart(c); "
                "ch.stop(); ch.update('none'); })"
            )
        page.evaluate("() => window.scrollTo(0, 0)")
        page.screenshot(path=str(opts.out), full_page=True)
        browser.close()
    if host.refused:
        sys.exit(f"app_screenshot: the page tried to reach {host.refused}")
    print(f"wrote {opts.out}")


if __name__ == "__main__":
    main()
