"""Hostile: a SELECT must not change the session (PostgreSQL and MariaDB, real servers).

Each call runs in a read-only transaction of its own, with its time limit set for that
transaction, ended by ROLLBACK and a reset of the session. The checks refuse the functions
that would outlive the call; here the SQL is also handed to the engine directly (as if it had
slipped past every check), on a pool of ONE connection, and the next call on that same
connection must find the session as mcpgen left it.
"""

from __future__ import annotations

import dataclasses
import textwrap
import time

import pytest
import services

from mcpgen.engines.protocol import Prepared
from mcpgen.engines.sqlalchemy.engine import SQLAlchemyEngine
from mcpgen.errors import QueryError, QueryTimeout, UnsafeSQL
from mcpgen.load.project import load_project
from mcpgen.spec.config import URLConnection


def one_connection(url: str) -> SQLAlchemyEngine:
    return SQLAlchemyEngine("db", URLConnection(url=url, pool_size=1, max_overflow=0))


def bypass(engine: SQLAlchemyEngine, sql: str) -> Prepared:
    """`sql` as prepare() would hand it on, without prepare()'s checks."""
    checked = engine.prepare("SELECT 1")
    return Prepared(dataclasses.replace(checked.sql, text=sql), frozenset())


def raw(engine, sql: str, timeout: float = 5):
    """Run `sql` past every check; a failure is fine (the database may refuse it), a success too."""
    try:
        return engine.run(bypass(engine, sql), {}, 100, timeout).rows
    except QueryError as exc:
        return exc


def value(engine, sql: str, timeout: float = 5):
    return engine.run(engine.prepare(sql), {}, 100, timeout).rows[0][0]


# -- PostgreSQL --------------------------------------------------------------------------------

PG_SETTINGS = [
    "SELECT set_config('default_transaction_read_only', 'off', false), set_config('statement_timeout', '0', false)",
    "SELECT pg_catalog.set_config('transaction_read_only', 'off', false), set_config('statement_timeout', '0', true)",
    "WITH x AS (SELECT set_config('statement_timeout', '0', false) AS s) SELECT s FROM x",
    "SET SESSION statement_timeout = 0",
    "SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE",
]


@pytest.mark.parametrize("sql", PG_SETTINGS)
def test_pg_settings_do_not_outlive_the_call(postgres_url, sql):
    engine = one_connection(postgres_url)
    name = services.unique_name("mcpgen_state")
    try:
        pid = value(engine, "SELECT pg_backend_pid()")
        raw(engine, sql)
        assert value(engine, "SELECT pg_backend_pid()") == pid  # the same pooled connection
        assert value(engine, "SELECT current_setting('transaction_read_only')") == "on"
        assert value(engine, "SELECT current_setting('statement_timeout')", timeout=7) == "7s"
        assert isinstance(raw(engine, f"CREATE TABLE {name} (x int)"), QueryError)
        started = time.monotonic()
        with pytest.raises(QueryTimeout):
            engine.run(engine.prepare("SELECT pg_sleep(5)"), {}, 10, 0.5)
        assert time.monotonic() - started < 2
        assert value(engine, "SELECT pg_backend_pid()") == pid
    finally:
        engine.close()
        with services.connect("postgresql") as con:
            assert con.execute("SELECT to_regclass(%s)", [name]).fetchone() == (None,)


PG_LOCKS = [
    "SELECT pg_advisory_lock({key})",
    "SELECT pg_try_advisory_lock({key})",
    "SELECT pg_advisory_lock_shared({key})",
    "SELECT pg_advisory_lock({key}), pg_sleep(5)",  # cut off by the timeout
]


