"""The listening socket `serve --http` binds: accepted connections must send without delay."""

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
