#!/usr/bin/env python3
"""Wall and CPU time of one `mcpgen call` (process start to exit), and the imports it pays for: this
tree against a git revision, paired, with the interpreter's own start (`python -c pass`) as the floor.

Both trees run on one copy of the shipped project (specs/, mcpgen.yaml, examples/data). The commands:
a spec tool (`call top_cities -a top_n=3`) and a Python tool (`call airline_lookup -a query=united`).
Each round runs the floor and every command once for each tree, the order alternating between
rounds, after a warm-up run each (which also writes the .pyc files and the project's cache). The
import time of the spec call is read from `python -X importtime` (the sum of the top-level
imports) in runs of its own, paired the same way. Printed per command and tree: the median wall and
CPU time with their range [min-max], the median [range] of the per-round ratios (this tree /
baseline), the load average before and after, and the target: the spec call under 0.5 s wall.

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
from results import add_write_docs

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
TARGET = 0.5  # seconds of wall time for one `mcpgen call`
COMMANDS = {
    "call top_cities": ("call", "top_cities", "-a", "top_n=3"),
    "call airline_lookup": ("call", "airline_lookup", "-a", "query=united"),
}


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


def import_seconds(cmd: list[str], env: dict, cwd: Path) -> float:
    """Seconds the run spent importing: the sum of its top-level imports per `-X importtime`."""
    out = subprocess.run([cmd[0], "-X", "importtime", *cmd[1:]], cwd=cwd, env=env, capture_output=True, timeout=120)
    if out.returncode != 0:
        raise RuntimeError(f"{cmd[-6:]} failed: {out.stderr[-300:]!r}")
    total = 0
    for line in out.stderr.decode().splitlines():
        if line.startswith("import time:") and "|" in line and "cumulative" not in line:
            _, cumulative, name = line.split("|")
            if name.startswith(" ") and not name.startswith("  "):  # top level: one space after the bar
                total += int(cumulative)
    return total / 1e6


def spread(values: list[float], scale: float = 1000.0, unit: str = "ms") -> str:
    """'median [min-max] unit' of `values` times `scale`."""
    med, low, high = (f(values) * scale for f in (statistics.median, min, max))
    return f"{med:6.0f} [{low:.0f}-{high:.0f}] {unit}"


def ratio_spread(ratios: list[float]) -> str:
    return f"{statistics.median(ratios):.2f} [{min(ratios):.2f}-{max(ratios):.2f}]"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline", metavar="REV", required=True, help="the git revision to compare with")
    ap.add_argument("--rounds", type=int, default=7)
    add_write_docs(ap)
    opts = ap.parse_args()
    load_before = os.getloadavg()
    with exported(opts.baseline) as base, shipped_project() as project:
        trees = {"baseline": base, "this tree": REPO}
        runs = {
            (command, label): mcpgen(tree, *args, "-s", str(project / "specs"))
            for command, args in COMMANDS.items()
            for label, tree in trees.items()
        }
        runs["python -c pass", ""] = ([sys.executable, "-c", "pass"], dict(os.environ))
        for cmd, env in runs.values():  # warm-up
            timed(cmd, env, project)
        times: dict[tuple[str, str], list[tuple[float, float]]] = {key: [] for key in runs}
        imports: dict[str, list[float]] = {label: [] for label in trees}
        for r in range(opts.rounds):
            for key in list(runs) if r % 2 == 0 else list(runs)[::-1]:
                times[key].append(timed(*runs[key], project))
            for label in list(trees) if r % 2 == 0 else list(trees)[::-1]:
                imports[label].append(import_seconds(*runs["call top_cities", label], project))
    load_after = os.getloadavg()
    print(f"{opts.rounds} rounds; load average {load_before[0]:.2f} before, {load_after[0]:.2f} after")
    for (command, label), values in times.items():
        walls, cpus = [w for w, _ in values], [c for _, c in values]
        print(f"{command:20} {label:10} wall {spread(walls)}  CPU {spread(cpus)}")
    for command in COMMANDS:
        for i, kind in enumerate(("wall", "CPU")):
            ratios = [t[i] / b[i] for t, b in zip(times[command, "this tree"], times[command, "baseline"])]
            print(f"{command:20} {kind:4} ratio this tree / baseline: {ratio_spread(ratios)}")
    for label, values in imports.items():
        print(f"imports of call top_cities, {label:10} {spread(values)}")
    ratios = [t / b for t, b in zip(imports["this tree"], imports["baseline"])]
    print(f"imports ratio this tree / baseline: {ratio_spread(ratios)}")
    wall = statistics.median(w for w, _ in times["call top_cities", "this tree"])
    floor = statistics.median(w for w, _ in times["python -c pass", ""])
    print(
        f"target: one `mcpgen call` under {TARGET:.1f} s wall: {wall:.2f} s "
        f"({'met' if wall < TARGET else 'NOT met'}; the interpreter alone starts in {floor:.2f} s here)"
    )
    if opts.write_docs:
        from results import publish

        runs = [{"command": command, "tree": label, "seconds": values} for (command, label), values in times.items()]
        publish(__file__, {"baseline": opts.baseline, "runs": runs, "imports": imports}, opts.rounds)


def render(figures: dict) -> str:
    """The table of one run (bench/results.py puts it into docs/benchmarks.md)."""
    from results import ratios, spread, table, verdict

    base = {(r["command"], r["tree"]): r["seconds"] for r in figures["runs"]}
    rows = []
    for r in figures["runs"]:
        wall, cpu = [w for w, _ in r["seconds"]], [c for _, c in r["seconds"]]
        tree = {"baseline": f"mcpgen at {figures['baseline']}", "": ""}.get(r["tree"], r["tree"])
        note = (
            verdict(statistics.median(wall), TARGET)
            if (r["command"], r["tree"]) == ("call top_cities", "this tree")
            else ""
        )
        if r["tree"] == "this tree" and (r["command"], "baseline") in base:
            paired = ratios(wall, [w for w, _ in base[r["command"], "baseline"]])
            note = "; ".join(x for x in (note, f"this tree / baseline {spread(paired)}") if x)
        rows.append([f"`{r['command']}`", tree, spread(wall, 3, bold=bool(note)), spread(cpu, 3), note])
    imports = figures["imports"]
    paired = ratios(imports["this tree"], imports["baseline"])
    rows.append(
        [
            "imports of `call top_cities` (`-X importtime`)",
            "this tree",
            spread(imports["this tree"], 3),
            "",
            f"this tree / baseline {spread(paired)}",
        ]
    )
    return table(["command", "tree", "wall, s", "CPU, s", "target; paired ratio"], rows)


if __name__ == "__main__":
    main()
