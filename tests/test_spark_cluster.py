"""The local Spark cluster's parts that need no JVM: its addresses, the example tables, the command.

Starting the cluster itself is the `spark_cluster` fixture's work (tests/engines/test_spark.py)."""

import subprocess
import sys
from pathlib import Path

import duckdb

from mcpgen.spark_cluster import LocalSparkCluster, example_tables

REPO = Path(__file__).resolve().parents[1]


def test_a_cluster_not_started_has_its_addresses_and_stops_as_a_no_op(tmp_path):
    cluster = LocalSparkCluster(workers=1, folder=tmp_path)
    assert cluster.remote == f"sc://127.0.0.1:{cluster.port}" and cluster.port != cluster.ui_port
    assert cluster.log == tmp_path / "spark.log"
    cluster.stop()  # nothing running: nothing to stop, nothing raised
    assert cluster.process is None


def test_example_tables_are_parquet_with_every_row(tmp_path):
    data = REPO / "examples" / "data"
    tables = example_tables(data, tmp_path / "parquet")
    assert sorted(tables) == ["airlines", "airports", "cities", "countries", "flights", "gapminder"]
    assert tables["flights"] == data / "flights.parquet"  # already Parquet: used as it is
    con = duckdb.connect()
    for name in ("cities", "countries"):
        csv_rows = con.execute(f"SELECT count(*) FROM read_csv('{data / (name + '.csv')}')").fetchone()
        assert con.execute(f"SELECT count(*) FROM '{tables[name]}'").fetchone() == csv_rows
    con.close()


def test_python_dash_m_runs_the_module():
    out = subprocess.run(
        [sys.executable, "-m", "mcpgen.spark_cluster", "--help"], capture_output=True, text=True, timeout=60, cwd=REPO
    )
    assert out.returncode == 0
    assert "A real Spark cluster on this machine" in out.stdout and "--executor-memory" in out.stdout
