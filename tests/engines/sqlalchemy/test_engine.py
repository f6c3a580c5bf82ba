"""SQLAlchemyEngine against real PostgreSQL, MariaDB and SQLite databases (no mocks).

PostgreSQL and MariaDB come from tests/services.py (skipped when absent, failed under
MCPGEN_REQUIRE_SERVICES=1); SQLite is a file in a temporary folder. Every database gets its
own cities table loaded from examples/data/cities.csv, and results are compared with the same
query run directly through the driver.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import logging
import os
import re
import sqlite3
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import pytest
import services
from sqlalchemy.engine import make_url
from tcpproxy import Proxy

from mcpgen.engines.protocol import Prepared
from mcpgen.engines.sqlalchemy import engine as engine_module
from mcpgen.engines.sqlalchemy.engine import SQLAlchemyEngine
from mcpgen.errors import QueryError, QueryTimeout, UnsafeSQL
from mcpgen.redaction import redact
from mcpgen.spec.config import URLConnection
from mcpgen.spec.params import param_types

BACKENDS = ["postgresql", "mariadb", "sqlite", "psycopg2"]  # psycopg2: PostgreSQL through SQLAlchemy's default driver
SECRET = "Sup3r-S3cret_pw"


@dataclass
class DB:
    kind: str
    url: str
    table: str
    direct: Callable[[str, dict], list[tuple]]  # the same :name query, straight through the driver
    engines: list = dataclasses.field(default_factory=list)

    def engine(self, **options) -> SQLAlchemyEngine:
        engine = SQLAlchemyEngine(self.kind, URLConnection(url=self.url, **options))
        self.engines.append(engine)
        return engine


def _to_pyformat(sql: str, params: dict) -> tuple[str, dict]:
    """`:name` -> `%(name)s`, lists expanded to `(%(name_0)s, ...)`, for psycopg and pymysql."""
    out = dict(params)

    def one(m: re.Match) -> str:
        name = m[1]
        value = params[name]
        if isinstance(value, list):
            del out[name]
            out.update({f"{name}_{i}": v for i, v in enumerate(value)})
            return "(" + ", ".join(f"%({name}_{i})s" for i in range(len(value))) + ")" if value else "(NULL)"
        return f"%({name})s"

    return re.sub(r"(?<![:\w]):(\w+)", one, sql), out


def _direct_server(kind: str):
    def run(sql: str, params: dict) -> list[tuple]:
        text, values = _to_pyformat(sql, params)
        with services.connect(kind) as con:
            cur = con.cursor()
            cur.execute(text, values)
            return [tuple(r) for r in cur.fetchall()]

    return run


@pytest.fixture(scope="session")
def sqlite_cities(tmp_path_factory, city_rows):
    path = tmp_path_factory.mktemp("sqlite") / "cities.db"
    services.load_cities("sqlite", "cities", city_rows, sqlite_path=path)
    return path


@pytest.fixture(params=BACKENDS)
def db(request, city_rows):
    kind = "postgresql" if request.param == "psycopg2" else request.param
    if kind == "sqlite":
        path = request.getfixturevalue("sqlite_cities")

        def direct(sql, params):
            con = sqlite3.connect(path)
            try:
                expanded, values = sql, dict(params)
                for name, value in params.items():
                    if isinstance(value, list):
                        del values[name]
                        values.update({f"{name}_{i}": v for i, v in enumerate(value)})
                        expanded = re.sub(
                            rf":{name}\b",
                            "(" + ", ".join(f":{name}_{i}" for i in range(len(value))) + ")" if value else "(NULL)",
                            expanded,
                        )
                return [tuple(r) for r in con.execute(expanded, values).fetchall()]
            finally:
                con.close()

        d = DB(kind, f"sqlite:///{path}", "cities", direct)
    else:
        url = request.getfixturevalue("postgres_url" if kind == "postgresql" else "mariadb_url")
        table = request.getfixturevalue("postgres_cities" if kind == "postgresql" else "mariadb_cities")
        if request.param == "psycopg2":
            url = make_url(url).set(drivername="postgresql+psycopg2").render_as_string(hide_password=False)
        d = DB(kind, url, table, _direct_server(kind))
    yield d
    for engine in d.engines:
        engine.close()


def run(engine, sql, params=None, max_rows=1000, timeout=10.0, types=None):
    return engine.run(engine.prepare(sql, types=types), params or {}, max_rows, timeout)


def row_count(db: DB) -> int:
    return db.direct(f"SELECT count(*) FROM {db.table}", {})[0][0]


# -- binding -----------------------------------------------------------------------------------


TOP = (
    "SELECT name, country_code, population FROM {t} WHERE country_code = :country "
    "ORDER BY population DESC, geonameid LIMIT :n"
)


@pytest.mark.parametrize("country, n", [("JP", 5), ("FR", 3), ("CN", 10), ("ZZ", 5)])
def test_rows_match_the_driver(db, country, n):
    engine = db.engine()
    sql = TOP.format(t=db.table)
    result = run(engine, sql, {"country": country, "n": n}, types={"country": "string", "n": "integer"})
    assert result.columns == ["name", "country_code", "population"]
    assert result.rows == db.direct(sql, {"country": country, "n": n})
    assert all(type(r) is tuple for r in result.rows)
    assert not result.truncated


def test_optional_parameter_null_and_undeclared_types(db):
    engine = db.engine()
    sql = (
        f"SELECT name FROM {db.table} WHERE (:country IS NULL OR country_code = :country) "
        "ORDER BY population DESC, geonameid LIMIT 3"
    )
    top3 = db.direct(f"SELECT name FROM {db.table} ORDER BY population DESC, geonameid LIMIT 3", {})
    jp3 = db.direct(
        f"SELECT name FROM {db.table} WHERE country_code = 'JP' ORDER BY population DESC, geonameid LIMIT 3", {}
    )
    for types in ({"country": "string"}, None):  # declared, and read off the value
        assert run(engine, sql, {"country": None}, types=types).rows == top3
        assert run(engine, sql, {"country": "JP"}, types=types).rows == jp3


@pytest.mark.parametrize(
    "evil",
    [
        "'; DROP TABLE {t}; --",
        "a' OR '1'='1",
        "JP' OR 1=1 --",
        "\\'; DELETE FROM {t}; --",
        "JP\x00",
        "'); SELECT pg_sleep(5); --",
    ],
)
def test_sql_in_arguments_is_only_a_value(db, evil):
    engine = db.engine()
    before = row_count(db)
    value = evil.format(t=db.table)
    sql = f"SELECT name FROM {db.table} WHERE country_code = :country OR name = :country"
    try:
        result = run(engine, sql, {"country": value}, types={"country": "string"})
        assert result.rows == []
    except QueryError as exc:  # PostgreSQL refuses NUL bytes in text: a clear error, nothing run
        assert "\x00" in value and "NUL" in str(exc).upper()
    assert row_count(db) == before


def test_arrays_expand_and_an_empty_list_matches_nothing(db):
    engine = db.engine()
    sql = f"SELECT name FROM {db.table} WHERE country_code IN :codes ORDER BY population DESC, geonameid LIMIT 20"
    types = {"codes": "string[]"}
    for codes in (["JP"], ["JP", "FR", "BR"], ["JP", "JP"], ["ZZ"]):
        assert run(engine, sql, {"codes": codes}, types=types).rows == db.direct(sql, {"codes": codes})
    assert run(engine, sql, {"codes": []}, types=types).rows == []
    # integers, and an empty list under NOT IN keeps every row
    ids = [r[0] for r in db.direct(f"SELECT geonameid FROM {db.table} ORDER BY geonameid LIMIT 4", {})]
    by_id = f"SELECT geonameid FROM {db.table} WHERE geonameid IN :ids ORDER BY geonameid"
    assert run(engine, by_id, {"ids": ids}, types={"ids": "integer[]"}).rows == [(i,) for i in ids]
    assert run(engine, by_id, {"ids": ids}).rows == [(i,) for i in ids]  # item type read off the values
    assert run(engine, by_id, {"ids": []}, types={"ids": "integer[]"}).rows == []
    not_in = f"SELECT count(*) FROM {db.table} WHERE country_code NOT IN :codes"
    assert run(engine, not_in, {"codes": []}, types=types).rows == [(row_count(db),)]
    # undeclared item type: an empty list still matches nothing (text, integer and date columns)
    assert run(engine, sql, {"codes": []}).rows == []
    assert run(engine, not_in, {"codes": []}).rows == [(row_count(db),)]
    assert run(engine, by_id, {"ids": []}).rows == []
    day = _date(db.kind, "2024-01-15")
    assert run(engine, f"SELECT 1 FROM (SELECT {day} AS d) t WHERE d IN :days", {"days": []}).rows == []
    # an injection attempt inside a list is a value too
    assert run(engine, sql, {"codes": ["JP') OR ('1'='1"]}, types=types).rows == []


@pytest.mark.parametrize("declared", [True, False], ids=["declared", "undeclared"])
def test_an_optional_list_left_out_means_every_value(db, declared):
    """The portable spelling `(:xs IS NULL OR x IN :xs)`: left out, every row; given, those values;
    empty, none. `IS NOT NULL` and several lists in one query too. (PostgreSQL and MariaDB refused
    it once: a list parameter cannot be a single value in SQLAlchemy.)"""
    engine = db.engine()
    types = {"codes": "string[]", "ids": "integer[]"} if declared else None
    sql = f"SELECT count(*) FROM {db.table} WHERE (:codes IS NULL OR country_code IN :codes)"
    everything = row_count(db)
    japan = db.direct(f"SELECT count(*) FROM {db.table} WHERE country_code = 'JP'", {})[0][0]
    assert run(engine, sql, {}, types=types).rows == [(everything,)]
    assert run(engine, sql, {"codes": None}, types=types).rows == [(everything,)]
    assert run(engine, sql, {"codes": ["JP"]}, types=types).rows == [(japan,)]
    assert run(engine, sql, {"codes": []}, types=types).rows == [(0,)]
    both = (
        f"SELECT count(*) FROM {db.table} WHERE (:codes IS NOT NULL AND country_code IN :codes) "
        f"OR (:ids IS NULL OR geonameid IN :ids)"
    )
    assert run(engine, both, {"codes": ["JP"], "ids": [-1]}, types=types).rows == [(japan,)]
    assert run(engine, both, {"codes": ["JP"]}, types=types).rows == [(everything,)]


def test_a_list_used_as_another_single_value_is_refused_with_the_portable_spelling(db):
    engine = db.engine()
    with pytest.raises(UnsafeSQL) as raised:
        engine.prepare(f"SELECT 1 FROM {db.table} WHERE country_code IN :codes OR :codes = 'JP'")
    assert str(raised.value) == (
        "parameter codes is used both as a list (IN :codes) and as a single value (line 1, column "
        f"{len(f'SELECT 1 FROM {db.table} WHERE country_code IN :codes OR ') + 1}); for all values when it is "
        "left out, write (:codes IS NULL OR column IN :codes)"
    )


def _date(kind: str, text: str) -> str:
    return f"'{text}'" if kind == "sqlite" else f"DATE '{text}'"


def _timestamp(kind: str, text: str) -> str:
    return f"'{text}'" if kind == "sqlite" else f"TIMESTAMP '{text}'"


def test_dates_and_datetimes_bind_as_such(db):
    engine = db.engine()
    k = db.kind
    days = (
        f"SELECT d FROM (SELECT {_date(k, '2024-01-15')} AS d UNION ALL SELECT {_date(k, '2024-03-01')} "
        f"UNION ALL SELECT {_date(k, '2023-12-31')}) t WHERE d >= :since ORDER BY d"
    )
    got = run(engine, days, {"since": dt.date(2024, 1, 1)}, types={"since": "date"}).rows
    assert [str(r[0]) for r in got] == ["2024-01-15", "2024-03-01"]
    assert [str(r[0]) for r in run(engine, days, {"since": dt.date(2024, 1, 15)}).rows] == ["2024-01-15", "2024-03-01"]
    stamps = (
        f"SELECT t FROM (SELECT {_timestamp(k, '2024-01-15 10:00:00')} AS t UNION ALL "
        f"SELECT {_timestamp(k, '2024-01-15 08:30:00')}) x WHERE t > :after ORDER BY t"
    )
    got = run(engine, stamps, {"after": dt.datetime(2024, 1, 15, 9, 0)}, types={"after": "datetime"}).rows
    assert [str(r[0]) for r in got] == ["2024-01-15 10:00:00"]
    assert run(engine, days, {"since": None}, types={"since": "date"}).rows == []
    if k == "postgresql":
        typeof = "SELECT pg_typeof(:d)::text, pg_typeof(:t)::text, pg_typeof(:z)::text"
        values = {
            "d": dt.date(2024, 1, 1),
            "t": dt.datetime(2024, 1, 1, 12),
            "z": dt.datetime(2024, 1, 1, 12, tzinfo=dt.UTC),
        }
        expected = [("date", "timestamp without time zone", "timestamp with time zone")]
        assert run(engine, typeof, values).rows == expected
        assert run(engine, typeof, values, types={"d": "date", "t": "datetime", "z": "datetime"}).rows == expected
        assert run(engine, days, {"since": dt.date(2024, 1, 15)}).rows[0][0] == dt.date(2024, 1, 15)


def test_colons_in_strings_comments_and_casts_are_not_parameters(db):
    engine = db.engine()
    sql = (
        "SELECT ':x' AS s, 'a%b' AS p, '\\:z' AS e -- :y is a comment\n"
        f"FROM {db.table} WHERE country_code = :c /* :w */ LIMIT 1"
    )
    query = engine.prepare(sql)
    assert query.names == frozenset({"c"})
    [(s, p, _e)] = engine.run(query, {"c": "JP", "unused": 1}, 10, 5).rows
    assert (s, p) == (":x", "a%b")
    if db.kind == "postgresql":
        assert run(engine, "SELECT :n::int + 1 AS v, '1'::int AS w", {"n": "41"}).rows == [(42, 1)]


def test_trailing_semicolon_and_comment(db):
    engine = db.engine()
    assert run(engine, f"SELECT count(*) FROM {db.table} -- done\n;\n").rows == [(row_count(db),)]
    assert run(engine, f"SELECT count(*) FROM {db.table} -- no newline at the end").rows == [(row_count(db),)]


# -- max_rows ----------------------------------------------------------------------------------


def test_max_rows_truncates_and_says_so(db):
    engine = db.engine()
    sql = f"SELECT geonameid, name FROM {db.table} ORDER BY population DESC, geonameid"
    everything = db.direct(sql, {})
    result = engine.run(engine.prepare(sql), {}, 5, 10)
    assert result.rows == everything[:5] and result.truncated
    exact = engine.run(engine.prepare(sql + " LIMIT 7"), {}, 7, 10)
    assert exact.rows == everything[:7] and not exact.truncated
    one_more = engine.run(engine.prepare(sql + " LIMIT 8"), {}, 7, 10)
    assert one_more.rows == everything[:7] and one_more.truncated
    full = engine.run(engine.prepare(sql), {}, len(everything), 10)
    assert full.rows == everything and not full.truncated


# -- read-only ---------------------------------------------------------------------------------


WRITES = [
    "WITH gone AS (DELETE FROM {t} RETURNING *) SELECT count(*) FROM gone",
    "SELECT * INTO {t}_copy FROM {t}",
    "COMMIT; DROP TABLE {t}",
    "SELECT 1; DROP TABLE {t}",
    "DROP TABLE {t}; SELECT 1",
    "INSERT INTO {t} (geonameid) VALUES (1)",
    "UPDATE {t} SET population = 0",
    "DELETE FROM {t}",
    "CREATE TEMPORARY TABLE x AS SELECT * FROM {t}",
    "SELECT * FROM {t} FOR UPDATE",
    "SET statement_timeout = 0",
    "BEGIN",
]


@pytest.mark.parametrize("sql", WRITES)
def test_prepare_rejects_writes_before_any_driver(db, sql):
    engine = db.engine()
    before = row_count(db)
    with pytest.raises(UnsafeSQL):
        engine.prepare(sql.format(t=db.table))
    assert row_count(db) == before


def _bypass(engine: SQLAlchemyEngine, sql: str) -> Prepared:
    """A Prepared for `sql` that skips prepare()'s checks: what a write that got through would look like."""
    checked = engine.prepare("SELECT 1")
    return Prepared(dataclasses.replace(checked.sql, text=sql), frozenset())


