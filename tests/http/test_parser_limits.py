"""The limits `serve --http` keeps on the httptools protocol, where llhttp does less than h11 did: a head of
at most 16 KiB, exactly one Host header, and the header, body and keep-alive deadlines, each driven over a raw
socket against uvicorn with mcpgen's protocol class in this process (a trivial app behind it)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import uvicorn

from mcpgen.http.app import _listen
from mcpgen.http.connections import MAX_HEAD, ConnectionLimits, protocol_class


async def _app(scope, receive, send) -> None:
    if scope["type"] != "http":
        return
    size, more = 0, True
    while more:
        message = await receive()
        size += len(message.get("body", b""))
        more = message.get("more_body", False)
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
    await send({"type": "http.response.body", "body": b"ok"})


@contextmanager
def _serving(**limits) -> Iterator[int]:
    config = uvicorn.Config(_app, http=protocol_class(ConnectionLimits(**limits)), log_config=None, lifespan="off")
    server = uvicorn.Server(config)
    sock = _listen("127.0.0.1", 0)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    assert server.started
    try:
        yield sock.getsockname()[1]
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


def _connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=5)


def _answer(s: socket.socket, seconds: float = 5) -> bytes:
    """Everything the server sends until it closes the connection (or `seconds` pass)."""
    s.settimeout(seconds)
    out = b""
    try:
        while chunk := s.recv(65536):
            out += chunk
    except (TimeoutError, ConnectionResetError):
        pass
    return out


def _get(host: bytes = b"Host: a\r\n", extra: bytes = b"") -> bytes:
    return b"GET / HTTP/1.1\r\n" + host + extra + b"Connection: close\r\n\r\n"


def test_a_head_within_the_limit_is_answered():
    with _serving() as port, _connect(port) as s:
        s.sendall(_get(extra=b"X-Big: " + b"a" * (MAX_HEAD - 200) + b"\r\n"))
        assert _answer(s).startswith(b"HTTP/1.1 200")


@pytest.mark.parametrize(
    "extra",
    [
        b"X-Big: " + b"a" * (4 * MAX_HEAD) + b"\r\n",  # one header
        b"X-A: b\r\n" * (MAX_HEAD // 4),  # many small ones
    ],
    ids=["one-header", "many-headers"],
)
def test_a_head_over_the_limit_is_431_and_closed(extra):
    with _serving() as port, _connect(port) as s:
        try:
            s.sendall(_get(extra=extra))
        except (BrokenPipeError, ConnectionResetError):
            pass  # closed while we were still sending: the answer may be lost with it
        answer = _answer(s)
        assert answer == b"" or answer.startswith(b"HTTP/1.1 431"), answer[:80]


def test_a_head_sent_in_small_pieces_is_counted_whole():
    with _serving() as port, _connect(port) as s:
        s.sendall(b"GET / HTTP/1.1\r\nHost: a\r\n")
        sent, closed = 0, False
        while sent < 4 * MAX_HEAD and not closed:
            try:
                s.sendall(b"X-A: b\r\n" * 64)
            except (BrokenPipeError, ConnectionResetError):
                closed = True
            sent += 8 * 64
            time.sleep(0.001)
        assert _answer(s).startswith(b"HTTP/1.1 431") or closed


@pytest.mark.parametrize(
    "head",
    [_get(host=b""), _get(host=b"Host: a\r\nHost: b\r\n")],
    ids=["no-host", "two-hosts"],
)
def test_an_http11_request_needs_exactly_one_host(head):
    with _serving() as port, _connect(port) as s:
        s.sendall(head)
        assert _answer(s).startswith(b"HTTP/1.1 400")


def test_http10_without_host_is_answered():
    with _serving() as port, _connect(port) as s:
        s.sendall(b"GET / HTTP/1.0\r\n\r\n")
        assert _answer(s).startswith(b"HTTP/1.1 200")


@pytest.mark.parametrize(
    "sent, told",
    [
        (b"", b"HTTP/1.1 408"),  # connected, nothing sent
        (b"POST / HTTP/1.1\r\nHost: a\r\nX-Slow: ", b"HTTP/1.1 408"),  # half a head
        (b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 100\r\n\r\n{", b""),  # half a body: closed
    ],
    ids=["nothing", "half-head", "half-body"],
)
def test_a_request_still_arriving_at_its_deadline_is_cut_off(sent, told):
    with _serving(header_timeout=0.5, body_timeout=0.5) as port, _connect(port) as s:
        s.sendall(sent)
        start = time.monotonic()
        answer = _answer(s, seconds=5)
        assert 0.3 < time.monotonic() - start < 4
        assert answer.startswith(told) and (told or not answer), answer


def test_a_kept_alive_connection_with_half_the_next_request_is_cut_off():
    with _serving(header_timeout=0.5) as port, _connect(port) as s:
        s.sendall(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n")
        s.settimeout(5)
        first = b""
        while not first.endswith(b"ok"):
            first += s.recv(65536)
        assert first.startswith(b"HTTP/1.1 200")
        s.sendall(b"GET / HTTP/1.1\r\nHo")
        start = time.monotonic()
        assert _answer(s).startswith(b"HTTP/1.1 408")
        assert time.monotonic() - start < 4  # the header deadline, not uvicorn's 5 s keep-alive


def test_past_max_connections_the_oldest_half_sent_request_makes_room():
    with _serving(max_connections=4, header_timeout=30) as port:
        half = [_connect(port) for _ in range(4)]
        for s in half:
            s.sendall(b"GET / HTTP/1.1\r\nHost: a\r\nX-Slow: ")
        time.sleep(0.3)
        with _connect(port) as new:
            new.sendall(_get())
            assert _answer(new).startswith(b"HTTP/1.1 200")
        assert _answer(half[0], seconds=2).startswith(b"HTTP/1.1 408")  # the oldest went first
        for s in half:
            s.close()


# One write per response ---------------------------------------------------------------------------


class _Recorded:
    """A transport that keeps every write (no socket)."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.closed = False

    def write(self, data) -> None:
        self.writes.append(bytes(data))

    def get_extra_info(self, name, default=None):
        return {"sockname": ("127.0.0.1", 8000), "peername": ("127.0.0.1", 50000)}.get(name, default)

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


