"""What mcpgen adds to sqlglot's translation from DuckDB SQL (mcpgen/sql/dialects.py): each rewrite gives
the result DuckDB gives, on the real engine (SQLite in process; PostgreSQL and MariaDB when the services
answer), and each construct a target cannot express is refused with its line and column."""

from __future__ import annotations

import datetime as dt
import re
import sqlite3

import duckdb
import pytest
import sqlalchemy as sa

from mcpgen.engines.duckdb import bind_text
from mcpgen.sql.transpile import Untranslatable, caveats, transpile


def on_duckdb(sql: str, params: dict | None = None, types: dict | None = None) -> list[tuple]:
    text, _ = bind_text(sql, types or {})
    return duckdb.connect().execute(text, params or {}).fetchall()


def header_on_duckdb(sql: str) -> list[str]:
    return [d[0] for d in duckdb.connect().execute(sql).description]


def on_sqlite(sql: str, params: dict | None = None) -> list[tuple]:
    con = sqlite3.connect(":memory:")
    try:
        return con.execute(transpile(sql, "duckdb", "sqlite"), params or {}).fetchall()
    finally:
        con.close()


def as_text(rows: list[tuple]) -> list[tuple]:
    """Dates and timestamps as SQLite gives them (ISO text), to compare with DuckDB's rows."""

    def one(v):
        if isinstance(v, dt.datetime):
            return v.date().isoformat() if v.time() == dt.time() else v.isoformat(" ")
        if isinstance(v, dt.date):
            return v.isoformat()
        return v

    return [tuple(one(v) for v in row) for row in rows]


DATE_ARITHMETIC = [
    ("SELECT DATE '1998-12-01' - INTERVAL (:n) DAY AS d", {"n": 90}, {"n": "integer"}),
    ("SELECT DATE '1995-01-28' + INTERVAL '3' MONTH AS d", {}, {}),
    ("SELECT CAST(:d AS DATE) + INTERVAL 1 YEAR AS d", {"d": "1996-02-28"}, {"d": "string"}),
    ("SELECT DATE '2000-01-01' + INTERVAL 2 WEEK AS d", {}, {}),
    ("SELECT DATE '2000-01-01' - INTERVAL '-5' DAY AS d", {}, {}),
    ("SELECT TIMESTAMP '2000-01-01 10:00:00' + INTERVAL 90 MINUTE AS d", {}, {}),
]


@pytest.mark.parametrize(("sql", "params", "types"), DATE_ARITHMETIC, ids=[s[0][7:40] for s in DATE_ARITHMETIC])
def test_sqlite_date_arithmetic_gives_duckdbs_dates(sql, params, types):
    assert on_sqlite(sql, params) == as_text(on_duckdb(sql, params, types))


@pytest.mark.parametrize("part", ["YEAR", "MONTH", "DAY", "HOUR", "MINUTE", "DOY", "DOW"])
def test_sqlite_extract_gives_duckdbs_integers(part):
    sql = f"SELECT EXTRACT({part} FROM TIMESTAMP '1997-03-09 07:05:00') AS v"
    assert on_sqlite(sql) == on_duckdb(sql)


def test_sqlite_reads_set_operations_and_column_lists_as_duckdb_does():
    sql = (
        "SELECT x, y FROM (SELECT a, count(*) FROM (VALUES (1), (1), (2)) t(a) GROUP BY a) AS c (x, y) "
        "WHERE x IN (SELECT 1 UNION SELECT 2) ORDER BY x"
    )
    assert on_sqlite(
        sql.replace("(VALUES (1), (1), (2)) t(a)", "(SELECT 1 AS a UNION ALL SELECT 1 UNION ALL SELECT 2)")
    ) == [
        (1, 2),
        (2, 1),
    ]
    parenthesized = "(SELECT 1 AS a UNION SELECT 2) EXCEPT (SELECT 2)"
    assert "(\n  SELECT" not in transpile("SELECT 1 AS a EXCEPT (SELECT 2)", "duckdb", "sqlite")
    assert on_sqlite(parenthesized) == on_duckdb(parenthesized) == [(1,)]


