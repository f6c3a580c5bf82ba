"""A select alias named inside a subquery of its query (`SELECT a * 2 AS d FROM t WHERE EXISTS (SELECT 1
FROM u WHERE u.v = d)`): DuckDB reads it as the alias, in WHERE, the select list and ORDER BY, where no
table of the subquery's or of the query's has a column of that name. PostgreSQL reads it nowhere
("column d does not exist"), MariaDB not in WHERE nor an aggregate's, SQLite not in the select list.
Each translation gives DuckDB's rows on the real engine; what DuckDB refuses, or what cannot be written
so, is refused with a sentence at the alias."""

from __future__ import annotations

import re
import sqlite3

import duckdb
import pytest

from mcpgen.sql.transpile import NeedsColumnTypes, Untranslatable, transpile

T = [(1, 30, "x"), (2, 20, "y"), (3, 10, "x")]
U = [(2, 1), (4, 2), (5, 3), (6, 4)]
SCHEMA = {"t": ("a INTEGER, b INTEGER, c VARCHAR(5)", T), "u": ("v INTEGER, w INTEGER", U)}
COLUMNS = {"t": {"a": "INTEGER", "b": "INTEGER", "c": "VARCHAR"}, "u": {"v": "INTEGER", "w": "INTEGER"}}
TARGETS = ("postgres", "mysql", "sqlite")
SERVICES = {"postgres": "postgresql", "mysql": "mariadb"}

# Each shape but the last three gave an error or other rows on an engine before (the comment says which).
TRANSLATED = {
    "exists_in_where": "SELECT a * 2 AS d FROM t WHERE EXISTS (SELECT 1 FROM u WHERE u.v = d) ORDER BY 1",  # pm
    "scalar_in_where": "SELECT a * 2 AS d FROM t WHERE (SELECT count(*) FROM u WHERE v < d) > 1 ORDER BY 1",  # pm
    "in_in_where": "SELECT a * 2 AS d FROM t WHERE a IN (SELECT w FROM u WHERE v = d) ORDER BY 1",  # pm
    "any_in_where": "SELECT a * 2 AS d FROM t WHERE d > ANY (SELECT v FROM u WHERE w < d) ORDER BY 1",  # pm
    "two_deep": (  # pm
        "SELECT a * 2 AS d FROM t WHERE EXISTS (SELECT 1 FROM u WHERE v IN (SELECT v FROM u AS u2 WHERE u2.v = d)) "
        "ORDER BY 1"
    ),
    "in_select_list": "SELECT a * 2 AS d, (SELECT count(*) FROM u WHERE v < d) AS n FROM t ORDER BY 1",  # ps
    "in_case": (  # ps
        "SELECT a * 2 AS d, CASE WHEN EXISTS (SELECT 1 FROM u WHERE v = d) THEN 'y' ELSE 'n' END AS e FROM t ORDER BY 1"
    ),
    "aggregate_in_select_list": (  # pms
        "SELECT c, sum(a) AS s, (SELECT count(*) FROM u WHERE v <= s) AS n FROM t GROUP BY c ORDER BY 1"
    ),
    "aggregate_in_order_by": (  # m
        "SELECT c, sum(a) AS s FROM t GROUP BY c ORDER BY (SELECT count(*) FROM u WHERE v <= s), 1"
    ),
    # the alias's expression names a column the subquery's own table also has: written with its table
    "same_column_inside": (  # pm
        "SELECT a * 2 AS d FROM t WHERE EXISTS (SELECT 1 FROM t AS x WHERE x.a * 2 = d + 2) ORDER BY 1"
    ),
    "same_column_inside_order_by": (  # p
        "SELECT a * 2 AS d FROM t ORDER BY (SELECT count(*) FROM t AS x WHERE x.a * 2 < d) DESC, 1"
    ),
    "a_column_of_the_subquery_in_order_by": (  # p
        "SELECT a * 2 AS v FROM t ORDER BY (SELECT count(*) FROM u WHERE w * 2 < v) DESC, 1"
    ),
    "in_a_cte": (  # pm
        "WITH q AS (SELECT a * 2 AS d FROM t WHERE EXISTS (SELECT 1 FROM u WHERE v = d)) SELECT d FROM q ORDER BY d"
    ),
    # a subquery's alias in WHERE and a bare ORDER BY, which DuckDB reads
    "a_subquerys_alias_in_where": "SELECT (SELECT max(v) FROM u) + a AS n FROM t WHERE n > 7 ORDER BY n",
    # a name that is a column of the query's table, or of the subquery's: the column, everywhere
    "in_order_by": "SELECT a * 2 AS d FROM t ORDER BY (SELECT count(*) FROM u WHERE v < d) DESC, 1",
    "a_column_of_the_query": "SELECT b AS a FROM t WHERE EXISTS (SELECT 1 FROM u WHERE v = a) ORDER BY 1",
    "a_column_of_the_subquery": "SELECT a * 2 AS v FROM t WHERE EXISTS (SELECT 1 FROM u WHERE w = v) ORDER BY 1",
    # where DuckDB reads no alias (JOIN ... ON, a subquery in GROUP BY or FROM): a column of its name is read
    "a_column_in_join_on": "SELECT b * 10 AS a, v FROM t JOIN u ON u.w = a ORDER BY 1, 2",
    "a_column_in_a_subquery_in_join_on": (
        "SELECT b * 10 AS a, v FROM t JOIN u ON u.v = (SELECT max(z.v) FROM u AS z WHERE z.w <= a) ORDER BY 1, 2"
    ),
    "a_column_in_a_subquery_in_group_by": (
        "SELECT a * 2 AS v, count(*) AS n FROM t GROUP BY a, (SELECT count(*) FROM u WHERE w < v) ORDER BY 1"
    ),
    "a_column_in_a_subquery_in_from": "SELECT a * 2 AS w, s.v FROM t, (SELECT v FROM u WHERE v = w) AS s ORDER BY 1",
}