def test_postgres_write_that_got_through_fails_in_the_read_only_session(postgres_url):
    name = services.unique_name("mcpgen_ro")
    with services.connect("postgresql") as con:
        con.execute(f"CREATE SEQUENCE {name}_seq")
        con.execute(f"CREATE TABLE {name}_t (x int)")
        con.execute(
            f"CREATE FUNCTION {name}_f() RETURNS int VOLATILE LANGUAGE plpgsql AS "
            f"$$ BEGIN INSERT INTO {name}_t VALUES (1); RETURN 1; END $$"
        )
    engine = SQLAlchemyEngine("pg", URLConnection(url=postgres_url))
    try:
        # Both are plain SELECTs to a parser (prepare() knows nextval and refuses it first); the
        # database refuses the write.
        for sql in (f"SELECT nextval('{name}_seq')", f"SELECT {name}_f()"):
            with pytest.raises(QueryError, match="read-only transaction"):
                engine.run(_bypass(engine, sql), {}, 10, 5)
        # Stacked statements that slipped past prepare() cannot run either.
        with pytest.raises(QueryError):
            engine.run(_bypass(engine, f"SELECT 1; COMMIT; DROP TABLE {name}_t"), {}, 10, 5)
        assert run(engine, "SELECT current_setting('transaction_read_only')").rows == [("on",)]
    finally:
        engine.close()
        with services.connect("postgresql") as con:
            assert con.execute(f"SELECT count(*) FROM {name}_t").fetchone() == (0,)
            assert con.execute(f"SELECT is_called FROM {name}_seq").fetchone() == (False,)
            con.execute(f"DROP FUNCTION {name}_f(); DROP TABLE {name}_t; DROP SEQUENCE {name}_seq")