@pytest.mark.parametrize("sql", PG_LOCKS)
def test_pg_advisory_locks_do_not_outlive_the_call(postgres_url, sql):
    engine = one_connection(postgres_url)
    key = int(time.time_ns() % 1_000_000_007)
    try:
        raw(engine, sql.format(key=key), timeout=0.5)
        # The release is sent before the call returns but not waited for (see `end`), so another
        # session may find the lock held for the moment the server takes to read it: a bounded wait.
        with services.connect("postgresql") as other:
            deadline = time.monotonic() + 5
            while other.execute("SELECT pg_try_advisory_lock(%s)", [key]).fetchone() != (True,):
                assert time.monotonic() < deadline, "the advisory lock outlived the call"
                time.sleep(0.01)
            other.execute("SELECT pg_advisory_unlock_all()")
        # The next call on the same pooled connection reads that answer first: the lock is gone there too.
        assert raw(engine, f"SELECT pg_try_advisory_lock({key})") == [(True,)]
    finally:
        engine.close()


PG_LARGE_OBJECTS = [
    "SELECT lo_from_bytea(0, 'kept?'::bytea) AS oid",
    "SELECT lo_create(0) AS oid",
    "SELECT lo_creat(-1) AS oid",
]


@pytest.mark.parametrize("sql", PG_LARGE_OBJECTS)
def test_pg_large_objects_are_not_committed(postgres_url, sql):
    engine = one_connection(postgres_url)
    try:
        oid = raw(engine, sql)
        assert not isinstance(oid, QueryError), oid  # PostgreSQL lets a read-only transaction create it...
        with services.connect("postgresql") as other:  # ...and the rollback takes it away
            found = other.execute("SELECT count(*) FROM pg_largeobject_metadata WHERE oid = %s", [oid[0][0]])
            assert found.fetchone() == (0,)
    finally:
        engine.close()


def test_pg_listen_does_not_outlive_the_call(postgres_url):
    engine = one_connection(postgres_url)
    channel = services.unique_name("mcpgen_chan")
    try:
        raw(engine, f"LISTEN {channel}")
        assert value(engine, "SELECT count(*) FROM pg_listening_channels()") == 0
    finally:
        engine.close()


PG_FAILING = [
    # a lock and a setting taken, then an error while the row is computed
    "SELECT pg_advisory_lock({key}), set_config('statement_timeout', '0', false), 1 / (pg_backend_pid() - pg_backend_pid())",
    # locks taken on the first rows, an error on a later one
    "SELECT pg_advisory_lock({key} + x) FROM generate_series(1, 3) x WHERE 1 / (3 - x) > 0",
    # refused before it runs
    "SELECT * FROM mcpgen_no_such_table_{key}",
]


@pytest.mark.parametrize("sql", PG_FAILING)
def test_pg_a_failed_query_leaves_the_connection_reset_and_usable(postgres_url, sql):
    """A query that fails (at run time, or before it runs) leaves the call's transaction aborted:
    the next call on the same connection finds it rolled back, its locks and settings gone."""
    engine = one_connection(postgres_url)
    key = int(time.time_ns() % 1_000_000_007)
    try:
        pid = value(engine, "SELECT pg_backend_pid()")
        for _ in range(2):  # the second time through the prepared statements
            assert isinstance(raw(engine, sql.format(key=key)), QueryError)
            assert value(engine, "SELECT pg_backend_pid()") == pid  # the same pooled connection
            assert value(engine, "SELECT current_setting('statement_timeout')", timeout=7) == "7s"
            assert value(engine, "SELECT current_setting('transaction_read_only')") == "on"
            held = "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()"
            assert value(engine, held) == 0
    finally:
        engine.close()


def test_pg_a_timed_out_call_leaves_no_open_transaction(postgres_url):
    engine = one_connection(postgres_url)
    try:
        pid = value(engine, "SELECT pg_backend_pid()")
        with pytest.raises(QueryTimeout):
            engine.run(engine.prepare("SELECT pg_sleep(5)"), {}, 10, 0.3)
        with services.connect("postgresql") as other:  # the rollback is answered after the call returns
            for _ in range(50):
                state = other.execute("SELECT state FROM pg_stat_activity WHERE pid = %s", [pid]).fetchone()
                if state == ("idle",):
                    break
                time.sleep(0.02)
            assert state == ("idle",)
        assert value(engine, "SELECT 41 + 1") == 42
    finally:
        engine.close()


