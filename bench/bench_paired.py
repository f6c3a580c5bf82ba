#!/usr/bin/env python3
"""Paired stdio benchmark: one official client process holds a session to EACH server (spawned
side by side), and alternates calls A,B,A,B (order flipped every call pair), so both see the same
machine noise at the same moment. Also alternates startups. Prints one JSON line per round.

    python bench/bench_paired.py --spec CONFIG.json --rounds 7 --n 500 [--conc 50] [--list-repeat 20] [--mem-calls 10000]
CONFIG: {"tool": ..., "args": {...}, "variants": {"gen": {"cmd": [...], "cwd": ...}, "hand": {...}}}
(variants may also give their own "tool" / "args")
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import sys
import time

import psutil


def pct(values, p):
    s = sorted(values)
    return s[max(0, min(len(s) - 1, round(p / 100.0 * len(s) + 0.5) - 1))]


def proc_tree_rss(pid):
    try:
        p = psutil.Process(pid)
        procs = [p, *p.children(recursive=True)]
        return round(sum(x.memory_info().rss for x in procs) / 2**20, 1)
    except psutil.Error:
        return None


def proc_cpu(pid):
    try:
        p = psutil.Process(pid)
        t = 0.0
        for x in [p, *p.children(recursive=True)]:
            c = x.cpu_times()
            t += c.user + c.system
        return t
    except psutil.Error:
        return 0.0


class RawDuck:
    """In-process DuckDB pseudo-session: call_tool runs v["sql"] with the arguments (no MCP)."""

    def __init__(self, v):
        import duckdb

        self.con = duckdb.connect(config=v.get("config", {}))
        for stmt in v.get("setup", []):
            self.con.execute(stmt)
        self.sql = v["sql"]

    async def call_tool(self, tool, args):
        cur = self.con.cursor()
        cur.execute(self.sql, args)
        [d[0] for d in cur.description]
        cur.fetchall()
        cur.close()
        return type("R", (), {"is_error": False, "model_dump": lambda self, **k: {}})()

    async def list_tools(self):
        return type("L", (), {"tools": []})()


async def open_session(stack, v):
    if v.get("raw"):
        t0 = time.perf_counter()
        s = RawDuck(v)
        return s, (time.perf_counter() - t0) * 1000, os.getpid()
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    before = {c.pid for c in psutil.Process(os.getpid()).children()}
    params = StdioServerParameters(
        command=v["cmd"][0], args=v["cmd"][1:], env={**os.environ, **v.get("env", {})}, cwd=v.get("cwd")
    )
    t0 = time.perf_counter()
    r, w = await stack.enter_async_context(stdio_client(params, errlog=stack.enter_context(open(os.devnull, "w"))))  # noqa: SIM115
    s = await stack.enter_async_context(ClientSession(r, w))
    await s.initialize()
    startup = (time.perf_counter() - t0) * 1000
    new = [c.pid for c in psutil.Process(os.getpid()).children() if c.pid not in before]
    return s, startup, new[0]


class Round:
    """One round's sessions (one per variant, started in alternating order) and its results."""

    def __init__(self, cfg, o, rnd):
        self.o = o
        self.names = list(cfg["variants"])
        if rnd % 2:
            self.names.reverse()
        self.res = {n: {"variant": n, "round": rnd} for n in self.names}
        self.sess, self.pids = {}, {}
        self.tool = {n: cfg["variants"][n].get("tool", cfg.get("tool")) for n in self.names}
        self.args = {n: cfg["variants"][n].get("args", cfg.get("args", {})) for n in self.names}

    def order(self, i):
        """The variants in turn, reversed every other step so neither always goes first."""
        return self.names if i % 2 == 0 else self.names[::-1]

    async def call(self, n):
        return await self.sess[n].call_tool(self.tool[n], self.args[n])


async def one_round(cfg, o, rnd):
    r = Round(cfg, o, rnd)
    async with contextlib.AsyncExitStack() as stack:
        for n in r.names:  # sequential start-ups, alternating order per round
            s, st, pid = await open_session(stack, cfg["variants"][n])
            r.sess[n], r.pids[n] = s, pid
            r.res[n]["startup_ms"] = round(st, 1)
            r.res[n]["rss_start_mb"] = proc_tree_rss(pid)
        await list_tools_phase(r)
        if o.n == 0:
            for n in r.names:
                r.res[n]["rss_end_mb"] = proc_tree_rss(r.pids[n])
            return list(r.res.values())
        await first_calls_phase(r)
        await sequential_phase(r)
        if o.conc:
            await concurrent_phase(r)
        for n in r.names:
            r.res[n]["rss_after_mb"] = proc_tree_rss(r.pids[n])
        if o.mem_calls:
            await memory_phase(r)
    return list(r.res.values())


