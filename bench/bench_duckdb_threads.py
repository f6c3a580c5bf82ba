#!/usr/bin/env python3
"""`threads: auto` against a fixed thread count, on both sides of its line, in one process.

Each case opens DuckDBEngine connections that differ only in `threads` and runs the same query
on each, interleaved call by call, so drift in the machine's load hits every side alike:

  big    a group-by over a 50,000,000-row Parquet file (about 250 MB, made once with DuckDB in
         --data): auto chooses every core there; compared with threads: 1 (the old default).
  small  the 10 largest cities (examples/data/cities.csv loaded into a table): auto chooses 1;
         compared with every core.

Printed: the median per-call time of each side and the median of the per-pair ratios; the target
is auto <= 1.00 x the other side in both cases.

    python bench/bench_duckdb_threads.py [--data DIR] [--n 7]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import duckdb

from mcpgen.engines.duckdb import DuckDBEngine

REPO = Path(__file__).resolve().parent.parent
ROWS = 50_000_000
BIG = "SELECT k, sum(v) AS total, count(*) AS n FROM big GROUP BY k ORDER BY total DESC LIMIT 10"
SMALL = "SELECT name, population FROM cities ORDER BY population DESC LIMIT 10"


def big_file(folder: Path) -> Path:
    path = folder / "big.parquet"
    if not path.exists():
        folder.mkdir(parents=True, exist_ok=True)
        con = duckdb.connect(config={"memory_limit": "1GB"})
        con.execute(
            f"COPY (SELECT (i % 1000)::INTEGER AS k, (i * 2654435761 % 1000003)::BIGINT AS v "
            f"FROM range({ROWS}) t(i)) TO '{path}' (FORMAT parquet, ROW_GROUP_SIZE 1000000)"
        )
        con.close()
    return path


def paired(engines: dict[str, DuckDBEngine], sql: str, n: int) -> dict[str, list[float]]:
    prepared = {label: e.prepare(sql) for label, e in engines.items()}
    times: dict[str, list[float]] = {label: [] for label in engines}
    order = list(engines)
    for label in order:  # warm-up
        engines[label].run(prepared[label], {}, 100, 600)
    for i in range(n):
        for label in order if i % 2 == 0 else order[::-1]:
            started = time.perf_counter()
            engines[label].run(prepared[label], {}, 100, 600)
            times[label].append(time.perf_counter() - started)
    return times


def report(case: str, times: dict[str, list[float]], other: str) -> float:
    ratios = [a / b for a, b in zip(times["auto"], times[other])]
    ratio = statistics.median(ratios)
    medians = ", ".join(f"{label} {statistics.median(t) * 1000:.1f} ms" for label, t in times.items())
    print(
        f"{case}: {medians}; auto / {other}: {ratio:.2f} (median of {len(ratios)} pairs, "
        f"{min(ratios):.2f}-{max(ratios):.2f}); target <= 1.00: {'met' if ratio <= 1.0 else 'NOT met'}"
    )
    return ratio


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=Path(tempfile.gettempdir()) / "mcpgen-bench-threads")
    ap.add_argument("--n", type=int, default=7)
    opts = ap.parse_args()
    source = big_file(opts.data)
    with tempfile.TemporaryDirectory(prefix="mcpgen-threads-") as tmp:
        root = Path(tmp)
        os.link(source, root / "big.parquet") if source.stat().st_dev == root.stat().st_dev else shutil.copy(
            source, root / "big.parquet"
        )
        shutil.copy(REPO / "examples" / "data" / "cities.csv", root / "cities.csv")
        init = ["CREATE VIEW big AS SELECT * FROM read_parquet('big.parquet')"]
        cwd = os.getcwd()
        os.chdir(root)  # DuckDB reads relative paths from the working directory
        try:
            engines = {
                label: DuckDBEngine(label, ":memory:", init, root, t) for label, t in (("auto", "auto"), ("1", 1))
            }
            print(f"big: auto chose {engines['auto'].threads} threads ({os.cpu_count()} cores)")
            report("big (50M-row group-by)", paired(engines, BIG, opts.n), "1")
            for e in engines.values():
                e.close()
            (root / "big.parquet").unlink()
            init = ["CREATE TABLE cities AS SELECT * FROM read_csv('cities.csv')"]
            engines = {
                label: DuckDBEngine(label, ":memory:", init, root, t) for label, t in (("auto", "auto"), ("all", None))
            }
            print(f"small: auto chose {engines['auto'].threads} thread(s)")
            report("small (10 cities)", paired(engines, SMALL, opts.n * 30), "all")
            for e in engines.values():
                e.close()
        finally:
            os.chdir(cwd)


if __name__ == "__main__":
    main()