# -- MariaDB -------------------------------------------------------------------------------------


def test_mariadb_get_lock_does_not_outlive_the_call(mariadb_url):
    engine = one_connection(mariadb_url)
    lock = services.unique_name("mcpgen_lock")
    try:
        for sql in (f"SELECT GET_LOCK('{lock}', 0)", f"SELECT GET_LOCK('{lock}', 0), SLEEP(5)"):
            raw(engine, sql, timeout=0.5)
            with services.connect("mariadb") as other:
                cur = other.cursor()
                cur.execute("SELECT IS_FREE_LOCK(%s)", [lock])
                assert cur.fetchone() == (1,), sql
    finally:
        engine.close()


MARIADB_VARIABLES = [
    "SELECT @mcpgen_x := 42",
    "SELECT 1 INTO @mcpgen_x",
    "SET @mcpgen_x = 42",
    "SELECT id FROM (SELECT 1 AS id) t WHERE (@mcpgen_x := 42) > 0",
]


@pytest.mark.parametrize("sql", MARIADB_VARIABLES)
def test_mariadb_user_variables_do_not_outlive_the_call(mariadb_url, sql):
    engine = one_connection(mariadb_url)
    try:
        connection_id = value(engine, "SELECT CONNECTION_ID()")
        raw(engine, sql)
        assert value(engine, "SELECT CONNECTION_ID()") == connection_id
        assert value(engine, "SELECT @mcpgen_x") is None
    finally:
        engine.close()


MARIADB_SETTINGS = [
    "SET SESSION TRANSACTION READ WRITE",
    "SET SESSION max_statement_time = 0",
    "SET @@session.sql_select_limit = DEFAULT",
]


@pytest.mark.parametrize("sql", MARIADB_SETTINGS)
def test_mariadb_settings_do_not_outlive_the_call(mariadb_url, sql):
    engine = one_connection(mariadb_url)
    name = services.unique_name("mcpgen_state")
    try:
        raw(engine, sql)
        assert value(engine, "SELECT @@session.tx_read_only") == 1
        assert isinstance(raw(engine, f"CREATE TABLE {name} (x int)"), QueryError)
        started = time.monotonic()
        with pytest.raises(QueryTimeout):
            engine.run(engine.prepare("SELECT SLEEP(5)"), {}, 10, 0.5)
        assert time.monotonic() - started < 2
    finally:
        engine.close()
        with services.connect("mariadb") as con:
            cur = con.cursor()
            cur.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = %s", [name])
            assert cur.fetchone() == (0,)


# -- The checks (validate, serve's loading, and the engine's prepare) --------------------------

REFUSED = {
    "postgresql": [
        "SELECT set_config('default_transaction_read_only', 'off', false)",
        "SELECT pg_catalog.set_config('statement_timeout', '0', false)",
        "SELECT \"set_config\"('search_path', 'x', false)",
        "SELECT lo_import('/etc/passwd')",
        "SELECT lo_from_bytea(0, 'x')",
        "SELECT lo_unlink(1)",
        "SELECT pg_advisory_lock(1)",
        "SELECT pg_try_advisory_xact_lock(1)",
        "SELECT pg_read_file('/etc/passwd')",
        "SELECT pg_read_binary_file('postgresql.conf')",
        "SELECT * FROM pg_ls_dir('.')",
        "SELECT nextval('s')",
        "SELECT setval('s', 1)",
        "SELECT * FROM dblink('dbname=x', 'SELECT 1') AS t(a int)",
        "SELECT query_to_xml('SELECT set_config(''a'', ''b'', false)', true, true, '')",
        "SELECT x FROM (SELECT pg_terminate_backend(1) AS x) t",
        "SET statement_timeout = 0",
    ],
    "mariadb": [
        "SELECT id FROM t /*! INTO OUTFILE '/tmp/x' */",
        "SELECT id FROM t /*!50000 INTO OUTFILE '/tmp/x' */",
        "SELECT /*M!100000 SLEEP(1), */ id FROM t",
        "SELECT /*+ MAX_EXECUTION_TIME(0) */ id FROM t",
        "SELECT GET_LOCK('x', 10)",
        "SELECT RELEASE_LOCK('x')",
        "SELECT LOAD_FILE('/etc/passwd')",
        "SELECT @x := 1",
        "SELECT id FROM t WHERE (@x := id) > 0",
        "SELECT NEXT VALUE FOR s",
        "SELECT NEXTVAL(s)",
        "SELECT LAST_INSERT_ID(5)",
    ],
}
ALLOWED = {
    "postgresql": ["SELECT make_interval(days := 1) AS i", "SELECT 'set_config(' AS s", "SELECT pg_sleep(0) AS s"],
    "mariadb": ["SELECT '/*' AS s", "SELECT SLEEP(0) AS s", "SELECT @@version AS v"],
}


