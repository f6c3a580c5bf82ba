"""The listening socket `serve --http` binds (accepted connections must send without delay), and the
connections it keeps: a client that stops reading its responses is cut off, and one caller never
holds every connection."""

from __future__ import annotations

import asyncio
import socket

import pytest

from mcpgen.http.app import _listen
from mcpgen.http.options import HTTPSetupError


async def _accepted_nodelay(sock: socket.socket) -> int:
    """Serve `sock` the way uvicorn does (loop.create_server), connect once, read TCP_NODELAY there."""
    accepted: asyncio.Future = asyncio.get_running_loop().create_future()

    class Record(asyncio.Protocol):
        def connection_made(self, transport):
            option = transport.get_extra_info("socket").getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
            accepted.set_result(option)
            transport.close()

    server = await asyncio.get_running_loop().create_server(Record, sock=sock)
    async with server:
        host, port = sock.getsockname()[:2]
        _, writer = await asyncio.open_connection(host, port)
        try:
            return await asyncio.wait_for(accepted, 10)
        finally:
            writer.close()


def test_accepted_connections_have_tcp_nodelay():
    # Without it each response waits for the client's delayed ACK: ~40 ms a call on loopback.
    sock = _listen("127.0.0.1", 0)
    assert asyncio.run(_accepted_nodelay(sock)) != 0


def test_accepted_ipv6_connections_have_tcp_nodelay():
    try:
        sock = _listen("::1", 0)
    except HTTPSetupError:
        pytest.skip("this machine has no IPv6 loopback")
    assert asyncio.run(_accepted_nodelay(sock)) != 0


def test_a_taken_port_is_one_sentence():
    first = _listen("127.0.0.1", 0)
    try:
        with pytest.raises(HTTPSetupError, match=r"cannot listen on 127\.0\.0\.1:\d+"):
            _listen("127.0.0.1", first.getsockname()[1])
    finally:
        first.close()


def _pipelined(port: int, token: str, count: int) -> bytes:
    body = b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}'
    head = (
        f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
        f"Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2025-06-18\r\n"
        f"Authorization: Bearer {token}\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode()
    return (head + body) * count


def _tcp_state(sock: socket.socket) -> int:
    return sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 1)[0]  # 1 established, 7 closed (reset)


@pytest.mark.slow
def test_clients_that_stop_reading_are_cut_off_and_never_lock_another_caller_out():
    """Alice opens every connection the server allows and pipelines ~10 MB of tools/list answers on
    each without reading any; Bob is still answered at once, and Alice's connections are cut off
    once they have not read for --body-timeout seconds."""
    import time

    import httpx2
    from servers import ALICE, BOB, start_two_callers, stop

    proc, port = start_two_callers("--max-connections", "8", "--body-timeout", "2")
    socks = []
    try:
        for _ in range(8):
            s = socket.socket()
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before connecting: a small window
            s.connect(("127.0.0.1", port))
            s.sendall(_pipelined(port, ALICE, 600))
            socks.append(s)
        time.sleep(1)  # every connection busy writing what Alice does not read
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "top_cities", "arguments": {}}}
        headers = {
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
            "mcp-protocol-version": "2025-06-18",
            "authorization": f"Bearer {BOB}",
        }
        started = time.monotonic()
        bob = httpx2.post(f"http://127.0.0.1:{port}/mcp", json=call, headers=headers, timeout=5)
        assert bob.status_code == 200 and not bob.json()["result"]["isError"], bob.text
        assert time.monotonic() - started < 2
        # cut --body-timeout after each send buffer fills: a loaded machine is slow to fill it
        deadline = time.monotonic() + 40
        while time.monotonic() < deadline and any(_tcp_state(s) == 1 for s in socks):
            time.sleep(0.2)
        assert [_tcp_state(s) for s in socks].count(1) == 0  # every stalled connection was closed
    finally:
        for s in socks:
            s.close()
        stop(proc)
    assert proc.returncode == 0


@pytest.mark.parametrize(
    "forwarded",
    [
        [(b"x-forwarded-for", b"203.0.113.9")],
        [(b"x-forwarded-for", b"203.0.113.9, 198.51.100.2"), (b"x-forwarded-proto", b"https")],
        [(b"forwarded", b"for=203.0.113.9")],
    ],
)
def test_a_local_client_cannot_name_itself_another_caller(forwarded):
    """The per-caller cap counts a connection's own address: a client on loopback that sends proxy headers
    is still itself (uvicorn would otherwise trust them from 127.0.0.1 and count it as 203.0.113.9)."""
    from mcpgen.http.app import uvicorn_config
    from mcpgen.http.connections import caller_of
    from mcpgen.http.options import HTTPOptions

    seen = []

    async def app(scope, receive, send):
        seen.append((caller_of(scope), scope["scheme"]))

    config = uvicorn_config(app, HTTPOptions())
    config.load()
    scope = {"type": "http", "scheme": "http", "client": ("127.0.0.1", 50000), "headers": forwarded}
    asyncio.run(config.loaded_app(scope, None, None))
    assert seen == [("address 127.0.0.1", "http")]
