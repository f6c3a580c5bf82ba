"""What differs between the databases SQLAlchemy reaches: one small class per backend, chosen once.

A backend says how a connection is made read-only, how one call is bounded in time and rows,
how a result is described without running it, and which database error means "timed out".

* PostgreSQL: on a session made read-only at connect (`default_transaction_read_only`),
  with the session `statement_timeout`, one statement `SELECT * FROM (<sql>) LIMIT max_rows + 1`.
* MariaDB/MySQL: `START TRANSACTION READ ONLY` on a read-only session, the query under
  `max_statement_time` (MySQL: `max_execution_time`) and `sql_select_limit`, unbuffered cursor.
* SQLite: a `mode=ro` file with `query_only`, no ATTACH, a progress handler as the timer.
* Any other dialect (`Backend` itself): a streaming cursor; read-only and time limits are the role's business.

Adding a backend is one subclass of `Backend` here, named in `BACKENDS`.

>>> backend_for("mariadb").name, type(backend_for("trino")).__name__
('mariadb', 'Backend')
"""

from __future__ import annotations

import datetime as dt
import os
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import sqlalchemy as sa
from sqlalchemy.pool import StaticPool

from .statements import Statement, empty_lists_as_arrays

# clause(values, prefix, suffix): the statement's text() clause for these values, wrapped.
Clause = Callable[..., Any]

_PG_TIMEOUT_STATE = "57014"  # query_canceled: statement_timeout
_MYSQL_TIMEOUT_CODES = {1969, 3024}  # MariaDB max_statement_time, MySQL max_execution_time


class Backend:
    """Any dialect without its own class: a streaming cursor, and no read-only or time-limit
    statement (there is none that is portable); the database role is the boundary (see docs/databases.md)."""

    def __init__(self, name: str):
        self.name = name

    def configure(self, url, options: dict[str, Any], connect_args: dict[str, Any]):
        """Adjust `create_engine`'s options and connect_args in place; return the URL to use."""
        return url

    def on_connect(self, dbapi_connection, record) -> None:
        """Runs on every new connection, before anything else does."""

    def fetch(self, conn, clause: Clause, values: dict, fetch: int, timeout: float) -> tuple[list[str], list[tuple]]:
        """Columns and at most `fetch` rows of the statement, within `timeout` seconds."""
        return _stream(conn, clause(values, ""), values, fetch)

    def describe(self, conn, clause: Clause, values: dict, timeout: float) -> list[tuple[str, str]]:
        """(column, type name) of the statement with LIMIT 0."""
        described = _described(conn, clause(values, "SELECT * FROM (\n", "\n) AS q LIMIT 0"), values)
        return [(c, "unknown" if t is None else str(t)) for c, t in described]

    def is_timeout(self, orig: BaseException, deadline: float) -> bool:
        """Whether the driver's error means the call ran out of time."""
        return False

    def bind_type(self, type_key: str) -> str:
        """The type a value of `type_key` binds as here."""
        return type_key

    def text(self, statement: Statement, signature: tuple, values: dict) -> tuple[str, tuple]:
        """The statement's SQL for these values' types, and the bind signature that goes with it."""
        return statement.text, signature


