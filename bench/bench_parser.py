#!/usr/bin/env python3
"""Paired, in process: the CPU uvicorn's HTTP protocol spends on one MCP request, h11 against httptools.

Each side is a uvicorn protocol on a fake transport (no socket) and a minimal ASGI app that reads the
body and answers a 300-byte JSON body in one message; the request is what the official client sends
for a `tools/call`. Per round, each side parses N requests and writes N responses (A then B, then B
then A in the next round); the figure is the median over rounds of the CPU-time ratio, with its range.
Sides: uvicorn's `H11Protocol` (what `serve --http` used), uvicorn's `HttpToolsProtocol`, and
mcpgen's protocol (httptools with the connection limits, `mcpgen.http.connections`).

    python bench/bench_parser.py --rounds 7 --n 5000
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import time

import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.server import ServerState

from mcpgen.http.connections import ConnectionLimits, protocol_class

BODY = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": "top_cities", "arguments": {"country": "JP", "top_n": 10}},
    }
).encode()
REQUEST = (
    b"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:8000\r\naccept: application/json, text/event-stream\r\n"
    b"accept-encoding: gzip, deflate\r\nconnection: keep-alive\r\nuser-agent: python-httpx/2.16\r\n"
    b"content-type: application/json\r\nmcp-protocol-version: 2025-06-18\r\n"
    b"authorization: Bearer " + b"k" * 32 + b"\r\ncontent-length: %d\r\n\r\n" % len(BODY) + BODY
)
ANSWER = json.dumps({"jsonrpc": "2.0", "id": 7, "result": {"content": [{"type": "text", "text": "x" * 220}]}}).encode()


async def app(scope, receive, send) -> None:
    more = True
    while more:
        more = (await receive()).get("more_body", False)
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(ANSWER))]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": ANSWER})


class Transport(asyncio.Transport):
    """Counts what a protocol writes; never closes, never pushes back."""

    def __init__(self) -> None:
        super().__init__()
        self.writes = 0
        self.bytes = 0

    def write(self, data) -> None:
        self.writes += 1
        self.bytes += len(data)

    def get_extra_info(self, name, default=None):
        return {"sockname": ("127.0.0.1", 8000), "peername": ("127.0.0.1", 50000)}.get(name, default)

    def is_closing(self) -> bool:
        return False

    def close(self) -> None:
        pass

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


SIDES = {
    "h11": H11Protocol,
    "httptools": HttpToolsProtocol,
    "mcpgen": protocol_class(ConnectionLimits(max_connections=10**6)),
}


async def run(cls, n: int) -> tuple[float, Transport]:
    """CPU seconds for `n` requests on one kept-alive connection, each answered before the next."""
    config = uvicorn.Config(app, http=cls, log_config=None, access_log=False, lifespan="off")
    config.load()
    loop = asyncio.get_running_loop()
    protocol = cls(config=config, server_state=ServerState(), app_state={}, _loop=loop)
    transport = Transport()
    protocol.connection_made(transport)
    start = time.process_time()
    for _ in range(n):
        protocol.data_received(REQUEST)
        while not (protocol.cycle.response_complete):
            await asyncio.sleep(0)
    used = time.process_time() - start
    protocol.connection_lost(None)
    return used, transport


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--n", type=int, default=5000, help="requests per side per round")
    args = parser.parse_args()
    names = list(SIDES)
    cpu: dict[str, list[float]] = {name: [] for name in names}
    writes: dict[str, float] = {}
    for round_ in range(args.rounds + 1):  # round 0 warms up and is not counted
        order = names if round_ % 2 else names[::-1]
        for name in order:
            used, transport = asyncio.run(run(SIDES[name], args.n))
            if round_:
                cpu[name].append(used / args.n * 1e6)
                writes[name] = transport.writes / args.n
    load = os.getloadavg()[0]
    print(f"{args.rounds} rounds x {args.n} requests, load average {load:.1f}")
    print("| protocol | CPU per request (us), median [range] | writes per response | vs h11, paired |")
    print("|---|---|---|---|")
    for name in names:
        ratios = [a / b for a, b in zip(cpu[name], cpu["h11"])]
        print(
            f"| {name} | {statistics.median(cpu[name]):.1f} [{min(cpu[name]):.1f}-{max(cpu[name]):.1f}] "
            f"| {writes[name]:g} | {statistics.median(ratios):.2f} [{min(ratios):.2f}-{max(ratios):.2f}] |"
        )


if __name__ == "__main__":
    main()