def test_mariadb_write_that_got_through_fails_in_the_read_only_transaction(mariadb_url):
    name = services.unique_name("mcpgen_ro")
    with services.connect("mariadb") as con:
        cur = con.cursor()
        cur.execute(f"CREATE TABLE {name}_t (x int)")
        cur.execute(
            f"CREATE FUNCTION {name}_f() RETURNS INT MODIFIES SQL DATA "
            f"BEGIN INSERT INTO {name}_t VALUES (1); RETURN 1; END"
        )
    engine = SQLAlchemyEngine("maria", URLConnection(url=mariadb_url))
    try:
        with pytest.raises(QueryError, match="(?i)read only"):
            run(engine, f"SELECT {name}_f()")
        with pytest.raises(QueryError):
            engine.run(_bypass(engine, f"DELETE FROM {name}_t"), {}, 10, 5)
    finally:
        engine.close()
        with services.connect("mariadb") as con:
            cur = con.cursor()
            cur.execute(f"SELECT count(*) FROM {name}_t")
            assert cur.fetchone() == (0,)
            cur.execute(f"DROP FUNCTION {name}_f")
            cur.execute(f"DROP TABLE {name}_t")


def test_sqlite_is_opened_read_only(tmp_path, city_rows):
    path = tmp_path / "ro.db"
    services.load_cities("sqlite", "cities", city_rows[:10], sqlite_path=path)
    before = path.read_bytes()
    engine = SQLAlchemyEngine("lite", URLConnection(url=f"sqlite:///{path}"))
    try:
        for sql in ("DELETE FROM cities", "CREATE TABLE x (a)", f"ATTACH DATABASE '{tmp_path / 'new.db'}' AS n"):
            with pytest.raises(QueryError):
                engine.run(_bypass(engine, sql), {}, 10, 5)
        assert run(engine, "SELECT query_only FROM pragma_query_only").rows == [(1,)]
        assert run(engine, "SELECT count(*) FROM cities").rows == [(10,)]
    finally:
        engine.close()
    assert path.read_bytes() == before
    assert not (tmp_path / "new.db").exists()


# -- timeouts ----------------------------------------------------------------------------------


@pytest.mark.parametrize("driver", ["psycopg", "psycopg2"])
def test_postgres_timeout_cancels_the_query_on_the_server(postgres_url, driver):
    marker = services.unique_name("mcpgen_timeout")
    url = make_url(postgres_url).set(drivername=f"postgresql+{driver}").render_as_string(hide_password=False)
    engine = SQLAlchemyEngine("pg", URLConnection(url=url))
    try:
        start = time.monotonic()
        with pytest.raises(QueryTimeout, match=r"^the query ran longer than 0.5 s and was cancelled$"):
            run(engine, f"SELECT pg_sleep(10) /* {marker} */", timeout=0.5)
        assert time.monotonic() - start < 2.0
        with services.connect("postgresql") as con:
            active = con.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' "
                "AND query LIKE %s AND pid <> pg_backend_pid()",
                [f"%{marker}%"],
            ).fetchone()[0]
        assert active == 0
        # the pooled connection is reusable, and a longer limit applies again on it
        assert run(engine, "SELECT 1 FROM pg_sleep(0.6)", timeout=5).rows == [(1,)]
    finally:
        engine.close()


def test_postgres_query_never_runs_without_its_time_limit(postgres_url, monkeypatch):
    """When the server refuses the opening of the call's transaction (BEGIN READ ONLY, its time
    limit), the query is never run: the call fails at once with the server's sentence (the query,
    5 s of sleep, never ran), and the next call is served, read-only again."""
    from mcpgen.engines.sqlalchemy import backends

    engine = SQLAlchemyEngine("pg", URLConnection(url=postgres_url, pool_size=1, max_overflow=0))
    try:
        run(engine, "SELECT 1")
        monkeypatch.setattr(backends, "_ms", lambda seconds: "'no limit'")
        start = time.monotonic()
        with pytest.raises(QueryError, match=r'invalid value for parameter "statement_timeout"'):
            run(engine, "SELECT pg_sleep(5)", timeout=10)
        assert time.monotonic() - start < 2
        monkeypatch.undo()
        assert run(engine, "SELECT current_setting('transaction_read_only')").rows == [("on",)]
    finally:
        engine.close()


def test_mariadb_timeout_cancels_the_query_on_the_server(mariadb_url):
    marker = services.unique_name("mcpgen_timeout")
    engine = SQLAlchemyEngine("maria", URLConnection(url=mariadb_url))
    try:
        start = time.monotonic()
        with pytest.raises(QueryTimeout, match="longer than 0.5 s"):
            run(engine, f"SELECT SLEEP(10) AS s /* {marker} */", timeout=0.5)
        assert time.monotonic() - start < 2.0
        with services.connect("mariadb") as con:
            cur = con.cursor()
            cur.execute(
                "SELECT count(*) FROM information_schema.processlist WHERE info LIKE %s "
                "AND id <> connection_id() AND command <> 'Sleep'",
                [f"%{marker}%"],
            )
            assert cur.fetchone() == (0,)
        assert run(engine, "SELECT SLEEP(0.6)", timeout=5).rows == [(0,)]
    finally:
        engine.close()


def test_sqlite_timeout_interrupts_the_query(tmp_path):
    engine = SQLAlchemyEngine("lite", URLConnection(url=f"sqlite:///{tmp_path / 'x.db'}"))
    sqlite3.connect(tmp_path / "x.db").close()
    try:
        start = time.monotonic()
        with pytest.raises(QueryTimeout):
            run(
                engine,
                "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) SELECT count(*) FROM r",
                timeout=0.3,
            )
        assert time.monotonic() - start < 1.5
        assert run(engine, "SELECT 1").rows == [(1,)]
    finally:
        engine.close()


# -- errors and redaction ----------------------------------------------------------------------


