"""A name that is both a select alias and a table's column: DuckDB reads it as the alias in a bare ORDER BY
and as the column elsewhere (ORDER BY expressions, GROUP BY, WHERE, windows, QUALIFY). Each translation
gives DuckDB's rows on the real engine, with the table's columns known (as serve reads them), or is
refused; without them (plain validate), a shape whose reading depends on them is translated as if no
table's column had the alias's name, with a warning, and serve translates it again from the catalogue."""

from __future__ import annotations

import re
import sqlite3

import duckdb
import pytest

from mcpgen.sql.transpile import Untranslatable, transpile

ROWS = [(1, 30, "x"), (2, 20, "y"), (3, 10, "x")]  # a ascending where b descends: the readings differ
SERVICES = {"postgres": "postgresql", "mysql": "mariadb"}
COLUMNS = {"t": {"a": "INTEGER", "b": "INTEGER", "c": "VARCHAR"}}

SHAPES = {
    "order_bare": "SELECT b AS a, a AS b FROM t ORDER BY a",
    "order_expression": "SELECT b AS a FROM t ORDER BY a * 1",
    "order_expression_alias_only": "SELECT b AS z FROM t ORDER BY z * -1",
    "where": "SELECT b AS a FROM t WHERE a > 1 ORDER BY 1",
    "group_by": "SELECT c AS a, count(*) AS n FROM t GROUP BY a, c ORDER BY 1, 2",
    "having_ungrouped": "SELECT c, sum(b) AS a FROM t GROUP BY c HAVING a > 25 ORDER BY c",
    "having_grouped": "SELECT c, a * 100 AS a FROM t GROUP BY c, t.a HAVING a > 150 ORDER BY 1, 2",
    "having_in_aggregate": "SELECT c, sum(b) AS a FROM t GROUP BY c HAVING sum(a) > 4 ORDER BY c",
    "window_order": "SELECT b AS a, row_number() OVER (ORDER BY a) AS r FROM t ORDER BY r",
    "window_partition": "SELECT c AS a, b, row_number() OVER (PARTITION BY a ORDER BY b) AS r FROM t ORDER BY b",
    "percent_modulo": "SELECT b % 7 AS a FROM t ORDER BY a",
    "percent_text": "SELECT c || '%' AS a FROM t WHERE c LIKE 'x%' ORDER BY b",
}
REFUSED = {
    "qualify_window": "SELECT b AS a FROM t QUALIFY row_number() OVER (ORDER BY a) = 1",
    "qualify_name": "SELECT b AS a, row_number() OVER (ORDER BY b) AS r FROM t QUALIFY a > 15 ORDER BY 1",
}


def _loaded(columns: str, rows: list[tuple], prefix: str):
    """A table of `columns` (`name TYPE, ...`, VARCHAR(8) for text) holding `rows`, named t in DuckDB and
    SQLite and under a name of its own in PostgreSQL and MariaDB where they answer: target -> (its name,
    a connection to run a query). A generator: the tables are dropped when it resumes."""
    import services

    made = {}
    marks = ", ".join("?" * len(rows[0]))
    duck, lite = duckdb.connect(), sqlite3.connect(":memory:")
    for con in (duck, lite):
        con.execute(f"CREATE TABLE t ({columns})")
        con.executemany(f"INSERT INTO t VALUES ({marks})", rows)
    made["duckdb"], made["sqlite"] = ("t", duck), ("t", lite)
    for target, service in SERVICES.items():
        if services._absent(service):
            continue
        name = services.unique_name(prefix)
        con = services.connect(service)
        with con.cursor() as cur:
            cur.execute(f"CREATE TABLE {name} ({columns})")
            cur.executemany(f"INSERT INTO {name} VALUES ({marks.replace('?', '%s')})", rows)
        made[target] = (name, con)
    yield made
    for target, service in SERVICES.items():
        if target in made:
            services.drop_table(service, made[target][0])
            made[target][1].close()
    duck.close()
    lite.close()


@pytest.fixture(scope="module")
def tables():
    """Table t (a INTEGER, b INTEGER, c text) of ROWS on each engine (`_loaded`)."""
    yield from _loaded("a INTEGER, b INTEGER, c VARCHAR(5)", ROWS, "shadow")


