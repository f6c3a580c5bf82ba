#!/usr/bin/env python3
"""HTTP load: N calls from C concurrent MCP clients against `mcpgen serve --http`, loopback only.

Starts its own server process on 127.0.0.1 (a free port, a random bearer token) for
the shipped specs, then runs C official `mcp` clients (`Client` over streamable
HTTP), each calling tools one after another, until N calls are done or the time
limit passes. Stops by itself and stops the server.

Prints: the error count (must be 0), p50/p95/p99 latency, calls per second, and
the server's RSS after the first `--warmup` calls (default 1,000) and after the run.
Exit status 1 if any call failed or (from a warm-up of 1,000 calls on) the RSS grew by more than 10%.

    python bench/bench_http_load.py                       # 10,000 calls, 50 clients
    python bench/bench_http_load.py --calls 300 --json    # the short version the tests run
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import signal
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

import anyio
import httpx2
import psutil
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

REPO = Path(__file__).resolve().parent.parent

# A mix over the shipped tools, every one with valid arguments.
CALLS = [
    ("top_cities", {"top_n": 5}),
    ("top_cities", {"top_n": 3, "country": "JP"}),
    ("country_profile", {"country": "FR"}),
    ("wealth_vs_health", {"year": 2007, "continent": "Europe"}),
    ("continent_population", {}),
    ("busiest_routes", {"origin": "JFK", "top_n": 5}),
    ("airline_lookup", {"query": "delta"}),
    ("life_expectancy_trend", {"from_year": 1982}),
    ("daily_traffic", {"month": 7, "origin": "LGA"}),
    ("late_departures", {"since": "2013-07-04T17:00:00", "until": "2013-07-04T19:00:00"}),
    ("carrier_performance", {"start": "2013-06-01", "end": "2013-06-07"}),
]


def pct(values: list[float], p: float) -> float:
    s = sorted(values)
    return s[max(0, min(len(s) - 1, round(p / 100 * len(s) + 0.5) - 1))]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(specs: Path, port: int, token: str) -> subprocess.Popen:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mcpgen.cli",
            "serve",
            str(specs),
            "--http",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--auth-token-env",
            "MCPGEN_BENCH_TOKEN",
        ],
        env={**os.environ, "MCPGEN_BENCH_TOKEN": token},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the server exited with status {proc.returncode}")
        try:
            if httpx2.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                return proc
        except httpx2.TransportError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit("the server did not become healthy in 30 s")


async def in_a_session(url: str, token: str, body, done) -> str | None:
    """Run `body(client)` in an MCP session, opening it again (as a client would) when its replica
    died; a call that fails inside the session is the body's to count. Returns why, when three
    sessions failed before `done()`."""
    for _ in range(3):
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60)
        try:
            async with Client(streamable_http_client(url, http_client=http)) as client:
                await body(client)
            return None
        except Exception as exc:
            if done():
                return None  # every call was made; only the session's closing failed
            failure = f"its session failed three times: {type(exc).__name__}: {exc}"
    return failure


def _claim(state: dict, calls: int) -> int | None:
    """The next call to make: one to make again first, else the next of `calls`, else None."""
    if state["again"]:
        return state["again"].pop()
    n = state["next"]
    if n >= calls:
        return None
    state["next"] = n + 1
    return n


async def run_load(url: str, token: str, calls: int, clients: int, seconds: float, warmup: int, server_pid: int):
    """The load; returns latencies, errors, wall time, RSS after warm-up and at the end, and how many
    calls were made again because their session's connection broke while they were in flight (a
    read-only, idempotent call is safe to make again, as a client does)."""
    latencies: list[float] = []
    errors: list[str] = []
    state = {"next": 0, "rss_warm": None, "again": [], "made_again": 0}
    server = psutil.Process(server_pid)
    deadline = time.monotonic() + seconds

    async def calls_in_turn(client: Client, inflight: list[int]) -> None:
        while time.monotonic() < deadline and (n := _claim(state, calls)) is not None:
            inflight.append(n)
            tool, arguments = CALLS[n % len(CALLS)]
            start = time.perf_counter()
            try:
                result = await client.call_tool(tool, arguments)
                if result.is_error:
                    errors.append(f"{tool}: {result.content[0].text}")
            except Exception as exc:  # a transport or protocol failure counts as an error
                errors.append(f"{tool}: {type(exc).__name__}: {exc}")
            inflight.remove(n)
            latencies.append(time.perf_counter() - start)
            if len(latencies) == warmup:
                state["rss_warm"] = server.memory_info().rss

    async def one_client(index: int) -> None:
        inflight: list[int] = []  # a call cut off with its session (cancelled, not failed) is made again

        async def body(client: Client) -> None:
            state["again"] += inflight
            state["made_again"] += len(inflight)
            inflight.clear()
            await calls_in_turn(client, inflight)

        failure = await in_a_session(url, token, body, lambda: state["next"] >= calls and not inflight)
        if failure or inflight:
            errors.append(f"client {index}: {failure or 'a call was lost with its session'}")

    started = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for i in range(clients):
            tg.start_soon(one_client, i)
    wall = time.perf_counter() - started
    return latencies, errors, wall, state["rss_warm"], server.memory_info().rss, state["made_again"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=10_000)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=600, help="stop after this long whatever the count")
    parser.add_argument(
        "--warmup",
        type=int,
        help="RSS is first read after this many calls (default: 1,000, or a third of --calls when fewer)",
    )
    parser.add_argument("--specs", type=Path, default=REPO / "specs")
    parser.add_argument("--json", action="store_true", help="print one JSON line instead of text")
    args = parser.parse_args()
    calls = max(1, min(args.calls, 1_000_000))
    clients = max(1, min(args.clients, 500))
    warmup = args.warmup or min(1000, max(1, calls // 3))

    token = secrets.token_urlsafe(32)
    port = free_port()
    proc = start_server(args.specs.resolve(), port, token)
    try:
        latencies, errors, wall, rss_warm, rss_end, _ = anyio.run(
            run_load, f"http://127.0.0.1:{port}/mcp", token, calls, clients, args.seconds, warmup, proc.pid
        )
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
    done = len(latencies)
    growth = (rss_end - rss_warm) / rss_warm if rss_warm else 0.0
    report = {
        "calls": done,
        "clients": clients,
        "errors": len(errors),
        "wall_s": round(wall, 2),
        "calls_per_s": round(done / wall, 1) if wall else 0.0,
        "p50_ms": round(pct(latencies, 50) * 1000, 2),
        "p95_ms": round(pct(latencies, 95) * 1000, 2),
        "p99_ms": round(pct(latencies, 99) * 1000, 2),
        "max_ms": round(max(latencies) * 1000, 2),
        "mean_ms": round(statistics.fmean(latencies) * 1000, 2),
        "rss_after_warmup_mb": round((rss_warm or 0) / 2**20, 1),
        "rss_after_run_mb": round(rss_end / 2**20, 1),
        "rss_growth_pct": round(growth * 100, 1),
        "warmup_calls": warmup,
    }
    # Memory is compared only from a steady state: short runs (warm-up under 1,000 calls) skip that check.
    memory_checked = warmup >= 1000
    report["memory_check"] = ("passed" if growth <= 0.10 else "FAILED") if memory_checked else "skipped"
    ok = not errors and done == calls and (growth <= 0.10 or not memory_checked)
    if args.json:
        print(json.dumps(report))
    else:
        print(
            f"calls: {done} of {calls} from {clients} clients in {report['wall_s']} s ({report['calls_per_s']} calls/s)"
        )
        print(f"errors: {len(errors)}" + (" (zero-error check passed)" if not errors else ""))
        print(
            f"latency ms: p50 {report['p50_ms']}  p95 {report['p95_ms']}  p99 {report['p99_ms']}  "
            f"max {report['max_ms']}"
        )
        print(
            f"server RSS: {report['rss_after_warmup_mb']} MiB after {warmup} calls, "
            f"{report['rss_after_run_mb']} MiB after the run ({report['rss_growth_pct']:+}%, limit +10%: "
            f"{report['memory_check']})"
        )
    for message in errors[:5]:
        print(f"error: {message}", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
