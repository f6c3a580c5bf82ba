"""Which spelled-out NULL orders can go (a column the catalog declares NOT NULL) and which must stay.

The SQL is what the translation from DuckDB writes for each dialect, so these are the shapes a
spec as shipped reaches the database with. The database side (the plan, the same rows) is in
tests/engines/sqlalchemy/test_engine.py.
"""

from __future__ import annotations

import pytest

from mcpgen.sql.nulls import drop_null_orders, null_order_tables
from mcpgen.sql.statements import find_placeholders
from mcpgen.sql.transpile import transpile

# Every column NOT NULL but `maybe`; every table known.
NOT_NULL = {"population": False, "name": False, "iso": False, "cc": False, "maybe": True}


def columns(schema, table):
    return dict(NOT_NULL)


def relaxed(duckdb_sql: str, target: str = "postgres") -> str | None:
    return drop_null_orders(transpile(duckdb_sql, "duckdb", target), target, columns)


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT name FROM cities ORDER BY population DESC",
        "SELECT c.name FROM cities c JOIN countries n ON n.iso = c.cc ORDER BY c.population DESC",
        "SELECT c.name FROM cities AS c INNER JOIN countries AS n ON n.iso = c.cc ORDER BY c.population DESC",
        "SELECT c.name, c.population AS pop FROM cities c ORDER BY pop DESC",
        "SELECT name FROM cities WHERE cc IN :codes AND population > :min ORDER BY population DESC LIMIT :n",
        "SELECT c.name FROM cities c LEFT JOIN countries n ON n.iso = c.cc ORDER BY c.population DESC",
        "SELECT cc FROM cities GROUP BY cc ORDER BY cc DESC",
    ],
)
def test_a_not_null_column_loses_its_nulls_last(sql):
    """The DuckDB order of a DESC key is NULLS LAST, which PostgreSQL must be told; on a NOT NULL
    column (inner joins, the FROM side of a LEFT JOIN, an output alias of it) it goes."""
    translated = transpile(sql, "duckdb", "postgres")
    assert "NULLS LAST" in translated
    out = drop_null_orders(translated, "postgres", columns)
    assert out is not None and "NULLS" not in out.upper()
    assert "DESC" in out
    names = sorted((p.name, p.after_in) for p in find_placeholders(out, "postgres"))
    assert names == sorted((p.name, p.after_in) for p in find_placeholders(translated, "postgres"))


@pytest.mark.parametrize(
    "sql, why",
    [
        ("SELECT name FROM cities ORDER BY maybe DESC", "the column may be NULL"),
        (
            "SELECT c.name FROM cities c LEFT JOIN countries n ON n.iso = c.cc ORDER BY n.population DESC",
            "the NULL-extended side of a LEFT JOIN",
        ),
        (
            "SELECT c.name FROM cities c RIGHT JOIN countries n ON n.iso = c.cc ORDER BY c.population DESC",
            "the NULL-extended side of a RIGHT JOIN",
        ),
        (
            "SELECT c.name FROM cities c FULL JOIN countries n ON n.iso = c.cc ORDER BY c.population DESC",
            "either side of a FULL JOIN",
        ),
        ("SELECT cc, max(population) AS population FROM cities GROUP BY cc ORDER BY population DESC", "an aggregate"),
        ("SELECT cc FROM cities GROUP BY ROLLUP (cc) ORDER BY cc DESC", "ROLLUP adds NULL rows"),
        ("WITH t AS (SELECT population FROM cities) SELECT population FROM t ORDER BY population DESC", "a CTE"),
        ("SELECT population FROM (SELECT population FROM cities) s ORDER BY population DESC", "a sub-query"),
        ("SELECT name FROM cities UNION ALL SELECT name FROM countries ORDER BY name DESC", "a set operation"),
        ("SELECT c.name FROM cities c, countries n ORDER BY population DESC", "an unqualified name, two tables"),
        ("SELECT name FROM cities ORDER BY population + 1 DESC", "an expression"),
    ],
)
def test_what_cannot_be_proved_not_null_keeps_its_spelling(sql, why):
    translated = transpile(sql, "duckdb", "postgres")
    assert "NULLS LAST" in translated, why
    assert drop_null_orders(translated, "postgres", columns) is None, why


def test_mariadb_case_key_goes_for_a_not_null_column_only():
    """MariaDB has no NULLS LAST: sqlglot adds a CASE WHEN x IS NULL key before x, which no index serves."""
    translated = transpile("SELECT name FROM cities ORDER BY name, maybe", "duckdb", "mysql")
    assert translated.count("CASE WHEN") == 2
    out = drop_null_orders(translated, "mysql", columns)
    assert out is not None and out.count("CASE WHEN") == 1 and "maybe IS NULL" in out
    assert out.replace("\n", " ").split("ORDER BY")[1].strip().startswith("name")


def test_sqlite_nulls_last_of_an_ascending_key():
    translated = transpile("SELECT name FROM cities ORDER BY name", "duckdb", "sqlite")
    assert "NULLS LAST" in translated
    assert "NULLS" not in relaxed("SELECT name FROM cities ORDER BY name", "sqlite")


def test_an_order_the_database_gives_anyway_needs_no_lookup():
    """ASC on PostgreSQL is NULLS LAST already: nothing to drop, so no table to ask about."""
    assert (
        null_order_tables(transpile("SELECT name FROM cities ORDER BY population", "duckdb", "postgres"), "postgres")
        == []
    )
    assert null_order_tables("SELECT name FROM cities", "postgres") == []
    assert null_order_tables("SELECT name FROM s.cities ORDER BY population DESC NULLS LAST", "postgres") == [
        ("s", "cities")
    ]


def test_names_are_folded_as_the_database_stores_them():
    """Unquoted names are lower case in PostgreSQL's catalog; a quoted name keeps its case, and an
    unquoted column that could be two catalog columns must be NOT NULL in both."""
    sql = 'SELECT a FROM Sch."Cities" ORDER BY Population DESC NULLS LAST'
    assert null_order_tables(sql, "postgres") == [("sch", "Cities")]
    assert drop_null_orders(sql, "postgres", lambda s, t: {"population": False}) is not None
    assert drop_null_orders(sql, "postgres", lambda s, t: {"population": False, "Population": True}) is None
    quoted = 'SELECT a FROM t ORDER BY "Population" DESC NULLS LAST'
    assert drop_null_orders(quoted, "postgres", lambda s, t: {"population": False}) is None
    assert drop_null_orders(quoted, "postgres", lambda s, t: {"Population": False}) is not None


def test_an_unknown_table_or_unreadable_sql_changes_nothing():
    assert drop_null_orders("SELECT a FROM t ORDER BY a DESC NULLS LAST", "postgres", lambda s, t: {}) is None
    assert drop_null_orders("SELECT FROM WHERE (", "postgres", columns) is None
    assert null_order_tables("SELECT FROM WHERE (", "postgres") == []