async def list_tools_phase(r):
    """tools/list: first (uncached) then repeated, alternating."""
    for n in r.names:
        t = time.perf_counter()
        lt = await r.sess[n].list_tools()
        r.res[n]["list_tools_first_ms"] = round((time.perf_counter() - t) * 1000, 2)
        r.res[n]["n_tools"] = len(lt.tools)
    if r.o.list_repeat:
        lts = {n: [] for n in r.names}
        for i in range(r.o.list_repeat):
            for n in r.order(i):
                t = time.perf_counter()
                await r.sess[n].list_tools()
                lts[n].append((time.perf_counter() - t) * 1000)
        for n in r.names:
            r.res[n]["list_tools_p50_ms"] = round(statistics.median(lts[n]), 2)


async def first_calls_phase(r):
    for n in r.names:
        t = time.perf_counter()
        first = await r.call(n)
        r.res[n]["first_call_ms"] = round((time.perf_counter() - t) * 1000, 2)
        d = first.model_dump(mode="json", by_alias=True, exclude_none=True)
        r.res[n]["isError"] = bool(d.get("isError"))
        if d.get("isError"):
            r.res[n]["error_text"] = d["content"][0].get("text", "")[:200]
        r.res[n]["result_json_bytes"] = len(json.dumps(d, separators=(",", ":"), ensure_ascii=False).encode())
    for _ in range(r.o.warmup):
        for n in r.names:
            await r.call(n)


async def sequential_phase(r):
    """Sequential calls, alternating call by call."""
    o, names = r.o, r.names
    lat = {n: [] for n in names}
    errs = {n: 0 for n in names}
    cpu0 = {n: proc_cpu(r.pids[n]) for n in names}
    busy = {n: 0.0 for n in names}
    for i in range(o.n):
        for n in r.order(i):
            a = time.perf_counter()
            result = await r.call(n)
            dt = time.perf_counter() - a
            lat[n].append(dt * 1000)
            busy[n] += dt
            errs[n] += bool(result.is_error)
    for n in names:
        r.res[n].update(
            seq_p50_ms=round(statistics.median(lat[n]), 3),
            seq_p95_ms=round(pct(lat[n], 95), 3),
            seq_p99_ms=round(pct(lat[n], 99), 3),
            seq_mean_ms=round(statistics.fmean(lat[n]), 3),
            seq_calls_per_s=round(o.n / busy[n], 1),
            seq_errors=errs[n],
            seq_server_cpu_us=round((proc_cpu(r.pids[n]) - cpu0[n]) / o.n * 1e6, 1),
        )
        if o.latencies:
            r.res[n]["seq_latencies_ms"] = [round(x, 4) for x in lat[n]]


async def concurrent_phase(r):
    """Bounded concurrency: o.conc workers per server, servers run one after the other, alternating,
    in o.conc_blocks blocks each."""
    o, names = r.o, r.names
    lat2 = {n: [] for n in names}
    wall = {n: 0.0 for n in names}
    errs2 = {n: 0 for n in names}
    per_block = o.n // o.conc_blocks
    for b in range(o.conc_blocks):
        for n in r.order(b):
            left = [per_block]

            async def worker(n=n, left=left):
                while left[0] > 0:
                    left[0] -= 1
                    a = time.perf_counter()
                    result = await r.call(n)
                    lat2[n].append((time.perf_counter() - a) * 1000)
                    errs2[n] += bool(result.is_error)

            t = time.perf_counter()
            await asyncio.gather(*(worker() for _ in range(o.conc)))
            wall[n] += time.perf_counter() - t
    for n in names:
        r.res[n].update(
            conc_calls_per_s=round(len(lat2[n]) / wall[n], 1),
            conc_p50_ms=round(statistics.median(lat2[n]), 2),
            conc_p99_ms=round(pct(lat2[n], 99), 2),
            conc_errors=errs2[n],
        )


async def memory_phase(r):
    o = r.o
    done = o.n + o.warmup + 1 + (o.n if o.conc else 0)
    while done < o.mem_calls:
        for n in r.names:
            await r.call(n)
        done += 1
    for n in r.names:
        r.res[n]["mem_calls"] = done
        r.res[n]["rss_after_mem_calls_mb"] = proc_tree_rss(r.pids[n])


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--spec", required=True)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--conc", type=int, default=0)
    ap.add_argument("--conc-blocks", type=int, default=4)
    ap.add_argument("--list-repeat", type=int, default=0)
    ap.add_argument("--mem-calls", type=int, default=0)
    ap.add_argument("--out", required=True)
    ap.add_argument("--latencies", action="store_true", help="also record every sequential call's latency")
    o = ap.parse_args()
    with open(o.spec) as f:
        cfg = json.load(f)
    with open(o.out, "a") as f:
        for rnd in range(o.rounds):
            recs = await one_round(cfg, o, rnd)
            for r in recs:
                f.write(json.dumps(r) + "\n")
                print(json.dumps(r), file=sys.stderr, flush=True)
            f.flush()


asyncio.run(main())
