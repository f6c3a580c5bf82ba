#!/usr/bin/env python3
"""Start-up time of `mcpgen serve` and `mcpgen validate`: this tree against a git revision, paired.

Both run on one copy of the shipped project (specs/, mcpgen.yaml, examples/data) in a temporary
folder. `serve` is timed from the process start to its answer to `initialize` on stdin (imports,
loading, compiling, describing every DuckDB query, connecting), `validate` to its exit. Each round
runs every command once for each tree, the order alternating between rounds, after one warm-up
run each (which also writes the .pyc files). Printed: the median of each and the median of the
per-round ratios, this tree / baseline; the target is that neither grows (ratio at most 1.03,
within the machine's noise).

    python bench/bench_startup.py --baseline main~5 [--rounds 15]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_core import exported
from results import add_write_docs

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}},
}


@contextlib.contextmanager
def shipped_project():
    """specs/, mcpgen.yaml and examples/ of this tree in a temporary folder (nothing else to walk)."""
    with tempfile.TemporaryDirectory(prefix="mcpgen-startup-") as tmp:
        root = Path(tmp)
        shutil.copytree(REPO / "specs", root / "specs")
        shutil.copytree(REPO / "examples", root / "examples")
        shutil.copyfile(REPO / "mcpgen.yaml", root / "mcpgen.yaml")
        yield root


def mcpgen(tree: Path, *args: str) -> tuple[list[str], dict]:
    # -P: `python -m` would otherwise put the working folder first on sys.path, before PYTHONPATH
    # .pyc files are written and read, as in an install, even where PYTHONDONTWRITEBYTECODE is set
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return [sys.executable, "-P", "-m", "mcpgen.cli", *args], {**env, "PYTHONPATH": str(tree)}


def time_serve(tree: Path, project: Path) -> float:
    """Seconds from the start of `mcpgen serve` to its answer to `initialize`."""
    return time_initialize(*mcpgen(tree, "serve", str(project / "specs")), project)


def time_initialize(cmd: list[str], env: dict, project: Path) -> float:
    """Seconds from the start of a stdio MCP server to its answer to `initialize`."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        cmd, cwd=project, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write((json.dumps(INITIALIZE) + "\n").encode())
        proc.stdin.flush()
        line = proc.stdout.readline()
        elapsed = time.perf_counter() - started
        if b'"serverInfo"' not in line:
            raise RuntimeError(f"serve did not answer initialize: {line[:200]!r}")
        proc.stdin.close()
        proc.wait(30)
        return elapsed
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


def time_validate(tree: Path, project: Path) -> float:
    """Seconds `mcpgen validate` takes, start to exit (it must find the project clean)."""
    cmd, env = mcpgen(tree, "validate", str(project / "specs"))
    started = time.perf_counter()
    out = subprocess.run(cmd, cwd=project, env=env, capture_output=True, timeout=120)
    elapsed = time.perf_counter() - started
    if out.returncode != 0:
        raise RuntimeError(f"validate failed: {out.stdout[-300:]!r}")
    return elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline", metavar="REV", required=True, help="the git revision to compare with")
    ap.add_argument("--rounds", type=int, default=15)
    add_write_docs(ap)
    opts = ap.parse_args()
    commands = {"serve": time_serve, "validate": time_validate}
    with exported(opts.baseline) as base, shipped_project() as project:
        trees = {"baseline": base, "this tree": REPO}
        for run in commands.values():  # warm-up: .pyc files, the page cache
            for tree in trees.values():
                run(tree, project)
        times: dict[tuple[str, str], list[float]] = {(c, t): [] for c in commands for t in trees}
        for r in range(opts.rounds):
            order = list(trees) if r % 2 == 0 else list(trees)[::-1]
            for name, run in commands.items():
                for label in order:
                    times[name, label].append(run(trees[label], project))
    for name in commands:
        base_ms = statistics.median(times[name, "baseline"]) * 1000
        tree_ms = statistics.median(times[name, "this tree"]) * 1000
        ratios = [t / b for t, b in zip(times[name, "this tree"], times[name, "baseline"])]
        ratio = statistics.median(ratios)
        verdict = "ok" if ratio <= 1.03 else "GREW"
        print(
            f"{name:8} baseline {base_ms:7.1f} ms  this tree {tree_ms:7.1f} ms  "
            f"median paired ratio {ratio:.3f} (of {len(ratios)} rounds)  {verdict}"
        )
    if opts.write_docs:
        from results import publish

        base = subprocess.run(["git", "rev-parse", "--short", opts.baseline], cwd=REPO, capture_output=True, text=True)
        seconds = {name: {tree: times[name, tree] for tree in ("baseline", "this tree")} for name in commands}
        publish(
            __file__,
            {"baseline": opts.baseline, "baseline_commit": base.stdout.strip(), "seconds": seconds},
            opts.rounds,
        )


TARGET = 1.03  # this tree / baseline: start-up must not grow past the machine's noise


def render(figures: dict) -> str:
    """The table of one run (bench/results.py puts it into docs/benchmarks.md)."""
    from results import ratios, spread, table, verdict

    names = {"serve": "`mcpgen serve specs/` (to its answer to `initialize`)", "validate": "`mcpgen validate specs/`"}
    rows = []
    for name, trees in figures["seconds"].items():
        per_round = ratios(trees["this tree"], trees["baseline"])
        target = verdict(statistics.median(per_round), TARGET)
        cells = [spread(trees["baseline"], 3), spread(trees["this tree"], 3), spread(per_round, 3, bold=True)]
        rows.append([names[name], *cells, target])
    base = f"{figures['baseline']} ({figures['baseline_commit']})"
    return table(["command", f"baseline {base}, s", "this tree, s", "this tree / baseline", "target"], rows)


if __name__ == "__main__":
    main()
