"""`ORDER BY 1` beside `SELECT *` (or `t.*`) and on a UNION: MariaDB/MySQL put NULLs first ascending, and
spell DuckDB's NULLS LAST with the sort key's name (`CASE WHEN a IS NULL ...`), which a position does not
give. The translation names the column from the tables' columns, as MariaDB's own catalogue lists them in
its order, and gives DuckDB's rows there; where it cannot be named, one sentence says so at the position."""

from __future__ import annotations

import re

import duckdb
import pytest
import sqlalchemy as sa

from mcpgen.sql.transpile import NeedsColumnTypes, Untranslatable, transpile

# b and w hold NULLs, and the columns are declared out of alphabetical order: `*` is the table's order
T = ("z INTEGER, b INTEGER, a VARCHAR(5)", [(1, None, "x"), (2, 20, None), (3, 10, "y"), (4, None, "w")])
U = ("v INTEGER, w INTEGER", [(1, 7), (3, None), (4, 5)])

SHAPES = [
    "SELECT * FROM t ORDER BY 2, 1",
    "SELECT * FROM t ORDER BY 3 NULLS FIRST, 1",
    "SELECT * FROM t ORDER BY 2 DESC NULLS FIRST, 1",
    "SELECT t.*, w FROM t JOIN u ON u.v = t.z ORDER BY 4, 1",
    "SELECT w, t.* FROM t LEFT JOIN u ON u.v = t.z ORDER BY 1, 3",
    "SELECT * FROM t AS x, u WHERE x.z = u.v ORDER BY 5, 1",
    "SELECT * FROM (SELECT b, z FROM t) AS s ORDER BY 1, 2",
    "WITH q AS (SELECT a, z FROM t) SELECT * FROM q ORDER BY 1, 2",
    "SELECT b FROM t UNION ALL SELECT w FROM u ORDER BY 1",
    "SELECT a AS n FROM t UNION SELECT 'q' ORDER BY 1 DESC",
]


@pytest.fixture(scope="module")
def mariadb():
    """Tables t and u on DuckDB and on MariaDB (under names of their own there), and MariaDB's catalogue
    as serve reads it: (duckdb connection, MariaDB connection, t's and u's names there, the catalogue)."""
    import services

    from mcpgen.engines.sqlalchemy.backends import backend_for

    url = services.require("mariadb")
    duck = duckdb.connect()
    names = {"t": services.unique_name("sql2_t"), "u": services.unique_name("sql2_u")}
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        for table, (columns, rows) in (("t", T), ("u", U)):
            duck.execute(f"CREATE TABLE {table} ({columns})")
            duck.executemany(f"INSERT INTO {table} VALUES ({', '.join('?' * len(rows[0]))})", rows)
            conn.exec_driver_sql(f"CREATE TABLE {names[table]} ({columns})")
            marks = ", ".join(["%s"] * len(rows[0]))
            conn.exec_driver_sql(f"INSERT INTO {names[table]} VALUES ({marks})", list(rows))
        catalogue = backend_for("mariadb").columns(conn)
    try:
        yield duck, engine, names, catalogue
    finally:
        for name in names.values():
            services.drop_table("mariadb", name)
        engine.dispose()
        duck.close()


def _renamed(sql: str, names: dict[str, str]) -> str:
    return re.sub(r"\b[tu]\b(?=[ .,)]|$)", lambda m: names[m.group()], sql)


@pytest.mark.parametrize("sql", SHAPES)
def test_a_position_beside_star_or_on_a_union_gives_duckdbs_rows_on_mariadb(sql, mariadb):
    duck, engine, names, catalogue = mariadb
    text = transpile(_renamed(sql, names), "duckdb", "mysql", columns=catalogue)
    with engine.connect() as conn:
        got = [tuple(r) for r in conn.exec_driver_sql(text).fetchall()]
    assert got == duck.execute(sql).fetchall()


def test_the_catalogue_lists_a_tables_columns_in_its_order(mariadb):
    *_, names, catalogue = mariadb
    assert list(catalogue[names["t"]]) == ["z", "b", "a"]


@pytest.mark.parametrize(
    ("sql", "columns", "refusal", "why"),
    [
        ("SELECT *\nFROM t\nORDER BY 2", None, NeedsColumnTypes, "validate --live and serve read it"),
        ("SELECT *\nFROM t JOIN u USING (z)\nORDER BY 2", {"t": {"z": "INTEGER"}}, Untranslatable, "a USING"),
        ("SELECT a, upper(a) FROM t\nUNION ALL SELECT a, a FROM u\nORDER BY 2", {}, Untranslatable, "an unnamed"),
    ],
)
def test_a_position_that_cannot_be_named_is_refused_in_one_sentence(sql, columns, refusal, why):
    with pytest.raises(refusal) as refused:
        transpile(sql, "duckdb", "mysql", columns=columns)
    message = str(refused.value)
    assert message.startswith("`ORDER BY 2` beside SELECT * or on a UNION cannot be written for MariaDB/MySQL")
    assert why in message and "NULLS LAST" not in message
    assert (refused.value.line, refused.value.col) == (3, 10)


@pytest.mark.parametrize("target", ["postgres", "sqlite", "spark"])
def test_elsewhere_a_position_beside_star_stays_a_position(target):
    """They spell NULLS LAST beside a position; `t.*` beside another item was named by its place before."""
    out = transpile("SELECT t.*, w FROM t JOIN u ON u.v = t.z ORDER BY 2", "duckdb", target, columns={})
    assert re.search(r"ORDER BY\s+2\b", out) and "t.*\n" not in out.split("ORDER BY")[1]