def run(tables, target: str, sql: str, columns: dict | None = None, guessed: list | None = None) -> list[tuple]:
    """`sql`, written for table t, translated for `target` with the tables' columns as its catalogue
    gives them (as serve reads them; or `columns`, t's; given `guessed`, without them, as plain validate
    does, its guesses added there), and run there."""
    import services

    if target not in tables:
        services.require(SERVICES[target])  # skips, or fails under MCPGEN_REQUIRE_SERVICES=1
    name, con = tables[target]
    sql = sql.replace(" t ", f" {name} ").replace("t.a", f"{name}.a")
    if target == "duckdb":
        return con.execute(sql).fetchall()
    if guessed is not None:
        text = transpile(sql, "duckdb", target, guessed=guessed)
    else:
        text = transpile(sql, "duckdb", target, columns={name: (columns or COLUMNS)["t"]})
    if target == "sqlite":
        return con.execute(text).fetchall()
    with con.cursor() as cur:
        cur.execute(text)  # no parameters: psycopg and pymysql read no placeholder, a % stays a %
        return [tuple(v if v is None or isinstance(v, str) else int(v) for v in row) for row in cur.fetchall()]


@pytest.mark.parametrize("target", ["postgres", "mysql", "sqlite"])
@pytest.mark.parametrize("shape", SHAPES)
def test_each_shape_gives_duckdbs_rows(shape, target, tables):
    assert run(tables, target, SHAPES[shape]) == run(tables, "duckdb", SHAPES[shape])


def test_the_catalogue_gives_the_columns_serve_translates_with(tables):
    """The columns `run` passes are those the database's catalogue gives (information_schema.columns)."""
    import services

    from mcpgen.engines.sqlalchemy.engine import SQLAlchemyEngine
    from mcpgen.spec.config import URLConnection

    url = services.require("postgresql")
    engine = SQLAlchemyEngine("db", URLConnection(url=url))
    try:
        columns = engine.column_types(10)
    finally:
        engine.close()
    assert set(columns[tables["postgres"][0]]) == {"a", "b", "c"}


@pytest.mark.parametrize("target", ["postgres", "mysql", "sqlite", "spark"])
@pytest.mark.parametrize("shape", REFUSED)
def test_qualify_on_a_shadowing_alias_is_refused(shape, target):
    with pytest.raises(Untranslatable, match=r"`a` in .* names both a result column's alias and a table's column"):
        transpile(REFUSED[shape], "duckdb", target, columns=COLUMNS)


# What analysts write over a base table, whose columns plain validate does not know.
UNSHADOWED = {
    "qualify": "SELECT c, b, row_number() OVER (PARTITION BY c ORDER BY b) AS rn FROM t QUALIFY rn = 1 ORDER BY c",
    "order_expression": "SELECT c, b * 2 AS d FROM t ORDER BY CASE WHEN d > 30 THEN 0 ELSE 1 END, d",
}
WITHOUT_THE_ALIASES = {"t": {"b": "INTEGER", "c": "VARCHAR"}}  # no column of t is named a, rn or d


@pytest.mark.parametrize(
    ("target", "sql", "alias", "place"),
    [
        ("postgres", SHAPES["order_expression"], "a", "ORDER BY"),
        ("mysql", SHAPES["group_by"], "a", "GROUP BY"),
        ("mysql", SHAPES["window_order"], "a", "a window's ORDER BY or PARTITION BY"),
        *((t, UNSHADOWED["qualify"], "rn", "QUALIFY") for t in ("postgres", "mysql", "sqlite")),
        ("postgres", UNSHADOWED["order_expression"], "d", "ORDER BY"),
    ],
)
def test_without_the_tables_columns_the_alias_is_read_as_no_column_with_a_warning(target, sql, alias, place):
    guessed: list = []
    assert transpile(sql, "duckdb", target, guessed=guessed) == transpile(
        sql, "duckdb", target, columns=WITHOUT_THE_ALIASES
    )
    engine = {"postgres": "PostgreSQL", "mysql": "MariaDB/MySQL", "sqlite": "SQLite"}[target]
    (line, col, sentence) = guessed[0]
    assert (line, col) != (None, None)
    assert sentence.startswith(f"`{alias}` in {place} is translated for {engine} as a result column's alias")
    assert "validate --live and serve check it against the tables" in sentence


