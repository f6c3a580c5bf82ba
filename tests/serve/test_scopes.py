"""Per-tool scopes: a tool (and its app) a caller may not use is neither listed nor callable; claims
choose the rows; hand-written tools take scopes too."""

from __future__ import annotations

import anyio
from callers import as_token, list_and_call
from mcp import Client
from mcp.server.auth.middleware.auth_context import auth_context_var
from mcp.types import CallToolResult, TextContent

from mcpgen import identity
from mcpgen.answer.results import DataToolOutput
from mcpgen.serve.registry import Registry
from mcpgen.serve.server import ToolServer


def test_a_tool_is_hidden_and_unknown_without_its_scope(orders_project):
    server = ToolServer(orders_project.registry)
    token = as_token(["mcp:read"], {"email": "alice@example.com"})
    try:
        names, answer = anyio.run(list_and_call, server, "revenue")
        _, unknown = anyio.run(list_and_call, server, "no_such_tool")
    finally:
        auth_context_var.reset(token)
    assert names == ["my_orders"]
    assert answer == unknown.replace("no_such_tool", "revenue")  # the same error as an unknown tool
    token = as_token(["admin"])  # any of [reports, admin]
    try:
        names, answer = anyio.run(list_and_call, server, "revenue")
    finally:
        auth_context_var.reset(token)
    assert names == ["my_orders", "revenue"] and answer.content[0].text == "35.0"


def test_an_app_of_hidden_tools_is_hidden_too(orders_project):
    """revenue's own app settings give it its own ui:// resource, named after it."""
    server = ToolServer(orders_project.registry)

    async def resources():
        async with Client(server.server) as client:
            uris = sorted(str(r.uri) for r in (await client.list_resources()).resources)
            own = next(u for u in map(str, orders_project.registry.apps) if u.endswith("/revenue"))
            try:
                await client.read_resource(own)
                return uris, None
            except Exception as exc:
                return uris, str(exc)

    token = as_token(["mcp:read"])
    try:
        uris, refused = anyio.run(resources)
    finally:
        auth_context_var.reset(token)
    assert not any(u.endswith("/revenue") for u in uris) and len(uris) == 1
    assert "Unknown resource" in refused
    token = as_token(["reports"])
    try:
        uris, _ = anyio.run(resources)
    finally:
        auth_context_var.reset(token)
    assert any(u.endswith("/revenue") for u in uris) and len(uris) == 2


def test_claims_choose_the_rows(orders_project):
    server = ToolServer(orders_project.registry)
    expected = {"alice@example.com": [[1, 10.0], [2, 20.0]], "bob@example.com": [[3, 5.0]]}  # the init's rows
    for email, rows in expected.items():
        token = as_token([], {"email": email})
        try:
            _, result = anyio.run(list_and_call, server, "my_orders")
        finally:
            auth_context_var.reset(token)
        assert result.structured_content["table"][1:] == rows


def test_hand_written_tools_take_scopes_and_see_the_caller():
    registry = Registry()

    @registry.tool(scopes=["reports"], tags=["finance"])
    def whoami() -> DataToolOutput:
        """Who is calling."""
        caller = identity.current()
        return CallToolResult(
            content=[TextContent(type="text", text=f"{caller.subject} via {caller.client_id}")],
            structured_content={"sources": ["https://example.org/"]},
        )

    server = ToolServer(registry)
    token = as_token(["reports"])
    try:
        names, result = anyio.run(list_and_call, server, "whoami")
    finally:
        auth_context_var.reset(token)
    assert names == ["whoami"] and result.content[0].text == "alice via web"
    assert registry.get("whoami").tags == {"finance"}
    token = as_token([])
    try:
        names, _ = anyio.run(list_and_call, server, "whoami")
    finally:
        auth_context_var.reset(token)
    assert names == []


def test_a_shared_token_never_sees_a_tool_with_scopes_of_its_own(orders_project):
    """A shared static token carries the server-wide auth.scopes to pass the server's gate; even when
    they would satisfy a tool's `scopes:`, the tool stays hidden (docs/auth.md): a shared token has no
    identity to grant a tool to."""
    from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser

    from mcpgen.http.app import SharedToken, StaticTokenVerifier

    verified = anyio.run(StaticTokenVerifier(["t0ken"], ["reports"]).verify_token, "t0ken")
    assert isinstance(verified, SharedToken) and verified.scopes == ["reports"]
    server = ToolServer(orders_project.registry)
    for scopes in (["reports"], ["admin", "mcp:read"], ["reports", "admin"]):
        shared = SharedToken(token="", client_id="token-1", scopes=scopes)
        token = auth_context_var.set(AuthenticatedUser(shared))
        try:
            names, answer = anyio.run(list_and_call, server, "revenue")
            _, unknown = anyio.run(list_and_call, server, "no_such_tool")
        finally:
            auth_context_var.reset(token)
        assert "revenue" not in names, scopes
        assert answer == unknown.replace("no_such_tool", "revenue")
    token = as_token(["reports"])  # the same scopes on a token with an identity: listed
    try:
        names, _ = anyio.run(list_and_call, server, "revenue")
    finally:
        auth_context_var.reset(token)
    assert "revenue" in names