def test_redact():
    assert (
        redact("postgresql+psycopg://reader:pa55word@db.example:5432/x")
        == "postgresql+psycopg://reader:***@db.example:5432/x"
    )
    assert redact("mysql+pymysql://root:@h/db") == "mysql+pymysql://root:***@h/db"
    assert redact("host=db user=u password=pa55word dbname=x") == "host=db user=u password=*** dbname=x"
    assert redact("PWD='a b';UID=x") == "PWD=***;UID=x"
    assert redact("failed for p%40ss and p@ss", ["p@ss"]) == "failed for *** and ***"
    assert redact("no secrets here") == "no secrets here"
    assert redact("ab", ["ab"]) == "ab"  # too short to be a secret worth mangling text for


@pytest.mark.parametrize(
    "url",
    [
        f"postgresql+psycopg://reader:{SECRET}@127.0.0.1:1/test",
        f"mysql+pymysql://reader:{SECRET}@127.0.0.1:1/test",
    ],
)
def test_unreachable_database_error_has_no_secret(url, caplog):
    caplog.set_level(logging.DEBUG)
    engine = SQLAlchemyEngine("warehouse", URLConnection(url=url))
    try:
        with pytest.raises(QueryError) as info:
            run(engine, "SELECT 1")
        message = str(info.value)
        assert message.startswith("connection 'warehouse' is unavailable: ")
        assert SECRET not in message and "reader:" not in message
        assert SECRET not in caplog.text and SECRET not in repr(engine)
        with pytest.raises(QueryError) as info:
            engine.describe(engine.prepare("SELECT 1"))
        assert SECRET not in str(info.value)
    finally:
        engine.close()


def test_password_from_the_environment(postgres_url, monkeypatch):
    from sqlalchemy.engine import make_url

    monkeypatch.setenv("MCPGEN_TEST_PW", SECRET)
    monkeypatch.setenv("MCPGEN_TEST_PG_HOST", make_url(postgres_url).host)
    url = postgres_url.replace(make_url(postgres_url).host, "${MCPGEN_TEST_PG_HOST}", 1)
    # trust auth accepts any password: the call succeeds with the password set from the environment
    engine = SQLAlchemyEngine("pg", URLConnection(url=url, password="${MCPGEN_TEST_PW}"))
    try:
        assert run(engine, "SELECT 1").rows == [(1,)]
        assert engine._engine.url.password == SECRET and SECRET not in repr(engine._engine)
    finally:
        engine.close()
    bad = SQLAlchemyEngine(
        "pg", URLConnection(url="postgresql+psycopg://u@127.0.0.1:1/x", password="${MCPGEN_TEST_PW}")
    )
    try:
        with pytest.raises(QueryError) as info:
            run(bad, "SELECT 1")
        assert SECRET not in str(info.value)
    finally:
        bad.close()


def test_missing_variable_is_named_without_values(monkeypatch):
    monkeypatch.setenv("MCPGEN_TEST_USER", "someone")
    monkeypatch.delenv("MCPGEN_TEST_MISSING", raising=False)
    with pytest.raises(QueryError) as info:
        SQLAlchemyEngine(
            "w", URLConnection(url="postgresql+psycopg://${MCPGEN_TEST_USER}@h/db", password="${MCPGEN_TEST_MISSING}")
        )
    assert "MCPGEN_TEST_MISSING" in str(info.value) and "someone" not in str(info.value)
    engine = SQLAlchemyEngine("w", URLConnection(url="sqlite:///${MCPGEN_TEST_MISSING:-/nonexistent/x.db}"))
    engine.close()


def test_invalid_url_is_not_echoed():
    with pytest.raises(QueryError) as info:
        SQLAlchemyEngine("w", URLConnection(url=f"not a url with {SECRET}"))
    assert SECRET not in str(info.value) and "not a valid SQLAlchemy URL" in str(info.value)


def test_wrong_password_error_has_no_secret(mariadb_url):
    from sqlalchemy.engine import make_url

    url = make_url(mariadb_url).set(username="mcpgen_nobody", password=SECRET)
    engine = SQLAlchemyEngine("maria", URLConnection(url=url.render_as_string(hide_password=False)))
    try:
        with pytest.raises(QueryError, match="unavailable") as info:
            run(engine, "SELECT 1")
        assert SECRET not in str(info.value)
    finally:
        engine.close()


def test_database_error_is_one_clear_line(db):
    engine = db.engine()
    with pytest.raises(QueryError) as info:
        run(
            engine,
            "SELECT no_such_column FROM no_such_table_here WHERE x = :secret_value",
            {"secret_value": "do-not-echo-me"},
        )
    message = str(info.value)
    assert message.startswith("the query failed: ") and "\n" not in message
    assert "no_such" in message
    assert "do-not-echo-me" not in message and "[SQL" not in message


# -- pooling and faults ------------------------------------------------------------------------


def test_postgres_terminated_connections_cost_nothing(postgres_url):
    app = services.unique_name("mcpgen_test")
    engine = SQLAlchemyEngine("pg", URLConnection(url=postgres_url, connect_args={"application_name": app}))
    kill = "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = %s"
    try:
        pid = run(engine, "SELECT pg_backend_pid()").rows[0][0]
        with services.connect("postgresql") as con:
            assert con.execute(kill, [app]).fetchone()[0] >= 1
        # the pooled connection is dead: the next call notices (its socket has something to read) and gets a new one
        assert run(engine, "SELECT 1").rows == [(1,)]
        assert run(engine, "SELECT pg_backend_pid()").rows[0][0] != pid

        # killed mid-query: a clear error for that call, and the next call succeeds
        errors = []

        def slow():
            try:
                run(engine, "SELECT pg_sleep(5)", timeout=10)
            except QueryError as exc:
                errors.append(exc)

        worker = threading.Thread(target=slow)
        worker.start()
        with services.connect("postgresql") as con:
            for _ in range(100):
                if con.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s AND state = 'active'", [app]
                ).fetchone()[0]:
                    break
                time.sleep(0.02)
            con.execute(kill, [app])
        worker.join(10)
        assert len(errors) == 1 and str(errors[0]).startswith("connection 'pg' is unavailable: ")
        assert run(engine, "SELECT 2").rows == [(2,)]
    finally:
        engine.close()


def test_postgres_socket_duplicates_close_with_their_connections(postgres_url):
    """Each pooled connection's socket has one duplicate for the call's cutoff, made on its first
    call: a connection the pool drops (killed on the server) and every connection at close take
    theirs with them, even while something still holds the driver's connection object, so no file
    and no server session outlives the engine."""
    import sqlalchemy as sa

    def open_files():
        return len(os.listdir("/proc/self/fd"))

    app = services.unique_name("mcpgen_test")
    sessions = "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s"
    before = open_files()
    engine = SQLAlchemyEngine("pg", URLConnection(url=postgres_url, connect_args={"application_name": app}))
    held = []  # the driver's connections, kept alive past their close (a traceback, a log record)
    sa.event.listen(engine._engine, "checkout", lambda dbapi_connection, *_: held.append(dbapi_connection))
    try:
        assert run(engine, "SELECT 1").rows == [(1,)]
        one_connection = open_files() - before  # its socket and the duplicate
        for _ in range(3):
            assert run(engine, "SELECT 1").rows == [(1,)]
        assert open_files() - before == one_connection  # not one more a call
        with services.connect("postgresql") as con:
            con.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s", [app])
        assert run(engine, "SELECT 2").rows == [(2,)]  # through a new connection
        assert open_files() - before == one_connection  # the dead one's duplicate went with it
    finally:
        engine.close()
    assert open_files() == before
    with services.connect("postgresql") as con:  # a backend ends once the server reads the closed socket
        deadline = time.monotonic() + 10
        while con.execute(sessions, [app]).fetchone()[0] and time.monotonic() < deadline:
            time.sleep(0.02)
        assert con.execute(sessions, [app]).fetchone()[0] == 0