@pytest.mark.parametrize("target", ["postgres", "mysql", "sqlite"])
@pytest.mark.parametrize("shape", UNSHADOWED)
def test_where_no_column_shadows_the_guess_gives_duckdbs_rows(shape, target, tables):
    assert run(tables, target, UNSHADOWED[shape], WITHOUT_THE_ALIASES) == run(tables, "duckdb", UNSHADOWED[shape])


URLS = {"postgres": "postgresql://127.0.0.1:5432/test", "mysql": "mysql+pymysql://root@127.0.0.1:3306/test"}


@pytest.mark.parametrize(
    ("shape", "target"),
    [("qualify", "postgres"), ("qualify", "mysql"), ("qualify", "sqlite"), ("order_expression", "postgres")],
)
def test_plain_validate_warns_and_passes(shape, target, tmp_path, monkeypatch):
    """Plain validate connects nowhere: the spec passes, with one warning at the alias."""
    from click.testing import CliRunner

    from mcpgen.cli import main

    monkeypatch.chdir(tmp_path)
    url = URLS.get(target, "sqlite:///shop.sqlite")
    (tmp_path / "mcpgen.yaml").write_text(f"connections:\n  default:\n    url: {url}\n")
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "latest.yaml").write_text(
        f"description: d\nsources: [https://example.org/]\ncontent: '{{{{ row_count }}}}'\nsql: {UNSHADOWED[shape]}\n"
    )
    result = CliRunner().invoke(main, ["validate", "specs"])
    assert result.exit_code == 0, result.output
    assert "warning: `" in result.output and "validate --live and serve check it against the tables" in result.output


def test_a_subquerys_or_ctes_columns_are_known_without_the_catalogue():
    kept = [
        "SELECT b AS a FROM (SELECT 1 AS a, 2 AS b) AS s ORDER BY a * 1",
        "WITH s AS (SELECT 1 AS a, 2 AS b) SELECT b AS a FROM s ORDER BY a * 1",
        "SELECT b AS a FROM (SELECT 1, 2) AS s (a, b) ORDER BY a * 1",
    ]
    for sql in kept:
        assert "ORDER BY\n  a * 1" in transpile(sql, "duckdb", "postgres"), sql
    written_out = "SELECT y AS a FROM (SELECT 1 AS a, 2 AS b) AS s (x, y) ORDER BY a * 1"
    assert "ORDER BY\n  (\n    y\n  ) * 1" in transpile(written_out, "duckdb", "postgres")


def test_serve_translates_with_the_catalogue_where_validate_warns(tables, tmp_path, monkeypatch):
    """Plain validate cannot tell whether `a` is a column of the table and warns; serve reads the
    catalogue and sorts by the column, as DuckDB does."""
    import services

    from mcpgen.load.project import load_project
    from mcpgen.serve.project import open_project

    url = services.require("postgresql")
    monkeypatch.chdir(tmp_path)  # serve works from the project's folder; the test's own is given back
    name = tables["postgres"][0]
    (tmp_path / "mcpgen.yaml").write_text(f"connections:\n  default:\n    url: {url}\n")
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "shadow.yaml").write_text(
        "description: d\nsources: [https://example.org/]\ncontent: '{{ row_count }}'\n"
        f"sql: SELECT b AS a FROM {name} ORDER BY a * 1\n"
    )
    loaded = load_project(tmp_path / "specs")
    assert loaded.errors == []
    assert any("`a` in ORDER BY is translated for PostgreSQL" in str(p) for p in loaded.problems)
    project = open_project(tmp_path / "specs")
    try:
        table = project.registry.call_sync("shadow", {}).structured_content["table"]
    finally:
        project.close()
    assert table == [["a"], *([v] for (v,) in run(tables, "duckdb", SHAPES["order_expression"]))]


def test_where_serve_cannot_read_the_columns_the_warnings_translation_stands(tmp_path):
    from spec_projects import postgres_project

    from mcpgen.errors import MCPGenError
    from mcpgen.load.spec_checks import learn_column_types

    loaded = postgres_project(tmp_path, UNSHADOWED["qualify"])
    (spec,) = loaded.specs
    guessed = spec.sql

    def unreadable(name):
        raise MCPGenError("connection 'default' did not answer")

    learn_column_types(loaded, unreadable)
    assert loaded.errors == [] and spec.sql == guessed
    assert guessed == transpile(UNSHADOWED["qualify"], "duckdb", "postgres", columns=WITHOUT_THE_ALIASES)
    (warning,) = [p for p in loaded.problems if "`rn` in QUALIFY" in p.message]
    assert "the column types could not be read: connection 'default' did not answer" in warning.message