class PostgreSQL(Backend):
    def configure(self, url, options, connect_args):
        # Every statement is its own transaction, read-only by the session default set on connect.
        options["isolation_level"] = "AUTOCOMMIT"
        if url.get_driver_name() in ("psycopg", "psycopg2") and "connect_timeout" not in url.query:
            connect_args.setdefault("connect_timeout", 10)
        return url

    def on_connect(self, dbapi_connection, record) -> None:
        """Make every transaction of this session read-only, before anything else runs on it."""
        _session_statement(dbapi_connection, "SET SESSION default_transaction_read_only = on")

    def fetch(self, conn, clause, values, fetch, timeout):
        # The statement runs as its own transaction; the server stops after max_rows + 1 rows.
        _pg_timeout(conn, timeout)
        result = conn.execute(clause(values, "SELECT * FROM (\n", f"\n) AS mcpgen_q LIMIT {fetch}"), values)
        return list(result.keys()), [tuple(r) for r in result.fetchall()]

    def describe(self, conn, clause, values, timeout):
        _pg_timeout(conn, timeout)
        described = _described(conn, clause(values, "SELECT * FROM (\n", "\n) AS q LIMIT 0"), values)
        oids = sorted({t for _, t in described if isinstance(t, int)})
        names = {}
        if oids:
            query = sa.text("SELECT oid::int, format_type(oid, NULL) FROM pg_type WHERE oid IN :oids")
            query = query.bindparams(sa.bindparam("oids", expanding=True, type_=sa.Integer))
            names = dict(conn.execute(query, {"oids": oids}).all())
        return [(c, names.get(t, str(t))) for c, t in described]

    def is_timeout(self, orig, deadline):
        return getattr(orig, "sqlstate", None) == _PG_TIMEOUT_STATE and "timeout" in str(orig)

    def text(self, statement, signature, values):
        # An empty list of unknown item type: PostgreSQL cannot type SQLAlchemy's empty set
        # for every column, but `= ANY('{}')` takes the column's type. Declared types avoid this.
        empty = {n for n, t in signature if t == "null" and n in statement.lists and not values[n]}
        if not empty:
            return statement.text, signature
        text = empty_lists_as_arrays(statement, empty)
        return text, tuple((n, t) for n, t in signature if n not in empty or f":{n}" in text)


class MySQL(Backend):
    """MariaDB and MySQL."""

    def configure(self, url, options, connect_args):
        connect_args.setdefault("connect_timeout", 10)
        return url

    def on_connect(self, dbapi_connection, record) -> None:
        _session_statement(dbapi_connection, "SET SESSION TRANSACTION READ ONLY")

    def fetch(self, conn, clause, values, fetch, timeout):
        return _stream(conn, clause(values, _mysql_limits(conn, timeout, fetch)), values, fetch)

    def describe(self, conn, clause, values, timeout):
        prefix = _mysql_limits(conn, timeout, 0)
        return [(c, _mysql_type(t)) for c, t in _described(conn, clause(values, prefix), values)]

    def is_timeout(self, orig, deadline):
        return _mysql_code(orig) in _MYSQL_TIMEOUT_CODES


class SQLite(Backend):
    def configure(self, url, options, connect_args):
        url = _sqlite_read_only(url)
        connect_args.setdefault("check_same_thread", False)
        if url.database in (None, "", ":memory:"):
            options["poolclass"] = StaticPool  # one in-memory database, shared
            for key in ("pool_size", "max_overflow", "pool_timeout"):
                options.pop(key)
        return url

    def on_connect(self, dbapi_connection, record) -> None:
        """query_only on top of mode=ro, and no ATTACH at all: an ATTACH creates its file even then."""
        import sqlite3

        dbapi_connection.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA query_only = ON")
        cursor.close()

    def fetch(self, conn, clause, values, fetch, timeout):
        raw = conn.connection.dbapi_connection
        deadline = time.monotonic() + timeout
        raw.set_progress_handler(lambda: time.monotonic() > deadline, 1000)
        try:
            values = _sqlite_values(values)
            return _stream(conn, clause(values, ""), values, fetch)
        finally:
            raw.set_progress_handler(None, 0)

    def describe(self, conn, clause, values, timeout):
        return super().describe(conn, clause, _sqlite_values(values), timeout)

    def is_timeout(self, orig, deadline):
        return "interrupted" in str(orig) and time.monotonic() >= deadline

    def bind_type(self, type_key):
        return "string" if type_key in ("date", "datetime", "datetimetz") else type_key  # see _sqlite_values


BACKENDS: dict[str, type[Backend]] = {"postgresql": PostgreSQL, "mysql": MySQL, "mariadb": MySQL, "sqlite": SQLite}


def backend_for(name: str) -> Backend:
    """The backend for SQLAlchemy's backend name of a URL (`postgresql`, `mariadb`, ...)."""
    return BACKENDS.get(name, Backend)(name)


