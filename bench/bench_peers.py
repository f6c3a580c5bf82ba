#!/usr/bin/env python3
"""Peers, paired over streamable HTTP: mcpgen against MCP Toolbox and MXCP, the same query on the same data.

The same query on the same data: examples/data/cities.csv is loaded into a PostgreSQL table of
this run's own (127.0.0.1:5432, database `test`, dropped at the end), a Toolbox `tools.yaml` and a
mcpgen project each define `top_cities` as that table's n most populated cities, and both servers
run on 127.0.0.1 (`toolbox` and `mcpgen serve --http`, each with its default settings). One
official `mcp` client holds a session to each and alternates calls (A, B, then B, A), so both
see the same machine noise at the same moment. Each round prints both p50s, the median of the
ratio of neighbouring calls (mcpgen over the peer), and each server's CPU time per call
(psutil); the last line gives the median [range] over the rounds. Both answers must hold the
same rows, or the run stops.

The Toolbox binary ships in an npm package, pinned in bench/peers/package-lock.json. The first
run installs it with `npm ci` into bench/.peers/ (ignored), or do it yourself beforehand:

    mkdir -p bench/.peers/toolbox && cp bench/peers/package*.json bench/.peers/toolbox/
    (cd bench/.peers/toolbox && npm ci --no-audit --no-fund)
    python bench/bench_peers.py                  # 5 rounds of 200 call pairs, 10 rows
    python bench/bench_peers.py --rounds 3 --calls 500 --n 100

MXCP (pinned below) serves DuckDB, so it is paired with mcpgen on DuckDB: the same CSV loaded into
a table (a DuckDB file for MXCP, `bench/project` for mcpgen), the same query. It is installed on
first use with pip into a virtual environment of its own, bench/.peers/mxcp-venv; when it cannot
be installed or run, the run says why in one sentence and goes on without it. Its analytics are
turned off (MXCP_DISABLE_ANALYTICS): they would try to reach the network on every start.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import psutil
from bench_core import bench_project  # bench/project with its data copied in
from bench_http import client, cpu_seconds, start, stop  # the HTTP benchmark beside this file
from bench_http_load import free_port
from results import add_write_docs

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
PEERS = HERE / ".peers"  # ignored: installed peers live here
TOOLBOX_PIN = HERE / "peers"  # package.json + package-lock.json
TOOLBOX_BIN = PEERS / "toolbox/node_modules/@toolbox-sdk/server-linux-x64/bin/toolbox"
# dbt-core 1.11 and later need a wheel downloaded while building: 1.10 installs from the registry.
MXCP_PINS = ["mxcp==0.12.3", "dbt-core==1.10.23"]
MXCP_VENV = PEERS / "mxcp-venv"
MXCP_TOOL = """\
mxcp: 1
tool:
  name: top_cities
  description: {description}
  parameters:
    - name: n
      type: integer
      description: How many cities
      default: 10
  return:
    type: array
    items:
      type: object
      properties:
        city: {{type: string}}
        country_code: {{type: string}}
        population: {{type: integer}}
  source:
    code: {sql}
"""
PG = {"host": "127.0.0.1", "port": 5432, "dbname": "test", "user": "postgres"}
QUERY = "SELECT name AS city, country_code, population FROM {table} ORDER BY population DESC LIMIT {n}"
DESCRIPTION = "The n most populated cities in the world."

MCPGEN_SPEC = """\
name: top_cities
description: {description}
parameters:
  n:
    type: integer
    description: How many cities
    minimum: 1
    maximum: 1000
    default: 10
sql: |
  {sql}
sources:
  - https://www.geonames.org/
content: >-
  The {{{{ rows | length }}}} most populated cities are
  {{% for r in rows %}}{{{{ r.city }}}} ({{{{ r.population | thousands }}}}){{{{ ", " if not loop.last else "." }}}}{{% endfor %}}
"""

# The superuser of the test database: mcpgen refuses such a role unless told to warn.
MCPGEN_CONFIG = """\
connections:
  default:
    url: postgresql+psycopg://{user}@{host}:{port}/{dbname}
    privileged_role: warn
"""

# Toolbox's flat format: one document per source and per tool. The test database trusts local
# connections, but Toolbox requires a password field.
TOOLBOX_CONFIG = """\
kind: source
name: pg
type: postgres
host: {host}
port: {port}
database: {dbname}
user: {user}
password: unused-trust-auth
---
kind: tool
name: top_cities
type: postgres-sql
source: pg
description: {description}
parameters:
  - name: n
    type: integer
    description: How many cities