REFUSED = [
    ("sqlite", "SELECT a, sum(b) AS s\nFROM t\nGROUP BY ROLLUP (a)", "GROUP BY ROLLUP cannot be written in SQLite", 3),
    ("sqlite", "SELECT grouping(a) AS g FROM t GROUP BY a", "GROUPING() cannot be written in SQLite", 1),
    ("sqlite", "SELECT\n  stddev_samp(b) AS s FROM t", "STDDEV_SAMP() cannot be written in SQLite", 2),
    ("sqlite", "SELECT EXTRACT(EPOCH FROM d) AS e FROM t", "EXTRACT(EPOCH FROM ...) cannot be written in SQLite", 1),
    ("sqlite", "SELECT a FROM t\nWHERE a > ANY (SELECT b FROM t)", "ANY (a subquery) cannot be written in SQLite", 2),
    ("sqlite", "SELECT a FROM t\nWHERE a = SOME (SELECT b FROM t)", "ANY (a subquery) cannot be written in SQLite", 2),
    ("sqlite", "SELECT a FROM t WHERE a >= ALL (SELECT b FROM t)", "ALL (a subquery) cannot be written in SQLite", 1),
    (
        "mysql",
        "SELECT *\nFROM a FULL OUTER JOIN b ON a.k = b.k",
        "FULL OUTER JOIN cannot be written in MariaDB/MySQL",
        2,
    ),
    ("mysql", "SELECT grouping(a) AS g FROM t GROUP BY a", "GROUPING() cannot be written in MariaDB/MySQL", 1),
]


@pytest.mark.parametrize(("target", "sql", "message", "line"), REFUSED, ids=[r[2][:30] for r in REFUSED])
def test_what_a_target_cannot_express_is_refused_where_it_is(target, sql, message, line):
    with pytest.raises(Untranslatable, match=re.escape(message)) as caught:
        transpile(sql, "duckdb", target)
    assert caught.value.line == line


def test_unnamed_columns_get_duckdbs_headers_and_a_warning():
    sql = "SELECT sum(x), count(*), substr(s, 1, 2), (x / 2) * 100, x FROM (SELECT 1 AS x, 'ab' AS s) t GROUP BY x, s"
    duck = header_on_duckdb(sql)
    for target in ("postgres", "mysql", "sqlite"):
        con = sqlite3.connect(":memory:") if target == "sqlite" else None
        if con is not None:
            assert [d[0] for d in con.execute(transpile(sql, "duckdb", "sqlite")).description] == duck
        assert len(caveats(sql, "duckdb", target)) == 4
    assert caveats("SELECT x AS y FROM t", "duckdb", "postgres") == []


def test_a_parameter_repeated_by_mysqls_null_ordering_stays_bound():
    out = transpile("SELECT a FROM t ORDER BY CASE WHEN a = :x THEN 0 ELSE 1 END", "duckdb", "mysql")
    assert out.count(":x") == 2
    ordinal = transpile("SELECT a, count(*) AS n FROM t GROUP BY 1 ORDER BY 1", "duckdb", "mysql")
    assert "ORDER BY\n  CASE WHEN a IS NULL THEN 1 ELSE 0 END, a" in ordinal


def _server(url: str, sql: str, params: dict) -> list[tuple]:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as con:
            return [tuple(r) for r in con.execute(sa.text(sql), params).fetchall()]
    finally:
        engine.dispose()


MARIADB_CASES = [
    "SELECT x, y FROM (SELECT a, count(*) FROM (SELECT 1 AS a UNION ALL SELECT 1 UNION ALL SELECT 2) q GROUP BY a) AS c (x, y) ORDER BY x",
    "SELECT avg(v) AS m, sum(v) / 3 AS d FROM (SELECT CAST(0.0500813 AS DECIMAL(12, 7)) AS v UNION ALL SELECT 1.25 UNION ALL SELECT 2) q",
    "SELECT a, sum(b) AS s FROM (SELECT 1 AS a, 2 AS b UNION ALL SELECT 2, 3) q GROUP BY ROLLUP (a) ORDER BY s",
    "SELECT a FROM (SELECT 1 AS a UNION ALL SELECT NULL UNION ALL SELECT 2) q ORDER BY 1",
]


@pytest.mark.parametrize("sql", MARIADB_CASES, ids=["column list", "avg and division", "rollup", "order by 1"])
def test_mariadb_gives_duckdbs_rows(sql, mariadb_url):
    got = _server(mariadb_url, transpile(sql, "duckdb", "mysql"), {})
    want = on_duckdb(sql)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert [number(x) for x in g] == [expected(x) for x in w]


def number(x):
    """NULL and text as they are, any other value as a float."""
    return x if x is None or isinstance(x, str) else float(x)


def expected(x):
    """What a cell must equal: NULL and text exactly, a number to 1 part in 10^12 (one pytest.approx
    per number: pytest 9.2 refuses a NULL inside an approx of a list)."""
    x = number(x)
    return x if x is None or isinstance(x, str) else pytest.approx(x, rel=1e-12)


