#!/usr/bin/env python3
"""Server (or client) instructions per call, counted by valgrind's callgrind: repeatable whatever the machine's load.

`mcpgen serve` of the bench project runs under callgrind over stdio with collection off; an official
client makes warm-up calls, switches collection on (`callgrind_control`), makes N calls of
`top_cities n=10`, and switches it off. What the server executed for those calls, over N, is its
instructions per call. Each side is measured so, the two side by side (two processes at once):

    python bench/bench_instructions.py                   # downloads on against off, this tree
    python bench/bench_instructions.py --baseline main   # downloads on: this tree against mcpgen at REV
    python bench/bench_instructions.py --download "{formats: [csv]}"   # one link per answer against none
    python bench/bench_instructions.py --client          # the official client's instructions instead
    python bench/bench_instructions.py --http --clients 10   # `serve --http` against the hand-written HTTP server
    python bench/bench_instructions.py --http --baseline main --keep out/  # ... against mcpgen at REV, files kept

Over HTTP (`--http`) each server listens on 127.0.0.1 under callgrind and C official clients call it at
once (the same C clients call both sides, each its own server); `--keep DIR` keeps the callgrind files
for `callgrind_annotate --inclusive=yes`.

With `--client` (stdio) the servers run natively and the client, this script again, runs under
callgrind: what the client spends on each answer (reading it, and the SDK's checks of each content item).

Needs valgrind. A latency ratio moves with the load of a shared machine; this count moves much less,
but not at all only for code that does not depend on time: the event loop and the threads that wait
(the call log's writer, deadlines) run more often when calls are slow, so the two sides run together,
and a difference of a few tenths of a percent is within what repeating a run moves.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import anyio
import httpx2
import psutil
from bench_core import bench_project, exported, serve_from
from bench_http_load import free_port
from bench_vs_handwritten import with_downloads
from mcp import Client, ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
TIMEOUT = 900  # seconds for any one step: a start-up under callgrind takes a minute or two


def serve_stdio(tree: Path, project: Path, *under: str) -> StdioServerParameters:
    """`mcpgen serve project` imported from `tree`, run by `under` (valgrind's command line) if given."""
    command = [*under, sys.executable, "-P", "-m", "mcpgen.cli", "serve", str(project / "specs")]
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONHASHSEED": "0"}
    return StdioServerParameters(command=command[0], args=command[1:], env=env, cwd=str(tree))


async def stdio_calls(params: StdioServerParameters, calls: int, switch) -> None:
    """Warm-up calls of `top_cities n=10`, then `calls` more with callgrind's collection switched on around them."""
    with open(os.devnull, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await asyncio.wait_for(session.initialize(), TIMEOUT)
            for _ in range(20):
                await asyncio.wait_for(session.call_tool("top_cities", {"n": 10}), TIMEOUT)
            switch("on")
            for _ in range(calls):
                result = await asyncio.wait_for(session.call_tool("top_cities", {"n": 10}), TIMEOUT)
                if result.is_error:
                    raise SystemExit(f"the call failed: {result.content[0].text}")
            switch("off")


async def count(tree: Path, project: Path, calls: int, out: Path) -> float:
    """Instructions per call of `mcpgen serve project` imported from `tree`, under callgrind."""
    params = serve_stdio(
        tree, project, "valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}"
    )

    def switch(state: str) -> None:
        (server,) = [c for c in psutil.Process().children() if f"--callgrind-out-file={out}" in c.cmdline()]
        control(server.pid, state)

    await stdio_calls(params, calls, switch)
    return totals(out) / calls


async def count_client(tree: Path, project: Path, calls: int, out: Path) -> float:
    """Instructions per call of the official client (this script with --client-of, under callgrind) calling a
    native `mcpgen serve project` imported from `tree`."""
    command = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}", sys.executable]
    command += [__file__, "--client-of", str(project), "--tree", str(tree), "--calls", str(calls)]
    await asyncio.to_thread(subprocess.run, command, check=True, capture_output=True, timeout=TIMEOUT)
    return totals(out) / calls


def totals(out: Path) -> int:
    return int(next(line for line in out.read_text().splitlines() if line.startswith("totals:")).split()[1])


async def count_http(command: list[str], env: dict, clients: int, calls: int, out: Path) -> float:
    """Instructions per call of the HTTP server `command` (which takes `--port N` last), under callgrind,
    with `clients` official clients calling at once."""
    port = free_port()
    cmd = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}", *command]
    proc = subprocess.Popen(
        [*cmd, str(port)], env={**os.environ, **env, "PYTHONHASHSEED": "0"}, cwd=REPO, stderr=subprocess.DEVNULL
    )
    try:
        await listening(proc, port)
        url = f"http://127.0.0.1:{port}/mcp"
        async with contextlib.AsyncExitStack() as stack:
            sessions = [
                await stack.enter_async_context(
                    Client(streamable_http_client(url, http_client=httpx2.AsyncClient(timeout=TIMEOUT)))
                )
                for _ in range(clients)
            ]

            async def each(calls_each: int) -> None:
                failed: list[str] = []  # one sentence per client that stopped, rather than a task group's traceback
                async with anyio.create_task_group() as tg:
                    for session in sessions:
                        tg.start_soon(calls_of, session, calls_each, failed)
                if failed:
                    raise SystemExit(f"{failed[0]} (server: {' '.join(command)} {port})")

            await each(20 // clients + 1)  # warm-up
            control(proc.pid, "on")
            await each(calls // clients)
            control(proc.pid, "off")
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
    return totals(out) / (calls // clients * clients)


async def calls_of(session: Client, calls: int, failed: list[str]) -> None:
    """`calls` calls in a row; the first failure (an error result, or an exception) goes to `failed`."""
    try:
        for _ in range(calls):
            result = await asyncio.wait_for(session.call_tool("top_cities", {"n": 10}), TIMEOUT)
            if result.is_error:
                failed.append(f"a call failed: {result.content[0].text}")
                return
    except Exception as exc:  # a timeout, a dropped connection: said in one line, the other clients go on
        failed.append(f"a call failed: {type(exc).__name__}: {exc}")


async def listening(proc: subprocess.Popen, port: int) -> None:
    """Wait (at most TIMEOUT seconds) until `proc` accepts connections on `port`."""
    with anyio.fail_after(TIMEOUT):
        while True:
            if proc.poll() is not None:
                raise SystemExit(f"the server under callgrind exited with status {proc.returncode}")
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
                return
            await anyio.sleep(0.5)


def control(pid: int, state: str) -> None:
    subprocess.run(["callgrind_control", "-i", state, str(pid)], check=True, capture_output=True, timeout=TIMEOUT)


async def both(sides: dict[str, tuple[Path, Path]], calls: int, tmp: Path, counter=count) -> dict[str, float]:
    names = list(sides)
    counted = await asyncio.gather(
        *(counter(tree, project, calls, tmp / f"callgrind.{i}") for i, (tree, project) in enumerate(sides.values()))
    )
    return dict(zip(names, counted))


async def both_http(sides: dict[str, tuple[list[str], dict]], clients: int, calls: int, out: Path) -> dict[str, float]:
    names = list(sides)
    counted = await asyncio.gather(
        *(
            count_http(cmd, env, clients, calls, out / f"callgrind.{name.split(',')[0].replace(' ', '-')}")
            for name, (cmd, env) in sides.items()
        )
    )
    return dict(zip(names, counted))


def http_sides(tree: Path | None, rev: str | None, project: Path) -> dict[str, tuple[list[str], dict]]:
    """This tree's `serve --http` and the hand-written HTTP server, or mcpgen as of `rev` (exported to `tree`)."""
    mcpgen = [*serve_from(REPO, project)[2:], "--http", "--port"]
    sides = {"this tree": (mcpgen, {"PYTHONPATH": str(REPO)})}
    if tree is None:
        hand = [sys.executable, str(HERE / "handwritten_server.py"), str(REPO / "examples/data/cities.csv"), "--http"]
        sides["hand-written"] = (hand, {})
    else:
        sides[rev or ""] = (mcpgen, {"PYTHONPATH": str(tree)})
    return sides


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=200, help="calls counted per side")
    ap.add_argument("--baseline", metavar="REV", help="downloads on, this tree against mcpgen as of REV")
    ap.add_argument("--http", action="store_true", help="serve --http against the hand-written HTTP server (or REV)")
    ap.add_argument("--clients", type=int, default=10, help="concurrent clients per server (--http)")
    ap.add_argument("--keep", type=Path, metavar="DIR", help="keep the callgrind files in DIR")
    ap.add_argument("--download", default="true", help="mcpgen.yaml's defaults.download on the 'on' side (YAML)")
    ap.add_argument("--client", action="store_true", help="count the client's instructions, not the server's")
    ap.add_argument("--client-of", type=Path, help=argparse.SUPPRESS)  # the client counted, of this project
    ap.add_argument("--tree", type=Path, help=argparse.SUPPRESS)  # ... whose server imports mcpgen from here
    opts = ap.parse_args()
    if opts.client_of:
        asyncio.run(
            stdio_calls(serve_stdio(opts.tree, opts.client_of), opts.calls, functools.partial(control, os.getpid()))
        )
        return
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed")
    with bench_project() as project, contextlib.ExitStack() as stack, tempfile.TemporaryDirectory() as tmp:
        out = opts.keep or Path(tmp)
        out.mkdir(parents=True, exist_ok=True)
        tree = stack.enter_context(exported(opts.baseline)) if opts.baseline else None
        if opts.http:
            counted = asyncio.run(both_http(http_sides(tree, opts.baseline, project), opts.clients, opts.calls, out))
        else:
            on = with_downloads(project, opts.download)
            if tree is not None:
                sides = {"this tree, downloads on": (REPO, on), f"{opts.baseline}, downloads on": (tree, on)}
            else:
                sides = {"downloads on": (REPO, on), "downloads off": (REPO, project)}
            counted = asyncio.run(both(sides, opts.calls, out, count_client if opts.client else count))
    (a, x), (b, y) = counted.items()
    who = "client" if opts.client else "server"
    print(f"{who}, {a}: {x:,.0f} instructions per call | {b}: {y:,.0f} | ratio {x / y:.4f} | difference {x - y:+,.0f}")


if __name__ == "__main__":
    main()
