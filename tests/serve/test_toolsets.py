"""Toolsets and `--tags`: a server that serves only the tools with one of the chosen tags."""

from __future__ import annotations

import anyio
from callers import as_token, list_and_call
from mcp.server.auth.middleware.auth_context import auth_context_var

from mcpgen.serve.server import ToolServer


def test_toolset_serves_tagged_tools_only(orders_project):
    server = ToolServer(orders_project.registry, tags=frozenset(orders_project.loaded.config.toolsets["sales_only"]))
    token = as_token(["reports"], {"email": "bob@example.com"})
    try:
        names, answer = anyio.run(list_and_call, server, "revenue")
    finally:
        auth_context_var.reset(token)
    assert names == ["my_orders"] and "Unknown tool" in answer