# What DuckDB refuses itself, and the sentence the translation refuses it with.
REFUSED = {
    "SELECT c, sum(a) AS s FROM t WHERE EXISTS (SELECT 1 FROM u WHERE v = s) GROUP BY c": (
        "`s` in a subquery in WHERE names a result column that is an aggregate or window function, which DuckDB "
        "refuses there too"
    ),
    "SELECT a, row_number() OVER (ORDER BY b) AS r, (SELECT count(*) FROM u WHERE w < r) AS n FROM t": (
        "`r` in a subquery in the select list names a result column that is an aggregate or window function, "
        "which DuckDB refuses there too"
    ),
    # the alias of a subquery, outside WHERE: DuckDB reads none ("the expression has a subquery")
    "SELECT a, EXISTS (SELECT 1 FROM u WHERE u.v > t.a) AS n FROM t ORDER BY NOT n, a": (
        "`n` in ORDER BY names a result column that is a subquery, which DuckDB refuses there too"
    ),
    "SELECT (SELECT max(v) FROM u) AS n, n + 1 AS m FROM t": (
        "`n` in the select list names a result column that is a subquery, which DuckDB refuses there too"
    ),
    "SELECT (SELECT max(v) FROM u) AS n, row_number() OVER (ORDER BY n) AS r FROM t": (
        "`n` in a window's ORDER BY or PARTITION BY names a result column that is a subquery, which DuckDB "
        "refuses there too"
    ),
    "SELECT a * 2 AS d FROM t GROUP BY a HAVING EXISTS (SELECT 1 FROM u WHERE v = d)": (
        "`d` in a subquery in HAVING names a result column's alias, which DuckDB refuses there (write its "
        "expression out)"
    ),
    # refused in HAVING though the query's table has a column of its name (SQLite and PostgreSQL read that)
    "SELECT a * 2 AS b FROM t GROUP BY a, b HAVING (SELECT count(*) FROM u WHERE v < b) > 1": (
        "`b` in a subquery in HAVING names a result column's alias, which DuckDB refuses there"
    ),
    # DuckDB reads no alias in JOIN ... ON, nor in a subquery in GROUP BY, FROM or JOIN; SQLite reads it in
    # the first two
    "SELECT a * 2 AS d FROM t JOIN u ON u.v = d": (
        "`d` in JOIN ... ON names a result column's alias, which DuckDB refuses there"
    ),
    "SELECT a * 2 AS d FROM t JOIN u ON EXISTS (SELECT 1 FROM u AS z WHERE z.v = d)": (
        "`d` in a subquery in JOIN names a result column's alias, which DuckDB refuses there"
    ),
    "SELECT a * 2 AS d, count(*) AS n FROM t GROUP BY a, (SELECT count(*) FROM u WHERE v < d)": (
        "`d` in a subquery in GROUP BY names a result column's alias, which DuckDB refuses there"
    ),
    "SELECT a * 2 AS d FROM t JOIN (SELECT v FROM u WHERE v = d) AS s ON true": (
        "`d` in a subquery in JOIN names a result column's alias, which DuckDB refuses there"
    ),
    "SELECT a * 2 AS d FROM t, (SELECT v FROM u WHERE v < d) AS s": (
        "`d` in a subquery in JOIN names a result column's alias, which DuckDB refuses there"
    ),
}


