"""Progress over HTTP: a 2026-07-28 request that asks for progress (a `progressToken` in its `_meta`)
and accepts an event stream is answered by the SDK's event-stream path, which still answers plain
JSON unless the call sends a notification (or runs silent for 15 s, when a keep-alive starts); every
other request keeps the plain JSON answer. The stream lives inside the one POST, so any process can
answer it, as before; and closing it cancels the call (the query stops: mcpgen.engines.control).

The SDK chooses JSON or an event stream once per server (`json_response`); this picks per request, by
wrapping its session manager's request entry (behind its body cap), which is not public API (mcp 2.3, pinned in
pyproject.toml; tests/http/test_streams.py fails if it moves).
"""

from __future__ import annotations

from mcp.server._streamable_http_modern import handle_modern_request
from mcp.server.streamable_http import MCP_PROTOCOL_VERSION_HEADER
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

PROTOCOL_HEADER = MCP_PROTOCOL_VERSION_HEADER.lower().encode("ascii")
WANTS_PROGRESS = b'"progressToken"'


class ProgressStreams:
    """Installed on a StreamableHTTPSessionManager: its requests pass here first."""

    def __init__(self, manager):
        self.manager = manager
        limit = manager.asgi_app  # the SDK's body cap, in front of its own request entry
        self.plain, limit.app = limit.app, self

    async def __call__(self, scope, receive, send) -> None:
        headers = dict(scope.get("headers") or [])
        version = headers.get(PROTOCOL_HEADER, b"").decode("latin-1")
        accept = headers.get(b"accept", b"").lower()
        if scope.get("method") != "POST" or not version or version in HANDSHAKE_PROTOCOL_VERSIONS:
            return await self.plain(scope, receive, send)
        if b"text/event-stream" not in accept and b"*/*" not in accept:
            return await self.plain(scope, receive, send)
        body, replay = await _buffered(receive)
        if WANTS_PROGRESS not in body:
            return await self.plain(scope, replay, send)
        m = self.manager
        await handle_modern_request(m.app, m.security_settings, False, m._lifespan_state, scope, replay, send)


async def _buffered(receive):
    """The request's body (already capped by the body-size middleware), and a `receive` that gives it
    again, then waits on the real one (a disconnect)."""
    chunks, more = [], True
    while more:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunks.append(message.get("body", b""))
        more = message.get("more_body", False)
    body, given = b"".join(chunks), False

    async def replay():
        nonlocal given
        if not given:
            given = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return body, replay
