#!/usr/bin/env python3
"""Start-up of `mcpgen serve` and `mcpgen validate` on N generated specs: the cache of parsed and
checked specs turned off (`MCPGEN_CACHE=off`) against warm (filled by the previous run), paired,
this tree; with `--baseline REV`, also that revision warm (its own cache file: the file is per
version of mcpgen's code); with `--sdk`, also the official SDK's server with N hand-written tools
(the same parameters, descriptions and query; `serve` only), the start-up a project of N specs
should not exceed.

Each round runs every command once in each mode, the order alternating between rounds, after one
warm-up run each (which also fills the cache and writes the .pyc files). Printed: the median of
each, and the median of the per-round ratios, warm / off (and warm / baseline warm).

    python bench/bench_cache.py [-n 1000] [--rounds 3] [--baseline main~3] [--sdk] [--warm-only]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import tempfile
from pathlib import Path

from bench_core import exported
from bench_startup import REPO, time_initialize, time_serve, time_validate
from bench_validate import generate
from results import add_write_docs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", type=int, default=1000, help="how many specs (default 1000)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--baseline", metavar="REV", help="also time this git revision, warm")
    ap.add_argument("--sdk", action="store_true", help="also time the SDK's server with N hand-written tools")
    ap.add_argument("--warm-only", action="store_true", help="leave out the runs with the cache off (10,000 specs)")
    add_write_docs(ap)
    opts = ap.parse_args()
    commands = {"serve": time_serve, "validate": time_validate}
    with contextlib.ExitStack() as stack:
        project = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="mcpgen-cache-bench-")))
        generate(project, opts.n)
        os.environ["MCPGEN_CACHE_DIR"] = str(project / "cache")
        modes = {"warm": ("on", REPO)} if opts.warm_only else {"off": ("off", REPO), "warm": ("on", REPO)}
        if opts.baseline:
            modes["baseline warm"] = ("on", stack.enter_context(exported(opts.baseline)))
        if opts.sdk:
            modes["sdk"] = ("on", hand_written(project, opts.n))
        times = measure(commands, modes, project, opts.rounds)
    report(times, commands, opts)
    if opts.write_docs:
        from results import publish

        figures = {"n": opts.n, "baseline": opts.baseline, "seconds": {}}
        for (command, mode), values in times.items():
            if values:
                figures["seconds"].setdefault(command, {})[mode] = values
        publish(__file__, figures, opts.rounds, name="sdk" if opts.sdk else None)


SDK_TARGET = 1.0  # serve, warm, against the SDK with the same tools written by hand
SECONDS_TARGETS = {("serve", 10000): 5.0, ("validate", 1000): 1.0}  # warm, on a quiet machine


def render(figures: dict) -> str:
    """The table of one run (bench/results.py puts it into docs/benchmarks.md)."""
    from results import ratios, spread, table, verdict

    n = figures["n"]
    rows = []
    for command, modes in figures["seconds"].items():
        off, warm = modes.get("off"), modes["warm"]
        if off:
            rows.append([f"`{command}`, cache off", spread(off), "", ""])
        target = SECONDS_TARGETS.get((command, n))
        rows.append(
            [
                f"`{command}`, cache warm",
                spread(warm),
                f"warm / off {spread(ratios(warm, off), bold=True)}" if off else "",
                f"{verdict(statistics.median(warm), target)} (s, quiet machine)" if target else "",
            ]
        )
        if "sdk" in modes:
            per_round = ratios(warm, modes["sdk"])
            target = verdict(statistics.median(per_round), SDK_TARGET)
            rows.append([f"the SDK with {n:,} hand-written tools", spread(modes["sdk"]), "", ""])
            rows.append(["", "", f"mcpgen warm / SDK {spread(per_round, bold=True)}", target])
        if "baseline warm" in modes:
            base = modes["baseline warm"]
            rows.append(
                [
                    f"`{command}`, {figures['baseline']}, warm",
                    spread(base),
                    f"warm / baseline {spread(ratios(warm, base), bold=not off)}",
                    "",
                ]
            )
    return f"{n:,} generated specs\n\n" + table(["run", "seconds", "ratio per round", "target"], rows)


def measure(commands: dict, modes: dict, project: Path, rounds: int) -> dict[tuple[str, str], list[float]]:
    """Seconds of each command in each mode, every round, the order alternating between rounds."""

    def run(command, mode):
        os.environ["MCPGEN_CACHE"], tree = modes[mode]
        if mode == "sdk":
            return time_initialize([sys.executable, str(tree)], dict(os.environ), project)
        return command(tree, project)

    def wanted(name, mode):  # the SDK's server has no validate
        return mode != "sdk" or name == "serve"

    for name, command in commands.items():
        for mode in modes:
            if wanted(name, mode):
                run(command, mode)
    times: dict[tuple[str, str], list[float]] = {(c, m): [] for c in commands for m in modes}
    for r in range(rounds):
        order = list(modes) if r % 2 == 0 else list(modes)[::-1]
        for name, command in commands.items():
            for mode in order:
                if wanted(name, mode):
                    times[name, mode].append(run(command, mode))
    return times


def paired(new: list[float], old: list[float]) -> str:
    """The median of the per-round ratios new / old, with their range."""
    ratios = [n / o for n, o in zip(new, old)]
    return f"{statistics.median(ratios):.3f} [{min(ratios):.3f}-{max(ratios):.3f}]"


def report(times: dict, commands: dict, opts: argparse.Namespace) -> None:
    load = " / ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"{opts.n} specs, {opts.rounds} rounds; load average {load} (1/5/15 min) after the runs")
    for name in commands:
        warm = times[name, "warm"]
        print(f"{name:8} warm {statistics.median(warm):7.2f} s", end="")
        off = times.get((name, "off"))
        print(
            f"  cache off {statistics.median(off):7.2f} s  median paired ratio warm/off {paired(warm, off)}"
            if off
            else ""
        )
        if opts.sdk and name == "serve":
            sdk = times[name, "sdk"]
            print(
                f"{name:8} the SDK with {opts.n} hand-written tools {statistics.median(sdk):7.2f} s  "
                f"median paired ratio warm/SDK {paired(warm, sdk)} (target <= 1.0)"
            )
        if opts.baseline:
            base = times[name, "baseline warm"]
            print(
                f"{name:8} baseline {opts.baseline} warm {statistics.median(base):7.2f} s  "
                f"median paired ratio warm/baseline warm {paired(warm, base)}"
            )


SDK_SERVER = r"""
from typing import Annotated

