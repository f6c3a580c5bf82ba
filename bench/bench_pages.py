#!/usr/bin/env python3
"""Pages of the 336,776-row flights table (examples/data/flights.parquet): walking every page against
one direct query, and a late page against the first, paired; optionally against a git revision.

A worker process per tree opens a project in a temporary folder (the shipped `flights` view over the
Parquet file, or `--table` to load it into a table) with one paged spec (`page_size` 1,000, the query
below) and answers commands on stdin, so the measurements of both trees interleave:

- `walk`: every page, through the tool (cursor to cursor, answers built as a call builds them);
- `walk-engine`: every page as the engine gives it (the page SQL and cursors, no answer built);
- `direct`: the same query once, every row, on the same connection (`engine.run`);
- `page N`: page 1 or page N (its cursor taken from a walk) through the tool.

Printed per tree: the median of the per-round ratios walk/direct (goal <= 3), engine walk/direct,
and page 300/page 1 (goal ~1), with their range; with `--baseline`, the same for that revision.

    python bench/bench_pages.py [--rounds 3] [--order ties|total] [--table] [--postgres URL] [--baseline REV]
        [--write-docs]  (this run becomes bench/results/bench_pages-CONFIGURATION.json and its block of docs/benchmarks.md)
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
import textwrap
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
COLUMNS = "year, month, day, sched_dep_time, carrier, flight, origin, dep_delay, time_hour"
ORDERS = {
    "total": "year, month, day, sched_dep_time, carrier, flight, origin",  # unique: a total order already
    "ties": "dep_delay DESC",  # thousands of ties and 8,255 NULLs: mcpgen completes the order
}


# One name per run, which its workers inherit: runs side by side on one server do not drop each other's table.
PG_TABLE = os.environ.setdefault("MCPGEN_PAGES_BENCH_TABLE", f"pages_bench_flights_{os.getpid()}")
PG_TYPES = {"year": "int NOT NULL", "month": "int NOT NULL", "day": "int NOT NULL", "sched_dep_time": "int NOT NULL"}
PG_TYPES.update({"carrier": "text NOT NULL", "flight": "int NOT NULL", "origin": "text NOT NULL"})
PG_TYPES.update({"dep_delay": "int", "time_hour": "timestamptz"})


def load_postgres(url: str, order: str) -> None:
    """The flights table in PostgreSQL (its key columns NOT NULL, as in the data), with an index on the order."""
    import duckdb
    import psycopg

    rows = duckdb.connect().execute(f"SELECT {COLUMNS} FROM '{REPO / 'examples/data/flights.parquet'}'").fetchall()
    dsn = url.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(dsn, autocommit=True) as con:
        con.execute(f"DROP TABLE IF EXISTS {PG_TABLE}")
        con.execute(f"CREATE TABLE {PG_TABLE} ({', '.join(f'{c} {t}' for c, t in PG_TYPES.items())})")
        with con.cursor().copy(f"COPY {PG_TABLE} ({COLUMNS}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)
        con.execute(f"CREATE INDEX ON {PG_TABLE} ({ORDERS[order].replace(' DESC', '')})")
        con.execute(f"ANALYZE {PG_TABLE}")


def drop_postgres(url: str) -> None:
    import psycopg

    with psycopg.connect(url.replace("postgresql+psycopg://", "postgresql://"), autocommit=True) as con:
        con.execute(f"DROP TABLE IF EXISTS {PG_TABLE}")


def project_folder(order: str, table: bool, postgres: str | None) -> tuple[Path, str]:
    """A temporary project with the paged spec; and its SQL."""
    root = Path(tempfile.mkdtemp(prefix="mcpgen-pages-"))
    shutil.copyfile(REPO / "examples" / "data" / "flights.parquet", root / "flights.parquet")
    kind = "TABLE" if table else "VIEW"
    (root / "mcpgen.yaml").write_text(
        "connections:\n  default:\n    duckdb: ':memory:'\n"
        f"    init: [\"CREATE {kind} flights AS SELECT * FROM read_parquet('flights.parquet')\"]\n"
        if postgres is None
        # the bench's own loopback database, as the role that made the table: paging is measured, not roles
        else f"connections:\n  default:\n    url: {postgres}\n    privileged_role: warn\n"
    )
    (root / "specs").mkdir()
    sql = f"SELECT {COLUMNS} FROM {'flights' if postgres is None else PG_TABLE} ORDER BY {ORDERS[order]}"
    (root / "specs" / "flights_pages.yaml").write_text(
        textwrap.dedent(f"""\
            description: Every flight, in pages.
            sql: {sql}
            sources: [https://github.com/hadley/nycflights13]
            content: "{{{{ row_count }}}} flights"
            page_size: 1000
            max_bytes: 100000000
            """)
    )
    return root, sql


class Pages:
    """The paged tool of one project, walked the ways the commands ask."""

    def __init__(self, project, sql: str):
        from mcpgen.answer.cursors import NEXT_CURSOR_META
        from mcpgen.spec.models import CURSOR

        self.next_meta, self.cursor_name = NEXT_CURSOR_META, CURSOR
        self.registry, self.engine, self.sql = project.registry, project.engines["default"], sql
        self.pager = getattr(self.registry.get("flights_pages").handler, "pager", None)  # None: the old pages
        self.cursors: list[str | None] = []

    def call(self, cursor: str | None):
        result = self.registry.call_sync("flights_pages", {self.cursor_name: cursor} if cursor else {})
        assert not result.is_error, result.content[0].text
        return result

    def walk(self) -> int:
        """Every page through the tool, cursor to cursor."""
        rows, cursor, seen = 0, None, [None]
        while True:
            page = self.call(cursor)
            rows += len(page.structured_content["table"]) - 1
            cursor = (page.meta or {}).get(self.next_meta)
            if cursor is None:
                self.cursors[:] = seen
                return rows
            seen.append(cursor)

    def walk_engine(self) -> int:
        """Every page as the engine gives it (mcpgen's page SQL and cursors, no answer built)."""
        if self.pager is None:
            return 0
        from mcpgen.answer.cursors import Position

        rows, at = 0, Position(0)
        while True:
            result, after = self.pager.page({}, at, 600)
            rows += len(result.rows)
            if after is None:
                return rows
            at = after

    def direct(self) -> int:
        return len(self.engine.run(self.engine.prepare(self.sql), {}, 10**6, 600).rows)

    def page(self, number: int) -> int:
        if not self.cursors:
            self.walk()
        return len(self.call(self.cursors[number - 1]).structured_content["table"]) - 1


def worker(order: str, table: bool, postgres: str | None) -> None:
    """Run in the tree under test (PYTHONPATH): answer stdin commands with one JSON line each."""
    from mcpgen.serve.project import open_project

    root, sql = project_folder(order, table, postgres)
    os.chdir(root)
    project = open_project(root / "specs")
    pages = Pages(project, sql)
    commands = {"walk": pages.walk, "walk-engine": pages.walk_engine, "direct": pages.direct}
    for line in sys.stdin:
        command, *args = line.split()
        if command == "page":
            pages.page(int(args[0]))  # its cursor first: then time the page alone
            started = time.perf_counter()
            count = pages.page(int(args[0]))
        else:
            started = time.perf_counter()
            count = commands[command]()
        print(json.dumps({"seconds": time.perf_counter() - started, "rows": count}), flush=True)
    project.close()
    shutil.rmtree(root, ignore_errors=True)


class Worker:
    def __init__(self, tree: Path, order: str, table: bool, postgres: str | None):
        args = [sys.executable, "-P", str(Path(__file__).resolve()), "--worker", "--order", order]
        args += ["--postgres", postgres] if postgres else []
        env = {**os.environ, "PYTHONPATH": str(tree)}
        self.proc = subprocess.Popen(
            args + (["--table"] if table else []), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
        )

    def ask(self, command: str) -> float:
        return self.answer(command)["seconds"]

    def answer(self, command: str) -> dict:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit(f"the worker stopped on {command!r}")
        return json.loads(line)

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def measure(workers: dict[str, Worker], rounds: int, late: int) -> dict[str, dict]:
    """Per tree: the per-round ratios, each round alternating the trees' order."""
    out: dict[str, dict] = {
        name: {"walk/direct": [], "engine walk/direct": [], f"page {late}/page 1": []} for name in workers
    }
    names = list(workers)
    for w in workers.values():  # warm-up: the plan, the cursors, the caches of the file
        w.ask("walk")
        w.ask("direct")
    for r in range(rounds):
        for name in names if r % 2 == 0 else names[::-1]:
            w = workers[name]
            direct = w.ask("direct")
            walk = w.ask("walk")
            between = w.ask("direct")
            engine = w.answer("walk-engine")  # no rows: a tree without these pages (nothing to walk alone)
            engine_walk = engine["seconds"] if engine["rows"] else 0.0
            after = w.ask("direct")
            out[name]["walk/direct"].append(walk / ((direct + between) / 2))
            if engine_walk:  # a tree without the pager (the old OFFSET pages) has no engine walk
                out[name]["engine walk/direct"].append(engine_walk / ((between + after) / 2))
            pairs = []
            for i in range(6):  # page 1 first, then the late page first
                if i % 2 == 0:
                    first, later = w.ask("page 1"), w.ask(f"page {late}")
                else:
                    later, first = w.ask(f"page {late}"), w.ask("page 1")
                pairs.append(later / first)
            out[name][f"page {late}/page 1"].append(statistics.median(pairs))
            print(json.dumps({"round": r, "tree": name, "walk_s": round(walk, 3), "direct_s": round(direct, 3)}))
    return out


def main() -> None:
    sys.path.insert(0, str(HERE))  # bench_core and results (the workers run with -P)
    from results import add_write_docs

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--order", choices=sorted(ORDERS), default="total")
    ap.add_argument("--table", action="store_true", help="load the Parquet file into a table (default: a view)")
    ap.add_argument("--late", type=int, default=300, help="the late page compared with page 1")
    ap.add_argument("--baseline", metavar="REV", help="also measure mcpgen as of this git revision")
    ap.add_argument("--postgres", metavar="URL", help="page a PostgreSQL copy of the table (indexed on the order)")
    add_write_docs(ap)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    opts = ap.parse_args()
    if opts.worker:
        worker(opts.order, opts.table, opts.postgres)
        return
    if opts.postgres:
        load_postgres(opts.postgres, opts.order)
    with contextlib.ExitStack() as stack:
        trees = {"this tree": REPO}
        if opts.baseline:
            from bench_core import exported

            trees[opts.baseline] = stack.enter_context(exported(opts.baseline))
        workers = {name: Worker(tree, opts.order, opts.table, opts.postgres) for name, tree in trees.items()}
        try:
            results = measure(workers, opts.rounds, opts.late)
        finally:
            for w in workers.values():
                w.close()
            if opts.postgres:
                drop_postgres(opts.postgres)
    where = "PostgreSQL, indexed" if opts.postgres else "DuckDB table" if opts.table else "DuckDB, Parquet view"
    figures = {"where": where, "order_by": ORDERS[opts.order], "late": opts.late, "trees": results}
    print("\n" + render(figures))
    if opts.write_docs:
        from results import publish

        publish(__file__, figures, opts.rounds, name=f"{where}, {opts.order} order")


def render(figures: dict) -> str:
    """The table of one run (bench/results.py puts it into docs/benchmarks.md)."""
    from results import spread, table  # here: the worker runs with -P, without this folder on sys.path

    late = figures["late"]
    header = ["tree", "walk every page / one direct query (goal <= 3)", "the same, engine only"]
    header.append(f"page {late} / page 1 (goal ~1)")
    rows = [[name, *(spread(v, bold=True) for v in trees.values())] for name, trees in figures["trees"].items()]
    return f"`ORDER BY {figures['order_by']}` ({figures['where']})\n\n" + table(header, rows)


if __name__ == "__main__":
    main()
