"""Mcp-Param-* headers (2026-07-28) over `serve --http`, in process through the ASGI app: a tool whose
inputSchema declares a header (`x-mcp-header`) has it checked against its argument, as the SDK does;
a tool that declares none has nothing to check, whatever headers arrive."""

from typing import Annotated

import anyio
import httpx2
from mcp.types import CallToolResult, TextContent
from pydantic import Field

from mcpgen.answer.results import DataToolOutput
from mcpgen.http.app import build_app
from mcpgen.http.options import HTTPOptions
from mcpgen.serve.registry import Registry
from mcpgen.serve.server import ToolServer

MODERN = "2026-07-28"


def _answer(text: str) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=text)], structured_content={"sources": ["https://example.org/"]}
    )


def _server() -> ToolServer:
    registry = Registry()

    @registry.tool()
    def routed(region: Annotated[str, Field(json_schema_extra={"x-mcp-header": "Region"})]) -> DataToolOutput:
        """Answers for one region; a gateway routes its calls by the Mcp-Param-Region header."""
        return _answer(region)

    @registry.tool()
    def plain(region: str) -> DataToolOutput:
        """Answers for one region; declares no header."""
        return _answer(region)

    return ToolServer(registry)


def _call(tool: str, argument: str, header: str | None) -> tuple[int, dict]:
    server = _server()
    app = build_app(server, HTTPOptions())
    meta = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call"}
    body["params"] = {"name": tool, "arguments": {"region": argument}, "_meta": meta}
    headers = {"accept": "application/json, text/event-stream", "mcp-protocol-version": MODERN}
    headers |= {"mcp-method": "tools/call", "mcp-name": tool}
    if header is not None:
        headers["mcp-param-region"] = header

    async def main():
        with anyio.fail_after(30):
            async with app.router.lifespan_context(app):
                transport = httpx2.ASGITransport(app=app)
                async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1:8000") as client:
                    return await client.post("/mcp", json=body, headers=headers)

    response = anyio.run(main)
    return response.status_code, response.json()


def test_a_declared_header_must_match_its_argument():
    status, answer = _call("routed", "eu", "eu")
    assert status == 200 and answer["result"]["content"][0]["text"] == "eu"
    for header in ("us", None):  # another value, or none at all
        status, answer = _call("routed", "eu", header)
        assert status == 400 and answer["error"]["code"] == -32020, answer
        assert "Mcp-Param-Region" in answer["error"]["message"]


def test_a_tool_that_declares_no_header_ignores_them():
    for header in ("eu", "us", None):
        status, answer = _call("plain", "eu", header)
        assert status == 200 and answer["result"]["content"][0]["text"] == "eu", answer


def test_only_a_schema_that_declares_a_header_is_given_to_the_sdk():
    server = _server()
    assert server._input_schema("routed")["properties"]["region"]["x-mcp-header"] == "Region"
    assert server._input_schema("plain") is None
    assert server._input_schema("unknown") is None