statement: {sql}
"""


def toolbox_binary() -> Path:
    """The pinned Toolbox binary, installed with `npm ci` on first use."""
    if not TOOLBOX_BIN.exists():
        folder = PEERS / "toolbox"
        folder.mkdir(parents=True, exist_ok=True)
        for name in ("package.json", "package-lock.json"):
            shutil.copyfile(TOOLBOX_PIN / name, folder / name)
        print("installing the pinned MCP Toolbox binary (npm ci) into bench/.peers/toolbox", flush=True)
        done = subprocess.run(
            ["npm", "ci", "--no-audit", "--no-fund"], cwd=folder, capture_output=True, text=True, timeout=600
        )
        if done.returncode != 0 or not TOOLBOX_BIN.exists():
            tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
            raise SystemExit(f"npm ci of the pinned MCP Toolbox failed: {tail[0]}")
    return TOOLBOX_BIN


@contextlib.contextmanager
def cities_table() -> Iterator[str]:
    """examples/data/cities.csv in a PostgreSQL table of this run's own, dropped at the end."""
    import psycopg

    table = f"bench_peers_cities_{os.getpid()}"
    columns = (
        "geonameid bigint, name text, country_code text, admin1_code text, population bigint,"
        " latitude double precision, longitude double precision, timezone text"
    )
    try:
        con = psycopg.connect(**PG, connect_timeout=10, autocommit=True)
    except psycopg.OperationalError as exc:
        raise SystemExit(f"PostgreSQL at 127.0.0.1:5432 (database test) is unavailable: {exc}") from None
    with con:
        con.execute(f"CREATE TABLE {table} ({columns})")
        try:
            with con.cursor().copy(f"COPY {table} FROM STDIN WITH (FORMAT csv, HEADER true)") as copy:
                copy.write((REPO / "examples/data/cities.csv").read_bytes())
            con.execute(f"ANALYZE {table}")
            yield table
        finally:
            con.execute(f"DROP TABLE IF EXISTS {table}")


