#!/usr/bin/env python3
"""Generated tool vs hand-written tool, side by side over stdio.

Runs bench_stdio.py against `mcpgen serve bench/project/specs` and against
handwritten_server.py (same query, same result, same client), interleaved for
several rounds, and prints the median p50 latency and startup time of each and
their ratios. Targets: p50 within 10 %, startup within 25 %.

With `--baseline REV`, mcpgen as of git revision REV (exported to a temporary folder) runs
interleaved too, and the p50 of this tree is compared with it: a change that must not slow
calls down (the MCP App, say: a resource read once per session) moves it by less than 3 %.

    python bench/bench_core.py [--rounds 5] [--n 300] [--baseline REV]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent


def run_once(label: str, cmd: list[str], n: int, tool_args: dict) -> dict:
    out = subprocess.run(
        [
            sys.executable,
            str(HERE / "bench_stdio.py"),
            "--tool",
            "top_cities",
            "--args",
            json.dumps(tool_args),
            "--n",
            str(n),
            "--label",
            label,
            "--",
            *cmd,
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def serve_from(tree: Path) -> list[str]:
    """`mcpgen serve` of the bench project, importing mcpgen from `tree`."""
    # -P: `python -m` would otherwise import mcpgen from the working folder (this tree) before PYTHONPATH
    serve = ["-P", "-m", "mcpgen.cli", "serve", str(HERE / "project/specs")]
    return ["env", f"PYTHONPATH={tree}", sys.executable, *serve]


@contextlib.contextmanager
def exported(rev: str):
    """The tracked files of `rev`, in a temporary folder."""
    with tempfile.TemporaryDirectory(prefix="mcpgen-baseline-") as tmp:
        archive = subprocess.run(["git", "archive", rev], cwd=REPO, capture_output=True, check=True).stdout
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(tmp, filter="data")
        yield Path(tmp)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--baseline", metavar="REV", help="also run mcpgen as of this git revision and compare p50")
    opts = ap.parse_args()
    with contextlib.ExitStack() as stack:
        commands = {
            "handwritten": [
                sys.executable,
                str(HERE / "handwritten_server.py"),
                str(REPO / "examples/data/cities.csv"),
            ],
            "mcpgen": serve_from(REPO),
        }
        if opts.baseline:
            commands["baseline"] = serve_from(stack.enter_context(exported(opts.baseline)))
        run_rounds(commands, opts)


def run_rounds(commands: dict[str, list[str]], opts) -> None:
    results: dict[str, list[dict]] = {k: [] for k in commands}
    for round_ in range(opts.rounds):
        order = list(commands) if round_ % 2 == 0 else list(reversed(commands))  # alternate who goes first
        for label in order:
            r = run_once(label, commands[label], opts.n, {"n": 10})
            assert r["seq_errors"] == 0 and r["conc_errors"] == 0 and not r["result"]["isError"], r
            results[label].append(r)
            print(
                f"round {round_ + 1} {label:12s} startup {r['startup_ms']:7.1f} ms  p50 {r['seq_p50_ms']:6.2f} ms"
                f"  p95 {r['seq_p95_ms']:6.2f} ms  conc {r['conc_calls_per_s']:7.1f}/s  rss {r['server_rss_mb']} MB",
                file=sys.stderr,
            )
    summary = {}
    for label, runs in results.items():
        summary[label] = {
            key: round(statistics.median(r[key] for r in runs), 2)
            for key in ("startup_ms", "seq_p50_ms", "seq_p95_ms", "conc_calls_per_s")
        }
    p50 = summary["mcpgen"]["seq_p50_ms"] / summary["handwritten"]["seq_p50_ms"]
    startup = summary["mcpgen"]["startup_ms"] / summary["handwritten"]["startup_ms"]
    print(f"{'':12s} {'startup ms':>11s} {'p50 ms':>8s} {'p95 ms':>8s} {'conc calls/s':>13s}")
    for label, s in summary.items():
        print(
            f"{label:12s} {s['startup_ms']:11.1f} {s['seq_p50_ms']:8.2f} {s['seq_p95_ms']:8.2f} "
            f"{s['conc_calls_per_s']:13.1f}"
        )
    print(f"p50 ratio mcpgen/handwritten: {p50:.3f} (target <= 1.10) {'OK' if p50 <= 1.10 else 'OVER'}")
    print(f"startup ratio mcpgen/handwritten: {startup:.3f} (target <= 1.25) {'OK' if startup <= 1.25 else 'OVER'}")
    if "baseline" in summary:
        moved = summary["mcpgen"]["seq_p50_ms"] / summary["baseline"]["seq_p50_ms"] - 1
        verdict = "OK" if abs(moved) < 0.03 else "MOVED"
        print(f"p50 this tree vs {opts.baseline}: {moved:+.1%} (target: less than 3 % either way) {verdict}")


if __name__ == "__main__":
    main()