def test_validate_live_reads_the_columns_and_drops_the_warning(tables, tmp_path, monkeypatch):
    """validate --live translates again with the catalogue: `a` is t's column, so no warning is left."""
    import services
    from click.testing import CliRunner

    from mcpgen.cli import main

    url = services.require("postgresql")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mcpgen.yaml").write_text(f"connections:\n  default:\n    url: {url}\n")
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "shadow.yaml").write_text(
        "description: d\nsources: [https://example.org/]\ncontent: '{{ row_count }}'\n"
        f"sql: SELECT b AS a FROM {tables['postgres'][0]} ORDER BY a * 1\n"
    )
    plain = CliRunner().invoke(main, ["validate", "specs"])
    assert plain.exit_code == 0 and "`a` in ORDER BY is translated for PostgreSQL" in plain.output
    live = CliRunner().invoke(main, ["validate", "--live", "--timeout", "5", "specs"])
    assert live.exit_code == 0, live.output
    assert "is translated for" not in live.output


def test_a_table_the_catalogue_does_not_list_is_refused_with_a_sentence():
    from mcpgen.sql.transpile import NeedsColumnTypes

    with pytest.raises(NeedsColumnTypes, match=r"the database's catalogue does not list the table it reads from"):
        transpile(SHAPES["order_expression"], "duckdb", "postgres", columns={"other": {"x": "INTEGER"}})


# -- a select alias named where the target reads none ------------------------------------------------
# DuckDB reads a select alias in WHERE, in a window and in a later select item when no table's column has
# its name; sqlglot writes QUALIFY as a filter around the query. The shapes follow DuckDB's documentation
# (QUALIFY, reusable aliases) and MySQL's (column aliases), each with the engines it failed on.

SALES = [
    ("east", "alice", 12050),
    ("east", "carol", 8000),
    ("east", "frank", 2000),
    ("north", "dave", 31000),
    ("west", "bob", 7500),
    ("west", "erin", 4000),
    ("west", "gina", None),
]
SALES_COLUMNS = {"t": {"region": "VARCHAR", "customer": "VARCHAR", "amount": "INTEGER"}}
ALL = ("postgres", "mysql", "sqlite")
WRITTEN_OUT = {
    "where": ("SELECT customer, amount * 2 AS doubled FROM t WHERE doubled > 15000 ORDER BY customer", ALL[:2]),
    "where_reused": (
        "SELECT customer, substr(customer, 2) AS part, substr(part, 2) AS more FROM t WHERE more = 'ice' ORDER BY 1",
        ALL,
    ),
    "select_reused": ("SELECT customer, amount + 1 AS plus, plus * 3 AS tripled FROM t ORDER BY customer", ALL),
    "window_partition": (
        "SELECT customer, upper(region) AS area, row_number() OVER (PARTITION BY area ORDER BY amount DESC) AS n "
        "FROM t ORDER BY customer",
        ("postgres", "sqlite"),
    ),
    "window_on_an_aggregate": (
        "SELECT region, sum(amount) AS total, rank() OVER (ORDER BY total DESC) AS place FROM t GROUP BY region "
        "ORDER BY region",
        ("postgres", "sqlite"),
    ),
    "named_window": (
        "SELECT customer, -amount AS loss, rank() OVER w AS n FROM t WINDOW w AS (PARTITION BY region ORDER BY loss) "
        "ORDER BY customer",
        ("postgres", "sqlite"),
    ),
    "qualify_limit": (
        "SELECT region, customer, amount FROM t QUALIFY row_number() OVER (PARTITION BY region ORDER BY amount DESC "
        "NULLS LAST) = 1 ORDER BY region DESC LIMIT 2",
        ALL,
    ),
    "qualify_alias_offset": (
        "SELECT region, customer, rank() OVER (PARTITION BY region ORDER BY amount DESC NULLS LAST) AS rank_in_region "
        "FROM t QUALIFY rank_in_region <= 2 ORDER BY region, rank_in_region LIMIT 3 OFFSET 1",
        ALL,
    ),
    "qualify_unreturned_key": (
        "SELECT customer FROM t QUALIFY rank() OVER (PARTITION BY region ORDER BY amount DESC NULLS LAST) = 1 "
        "ORDER BY amount DESC LIMIT 3",
        ALL,
    ),
}