def test_postgresql_interval_of_a_parameter_stays_bound(postgres_url):
    sql = "SELECT DATE '1998-12-01' - INTERVAL (:n) DAY AS d"
    out = transpile(sql, "duckdb", "postgres")
    assert ":n" in out
    assert (
        _server(postgres_url, out, {"n": 90})
        == [(dt.datetime(1998, 9, 2),)]
        == on_duckdb(sql, {"n": 90}, {"n": "integer"})
    )


CAVEATS = [
    ("sqlite", "SELECT d + INTERVAL 1 MONTH AS e FROM t", "January 31 + 1 month is March 2"),
    ("postgres", "SELECT round(avg(x), 1) AS r FROM t", "exact half"),
    ("mysql", "SELECT a FROM t WHERE r_name = 'EUROPE'", "without regard to case"),
    ("postgres", "SELECT sum(x) FROM t", "result column 1 has no name"),
]


@pytest.mark.parametrize(("target", "sql", "words"), CAVEATS, ids=[c[2][:20] for c in CAVEATS])
def test_what_translates_but_may_answer_otherwise_is_a_caveat(target, sql, words):
    found = caveats(sql, "duckdb", target)
    assert len(found) == 1 and words in found[0][2] and found[0][0] == 1


def test_integer_division_truncates_as_on_duckdb():
    sql = "SELECT 7 // 2 AS a, -7 // 2 AS b, 9 // -4 AS c"
    assert on_sqlite(sql) == on_duckdb(sql) == [(3, -3, -2)]


def test_validate_names_the_refusal_and_the_caveat_at_file_line_col(tmp_path, monkeypatch):
    from mcpgen.commands.validate import run_validate

    monkeypatch.chdir(tmp_path)
    (tmp_path / "mcpgen.yaml").write_text(f"connections:\n  default:\n    url: sqlite:///{tmp_path / 'x.db'}\n")
    specs = tmp_path / "specs"
    specs.mkdir()
    body = "description: d\nsources: [https://example.org/]\ncontent: x\nsql: |\n  SELECT a,\n         {}\n  FROM t\n"
    (specs / "rolled.yaml").write_text(body.format("sum(b) AS s") + "  GROUP BY ROLLUP (a)\n")
    (specs / "months.yaml").write_text(body.format("d + INTERVAL 1 MONTH AS e"))
    report = run_validate(specs)
    shown = sorted(str(p).replace(str(specs) + "/", "") for p in report.problems)
    assert shown[0].startswith("months.yaml:6:10: warning: SQLite adds months past the end")
    assert shown[1] == "rolled.yaml:8:20: GROUP BY ROLLUP cannot be written in SQLite"


def test_translation_happens_once_at_load_and_never_per_call(tmp_path, monkeypatch):
    """The per-call cost of a translated query is the query's: a call runs the stored SQLite text, and
    the translation and its rewrites are not run again (they would raise here)."""
    from mcpgen.serve.project import open_project
    from mcpgen.sql import dialects

    monkeypatch.chdir(tmp_path)
    con = sqlite3.connect(tmp_path / "x.db")
    con.execute("CREATE TABLE t (d TEXT)")
    con.executemany("INSERT INTO t VALUES (?)", [("1995-01-10",), ("1995-03-31",), ("1995-05-01",)])
    con.commit()
    con.close()
    (tmp_path / "mcpgen.yaml").write_text(f"connections:\n  default:\n    url: sqlite:///{tmp_path / 'x.db'}\n")
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "q.yaml").write_text(
        "description: d\nsources: [https://example.org/]\ncontent: x\nparameters:\n"
        "  day: {type: date, description: d, default: '1995-01-01'}\n"
        "sql: SELECT count(*) AS n FROM t WHERE d >= :day AND d < :day + INTERVAL (90) DAY\n"
    )
    project = open_project(specs)
    try:
        assert "DATE(:day, '+90 day')" in project.loaded.specs[0].sql

        def never(*args, **kwargs):
            raise AssertionError("translated again during a call")

        monkeypatch.setattr(dialects, "rewrite", never)
        monkeypatch.setattr("mcpgen.sql.transpile.transpile", never)
        monkeypatch.setattr("mcpgen.load.spec_checks.transpile", never)
        for _ in range(3):
            result = project.registry.call_sync("q", {})
            assert result.structured_content["table"] == [["n"], [2]]
    finally:
        project.close()


# --- DuckDB's date arithmetic: a date plus or minus a number of days, and a date less a date ----------

