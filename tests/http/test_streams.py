"""Which requests `serve --http` may answer with an event stream (mcpgen.http.streams): only a
2026-07-28 POST that asks for progress and accepts one; the rest go to the SDK's plain JSON entry
untouched, body included. End to end (progress and cancellation over HTTP): tests/e2e/test_long_work.py."""

import anyio
import pytest

from mcpgen.http import streams


class Manager:
    """What ProgressStreams reads of the SDK's session manager."""

    def __init__(self):
        self.seen = []
        self.asgi_app = self  # the body cap, whose `app` is the request entry
        self.security_settings, self._lifespan_state = None, None

        async def plain(scope, receive, send):
            self.seen.append(("json", await whole(receive)))

        self.app = plain


async def whole(receive) -> bytes:
    body, more = b"", True
    while more:
        message = await receive()
        body, more = body + message["body"], message.get("more_body", False)
    return body


def request(version, accept, body):
    scope = {"type": "http", "method": "POST", "headers": [(b"accept", accept)]}
    if version:
        scope["headers"].append((b"mcp-protocol-version", version))
    chunks = [{"type": "http.request", "body": body[:5], "more_body": True}, {"type": "http.request", "body": body[5:]}]

    async def receive():
        return chunks.pop(0) if chunks else {"type": "http.disconnect"}

    return scope, receive


@pytest.mark.parametrize(
    ("version", "accept", "body", "streamed"),
    [
        (b"2026-07-28", b"application/json, text/event-stream", b'{"_meta": {"progressToken": 1}}', True),
        (b"2026-07-28", b"application/json, text/event-stream", b'{"_meta": {}}', False),
        (b"2026-07-28", b"application/json", b'{"_meta": {"progressToken": 1}}', False),
        (b"2025-11-25", b"application/json, text/event-stream", b'{"_meta": {"progressToken": 1}}', False),
        (None, b"*/*", b'{"_meta": {"progressToken": 1}}', False),
    ],
)
def test_only_a_2026_call_asking_for_progress_may_stream(monkeypatch, version, accept, body, streamed):
    manager = Manager()
    entry = streams.ProgressStreams.__new__(streams.ProgressStreams)
    entry.manager, entry.plain = manager, manager.app

    async def modern(app, security, json_response, state, scope, receive, send):
        manager.seen.append(("stream" if not json_response else "json", await whole(receive)))

    monkeypatch.setattr(streams, "handle_modern_request", modern)
    scope, receive = request(version, accept, body)
    anyio.run(entry, scope, receive, None)
    assert manager.seen == [("stream" if streamed else "json", body)]  # the body reaches either side whole


def test_it_sits_behind_the_sdks_body_cap():
    manager = Manager()
    plain = manager.app
    entry = streams.ProgressStreams(manager)
    assert manager.asgi_app.app is entry and entry.plain is plain
