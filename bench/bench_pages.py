#!/usr/bin/env python3
"""Pages of the 336,776-row flights table (examples/data/flights.parquet): walking every page against
one direct query, and a late page against the first, paired; optionally against a git revision.

A worker process per tree opens a project in a temporary folder (the shipped `flights` view over the
Parquet file, or `--table` to load it into a table) with one paged spec (`page_size` 1,000, the query
below) and answers commands on stdin, so the measurements of both trees interleave:

- `walk`: every page, through the tool (cursor to cursor, answers built as a call builds them);
- `direct`: the same query once, every row, on the same DuckDB connection (`engine.run`);
- `page N`: page 1 or page N (its cursor taken from a walk) through the tool.

Printed per tree: the median of the per-round ratios walk/direct (goal <= 3) and page 300/page 1
(goal ~1), with their range; with `--baseline`, the same for that revision.

    python bench/bench_pages.py [--rounds 3] [--order ties|total] [--table] [--baseline REV]
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


def worker(order: str, table: bool) -> None:
    """Run in the tree under test (PYTHONPATH): answer stdin commands with one JSON line each."""
    from mcpgen.answer.cursors import NEXT_CURSOR_META
    from mcpgen.serve.project import open_project
    from mcpgen.spec.models import CURSOR

    root = Path(tempfile.mkdtemp(prefix="mcpgen-pages-"))
    shutil.copyfile(REPO / "examples" / "data" / "flights.parquet", root / "flights.parquet")
    kind = "TABLE" if table else "VIEW"
    (root / "mcpgen.yaml").write_text(
        "connections:\n  default:\n    duckdb: ':memory:'\n"
        f"    init: [\"CREATE {kind} flights AS SELECT * FROM read_parquet('flights.parquet')\"]\n"
    )
    (root / "specs").mkdir()
    sql = f"SELECT {COLUMNS} FROM flights ORDER BY {ORDERS[order]}"
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
    os.chdir(root)
    project = open_project(root / "specs")
    registry = project.registry
    engine = project.engines["default"]
    cursors: list[str | None] = []

    def call(cursor: str | None):
        result = registry.call_sync("flights_pages", {CURSOR: cursor} if cursor else {})
        assert not result.is_error, result.content[0].text
        return result

    def walk() -> int:
        rows, cursor, seen = 0, None, [None]
        while True:
            page = call(cursor)
            rows += len(page.structured_content["table"]) - 1
            cursor = (page.meta or {}).get(NEXT_CURSOR_META)
            if cursor is None:
                cursors[:] = seen
                return rows
            seen.append(cursor)

    for line in sys.stdin:
        command, *args = line.split()
        started = time.perf_counter()
        if command == "walk":
            count = walk()
        elif command == "direct":
            count = len(engine.run(engine.prepare(sql), {}, 10**6, 600).rows)
        else:
            if not cursors:
                walk()
            started = time.perf_counter()
            count = len(call(cursors[int(args[0]) - 1]).structured_content["table"]) - 1
        print(json.dumps({"seconds": time.perf_counter() - started, "rows": count}), flush=True)
    project.close()
    shutil.rmtree(root, ignore_errors=True)


class Worker:
    def __init__(self, tree: Path, order: str, table: bool):
        args = [sys.executable, "-P", str(Path(__file__).resolve()), "--worker", "--order", order]
        env = {**os.environ, "PYTHONPATH": str(tree)}
        self.proc = subprocess.Popen(
            args + (["--table"] if table else []), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
        )

    def ask(self, command: str) -> float:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit(f"the worker stopped on {command!r}")
        return json.loads(line)["seconds"]

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def measure(workers: dict[str, Worker], rounds: int, late: int) -> dict[str, dict]:
    """Per tree: the per-round ratios, each round alternating the trees' order."""
    out: dict[str, dict] = {name: {"walk/direct": [], f"page {late}/page 1": []} for name in workers}
    names = list(workers)
    for w in workers.values():  # warm-up: the plan, the cursors, the caches of the file
        w.ask("walk")
        w.ask("direct")
    for r in range(rounds):
        for name in names if r % 2 == 0 else names[::-1]:
            w = workers[name]
            direct = w.ask("direct")
            walk = w.ask("walk")
            direct = (direct + w.ask("direct")) / 2
            out[name]["walk/direct"].append(walk / direct)
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
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--order", choices=sorted(ORDERS), default="total")
    ap.add_argument("--table", action="store_true", help="load the Parquet file into a table (default: a view)")
    ap.add_argument("--late", type=int, default=300, help="the late page compared with page 1")
    ap.add_argument("--baseline", metavar="REV", help="also measure mcpgen as of this git revision")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    opts = ap.parse_args()
    if opts.worker:
        worker(opts.order, opts.table)
        return
    with contextlib.ExitStack() as stack:
        trees = {"this tree": REPO}
        if opts.baseline:
            sys.path.insert(0, str(HERE))
            from bench_core import exported

            trees[opts.baseline] = stack.enter_context(exported(opts.baseline))
        workers = {name: Worker(tree, opts.order, opts.table) for name, tree in trees.items()}
        try:
            results = measure(workers, opts.rounds, opts.late)
        finally:
            for w in workers.values():
                w.close()
    print(f"\norder: {ORDERS[opts.order]} ({'table' if opts.table else 'Parquet view'}), {opts.rounds} rounds")
    print("| tree | walk 337 pages / one direct query (goal <= 3) | page 300 / page 1 (goal ~1) |")
    print("|---|---|---|")
    for name, figures in results.items():
        cells = []
        for values in figures.values():
            cells.append(f"**{statistics.median(values):.2f}** [{min(values):.2f}-{max(values):.2f}]")
        print(f"| {name} | {' | '.join(cells)} |")


if __name__ == "__main__":
    main()