def test_postgres_connection_dead_at_the_opening_is_replaced_once(postgres_url):
    """The server ends a pooled connection after the pool's look at it (the race a restart or a
    killed session leaves): the call's opening (BEGIN READ ONLY) gets no answer, so nothing ran,
    and the call answers through a new connection."""
    import sqlalchemy as sa

    app = services.unique_name("mcpgen_test")
    engine = SQLAlchemyEngine(
        "pg", URLConnection(url=postgres_url, pool_size=1, max_overflow=0, connect_args={"application_name": app})
    )
    killed = []

    def kill_once(dbapi_connection, record, proxy):
        if not killed:
            killed.append(dbapi_connection.info.backend_pid)
            with services.connect("postgresql") as con:  # waits until the backend has gone
                assert con.execute("SELECT pg_terminate_backend(%s, 5000)", [killed[0]]).fetchone() == (True,)

    try:
        pid = run(engine, "SELECT pg_backend_pid()").rows[0][0]
        sa.event.listen(engine._engine, "checkout", kill_once)  # after mcpgen's own look at the socket
        assert run(engine, "SELECT pg_backend_pid()").rows[0][0] not in (pid, None)
        assert killed == [pid]
    finally:
        engine.close()


def test_sqlite_down_at_start_then_back(tmp_path):
    path = tmp_path / "later.db"
    engine = SQLAlchemyEngine("lite", URLConnection(url=f"sqlite:///{path}"))
    try:
        with pytest.raises(QueryError, match="^connection 'lite' is unavailable: "):
            run(engine, "SELECT 1")
        con = sqlite3.connect(path)
        con.execute("CREATE TABLE t (x)")
        con.execute("INSERT INTO t VALUES (1)")
        con.commit()
        con.close()
        assert run(engine, "SELECT x FROM t").rows == [(1,)]  # same engine, no restart
    finally:
        engine.close()


def test_pool_exhaustion_is_a_bounded_wait_then_a_clear_error(postgres_url):
    engine = SQLAlchemyEngine("pg", URLConnection(url=postgres_url, pool_size=1, max_overflow=0, pool_timeout=0.3))
    try:
        run(engine, "SELECT 1")
        slow = threading.Thread(target=run, args=(engine, "SELECT pg_sleep(1.2)"), kwargs={"timeout": 5})
        slow.start()
        time.sleep(0.2)
        start = time.monotonic()
        with pytest.raises(QueryError, match="^connection 'pg' is busy: all 1 connections were in use for 0.3 s"):
            run(engine, "SELECT 1")
        assert 0.25 <= time.monotonic() - start < 1.0
        slow.join(5)
        assert run(engine, "SELECT 1").rows == [(1,)]
    finally:
        engine.close()


def test_postgres_idle_connections_held_between_calls_keep_the_pools_bounds(postgres_url):
    """Idle PostgreSQL connections are held between calls (see `hold`): calls that wait for a
    connection get the ones given back, within pool_timeout and without error, never more than
    pool_size + max_overflow sessions are open, and pool_size stay open once the calls are done."""
    app = services.unique_name("mcpgen_test")
    sessions = "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s"
    engine = SQLAlchemyEngine(
        "pg",
        URLConnection(
            url=postgres_url, pool_size=2, max_overflow=1, pool_timeout=5, connect_args={"application_name": app}
        ),
    )
    seen = []

    def call(i):
        rows = run(
            engine, "SELECT pg_sleep(0.05), count(*) FROM pg_stat_activity WHERE application_name = :a", {"a": app}
        ).rows
        seen.append(rows[0][1])
        return i

    try:
        start = time.monotonic()
        with ThreadPoolExecutor(12) as pool:
            assert sorted(pool.map(call, range(24))) == list(range(24))
        assert time.monotonic() - start < 4.0  # 24 calls of 50 ms over 3 connections; none waited out 5 s
        assert max(seen) <= 3
        with services.connect("postgresql") as con:
            assert con.execute(sessions, [app]).fetchone()[0] == 2
        assert [run(engine, "SELECT 1").rows for _ in range(5)] == [[(1,)]] * 5
        with services.connect("postgresql") as con:
            assert con.execute(sessions, [app]).fetchone()[0] == 2
    finally:
        engine.close()
    with services.connect("postgresql") as con:
        assert con.execute(sessions, [app]).fetchone()[0] == 0


@pytest.mark.parametrize("kind", ["postgresql", "mariadb"])
def test_a_reply_that_never_comes_ends_the_call_within_its_bound(kind, request, monkeypatch):
    """The database answers, but its reply never reaches mcpgen (a proxy holds it, as a network gone
    silent would): the call fails within timeout + ANSWER_GRACE with one sentence, the rest of the
    process keeps running meanwhile (the proxy's threads forward bytes only while no wait holds
    the GIL), and the next call works on a new connection."""
    url = make_url(request.getfixturevalue("postgres_url" if kind == "postgresql" else "mariadb_url"))
    proxy = Proxy(url.host or "127.0.0.1", url.port or (5432 if kind == "postgresql" else 3306))
    proxy.start()
    monkeypatch.setattr(engine_module, "ANSWER_GRACE", 0.5)
    through = url.set(host="127.0.0.1", port=proxy.port).render_as_string(hide_password=False)
    engine = SQLAlchemyEngine(kind, URLConnection(url=through, pool_size=1, max_overflow=0))
    try:
        assert run(engine, "SELECT 1 AS one").rows == [(1,)]
        accepted = proxy.accepted
        proxy.hold(b"mcpgen_held")
        with ticking() as ticks:
            start = time.monotonic()
            with pytest.raises(QueryError) as raised:
                run(engine, "SELECT 2 AS mcpgen_held", timeout=1)
            elapsed = time.monotonic() - start
        assert str(raised.value) == (
            f"connection '{kind}' did not answer within 1.5 s; the call was abandoned and its connection closed"
        )
        assert 1.4 < elapsed < 4 and proxy.held > 0
        assert ticks[0] >= 40  # the other threads ran throughout
        proxy.hold(None)
        assert run(engine, "SELECT 3 AS three").rows == [(3,)]
        assert proxy.accepted == accepted + 1  # a new connection
    finally:
        engine.close()
        proxy.close()


def test_postgres_begin_never_answered_fails_within_the_call_timeout(postgres_url, monkeypatch):
    """mcpgen's own BEGIN, sent around the driver on its own (before statements SQLAlchemy runs,
    here a describe), waits for its reply at most the call's timeout; sent with the query in one
    message (a call), its wait is the query's: timeout + ANSWER_GRACE. The GIL stays free."""
    url = make_url(postgres_url)
    proxy = Proxy(url.host or "127.0.0.1", url.port or 5432)
    proxy.start()
    monkeypatch.setattr(engine_module, "ANSWER_GRACE", 0.5)
    through = url.set(host="127.0.0.1", port=proxy.port).render_as_string(hide_password=False)
    engine = SQLAlchemyEngine("pg", URLConnection(url=through, pool_size=1, max_overflow=0))
    try:
        assert run(engine, "SELECT 1").rows == [(1,)]
        proxy.hold(b"BEGIN")
        start = time.monotonic()
        with ticking() as ticks, pytest.raises(QueryError) as raised:
            engine.describe(engine.prepare("SELECT 2 AS two"), timeout=0.5)
        assert str(raised.value) == (
            "connection 'pg' could not start a read-only transaction: the database did not answer within 0.5 s"
        )
        assert time.monotonic() - start < 3 and ticks[0] >= 10
        start = time.monotonic()
        with ticking() as ticks, pytest.raises(QueryError) as raised:
            run(engine, "SELECT 2", timeout=0.5)
        assert str(raised.value) == (
            "connection 'pg' did not answer within 1 s; the call was abandoned and its connection closed"
        )
        assert time.monotonic() - start < 3 and ticks[0] >= 10
        proxy.hold(None)
        assert run(engine, "SELECT 3").rows == [(3,)]
    finally:
        engine.close()
        proxy.close()


@contextlib.contextmanager
def ticking():
    """Counts 10 ms ticks of a thread of its own while the block runs: a wait that holds the GIL stops it."""
    ticks, stop = [0], threading.Event()

    def tick():
        while not stop.wait(0.01):
            ticks[0] += 1

    thread = threading.Thread(target=tick, daemon=True)
    thread.start()
    try:
        yield ticks
    finally:
        stop.set()
        thread.join(5)