def _project(tmp_path, service: str, sql: str, dialect: str | None = None):
    """A project whose specs are written in the database's own SQL (or in `dialect`)."""
    url = {"postgresql": "postgresql+psycopg://u@h/db", "mariadb": "mariadb+pymysql://u@h/db"}[service]
    dialect = dialect or {"postgresql": "postgres", "mariadb": "mysql"}[service]
    (tmp_path / "mcpgen.yaml").write_text(f"dialect: {dialect}\nconnections:\n  default:\n    url: {url}\n")
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "tool.yaml").write_text(
        textwrap.dedent(
            """\
            description: A tool.
            sql: |
              {sql}
            sources: [https://example.org/]
            content: x
            """
        ).format(sql=sql)
    )
    return load_project(specs)


@pytest.mark.parametrize("service,sql", [(s, q) for s, qs in REFUSED.items() for q in qs])
def test_validate_refuses_what_outlives_the_call(tmp_path, service, sql):
    loaded = _project(tmp_path, service, sql)
    assert loaded.errors, f"{sql} passed the checks"
    assert all(p.path.endswith("tool.yaml") and p.line for p in loaded.errors)
    assert "Traceback" not in str(loaded.errors[0])


@pytest.mark.parametrize(
    "service,sql",
    [
        ("mariadb", "SELECT id FROM t /*! INTO OUTFILE '/tmp/x' */"),
        ("mariadb", "SELECT id FROM t /*M!100000 INTO OUTFILE '/tmp/x' */"),
        ("mariadb", "SELECT GET_LOCK('x', 10) AS l"),
        ("postgresql", "SELECT set_config('statement_timeout', '0', false) AS s"),
    ],
)
def test_validate_checks_the_sql_the_database_runs_after_translation(tmp_path, service, sql):
    """Written in DuckDB's SQL (the default) and translated for the database: refused, or
    translated into something harmless (a comment the server does not execute)."""
    loaded = _project(tmp_path, service, sql, dialect="duckdb")
    assert loaded.errors or all("/*!" not in s.sql and "/*M!" not in s.sql for s in loaded.specs)
    if "/*" not in sql:
        assert loaded.errors, f"{sql} passed the checks"


@pytest.mark.parametrize("service,sql", [(s, q) for s, qs in ALLOWED.items() for q in qs])
def test_validate_allows_harmless_lookalikes(tmp_path, service, sql):
    assert not _project(tmp_path, service, sql).errors


@pytest.mark.parametrize("sql", REFUSED["mariadb"][:4])
def test_mariadb_engine_refuses_executed_comments_itself(mariadb_url, sql):
    engine = one_connection(mariadb_url)
    try:
        with pytest.raises(UnsafeSQL, match="comments"):
            engine.prepare(sql)
    finally:
        engine.close()


def test_validate_command_fails_on_set_config(tmp_path):
    from click.testing import CliRunner

    from mcpgen.cli import main

    _project(tmp_path, "postgresql", "SELECT set_config('statement_timeout', '0', false) AS s")
    result = CliRunner().invoke(main, ["validate", str(tmp_path / "specs")])
    assert result.exit_code == 1 and "specs/tool.yaml" in result.output and "3:10" in result.output
