#!/usr/bin/env python3
"""DuckDB settings for a tool server, measured side by side in one process.

Two questions, each answered by interleaving the two sides query by query:

1. `threads`: one thread per query (`threads: 1`, queries still run in parallel with
   each other) against DuckDB's default (all cores inside each query), for small
   queries (10 and 1,000 cities) and a scan of the 336,776-row flights table.
2. Parquet: the flights file scanned through a view on every call, against loaded into
   a table at start-up.

    python bench/bench_duckdb.py [--n 200]
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
from pathlib import Path

import duckdb

DATA = Path(__file__).resolve().parent.parent / "examples" / "data"
TOP_CITIES = "SELECT name AS city, country_code, population FROM cities ORDER BY population DESC LIMIT $n"
ROUTES = (
    "SELECT origin, dest, count(*) AS flights FROM {flights} WHERE origin = 'JFK' "
    "GROUP BY ALL ORDER BY flights DESC LIMIT 5"
)


def connect(threads: int | None) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect(config={} if threads is None else {"threads": threads})
    con.execute(f"CREATE TABLE cities AS SELECT * FROM read_csv('{DATA / 'cities.csv'}')")
    con.execute(f"CREATE VIEW flights_view AS SELECT * FROM read_parquet('{DATA / 'flights.parquet'}')")
    con.execute(f"CREATE TABLE flights_table AS SELECT * FROM read_parquet('{DATA / 'flights.parquet'}')")
    return con


def once(con: duckdb.DuckDBPyConnection, sql: str, params: dict) -> float:
    start = time.perf_counter()
    cur = con.cursor()
    cur.execute(sql, params)
    cur.fetchall()
    cur.close()
    return time.perf_counter() - start


def paired(sides: dict[str, tuple], n: int) -> dict[str, float]:
    """p50 in ms of each side's (connection, sql, params), alternating A,B / B,A."""
    times: dict[str, list[float]] = {name: [] for name in sides}
    names = list(sides)
    for i in range(n):
        for name in names if i % 2 == 0 else reversed(names):
            times[name].append(once(*sides[name]))
    return {name: statistics.median(t) * 1000 for name, t in times.items()}


def concurrent(con: duckdb.DuckDBPyConnection, sql: str, params: dict, threads: int, calls: int) -> float:
    """Calls per second with `threads` Python threads sharing the connection (as mcpgen's workers do)."""
    left = [calls]
    lock = threading.Lock()

    def work() -> None:
        while True:
            with lock:
                if left[0] <= 0:
                    return
                left[0] -= 1
            once(con, sql, params)

    start = time.perf_counter()
    workers = [threading.Thread(target=work) for _ in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return calls / (time.perf_counter() - start)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=200)
    opts = ap.parse_args()
    one, default = connect(1), connect(None)
    threads = default.execute("SELECT current_setting('threads')").fetchone()[0]
    print(f"DuckDB {duckdb.__version__}; default threads: {threads}")
    cases = {
        "10 cities": (TOP_CITIES, {"n": 10}),
        "1,000 cities": (TOP_CITIES, {"n": 1000}),
        "flights routes (table)": (ROUTES.format(flights="flights_table"), {}),
        "flights routes (parquet)": (ROUTES.format(flights="flights_view"), {}),
    }
    for label, (sql, params) in cases.items():
        p50 = paired({"threads=1": (one, sql, params), "default": (default, sql, params)}, opts.n)
        ratio = p50["threads=1"] / p50["default"]
        print(
            f"{label:24s} p50 threads=1 {p50['threads=1']:7.3f} ms | default {p50['default']:7.3f} ms | ratio {ratio:.2f}"
        )
        rates = {}
        for name, con in (("threads=1", one), ("default", default)):
            rates[name] = concurrent(con, sql, params, 8, opts.n)
        print(f"{'':24s} 8 callers: threads=1 {rates['threads=1']:7.1f}/s | default {rates['default']:7.1f}/s")
    view, table = ROUTES.format(flights="flights_view"), ROUTES.format(flights="flights_table")
    p50 = paired({"view": (default, view, {}), "table": (default, table, {})}, opts.n)
    print(
        f"{'flights: parquet view':24s} p50 {p50['view']:7.3f} ms | loaded table {p50['table']:7.3f} ms | ratio table/view {p50['table'] / p50['view']:.2f}"
    )


if __name__ == "__main__":
    main()
