#!/usr/bin/env python3
"""Paired HTTP benchmark: `mcpgen serve --http` against the same tool on the SDK's own HTTP app.

Starts both servers on 127.0.0.1 (free ports): mcpgen with bench/project/specs, and
bench/handwritten_server.py (`MCPServer.streamable_http_app`, stateless, JSON responses,
on uvicorn). Then, for each client count:

C concurrent official `mcp` clients (1, 10, 50), each holding a session to both servers and
alternating calls (A, B, then B, A), so both servers carry the same load under the same
machine noise at the same moment. Prints p50/p95 per server, their ratio, the median ratio
of neighbouring calls (the figure checked against the target), and each server's CPU time
per call.

    python bench/bench_http.py                         # 1, 10 and 50 clients
    python bench/bench_http.py --clients 1 10 --calls 600 --args '{"n": 10}'
    python bench/bench_http.py --baseline main   # this tree against mcpgen as of main, instead of the SDK's app
"""

from __future__ import annotations

import argparse
import contextlib
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
import psutil
from bench_core import bench_project, exported, serve_from  # bench/project with its data copied in
from bench_http_load import free_port, pct  # the same helpers as the load benchmark beside this file
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from results import add_write_docs

HERE = Path(__file__).resolve().parent
REPO = HERE.parent


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


def cpu_seconds(proc: subprocess.Popen) -> float:
    times = psutil.Process(proc.pid).cpu_times()
    return times.user + times.system


def client(url: str) -> Client:
    return Client(streamable_http_client(url, http_client=httpx2.AsyncClient(timeout=60)))


async def call(session: Client, tool: str, args: dict, into: list[float]) -> None:
    start = time.perf_counter()
    result = await session.call_tool(tool, args)
    into.append((time.perf_counter() - start) * 1000)
    if result.is_error:
        raise SystemExit(f"the call failed: {result.content[0].text}")


