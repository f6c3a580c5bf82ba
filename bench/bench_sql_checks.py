#!/usr/bin/env python3
"""What the SQL-side safety checks cost a call: this tree against a git revision, paired, over stdio.

The checks: the engine's lexing rules before the read-only check (mcpgen/sql/lexing.py), DuckDB
functions decided from its catalogue, the PostgreSQL role's powers asked on first connection, and
answers cut to max_bytes by their real bytes. The first three run when a query is prepared (once
per tool and connection, at its first call or at start) and not again per call: what a call pays
each time is the answer's size caps and a look at the role's known verdict.

Per call: `mcpgen serve` of bench/project (a temporary copy) with a DuckDB connection and, when
PostgreSQL is reachable at `--url`, a `pg` connection to the same cities, read as a reader role
made here (docs/security.md's statements; mcpgen refuses a superuser). Each round starts both
servers, this tree's and REV's (exported to a temporary folder), one official client holding a
session to each, and alternates the same tools/call A,B / B,A; printed per case: the median
[range] over rounds of the p50 latency ratio and of the server CPU per call ratio, new / old.

Once per query: the same spec's SQL prepared in process on each tree (check, lexing, catalogue
functions, translation), CPU time, best of many repeats, on a fresh DuckDB engine and again.

    python bench/bench_sql_checks.py --baseline REV [--rounds 5] [--calls 200] [--url URL]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import secrets
import statistics
import subprocess
import sys
from pathlib import Path

import psutil
import sqlalchemy as sa
from bench_core import bench_project, exported, serve_from
from bench_sqlalchemy import create_reader, drop, drop_reader, load_cities
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
PG_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/test"
SQL = "SELECT name AS city, country_code, population FROM {table} ORDER BY population DESC LIMIT :n"
# (label, tool, arguments): 10 rows, and 1,000 rows where the caps measure a big answer
CASES = [("10 rows", "top_cities", {"n": 10}), ("1,000 rows", "top_cities", {"n": 1000})]


def server_cpu(pid: int) -> float:
    """CPU seconds (user + system) of a server process and its children."""
    proc = psutil.Process(pid)
    return sum(sum(p.cpu_times()[:2]) for p in (proc, *proc.children(recursive=True)))


def add_postgres(project: Path, admin_url: str) -> tuple[str, str] | None:
    """The cities in a PostgreSQL table of their own, a reader role, and a `pg` connection and spec
    in the project; (table, role), or None (and a sentence) when PostgreSQL is not reachable."""
    try:
        with contextlib.closing(sa.create_engine(admin_url, connect_args={"connect_timeout": 5}).connect()):
            pass
    except sa.exc.SQLAlchemyError as exc:
        print(f"PostgreSQL is not reachable at --url ({type(exc.orig or exc).__name__}): its cases are skipped.")
        return None
    table = f"mcpgen_bench_cities_{secrets.token_hex(4)}"
    load_cities(admin_url, table)
    role, url = create_reader(admin_url, table)
    config = project / "mcpgen.yaml"
    config.write_text(config.read_text() + f"  pg:\n    url: {json.dumps(url)}\n", encoding="utf-8")
    spec = (project / "specs/top_cities.yaml").read_text()
    sql = SQL.format(table="cities").replace(" ORDER", "\n  ORDER")
    spec = spec.replace(sql, SQL.format(table=table)).replace("name: top_cities", "name: top_cities_pg")
    assert table in spec, "bench/project/specs/top_cities.yaml no longer holds the query this script rewrites"
    (project / "specs/top_cities_pg.yaml").write_text(spec + "connection: pg\n", encoding="utf-8")
    return table, role


async def one_round(commands: dict[str, list[str]], cases: list, calls: int, flip: bool) -> dict[str, dict[str, float]]:
    """Both servers started, every case called `calls` times on each, alternating; per case the
    p50 ratio and the server CPU-per-call ratio, new / old."""
    names = list(commands)[::-1] if flip else list(commands)
    async with contextlib.AsyncExitStack() as stack:
        sessions, pids = {}, {}
        for name in names:
            before = {c.pid for c in psutil.Process().children()}
            params = StdioServerParameters(command=commands[name][0], args=commands[name][1:], env=dict(os.environ))
            devnull = stack.enter_context(open(os.devnull, "w"))  # noqa: SIM115 (closed by the stack)
            read, write = await stack.enter_async_context(stdio_client(params, errlog=devnull))
            sessions[name] = await stack.enter_async_context(ClientSession(read, write))
            await asyncio.wait_for(sessions[name].initialize(), 120)
            pids[name] = next(c.pid for c in psutil.Process().children() if c.pid not in before)
        out = {}
        for label, tool, args in cases:
            lat: dict[str, list[float]] = {name: [] for name in names}
            for name in names:  # the first call prepares the query; a few more warm up
                for _ in range(5):
                    await call(sessions[name], tool, args, [])
            cpu = {name: server_cpu(pids[name]) for name in names}
            for i in range(calls):
                for name in names if i % 2 == 0 else names[::-1]:
                    await call(sessions[name], tool, args, lat[name])
            cpu = {name: (server_cpu(pids[name]) - cpu[name]) / calls for name in names}
            p50 = {name: statistics.median(lat[name]) for name in names}
            out[label] = {
                "p50": p50["new"] / p50["old"],
                "cpu": cpu["new"] / cpu["old"],
                "p50 new ms": p50["new"] * 1000,
                "cpu new us": cpu["new"] * 1e6,
            }
    return out


async def call(session: ClientSession, tool: str, args: dict, into: list[float]) -> None:
    loop = asyncio.get_running_loop()
    started = loop.time()
    result = await asyncio.wait_for(session.call_tool(tool, args), 60)
    into.append(loop.time() - started)
    if result.is_error:
        raise SystemExit(f"{tool} failed: {result.content[0].text}")


PREPARE = """
import itertools, json, time, timeit
from mcpgen.engines.factory import create_engine
from mcpgen.spec.config import DuckDBConnection, URLConnection