import duckdb
from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, TextContent
from pydantic import Field

con = duckdb.connect()
con.execute("CREATE TABLE cities AS SELECT * FROM (VALUES ('Tokyo', 'JP', 37000000)) t(name, country_code, population)")
server = MCPServer("hand-written")
SQL = (
    "SELECT name AS city, country_code, population, population / {i} AS per_{i} FROM cities "
    "WHERE ($country IS NULL OR country_code = $country) AND population >= $min_population "
    "ORDER BY population DESC LIMIT $top_n"
)


def tool(i):
    def run(
        top_n: Annotated[int, Field(ge=1, le=50, description="How many cities to return")] = 10,
        country: Annotated[str | None, Field(pattern="^[A-Z]{2}$", description="ISO 3166-1 alpha-2 country code")] = None,
        min_population: Annotated[int, Field(ge=0, description="Smallest population to include")] = i,
    ) -> CallToolResult:
        cur = con.cursor()
        rows = cur.execute(SQL.format(i=i), dict(top_n=top_n, country=country, min_population=min_population)).fetchall()
        text = "\n".join(f"{n}. {r[0]} ({r[1]}): {r[2]:,}" for n, r in enumerate(rows, 1))
        return CallToolResult(content=[TextContent(type="text", text=text)], structured_content={"table": rows})

    description = f"The {i}th generated tool: the most populated cities, optionally within one country."
    server.tool(name=f"tool_{i:04d}", title=f"Generated tool {i}", description=description)(run)


for i in range(N_TOOLS):
    tool(i)
server.run("stdio")
"""


def hand_written(project: Path, n: int) -> Path:
    """The SDK's server with the N tools the generated specs define, written by hand (one function)."""
    path = project / "hand_written.py"
    path.write_text(SDK_SERVER.replace("N_TOOLS", str(n)), encoding="utf-8")
    return path


if __name__ == "__main__":
    main()