@pytest.fixture(scope="module")
def db():
    """Tables t (a, b, c) of T and u (v, w) of U on each engine that answers: target -> (its names of t
    and u, a connection)."""
    import services

    made, names = {}, {"t": "t", "u": "u"}
    duck, lite = duckdb.connect(), sqlite3.connect(":memory:")
    for con in (duck, lite):
        for table, (columns, rows) in SCHEMA.items():
            con.execute(f"CREATE TABLE {table} ({columns})")
            con.executemany(f"INSERT INTO {table} VALUES ({', '.join('?' * len(rows[0]))})", rows)
    made["duckdb"], made["sqlite"] = (names, duck), (names, lite)
    for target, service in SERVICES.items():
        if services._absent(service):
            continue
        con = services.connect(service)
        own = {table: services.unique_name(f"sql_{table}") for table in SCHEMA}
        with con.cursor() as cur:
            for table, (columns, rows) in SCHEMA.items():
                cur.execute(f"CREATE TABLE {own[table]} ({columns})")
                cur.executemany(f"INSERT INTO {own[table]} VALUES ({', '.join(['%s'] * len(rows[0]))})", rows)
        made[target] = (own, con)
    yield made
    for target, service in SERVICES.items():
        if target in made:
            for name in made[target][0].values():
                services.drop_table(service, name)
            made[target][1].close()
    duck.close()
    lite.close()


def run(db, target: str, sql: str, guessed: list | None = None) -> list[tuple]:
    """`sql`, written for tables t and u, translated for `target` with their columns (or, given `guessed`,
    without them, its guesses added there) and run there."""
    import services

    if target not in db:
        services.require(SERVICES[target])
    names, con = db[target]
    sql = renamed(db, target, sql)
    if target == "duckdb":
        return con.execute(sql).fetchall()
    columns = None if guessed is not None else {names[t]: c for t, c in COLUMNS.items()}
    text = transpile(sql, "duckdb", target, columns=columns, guessed=guessed)
    if target == "sqlite":
        return con.execute(text).fetchall()
    with con.cursor() as cur:
        cur.execute(text)
        return [tuple(v if isinstance(v, str) else int(v) for v in row) for row in cur.fetchall()]


def renamed(db, target: str, sql: str) -> str:
    """`sql` with `target`'s names of t and u."""
    return re.sub(r"\b[tu]\b(?!')", lambda m: db[target][0][m.group()], sql)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("shape", TRANSLATED)
def test_an_alias_in_a_subquery_gives_duckdbs_rows(shape, target, db):
    sql = TRANSLATED[shape]
    if shape == "any_in_where" and target == "sqlite":
        with pytest.raises(Untranslatable, match=re.escape("ANY (a subquery) cannot be written in SQLite")):
            run(db, target, sql)
        return
    assert run(db, target, sql) == run(db, "duckdb", sql)


@pytest.mark.parametrize("target", [*TARGETS, "spark"])
@pytest.mark.parametrize("sql", REFUSED)
def test_an_alias_duckdb_refuses_in_a_subquery_is_refused(sql, target, db):
    with pytest.raises(duckdb.BinderException):
        run(db, "duckdb", sql)
    with pytest.raises(Untranslatable, match=re.escape(REFUSED[sql])):
        transpile(sql, "duckdb", target, columns=COLUMNS)


@pytest.mark.parametrize("target", [*TARGETS, "spark"])
def test_an_alias_duckdb_reads_nowhere_there_is_refused_at_its_line_and_column(target):
    """Without the catalogue too, where the SQL gives the tables' columns (a CTE): SQLite would return rows."""
    sql = "WITH s AS (SELECT 1 AS v, 2 AS w)\nSELECT w * 2 AS d\nFROM s\n  JOIN s AS z ON z.v = d"
    for columns in (COLUMNS, None):
        with pytest.raises(Untranslatable, match=re.escape("`d` in JOIN ... ON names a result column's alias")) as e:
            transpile(sql, "duckdb", target, columns=columns, guessed=None if columns else [])
        assert (e.value.line, e.value.col) == (4, 24)


@pytest.mark.parametrize("target", [*TARGETS, "spark"])
def test_a_table_the_subquery_names_as_the_query_does_is_refused_at_the_alias(target):
    """`t.a` written inside `(... FROM t ...)` would be the subquery's t: no spelling keeps DuckDB's reading."""
    sql = "SELECT a * 2 AS d\nFROM t\nWHERE EXISTS (SELECT 1 FROM t WHERE t.b = d)"
    with pytest.raises(Untranslatable) as refused:
        transpile(sql, "duckdb", target, columns=COLUMNS)
    assert str(refused.value).startswith("`d` in a subquery in WHERE names a result column's alias, which ")
    assert "the column a of its expression cannot be named with its table there" in str(refused.value)
    assert (refused.value.line, refused.value.col) == (3, 43)  # `d`


