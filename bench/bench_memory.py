#!/usr/bin/env python3
"""Memory of the server process (RSS, psutil): mcpgen against the same tools written by hand, paired.

1. `mcpgen serve bench/project/specs` against bench/handwritten_server.py (the same `top_cities` on
   the SDK's MCPServer): RSS idle right after `initialize`, and after 10,000 `tools/call top_cities`
   to each (bench/bench_paired.py: one client holds a session to both servers and alternates calls).
   Goals: mcpgen / hand-written <= 1.10, idle and after the calls. A warm-up start first fills mcpgen's
   cache of checked specs, so each round measures a restart of an unchanged project.
2. A project of 10,000 generated specs (bench/bench_validate.py's generator) against the SDK's server
   with the same 10,000 tools written by hand (bench/bench_cache.py's): RSS idle after `initialize`
   and after `tools/list`. Goal: mcpgen / SDK <= 1.2, both.

Each round starts both servers (the order alternating between rounds) and reads each one's RSS at the
same moments; printed: each side's median [range] and the median [range] of the per-round ratios.

    python bench/bench_memory.py [--rounds 3] [--calls 10000] [--tools 10000] [--only calls|tools] [--write-docs]
        (--write-docs: bench/results/bench_memory-calls.json and bench_memory-tools.json, and their blocks)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench_cache import hand_written
from bench_core import bench_project
from bench_validate import generate
from results import add_write_docs

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
GOALS = {"idle": 1.10, "calls": 1.10, "tools": 1.2}  # mcpgen / hand-written RSS; "tools": idle and listed


def paired(config: dict, rounds: int, options: list[str], timeout: float) -> list[dict]:
    """bench_paired.py's records for `config` (one per variant and round)."""
    with tempfile.TemporaryDirectory(prefix="mcpgen-memory-") as tmp:
        spec, out = Path(tmp) / "case.json", Path(tmp) / "out.jsonl"
        spec.write_text(json.dumps(config))
        command = [sys.executable, str(HERE / "bench_paired.py"), "--spec", str(spec), "--out", str(out)]
        subprocess.run(
            [*command, "--rounds", str(rounds), *options],
            check=True,
            cwd=REPO,
            env={**os.environ, "PYTHONPATH": str(REPO)},
            stderr=subprocess.DEVNULL,
            timeout=timeout,
        )
        return [json.loads(line) for line in out.read_text().splitlines()]


def sides(records: list[dict], key: str) -> dict[str, list[float]]:
    """Per variant, the figure `key` of each round, in round order."""
    by = {r["variant"]: [] for r in records}
    for r in sorted(records, key=lambda r: r["round"]):
        by[r["variant"]].append(r[key])
    return by


def serve(specs: Path) -> dict:
    return {"cmd": [sys.executable, "-m", "mcpgen.cli", "serve", str(specs)], "cwd": str(REPO)}


def calls_case(rounds: int, calls: int) -> dict:
    """Part 1: the bench project against the hand-written server, idle and after `calls` calls."""
    with bench_project() as project, tempfile.TemporaryDirectory(prefix="mcpgen-memory-cache-") as cache:
        hand = [sys.executable, str(HERE / "handwritten_server.py"), str(REPO / "examples/data/cities.csv")]
        config = {
            "tool": "top_cities",
            "args": {"n": 10},
            "variants": {
                "mcpgen": {**serve(project / "specs"), "env": {"MCPGEN_CACHE_DIR": cache}},
                "hand": {"cmd": hand},
            },
        }
        paired(config, 1, ["--n", "0"], timeout=600)  # warm-up: a restart, as measured, finds the cache filled
        options = ["--n", "50", "--warmup", "0", "--mem-calls", str(calls)]
        records = paired(config, rounds, options, timeout=600 + rounds * calls * 0.2)
    errors = sides(records, "seq_errors")
    assert not any(sum(v) for v in errors.values()), f"calls failed: {errors}"
    return {
        "calls": sides(records, "mem_calls")["mcpgen"][0],
        "idle_mib": sides(records, "rss_start_mb"),
        "calls_mib": sides(records, "rss_after_mem_calls_mb"),
    }


def tools_case(rounds: int, tools: int) -> dict:
    """Part 2: `tools` generated specs against the SDK's server with the same tools written by hand."""
    with tempfile.TemporaryDirectory(prefix="mcpgen-memory-tools-") as tmp:
        project = Path(tmp)
        specs = generate(project, tools)
        sdk = {"cmd": [sys.executable, str(hand_written(project, tools))], "cwd": str(project)}
        mcpgen = {**serve(specs), "env": {"MCPGEN_CACHE_DIR": str(project / "cache")}}
        config = {"tool": "tool_0000", "variants": {"mcpgen": mcpgen, "sdk": sdk}}
        paired(config, 1, ["--n", "0"], timeout=1200)  # warm-up: fills mcpgen's cache of checked specs
        records = paired(config, rounds, ["--n", "0"], timeout=1200 * rounds)
    counts = sides(records, "n_tools")
    assert all(n == tools for v in counts.values() for n in v), f"tools listed: {counts}"
    return {
        "tools": tools,
        "idle_mib": sides(records, "rss_start_mb"),
        "listed_mib": sides(records, "rss_end_mb"),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--calls", type=int, default=10000, help="tools/call to each server before the second reading")
    ap.add_argument("--tools", type=int, default=10000, help="specs and hand-written tools in part 2")
    ap.add_argument("--only", choices=["calls", "tools"], help="run one part")
    add_write_docs(ap)
    opts = ap.parse_args()
    cases = {"calls": lambda: calls_case(opts.rounds, opts.calls), "tools": lambda: tools_case(opts.rounds, opts.tools)}
    for part, case in cases.items():  # one record per part: `--only` runs one again, the other stays
        if opts.only in (None, part):
            figures = {part: case()}
            print(render(figures), flush=True)
            if opts.write_docs:
                from results import publish

                publish(__file__, figures, opts.rounds, name=part)


def render(figures: dict) -> str:
    """The table of one run (bench/results.py puts it into docs/benchmarks.md)."""
    from results import ratios, spread, table, verdict

    rows = []

    def row(label: str, mib: dict[str, list[float]], other: str, goal: float | None) -> None:
        per_round = ratios(mib["mcpgen"], mib[other])
        target = verdict(statistics.median(per_round), goal)
        rows.append([label, spread(mib["mcpgen"], 1), spread(mib[other], 1), spread(per_round, 3, bold=True), target])

    if "calls" in figures:
        calls = figures["calls"]
        row("`bench/project`, idle after `initialize`", calls["idle_mib"], "hand", GOALS["idle"])
        row(f"the same, after {calls['calls']:,} `tools/call` each", calls["calls_mib"], "hand", GOALS["calls"])
    if "tools" in figures:
        tools = figures["tools"]
        row(
            f"{tools['tools']:,} specs against {tools['tools']:,} SDK tools, idle",
            tools["idle_mib"],
            "sdk",
            GOALS["tools"],
        )
        row("the same, after `tools/list`", tools["listed_mib"], "sdk", GOALS["tools"])
    header = ["server", "mcpgen RSS, MiB", "hand-written RSS, MiB", "**mcpgen / hand-written**", "goal"]
    return table(header, rows)


if __name__ == "__main__":
    main()