@pytest.fixture(scope="module")
def sales():
    """Table t (region, customer, amount) of SALES on each engine (`_loaded`)."""
    yield from _loaded("region VARCHAR(8), customer VARCHAR(8), amount INTEGER", SALES, "sales")


@pytest.mark.parametrize(
    ("shape", "target"), [(shape, target) for shape, (_, broken) in WRITTEN_OUT.items() for target in broken]
)
def test_a_select_alias_where_the_target_reads_none_gives_duckdbs_rows(shape, target, sales):
    sql = WRITTEN_OUT[shape][0]
    assert run(sales, target, sql, SALES_COLUMNS) == run(sales, "duckdb", sql)


QUALIFIED = [sql for shape, (sql, _) in WRITTEN_OUT.items() if shape.startswith("qualify")] + [
    "SELECT region, customer, rank() OVER (PARTITION BY region ORDER BY amount DESC) AS r FROM t QUALIFY r <= 2 "
    "ORDER BY region, r"
]


@pytest.mark.parametrize("target", [*ALL, "spark"])
@pytest.mark.parametrize("sql", QUALIFIED)
def test_a_qualify_translation_orders_its_outermost_query(sql, target):
    """Rows come back in DuckDB's order only if the outermost query has the ORDER BY."""
    from mcpgen.sql.pages import limits_rows, orders_rows

    out = transpile(sql, "duckdb", target, columns=SALES_COLUMNS)
    assert orders_rows(out, target), out
    assert limits_rows(out, target) == ("LIMIT" in sql), out


REFUSED_EVERYWHERE = {
    "SELECT region, sum(amount) AS total FROM t WHERE total > 100 GROUP BY region": (
        "`total` in WHERE names a result column that is an aggregate or window function, which DuckDB refuses there"
    ),
    "SELECT customer, row_number() OVER (ORDER BY amount) AS n FROM t WHERE n > 1": (
        "`n` in WHERE names a result column that is an aggregate or window function, which DuckDB refuses there"
    ),
    "SELECT sum(amount) AS total, sum(total) AS twice FROM t": (
        "`total` in the select list names a result column that is an aggregate or window function, which DuckDB "
        "refuses there"
    ),
}


@pytest.mark.parametrize("target", [*ALL, "spark"])
@pytest.mark.parametrize("sql", REFUSED_EVERYWHERE)
def test_an_aggregates_or_windows_alias_in_where_is_refused_as_duckdb_refuses_it(sql, target, sales):
    with pytest.raises(duckdb.BinderException):
        run(sales, "duckdb", sql)
    with pytest.raises(Untranslatable, match=re.escape(REFUSED_EVERYWHERE[sql])):
        transpile(sql, "duckdb", target, columns=SALES_COLUMNS)


# A name the alias's own expression reads, or that DuckDB could not read as the alias there, is a table's
# column: translated as written without the catalogue, and without a warning (the shipped
# continent_population spec: `SUM(population) AS population, ... SUM(population) / SUM(area_km2)`).
COLUMNS_BY_THE_SQL = [
    "SELECT region, sum(amount) AS amount, sum(amount) + count(*) AS mixed FROM t GROUP BY region ORDER BY region",
    "SELECT sum(amount) AS amount FROM t WHERE amount > 7000",
    "SELECT upper(customer) AS customer, length(customer) AS n FROM t WHERE customer < 'c' ORDER BY 1",
    "SELECT region, row_number() OVER (ORDER BY amount) AS amount FROM t WHERE amount > 7000 ORDER BY 1, 2",
]


@pytest.mark.parametrize("target", ALL)
@pytest.mark.parametrize("sql", COLUMNS_BY_THE_SQL)
def test_a_name_the_sql_shows_is_a_column_needs_no_catalogue(sql, target, sales):
    guessed: list = []
    assert run(sales, target, sql, guessed=guessed) == run(sales, "duckdb", sql)
    assert guessed == []


