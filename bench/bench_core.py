#!/usr/bin/env python3
"""Generated tool vs hand-written tool, side by side over stdio.

Runs bench_stdio.py against `mcpgen serve bench/project/specs` and against
handwritten_server.py (same query, same result, same client), interleaved for
several rounds, and prints the median p50 latency and startup time of each and
their ratios. Targets: p50 within 10 %, startup within 25 %.

    python bench/bench_core.py [--rounds 5] [--n 300]

With `--baseline DIR` (a source tree of another mcpgen version, e.g. `git archive main | tar -x
-C DIR`), the comparison is that version against this one instead: what a change costs.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent


def run_once(label: str, cmd: list[str], n: int, tool_args: dict, options: list[str] = ()) -> dict:
    out = subprocess.run(
        [
            sys.executable,
            str(HERE / "bench_stdio.py"),
            *options,
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--baseline", type=Path, help="compare this mcpgen source tree, not the hand-written server")
    opts = ap.parse_args()
    mcpgen = shutil.which("mcpgen") or sys.exit("mcpgen is not installed (pip install -e .)")
    commands = {
        "handwritten": [sys.executable, str(HERE / "handwritten_server.py"), str(REPO / "examples/data/cities.csv")],
        "mcpgen": [mcpgen, "serve", str(HERE / "project/specs")],
    }
    options: dict[str, list[str]] = {}
    if opts.baseline:
        serve = ["-m", "mcpgen.cli", "serve", str(HERE / "project/specs")]
        commands = {"baseline": [sys.executable, *serve], "mcpgen": [sys.executable, *serve]}
        # `python -m` imports from its working folder first: start each server in its own tree
        trees = {"baseline": opts.baseline.resolve(), "mcpgen": REPO}
        options = {label: [f"--env=PYTHONPATH={tree}", f"--cwd={tree}"] for label, tree in trees.items()}
    ref = "baseline" if opts.baseline else "handwritten"
    results: dict[str, list[dict]] = {k: [] for k in commands}
    for round_ in range(opts.rounds):
        order = list(commands) if round_ % 2 == 0 else list(reversed(commands))
        for label in order:
            r = run_once(label, commands[label], opts.n, {"n": 10}, options.get(label, []))
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
    p50 = summary["mcpgen"]["seq_p50_ms"] / summary[ref]["seq_p50_ms"]
    startup = summary["mcpgen"]["startup_ms"] / summary[ref]["startup_ms"]
    print(f"{'':12s} {'startup ms':>11s} {'p50 ms':>8s} {'p95 ms':>8s} {'conc calls/s':>13s}")
    for label, s in summary.items():
        print(
            f"{label:12s} {s['startup_ms']:11.1f} {s['seq_p50_ms']:8.2f} {s['seq_p95_ms']:8.2f} "
            f"{s['conc_calls_per_s']:13.1f}"
        )
    p50_target, startup_target = (1.05, 1.10) if opts.baseline else (1.10, 1.25)
    print(f"p50 ratio mcpgen/{ref}: {p50:.3f} (target <= {p50_target}) {'OK' if p50 <= p50_target else 'OVER'}")
    print(
        f"startup ratio mcpgen/{ref}: {startup:.3f} (target <= {startup_target}) "
        f"{'OK' if startup <= startup_target else 'OVER'}"
    )


if __name__ == "__main__":
    main()
