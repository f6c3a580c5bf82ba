#!/usr/bin/env python3
"""`threads: auto` (the default: DuckDB's own, every core) against `threads: 1`, in one process.

Each case opens DuckDBEngine connections that differ only in `threads` and runs the same query
on each, interleaved call by call, so drift in the machine's load hits every side alike:

  big    a group-by over a 50,000,000-row Parquet file (about 250 MB, made once with DuckDB in
         --data); target: auto <= 1.00 x threads: 1.
  small  the 10 largest cities (examples/data/cities.csv loaded into a table), no target: called
         back to back in one thread, one DuckDB thread may win here; served, calls arrive one by
         one and every core answers sooner once other processes want the CPU, which
         `bench/bench_vs_handwritten.py --cases 10 --busy 2` measures.

Printed: the median per-call time of each side and the median of the per-pair ratios.

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


def both(init: list[str], root: Path, sql: str, n: int) -> dict[str, list[float]]:
    """`sql` on `threads: auto` and on `threads: 1`, paired."""
    engines = {label: DuckDBEngine(label, ":memory:", init, root, t) for label, t in (("auto", "auto"), ("1", 1))}
    try:
        return paired(engines, sql, n)
    finally:
        for engine in engines.values():
            engine.close()


def report(case: str, times: dict[str, list[float]], target: float | None) -> float:
    ratios = [a / b for a, b in zip(times["auto"], times["1"])]
    ratio = statistics.median(ratios)
    medians = ", ".join(f"{label} {statistics.median(t) * 1000:.1f} ms" for label, t in times.items())
    verdict = "" if target is None else f"; target <= {target:.2f}: {'met' if ratio <= target else 'NOT met'}"
    print(
        f"{case}: {medians}; auto / 1: {ratio:.2f} (median of {len(ratios)} pairs, "
        f"{min(ratios):.2f}-{max(ratios):.2f}){verdict}"
    )
    return ratio


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=Path(tempfile.gettempdir()) / "mcpgen-bench-threads")
    ap.add_argument("--n", type=int, default=7, help="pairs of calls per case (x30 for the small one)")
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
            print(f"auto: every core ({os.cpu_count()})")
            report("big (50M-row group-by)", both(init, root, BIG, opts.n), 1.0)
            (root / "big.parquet").unlink()
            init = ["CREATE TABLE cities AS SELECT * FROM read_csv('cities.csv')"]
            report("small (10 cities, in process)", both(init, root, SMALL, opts.n * 30), None)
        finally:
            os.chdir(cwd)


if __name__ == "__main__":
    main()
