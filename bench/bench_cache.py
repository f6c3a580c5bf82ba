#!/usr/bin/env python3
"""Start-up of `mcpgen serve` and `mcpgen validate` on N generated specs: the cache of parsed and
checked specs turned off (`MCPGEN_CACHE=off`) against warm (filled by the previous run), paired,
this tree; with `--baseline REV`, also that revision warm (its own cache file: the file is per
version of mcpgen's code).

Each round runs every command once in each mode, the order alternating between rounds, after one
warm-up run each (which also fills the cache and writes the .pyc files). Printed: the median of
each, and the median of the per-round ratios, warm / off (and warm / baseline warm).

    python bench/bench_cache.py [-n 1000] [--rounds 3] [--baseline main~3]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import tempfile
from pathlib import Path

from bench_core import exported
from bench_startup import REPO, time_serve, time_validate
from bench_validate import generate


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", type=int, default=1000, help="how many specs (default 1000)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--baseline", metavar="REV", help="also time this git revision, warm")
    opts = ap.parse_args()
    commands = {"serve": time_serve, "validate": time_validate}
    with contextlib.ExitStack() as stack:
        project = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="mcpgen-cache-bench-")))
        generate(project, opts.n)
        os.environ["MCPGEN_CACHE_DIR"] = str(project / "cache")
        modes = {"off": ("off", REPO), "warm": ("on", REPO)}
        if opts.baseline:
            modes["baseline warm"] = ("on", stack.enter_context(exported(opts.baseline)))

        def run(command, mode):
            os.environ["MCPGEN_CACHE"], tree = modes[mode]
            return command(tree, project)

        for command in commands.values():
            for mode in modes:
                run(command, mode)
        times: dict[tuple[str, str], list[float]] = {(c, m): [] for c in commands for m in modes}
        for r in range(opts.rounds):
            order = list(modes) if r % 2 == 0 else list(modes)[::-1]
            for name, command in commands.items():
                for mode in order:
                    times[name, mode].append(run(command, mode))
    load = " / ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"{opts.n} specs, {opts.rounds} rounds; load average {load} (1/5/15 min) after the runs")
    for name in commands:
        off, warm = times[name, "off"], times[name, "warm"]
        ratios = [w / o for w, o in zip(warm, off)]
        print(
            f"{name:8} cache off {statistics.median(off):7.2f} s  warm {statistics.median(warm):7.2f} s  "
            f"median paired ratio warm/off {statistics.median(ratios):.3f} "
            f"[{min(ratios):.3f}-{max(ratios):.3f}]"
        )
        if opts.baseline:
            base = times[name, "baseline warm"]
            ratios = [w / b for w, b in zip(warm, base)]
            print(
                f"{name:8} baseline {opts.baseline} warm {statistics.median(base):7.2f} s  "
                f"median paired ratio warm/baseline warm {statistics.median(ratios):.3f} "
                f"[{min(ratios):.3f}-{max(ratios):.3f}]"
            )


if __name__ == "__main__":
    main()
