"""A project whose tools read the caller (a claim-bound parameter, a scope rule, a tag), and callers: an
access token set for the block, as the SDK's bearer middleware sets it over HTTP."""

from __future__ import annotations

from pathlib import Path

from mcp import Client
from mcp.server.auth.middleware.auth_context import auth_context_var
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken

PROJECT = {
    "mcpgen.yaml": """
connections:
  default:
    duckdb: ":memory:"
    init:
      - >-
        CREATE TABLE orders AS SELECT * FROM (VALUES
          ('alice@example.com', 1, 10.0), ('alice@example.com', 2, 20.0), ('bob@example.com', 3, 5.0)
        ) t(email, id, amount)
stdio_claims:
  email: bob@example.com
toolsets:
  sales_only: [sales]
""",
    "specs/my_orders.yaml": """
description: The caller's own orders.
tags: [sales]
parameters:
  email: {type: string, description: The caller's email, from_claim: email}
  min_amount: {type: number, description: Smallest amount, default: 0}
sql: SELECT id, amount FROM orders WHERE email = :email AND amount >= :min_amount ORDER BY id
sources: ["https://example.org/orders"]
content: "{{ row_count }} orders"
""",
    "specs/revenue.yaml": """
description: Revenue of all customers.
tags: [finance]
scopes: {any: [reports, admin]}
app: {theme: dark}
parameters:
  card: {type: string, description: A card number, sensitive: true, required: false}
sql: SELECT SUM(amount) AS total FROM orders
sources: ["https://example.org/revenue"]
content: "{{ rows[0].total }}"
""",
}


def write_project(root: Path) -> Path:
    """PROJECT's files under `root`; returns its specs folder."""
    for name, text in PROJECT.items():
        (root / name).parent.mkdir(exist_ok=True)
        (root / name).write_text(text)
    return root / "specs"


def as_token(scopes: list[str], claims: dict | None = None):
    access = AccessToken(token="", client_id="web", scopes=scopes, subject="alice", claims=claims or {})
    return auth_context_var.set(AuthenticatedUser(access))


async def list_and_call(server, name: str, arguments: dict | None = None):
    async with Client(server.server) as client:
        names = sorted(t.name for t in (await client.list_tools()).tools)
        try:
            result = await client.call_tool(name, arguments or {})
            return names, result
        except Exception as exc:  # the JSON-RPC error of an unknown tool
            return names, str(exc)