DATES_TABLE = [
    ("2000-01-30", "2000-03-01", 5, 2000),
    ("1999-12-31", "2000-01-01", -3, 1999),
    (None, "2004-02-28", 1, 2004),
]
DATE_SUMS = [
    "SELECT d + 5 AS a, 5 + d AS b, d - 5 AS c FROM t ORDER BY y",  # a column that is a date
    "SELECT d - e AS a, e - d AS b FROM t ORDER BY y",  # a date less a date: days
    "SELECT d + n AS a, n + d AS b, d - n AS c FROM t ORDER BY y",  # days from a column
    "SELECT y + 1 AS a, y - n AS b, n + n AS c, 1 - n AS d FROM t ORDER BY y",  # numbers stay numbers
    "SELECT max(d) + 2 AS a, min(e) - 1 AS b FROM t",
    "SELECT y FROM t WHERE e > d + 30 ORDER BY y",  # q72's shape: `d3.d_date > d1.d_date + 5`
    "SELECT y, :day + 30 AS a, :day - d AS b, d - :day AS c FROM t ORDER BY y",  # a date parameter
    "SELECT DATE '2000-02-28' + 1 AS a, CAST('2000-03-01' AS DATE) - DATE '2000-02-01' AS b",
]


@pytest.mark.parametrize("sql", DATE_SUMS, ids=[s[7:40] for s in DATE_SUMS])
def test_sqlite_date_arithmetic_of_columns_and_parameters_gives_duckdbs_rows(sql):
    """SQLite keeps dates as ISO text: `d + 5` there adds 5 to the year (2005). The translation adds days
    where DuckDB does, by the value's type in SQLite (text is a date), and leaves numbers alone."""
    duck = duckdb.connect()
    duck.execute("CREATE TABLE t (d DATE, e DATE, n INTEGER, y INTEGER)")
    duck.executemany("INSERT INTO t VALUES (?, ?, ?, ?)", DATES_TABLE)
    text, _ = bind_text(sql, {"day": "date"})
    want = as_text(duck.execute(text, {"day": dt.date(2000, 2, 27)} if ":day" in sql else {}).fetchall())
    lite = sqlite3.connect(":memory:")
    lite.execute("CREATE TABLE t (d TEXT, e TEXT, n INTEGER, y INTEGER)")
    lite.executemany("INSERT INTO t VALUES (?, ?, ?, ?)", DATES_TABLE)
    translated = transpile(sql, "duckdb", "sqlite", frozenset({"day"}))
    assert lite.execute(translated, {"day": "2000-02-27"} if ":day" in sql else {}).fetchall() == want


MARIADB_DATE_SUMS = [
    "SELECT DATE '2000-01-30' + 5 AS a, 5 + DATE '2000-01-30' AS b, DATE '2000-03-01' - 1 AS c",
    "SELECT CAST('2000-03-01' AS DATE) - DATE '2000-01-30' AS a",
    "SELECT 1 AS k, :day + 30 AS a, :day - 30 AS b",
    "SELECT d - :day AS a FROM (SELECT DATE '2000-03-01' AS d) q",
]


@pytest.mark.parametrize("sql", MARIADB_DATE_SUMS, ids=[s[7:40] for s in MARIADB_DATE_SUMS])
def test_mariadb_date_arithmetic_the_sql_says_is_on_dates_gives_duckdbs_rows(sql, mariadb_url):
    """MariaDB adds 5 to 20000130 (20000135); where the SQL says the value is a date (a literal, a cast, a
    `date` parameter) the translation is DATE_ADD / DATE_SUB / DATEDIFF, as DuckDB computes it."""
    params = {"day": dt.date(2000, 2, 27)} if ":day" in sql else {}
    got = _server(mariadb_url, transpile(sql, "duckdb", "mysql", frozenset({"day"})), params)
    assert as_text(got) == as_text(on_duckdb(sql, params, {"day": "date"}))  # cells are ISO text in JSON


