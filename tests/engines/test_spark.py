"""Spark through Spark Connect, on a real local cluster (two executor JVMs; tests/conftest.py).

The shipped specs' tables against DuckDB's are in tests/portable/test_portable_specs.py. Here: the real
`mcpgen serve` against the same query sent directly with pyspark, the time limit cancelling
the job (gone from the REST API), an executor killed mid-query, read-only, a cluster that is
down, and `validate --live`."""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import threading
import time
from pathlib import Path

import anyio
import pytest
import yaml
from mcp import Client, StdioServerParameters

from mcpgen.answer.results import to_cell
from mcpgen.commands.validate import run_validate
from mcpgen.engines.protocol import Prepared
from mcpgen.engines.spark import SparkEngine, SparkUnavailable, _Statement
from mcpgen.errors import QueryError, QueryTimeout, UnsafeSQL
from mcpgen.spark_cluster import example_tables, free_port

REPO = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.slow, pytest.mark.spark, pytest.mark.timeout(900)]
BIG_SUM = "SELECT sum(id % 13) AS s FROM range(0, 2000000000, 1, 16)"  # 10-20 s on two executors
BIG_SUM_VALUE = sum(i % 13 for i in range(13)) * (2000000000 // 13) + sum(i % 13 for i in range(2000000000 % 13))


@pytest.fixture(scope="module")
def lake(spark_cluster, tmp_path_factory):
    """The example data as tables of a database of this module's own."""
    database = f"mcpgen_spark_{secrets.token_hex(4)}"
    folder = tmp_path_factory.mktemp("spark_data")
    spark_cluster.load_tables(example_tables(REPO / "examples" / "data", folder), database)
    return database


@pytest.fixture
def engine(spark_cluster, lake):
    engine = SparkEngine("lake", spark_cluster.remote, database=lake)
    yield engine
    engine.close()


def _running_jobs(cluster) -> list[dict]:
    return cluster.rest("jobs?status=running")


def test_serve_answers_what_spark_answers_directly(spark_cluster, lake, tmp_path):
    """The real server over stdio and the official client; the same SQL sent with pyspark
    (selecting the columns of the spec's `table:`)."""
    (tmp_path / "mcpgen.yaml").write_text(
        yaml.safe_dump({"connections": {"default": {"spark": spark_cluster.remote, "database": lake}}})
    )
    specs = tmp_path / "specs"
    specs.mkdir()
    for name in ("top_cities", "carrier_performance"):
        shutil.copyfile(REPO / "specs" / f"{name}.yaml", specs / f"{name}.yaml")
    direct = {
        "top_cities": f"""SELECT ci.name AS city, co.name AS country_name, ci.population, ci.timezone
            FROM {lake}.cities ci LEFT JOIN {lake}.countries co ON co.iso = ci.country_code
            WHERE ci.country_code = 'JP' ORDER BY ci.population DESC, ci.name LIMIT 3""",
        "carrier_performance": f"""SELECT f.carrier, al.name AS airline, COUNT(*) AS flights,
              SUM(CASE WHEN f.dep_delay <= 15 THEN 1 ELSE 0 END) AS on_time,
              SUM(CASE WHEN f.dep_delay > 15 THEN 1 ELSE 0 END) AS late,
              SUM(CASE WHEN f.dep_time IS NULL THEN 1 ELSE 0 END) AS cancelled
            FROM {lake}.flights f LEFT JOIN {lake}.airlines al ON al.carrier = f.carrier
            WHERE make_date(f.year, f.month, f.day) BETWEEN DATE'2013-12-24' AND DATE'2013-12-26'
              AND f.origin IN ('JFK', 'LGA')
            GROUP BY f.carrier, al.name ORDER BY flights DESC, f.carrier""",
    }
    args = {
        "top_cities": {"country": "JP", "top_n": 3},
        "carrier_performance": {"start": "2013-12-24", "end": "2013-12-26", "origins": ["JFK", "LGA"]},
    }
    (want_cities,), (want_carriers,) = [spark_cluster.sql(direct[n]) for n in direct]
    want = {"top_cities": want_cities, "carrier_performance": want_carriers}

    async def check():
        params = StdioServerParameters(command=shutil.which("mcpgen"), args=["serve", str(specs)], env={**os.environ})
        async with Client(params) as client:
            for name, arguments in args.items():
                result = await client.call_tool(name, arguments)
                assert not result.is_error, result.content[0].text
                table = result.structured_content["table"]
                assert table[1:] == [[to_cell(v) for v in row] for row in want[name]], name
                assert len(table) > 2

    anyio.run(check)


def test_the_time_limit_cancels_the_job(engine, spark_cluster):
    # Many small tasks: the first finishes within seconds even on a loaded machine, so progress shows before
    # the cancel; the whole job would still run for minutes.
    query = engine.prepare("SELECT sum(id % 13) AS s FROM range(0, 200000000000, 1, 4000)")
    start = time.monotonic()
    with pytest.raises(QueryTimeout, match="longer than 3 s and was cancelled"):
        engine.run(query, {}, max_rows=10, timeout=3)
    assert time.monotonic() - start < 15
    deadline = time.monotonic() + 20
    while _running_jobs(spark_cluster) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert _running_jobs(spark_cluster) == [], "the cancelled job still runs"
    assert engine.run(engine.prepare("SELECT 1 AS one"), {}, 10, 30).rows == [(1,)]


def test_a_killed_executor_is_survived(engine, spark_cluster):
    """SIGKILL one executor JVM while a job runs on both: Spark reruns its tasks elsewhere (or the
    call fails in one sentence); either way the next call is answered and the executor comes back."""
    box: dict = {}

    def call():
        try:
            box["rows"] = engine.run(engine.prepare(BIG_SUM), {}, max_rows=10, timeout=240).rows
        except QueryError as exc:
            box["error"] = str(exc)

    worker = threading.Thread(target=call)
    worker.start()
    deadline = time.monotonic() + 60
    while not _running_jobs(spark_cluster) and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(2)  # tasks are running on both executors
    victims = spark_cluster.executor_pids()
    assert len(victims) == 2, victims
    os.kill(victims[0], signal.SIGKILL)
    worker.join(300)
    assert not worker.is_alive()
    if "rows" in box:
        assert box["rows"] == [(BIG_SUM_VALUE,)]
    else:
        assert box["error"].startswith("the query failed: ") and "\n" not in box["error"]
    assert engine.run(engine.prepare("SELECT count(*) AS n FROM airlines"), {}, 10, 60).rows == [(16,)]
    deadline = time.monotonic() + 120
    while len(spark_cluster.executor_pids()) < 2 and time.monotonic() < deadline:
        time.sleep(1)
    assert len(spark_cluster.executor_pids()) == 2, "the worker did not start a new executor"


@pytest.mark.parametrize(
    "sql",
    ["DROP TABLE cities", "INSERT INTO cities SELECT * FROM cities", "CREATE TABLE x AS SELECT 1 AS a", "SET a = 1"],
)
def test_no_write_is_sent(engine, sql):
    with pytest.raises(UnsafeSQL):
        engine.prepare(sql)


def test_spark_itself_refuses_a_statement_that_slipped_through(engine, spark_cluster, lake):
    """Even past the check, a statement only reaches Spark inside SELECT * FROM (...): a syntax error there."""
    smuggled = Prepared(_Statement(("SELECT * FROM (\nDROP TABLE cities\n) AS mcpgen_q",), {}), frozenset())
    with pytest.raises(QueryError, match="PARSE_SYNTAX_ERROR"):
        engine.run(smuggled, {}, 10, 30)
    assert spark_cluster.sql(f"SELECT count(*) > 0 FROM {lake}.cities") == [[(True,)]]


def test_values_are_bound_and_typed(engine):
    query = engine.prepare(
        "SELECT count(*) AS n FROM cities WHERE (:cc IS NULL OR country_code = :cc) AND country_code IN :codes",
        {"cc": "string", "codes": "string[]"},
    )
    assert engine.run(query, {"cc": "'; DROP TABLE cities; --", "codes": ["JP"]}, 10, 60).rows == [(0,)]
    assert engine.run(query, {"cc": None, "codes": []}, 10, 60).rows == [(0,)]
    (japan,) = engine.run(query, {"cc": None, "codes": ["JP"]}, 10, 60).rows
    assert japan[0] > 10
    capped = engine.run(engine.prepare("SELECT name FROM cities ORDER BY name"), {}, max_rows=5, timeout=60)
    assert len(capped.rows) == 5 and capped.truncated and capped.columns == ["name"]


def test_a_cluster_that_is_down_fails_fast():
    engine = SparkEngine("gone", f"sc://127.0.0.1:{free_port()}")
    query = engine.prepare("SELECT 1 AS one")
    start = time.monotonic()
    with pytest.raises(SparkUnavailable, match="^connection 'gone' is unavailable: "):
        engine.run(query, {}, 10, 30)
    assert time.monotonic() - start < 10
    start = time.monotonic()
    with pytest.raises(SparkUnavailable):
        engine.run(query, {}, 10, 30)
    assert time.monotonic() - start < 0.5, "a second call while down waited for the network"
    engine.close()


def test_validate_live_describes_every_shipped_spec(spark_cluster, lake, tmp_path):
    (tmp_path / "mcpgen.yaml").write_text(
        yaml.safe_dump({"connections": {"default": {"spark": spark_cluster.remote, "database": lake}}})
    )
    specs = tmp_path / "specs"
    specs.mkdir()
    for path in (REPO / "specs").glob("*.yaml"):
        shutil.copyfile(path, specs / path.name)
    report = run_validate(specs, live=True, timeout=60)
    assert report.errors == [] and report.connections == {"default": "ok"}


def test_describe_gives_spark_types(engine):
    query = engine.prepare(
        "SELECT name, population FROM cities WHERE population > :p LIMIT :n", {"p": "integer", "n": "integer"}
    )
    assert engine.describe(query, timeout=60) == [("name", "string"), ("population", "bigint")]


def test_a_cancelled_call_stops_its_job_and_progress_is_read_from_its_stages(engine, spark_cluster):
    """notifications/cancelled reaches the engine as CallControl.cancel(): the job's tag is interrupted."""
    from mcpgen.engines.control import CURRENT, CallControl
    from mcpgen.errors import QueryCancelled

    # Many small tasks: the first finishes within seconds even on a loaded machine, so progress shows before
    # the cancel; the whole job would still run for minutes.
    query = engine.prepare("SELECT sum(id % 13) AS s FROM range(0, 200000000000, 1, 4000)")
    control, outcome, seen = CallControl(), {}, []

    def work():
        CURRENT.set(control)
        try:
            engine.run(query, {}, max_rows=10, timeout=120)
        except Exception as exc:
            outcome["error"] = exc

    thread = threading.Thread(target=work)
    thread.start()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not seen:  # tasks finish: the share done grows above 0
        value = control.progress()
        if value:
            seen.append(value)
        time.sleep(0.2)
    control.cancel()
    thread.join(30)
    assert not thread.is_alive() and isinstance(outcome.get("error"), QueryCancelled), outcome
    assert seen and 0 < seen[0] <= 100
    deadline = time.monotonic() + 20
    while _running_jobs(spark_cluster) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert _running_jobs(spark_cluster) == [], "the cancelled job still runs"
    assert engine.run(engine.prepare("SELECT 1 AS one"), {}, 10, 30).rows == [(1,)]


# -- Spark's catalogue and its settings ---------------------------------------------------------------

ROWS = [(1, 30, "x"), (2, 20, "y"), (3, 10, "x")]  # a ascending where b descends: the readings differ
# A name that is both a select alias and t's column, where DuckDB reads the column or (a bare ORDER BY,
# HAVING) the alias; plain validate warns where its translation needs the catalogue.
SHADOWED = {
    "order_expression": "SELECT b AS a FROM t ORDER BY a * 1",
    "where": "SELECT b AS a FROM t WHERE a > 1 ORDER BY 1",
    "window_order": "SELECT b AS a, row_number() OVER (ORDER BY a) AS r FROM t ORDER BY r",
    "order_bare": "SELECT b AS a, a AS b FROM t ORDER BY a",
    "group_by": "SELECT c AS a, count(*) AS n FROM t GROUP BY a, c ORDER BY 1, 2",
    "having_ungrouped": "SELECT c, sum(b) AS a FROM t GROUP BY c HAVING a > 25 ORDER BY c",
    "window_partition": "SELECT c AS a, b, row_number() OVER (PARTITION BY a ORDER BY b) AS r FROM t ORDER BY b",
}


@pytest.fixture(scope="module")
def shadow(spark_cluster, lake, tmp_path_factory):
    """Table sql_t (a, b, c) of ROWS in the lake, and the same table t in DuckDB."""
    import duckdb

    duck = duckdb.connect()
    duck.execute("CREATE TABLE t AS SELECT * FROM (VALUES (1, 30, 'x'), (2, 20, 'y'), (3, 10, 'x')) AS v (a, b, c)")
    path = tmp_path_factory.mktemp("sql_t") / "sql_t.parquet"
    duck.execute(f"COPY t TO '{path}' (FORMAT parquet)")
    spark_cluster.load_tables({"sql_t": path}, lake)
    return duck


def test_the_catalogue_gives_every_databases_tables_and_the_current_ones_unqualified(engine, lake, shadow):
    columns = engine.column_types(60)
    assert columns[f"{lake}.sql_t"] == {"a": "BIGINT", "b": "BIGINT", "c": "VARCHAR"}
    assert columns["sql_t"] == columns[f"{lake}.sql_t"]
    assert {"name", "population", "country_code"} <= set(columns["cities"])


@pytest.mark.parametrize("shape", SHADOWED)
def test_serve_translates_an_alias_with_sparks_catalogue_and_gives_duckdbs_rows(
    shape, spark_cluster, lake, shadow, tmp_path, monkeypatch
):
    """Plain validate warns that `a` may be a column; serve reads Spark's catalogue, finds it is, and
    answers as DuckDB does (before, Spark had no catalogue and the warning's reading stood)."""
    from mcpgen.load.project import load_project
    from mcpgen.serve.project import open_project

    monkeypatch.chdir(tmp_path)
    (tmp_path / "mcpgen.yaml").write_text(
        yaml.safe_dump({"connections": {"default": {"spark": spark_cluster.remote, "database": lake}}})
    )
    (tmp_path / "specs").mkdir()
    sql = SHADOWED[shape].replace(" t ", " sql_t ")
    (tmp_path / "specs" / "shadow.yaml").write_text(
        f"description: d\nsources: [https://example.org/]\ncontent: '{{{{ row_count }}}}'\nsql: {sql}\n"
    )
    warned = any("is translated for Spark SQL" in p.message for p in load_project(tmp_path / "specs").problems)
    assert warned == (shape not in ("group_by", "having_ungrouped"))  # those read no catalogue
    project = open_project(tmp_path / "specs")
    try:
        table = project.registry.call_sync("shadow", {}).structured_content["table"]
    finally:
        project.close()
    assert [tuple(row) for row in table[1:]] == shadow.execute(SHADOWED[shape]).fetchall()


BAD_SETTINGS = {
    "conf_value": (
        {"conf": {"spark.sql.ansi.enabled": "maybe"}},
        (6, 7),
        "conf: spark.sql.ansi.enabled: Spark refuses it",
    ),
    "static_conf": (
        {"conf": {"spark.sql.warehouse.dir": "/tmp"}},
        (6, 7),
        "conf: spark.sql.warehouse.dir: Spark refuses it",
    ),
    "database": ({"database": "sql_no_such_database"}, (4, 5), "database: Spark refuses it: [SCHEMA_NOT_FOUND]"),
}


@pytest.mark.parametrize("bad", BAD_SETTINGS)
def test_a_setting_spark_refuses_is_said_at_its_place_at_start(bad, spark_cluster, lake, tmp_path, monkeypatch):
    """validate --live, call and serve say it at the setting's line and column in mcpgen.yaml, before any call
    (it was said at the first call, by the call)."""
    from click.testing import CliRunner

    from mcpgen.cli import main

    settings, (line, col), sentence = BAD_SETTINGS[bad]
    monkeypatch.chdir(tmp_path)
    connection = {"spark": spark_cluster.remote, "database": lake, **settings}
    text = "connections:\n  default:\n" + "".join(
        f"    {k}: {v}\n"
        if not isinstance(v, dict)
        else f"    {k}:\n" + "".join(f"      {ck}: {cv}\n" for ck, cv in v.items())
        for k, v in connection.items()
    )
    (tmp_path / "mcpgen.yaml").write_text(text)
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "one.yaml").write_text(
        "description: d\nsources: [https://example.org/]\ncontent: '{{ row_count }}'\nsql: SELECT 1 AS one\n"
    )
    for command in (["validate", "--live", "--timeout", "60", "specs"], ["call", "one", "--specs", "specs"]):
        result = CliRunner().invoke(main, command)
        assert result.exit_code != 0, result.output
        said = result.output.replace("error: ", "")  # validate says the severity, call does not
        assert f"mcpgen.yaml:{line}:{col}: connection 'default': {sentence}" in said, result.output
        assert "Traceback" not in result.output
