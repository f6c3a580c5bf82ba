#!/usr/bin/env python3
"""Paired HTTP benchmark: `mcpgen serve --http` against the same tool on the SDK's own HTTP app.

Starts both servers on 127.0.0.1 (free ports): mcpgen with bench/project/specs, and
bench/handwritten_server.py (`MCPServer.streamable_http_app`, stateless, JSON responses,
on uvicorn). Then, for each client count:

- 1 client: one official `mcp` client holds a session to each server and alternates calls
  (A, B, then B, A), so both see the same machine noise at the same moment;
- C clients: C concurrent clients load one server for a short block, then the other, the
  order flipped every block, several blocks each.

Prints p50/p95 per server and the mcpgen/hand-written p50 ratio for each client count.

    python bench/bench_http.py                         # 1, 10 and 50 clients
    python bench/bench_http.py --clients 1 10 --calls 600 --args '{"n": 10}'
"""

from __future__ import annotations

import argparse
import json
import signal
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

HERE = Path(__file__).resolve().parent
REPO = HERE.parent


def pct(values: list[float], p: float) -> float:
    s = sorted(values)
    return s[max(0, min(len(s) - 1, round(p / 100 * len(s) + 0.5) - 1))]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(cmd: list[str], port: int) -> subprocess.Popen:
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=REPO)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"{cmd[1]} exited with status {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return proc
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit(f"{cmd[1]} did not listen within 30 s")


def stop(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()


def client(url: str) -> Client:
    return Client(streamable_http_client(url, http_client=httpx2.AsyncClient(timeout=60)))


async def call(session: Client, tool: str, args: dict, into: list[float]) -> None:
    start = time.perf_counter()
    result = await session.call_tool(tool, args)
    into.append((time.perf_counter() - start) * 1000)
    if result.is_error:
        raise SystemExit(f"the call failed: {result.content[0].text}")


async def one_client(urls: dict[str, str], tool: str, args: dict, calls: int, warmup: int) -> dict[str, list[float]]:
    """One client, a session to each server, calls alternated A,B / B,A."""
    lat: dict[str, list[float]] = {name: [] for name in urls}
    async with client(urls["mcpgen"]) as a, client(urls["handwritten"]) as b:
        sessions = {"mcpgen": a, "handwritten": b}
        for i in range(warmup + calls):
            order = list(sessions) if i % 2 == 0 else list(reversed(sessions))
            for name in order:
                await call(sessions[name], tool, args, lat[name] if i >= warmup else [])
    return lat


async def many_clients(
    urls: dict[str, str], tool: str, args: dict, clients: int, calls: int, blocks: int
) -> dict[str, list[float]]:
    """`clients` concurrent clients on one server at a time, in alternating blocks."""
    lat: dict[str, list[float]] = {name: [] for name in urls}
    per_block = max(clients, calls // blocks)
    for block in range(blocks + 1):  # block 0 on each server is the warm-up
        for name in list(urls) if block % 2 == 0 else list(reversed(urls)):
            left = [per_block]
            into = lat[name] if block else []

            async def worker(name=name, left=left, into=into) -> None:
                async with client(urls[name]) as session:
                    while left[0] > 0:
                        left[0] -= 1
                        await call(session, tool, args, into)

            async with anyio.create_task_group() as tg:
                for _ in range(clients):
                    tg.start_soon(worker)
    return lat


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clients", type=int, nargs="+", default=[1, 10, 50])
    ap.add_argument("--calls", type=int, default=1000, help="calls per server per client count")
    ap.add_argument("--blocks", type=int, default=6, help="alternating blocks per server (C > 1)")
    ap.add_argument("--args", default='{"n": 10}', help="top_cities arguments, JSON")
    ap.add_argument("--json", action="store_true", help="one JSON line per client count")
    opts = ap.parse_args()
    args = json.loads(opts.args)
    ports = {"mcpgen": free_port(), "handwritten": free_port()}
    commands = {
        "mcpgen": [sys.executable, "-m", "mcpgen.cli", "serve", str(HERE / "project/specs")],
        "handwritten": [sys.executable, str(HERE / "handwritten_server.py"), str(REPO / "examples/data/cities.csv")],
    }
    commands["mcpgen"] += ["--http", "--port", str(ports["mcpgen"])]
    commands["handwritten"] += ["--http", str(ports["handwritten"])]
    procs = {name: start(cmd, ports[name]) for name, cmd in commands.items()}
    urls = {name: f"http://127.0.0.1:{port}/mcp" for name, port in ports.items()}
    try:
        for clients in opts.clients:
            if clients == 1:
                lat = anyio.run(one_client, urls, "top_cities", args, opts.calls, 20)
            else:
                lat = anyio.run(many_clients, urls, "top_cities", args, clients, opts.calls, opts.blocks)
            row = {"clients": clients, "calls": len(lat["mcpgen"])}
            for name, values in lat.items():
                row[f"{name}_p50_ms"] = round(statistics.median(values), 2)
                row[f"{name}_p95_ms"] = round(pct(values, 95), 2)
            row["ratio_p50"] = round(row["mcpgen_p50_ms"] / row["handwritten_p50_ms"], 3)
            if opts.json:
                print(json.dumps(row), flush=True)
            else:
                print(
                    f"{clients:3d} clients: mcpgen p50 {row['mcpgen_p50_ms']:7.2f} ms p95 {row['mcpgen_p95_ms']:7.2f}"
                    f" | hand-written p50 {row['handwritten_p50_ms']:7.2f} ms p95 {row['handwritten_p95_ms']:7.2f}"
                    f" | p50 ratio {row['ratio_p50']:.3f}",
                    flush=True,
                )
    finally:
        for proc in procs.values():
            stop(proc)


if __name__ == "__main__":
    main()
