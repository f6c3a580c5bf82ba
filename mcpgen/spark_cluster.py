"""A real Spark cluster on this machine, for tests, benchmarks and trying Spark out.

A Spark Connect server whose master is `local-cluster[2,1,1024]`: the driver JVM runs a
standalone master and two workers, and each worker starts an executor JVM of its own, so a
query is a distributed job across processes (and an executor can be killed). Everything binds
to loopback on free ports; the example data become Parquet tables.

    python -m mcpgen.spark_cluster examples/data      # prints the sc:// URL; Ctrl-C stops it

Needs Java 17 and `pip install "mcpgen[spark]"` (the pyspark package carries Spark itself).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from .children import sigint_unblocked

CONNECT_SERVER = "org.apache.spark.sql.connect.service.SparkConnectServer"


class ClusterError(RuntimeError):
    """The local cluster did not start."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LocalSparkCluster:
    """Start with `start()`, stop with `stop()` (also a context manager).

    `workers` executors of `executor_memory` each, one core each; small, for a shared machine."""

    def __init__(self, workers: int = 2, executor_memory: str = "512m", folder: str | os.PathLike | None = None):
        self.workers, self.executor_memory = workers, executor_memory
        self.folder = Path(folder or tempfile.mkdtemp(prefix="mcpgen-spark-"))
        self.port, self.ui_port = free_port(), free_port()
        self.process: subprocess.Popen | None = None

    @property
    def remote(self) -> str:
        return f"sc://127.0.0.1:{self.port}"

    @property
    def log(self) -> Path:
        return self.folder / "spark.log"

    def start(self, timeout: float = 240.0) -> str:
        """Start the server, wait until every executor has registered, and return the sc:// URL."""
        import pyspark

        home = Path(pyspark.__file__).parent
        worker_mb = max(
            1024, int(self.executor_memory.rstrip("mg")) * (1024 if self.executor_memory.endswith("g") else 1)
        )
        conf = {
            "spark.connect.grpc.binding.address": "127.0.0.1",
            "spark.connect.grpc.binding.port": self.port,
            "spark.ui.port": self.ui_port,
            "spark.ui.showConsoleProgress": "false",
            "spark.driver.host": "127.0.0.1",
            "spark.driver.bindAddress": "127.0.0.1",
            "spark.executor.memory": self.executor_memory,
            "spark.sql.shuffle.partitions": 2 * self.workers,  # 200 by default: far too many tasks for 2 cores
            "spark.sql.session.timeZone": "UTC",
            "spark.sql.warehouse.dir": self.folder / "warehouse",
            "spark.local.dir": self.folder / "tmp",
        }
        command = [str(home / "bin" / "spark-submit"), "--class", CONNECT_SERVER, "--name", "mcpgen-local"]
        command += ["--master", f"local-cluster[{self.workers},1,{worker_mb}]", "--driver-memory", "768m"]
        for key, value in conf.items():
            command += ["--conf", f"{key}={value}"]
        env = {**os.environ, "SPARK_HOME": str(home), "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable}
        self.folder.mkdir(parents=True, exist_ok=True)
        # A session of its own: stop() ends the server and the executor JVMs it started, and nothing else.
        with open(self.log, "ab") as log, sigint_unblocked():
            self.process = subprocess.Popen(
                command, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=self.folder, start_new_session=True
            )
        deadline = time.monotonic() + timeout
        while len(self.executor_ids()) < self.workers:
            if self.process.poll() is not None:
                raise ClusterError(f"the Spark server exited with code {self.process.returncode}; see {self.log}")
            if time.monotonic() > deadline:
                self.stop()
                raise ClusterError(f"the Spark cluster did not start within {timeout:g} s; see {self.log}")
            time.sleep(1)
        self.sql("SELECT k, count(*) FROM (SELECT id % 7 AS k FROM range(100000)) GROUP BY k ORDER BY k")
        return self.remote

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(10)

    def __enter__(self) -> LocalSparkCluster:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- looking inside: the driver's REST API -------------------------------------------------

    def rest(self, path: str) -> Any:
        """GET the monitoring REST API of the running application: rest("jobs?status=running")."""
        base = f"http://127.0.0.1:{self.ui_port}/api/v1/applications"
        with urllib.request.urlopen(base, timeout=5) as answer:
            app = json.load(answer)[0]["id"]
        with urllib.request.urlopen(f"{base}/{app}/{path}", timeout=5) as answer:
            return json.load(answer)

    def executor_ids(self) -> list[str]:
        """The ids of the live executors (not the driver); empty while the server starts."""
        try:
            return [e["id"] for e in self.rest("executors") if e["id"] != "driver" and e.get("isActive", True)]
        except (OSError, ValueError, IndexError, KeyError):
            return []

    def executor_pids(self) -> list[int]:
        """Process ids of the executor JVMs (children of the server)."""
        import psutil  # type: ignore[import-untyped]

        root = psutil.Process(self.process.pid) if self.process else None
        if root is None:
            return []
        return [p.pid for p in root.children(recursive=True) if "CoarseGrainedExecutorBackend" in " ".join(_cmdline(p))]

    # -- data ----------------------------------------------------------------------------------

    def sql(self, *statements: str) -> list[list[tuple]]:
        """Run statements in a session of their own (the administrator's, not mcpgen's); their rows."""
        from pyspark.sql.connect.session import SparkSession

        admin = SparkSession.builder.remote(self.remote).create()
        try:
            return [[tuple(row) for row in admin.sql(statement).collect()] for statement in statements]
        finally:
            admin.stop()

    def load_tables(self, tables: dict[str, Path], database: str = "default") -> None:
        """Make each Parquet file (or folder) a table of `database` (created if need be), replacing one of
        that name, and read each once (the first scan of a table is the slow one)."""
        statements = [f"CREATE DATABASE IF NOT EXISTS {database}"]
        for name, path in tables.items():
            statements.append(f"DROP TABLE IF EXISTS {database}.{name}")
            statements.append(f"CREATE TABLE {database}.{name} USING parquet LOCATION '{Path(path).resolve()}'")
            statements.append(f"SELECT count(*) FROM {database}.{name}")
        self.sql(*statements)


def _cmdline(process) -> list[str]:
    try:
        return process.cmdline()
    except Exception:
        return []


def example_tables(data: Path, folder: Path) -> dict[str, Path]:
    """Parquet files of the example data (CSV files converted by DuckDB), by table name."""
    import duckdb

    folder.mkdir(parents=True, exist_ok=True)
    tables = {}
    con = duckdb.connect()
    for path in sorted(data.iterdir()):
        if path.suffix == ".parquet":
            tables[path.stem] = path
        elif path.suffix == ".csv":
            tables[path.stem] = folder / f"{path.stem}.parquet"
            con.execute(f"COPY (SELECT * FROM read_csv('{path}')) TO '{tables[path.stem]}' (FORMAT parquet)")
    con.close()
    return tables


def main(argv: list[str] | None = None) -> None:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", nargs="?", default="examples/data", help="folder of CSV and Parquet files")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--executor-memory", default="512m")
    args = parser.parse_args(argv)
    cluster = LocalSparkCluster(args.workers, args.executor_memory)
    print(f"starting Spark ({args.workers} executors); log: {cluster.log}", flush=True)
    try:
        cluster.start()
        cluster.load_tables(example_tables(Path(args.data), cluster.folder / "data"))
        print(f"ready: {cluster.remote}  (mcpgen.yaml: connections: {{default: {{spark: {cluster.remote}}}}})")
        print(f"Spark UI: http://127.0.0.1:{cluster.ui_port}/  Ctrl-C stops the cluster", flush=True)
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        assert cluster.process is not None
        cluster.process.wait()
    except KeyboardInterrupt:
        pass
    finally:
        cluster.stop()


if __name__ == "__main__":
    main()
