"""Benchmark: `mcpgen validate` of 1,000 generated specs (by default, which also describes
every query on its DuckDB connection, and with --static), and `mcpgen --help`.

    python bench/bench_validate.py            # prints the figures and the ratios to the targets
    python bench/bench_validate.py --keep DIR # also leave the generated project in DIR

Both are measured as subprocess runs of `python -P -m mcpgen.cli` importing mcpgen from this tree
(interpreter start-up and imports included), several repetitions, median [range] reported.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from results import add_write_docs

REPO = Path(__file__).resolve().parents[1]
VALIDATE_TARGET = 1.0
HELP_TARGET = 0.3

# Every spec differs (SQL, templates, defaults), so no cache can make one parse serve many.
SPEC = """\
# generated spec {i}
title: Generated tool {i}
description: >
  The {i}th generated tool: the most populated cities, optionally within one
  country, with at least a given population.
parameters:
  top_n:
    type: integer
    description: How many cities to return
    default: 10
    minimum: 1
    maximum: 50
  country:
    type: string
    description: ISO 3166-1 alpha-2 country code
    required: false
    pattern: "^[A-Z]{{2}}$"
  min_population:
    type: integer
    description: Smallest population to include
    default: {i}
    minimum: 0
sql: |
  SELECT name AS city, country_code, population, population / {i} AS per_{i}
  FROM cities
  WHERE (:country IS NULL OR country_code = :country)
    AND population >= :min_population
  ORDER BY population DESC
  LIMIT :top_n
sources:
  - https://www.geonames.org/
  - https://www.geonames.org/countries/{{{{ country or "" }}}}/
content: |
  Tool {i}: the {{{{ row_count }}}} largest cities{{% if country %}} in {{{{ country }}}}{{% endif %}}:
  {{% for r in rows %}}{{{{ loop.index }}}}. {{{{ r.city }}}} ({{{{ r.country_code }}}}): {{{{ r.population | thousands }}}}
  {{% endfor %}}
empty: (tool {i}) No city in {{{{ country }}}} has {{{{ min_population | thousands }}}} people or more.
table:
  columns: [city, population]
  headers: {{city: City, population: Population}}
chart:
  type: bar
  x: city
  y: population
tests:
  - args: {{top_n: 3}}
    expect: {{row_count: 3}}
"""

CONFIG = """\
connections:
  default:
    duckdb: ":memory:"
    init:
      - CREATE TABLE cities AS SELECT * FROM (VALUES ('Tokyo', 'JP', 37000000)) t(name, country_code, population)
"""


def generate(folder: Path, n: int = 1000) -> Path:
    """A project in `folder`: mcpgen.yaml and specs/ with `n` distinct specs."""
    specs = folder / "specs"
    specs.mkdir(parents=True, exist_ok=True)
    (folder / "mcpgen.yaml").write_text(CONFIG, encoding="utf-8")
    for i in range(n):
        (specs / f"tool_{i:04d}.yaml").write_text(SPEC.format(i=i), encoding="utf-8")
    return specs


def timed(cmd: list[str], repeat: int) -> tuple[list[float], list[float]]:
    """Wall times and CPU times (user + system, the process and its workers) of `repeat` runs."""
    walls, cpus = [], []
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        if done.returncode != 0:
            sys.exit(f"{' '.join(cmd)} failed ({done.returncode}): {done.stderr[-2000:]}")
    return walls, cpus


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=1000, help="how many specs (default 1000)")
    parser.add_argument("-r", "--repeat", "--rounds", type=int, default=5, help="repetitions (default 5)")
    parser.add_argument("--keep", type=Path, help="generate the project here and keep it")
    add_write_docs(parser)
    args = parser.parse_args()
    os.environ["PYTHONPATH"] = str(REPO)  # -P: not the working folder either, this tree's mcpgen
    mcpgen = [sys.executable, "-P", "-m", "mcpgen.cli"]
    folder = args.keep or Path(tempfile.mkdtemp(prefix="mcpgen-bench-"))
    try:
        specs = generate(folder, args.n)
        validate, validate_cpu = timed([*mcpgen, "validate", str(specs)], args.repeat)
        static, static_cpu = timed([*mcpgen, "validate", "--static", str(specs)], args.repeat)
        helps, _ = timed([*mcpgen, "--help"], args.repeat)
    finally:
        if args.keep is None:
            shutil.rmtree(folder, ignore_errors=True)
    v, s, h = statistics.median(validate), statistics.median(static), statistics.median(helps)
    load = " / ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"machine: {os.cpu_count()} CPUs, load average {load} (1/5/15 min) after the runs")
    print(
        f"mcpgen validate, {args.n} specs (static and columns): median {v:.3f} s over {args.repeat} runs "
        f"(min {min(validate):.3f}, max {max(validate):.3f}); target {VALIDATE_TARGET:g} s, "
        f"ratio {v / VALIDATE_TARGET:.2f}; CPU time median {statistics.median(validate_cpu):.3f} s"
    )
    print(
        f"mcpgen validate --static, {args.n} specs: median {s:.3f} s over {args.repeat} runs "
        f"(min {min(static):.3f}, max {max(static):.3f}); target {VALIDATE_TARGET:g} s, "
        f"ratio {s / VALIDATE_TARGET:.2f}; CPU time median {statistics.median(static_cpu):.3f} s; "
        f"describing costs {v / s:.2f}x"
    )
    print(
        f"mcpgen --help: median {h:.3f} s over {args.repeat} runs "
        f"(min {min(helps):.3f}, max {max(helps):.3f}); target {HELP_TARGET:g} s, ratio {h / HELP_TARGET:.2f}"
    )
    if args.write_docs:
        sys.path.insert(0, str(REPO / "bench"))
        from results import publish

        runs = {"validate": [validate, validate_cpu], "static": [static, static_cpu], "help": [helps, []]}
        publish(__file__, {"n": args.n, "runs": runs}, args.repeat)


def render(figures: dict) -> str:
    """The table of one run (bench/results.py puts it into docs/benchmarks.md)."""
    from results import spread, table, verdict

    n = figures["n"]
    names = {
        "validate": (f"`mcpgen validate`, {n:,} specs (columns described on DuckDB, the default)", VALIDATE_TARGET),
        "static": (f"`mcpgen validate --static`, {n:,} specs", VALIDATE_TARGET),
        "help": ("`mcpgen --help`", HELP_TARGET),
    }
    rows = []
    for key, (wall, cpu) in figures["runs"].items():
        label, target = names[key]
        rows.append([label, spread(wall, 3, bold=True), spread(cpu, 3), verdict(statistics.median(wall), target)])
    return table(["command", "wall, s", "CPU (user + sys, with workers), s", "target (wall, s)"], rows)


if __name__ == "__main__":
    main()
