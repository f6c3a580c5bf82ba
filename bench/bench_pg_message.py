#!/usr/bin/env python3
"""What a PostgreSQL call's one message costs, in process: CPU and wall a call, paired by rounds.

Sides, each timed in turn in every round (the order rotating), over one 10-row query:

  hand       the query on one psycopg connection, autocommit (`cursor.execute`, `fetchall`): the baseline
  engine     mcpgen's `SQLAlchemyEngine.run` (pool, cutoff, the call's transaction in one message)
  stubbed    the same `run` with the database answered from memory: mcpgen's engine around the driver
  alone      the call's one message (`_pg_pipelined`) on a connection held open: the transaction alone
  raw query  libpq's pipeline mode by hand: the query alone, prepared, one Sync
  raw five   the same with BEGIN READ ONLY, the time limit, ROLLBACK and the advisory unlock around
             it, unnamed (parsed and planned by the server each time)
  raw named  the same five, the four around the query prepared once

Prints each side's median CPU and wall (us a call) and its ratio to `hand` per round: median
[range], the rounds and the load average.

Usage:  python bench/bench_pg_message.py [--url URL] [--rounds 9] [--calls 300]
        python bench/bench_pg_message.py --instructions [--calls 300]   # under valgrind's callgrind
With --instructions, each of hand, engine, stubbed, alone and raw named runs in a process of its
own under callgrind, switched on for its `--calls` calls only: instructions a call (user space,
every thread), repeatable on a loaded machine where times are not.
Needs PostgreSQL (default postgresql+psycopg://postgres@127.0.0.1:5432/test).
"""

from __future__ import annotations

import argparse
import os
import select
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import psycopg  # noqa: E402
from psycopg import pq  # noqa: E402
from results import ratios, spread  # noqa: E402

from mcpgen.engines.sqlalchemy import backends  # noqa: E402
from mcpgen.engines.sqlalchemy.engine import SQLAlchemyEngine  # noqa: E402
from mcpgen.spec.config import URLConnection  # noqa: E402

QUERY = "SELECT x, 'a' || x AS y FROM generate_series(1, 10) x WHERE x < {}"
AROUND = {b"b": b"BEGIN READ ONLY", b"r": b"ROLLBACK", b"u": b"SELECT pg_advisory_unlock_all()"}
AROUND[b"t"] = b"SELECT set_config('statement_timeout', $1, true)"


def raw_sides(dsn: str):
    """The three raw libpq sides, on a connection of their own."""
    conn = psycopg.connect(dsn, autocommit=True)
    pgconn = conn.pgconn
    pgconn.prepare(b"q", QUERY.format("$1").encode())
    for name, sql in AROUND.items():
        pgconn.prepare(name, sql)
    query = (lambda: pgconn.send_query_prepared(b"q", [b"11"]),)
    unnamed = [lambda sql=sql: pgconn.send_query_params(sql, None) for sql in (b"BEGIN READ ONLY", b"ROLLBACK")]
    unnamed.insert(1, lambda: pgconn.send_query_params(b"SET LOCAL statement_timeout = 5000", None))
    unnamed.append(lambda: pgconn.send_query_params(AROUND[b"u"], None))
    named = [lambda n=n: pgconn.send_query_prepared(n, None) for n in (b"b", b"r", b"u")]
    named.insert(1, lambda: pgconn.send_query_prepared(b"t", [b"5000"]))

    def message(sends):
        def one():
            pgconn.enter_pipeline_mode()
            for send in sends:
                send()
            pgconn.pipeline_sync()
            while pgconn.flush():
                select.select([], [pgconn.socket], [], 5)
            while True:
                while pgconn.is_busy():
                    select.select([pgconn.socket], [], [], 5)
                    pgconn.consume_input()
                result = pgconn.get_result()
                if result is not None and result.status == pq.ExecStatus.PIPELINE_SYNC:
                    break
            pgconn.exit_pipeline_mode()

        return one

    five = [*unnamed[:2], *query, *unnamed[2:]]
    five_named = [*named[:2], *query, *named[2:]]
    return {"raw query": message(query), "raw five": message(five), "raw named": message(five_named)}, conn.close


