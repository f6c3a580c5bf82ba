"""The DuckDB functions a query may call come from DuckDB's catalogue: table functions by an
allow-list, scalar functions with side effects refused unless they only read; refused in
`validate` and by the engine itself, which asks its own connection (init macros included)."""

from __future__ import annotations

import textwrap

import pytest

from mcpgen.checks.duckdb_functions import (
    HARMLESS_SIDE_EFFECTS,
    TABLE_FUNCTIONS,
    default_catalogue,
    function_problems,
)
from mcpgen.engines.duckdb import DuckDBEngine
from mcpgen.engines.protocol import Prepared
from mcpgen.errors import UnsafeSQL
from mcpgen.load.project import load_project

REFUSED = [
    "SELECT * FROM json_execute_serialized_sql(json_serialize_sql(:q))",
    "SELECT * FROM query(:q)",
    "SELECT * FROM query('SELECT 1')",
    "SELECT * FROM query_table('t')",
    "SELECT * FROM \"query\"('SELECT 1')",
    "SELECT * FROM system.main.query('SELECT 1')",
    "SELECT * FROM (SELECT 1) a, LATERAL (SELECT * FROM QUERY('SELECT 2')) b",
    "SELECT * FROM checkpoint()",
    "SELECT * FROM force_checkpoint()",
    "SELECT * FROM enable_logging()",
    "SELECT * FROM duckdb_secrets()",
    "SELECT * FROM which_secret('s3://b/x', 's3')",
    "SELECT * FROM duckdb_settings()",
    "SELECT path FROM duckdb_databases()",
    "SELECT write_log('x')",
    "SELECT setseed(0.5)",
    "SELECT nextval('s')",
    "SELECT 's'.nextval()",
]
ALLOWED = [
    "SELECT * FROM range(3)",
    "SELECT * FROM generate_series(1, 3)",
    "SELECT range(3), repeat('a', 2), generate_series(1, 2)",
    "SELECT unnest([1, 2])",
    "SELECT * FROM read_csv('data/t.csv')",
    "SELECT * FROM 'data/t.csv'",
    "SELECT table_name FROM duckdb_tables()",
    "SELECT column_name FROM duckdb_columns()",
    "SELECT random(), uuid(), gen_random_uuid(), current_setting('threads')",
    "SELECT histogram(x) FROM range(3) t(x)",
    "SELECT json_serialize_sql('SELECT 1')",  # makes text; running it is what is refused
    "SELECT 'query(' AS s",
]


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    """A project folder: data/t.csv and an mcpgen.yaml holding a password."""
    folder = tmp_path_factory.mktemp("functions")
    (folder / "data").mkdir()
    (folder / "data" / "t.csv").write_text("id\n1\n2\n")
    (folder / "mcpgen.yaml").write_text("password: hunter2\n")
    return folder


@pytest.fixture(scope="module")
def shared_engine(root):
    """One engine for the module: the tests only prepare and run queries on it."""
    init = [
        "CREATE TABLE t AS SELECT * FROM read_csv('data/t.csv')",
        "CREATE MACRO doubled(n) AS TABLE SELECT id * n AS id FROM t",
    ]
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(root)
        e = DuckDBEngine("default", ":memory:", init, root)
    yield e
    e.close()


@pytest.fixture
def engine(shared_engine, root, monkeypatch):
    """The module's engine, from its project folder (the queries name files relative to it)."""
    monkeypatch.chdir(root)
    return shared_engine


def _project(tmp_path, sql: str):
    (tmp_path / "mcpgen.yaml").write_text("connections:\n  default:\n    duckdb: ':memory:'\n")
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "tool.yaml").write_text(
        textwrap.dedent(
            """\
            description: A tool.
            parameters:
              q: {{type: string, description: SQL, required: false}}
            sql: |
              {sql}
            sources: [https://example.org/]
            content: x
            """
        ).format(sql=sql + (" WHERE :q IS NULL" if ":q" not in sql and "WHERE" not in sql else ""))
    )
    return load_project(tmp_path / "specs")


def test_the_serialized_sql_finding_really_reads_the_project_config(engine):
    """Past the checks, the issue's query runs SQL the caller wrote: it reads mcpgen.yaml."""
    sql = "SELECT * FROM json_execute_serialized_sql(json_serialize_sql($q))"
    query = {"q": "SELECT content FROM read_text('mcpgen.yaml')"}
    rows = engine.run(Prepared(sql, frozenset({"q"})), query, 10, 5).rows
    assert "hunter2" in str(rows)
    with pytest.raises(UnsafeSQL, match="json_execute_serialized_sql.*runs SQL given as text"):
        engine.prepare("SELECT * FROM json_execute_serialized_sql(json_serialize_sql(:q))")


@pytest.mark.parametrize("sql", REFUSED)
def test_validate_refuses_functions_the_catalogue_does_not_allow(tmp_path, sql):
    errors = _project(tmp_path, sql).errors
    assert errors, f"{sql} passed validate"
    assert any("tool.yaml:5:" in str(p) and "calls" in str(p) for p in errors), errors


@pytest.mark.parametrize("sql", REFUSED)
def test_the_engine_refuses_them_itself(engine, sql):
    with pytest.raises(UnsafeSQL):
        engine.prepare(sql.replace(":q", "'SELECT 1'"))


@pytest.mark.parametrize("sql", ALLOWED)
def test_ordinary_functions_pass(engine, sql):
    assert function_problems(sql, default_catalogue()) == []
    engine.run(engine.prepare(sql), {}, 10, 5)


def test_a_table_macro_of_the_projects_init_is_the_projects_own(engine):
    assert engine.run(engine.prepare("SELECT sum(id) FROM doubled(10)"), {}, 10, 5).rows == [(30,)]


def test_every_table_function_the_catalogue_lists_is_refused_unless_allowed():
    """Decided from the catalogue: whatever this DuckDB ships (and a later one adds) is refused by default."""
    catalogue = default_catalogue()
    tables = {name for name, entry in catalogue.items() if entry.table}
    assert {"query", "query_table", "json_execute_serialized_sql", "read_csv", "range"} <= tables
    assert tables >= TABLE_FUNCTIONS, TABLE_FUNCTIONS - tables  # every allowed name is one DuckDB has
    for name in sorted(tables - TABLE_FUNCTIONS):
        assert function_problems(f"SELECT * FROM {name}()", catalogue), name
    effects = {name for name, entry in catalogue.items() if entry.side_effects and not entry.table}
    assert {"nextval", "setval", "setseed", "write_log"} <= effects - HARMLESS_SIDE_EFFECTS
    for name in sorted(effects - HARMLESS_SIDE_EFFECTS):
        assert function_problems(f"SELECT {name}(1)", catalogue), name


def test_the_engine_reads_its_catalogue_only_for_sql_that_calls_a_function(tmp_path):
    """Reading DuckDB's function catalogue costs a `mcpgen call` tens of milliseconds: a query that calls
    no function never reads it, and the first that calls one does, and is checked against it."""
    engine = DuckDBEngine("default", ":memory:", [], tmp_path)
    try:
        engine.run(engine.prepare("SELECT :n + 1 AS v", {"n": "integer"}), {"n": 1}, 10, 5)
        assert engine._catalogue is None
        with pytest.raises(UnsafeSQL):
            engine.prepare("SELECT * FROM query('SELECT 1')")
        assert engine._catalogue is not None and engine._catalogue["query"].table
    finally:
        engine.close()