@pytest.mark.parametrize("target", [*ALL, "spark"])
def test_qualify_beside_select_star_is_refused(target, sales):
    """sqlglot's rewrite would return its window function's value as one more column."""
    sql = "SELECT * FROM t QUALIFY row_number() OVER (PARTITION BY region ORDER BY amount) = 1 ORDER BY region"
    assert len(run(sales, "duckdb", sql)[0]) == 3
    with pytest.raises(Untranslatable, match=r"QUALIFY beside SELECT \* \(list the columns\) cannot be written"):
        transpile(sql, "duckdb", target)


def test_each_alias_read_without_the_tables_columns_is_warned_about_and_checked_again(tmp_path):
    """Every guess gets its warning at its place; with the catalogue's columns they all go."""
    from spec_projects import postgres_project

    from mcpgen.load.spec_checks import learn_column_types

    loaded = postgres_project(
        tmp_path, "SELECT customer, amount + 1 AS plus, amount * 3 AS tripled\nFROM t ORDER BY plus * 1, tripled * 1"
    )
    guesses = [p for p in loaded.problems if "is translated for PostgreSQL as a result column's alias" in p.message]
    assert [(p.message.split("`")[1], p.message.split(" is ")[0].split(" in ", 1)[1]) for p in guesses] == [
        ("plus", "ORDER BY"),
        ("tripled", "ORDER BY"),
    ]
    assert [(p.line, p.col) for p in guesses] == [(6, 19), (6, 29)]  # `plus`, `tripled`
    learn_column_types(loaded, lambda name: SALES_COLUMNS)
    assert loaded.errors == [] and not [p for p in loaded.problems if "is translated for" in p.message]


@pytest.fixture
def schema():
    """A PostgreSQL schema of its own holding a table (a, b, c) of ROWS, both named `name`, and a
    materialized view m (a, b) of it, and a table public.`name` (x) beside it: (name, the URL of a
    connection whose search_path is that schema, then public)."""
    import services

    url = services.require("postgresql")
    name = services.unique_name("aliases")
    with services.connect("postgresql") as con:
        con.execute(f"CREATE SCHEMA {name}")
        con.execute(f"CREATE TABLE {name}.{name} (a INTEGER, b INTEGER, c VARCHAR(5))")
        con.cursor().executemany(f"INSERT INTO {name}.{name} VALUES (%s, %s, %s)", ROWS)
        con.execute(f"CREATE TABLE public.{name} (x INTEGER)")
        con.execute(f"CREATE MATERIALIZED VIEW {name}.m AS SELECT a, b FROM {name}.{name}")
    try:
        yield name, f"{url}?options=-csearch_path%3D{name},public"
    finally:
        with services.connect("postgresql") as con:
            con.execute(f"DROP SCHEMA {name} CASCADE")
            con.execute(f"DROP TABLE public.{name}")


def _catalogue(url: str) -> dict:
    from mcpgen.engines.sqlalchemy.engine import SQLAlchemyEngine
    from mcpgen.spec.config import URLConnection

    engine = SQLAlchemyEngine("db", URLConnection(url=url))
    try:
        return engine.column_types(10)
    finally:
        engine.close()


def test_a_schema_qualified_table_is_read_from_the_catalogue(schema, tables):
    """`FROM other.t`, its schema not on the search_path, where public has a `t` without the alias's
    name: the schema's table decides the alias's reading, and the rows are DuckDB's."""
    import services

    name, _ = schema
    columns = _catalogue(services.require("postgresql"))
    sql = SHAPES["order_expression"].replace(" t ", f" {name}.{name} ")
    with tables["postgres"][1].cursor() as cur:
        cur.execute(transpile(sql, "duckdb", "postgres", columns=columns))
        assert cur.fetchall() == run(tables, "duckdb", SHAPES["order_expression"])
    assert set(columns[f"{name}.{name}"]) == {"a", "b", "c"} and set(columns[name]) == {"x"}


def test_an_unqualified_table_is_the_one_first_on_the_search_path(schema):
    """Two tables of one name on the search_path: the name is the first one's, not both merged."""
    name, url = schema
    columns = _catalogue(url)
    assert set(columns[name]) == {"a", "b", "c"} and columns[name] == columns[f"{name}.{name}"]
    assert set(columns[f"public.{name}"]) == {"x"}


