#!/usr/bin/env python3
"""Server instructions per call, counted by valgrind's callgrind: repeatable whatever the machine's load.

`mcpgen serve` of the bench project runs under callgrind over stdio with collection off; an official
client makes warm-up calls, switches collection on (`callgrind_control`), makes N calls of
`top_cities n=10`, and switches it off. What the server executed for those calls, over N, is its
instructions per call. Each side is measured so, the two side by side (two processes at once):

    python bench/bench_instructions.py                   # downloads on against off, this tree
    python bench/bench_instructions.py --baseline main   # downloads on: this tree against mcpgen at REV

Needs valgrind. A latency ratio moves with the load of a shared machine; this count moves much less,
but not at all only for code that does not depend on time: the event loop and the threads that wait
(the call log's writer, deadlines) run more often when calls are slow, so the two sides run together,
and a difference of a few tenths of a percent is within what repeating a run moves.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import psutil
from bench_core import bench_project, exported
from bench_vs_handwritten import with_downloads
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
TIMEOUT = 900  # seconds for any one step: a start-up under callgrind takes a minute or two


async def count(tree: Path, project: Path, calls: int, out: Path) -> float:
    """Instructions per call of `mcpgen serve project` imported from `tree`, under callgrind."""
    serve = [sys.executable, "-P", "-m", "mcpgen.cli", "serve", str(project / "specs")]
    params = StdioServerParameters(
        command="valgrind",
        args=["--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}", *serve],
        env={**os.environ, "PYTHONPATH": str(tree), "PYTHONHASHSEED": "0"},
        cwd=str(tree),
    )
    with open(os.devnull, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await asyncio.wait_for(session.initialize(), TIMEOUT)
            for _ in range(20):
                await asyncio.wait_for(session.call_tool("top_cities", {"n": 10}), TIMEOUT)
            (server,) = [c for c in psutil.Process().children() if f"--callgrind-out-file={out}" in c.cmdline()]
            control(server.pid, "on")
            for _ in range(calls):
                result = await asyncio.wait_for(session.call_tool("top_cities", {"n": 10}), TIMEOUT)
                if result.is_error:
                    raise SystemExit(f"the call failed: {result.content[0].text}")
            control(server.pid, "off")
    totals = [line for line in out.read_text().splitlines() if line.startswith("totals:")]
    return int(totals[0].split()[1]) / calls


def control(pid: int, state: str) -> None:
    subprocess.run(["callgrind_control", "-i", state, str(pid)], check=True, capture_output=True, timeout=TIMEOUT)


async def both(sides: dict[str, tuple[Path, Path]], calls: int, tmp: Path) -> dict[str, float]:
    names = list(sides)
    counted = await asyncio.gather(
        *(count(tree, project, calls, tmp / f"callgrind.{i}") for i, (tree, project) in enumerate(sides.values()))
    )
    return dict(zip(names, counted))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=200, help="calls counted per side")
    ap.add_argument("--baseline", metavar="REV", help="downloads on, this tree against mcpgen as of REV")
    opts = ap.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed")
    with bench_project() as project, contextlib.ExitStack() as stack, tempfile.TemporaryDirectory() as tmp:
        on = with_downloads(project)
        if opts.baseline:
            tree = stack.enter_context(exported(opts.baseline))
            sides = {"this tree, downloads on": (REPO, on), f"{opts.baseline}, downloads on": (tree, on)}
        else:
            sides = {"downloads on": (REPO, on), "downloads off": (REPO, project)}
        counted = asyncio.run(both(sides, opts.calls, Path(tmp)))
    (a, x), (b, y) = counted.items()
    print(f"{a}: {x:,.0f} instructions per call | {b}: {y:,.0f} | ratio {x / y:.4f} | difference {x - y:+,.0f}")


if __name__ == "__main__":
    main()