# A DATE column plus or minus a number on MariaDB: the SQL does not say the column is a date, the
# database's catalogue does (`SQLAlchemyEngine.column_types`, information_schema.columns).
MARIADB_COLUMN_SUMS = [
    "SELECT y, d + 5 AS a, 5 + d AS b, d - 5 AS c FROM {t} ORDER BY y",  # column + n, n + column, column - n
    "SELECT y, e - d AS a FROM {t} ORDER BY y",  # column - column: days
    "SELECT y, d + n AS a, d - n AS b FROM {t} ORDER BY y",  # days from a number column
    "SELECT y FROM {t} WHERE e > d + 30 ORDER BY y",  # in a WHERE (TPC-DS q72's shape)
    "SELECT {t}.y, {u}.f - 1 AS a FROM {t} JOIN {u} ON {t}.y = {u}.y ORDER BY {t}.y",  # a joined table's column
    "SELECT x.y, x.d + 1 AS a FROM {t} AS x WHERE x.e - 1 > x.d ORDER BY x.y",  # a table's alias
    "SELECT q.y, q.dd + 2 AS a FROM (SELECT y, d AS dd FROM {t}) AS q ORDER BY q.y",  # a column's alias
    "WITH c AS (SELECT y, max(d) AS m FROM {t} GROUP BY y) SELECT y, m - 1 AS a FROM c ORDER BY y",  # a CTE's
    "SELECT y + 1 AS a, y - n AS b, 1 + n AS c FROM {t} ORDER BY y",  # numbers stay numbers
]
JOINED_TABLE = [(2000, "2000-03-01"), (1999, "2000-01-01"), (2004, None)]


@pytest.fixture(scope="module")
def mariadb_dates(mariadb_url):
    """Tables t (d DATE, e DATE, n INT, y INT) and u (y INT, f DATE) of DATES_TABLE and JOINED_TABLE in
    MariaDB, under names of their own, and the same in a DuckDB connection under the same names."""
    import services

    t, u = services.unique_name("dates"), services.unique_name("dates_joined")
    duck = duckdb.connect()
    with services.connect("mariadb") as con, con.cursor() as cur:
        for name, columns, rows in (
            (t, "d DATE, e DATE, n INT, y INT", DATES_TABLE),
            (u, "y INT, f DATE", JOINED_TABLE),
        ):
            cur.execute(f"CREATE TABLE {name} ({columns})")
            cur.executemany(f"INSERT INTO {name} VALUES ({', '.join(['%s'] * len(rows[0]))})", rows)
            duck.execute(f"CREATE TABLE {name} ({columns})")
            duck.executemany(f"INSERT INTO {name} VALUES ({', '.join(['?'] * len(rows[0]))})", rows)
    yield t, u, duck
    with services.connect("mariadb") as con, con.cursor() as cur:
        cur.execute(f"DROP TABLE IF EXISTS {t}, {u}")


@pytest.mark.parametrize("sql", MARIADB_COLUMN_SUMS, ids=[s[7:40] for s in MARIADB_COLUMN_SUMS])
def test_mariadb_date_arithmetic_on_columns_gives_duckdbs_rows_with_the_catalogues_types(
    sql, mariadb_url, mariadb_dates
):
    """MariaDB adds 5 to a DATE as to 20000130 (20000135); without the column's type the translation is
    refused at the construct, with the types read from the database's catalogue it is DuckDB's days."""
    from mcpgen.engines.sqlalchemy.engine import SQLAlchemyEngine
    from mcpgen.spec.config import URLConnection
    from mcpgen.sql.transpile import NeedsColumnTypes

    t, u, duck = mariadb_dates
    sql = sql.format(t=t, u=u)
    with pytest.raises(NeedsColumnTypes, match=r"cannot be translated for MariaDB/MySQL") as refused:
        transpile(sql, "duckdb", "mysql")
    assert refused.value.line == 1 and refused.value.col is not None
    engine = SQLAlchemyEngine("db", URLConnection(url=mariadb_url))
    try:
        columns = engine.column_types(10)
    finally:
        engine.close()
    assert columns[t] == {"d": "DATE", "e": "DATE", "n": "BIGINT", "y": "BIGINT"}
    got = _server(mariadb_url, transpile(sql, "duckdb", "mysql", columns=columns), {})
    assert as_text(got) == as_text(duck.execute(sql).fetchall())


def test_a_column_the_catalogue_does_not_hold_is_still_refused():
    from mcpgen.sql.transpile import NeedsColumnTypes

    with pytest.raises(NeedsColumnTypes, match=r"catalogue \(information_schema.columns\) has no type for z"):
        transpile("SELECT z + 1 AS a FROM elsewhere", "duckdb", "mysql", columns={"t": {"d": "DATE"}})
    # what the SQL itself says needs no catalogue: a cast, a literal, an INTERVAL
    for sql in ("SELECT CAST(z AS DATE) + 1 AS a FROM w", "SELECT z + INTERVAL 1 DAY AS a FROM w"):
        assert "DATE_ADD" in transpile(sql, "duckdb", "mysql") or "INTERVAL" in transpile(sql, "duckdb", "mysql")
