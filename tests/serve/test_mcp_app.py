"""The MCP App as a server publishes it: tool `_meta.ui`, resources/list and resources/read,
settings and opt-out, the inlined Chart.js and the document's own CSP. Drawing it in a browser
inside the official host bridge is tests/browser/test_mcp_app_browser.py."""

import base64
import hashlib
import re
import textwrap
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from mcpgen.serve.mcp_app import APP_URI, CDN_ORIGIN, CHARTJS
from mcpgen.serve.project import open_project
from mcpgen.serve.server import ToolServer

ROOT = Path(__file__).resolve().parents[2]
CHARTJS_FILE = ROOT / "tests" / ".artifacts" / "node" / "node_modules" / "chart.js" / CHARTJS.file

SPEC = """\
description: Cities.
sql: SELECT 'Oslo' AS city, 709037 AS population
sources: ["https://example.org/"]
content: "{{ rows[0].city }}"
chart: {type: bar, x: city, y: population}
"""


def session(project, work):
    """Run `work(client)` against the project's real server over the SDK's in-memory transport."""
    server = ToolServer(project.registry)
    out = {}

    async def main():
        async with Client(server.server) as client:
            out["value"] = await work(client)

    anyio.run(main)
    return out["value"]


@pytest.fixture
def project_of(tmp_path, monkeypatch):
    """Open a project made of the given specs (name -> YAML) and optional mcpgen.yaml text."""
    monkeypatch.chdir(tmp_path)
    opened = []

    def build(specs: dict[str, str], config: str = "", python: str = ""):
        home = tmp_path / f"project{len(opened)}"
        folder = home / "specs"
        folder.mkdir(parents=True)
        for name, body in specs.items():
            (folder / f"{name}.yaml").write_text(textwrap.dedent(body))
        if python:
            (folder / "tools.py").write_text(python)
        if config:
            (home / "mcpgen.yaml").write_text(textwrap.dedent(config))
        project = open_project(folder)
        opened.append(project)
        return project

    yield build
    for project in opened:
        project.close()


def test_every_shipped_tool_advertises_the_shared_app(monkeypatch):
    monkeypatch.chdir(ROOT)
    project = open_project(ROOT / "specs")
    try:

        async def work(client):
            return await client.list_tools(), await client.list_resources(), await client.read_resource(APP_URI)

        tools, resources, read = session(project, work)
    finally:
        project.close()
    assert len(tools.tools) >= 10
    assert {t.name: t.meta for t in tools.tools} == {t.name: {"ui": {"resourceUri": APP_URI}} for t in tools.tools}
    assert [(r.uri, r.mime_type) for r in resources.resources] == [(APP_URI, "text/html;profile=mcp-app")]
    [contents] = read.contents
    assert contents.mime_type == "text/html;profile=mcp-app"
    assert contents.text.startswith("<!doctype html>")
    assert contents.meta["ui"]["prefersBorder"] is True


def test_the_result_is_the_same_with_and_without_the_app(project_of):
    with_app = project_of({"with_app": SPEC})
    without = project_of({"without": SPEC + "app: false\n"})
    assert with_app.registry.get("with_app").to_mcp().meta == {"ui": {"resourceUri": APP_URI}}
    assert without.registry.get("without").to_mcp().meta is None
    assert without.registry.apps == {}
    a = with_app.registry.call_sync("with_app", {})
    b = without.registry.call_sync("without", {})
    assert a == b


def test_project_switch_and_per_spec_settings(project_of):
    off = project_of({"one": SPEC}, config="app: false\n")
    assert off.registry.apps == {} and off.registry.get("one").app is None

    project = project_of(
        {"plain": SPEC, "tall": SPEC + "app: {chart_height: 500}\n", "same": SPEC + "app: {theme: dark}\n"},
        config="app: {theme: dark}\n",
    )
    apps = project.registry.apps
    assert sorted(apps) == [APP_URI, f"{APP_URI}/tall"]
    assert sorted(apps[APP_URI].tools) == ["plain", "same"]  # settings equal to the project's share its app
    assert (apps[f"{APP_URI}/tall"].settings.chart_height, apps[f"{APP_URI}/tall"].settings.theme) == (500, "dark")
    assert '"chartHeight": 500, "theme": "dark"' in apps[f"{APP_URI}/tall"].html

    async def work(client):
        return await client.read_resource(f"{APP_URI}/tall")

    assert session(project, work).contents[0].uri == f"{APP_URI}/tall"


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ("{chart_height: 50}", "greater than or equal to 120"),
        ("{theme: neon}", "'neon' is not one of auto, light, dark"),
        ("{theme: drak}", "did you mean 'dark'?"),
    ],
)
def test_bad_app_settings_name_the_problem(project_of, setting, message):
    from mcpgen.errors import SpecError

    with pytest.raises(SpecError) as err:
        project_of({"bad": SPEC + f"app: {setting}\n"})
    assert "bad.yaml:6" in str(err.value.problems[0]) and message in str(err.value.problems[0])


