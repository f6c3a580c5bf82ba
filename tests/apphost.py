"""A browser host for the MCP App, made of the official packages: tests/node/host.js (the
ext-apps AppBridge and the TypeScript MCP client) bundled by esbuild, a real `mcpgen serve --http`,
and Playwright routes that serve the host page and forward /mcp to that server. Every other
request the page makes is refused and recorded, so tests can assert that nothing leaves the page.

Used by tests/browser/test_mcp_app_browser.py and by docs/app_screenshot.py.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from servers import stop

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "tests" / ".artifacts"
NODE = ARTIFACTS / "node"
CHARTJS = NODE / "node_modules" / "chart.js" / "dist" / "chart.umd.min.js"
ESBUILD = NODE / "node_modules" / ".bin" / "esbuild"
BUNDLE = ARTIFACTS / "app-host" / "host.js"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ORIGIN = "http://mcp-host.test"  # never resolved: the page's requests are answered by routes
PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>mcpgen app in an MCP Apps host</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 16px; background: #f3f4f6; color: #111; }
.view { background: #fff; border: 1px solid #d0d7de; border-radius: 10px; margin: 0 0 16px; padding: 8px 10px; }
.view h2 { font-size: 13px; color: #555; margin: 0 0 6px; font-weight: 600; }
iframe { border: 0; width: 100%; height: 40px; display: block; }
</style></head>
<body><div id="views"></div><script src="/host.js"></script></body></html>
"""


def missing() -> str | None:
    """Why the host cannot run here, or None."""
    if not CHROMIUM.exists():
        return f"{CHROMIUM} is missing: apt-get install -y chromium"
    if not (ESBUILD.exists() and CHARTJS.is_file()):
        return "the browser-test npm packages are missing: .ci/run installs tests/node/ into tests/.artifacts/node"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright Python package is not installed"
    return None


def bundle() -> Path:
    """Bundle tests/node/host.js with the official packages (esbuild, once per run)."""
    source = ROOT / "tests" / "node" / "host.js"
    if BUNDLE.is_file() and BUNDLE.stat().st_mtime >= source.stat().st_mtime:
        return BUNDLE
    BUNDLE.parent.mkdir(parents=True, exist_ok=True)
    entry = NODE / "host.js"  # beside node_modules/, where esbuild resolves the packages
    entry.write_bytes(source.read_bytes())
    subprocess.run(
        [str(ESBUILD), str(entry), "--bundle", "--format=iife", "--platform=browser", f"--outfile={BUNDLE}"],
        cwd=NODE,
        check=True,
        capture_output=True,
        timeout=120,
    )
    return BUNDLE


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def mcpgen_http(specs: Path, log: Path, chartjs: Path | None = CHARTJS):
    """A real `mcpgen serve SPECS --http` on a free loopback port; yields its /mcp URL."""
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if chartjs is not None:
        env["MCPGEN_CHARTJS"] = str(chartjs)
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "mcpgen.cli", "serve", str(specs), "--http", "--port", str(port)],
            stdout=subprocess.DEVNULL,
            stderr=err,
            env=env,
            cwd=ROOT,
        )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"mcpgen serve --http did not start:\n{log.read_text()}") from None
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop(proc)


FORWARDED = ("content-type", "accept", "mcp-protocol-version", "mcp-session-id", "last-event-id")


class Host:
    """Routes for one Playwright page: the host page and bundle, /mcp forwarded, the rest refused."""

    def __init__(self, mcp_url: str):
        self.mcp_url = mcp_url
        self.refused: list[str] = []
        self.script = bundle().read_bytes()

    def attach(self, page) -> None:
        page.route("**/*", self._route)

    def _route(self, route) -> None:
        request = route.request
        url = request.url
        if url in (ORIGIN, ORIGIN + "/"):
            route.fulfill(status=200, content_type="text/html; charset=utf-8", body=PAGE)
        elif url == ORIGIN + "/host.js":
            route.fulfill(status=200, content_type="text/javascript", body=self.script)
        elif url == ORIGIN + "/mcp" and request.method == "GET":
            # The optional server-to-client stream never ends, and a route answers once: decline it,
            # as a server without that stream does (the client then polls nothing, which is fine here).
            route.fulfill(status=405, headers={"Allow": "POST"}, body=b"")
        elif url == ORIGIN + "/mcp":
            self._forward(route, request)
        else:
            self.refused.append(url)
            route.abort()

    def _forward(self, route, request) -> None:
        headers = {k: v for k, v in request.headers.items() if k.lower() in FORWARDED}
        req = urllib.request.Request(
            self.mcp_url, data=request.post_data_buffer, method=request.method, headers=headers
        )
        try:
            with urllib.request.urlopen(req, timeout=60) as resp:
                status, body, got = resp.status, resp.read(), resp.headers
        except urllib.error.HTTPError as exc:
            status, body, got = exc.code, exc.read(), exc.headers
        keep = {k: v for k, v in got.items() if k.lower() in ("content-type", "mcp-session-id", "mcp-protocol-version")}
        route.fulfill(status=status, headers=keep, body=body)


def launch(playwright):
    return playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)


def open_host(page, host: Host) -> list[dict]:
    """Load the host page and connect its MCP client; returns the tools as the host sees them."""
    host.attach(page)
    page.goto(ORIGIN + "/")
    page.wait_for_function("() => window.host !== undefined")
    return page.evaluate("() => host.connect()")


def show(page, name: str, arguments: dict, **options) -> tuple[dict, object]:
    """Call a tool in the host and wait until its app has drawn the answer: (result, the app's frame)."""
    result = page.evaluate("([n, a, o]) => host.show(n, a, o)", [name, arguments, options])
    iframe = page.locator(f"section.view[data-tool='{name}'] iframe").last
    iframe.scroll_into_view_if_needed()  # browsers throttle drawing in frames out of view
    frame = iframe.element_handle().content_frame()
    frame.wait_for_function("() => !document.querySelector('#answer .waiting')")
    frame.wait_for_function("() => [...document.querySelectorAll('canvas')].every(c => Chart.getChart(c))")
    return result, frame
