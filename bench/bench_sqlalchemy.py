#!/usr/bin/env python3
"""Per-call overhead of mcpgen's SQLAlchemy engine over plain SQLAlchemy, on PostgreSQL.

Comparisons (each one a pair of callables run in interleaved rounds, so drift in the
machine's load hits both sides alike):

  engine   SQLAlchemyEngine.run (read-only transaction, statement_timeout, streaming
           cursor, max_rows + 1, rollback) vs. the same 10-row query through plain
           SQLAlchemy `text()` with the rows built into a list of tuples by hand.

More comparisons (e.g. a whole tools/call through the in-memory MCP client) are added
by appending to COMPARISONS a function that returns (label, ours, baseline).

Then 20 concurrent calls from threads through one engine; errors must be 0.

Usage:  python bench/bench_sqlalchemy.py [--url URL] [--rounds 15] [--calls 200]
Needs PostgreSQL (default postgresql+psycopg://postgres@127.0.0.1:5432/test). The script
loads examples/data/cities.csv into a table of its own and drops it at the end.
"""
from __future__ import annotations

import argparse
import csv
import secrets
import statistics
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import sqlalchemy as sa

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mcpgen.config import URLConnection  # noqa: E402
from mcpgen.sqlalchemy_engine import SQLAlchemyEngine  # noqa: E402

QUERY = """SELECT name, country_code, population
FROM {table}
WHERE country_code = :country
ORDER BY population DESC
LIMIT :n"""
PARAMS = {"country": "JP", "n": 10}


def load_cities(url: str, table: str) -> None:
    csv_path = ROOT / "examples" / "data" / "cities.csv"
    with open(csv_path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    eng = sa.create_engine(url)
    with eng.begin() as c:
        c.exec_driver_sql(f"CREATE TABLE {table} (geonameid bigint, name text, country_code text, "
                          "admin1_code text, population bigint, latitude double precision, "
                          "longitude double precision, timezone text)")
        c.execute(sa.text(f"INSERT INTO {table} VALUES (:geonameid, :name, :country_code, :admin1_code, "
                          ":population, :latitude, :longitude, :timezone)"),
                  [{**r, "geonameid": int(r["geonameid"]), "population": int(r["population"]),
                    "latitude": float(r["latitude"]), "longitude": float(r["longitude"])} for r in rows])
        # An index, so the database's own work is small and the per-call overhead shows.
        c.exec_driver_sql(f"CREATE INDEX {table}_cc ON {table} (country_code, population DESC)")
        c.exec_driver_sql(f"ANALYZE {table}")
    eng.dispose()


def drop(url: str, table: str) -> None:
    eng = sa.create_engine(url)
    with eng.begin() as c:
        c.exec_driver_sql(f"DROP TABLE IF EXISTS {table}")
    eng.dispose()


def engine_comparison(url: str, table: str):
    ours_engine = SQLAlchemyEngine("bench", URLConnection(url=url))
    prepared = ours_engine.prepare(QUERY.format(table=table), types={"country": "string", "n": "integer"})
    plain_engine = sa.create_engine(url)
    plain_sql = sa.text(QUERY.format(table=table))

    def ours():
        result = ours_engine.run(prepared, PARAMS, max_rows=1000, timeout=30)
        assert len(result.rows) == 10
        return result

    def baseline():
        with plain_engine.connect() as c:
            r = c.execute(plain_sql, PARAMS)
            columns = list(r.keys())
            rows = [tuple(row) for row in r.fetchall()]
        assert len(rows) == 10
        return columns, rows

    assert ours().rows == baseline()[1], "both sides must return the same rows"

    def cleanup():
        ours_engine.close()
        plain_engine.dispose()

    return "SQLAlchemyEngine.run vs plain text()", ours, baseline, cleanup


COMPARISONS = [engine_comparison]


def per_call_us(fn, calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - start) / calls * 1e6


def compare(label, ours, baseline, rounds: int, calls: int) -> float:
    for _ in range(max(20, calls // 10)):  # warm up: pools, prepared statements, caches
        ours()
        baseline()
    ours_t, base_t = [], []
    for i in range(rounds):
        pair = [(ours, ours_t), (baseline, base_t)]
        for fn, into in (pair if i % 2 == 0 else pair[::-1]):
            into.append(per_call_us(fn, calls))
    o, b = statistics.median(ours_t), statistics.median(base_t)
    pairs = sorted(x / y for x, y in zip(ours_t, base_t))
    print(f"{label}: ours {o:.0f} us/call, baseline {b:.0f} us/call, ratio {o / b:.2f}x "
          f"(median of {rounds} interleaved rounds of {calls} calls; per-round ratios "
          f"{pairs[0]:.2f}..{pairs[-1]:.2f})")
    return o / b


def concurrent(url: str, table: str, n: int = 20) -> int:
    engine = SQLAlchemyEngine("bench", URLConnection(url=url))
    prepared = engine.prepare(QUERY.format(table=table) + " OFFSET 0", types={"country": "string", "n": "integer"})
    errors: list[BaseException] = []
    lock = threading.Lock()
    barrier = threading.Barrier(n)

    def call(_):
        barrier.wait()
        try:
            engine.run(prepared, PARAMS, max_rows=1000, timeout=30)
        except Exception as exc:  # counted, not raised
            with lock:
                errors.append(exc)

    start = time.perf_counter()
    with ThreadPoolExecutor(n) as pool:
        list(pool.map(call, range(n)))
    wall = (time.perf_counter() - start) * 1e3
    engine.close()
    print(f"{n} concurrent calls: {wall:.1f} ms wall, errors {len(errors)}"
          + (f" (first: {errors[0]})" if errors else ""))
    return len(errors)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", default="postgresql+psycopg://postgres@127.0.0.1:5432/test")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--calls", type=int, default=200)
    args = ap.parse_args()
    table = f"mcpgen_bench_cities_{secrets.token_hex(4)}"
    load_cities(args.url, table)
    try:
        for make in COMPARISONS:
            label, ours, baseline, cleanup = make(args.url, table)
            try:
                compare(label, ours, baseline, args.rounds, args.calls)
            finally:
                cleanup()
        errors = concurrent(args.url, table)
    finally:
        drop(args.url, table)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