async def paired_clients(
    urls: dict[str, str], tool: str, args: dict, clients: int, calls: int, warmup: int
) -> tuple[dict[str, list[float]], list[float]]:
    """`clients` concurrent clients, each with a session to both servers, alternating calls
    (A, B, then B, A): both servers carry the same load under the same machine noise.
    Returns each server's latencies and the ratio of every neighbouring pair of calls."""
    lat: dict[str, list[float]] = {name: [] for name in urls}
    pairs: list[float] = []
    per_client = max(1, calls // clients)

    async def worker() -> None:
        async with client(urls["mcpgen"]) as a, client(urls["handwritten"]) as b:
            sessions = {"mcpgen": a, "handwritten": b}
            for i in range(warmup + per_client):
                pair: dict[str, list[float]] = {name: [] for name in sessions}
                for name in list(sessions) if i % 2 == 0 else list(reversed(sessions)):
                    await call(sessions[name], tool, args, pair[name])
                if i >= warmup:
                    for name in sessions:
                        lat[name] += pair[name]
                    pairs.append(pair["mcpgen"][0] / pair["handwritten"][0])

    async with anyio.create_task_group() as tg:
        for _ in range(clients):
            tg.start_soon(worker)
    return lat, pairs


def main() -> None:
    with bench_project() as project:
        run(project)


def run(project: Path) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clients", type=int, nargs="+", default=[1, 10, 50])
    ap.add_argument("--calls", type=int, default=1000, help="calls per server per client count")
    ap.add_argument("--args", default='{"n": 10}', help="top_cities arguments, JSON")
    ap.add_argument("--json", action="store_true", help="one JSON line per client count")
    ap.add_argument("--baseline", metavar="REV", help="the other side is mcpgen as of this git revision")
    ap.add_argument("--rounds", type=int, default=3, help="rounds; each runs every client count")
    add_write_docs(ap)
    opts = ap.parse_args()
    args = json.loads(opts.args)
    ports = {"mcpgen": free_port(), "handwritten": free_port()}
    commands = {
        "mcpgen": [sys.executable, "-m", "mcpgen.cli", "serve", str(project / "specs")],
        "handwritten": [sys.executable, str(HERE / "handwritten_server.py"), str(REPO / "examples/data/cities.csv")],
    }
    commands["mcpgen"] += ["--http", "--port", str(ports["mcpgen"])]
    commands["handwritten"] += ["--http", str(ports["handwritten"])]
    with contextlib.ExitStack() as stack:
        if opts.baseline:  # the "handwritten" side is then mcpgen as of that revision
            tree = stack.enter_context(exported(opts.baseline))
            commands["handwritten"] = [*serve_from(tree, project), "--http", "--port", str(ports["handwritten"])]
        measure(commands, ports, opts, args)


def measure(commands: dict[str, list[str]], ports: dict[str, int], opts, args: dict) -> None:
    procs = {name: start(cmd, ports[name]) for name, cmd in commands.items()}
    urls = {name: f"http://127.0.0.1:{port}/mcp" for name, port in ports.items()}
    rows: dict[int, list[dict]] = {clients: [] for clients in opts.clients}
    try:
        for _ in range(opts.rounds):
            for clients in opts.clients:
                rows[clients].append(one_count(procs, urls, clients, opts, args))
    finally:
        for proc in procs.values():
            stop(proc)
    if opts.write_docs:
        from results import publish

        figures = {"baseline": opts.baseline, "calls": opts.calls, "args": args, "clients": rows}
        publish(__file__, figures, opts.rounds, name=f"vs {opts.baseline}" if opts.baseline else None)


def one_count(procs: dict, urls: dict, clients: int, opts, args: dict) -> dict:
    """One round at one client count: the figures of both servers, printed and returned."""
    cpu_before = {name: cpu_seconds(proc) for name, proc in procs.items()}
    lat, pairs = anyio.run(paired_clients, urls, "top_cities", args, clients, opts.calls, 5)
    row = {"clients": clients, "calls": len(lat["mcpgen"]), "ratio_of_pairs": round(statistics.median(pairs), 3)}
    for name, proc in procs.items():  # server CPU per call: steadier than latency on a busy machine
        row[f"{name}_cpu_us_per_call"] = round((cpu_seconds(proc) - cpu_before[name]) / len(lat[name]) * 1e6)
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
            f" | p50 ratio {row['ratio_p50']:.3f}"
            + f" (median of paired calls {row['ratio_of_pairs']:.3f})"
            + f" | server CPU/call {row['mcpgen_cpu_us_per_call']} / {row['handwritten_cpu_us_per_call']} us",
            flush=True,
        )
    return row


TARGETS = {1: 1.00, 10: 1.00}  # paired ratio, by client count: the hand-written server's time or less


def render(figures: dict) -> str:
    """The table of one run (bench/results.py puts it into docs/benchmarks.md)."""
    from results import spread, table, verdict

    other = f"mcpgen {figures['baseline']}" if figures.get("baseline") else "hand-written"
    header = ["clients", "mcpgen p50, ms", f"{other} p50, ms", "**paired ratio**", "server CPU per call, us", "target"]
    rows = []
    for clients, runs in figures["clients"].items():
        paired = [r["ratio_of_pairs"] for r in runs]
        target = "" if figures.get("baseline") else verdict(statistics.median(paired), TARGETS.get(int(clients)))
        cpu = f"{spread((r['mcpgen_cpu_us_per_call'] for r in runs), 0)} / {spread((r['handwritten_cpu_us_per_call'] for r in runs), 0)}"
        cells = [spread(r["mcpgen_p50_ms"] for r in runs), spread(r["handwritten_p50_ms"] for r in runs)]
        rows.append([str(clients), *cells, spread(paired, 3, bold=True), cpu, target])
    return table(header, rows) + (
        f"\n{figures['calls']:,} calls per server per client count and round; paired ratio: the median of mcpgen's"
        " latency over the call made next to it by the same client, median [range] of the rounds.\n"
    )


if __name__ == "__main__":
    main()
