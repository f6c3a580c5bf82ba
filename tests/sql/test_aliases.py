"""A name that is both a select alias and a table's column: DuckDB reads it as the alias in a bare ORDER BY
and as the column elsewhere (ORDER BY expressions, GROUP BY, WHERE, windows, QUALIFY). Each translation
gives DuckDB's rows on the real engine, with the table's columns known (as serve reads them), or is
refused; without them, a shape whose reading depends on them waits for them."""

from __future__ import annotations

import sqlite3

import duckdb
import pytest
import sqlalchemy as sa

from mcpgen.sql.transpile import NeedsColumnTypes, Untranslatable, transpile

ROWS = [(1, 30, "x"), (2, 20, "y"), (3, 10, "x")]  # a ascending where b descends: the readings differ
COLUMNS = {"t": {"a": "INTEGER", "b": "INTEGER", "c": "VARCHAR"}}
URLS = {
    "postgres": "postgresql+psycopg://postgres@127.0.0.1:5432/test",
    "mysql": "mysql+pymysql://root@127.0.0.1:3306/test",
}

SHAPES = {
    "order_bare": "SELECT b AS a, a AS b FROM t ORDER BY a",
    "order_expression": "SELECT b AS a FROM t ORDER BY a * 1",
    "order_expression_alias_only": "SELECT b AS z FROM t ORDER BY z * -1",
    "where": "SELECT b AS a FROM t WHERE a > 1 ORDER BY 1",
    "group_by": "SELECT c AS a, count(*) AS n FROM t GROUP BY a, c ORDER BY 1, 2",
    "window_order": "SELECT b AS a, row_number() OVER (ORDER BY a) AS r FROM t ORDER BY r",
    "window_partition": "SELECT c AS a, b, row_number() OVER (PARTITION BY a ORDER BY b) AS r FROM t ORDER BY b",
}
REFUSED = {
    "qualify_window": "SELECT b AS a FROM t QUALIFY row_number() OVER (ORDER BY a) = 1",
    "qualify_name": "SELECT b AS a, row_number() OVER (ORDER BY b) AS r FROM t QUALIFY a > 15 ORDER BY 1",
}


def on_duckdb(sql: str) -> list[tuple]:
    con = duckdb.connect()
    con.execute("CREATE TABLE t (a INTEGER, b INTEGER, c VARCHAR)")
    con.executemany("INSERT INTO t VALUES (?, ?, ?)", ROWS)
    return con.execute(sql).fetchall()


def on_engine(target: str, sql: str) -> list[tuple]:
    if target == "sqlite":
        con = sqlite3.connect(":memory:")
        con.execute("CREATE TABLE t (a INTEGER, b INTEGER, c TEXT)")
        con.executemany("INSERT INTO t VALUES (?, ?, ?)", ROWS)
        return [tuple(r) for r in con.execute(sql).fetchall()]
    engine = sa.create_engine(URLS[target], connect_args={"connect_timeout": 5})
    try:
        with engine.connect() as c:
            c.exec_driver_sql("CREATE TEMPORARY TABLE t (a INTEGER, b INTEGER, c VARCHAR(5))")
            c.exec_driver_sql("INSERT INTO t VALUES (1, 30, 'x'), (2, 20, 'y'), (3, 10, 'x')")
            return [tuple(int(v) if not isinstance(v, str) else v for v in r) for r in c.exec_driver_sql(sql)]
    except sa.exc.OperationalError as exc:
        pytest.skip(f"{target} does not answer: {exc.orig}")
    finally:
        engine.dispose()


@pytest.mark.parametrize("target", ["postgres", "mysql", "sqlite"])
@pytest.mark.parametrize("shape", SHAPES)
def test_each_shape_gives_duckdbs_rows(shape, target):
    sql = SHAPES[shape]
    assert on_engine(target, transpile(sql, "duckdb", target, columns=COLUMNS)) == on_duckdb(sql)


@pytest.mark.parametrize("target", ["postgres", "mysql", "sqlite"])
@pytest.mark.parametrize("shape", REFUSED)
def test_qualify_on_a_shadowing_alias_is_refused(shape, target):
    with pytest.raises(Untranslatable, match=r"`a` in .* names both a result column's alias and a table's column"):
        transpile(REFUSED[shape], "duckdb", target, columns=COLUMNS)


@pytest.mark.parametrize(
    ("target", "sql"),
    [("postgres", SHAPES["order_expression"]), ("mysql", SHAPES["group_by"]), ("mysql", SHAPES["window_order"])],
)
def test_without_the_tables_columns_the_shape_waits_for_them(target, sql):
    with pytest.raises(NeedsColumnTypes, match=r"is a result column's alias, and DuckDB reads it as a table's column"):
        transpile(sql, "duckdb", target)


def test_an_alias_of_a_subquery_column_is_known_without_the_catalogue():
    sql = "SELECT b AS a FROM (SELECT 1 AS a, 2 AS b) AS s ORDER BY a * 1"
    assert "ORDER BY\n  a * 1" in transpile(sql, "duckdb", "postgres")
