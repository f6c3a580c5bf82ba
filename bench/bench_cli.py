#!/usr/bin/env python3
"""Wall time of one `mcpgen call top_cities -a top_n=3` (process start to exit): this tree against
a git revision, paired, with the interpreter's own start (`python -c pass`) as the floor.

Both trees run on one copy of the shipped project (specs/, mcpgen.yaml, examples/data). Each round
runs the floor and the call once for each tree, the order alternating between rounds, after a
warm-up run each (which also writes the .pyc files). Printed: the median wall and CPU time of each,
the median of the per-round ratios (this tree / baseline), and the target: the call under 0.5 s.

    python bench/bench_cli.py --baseline main~3 [--rounds 7]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench_core import exported
from bench_startup import mcpgen, shipped_project

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
TARGET = 0.5  # seconds of wall time for one `mcpgen call`


def timed(cmd: list[str], env: dict, cwd: Path) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the child) of one run, which must succeed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    out = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, timeout=120)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode != 0:
        raise RuntimeError(f"{cmd[-6:]} failed: {out.stderr[-300:]!r}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline", metavar="REV", required=True, help="the git revision to compare with")
    ap.add_argument("--rounds", type=int, default=7)
    opts = ap.parse_args()
    with exported(opts.baseline) as base, shipped_project() as project:
        trees = {"baseline": base, "this tree": REPO}
        runs = {
            label: mcpgen(tree, "call", "top_cities", "-a", "top_n=3", "-s", str(project / "specs"))
            for label, tree in trees.items()
        }
        runs["python -c pass"] = ([sys.executable, "-c", "pass"], dict(os.environ))
        for cmd, env in runs.values():  # warm-up
            timed(cmd, env, project)
        times: dict[str, list[tuple[float, float]]] = {label: [] for label in runs}
        for r in range(opts.rounds):
            for label in list(runs) if r % 2 == 0 else list(runs)[::-1]:
                times[label].append(timed(*runs[label], project))
    for label, values in times.items():
        wall = statistics.median(w for w, _ in values)
        cpu = statistics.median(c for _, c in values)
        print(f"{label:15} wall {wall * 1000:7.0f} ms  CPU {cpu * 1000:7.0f} ms")
    ratios = [t[0] / b[0] for t, b in zip(times["this tree"], times["baseline"])]
    ratio = statistics.median(ratios)
    wall = statistics.median(w for w, _ in times["this tree"])
    floor = statistics.median(w for w, _ in times["python -c pass"])
    print(f"median paired ratio this tree / baseline: {ratio:.2f} (of {len(ratios)} rounds)")
    print(
        f"target: one `mcpgen call` under {TARGET:.1f} s wall: {wall:.2f} s "
        f"({'met' if wall < TARGET else 'NOT met'}; the interpreter alone starts in {floor:.2f} s here)"
    )


if __name__ == "__main__":
    main()