def mxcp_problem() -> str | None:
    """None when the pinned MXCP runs from its virtual environment, else why not, in one sentence."""
    exe = MXCP_VENV / "bin/mxcp"
    if not exe.exists():
        if not (MXCP_VENV / "bin/pip").exists():
            subprocess.run([sys.executable, "-m", "venv", str(MXCP_VENV)], check=True, timeout=120)
        print(f"installing {' '.join(MXCP_PINS)} (pip) into bench/.peers/mxcp-venv", flush=True)
        done = subprocess.run(
            [str(MXCP_VENV / "bin/pip"), "install", "-q", *MXCP_PINS], capture_output=True, text=True, timeout=900
        )
        if done.returncode != 0:
            lines = [line.strip() for line in done.stderr.splitlines() if "Error" in line or "error:" in line]
            return f"pip install {' '.join(MXCP_PINS)} failed: {lines[-1] if lines else done.returncode}"
    try:
        done = subprocess.run([str(exe), "--help"], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"mxcp --help did not run: {exc}"
    if done.returncode != 0:
        return f"mxcp --help exited with status {done.returncode}: {done.stderr.strip()[-200:]}"
    return None


def mxcp_project(folder: Path) -> Path:
    """An MXCP project whose DuckDB file holds the cities table, with the same query as bench/project."""
    project = folder / "mxcp"
    (project / "tools").mkdir(parents=True)
    (project / "data").mkdir()
    (project / "mxcp-site.yml").write_text("mxcp: 1\nproject: bench\nprofile: default\n")
    sql = QUERY.format(table="cities", n="$n")
    (project / "tools/top_cities.yml").write_text(MXCP_TOOL.format(description=DESCRIPTION, sql=sql))
    load = f"CREATE TABLE cities AS SELECT * FROM read_csv('{REPO / 'examples/data/cities.csv'}')"
    script = f"import duckdb; c = duckdb.connect('data/db-default.duckdb'); c.execute({load!r}); c.close()"
    subprocess.run([str(MXCP_VENV / "bin/python"), "-c", script], cwd=project, check=True, timeout=120)
    return project


def write_configs(folder: Path, table: str) -> tuple[Path, Path]:
    """A mcpgen project and a Toolbox tools.yaml with the same query on `table`."""
    project = folder / "mcpgen"
    (project / "specs").mkdir(parents=True)
    (project / "mcpgen.yaml").write_text(MCPGEN_CONFIG.format(**PG))
    sql = QUERY.format(table=table, n=":n")
    (project / "specs/top_cities.yaml").write_text(MCPGEN_SPEC.format(description=DESCRIPTION, sql=sql))
    tools = folder / "tools.yaml"
    tools.write_text(TOOLBOX_CONFIG.format(**PG, description=DESCRIPTION, sql=QUERY.format(table=table, n="$1")))
    return project, tools


def rows_of(name: str, result) -> list[tuple]:
    """The rows of an answer, as tuples: mcpgen's table, Toolbox's one JSON object per text item,
    or MXCP's one JSON array of objects."""
    if result.is_error:
        raise SystemExit(f"{name}'s call failed: {result.content[0].text if result.content else result}")
    if name == "mcpgen":
        return [tuple(row) for row in result.structured_content["table"][1:]]
    items = [json.loads(item.text) for item in result.content]
    if len(items) == 1 and isinstance(items[0], list):
        items = items[0]
    return [tuple(item.values()) for item in items]


async def paired(urls: dict[str, str], args: dict, calls: int, warmup: int, procs: dict) -> dict:
    """One client with a session to each server, alternating calls; returns one round's figures."""
    lat: dict[str, list[float]] = {name: [] for name in urls}
    ratios: list[float] = []
    async with client(urls["mcpgen"]) as a, client(urls["peer"]) as b:
        sessions = {"mcpgen": a, "peer": b}
        answers = {name: rows_of(name, await s.call_tool("top_cities", args)) for name, s in sessions.items()}
        if sorted(answers["mcpgen"]) != sorted(answers["peer"]):
            raise SystemExit(f"the answers differ: mcpgen {answers['mcpgen'][:3]}..., peer {answers['peer'][:3]}...")
        cpu_before: dict[str, float] = {}
        for i in range(warmup + calls):
            if i == warmup:
                cpu_before = {name: cpu_seconds(proc) for name, proc in procs.items()}
            pair: dict[str, float] = {}
            for name in list(sessions) if i % 2 == 0 else list(reversed(sessions)):
                t0 = time.perf_counter()
                result = await sessions[name].call_tool("top_cities", args)
                pair[name] = (time.perf_counter() - t0) * 1000
                if result.is_error:
                    rows_of(name, result)
            if i >= warmup:
                for name, ms in pair.items():
                    lat[name].append(ms)
                ratios.append(pair["mcpgen"] / pair["peer"])
        cpu = {name: (cpu_seconds(proc) - cpu_before[name]) / calls * 1e6 for name, proc in procs.items()}
    return {
        "rows": len(answers["mcpgen"]),
        "p50": {name: statistics.median(values) for name, values in lat.items()},
        "ratio": statistics.median(ratios),
        "cpu_us": cpu,
    }


def compare(label: str, commands: dict[str, list[str]], ports: dict[str, int], opts) -> list[dict]:
    procs = {}
    try:
        for name, cmd in commands.items():
            procs[name] = start(cmd, ports[name])
        urls = {name: f"http://127.0.0.1:{port}/mcp" for name, port in ports.items()}
        rounds = []
        for r in range(opts.rounds):
            row = anyio.run(paired, urls, {"n": opts.n}, opts.calls, opts.warmup, procs)
            rounds.append(row)
            print(
                f"{label} round {r + 1}: {row['rows']} rows, same in both | mcpgen p50 {row['p50']['mcpgen']:.2f} ms,"
                f" {label} p50 {row['p50']['peer']:.2f} ms | paired ratio {row['ratio']:.3f}"
                f" | server CPU/call {row['cpu_us']['mcpgen']:,.0f} / {row['cpu_us']['peer']:,.0f} us",
                flush=True,
            )
        ratios = [row["ratio"] for row in rounds]

        def med(key: str, name: str) -> float:
            return statistics.median(row[key][name] for row in rounds)

        load = os.getloadavg()[0]
        print(
            f"{label}: {opts.rounds} rounds x {opts.calls} call pairs, n={opts.n}, load average {load:.1f}"
            f" | p50 mcpgen {med('p50', 'mcpgen'):.2f} ms, {label} {med('p50', 'peer'):.2f} ms"
            f" | paired ratio (mcpgen / {label}) {statistics.median(ratios):.3f}"
            f" [{min(ratios):.3f}-{max(ratios):.3f}]"
            f" | server CPU/call {med('cpu_us', 'mcpgen'):,.0f} / {med('cpu_us', 'peer'):,.0f} us",
            flush=True,
        )
        return [
            {"rows": r["rows"], "ratio": round(r["ratio"], 3)}
            | {f"{k}_{name}": round(r[k][name], 2 if k == "p50" else 0) for k in ("p50", "cpu_us") for name in r[k]}
            for r in rounds
        ]
    finally:
        for proc in procs.values():
            stop(proc)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--calls", type=int, default=200, help="call pairs per round")
    ap.add_argument("--warmup", type=int, default=20, help="call pairs before each round's figures")
    ap.add_argument("--n", type=int, default=10, help="how many cities each call asks for")
    ap.add_argument("--only", choices=["toolbox", "mxcp"], help="run one peer only")
    add_write_docs(ap)
    opts = ap.parse_args()
    if opts.rounds < 3:
        ap.error("--rounds must be 3 or more: the figure is a median over rounds")
    if psutil.cpu_count() and os.getloadavg()[0] > 2 * psutil.cpu_count():
        print(f"note: load average {os.getloadavg()[0]:.1f}: absolute times are inflated, ratios less so", flush=True)
    mcpgen = [sys.executable, "-c", "from mcpgen.cli import main; main()", "serve"]
    peers: dict[str, list[dict]] = {}
    skipped: dict[str, str] = {}
    if opts.only != "mxcp":
        peers["Toolbox 1.12.0"] = run_toolbox(opts, mcpgen)
    if opts.only != "toolbox":
        problem = mxcp_problem()
        if problem:
            print(f"MXCP skipped: {problem}", flush=True)
            skipped["MXCP 0.12.3"] = problem
        else:
            peers["MXCP 0.12.3"] = run_mxcp(opts, mcpgen)
    if opts.write_docs:
        from results import publish

        figures = {"n": opts.n, "calls": opts.calls, "peers": peers, "skipped": skipped}
        publish(__file__, figures, opts.rounds)


TARGETS = {"Toolbox 1.12.0": 1.50}  # paired ratio, mcpgen over the peer


def render(figures: dict) -> str:
    """The table of one run (bench/results.py puts it into docs/benchmarks.md)."""
    from results import spread, table, verdict

    header = ["peer", "data", "mcpgen p50, ms", "peer p50, ms", "**paired ratio**", "server CPU per call, us", "target"]
    rows = []
    for label, runs in figures["peers"].items():
        paired = [r["ratio"] for r in runs]
        cpu = f"{spread((r['cpu_us_mcpgen'] for r in runs), 0)} / {spread((r['cpu_us_peer'] for r in runs), 0)}"
        data = "PostgreSQL table" if label.startswith("Toolbox") else "DuckDB table"
        cells = [spread(r["p50_mcpgen"] for r in runs), spread(r["p50_peer"] for r in runs)]
        target = verdict(statistics.median(paired), TARGETS.get(label))
        rows.append([label, data, *cells, spread(paired, 3, bold=True), cpu, target])
    rows += [[label, "-", "-", "-", "-", f"skipped: {why}", ""] for label, why in figures.get("skipped", {}).items()]
    return table(header, rows) + (
        f"\n{figures['calls']:,} call pairs per round, {figures['n']} rows per answer, one client; paired ratio: the"
        " median of mcpgen's latency over the peer's call made next to it, median [range] of the rounds;"
        " server CPU: each server process's own (PostgreSQL's is on neither side).\n"
    )


def run_mxcp(opts, mcpgen: list[str]) -> list[dict]:
    os.environ["MXCP_DISABLE_ANALYTICS"] = "1"
    with bench_project() as project, tempfile.TemporaryDirectory(prefix="mcpgen-bench-peers-") as tmp:
        peer = mxcp_project(Path(tmp))
        ports = {"mcpgen": free_port(), "peer": free_port()}
        commands = {
            "mcpgen": [*mcpgen, str(project / "specs"), "--http", "--port", str(ports["mcpgen"])],
            # env -C: MXCP serves the project of the folder it starts in
            "peer": [
                *("env", "-C", str(peer), str(MXCP_VENV / "bin/mxcp"), "serve", "--transport"),
                *("streamable-http", "--port", str(ports["peer"])),
            ],
        }
        return compare("MXCP 0.12.3", commands, ports, opts)


def run_toolbox(opts, mcpgen: list[str]) -> list[dict]:
    toolbox = toolbox_binary()
    with cities_table() as table, tempfile.TemporaryDirectory(prefix="mcpgen-bench-peers-") as tmp:
        project, tools = write_configs(Path(tmp), table)
        ports = {"mcpgen": free_port(), "peer": free_port()}
        commands = {
            "mcpgen": [*mcpgen, str(project / "specs"), "--http", "--port", str(ports["mcpgen"])],
            "peer": [str(toolbox), "--config", str(tools), "--port", str(ports["peer"]), "--disable-version-check"],
        }
        return compare("Toolbox 1.12.0", commands, ports, opts)


if __name__ == "__main__":
    main()