def test_a_table_of_another_mariadb_database_is_read_from_the_catalogue(tables):
    """`FROM other.t`: MariaDB's catalogue is read for every database the role sees, not only the current one."""
    import services

    url = services.require("mariadb")
    name = services.unique_name("aliases")
    with services.connect("mariadb") as con, con.cursor() as cur:
        cur.execute(f"CREATE DATABASE {name}")
        try:
            cur.execute(f"CREATE TABLE {name}.t (a INTEGER, b INTEGER, c VARCHAR(5))")
            cur.executemany(f"INSERT INTO {name}.t VALUES (%s, %s, %s)", ROWS)
            sql = SHAPES["window_order"].replace(" t ", f" {name}.t ")
            cur.execute(transpile(sql, "duckdb", "mysql", columns=_catalogue(url)))
            assert [tuple(int(v) for v in row) for row in cur.fetchall()] == run(
                tables, "duckdb", SHAPES["window_order"]
            )
        finally:
            cur.execute(f"DROP DATABASE {name}")


def test_a_materialized_views_columns_are_read_from_the_catalogue(schema, tables):
    """information_schema.columns leaves materialized views out; PostgreSQL's own catalogue has them."""
    import services

    name, _ = schema
    columns = _catalogue(services.require("postgresql"))
    sql = SHAPES["order_expression"].replace(" t ", f" {name}.m ")
    with tables["postgres"][1].cursor() as cur:
        cur.execute(transpile(sql, "duckdb", "postgres", columns=columns))
        assert cur.fetchall() == run(tables, "duckdb", SHAPES["order_expression"])
    assert columns[f"{name}.m"] == {"a": "BIGINT", "b": "BIGINT"}


@pytest.fixture
def attached(tmp_path):
    """A SQLAlchemy connection to a SQLite database whose main holds t (x), its temp a view v (x) and a
    database attached as `sql_other` t (a, b, c) of ROWS and v (a): SQLite finds an unqualified t in main,
    an unqualified v in temp."""
    import sqlalchemy as sa

    engine = sa.create_engine(f"sqlite:///{tmp_path / 'main.sqlite'}")
    with engine.connect() as conn:
        conn.exec_driver_sql(f"ATTACH DATABASE '{tmp_path / 'other.sqlite'}' AS sql_other")
        conn.exec_driver_sql("CREATE TABLE t (x INTEGER)")
        conn.exec_driver_sql("CREATE TABLE sql_other.t (a INTEGER, b INTEGER, c VARCHAR(5))")
        conn.exec_driver_sql("INSERT INTO sql_other.t VALUES (?, ?, ?)", ROWS)
        conn.exec_driver_sql("CREATE TABLE sql_other.v (a INTEGER)")
        conn.exec_driver_sql("CREATE TEMP VIEW v AS SELECT x FROM t")
        yield conn
    engine.dispose()


def test_sqlite_reads_every_database_it_lists(attached):
    """An attached database's tables and temp's views are in SQLite's catalogue, keyed `schema.table`; an
    unqualified name is the table SQLite itself finds first (temp, main, then the attached)."""
    from mcpgen.engines.sqlalchemy.backends import backend_for

    columns = backend_for("sqlite").columns(attached)
    assert set(columns["sql_other.t"]) == {"a", "b", "c"} and set(columns["main.t"]) == {"x"}
    assert columns["t"] == columns["main.t"] and columns["v"] == columns["temp.v"] == {"x": "VARCHAR"}
    assert set(columns["sql_other.v"]) == {"a"}
    assert [c for c, *_ in attached.exec_driver_sql("SELECT * FROM v").cursor.description] == ["x"]


@pytest.mark.parametrize("shape", ["window_order", "window_partition"])
def test_an_attached_sqlite_databases_table_decides_the_alias_as_duckdb_does(shape, attached, tables):
    """`FROM other.t` whose t has a column of the alias's name: SQLite's rows are DuckDB's (before, the
    catalogue lacked the table, and the translation was refused)."""
    from mcpgen.engines.sqlalchemy.backends import backend_for

    sql = SHAPES[shape].replace(" t ", " sql_other.t ")
    text = transpile(sql, "duckdb", "sqlite", columns=backend_for("sqlite").columns(attached))
    assert attached.exec_driver_sql(text).fetchall() == run(tables, "duckdb", SHAPES[shape])
