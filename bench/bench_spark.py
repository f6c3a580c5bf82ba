#!/usr/bin/env python3
"""A tools/call on Spark against the same query sent directly with pyspark, interleaved.

Starts a local Spark cluster (mcpgen.spark_cluster: a Spark Connect server, two executor
JVMs) with the example data as tables, or uses a running one (`--remote sc://...`, whose
default database holds the example tables). Then, round after round and tool after tool:
one `tools/call` to the real `mcpgen serve` over stdio (the official MCP client), and the
very statement mcpgen sends (as `validate --show-sql` prints it) with the same arguments
through pyspark's own Spark Connect client, `spark.sql(text, args).limit(n + 1).toArrow()`.

Prints the median of each side per tool and the ratio of the sums of medians; the target
is at most 1.2. Also the time the translation to Spark SQL takes at load (once; a call runs
the stored text).

    python bench/bench_spark.py                              # 15 rounds
    python bench/bench_spark.py --remote sc://127.0.0.1:15002 --rounds 5
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio
import yaml
from mcp import Client, StdioServerParameters

REPO = Path(__file__).resolve().parent.parent
CALLS = [
    ("top_cities", {"country": "JP", "top_n": 5}),
    ("busiest_routes", {"origin": "JFK", "top_n": 5}),
    ("carrier_performance", {"start": "2013-06-01", "end": "2013-06-07", "origins": ["JFK", "LGA"]}),
    ("wealth_vs_health", {"year": 2007, "continent": "Europe"}),
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--remote", help="a running Spark Connect server whose default database has the example tables")
    args = parser.parse_args()

    from mcpgen.engines.spark import SparkEngine
    from mcpgen.load.project import load_project
    from mcpgen.spark_cluster import LocalSparkCluster, example_tables
    from mcpgen.spec.params import Arguments, param_types
    from mcpgen.sql.transpile import transpile

    cluster = None
    folder = Path(tempfile.mkdtemp(prefix="mcpgen-bench-spark-"))
    try:
        remote = args.remote
        if remote is None:
            cluster = LocalSparkCluster(folder=folder / "spark")
            print("starting a local Spark cluster (two executors) ...", flush=True)
            remote = cluster.start()
            cluster.load_tables(example_tables(REPO / "examples" / "data", folder / "data"))
        project = folder / "project"
        (project / "specs").mkdir(parents=True)
        (project / "mcpgen.yaml").write_text(yaml.safe_dump({"connections": {"default": {"spark": remote}}}))
        for name, _ in CALLS:
            shutil.copyfile(REPO / "specs" / f"{name}.yaml", project / "specs" / f"{name}.yaml")

        loaded = load_project(project / "specs")
        assert not loaded.errors, loaded.errors
        sources = [s for s in load_project(REPO / "specs").specs]
        start = time.perf_counter()
        for spec in sources:
            transpile(spec.sql, "duckdb", "spark")
        translate_ms = (time.perf_counter() - start) * 1000

        # The statement and bound values mcpgen sends, for the direct side.
        engine = SparkEngine("bench", remote)
        direct = {}
        for spec in loaded.specs:
            values = next(Arguments(spec.spec.parameters).validate(a) for n, a in CALLS if n == spec.name)
            query = engine.prepare(spec.sql, param_types(spec.spec.parameters))
            bound = {k: values[k] for k in query.names}
            direct[spec.name] = (query.sql.text(bound), bound, spec.spec.max_rows or 1000)
        engine.close()

        from pyspark.sql.connect.session import SparkSession

        spark = SparkSession.builder.remote(remote).create()
        spark.conf.set("spark.sql.timestampType", "TIMESTAMP_NTZ")
        times: dict[str, dict[str, list[float]]] = {n: {"mcpgen": [], "direct": []} for n, _ in CALLS}

        async def run() -> None:
            params = StdioServerParameters(
                command=shutil.which("mcpgen") or "mcpgen", args=["serve", str(project / "specs")], env={**os.environ}
            )
            async with Client(params) as client:
                for round_ in range(args.rounds + 1):  # round 0 warms both sides up and is not counted
                    for name, arguments in CALLS:
                        started = time.perf_counter()
                        result = await client.call_tool(name, arguments)
                        took = time.perf_counter() - started
                        assert not result.is_error, result.content[0].text
                        text, bound, max_rows = direct[name]
                        started = time.perf_counter()
                        table = spark.sql(text, args=bound).limit(max_rows + 1).toArrow()
                        took_direct = time.perf_counter() - started
                        assert table.num_rows == len(result.structured_content["table"]) - 1, name
                        if round_:
                            times[name]["mcpgen"].append(took)
                            times[name]["direct"].append(took_direct)

        anyio.run(run)
        spark.stop()
    finally:
        if cluster is not None:
            cluster.stop()
        shutil.rmtree(folder, ignore_errors=True)

    print(f"{args.rounds} rounds, interleaved; median ms per call")
    print(f"{'tool':<22}{'tools/call':>12}{'pyspark':>12}{'ratio':>8}")
    total_mcp = total_direct = 0.0
    for name, _ in CALLS:
        m, d = statistics.median(times[name]["mcpgen"]), statistics.median(times[name]["direct"])
        total_mcp, total_direct = total_mcp + m, total_direct + d
        print(f"{name:<22}{m * 1000:>12.1f}{d * 1000:>12.1f}{m / d:>8.2f}")
    ratio = total_mcp / total_direct
    print(f"all tools: {ratio:.2f}x (target: at most 1.2x)")
    print(f"translation of the {len(sources)} shipped specs to Spark SQL, once at load: {translate_ms:.1f} ms")
    return 0 if ratio <= 1.2 else 1


if __name__ == "__main__":
    sys.exit(main())