init, numbers = ["CREATE TABLE cities (name text, country_code text, population bigint)"], itertools.count()
texts = ({sql!r}.replace("AS city", f"AS city_{{i}}") for i in numbers)  # a new text each time: no check's cache
out = {{}}

def fresh():
    engine = create_engine("d", DuckDBConnection(duckdb=":memory:", init=init), root=".")
    sql = next(texts)
    started = time.process_time()
    engine.prepare(sql, {{"n": "integer"}})
    spent = time.process_time() - started
    engine.close()
    return spent

def best(engine):
    prepare = lambda: engine.prepare(next(texts), {{"n": "integer"}})
    prepare()
    return min(timeit.Timer(prepare, timer=time.process_time).repeat(20, 30)) / 30 * 1e6

out["DuckDB, first query of a connection"] = min(fresh() for _ in range(10)) * 1e6
out["DuckDB, a further query"] = best(create_engine("d", DuckDBConnection(duckdb=":memory:", init=init), root="."))
pg = create_engine("p", URLConnection(url="postgresql+psycopg://u@127.0.0.1:1/x"), root=".")
out["PostgreSQL (checks, translation)"] = best(pg)  # nothing connects
print(json.dumps(out))
"""


def prepare_cost(tree: Path) -> dict[str, float]:
    """Microseconds of CPU to prepare the spec's query, in a process importing mcpgen from `tree`."""
    code = PREPARE.format(sql=SQL.format(table="cities"))
    env = {**os.environ, "PYTHONPATH": str(tree)}
    run = [sys.executable, "-P", "-c", code]  # -P: `-c` would import from the working folder first
    return json.loads(subprocess.run(run, env=env, capture_output=True, text=True, check=True, timeout=300).stdout)


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.3f} [{min(values):.3f}-{max(values):.3f}]"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline", metavar="REV", required=True, help="the git revision to compare with")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--calls", type=int, default=200, help="calls per case, per server, per round")
    ap.add_argument("--url", default=PG_URL, help="PostgreSQL, as a role that may create a table and a role")
    opts = ap.parse_args()
    with contextlib.ExitStack() as stack:
        base = stack.enter_context(exported(opts.baseline))
        project = stack.enter_context(bench_project())
        cases = list(CASES)
        made = add_postgres(project, opts.url)
        if made:
            stack.callback(drop, opts.url, made[0])
            stack.callback(drop_reader, opts.url, made[1])
            cases += [(f"PostgreSQL, {label}", "top_cities_pg", args) for label, _, args in CASES]
        commands = {"new": serve_from(REPO, project), "old": serve_from(base, project)}
        rounds = [asyncio.run(one_round(commands, cases, opts.calls, r % 2 == 1)) for r in range(opts.rounds)]
        costs = {"new": [], "old": []}
        for r in range(3):
            for name, tree in (("new", REPO), ("old", base)) if r % 2 == 0 else (("old", base), ("new", REPO)):
                costs[name].append(prepare_cost(tree))
    load = " / ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"this tree (new) against {opts.baseline} (old): {opts.rounds} rounds of {opts.calls} calls per case")
    print(f"load average {load} (1/5/15 min) after the runs")
    print(f"{'per call':22} {'p50 ratio new/old':>26} {'server CPU/call new/old':>26} {'new p50':>9} {'new CPU':>9}")
    for label, _, _ in cases:
        figures = [r[label] for r in rounds]
        print(
            f"{label:22} {spread([f['p50'] for f in figures]):>26} {spread([f['cpu'] for f in figures]):>26} "
            f"{statistics.median(f['p50 new ms'] for f in figures):7.2f}ms "
            f"{statistics.median(f['cpu new us'] for f in figures):7.0f}us"
        )
    print(f"{'once per query (CPU)':40} {'new':>10} {'old':>10} {'ratio':>7}")
    for key in costs["new"][0]:
        new, old = (statistics.median(c[key] for c in costs[name]) for name in ("new", "old"))
        print(f"{key:40} {new:8.0f}us {old:8.0f}us {new / old:7.2f}")


if __name__ == "__main__":
    main()