def test_twenty_concurrent_calls(db):
    engine = db.engine()
    sql = TOP.format(t=db.table)
    countries = ["JP", "FR", "CN", "US", "BR", "IN", "DE", "NG", "MX", "ID"] * 2
    expected = {c: db.direct(sql, {"country": c, "n": 5}) for c in set(countries)}
    query = engine.prepare(sql, types={"country": "string", "n": "integer"})
    barrier = threading.Barrier(len(countries))

    def call(country):
        barrier.wait()
        return country, engine.run(query, {"country": country, "n": 5}, 100, 10).rows

    with ThreadPoolExecutor(len(countries)) as pool:
        results = list(pool.map(call, countries))
    assert all(rows == expected[c] for c, rows in results)


# -- describe ----------------------------------------------------------------------------------


def test_describe_gives_names_and_types_without_running(db):
    engine = db.engine()
    # Each row sleeps 20 s: a describe that ends well within that ran nothing (a bound with room for a loaded machine).
    sleep = {"postgresql": "pg_sleep(20)", "mariadb": "SLEEP(20)", "sqlite": "1"}[db.kind]
    query = engine.prepare(
        f"SELECT {sleep} AS s, name, population FROM {db.table} WHERE country_code IN :codes AND population > :n",
        types={"codes": "string[]", "n": "integer"},
    )
    start = time.monotonic()
    described = engine.describe(query)
    assert time.monotonic() - start < 10.0
    assert [name for name, _ in described] == ["s", "name", "population"]
    types = dict(described)
    if db.kind == "postgresql":
        assert types == {"s": "void", "name": "text", "population": "bigint"}
    elif db.kind == "mariadb":
        assert types["population"] == "longlong" and "string" in types["name"]
    with pytest.raises(QueryError, match="the query failed"):
        engine.describe(engine.prepare(f"SELECT nope FROM {db.table}"))


def test_param_types_from_spec_parameters():
    from mcpgen.spec.models import Parameter

    params = {
        "n": Parameter(type="integer", description="n"),
        "ids": Parameter(type="array", description="ids", items={"type": "date"}),
    }
    assert param_types(params) == {"n": "integer", "ids": "date[]"}


def test_prepare_rejects_a_name_used_as_list_and_value(tmp_path):
    engine = SQLAlchemyEngine("lite", URLConnection(url=f"sqlite:///{tmp_path / 'x.db'}"))
    try:
        with pytest.raises(UnsafeSQL, match="both as a list"):
            engine.prepare("SELECT 1 WHERE 1 IN :ids OR :ids = 1")
        engine.prepare("SELECT 1 WHERE 1 IN :ids OR :ids IS NULL")  # the NULL test of a list: allowed
    finally:
        engine.close()


def test_missing_drivers_and_dialects_say_what_to_install():
    with pytest.raises(QueryError, match=r"needs the Python package MySQLdb: pip install mysqlclient"):
        SQLAlchemyEngine("w", URLConnection(url="mysql+mysqldb://u@h/db"))
    with pytest.raises(QueryError, match="no SQLAlchemy dialect for nosuchwarehouse is installed"):
        SQLAlchemyEngine("w", URLConnection(url="nosuchwarehouse://u@h/db"))


@pytest.mark.parametrize(
    "bare, driver", [("postgresql", "postgresql+psycopg"), ("mysql", "mysql+pymysql"), ("mariadb", "mariadb+pymysql")]
)
def test_a_url_without_driver_uses_the_one_the_extras_install(bare, driver):
    engine = SQLAlchemyEngine("w", URLConnection(url=f"{bare}://u@127.0.0.1:1/db"))
    try:
        assert engine._engine.url.drivername == driver
    finally:
        engine.close()


def test_a_null_list_matches_nothing(db):
    engine = db.engine()
    sql = f"SELECT count(*) FROM {db.table} WHERE country_code IN :codes"
    assert run(engine, sql, {"codes": None}, types={"codes": "string[]"}).rows == [(0,)]


def test_postgres_per_call_transactions_keep_the_drivers_prepared_statements(postgres_url):
    """BEGIN and ROLLBACK go around psycopg (which drops its prepared statements on a ROLLBACK
    it sees), so a repeated query is still prepared once and reused."""
    engine = SQLAlchemyEngine("pg", URLConnection(url=postgres_url, pool_size=1, max_overflow=0))
    try:
        query = engine.prepare("SELECT x FROM generate_series(1, 3) x WHERE x < :n", types={"n": "integer"})
        for _ in range(10):
            assert engine.run(query, {"n": 3}, 10, 5).rows == [(1,), (2,)]
        prepared = run(
            engine, "SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE '%generate_series(1, 3)%'"
        )
        assert prepared.rows == [(1,)]
    finally:
        engine.close()


def test_postgres_a_call_is_one_message_with_its_transaction(postgres_url):
    """A call's opening (BEGIN READ ONLY, its time limit), its query and its end (ROLLBACK, advisory
    locks released) go to the server in one write, whether the query is prepared yet or not; the
    server-side binding of values stays (the value here is never part of the SQL)."""
    url = make_url(postgres_url)
    proxy = Proxy(url.host or "127.0.0.1", url.port or 5432)
    proxy.start()
    through = url.set(host="127.0.0.1", port=proxy.port).render_as_string(hide_password=False)
    engine = SQLAlchemyEngine("pg", URLConnection(url=through, pool_size=1, max_overflow=0))
    query = engine.prepare("SELECT :s AS s, current_setting('statement_timeout') AS t", types={"s": "string"})
    try:
        for _ in range(2):  # the first call also asks what the role may do, its reset read by the next
            engine.run(query, {"s": "warm"}, 10, 5)
        for i in range(6):  # psycopg's rule prepares it from the sixth run on
            before = proxy.messages
            assert engine.run(query, {"s": f"x'; {i}"}, 10, 3).rows == [(f"x'; {i}", "3s")]
            assert proxy.messages - before == 1
    finally:
        engine.close()
        proxy.close()


def test_postgres_a_connection_keeps_one_transformer_and_a_new_connection_gets_its_own(postgres_url, monkeypatch):
    """The values and rows of a call in one message go through psycopg's adapters of one Transformer
    kept with the connection (not one a call), whatever the values' types from call to call; a
    connection the server ended is replaced, and the new one gets a Transformer of its own."""
    from psycopg.adapt import PyFormat, Transformer

    from mcpgen.engines.sqlalchemy import backends

    made = []  # the connections a Transformer was made for

    class Counted:
        @staticmethod
        def from_context(context):
            made.append(context)
            return Transformer.from_context(context)

    monkeypatch.setattr(backends, "_psycopg_adapt", lambda: (Counted, PyFormat.AUTO))
    app = services.unique_name("mcpgen_test")
    engine = SQLAlchemyEngine(
        "pg", URLConnection(url=postgres_url, pool_size=1, max_overflow=0, connect_args={"application_name": app})
    )
    query = engine.prepare("SELECT :v AS v, pg_backend_pid() AS pid")
    try:
        values = [7, "seven", 7.5, dt.date(2024, 7, 7), None, True] * 2
        answers = [engine.run(query, {"v": v}, 10, 5).rows[0] for v in values]
        assert [v for v, _ in answers] == values
        assert len({pid for _, pid in answers}) == 1 and len(made) == 1
        with services.connect("postgresql") as con:
            con.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s", [app])
        again = [engine.run(query, {"v": v}, 10, 5).rows[0] for v in values]
        assert [v for v, _ in again] == values and again[0][1] != answers[0][1]
        assert len(made) == 2 and made[1] is not made[0]
    finally:
        engine.close()