# -- helpers --------------------------------------------------------------------------------


def _stream(conn, clause, values, fetch) -> tuple[list[str], list[tuple]]:
    result = conn.execution_options(stream_results=True, max_row_buffer=fetch).execute(clause, values)
    try:
        return list(result.keys()), [tuple(r) for r in result.fetchmany(fetch)]
    finally:
        result.close()


def _described(conn, clause, values) -> list[tuple[str, Any]]:
    result = conn.execute(clause, values)
    try:
        return [(d[0], d[1]) for d in result.cursor.description or ()]
    finally:
        result.close()


def _ms(seconds: float) -> int:
    return max(1, round(seconds * 1000))


def _pg_timeout(conn, timeout: float) -> None:
    """Set the session's statement_timeout, only when it differs from the last call's. Inside a
    transaction (row-level security, see mcpgen.rls) it is set for that transaction alone:
    its ROLLBACK would undo a session SET that this cache still counted as done."""
    info = conn.connection.info
    ms = _ms(timeout)
    if getattr(getattr(conn.connection.dbapi_connection, "info", None), "transaction_status", 0):
        conn.exec_driver_sql(f"SET LOCAL statement_timeout = {ms}")
        return
    if info.get("mcpgen_statement_timeout") != ms:
        info.pop("mcpgen_statement_timeout", None)
        conn.exec_driver_sql(f"SET statement_timeout = {ms}")
        info["mcpgen_statement_timeout"] = ms


def _mysql_limits(conn, timeout: float, rows: int) -> str:
    """Bound the next statement's time and rows and start a read-only transaction. MariaDB takes
    the limits as a `SET STATEMENT ... FOR` prefix (returned); MySQL as session settings."""
    if conn.dialect.is_mariadb:
        prefix = f"SET STATEMENT max_statement_time={_seconds(timeout)}, sql_select_limit={rows} FOR\n"
    else:
        prefix = ""
        conn.exec_driver_sql(f"SET SESSION max_execution_time = {_ms(timeout)}, sql_select_limit = {rows}")
    conn.exec_driver_sql("START TRANSACTION READ ONLY")
    return prefix


def _seconds(seconds: float) -> str:
    """MariaDB's max_statement_time: seconds, at least 1 ms (0 would mean no limit)."""
    return f"{max(seconds, 0.001):.3f}"


def _mysql_code(orig) -> int | None:
    args = getattr(orig, "args", ())
    return args[0] if args and isinstance(args[0], int) else None


def _mysql_type(code) -> str:
    try:
        from pymysql.constants import FIELD_TYPE
    except ImportError:
        return str(code)
    names = {v: k for k, v in vars(FIELD_TYPE).items() if k.isupper() and isinstance(v, int)}
    return names.get(code, str(code)).lower()


def _session_statement(dbapi_connection, sql: str) -> None:
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute(sql)
    finally:
        cursor.close()
    dbapi_connection.commit()  # leave no transaction open (a no-op in autocommit mode)


def _sqlite_values(values: dict) -> dict:
    """SQLite keeps dates as ISO text: bind them the way Python's sqlite3 writes them."""

    def one(v):
        if isinstance(v, dt.datetime):
            return v.isoformat(" ")
        if isinstance(v, dt.date):
            return v.isoformat()
        return v

    return {k: ([one(x) for x in v] if isinstance(v, (list, tuple)) else one(v)) for k, v in values.items()}


def _sqlite_read_only(url):
    """`sqlite:///path` opened through a `file:` URI with `mode=ro`."""
    database = url.database
    if database in (None, "", ":memory:"):
        return url
    query = dict(url.query)
    if database.startswith("file:"):
        query["mode"] = "ro"
        query["uri"] = "true"
        return url.set(query=query)
    # A relative path is fixed now, against the working directory (the project folder under the CLI).
    path = os.path.abspath(database)
    return url.set(database="file:" + quote(path, safe="/:\\"), query={**query, "mode": "ro", "uri": "true"})
