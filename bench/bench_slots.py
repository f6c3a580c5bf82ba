#!/usr/bin/env python3
"""Waiting for a busy connection: FairSlots in a worker thread against an anyio.CapacityLimiter.

Today a DuckDB call takes a worker thread first and then waits in the engine for one of
`max_concurrent` slots (`FairSlots`, first come first served), so the server keeps 100
worker threads. The alternative waits in the event loop on a per-engine
`anyio.CapacityLimiter` (FIFO waiters) and takes a thread only once it may run.

Both sides run the same DuckDB engine and query: 50 calls at once on a connection that
runs 3 at a time, interleaved for several rounds; printed are the medians of the batch's
wall time (calls/s), the p50 and max call latency (max: the longest any caller waited),
and the ratios limiter / slots.

    python bench/bench_slots.py [--rounds 9] [--calls 50] [--slots 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import anyio
import anyio.to_thread

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from mcpgen.engines.duckdb import DuckDBEngine
from mcpgen.serve.server import ToolServer

QUERIES = {
    "tiny (SELECT :n)": "SELECT :n AS n",
    "5 ms scan": "SELECT count(*) FROM range(:n * 0 + 3000000) t(x) WHERE x % 7 = 0",
}
QUEUE_TIMEOUT = 30.0


async def with_slots(engine, query, params):
    """Today: a worker thread per call, which waits in FairSlots inside `engine.run`."""
    return await anyio.to_thread.run_sync(engine.run, query, params, 100, 10.0)


def make_with_limiter(engine, slots):
    limiter = anyio.CapacityLimiter(slots)

    async def with_limiter(_engine, query, params):
        """The candidate: wait in the event loop, then run without the engine's own slots."""
        with anyio.move_on_after(QUEUE_TIMEOUT) as waited:
            await limiter.acquire()
        if waited.cancelled_caught:
            raise RuntimeError("busy")
        try:
            return await anyio.to_thread.run_sync(engine._run, query, params, 100, 10.0)
        finally:
            limiter.release()

    return with_limiter


async def batch(call, engine, query, calls: int) -> tuple[float, list[float]]:
    latencies: list[float] = []

    async def one(i: int) -> None:
        start = time.perf_counter()
        await call(engine, query, {"n": i})
        latencies.append(time.perf_counter() - start)

    start = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for i in range(calls):
            tg.start_soon(one, i)
    return time.perf_counter() - start, sorted(latencies)


async def main(rounds: int, calls: int, slots: int) -> None:
    ToolServer.raise_thread_limit()  # as `mcpgen serve` does: 100 worker threads
    engine = DuckDBEngine("bench", ":memory:", [], ".", threads=1, max_concurrent=slots, queue_timeout=QUEUE_TIMEOUT)
    sides = {"slots": with_slots, "limiter": make_with_limiter(engine, slots)}
    print(f"{calls} concurrent calls, {slots} at a time, median of {rounds} interleaved rounds")
    print(f"{'query':<18} {'side':<8} {'calls/s':>8} {'p50 ms':>8} {'max ms':>8}")
    for label, sql in QUERIES.items():
        query = engine.prepare(sql)
        for side in sides.values():  # warm up
            await batch(side, engine, query, calls)
        figures: dict[str, list[tuple[float, float, float]]] = {k: [] for k in sides}
        for r in range(rounds):
            order = list(sides) if r % 2 == 0 else list(reversed(sides))
            for name in order:
                wall, lat = await batch(sides[name], engine, query, calls)
                figures[name].append((calls / wall, lat[len(lat) // 2] * 1000, lat[-1] * 1000))
        medians = {k: [statistics.median(f[i] for f in v) for i in range(3)] for k, v in figures.items()}
        for name, (rate, p50, top) in medians.items():
            print(f"{label:<18} {name:<8} {rate:8.0f} {p50:8.2f} {top:8.2f}")
        s, lim = medians["slots"], medians["limiter"]
        print(
            f"{label:<18} {'ratio':<8} {lim[0] / s[0]:8.2f} {lim[1] / s[1]:8.2f} {lim[2] / s[2]:8.2f}"
            "   (limiter / slots; calls/s: higher is better)"
        )
    engine.close()


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--calls", type=int, default=50)
    ap.add_argument("--slots", type=int, default=3)
    opts = ap.parse_args()
    anyio.run(main, opts.rounds, opts.calls, opts.slots)
