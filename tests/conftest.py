"""Shared fixtures and helpers: database services (tests/services.py) and `mcpgen serve` processes."""

import datetime as dt
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import httpx2
import pytest
import services
import yaml

from mcpgen.answer.results import to_cell

REPO = Path(__file__).resolve().parent.parent


# --- slow tests (browsers, the Spark cluster, load, server processes) run in CI and on request -------
def pytest_collection_modifyitems(config, items):
    """Skip `slow` tests, saying how to run them, unless MCPGEN_SLOW=1, MCPGEN_REQUIRE_SERVICES=1 (CI)
    or a -m expression chooses tests by marker."""
    if os.environ.get("MCPGEN_SLOW") == "1" or services.services_required() or config.getoption("markexpr"):
        return
    skip = pytest.mark.skip(reason="slow test: run with MCPGEN_SLOW=1 (CI runs every test)")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


# --- the shipped specs, and their queries run straight on DuckDB -----------------------------------
def shipped_specs():
    out = {}
    for path in sorted((REPO / "specs").glob("*.yaml")):
        spec = yaml.safe_load(path.read_text())
        out[spec.get("name", path.stem)] = spec
    return out


def good_args(spec):
    for case in spec.get("tests", []):
        if "error_contains" not in case.get("expect", {}):
            return case.get("args", {})
    return {}


def direct_table(spec, args):
    """The spec's SQL run straight on DuckDB with the project's init statements: no mcpgen code."""
    config = yaml.safe_load((REPO / "mcpgen.yaml").read_text())
    con = duckdb.connect()
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(REPO)
        for statement in config["connections"]["default"]["init"]:
            con.execute(statement)
    values = {}
    for name, p in (spec.get("parameters") or {}).items():
        value = args.get(name, p.get("default"))
        if value is not None and p["type"] == "date":
            value = dt.date.fromisoformat(value)
        if value is not None and p["type"] == "datetime":
            value = dt.datetime.fromisoformat(value)
        values[name] = value
    sql = re.sub(r"\bIN\s+:([A-Za-z_]\w*)", r"IN (SELECT unnest($\1))", spec["sql"])
    sql = re.sub(r"(?<![:\w]):([A-Za-z_]\w*)", r"$\1", sql)
    used = set(re.findall(r"\$([A-Za-z_]\w*)", sql))
    cur = con.execute(sql, {k: v for k, v in values.items() if k in used})
    columns = [d[0] for d in cur.description]
    rows = cur.fetchmany(spec.get("max_rows", 1000))
    table = spec.get("table", True)
    if table is False:
        return None
    chosen = table["columns"] if isinstance(table, dict) and table.get("columns") else columns
    headers = table.get("headers", {}) if isinstance(table, dict) else {}
    return [[headers.get(c, c) for c in chosen]] + [[to_cell(r[columns.index(c)]) for c in chosen] for r in rows]


# --- `mcpgen serve --http` processes on loopback ---------------------------------------------------
JSON_HEADERS = {
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
    "mcp-protocol-version": "2025-06-18",
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(args: list[str], env: dict | None = None, stderr=None) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "mcpgen.cli", "serve", *args],
        stdout=subprocess.PIPE,
        stderr=stderr or subprocess.PIPE,
        env={**os.environ, **(env or {})},
        cwd=REPO,
    )


def wait_healthy(proc: subprocess.Popen, port: int, seconds: float = 20) -> dict:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"server exited with {proc.returncode}")
        try:
            response = httpx2.get(f"http://127.0.0.1:{port}/healthz", timeout=1)
            if response.status_code == 200:
                return response.json()
        except httpx2.TransportError:
            pass
        time.sleep(0.1)
    raise AssertionError("server did not become healthy")


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# --- database services: PostgreSQL, MariaDB, and the cities table in each ----------------------------


@pytest.fixture(scope="session")
def postgres_url():
    """URL of the PostgreSQL test service; skips (or fails under MCPGEN_REQUIRE_SERVICES=1) when absent."""
    return services.require("postgresql")


@pytest.fixture(scope="session")
def mariadb_url():
    """URL of the MariaDB test service; skips (or fails under MCPGEN_REQUIRE_SERVICES=1) when absent."""
    return services.require("mariadb")


@pytest.fixture(scope="session")
def city_rows():
    """Every row of examples/data/cities.csv as typed tuples."""
    return services.read_cities(services.CITIES_CSV)


def _cities_table(service, rows):
    table = services.unique_name("cities")
    services.load_cities(service, table, rows)
    return table


@pytest.fixture(scope="session")
def postgres_cities(postgres_url, city_rows):
    """A cities table of this session's own in PostgreSQL (name: cities_<random>), dropped at the end."""
    table = _cities_table("postgresql", city_rows)
    yield table
    services.drop_table("postgresql", table)


@pytest.fixture(scope="session")
def mariadb_cities(mariadb_url, city_rows):
    """A cities table of this session's own in MariaDB (name: cities_<random>), dropped at the end."""
    table = _cities_table("mariadb", city_rows)
    yield table
    services.drop_table("mariadb", table)


@pytest.fixture(scope="session")
def rls_table(postgres_url):
    """A PostgreSQL table of services.ORDERS with one row-level security policy (rows whose email is the
    setting app.email), and a login role subject to it; both dropped at the end."""
    table, role = services.unique_name("orders"), services.unique_name("reader")
    with services.connect("postgresql") as con:
        con.execute(f"CREATE TABLE {table} (email text, id int, amount float8)")
        with con.cursor() as cur:
            cur.executemany(f"INSERT INTO {table} VALUES (%s, %s, %s)", services.ORDERS)
        con.execute(f"CREATE ROLE {role} LOGIN")
        con.execute(f"GRANT SELECT ON {table} TO {role}")
        con.execute(f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY")
        con.execute(f"CREATE POLICY own_rows ON {table} USING (email = current_setting('app.email', true))")
    yield table, role
    with services.connect("postgresql") as con:
        con.execute(f"DROP TABLE {table}")
        con.execute(f"DROP ROLE {role}")


# --- a local Spark cluster (mcpgen.spark_cluster): two executor JVMs behind a Spark Connect server ---


@pytest.fixture(scope="session")
def spark_cluster(tmp_path_factory):
    """A running LocalSparkCluster, stopped at the end of the session; skips (or fails under
    MCPGEN_REQUIRE_SERVICES=1) without pyspark or Java."""
    import shutil

    reason = None
    try:
        import pyspark  # noqa: F401
    except ImportError:
        reason = "Spark tests need pyspark: pip install -e '.[spark]'"
    if reason is None and shutil.which("java") is None:
        reason = "Spark tests need Java 17 (java is not on PATH)"
    if reason:
        if services.services_required():
            pytest.fail(f"MCPGEN_REQUIRE_SERVICES=1 but {reason}", pytrace=False)
        pytest.skip(reason)
    from mcpgen.spark_cluster import LocalSparkCluster

    cluster = LocalSparkCluster(workers=2, executor_memory="512m", folder=tmp_path_factory.mktemp("spark"))
    cluster.start()
    yield cluster
    cluster.stop()