@pytest.mark.parametrize(("mode", "code"), [("2026-07-28", -32602), ("legacy", -32002)])
@pytest.mark.parametrize("uri", ["ui://mcpgen/nope", "test://elsewhere", "ui://mcpgen"])
def test_unknown_resource_is_invalid_params_on_2026_and_names_the_uri_on_both_wires(project_of, mode, code, uri):
    """2026-07-28 made an unknown URI -32602 (earlier revisions: -32002); both carry error.data.uri."""
    project = project_of({"one": SPEC})
    server = ToolServer(project.registry)
    out = {}

    async def main():
        async with Client(server.server, mode=mode) as client:
            with pytest.raises(MCPError) as err:
                await client.read_resource(uri)
            out["error"] = err.value.error
            out["still serving"] = not (await client.call_tool("one", {})).is_error

    anyio.run(main)
    assert (out["error"].code, out["error"].data) == (code, {"uri": uri})
    assert out["error"].message == f"Unknown resource: {uri}" and out["still serving"]


@pytest.mark.parametrize(("mode", "wire"), [("legacy", "2025-11-25"), ("auto", "2026-07-28")])
def test_the_ui_extension_is_declared_on_both_wires(project_of, mode, wire):
    """server/discover (2026-07-28) and the handshake-era initialize result both declare MCP Apps."""
    project = project_of({"one": SPEC})
    server = ToolServer(project.registry)
    out = {}

    async def main():
        async with Client(server.server, mode=mode) as client:
            out["extensions"] = client.server_capabilities.extensions
            out["wire"] = client.protocol_version

    anyio.run(main)
    assert out["wire"] == wire
    assert out["extensions"] == {
        "io.modelcontextprotocol/ui": {"mimeTypes": ["text/html;profile=mcp-app"]},
        "io.modelcontextprotocol/tasks": {},  # mcpgen.serve.tasks
    }


def _inline_scripts(html: str) -> list[str]:
    return re.findall(r"<script>(.*?)</script>", html, re.DOTALL)


def _csp(html: str) -> str:
    return re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', html)[1]


def test_without_chartjs_the_app_declares_the_cdn_with_integrity(project_of, monkeypatch, tmp_path):
    wrong = tmp_path / "chart.umd.min.js"
    wrong.write_text("window.Chart = function () {};")  # not the pinned file: refused
    monkeypatch.setenv("MCPGEN_CHARTJS", str(wrong))
    monkeypatch.setattr("mcpgen.serve.mcp_app.VENDOR", tmp_path / "no-vendor")
    app = project_of({"one": SPEC}).registry.apps[APP_URI]
    contents = app.contents()
    assert contents.meta["ui"]["csp"] == {"resourceDomains": [CDN_ORIGIN]}
    assert f'<script src="{CHARTJS.cdn}" integrity="{CHARTJS.sri}" crossorigin="anonymous">' in app.html
    assert "window.Chart = function" not in app.html
    assert '"chartjs": "cdn"' in app.html  # the app says under its charts where Chart.js comes from
    script_src = next(d for d in _csp(app.html).split("; ") if d.startswith("script-src ")).split()[1:]
    # only our own script (by hash) and exactly the pinned file: not the CDN host, not a folder on it
    assert [s for s in script_src if not s.startswith("'sha256-")] == [CHARTJS.cdn], script_src
    assert CHARTJS.cdn.endswith("/" + CHARTJS.file) and CHARTJS.spec in CHARTJS.cdn
    for other in (CDN_ORIGIN, CDN_ORIGIN + "/", CDN_ORIGIN + "/npm/", "https:", "*"):
        assert other not in script_src


def test_inlined_chartjs_needs_no_network_and_every_script_is_pinned_by_hash(project_of, monkeypatch):
    if not CHARTJS_FILE.is_file():
        pytest.skip(f"{CHARTJS_FILE.relative_to(ROOT)} is missing: .ci/run installs chart.js@{CHARTJS.version}")
    monkeypatch.setenv("MCPGEN_CHARTJS", str(CHARTJS_FILE))
    app = project_of({"one": SPEC}).registry.apps[APP_URI]
    contents = app.contents()
    assert "csp" not in contents.meta["ui"]  # nothing to fetch: the host's default CSP is enough
    assert "<script src=" not in app.html and "Chart.js v4.6.1" in app.html and '"chartjs": "inline"' in app.html
    csp = _csp(app.html)
    assert "connect-src 'none'" in csp and "https:" not in csp
    scripts = _inline_scripts(app.html)
    assert len(scripts) == 2
    for code in scripts:  # only our two scripts may run: injected markup could not execute
        digest = base64.b64encode(hashlib.sha256(code.encode()).digest()).decode()
        assert f"'sha256-{digest}'" in csp
    size = len(contents.text.encode())
    assert size < 300_000, f"the app is {size} bytes"