def test_postgres_prepared_statements_stay_within_the_drivers_bound(postgres_url):
    """Queries sent in one message are prepared by psycopg's rule (`prepare_threshold` runs; here 0:
    at once) and at most `prepared_max` stay on the server, the oldest deallocated first; a
    query that fails keeps the connection and its prepared statements."""
    import sqlalchemy as sa

    engine = SQLAlchemyEngine(
        "pg", URLConnection(url=postgres_url, pool_size=1, max_overflow=0, connect_args={"prepare_threshold": 0})
    )
    sa.event.listen(
        engine._engine, "connect", lambda dbapi_connection, record: setattr(dbapi_connection, "prepared_max", 2)
    )
    kept = (  # of the four queries below
        "SELECT count(*) FROM pg_prepared_statements "
        "WHERE statement LIKE '%AS mcpgen_bound_%' AND statement NOT LIKE '%pg_prepared_statements%'"
    )
    try:
        pid = run(engine, "SELECT pg_backend_pid()").rows[0][0]
        for n in range(1, 5):
            query = engine.prepare(f"SELECT 10 / :d AS mcpgen_bound_{n}", types={"d": "integer"})
            assert engine.run(query, {"d": 5}, 10, 5).rows == [(2,)]
        assert run(engine, kept).rows == [(1,)]  # the last one; the other one kept is this count's own
        with pytest.raises(QueryError, match="^the query failed: division by zero$"):
            engine.run(query, {"d": 0}, 10, 5)
        assert engine.run(query, {"d": 2}, 10, 5).rows == [(5,)]
        assert run(engine, kept).rows == [(1,)]
        assert run(engine, "SELECT pg_backend_pid()").rows[0][0] == pid
    finally:
        engine.close()


def test_postgres_prepares_nothing_when_the_driver_is_told_not_to(postgres_url):
    """psycopg's `prepare_threshold: null` (what a transaction-pooling PgBouncer asks for) keeps the
    call in one message with nothing prepared on the server, the statements around the query too."""
    engine = SQLAlchemyEngine(
        "pg", URLConnection(url=postgres_url, pool_size=1, max_overflow=0, connect_args={"prepare_threshold": None})
    )
    try:
        for _ in range(8):
            assert run(engine, "SELECT count(*) FROM pg_prepared_statements", timeout=3).rows == [(0,)]
        assert run(engine, "SELECT current_setting('statement_timeout')", timeout=3).rows == [("3s",)]
    finally:
        engine.close()


# -- NULL orders and indexes ------------------------------------------------------------------

# As a spec is written (DuckDB's dialect, where NULLs sort last) and as the project translates it.
RANKED = "SELECT id, population FROM {t} WHERE cc = :cc ORDER BY population DESC LIMIT :n"


@pytest.fixture
def ranked_table(postgres_url):
    """A table whose `population` is NOT NULL and `maybe` is not, indexed on (cc, population DESC)."""
    table = services.unique_name("mcpgen_ranked")
    with services.connect("postgresql") as con:
        con.execute(
            f"CREATE TABLE {table} (id int NOT NULL, cc text NOT NULL, population bigint NOT NULL, maybe bigint)"
        )
        con.execute(
            f"INSERT INTO {table} SELECT i, (i % 50)::text, (i * 7919) % 100003, "
            "CASE WHEN i % 7 = 0 THEN NULL ELSE i END FROM generate_series(1, 50000) i"
        )
        con.execute(f"CREATE INDEX {table}_rank ON {table} (cc, population DESC)")
        con.execute(f"CREATE INDEX {table}_maybe ON {table} (cc, maybe DESC)")
        con.execute(f"ANALYZE {table}")
    yield table
    services.drop_table("postgresql", table)


def _plan(sql: str, params: dict) -> str:
    """EXPLAIN of `sql` (with :name placeholders) on the test PostgreSQL, as text."""
    with services.connect("postgresql") as con:
        text = re.sub(r"(?<!:):(\w+)", r"%(\1)s", sql)
        return "\n".join(r[0] for r in con.execute("EXPLAIN " + text, params).fetchall())


def test_postgres_index_serves_a_not_null_order_and_the_rows_stay_the_same(postgres_url, ranked_table):
    """`population DESC` in DuckDB means NULLS LAST, which the translation spells out and a plain
    DESC index cannot give (a scan and a sort). The column is NOT NULL, so from its first call
    the engine runs the query without the spelling: an index scan, the same rows in the same order."""
    from mcpgen.sql.transpile import transpile

    sql = transpile(RANKED.format(t=ranked_table), "duckdb", "postgres")
    assert "NULLS LAST" in sql
    params = {"cc": "7", "n": 10}
    as_translated = _plan(sql, params)
    assert "Sort" in as_translated, as_translated
    engine = SQLAlchemyEngine("pg", URLConnection(url=postgres_url))
    try:
        prepared = engine.prepare(sql, {"cc": "string", "n": "integer"})
        first = engine.run(prepared, params, 100, 10)
        assert engine.run(prepared, params, 100, 10).rows == first.rows
        runnable = engine._runnable(prepared.sql, 10).source
        assert "NULLS" not in runnable.upper()
        plan = _plan(runnable, params)
        assert "Index Scan" in plan and "Sort" not in plan, plan
        direct = _direct_server("postgresql")(sql, params)  # the translated query, straight through the driver
        assert first.rows == direct and len(direct) == 10
        assert [r[1] for r in direct] == sorted((r[1] for r in direct), reverse=True)
    finally:
        engine.close()


def test_postgres_nullable_column_keeps_nulls_last(postgres_url, ranked_table):
    """`maybe` has NULLs: the spelling stays (a sort), and the NULL rows come last, as in DuckDB."""
    from mcpgen.sql.transpile import transpile

    sql = transpile(
        f"SELECT id, maybe FROM {ranked_table} WHERE cc = :cc ORDER BY maybe DESC, id LIMIT :n", "duckdb", "postgres"
    )
    engine = SQLAlchemyEngine("pg", URLConnection(url=postgres_url))
    try:
        prepared = engine.prepare(sql, {"cc": "string", "n": "integer"})
        rows = engine.run(prepared, {"cc": "7", "n": 5000}, 10000, 10).rows
        assert engine._runnable(prepared.sql, 10) is prepared.sql
        values = [r[1] for r in rows]
        first_null = values.index(None)
        assert first_null > 0 and all(v is None for v in values[first_null:])
        assert values[:first_null] == sorted(values[:first_null], reverse=True)
    finally:
        engine.close()


def test_postgres_order_through_a_left_join_or_a_view_keeps_its_spelling(postgres_url, ranked_table):
    """NOT NULL in the table is not NOT NULL in the result on the NULL-extended side of a LEFT JOIN,
    nor is anything known of a view's columns: the NULL order is kept, NULL rows last."""
    from mcpgen.sql.transpile import transpile

    view = f"{ranked_table}_v"
    with services.connect("postgresql") as con:
        con.execute(f"CREATE VIEW {view} AS SELECT * FROM {ranked_table}")
    engine = SQLAlchemyEngine("pg", URLConnection(url=postgres_url))
    try:
        joined = transpile(
            f"SELECT a.id, b.population FROM {ranked_table} AS a LEFT JOIN {ranked_table} b "
            f"ON b.id = a.id + 1 WHERE a.id IN (1, 50000) ORDER BY b.population DESC",
            "duckdb",
            "postgres",
        )
        through_view = transpile(f"SELECT id FROM {view} ORDER BY population DESC LIMIT 3", "duckdb", "postgres")
        for sql in (joined, through_view):
            prepared = engine.prepare(sql)
            engine.run(prepared, {}, 100, 10)
            assert engine._runnable(prepared.sql, 10) is prepared.sql, sql
        assert engine.run(engine.prepare(joined), {}, 100, 10).rows[-1] == (50000, None)
    finally:
        engine.close()
        with services.connect("postgresql") as con:
            con.execute(f"DROP VIEW IF EXISTS {view}")