def _writes(app, request: bytes, responses: int = 1) -> list[bytes]:
    """What mcpgen's protocol writes for `request` (one or more pipelined requests), with `app` behind it."""
    import asyncio

    from uvicorn.server import ServerState

    async def main() -> list[bytes]:
        cls = protocol_class(ConnectionLimits())
        config = uvicorn.Config(app, http=cls, log_config=None, lifespan="off")
        config.load()
        protocol = cls(config=config, server_state=ServerState(), app_state={}, _loop=asyncio.get_running_loop())
        transport = _Recorded()
        protocol.connection_made(transport)  # type: ignore[arg-type]
        protocol.data_received(request)
        async with asyncio.timeout(5):
            while sum(w.startswith(b"HTTP/1.1") for w in transport.writes) < responses or protocol.tasks:
                await asyncio.sleep(0.01)
        protocol.connection_lost(None)
        return transport.writes

    return asyncio.run(main())


def _streaming(parts: list[bytes]):
    async def app(scope, receive, send) -> None:
        await receive()
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
        for i, part in enumerate(parts):
            await send({"type": "http.response.body", "body": part, "more_body": i < len(parts) - 1})

    return app


def test_an_answer_in_one_body_message_is_one_write():
    writes = _writes(_app, b"GET / HTTP/1.1\r\nHost: a\r\n\r\n")
    assert len(writes) == 1 and writes[0].startswith(b"HTTP/1.1 200") and writes[0].endswith(b"\r\n\r\nok")


def test_pipelined_answers_are_one_write_each_in_order():
    writes = _writes(_app, b"GET /1 HTTP/1.1\r\nHost: a\r\n\r\nGET /2 HTTP/1.1\r\nHost: a\r\n\r\n", responses=2)
    assert len(writes) == 2 and all(w.startswith(b"HTTP/1.1 200") and w.endswith(b"ok") for w in writes)


def test_a_head_request_still_gets_its_head():
    writes = _writes(_app, b"HEAD / HTTP/1.1\r\nHost: a\r\n\r\n")
    assert len(writes) == 1 and writes[0].startswith(b"HTTP/1.1 200") and writes[0].endswith(b"\r\n\r\n")


def test_a_streamed_answer_sends_its_head_at_once():
    # an event stream's head must not wait for its first event
    writes = _writes(_streaming([b"one", b"two"]), b"GET / HTTP/1.1\r\nHost: a\r\n\r\n")
    assert writes[0].startswith(b"HTTP/1.1 200") and writes[0].endswith(b"\r\n\r\n")
    assert b"".join(writes[1:]) == b"3\r\none\r\n3\r\ntwo\r\n0\r\n\r\n"