def test_validate_notes_the_cdn_fallback(monkeypatch, tmp_path):
    import json

    from click.testing import CliRunner

    from mcpgen.cli import main

    monkeypatch.setattr("mcpgen.serve.mcp_app.VENDOR", tmp_path / "no-vendor")
    monkeypatch.delenv("MCPGEN_CHARTJS", raising=False)
    result = CliRunner().invoke(main, ["validate", "--format", "json", str(ROOT / "specs")])
    assert result.exit_code == 0
    [note] = json.loads(result.output)["notes"]
    assert note.startswith("Chart.js 4.6.1 is not installed here (this install could not fetch it when it was built), ")
    assert "so the app loads it from https://cdn.jsdelivr.net" in note
    if CHARTJS_FILE.is_file():
        monkeypatch.setenv("MCPGEN_CHARTJS", str(CHARTJS_FILE))
        result = CliRunner().invoke(main, ["validate", "--format", "json", str(ROOT / "specs")])
        assert json.loads(result.output)["notes"] == []


def test_serve_says_on_stderr_when_the_app_falls_back_to_the_cdn(project_of, monkeypatch, tmp_path, capsys):
    from mcpgen.cli import _say_chartjs_fallback

    monkeypatch.setattr("mcpgen.serve.mcp_app.VENDOR", tmp_path / "no-vendor")
    monkeypatch.delenv("MCPGEN_CHARTJS", raising=False)
    _say_chartjs_fallback(project_of({"one": SPEC}))
    err = capsys.readouterr().err
    assert err.startswith("mcpgen: Chart.js 4.6.1 is not installed here (this install could not fetch it when it ")
    assert err.count("\n") == 1 and err.endswith("`mcpgen build-app` fetches it.\n")
    _say_chartjs_fallback(project_of({"one": SPEC + "app: false\n"}))  # no app: nothing to say
    assert capsys.readouterr().err == ""
    if CHARTJS_FILE.is_file():
        monkeypatch.setenv("MCPGEN_CHARTJS", str(CHARTJS_FILE))
        _say_chartjs_fallback(project_of({"one": SPEC}))
        assert capsys.readouterr().err == ""


@pytest.mark.slow
def test_build_app_fetches_the_pinned_chartjs_and_refuses_a_wrong_checksum(tmp_path, monkeypatch):
    import dataclasses
    import shutil

    from click.testing import CliRunner

    from mcpgen.cli import main

    if shutil.which("npm") is None:
        pytest.skip("npm is not installed")
    result = CliRunner().invoke(main, ["build-app", "--out", str(tmp_path / "vendor")])
    assert result.exit_code == 0, result.output
    out = tmp_path / "vendor" / "chart.umd.min.js"
    assert hashlib.sha256(out.read_bytes()).hexdigest() == CHARTJS.sha256
    assert "MIT" in (tmp_path / "vendor" / "chart.js-LICENSE.md").read_text()
    assert f"Point MCPGEN_CHARTJS at {out}" in result.output

    monkeypatch.setattr("mcpgen.vendored.CHARTJS", dataclasses.replace(CHARTJS, integrity="sha512-" + "A" * 86 + "=="))
    result = CliRunner().invoke(main, ["build-app", "--out", str(tmp_path / "other")])
    assert result.exit_code == 1
    assert "does not match its pinned checksum; nothing was written" in result.output
    assert not (tmp_path / "other").exists()


def test_a_python_tool_can_opt_out(project_of):
    source = textwrap.dedent("""\
        from mcp.types import CallToolResult, TextContent
        from mcpgen import DataToolOutput, registry

        @registry.tool()
        def with_app() -> DataToolOutput:
            return CallToolResult(content=[TextContent(type="text", text="x")],
                                  structured_content={"sources": ["https://example.org/"]})

        @registry.tool(app=False)
        def without_app() -> DataToolOutput:
            return CallToolResult(content=[TextContent(type="text", text="x")],
                                  structured_content={"sources": ["https://example.org/"]})
        """)
    python = project_of({"one": SPEC}, python=source)
    assert python.registry.get("with_app").app == APP_URI
    assert python.registry.get("without_app").app is None
    assert sorted(python.registry.apps[APP_URI].tools) == ["one", "with_app"]