def test_mariadb_not_null_order_drops_the_case_key(mariadb_url, mariadb_cities):
    """MariaDB sorts NULLs first ascending; the translation adds a CASE key that no index serves,
    which goes when the catalog says NOT NULL (the rows stay those of the translated query)."""
    from mcpgen.sql.transpile import transpile

    table = services.unique_name("mcpgen_asc")
    with services.connect("mariadb") as con:
        con.cursor().execute(f"CREATE TABLE {table} (id INT NOT NULL, name VARCHAR(40) NOT NULL, maybe INT)")
        con.cursor().execute(f"INSERT INTO {table} VALUES (1, 'b', NULL), (2, 'a', 3), (3, 'c', 1)")
    engine = SQLAlchemyEngine("mariadb", URLConnection(url=mariadb_url))
    try:
        sql = transpile(f"SELECT id FROM {table} ORDER BY name, maybe", "duckdb", "mysql")
        assert sql.count("CASE WHEN") == 2
        prepared = engine.prepare(sql)
        rows = engine.run(prepared, {}, 100, 10).rows
        runnable = engine._runnable(prepared.sql, 10).source
        assert runnable.count("CASE WHEN") == 1 and "maybe IS NULL" in runnable
        assert engine.run(prepared, {}, 100, 10).rows == rows == [(2,), (1,), (3,)]
        nullable_first = transpile(f"SELECT id FROM {table} ORDER BY maybe", "duckdb", "mysql")
        assert engine.run(engine.prepare(nullable_first), {}, 100, 10).rows == [(3,), (2,), (1,)]
    finally:
        engine.close()
        services.drop_table("mariadb", table)


# -- cancellation (a client's notifications/cancelled, through mcpgen.engines.control) ----------


@contextlib.contextmanager
def _through_a_proxy(url, name: str):
    """(proxy, engine): an engine of one connection, no overflow, reaching `url` through a Proxy that can hold
    the database's replies; both closed after."""
    proxy = Proxy(url.host or "127.0.0.1", url.port or (5432 if url.get_backend_name() == "postgresql" else 3306))
    proxy.start()
    through = url.set(host="127.0.0.1", port=proxy.port).render_as_string(hide_password=False)
    engine = SQLAlchemyEngine(name, URLConnection(url=through, pool_size=1, max_overflow=0))
    try:
        yield proxy, engine
    finally:
        engine.close()
        proxy.close()


def _cancel_after(seconds: float, fn):
    """Run `fn` under a CallControl in a thread and cancel it after `seconds`; (error, seconds taken)."""
    from mcpgen.engines.control import CURRENT, CallControl

    control, outcome = CallControl(), {}

    def work():
        CURRENT.set(control)
        try:
            outcome["result"] = fn()
        except Exception as exc:
            outcome["error"] = exc

    thread = threading.Thread(target=work)
    started = time.monotonic()
    thread.start()
    time.sleep(seconds)
    control.cancel()
    thread.join(10)
    assert not thread.is_alive()
    return outcome.get("error"), time.monotonic() - started


def test_postgres_cancel_stops_the_query_on_the_server(postgres_url):
    from mcpgen.errors import QueryCancelled

    marker = services.unique_name("mcpgen_cancel")
    engine = SQLAlchemyEngine("pg", URLConnection(url=postgres_url, pool_size=1, max_overflow=0))
    try:
        error, took = _cancel_after(0.4, lambda: run(engine, f"SELECT pg_sleep(20) /* {marker} */", timeout=30))
        assert isinstance(error, QueryCancelled) and str(error) == "the call was cancelled and its query stopped"
        assert took < 3
        with services.connect("postgresql") as con:
            active = con.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' "
                "AND query LIKE %s AND pid <> pg_backend_pid()",
                [f"%{marker}%"],
            ).fetchone()[0]
        assert active == 0
        assert run(engine, "SELECT 1 AS one").rows == [(1,)]  # the one pooled connection serves on
    finally:
        engine.close()


@pytest.mark.parametrize("driver", ["psycopg", "psycopg2"])
def test_postgres_cancel_while_the_transaction_opens_reads_as_a_cancel(postgres_url, driver, monkeypatch):
    """A cancel that comes while the call's BEGIN READ ONLY waits for its answer (a database gone
    silent, here a proxy that holds its replies) is a cancel, as at any other stage, not a failure to
    start a read-only transaction; the engine serves on once the database answers."""
    from mcpgen.errors import QueryCancelled

    url = make_url(postgres_url).set(drivername=f"postgresql+{driver}").update_query_dict({"connect_timeout": "2"})
    monkeypatch.setattr(engine_module, "ANSWER_GRACE", 0.5)
    with _through_a_proxy(url, "pg") as (proxy, engine):
        assert run(engine, "SELECT 1").rows == [(1,)]
        proxy.hold(b"BEGIN")
        described = lambda: engine.describe(engine.prepare("SELECT 2 AS two"), timeout=1)  # noqa: E731
        for call in (described, lambda: run(engine, "SELECT 2", timeout=1)):
            error, took = _cancel_after(0.2, call)
            assert isinstance(error, QueryCancelled), error
            assert str(error).startswith("the call was cancelled") and took < 5
        proxy.hold(b"")  # and while a new connection waits for the server to greet it
        engine.close()
        error, took = _cancel_after(0.2, lambda: run(engine, "SELECT 2", timeout=1))
        assert isinstance(error, QueryCancelled) and took < 5, error
        proxy.hold(None)
        assert run(engine, "SELECT 3").rows == [(3,)]


# The stages of a call's opening that wait for the database: its reply held from (the proxy's marker).
OPENING_STAGES = {"connecting": b"", "asking the role's rights": b"rolsuper", "opening its transaction": b"BEGIN"}


@pytest.mark.parametrize("driver", ["psycopg", "psycopg2"])
@pytest.mark.parametrize("stage", OPENING_STAGES)
def test_postgres_cancel_while_the_database_is_silent_cuts_the_opening_short(postgres_url, driver, stage):
    """A cancel while the call's opening waits on a silent database ends the call within a second or two
    (it waited out the call's time limit and its grace, or the connect timeout: 10 s here); the
    connection it waited on is not given to the next call, which succeeds once the database answers."""
    from mcpgen.errors import QueryCancelled

    url = make_url(postgres_url).set(drivername=f"postgresql+{driver}")
    with _through_a_proxy(url, "pg") as (proxy, engine):
        calls = {
            "described": lambda: engine.describe(engine.prepare("SELECT 2 AS two"), timeout=10),
            "run": lambda: run(engine, "SELECT 2", timeout=10),
        }
        for name, call in calls.items():
            if stage == "opening its transaction":
                assert run(engine, "SELECT 1").rows == [(1,)]
            proxy.hold(OPENING_STAGES[stage])
            error, took = _cancel_after(0.3, call)
            assert isinstance(error, QueryCancelled) and took < 2.5, (name, error, took)
            proxy.hold(None)
            assert run(engine, "SELECT 3").rows == [(3,)]
            # none left checked out but the one connection held idle for the next call
            assert engine._engine.pool.checkedout() == len(engine._hold._idle) == 1
            engine.close()  # the next call starts from no connection, and asks the role's rights again
            engine._role_known = False


def test_mariadb_cancel_while_a_connection_waits_for_its_greeting_ends_the_call(mariadb_url):
    """MariaDB's connect timeout (10 s) is not waited out either; the next call connects anew."""
    from mcpgen.errors import QueryCancelled

    with _through_a_proxy(make_url(mariadb_url), "maria") as (proxy, engine):
        proxy.hold(b"")
        error, took = _cancel_after(0.3, lambda: run(engine, "SELECT 2", timeout=10))
        assert isinstance(error, QueryCancelled) and took < 2.5, (error, took)
        proxy.hold(None)
        assert run(engine, "SELECT 3").rows == [(3,)]
        assert engine._engine.pool.checkedout() == 0


def test_sqlite_cancel_interrupts_the_query(tmp_path):
    from mcpgen.errors import QueryCancelled

    sqlite3.connect(tmp_path / "x.db").close()
    engine = SQLAlchemyEngine("lite", URLConnection(url=f"sqlite:///{tmp_path / 'x.db'}"))
    forever = "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) SELECT count(*) FROM r"
    try:
        error, took = _cancel_after(0.3, lambda: run(engine, forever, timeout=30))
        assert isinstance(error, QueryCancelled) and took < 2
        assert run(engine, "SELECT 1").rows == [(1,)]
    finally:
        engine.close()