def build_sides(url: str):
    """The sides by name, and what closes them."""
    dsn = url.replace("postgresql+psycopg://", "postgresql://")
    hand = psycopg.connect(dsn, autocommit=True)
    engine = SQLAlchemyEngine("bench", URLConnection(url=url, privileged_role="warn"))
    prepared = engine.prepare(QUERY.format(":n"), types={"n": "integer"})
    rows = engine.run(prepared, {"n": 11}, 100, 5)
    held = engine._engine.connect()
    wrapped = f"SELECT * FROM (\n{QUERY.format('$1')}\n) AS mcpgen_q LIMIT 101"
    backend = type(engine.backend)
    fetch = backend.fetch

    def from_memory(self, conn, clause, values, fetch, timeout):
        conn.info.pop(backends._OPENING, None)
        conn.info[backends._ENDED] = True
        return rows.columns, rows.rows

    def stubbed():
        backend.fetch = from_memory
        try:
            engine.run(prepared, {"n": 11}, 100, 5)
        finally:
            backend.fetch = fetch

    def hand_call():
        with hand.cursor() as cursor:
            cursor.execute(QUERY.format("%(n)s"), {"n": 11})
            cursor.fetchall()

    def alone():
        held.info[backends._OPENING] = ("5000", 5.0)
        backends._pg_pipelined(held, held.info.pop(backends._OPENING), wrapped, (11,))

    raw, close_raw = raw_sides(dsn)
    sides = {
        "hand": hand_call,
        "engine": lambda: engine.run(prepared, {"n": 11}, 100, 5),
        "stubbed": stubbed,
        "alone": alone,
        **raw,
    }

    def close():
        held.close()
        engine.close()
        hand.close()
        close_raw()

    return sides, close


def count_side(url: str, side: str, calls: int) -> int:
    """Under callgrind (started by `instructions`): warm the side up, say so, run it `calls` times
    between two lines read from stdin (collection is switched on and off meanwhile)."""
    sides, close = build_sides(url)
    try:
        for _ in range(100):
            sides[side]()
        print("ready", flush=True)
        sys.stdin.readline()
        for _ in range(calls):
            sides[side]()
        print("done", flush=True)
        sys.stdin.readline()
    finally:
        close()
    return 0


def instructions(url: str, calls: int) -> None:
    """Instructions a call of each side, counted by valgrind's callgrind (user space, every thread):
    repeatable whatever the load, unlike a time."""
    with tempfile.TemporaryDirectory() as tmp:
        counts = {}
        for side in ("hand", "engine", "stubbed", "alone", "raw named"):
            out = Path(tmp) / f"callgrind.{len(counts)}"
            command = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}"]
            command += [sys.executable, __file__, "--url", url, "--count-side", side, "--calls", str(calls)]
            env = {**os.environ, "PYTHONHASHSEED": "0"}
            with subprocess.Popen(
                command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env
            ) as child:
                assert child.stdin is not None and child.stdout is not None
                for state in ("on", "off"):
                    if child.stdout.readline().strip() not in ("ready", "done"):
                        raise SystemExit(f"{side}: the side under callgrind failed")
                    subprocess.run(
                        ["callgrind_control", "-i", state, str(child.pid)], check=True, capture_output=True, timeout=600
                    )
                    child.stdin.write("\n")
                    child.stdin.flush()
                child.wait(600)
            totals = [line for line in out.read_text().splitlines() if line.startswith("totals:")]
            counts[side] = int(totals[0].split()[1]) / calls
            print(f"{side:10} {counts[side]:9,.0f} instructions a call", flush=True)
        print(f"engine / hand {counts['engine'] / counts['hand']:.2f}; {calls} calls a side under callgrind")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", default="postgresql+psycopg://postgres@127.0.0.1:5432/test")
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--calls", type=int, default=300, help="calls of each side a round")
    ap.add_argument("--instructions", action="store_true", help="count instructions a call under callgrind instead")
    ap.add_argument("--count-side", help=argparse.SUPPRESS)  # a side under callgrind (see `instructions`)
    args = ap.parse_args()
    if args.count_side:
        return count_side(args.url, args.count_side, args.calls)
    if args.instructions:
        instructions(args.url, args.calls)
        return 0
    sides, close = build_sides(args.url)
    try:
        for side in sides.values():
            for _ in range(args.calls):
                side()
        cpu: dict[str, list[float]] = {k: [] for k in sides}
        wall: dict[str, list[float]] = {k: [] for k in sides}
        names = list(sides)
        for i in range(args.rounds):
            for name in names[i % len(names) :] + names[: i % len(names)]:
                side, c, w = sides[name], time.process_time(), time.perf_counter()
                for _ in range(args.calls):
                    side()
                cpu[name].append((time.process_time() - c) / args.calls * 1e6)
                wall[name].append((time.perf_counter() - w) / args.calls * 1e6)
    finally:
        close()
    for name in sides:
        print(
            f"{name:10} CPU {statistics.median(cpu[name]):6.1f} us, ratio to hand {spread(ratios(cpu[name], cpu['hand']))}; "
            f"wall {statistics.median(wall[name]):6.1f} us, ratio {spread(ratios(wall[name], wall['hand']))}"
        )
    print(
        f"raw five / raw query, wall: {spread(ratios(wall['raw five'], wall['raw query']))}; "
        f"raw named / raw query: {spread(ratios(wall['raw named'], wall['raw query']))}"
    )
    print(f"{args.rounds} rounds of {args.calls} calls a side; load {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