@pytest.mark.parametrize("target", TARGETS)
def test_without_the_tables_columns_the_alias_is_written_out_with_a_warning(target, db):
    """Plain validate reads the name as the alias (no table is known to have that column) and warns once,
    at the name; serve translates it again with the catalogue."""
    sql = TRANSLATED["exists_in_where"]
    guessed: list = []
    assert run(db, target, sql, guessed=guessed) == run(db, "duckdb", sql)
    ((line, col, sentence),) = guessed
    assert (line, col) == (1, renamed(db, target, sql).index("= d)") + 3)  # `d`
    assert sentence.startswith("`d` in a subquery in WHERE is translated for ")


def test_without_the_tables_columns_two_tables_naming_the_expression_wait_for_them():
    """`a + v` over t and u: which table has `a` is the catalogue's to say."""
    sql = "SELECT a + v AS d FROM t, u WHERE EXISTS (SELECT 1 FROM u AS z WHERE z.w = d)"
    with pytest.raises(Untranslatable, match="the column a of its expression cannot be named with its table"):
        transpile(sql, "duckdb", "postgres", guessed=[])
    assert "(\n        t.a + u.v\n      )" in transpile(sql, "duckdb", "postgres", columns=COLUMNS)
    with pytest.raises(NeedsColumnTypes, match="the database's catalogue does not list the table"):
        transpile(sql, "duckdb", "postgres", columns={"t": COLUMNS["t"]})


def test_validate_refuses_at_the_specs_line_and_column(tmp_path):
    from spec_projects import postgres_project

    loaded = postgres_project(
        tmp_path,
        "SELECT year, amount * 1.1 AS target FROM sales\nWHERE EXISTS (SELECT 1 FROM sales WHERE sales.amount > target)",
    )
    (problem,) = loaded.errors
    assert (problem.line, problem.col) == (6, 58)  # `target`
    assert problem.message.startswith(
        "`target` in a subquery in WHERE names a result column's alias, which PostgreSQL does not read there"
    )


# What DuckDB refuses unless a table has a column of the name, which plain validate cannot tell: the warning's
# start, and the refusal serve gives with the tables' columns.
WAITING = {
    "SELECT sum(a) AS total FROM t\nWHERE total > 10": (
        "`total` in WHERE names a result column that is an aggregate or window function, which DuckDB refuses "
        "there unless a table has a column of that name",
        "`total` in WHERE names a result column that is an aggregate or window function, which DuckDB refuses",
    ),
    "SELECT a * 2 AS d FROM t\nJOIN u ON u.v = d": (
        "`d` in JOIN ... ON names a result column's alias, which DuckDB refuses there unless a table has",
        "`d` in JOIN ... ON names a result column's alias, which DuckDB refuses there",
    ),
    "SELECT a * 2 AS d FROM t GROUP BY a\nHAVING (SELECT count(*) FROM u WHERE v < d) > 1": (
        "`d` in a subquery in HAVING names a result column's alias, which DuckDB refuses there unless",
        "`d` in a subquery in HAVING names a result column's alias, which DuckDB refuses there",
    ),
}


@pytest.mark.parametrize("target", [*TARGETS, "spark"])
@pytest.mark.parametrize("sql", WAITING)
def test_without_the_catalogue_a_refusal_that_waits_for_it_is_a_warning_at_the_name(sql, target):
    warning, refusal = WAITING[sql]
    guessed: list = []
    transpile(sql, "duckdb", target, guessed=guessed)
    ((line, col, sentence),) = guessed
    assert (line, sentence[: len(warning)]) == (2, warning)
    assert sentence.endswith("validate --live and serve check it against the tables")
    with pytest.raises(Untranslatable, match=re.escape(refusal)) as refused:
        transpile(sql, "duckdb", target, columns=COLUMNS)
    assert (refused.value.line, refused.value.col) == (line, col)


def test_serve_checks_the_warning_again_with_the_catalogue(tmp_path):
    from spec_projects import postgres_project

    from mcpgen.load.spec_checks import learn_column_types

    loaded = postgres_project(tmp_path, "SELECT a * 2 AS d FROM t\nJOIN u ON u.v = d")
    assert loaded.errors == []
    (warning,) = [p for p in loaded.problems if "`d` in JOIN ... ON" in p.message]
    assert (warning.line, warning.col) == (6, 19)
    learn_column_types(loaded, lambda name: COLUMNS)
    (error,) = loaded.errors
    assert (error.line, error.col) == (6, 19)
    assert "which DuckDB refuses there (write its expression out)" in error.message
