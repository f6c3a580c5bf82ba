"""What differs between the databases SQLAlchemy reaches: one small class per backend, chosen once.

A backend says how a connection is made read-only, how one call is bounded in time and rows,
how a result is described without running it, and which database error means "timed out".
Every call runs in a transaction of its own: `begin` opens it (read-only, with this call's
time limit), `end` rolls it back and resets the session, so that nothing one call does to the
session (a setting, a lock, a variable) reaches the next call on the same pooled connection.

* PostgreSQL: `BEGIN READ ONLY` and the time limit for that transaction only, one statement
  `SELECT * FROM (<sql>) LIMIT max_rows + 1` (bound server-side, prepared when repeated), then
  `ROLLBACK` and advisory locks released: with psycopg 3 all in one message, one write and its
  answer (libpq's pipeline mode, `_pg_pipelined`). Where a call's statements go through SQLAlchemy
  (describing, row-level security's settings) or its query failed, or with psycopg2, the opening
  is answered before they run and the reset goes in one more message, whose answer is read before
  the connection's next use (see `PostgreSQL.end`).
* MariaDB/MySQL: `START TRANSACTION READ ONLY` on a read-only session, the query under
  `max_statement_time` (MySQL: `max_execution_time`) and `sql_select_limit`, unbuffered
  cursor; then ROLLBACK and COM_RESET_CONNECTION (user variables, GET_LOCK locks, settings).
  TLS as the URL or `connect_args` asks (`MySQL.configure`), else where the server offers it.
* SQLite: a `mode=ro` file with `query_only`, no ATTACH, a progress handler as the timer.
* Any other dialect (`Backend` itself): a streaming cursor; read-only and time limits are the role's business.

Every wait for a reply is bounded. The database's own limit answers first; a reply that never
comes (a peer gone silent) ends the call when the engine's `Cutoff` shuts the socket down
(`socket_of` names it). The statements mcpgen sends around the driver (`_pg_exec`, a call in
one message, the reset read by `_pg_checkout`) wait with `select` and a deadline: libpq's
blocking PQgetResult, called through psycopg's binary build, waits in poll() with Python's GIL
held, which would stop every other thread of the process (the event loop, the deadline thread)
for as long as it waits.

Adding a backend is one subclass of `Backend` here, named in `BACKENDS`.

>>> backend_for("mariadb").name, type(backend_for("trino")).__name__
('mariadb', 'Backend')
"""

from __future__ import annotations

import datetime as dt
import functools
import itertools
import os
import re
import select
import socket
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any, cast
from urllib.parse import quote

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc
from sqlalchemy.pool import StaticPool

from ...errors import SettingError
from ...sql.places import Near
from ..control import attached
from ..deadlines import kept_duplicate, release_duplicate
from .statements import Statement, empty_lists_as_arrays

# clause(values, prefix, suffix): the statement's text() clause for these values, wrapped.
Clause = Callable[..., Any]

_PG_TIMEOUT_STATE = "57014"  # query_canceled: statement_timeout
_MYSQL_TIMEOUT_CODES = {1969, 3024}  # MariaDB max_statement_time, MySQL max_execution_time
_MYSQL_SYNTAX, _MYSQL_UNKNOWN_COLUMN = 1064, 1054
_MARIADB_LIMITS = "SET STATEMENT"  # starts the line before the spec's statement on MariaDB (`_mysql_limits`)
_PYFORMAT = re.compile(r"%\((\w+)\)s|%%")  # SQLAlchemy's bound values for psycopg, and its escaped %
_COM_RESET_CONNECTION = 0x1F
# How long a pooled connection's reset (the last call's ROLLBACK) may take to be answered before
# the connection is dropped for a new one; it is normally answered long before the next checkout.
PG_RESET_WAIT = 3.0


class Backend:
    """Any dialect without its own class: a streaming cursor, and no read-only or time-limit
    statement (there is none that is portable); the database role is the boundary (see docs/databases.md)."""

    # Whether the engine holds idle connections between calls (`hold`): then `configure` turns the
    # pool's pre-ping off (its checkout listeners look at each connection) and its wait (the hold waits).
    HOLDS = False

    def __init__(self, name: str):
        self.name = name

    def configure(self, url, options: dict[str, Any], connect_args: dict[str, Any]):
        """Adjust `create_engine`'s options and connect_args in place; return the URL to use."""
        return url

    def on_connect(self, dbapi_connection, record) -> None:
        """Runs on every new connection, before anything else does."""

    def listen(self, engine) -> None:
        """Register the engine events this backend needs."""

    def begin(self, conn, timeout: float) -> None:
        """Open this call's own transaction."""

    def end(self, conn) -> None:
        """End this call's transaction with a rollback and reset what else the session kept."""
        conn.rollback()

    def fetch(self, conn, clause: Clause, values: dict, fetch: int, timeout: float) -> tuple[list[str], list[tuple]]:
        """Columns and at most `fetch` rows of the statement, within `timeout` seconds."""
        return _stream(conn, clause(values, ""), values, fetch)

    def describe(self, conn, clause: Clause, values: dict, timeout: float) -> list[tuple[str, str]]:
        """(column, type name) of the statement with LIMIT 0."""
        described = _described(conn, clause(values, "SELECT * FROM (\n", "\n) AS q LIMIT 0"), values)
        return [(c, "unknown" if t is None else str(t)) for c, t in described]

    def not_null(self, conn, clause: Clause, values: dict) -> frozenset[str]:
        """The result columns that come straight from a table column declared NOT NULL (none known here)."""
        return frozenset()

    # The statement reading the catalogue (see `catalogue`; None: not read here), and its types as DuckDB
    # names them (others: VARCHAR).
    CATALOGUE: str | None = None
    CATALOGUE_TYPES: dict[str, str] = {}

    def columns(self, conn) -> dict[str, dict[str, str]]:
        """Each table's (and view's) columns and their types, as DuckDB names them, from the catalogue: the
        translation reads which names are columns (a select alias of the same name is read otherwise) and,
        on MariaDB/MySQL, which columns are DATEs (date arithmetic). Keyed `schema.table` for every schema
        the role sees, and `table` for the one an unqualified name finds (the first on the search path)."""
        tables: dict[str, dict[str, str]] = {}
        found: dict[str, tuple[int, str]] = {}  # table -> (its schema's place on the path, `schema.table`)
        sql, values = self.catalogue(conn)
        rows = conn.exec_driver_sql(sql, values).fetchall() if sql else ()
        for schema, table, column, kind, place in rows:
            key = f"{schema}.{table}".lower()
            tables.setdefault(key, {})[column.lower()] = self.CATALOGUE_TYPES.get(kind.lower(), "VARCHAR")
            if place is not None and place < found.get(table.lower(), (place + 1,))[0]:
                found[table.lower()] = (place, key)
        return {**tables, **{table: tables[key] for table, (_, key) in found.items()}}

    def catalogue(self, conn) -> tuple[str, tuple]:
        """The statement (and its values) whose rows are the catalogue's (schema, table, column, type, the
        schema's place in the order an unqualified name is looked for, NULL where it is not looked for)."""
        return self.CATALOGUE or "", ()

    def is_timeout(self, orig: BaseException, deadline: float) -> bool:
        """Whether the driver's error means the call ran out of time."""
        return False

    def near(self, orig: BaseException, statement: str) -> Near | None:
        """What the driver's error points at in the spec's statement, `statement` as SQLAlchemy handed it
        to the driver (None: the error does not say)."""
        return None

    def socket_of(self, dbapi_connection) -> int | socket.socket | None:
        """The file number of the connection's socket, or a duplicate of it kept with the connection,
        for the call's `Cutoff` (None: not known)."""
        fileno = getattr(dbapi_connection, "fileno", None)
        try:
            return fileno() if callable(fileno) else None
        except Exception:  # a closed connection
            return None

    def bind_type(self, type_key: str) -> str:
        """The type a value of `type_key` binds as here."""
        return type_key

    def text(self, statement: Statement, signature: tuple, values: dict) -> tuple[str, tuple]:
        """The statement's SQL for these values' types, and the bind signature that goes with it."""
        return statement.text, signature


class NotOpened(Exception):
    """The call's transaction could not be opened: nothing of the call ran."""


class PostgreSQL(Backend):
    # pg_catalog, not information_schema.columns, which leaves out materialized views
    CATALOGUE = (
        "SELECT n.nspname, c.relname, a.attname, format_type(a.atttypid, NULL), "
        "array_position(current_schemas(false), n.nspname) "
        "FROM pg_catalog.pg_attribute AS a JOIN pg_catalog.pg_class AS c ON c.oid = a.attrelid "
        "JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace "
        "WHERE c.relkind IN ('r', 'v', 'm', 'f', 'p') AND a.attnum > 0 AND NOT a.attisdropped "
        "AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname !~ '^pg_(toast|temp)' "
        "AND has_any_column_privilege(c.oid, 'SELECT')"
    )
    CATALOGUE_TYPES = {
        "date": "DATE",
        **dict.fromkeys(("smallint", "integer", "bigint"), "BIGINT"),
        "numeric": "DECIMAL",
        **dict.fromkeys(("real", "double precision"), "DOUBLE"),
        **dict.fromkeys(("timestamp without time zone", "timestamp with time zone"), "TIMESTAMP"),
    }
    HOLDS = True

    def __init__(self, name: str):
        super().__init__(name)
        self._compiled: dict[Any, Any] = {}  # a text() clause -> its compiled form (see `_on_driver`)
        self._numbered: dict[Any, Any] = {}  # the same, with $1 placeholders (`_pg_pipelined`)
        self._dollar: Any = None  # the engine's dialect writing $1 placeholders

    def configure(self, url, options, connect_args):
        # The driver sends no BEGIN of its own: each call's transaction is the one `begin` opens.
        options["isolation_level"] = "AUTOCOMMIT"
        # `_pg_checkout` finds a connection the server closed without a ping's round trip, and
        # `end` does what the pool's reset would (see `listen`).
        options["pool_pre_ping"] = False
        options["pool_reset_on_return"] = None
        options["pool_timeout"] = 0  # the engine's `Hold` waits for a connection given back instead (HOLDS)
        if url.get_driver_name() in ("psycopg", "psycopg2"):
            for key, value in _PG_SOCKET_DEFAULTS.items():
                if key not in url.query:
                    connect_args.setdefault(key, value)
        return url

    def on_connect(self, dbapi_connection, record) -> None:
        """Make every transaction of this session read-only, before anything else runs on it."""
        _session_statement(dbapi_connection, "SET SESSION default_transaction_read_only = on")

    def listen(self, engine) -> None:
        sa.event.listen(engine, "checkout", _pg_checkout)
        sa.event.listen(engine, "before_cursor_execute", _pg_open)  # an opening `begin` deferred
        for closing in ("close", "close_detached"):  # the socket's duplicate kept for `Cutoff` goes with it
            sa.event.listen(engine, closing, _pg_release)
        # `end` has already rolled back (or is rolling back, see `end`): SQLAlchemy's own
        # driver-level rollback on release would only get in its way.
        engine.dialect.do_rollback = lambda dbapi_connection: None

    def begin(self, conn, timeout):
        """One read-only transaction per call, its time limit set for that transaction only.

        Settings that must hold for one call only belong here, in the same transaction:
        `SET LOCAL` or `set_config(name, value, true)`; the rollback in `end` undoes them.

        With psycopg 3 the opening waits to go out with the call's first statement: `fetch` sends
        both in one message, any statement through SQLAlchemy sends it first (`_pg_open`). A failed
        opening raises NotOpened."""
        connection = conn.connection  # the pool's proxy: its info and the driver's connection
        connection.info[_OPENING] = str(_ms(timeout)), timeout
        if not _pipelines(connection.dbapi_connection):
            _pg_open(conn)

    def end(self, conn):
        """ROLLBACK undoes settings (`set_config(..., false)` included) and large objects; session
        advisory locks and LISTEN outlive it, so they go too. This is DISCARD ALL without DEALLOCATE
        ALL (the driver's own prepared statements stay) and without its round trip of its own:
        DISCARD ALL cannot share a message. Spec SQL cannot PREPARE, create temp tables or advance
        sequences (read-only transaction), which DISCARD ALL would also clear; a LISTEN takes
        effect only at commit.

        With psycopg the message is sent without waiting for its answer, which `_pg_checkout`
        reads before the connection's next use: the call returns one round trip sooner. A call
        that `fetch` ran in one message ended there (`_pg_pipelined`), unless its query failed."""
        info = conn.info
        if info.pop(_OPENING, None) is not None or info.pop(_ENDED, False):
            return  # nothing of the call reached the session, or the session is reset already
        raw = conn.connection.dbapi_connection
        pgconn = getattr(raw, "pgconn", None)
        if pgconn is None:
            _pg_exec(conn, _PG_END, PG_RESET_WAIT)
        else:
            _pg_send(pgconn, _PG_END, time.monotonic() + PG_RESET_WAIT)  # an OSError drops the connection
            _PG_PENDING.add(raw)

    def fetch(self, conn, clause, values, fetch, timeout):
        # The server stops after max_rows + 1 rows. A cancelled call sends PostgreSQL's cancel request.
        # The SQL and values are SQLAlchemy's (see `_on_driver`), run on the driver's cursor, or with
        # psycopg 3 sent with the call's opening and end in one message (`_pg_pipelined`).
        raw = conn.connection.dbapi_connection
        wrapped = clause(values, "SELECT * FROM (\n", f"\n) AS mcpgen_q LIMIT {fetch}")
        opening = conn.info.pop(_OPENING, None)
        if opening is not None:
            if self._dollar is None:
                self._dollar = type(conn.dialect)(paramstyle="numeric_dollar", dbapi=conn.dialect.loaded_dbapi)
            sql, params = _on_driver(conn, wrapped, values, self._numbered, self._dollar)
            with attached(_pg_canceller(raw)):
                try:
                    return _pg_pipelined(conn, opening, sql, params)
                except conn.dialect.loaded_dbapi.Error as exc:
                    raise _driver_error(conn, exc, sql, params, None) from None
        sql, params = _on_driver(conn, wrapped, values, self._compiled)
        with attached(_pg_canceller(raw)), raw.cursor() as cursor:
            try:
                cursor.execute(sql, params)
                return [d[0] for d in cursor.description], cursor.fetchall()
            except conn.dialect.loaded_dbapi.Error as exc:
                raise _driver_error(conn, exc, sql, params, cursor) from None
            except ValueError as exc:  # psycopg2 refuses a value it cannot send (NUL in text) as ValueError
                refused = conn.dialect.loaded_dbapi.DataError(str(exc))
                raise _driver_error(conn, refused, sql, params, cursor) from None

    def describe(self, conn, clause, values, timeout):
        described = _described(conn, clause(values, "SELECT * FROM (\n", "\n) AS q LIMIT 0"), values)
        oids = sorted({t for _, t in described if isinstance(t, int)})
        names = {}
        if oids:
            query = sa.text("SELECT oid::int, format_type(oid, NULL) FROM pg_type WHERE oid IN :oids")
            query = query.bindparams(sa.bindparam("oids", expanding=True, type_=sa.Integer))
            names = dict(conn.execute(query, {"oids": oids}).all())
        return [(c, names.get(t, str(t))) for c, t in described]

    def not_null(self, conn, clause, values):
        # The server says which table column each result column comes from (through sub-queries too).
        result = conn.execute(clause(values, "SELECT * FROM (\n", "\n) AS q LIMIT 0"), values)
        try:
            cursor = result.cursor
            names = [d[0] for d in cursor.description or ()]
            pgresult = getattr(cursor, "pgresult", None)  # psycopg; psycopg2 puts it on the columns
            if pgresult is not None:
                origins = [(pgresult.ftable(i), pgresult.ftablecol(i)) for i in range(len(names))]
            else:
                origins = [
                    (getattr(d, "table_oid", 0) or 0, getattr(d, "table_column", 0) or 0) for d in cursor.description
                ]
        finally:
            result.close()
        tables = sorted({t for t, c in origins if t and c})
        if not tables:
            return frozenset()
        query = sa.text("SELECT attrelid::int, attnum::int FROM pg_attribute WHERE attnotnull AND attrelid IN :t")
        query = query.bindparams(sa.bindparam("t", expanding=True, type_=sa.Integer))
        required = {(t, c) for t, c in conn.execute(query, {"t": tables}).all()}
        return frozenset(name for name, origin in zip(names, origins) if origin in required)

    def is_timeout(self, orig, deadline):
        state = getattr(orig, "sqlstate", None) or getattr(orig, "pgcode", None)  # psycopg; psycopg2
        return state == _PG_TIMEOUT_STATE and "timeout" in str(orig)

    def near(self, orig, statement):
        """PostgreSQL's `position` (from 1, in characters) is in the text as sent: psycopg2's cursor keeps
        it; psycopg 3 sent SQLAlchemy's `%(name)s` as `$1`, `$2` ... (one number a name) and `%%` as `%`.
        The spec's statement is the text between the first and the last line, which are mcpgen's."""
        position = getattr(getattr(orig, "diag", None), "statement_position", None)
        if not position:
            return None
        sent = getattr(getattr(orig, "cursor", None), "query", None)
        if isinstance(sent, bytes):
            sent = sent.decode(errors="replace")
        else:
            numbers: dict[str, str] = {}
            sent = _PYFORMAT.sub(lambda m: numbers.setdefault(m[1], f"${len(numbers) + 1}") if m[1] else "%", statement)
        offset, first, last = int(position) - 1, sent.find("\n"), sent.rfind("\n")
        if not first < offset < last:
            return None
        return Near(sent[offset:last], sent.count("\n", 0, offset), True)

    def socket_of(self, dbapi_connection):
        pgconn = getattr(dbapi_connection, "pgconn", None)
        if pgconn is None:
            return super().socket_of(dbapi_connection)
        return kept_duplicate(dbapi_connection, pgconn.socket)

    def text(self, statement, signature, values):
        # An empty list of unknown item type: PostgreSQL cannot type SQLAlchemy's empty set
        # for every column, but `= ANY('{}')` takes the column's type. Declared types avoid this.
        empty = {n for n, t in signature if t == "null" and n in statement.lists and not values[n]}
        if not empty:
            return statement.text, signature
        text = empty_lists_as_arrays(statement, empty)
        return text, tuple((n, t) for n, t in signature if n not in empty or f":{n}" in text)


_MYSQL_COLUMN_TYPES = {
    "date": "DATE",
    **dict.fromkeys(("datetime", "timestamp"), "TIMESTAMP"),
    "time": "TIME",
    **dict.fromkeys(("tinyint", "smallint", "mediumint", "int", "bigint", "year", "bit"), "BIGINT"),
    "decimal": "DECIMAL",
    **dict.fromkeys(("float", "double"), "DOUBLE"),
    **dict.fromkeys(("binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob"), "BLOB"),
}


class MySQL(Backend):
    """MariaDB and MySQL."""

    def configure(self, url, options, connect_args):
        """A connect timeout; with PyMySQL, TLS as the driver reads it: any `ssl*` option, or an option file
        (which may set ssl-ca), is left to the driver as given and then required; with none, the driver
        tries TLS where the server offers it. The two spellings of TLS PyMySQL cannot take (it would fail
        at the first query with a TypeError) are refused here, in one sentence (SettingError)."""
        connect_args.setdefault("connect_timeout", 10)
        if url.get_driver_name() != "pymysql":
            return url
        if "ssl_mode" in url.query or "ssl_mode" in connect_args:
            raise SettingError(
                "PyMySQL takes no ssl_mode: ask for TLS with ssl_ca (see docs/databases.md)",
                ("url",) if "ssl_mode" in url.query else ("connect_args", "ssl_mode"),
            )
        if "ssl" in url.query or not isinstance(connect_args.get("ssl", {}), dict):
            raise SettingError(
                "ssl must be a mapping in connect_args, such as {ca: FILE}; or give ssl_ca in the url",
                ("url",) if "ssl" in url.query else ("connect_args", "ssl"),
            )
        return url

    def on_connect(self, dbapi_connection, record) -> None:
        _session_statement(dbapi_connection, "SET SESSION TRANSACTION READ ONLY")

    def end(self, conn):
        """ROLLBACK, then COM_RESET_CONNECTION: user variables, GET_LOCK locks, temporary tables
        and session settings all go; the session is made read-only again."""
        conn.rollback()
        raw = conn.connection.dbapi_connection
        if _reset_mysql(raw):
            self.on_connect(raw, None)

    def fetch(self, conn, clause, values, fetch, timeout):
        return _stream(conn, clause(values, _mysql_limits(conn, timeout, fetch)), values, fetch)

    def describe(self, conn, clause, values, timeout):
        prefix = _mysql_limits(conn, timeout, 0)
        return [(c, _mysql_type(t)) for c, t in _described(conn, clause(values, prefix), values)]

    CATALOGUE = (
        "SELECT table_schema, table_name, column_name, data_type, CASE WHEN table_schema = DATABASE() THEN 1 END "
        "FROM information_schema.columns "
        "WHERE table_schema NOT IN ('mysql', 'information_schema', 'performance_schema', 'sys') "
        "ORDER BY table_schema, table_name, ordinal_position"  # `*`'s order: ORDER BY 1 names a column
    )
    CATALOGUE_TYPES = _MYSQL_COLUMN_TYPES

    def is_timeout(self, orig, deadline):
        return _mysql_code(orig) in _MYSQL_TIMEOUT_CODES

    def near(self, orig, statement):
        """A syntax error quotes the statement from its token on, at most 80 characters of it, and says
        its line (MariaDB's counts the line of limits `_mysql_limits` puts first); an unknown column
        names it, wherever it is."""
        args: tuple[Any, ...] = getattr(orig, "args", ())
        message = args[1] if len(args) > 1 and isinstance(args[1], str) else ""
        syntax = re.search(r"near '(.*)' at line (\d+)\Z", message, re.DOTALL)
        if _mysql_code(orig) == _MYSQL_SYNTAX and syntax:
            text, line = syntax[1], int(syntax[2]) - statement.startswith(_MARIADB_LIMITS)
            return Near(text.removesuffix("...") if len(text) > 80 else text, line, len(text) < 80)
        unknown = re.match(r"Unknown column '(.+)' in ", message)
        return Near(unknown[1], None, False) if _mysql_code(orig) == _MYSQL_UNKNOWN_COLUMN and unknown else None

    def socket_of(self, dbapi_connection):
        sock = getattr(dbapi_connection, "_sock", None)  # PyMySQL keeps its socket there
        return sock.fileno() if sock is not None else super().socket_of(dbapi_connection)


class SQLite(Backend):
    def catalogue(self, conn):
        """Every database SQLite lists (main, temp, the attached ones), placed in the order SQLite looks
        for an unqualified table: temp, main, then the attached in the order they were attached."""
        schemas = conn.exec_driver_sql("SELECT seq, name FROM pragma_database_list").fetchall()
        quote = conn.dialect.identifier_preparer.quote_identifier
        one = (
            "SELECT ?, m.name, p.name, p.type, ? FROM {}.sqlite_master AS m "
            "JOIN pragma_table_info(m.name, ?) AS p WHERE m.type IN ('table', 'view')"
        )
        sql = " UNION ALL ".join(one.format(quote(name)) for _, name in schemas)
        return sql, tuple(v for seq, name in schemas for v in (name, seq ^ 1 if seq < 2 else seq, name))

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
        stop = threading.Event()  # a cancelled call: the progress handler ends the query too
        raw.set_progress_handler(lambda: stop.is_set() or time.monotonic() > deadline, 1000)
        try:
            values = _sqlite_values(values)
            with attached(stop.set):
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


def _on_driver(conn, clause, values: dict, cache: dict, dialect=None) -> tuple[str, Any]:
    """The SQL and parameters SQLAlchemy would hand the driver for `clause` with these values (lists
    expanded, values through the types' bind processors), the clause compiled once into `cache`
    (for `dialect`, by default the connection's). A
    call sent this way skips SQLAlchemy's execution context and result objects, most of a short
    query's client time. A clause whose SQL does not depend on the values (no list, no value written
    inline) keeps that SQL too, and a call only fills in its parameters."""
    found = cache.get(clause)
    if found is None:
        compiled = clause.compile(dialect=dialect or conn.dialect)
        fixed = None
        if not compiled.post_compile_params:
            state = compiled.construct_expanded_state(values)
            if set(state.parameters) == set(values):
                fixed = (state.statement, tuple(state.positiontup or state.parameters), state.processors)
        found = (compiled, fixed)
        if len(cache) > 4096:
            cache.clear()
        cache[clause] = found
    compiled, fixed = found
    if fixed is not None:
        statement, keys, processors = fixed
        if processors:
            params = {k: processors[k](values[k]) if k in processors else values[k] for k in keys}
        else:
            params = {k: values[k] for k in keys}
        return statement, tuple(params[k] for k in keys) if compiled.positional else params
    state = compiled.construct_expanded_state(values)
    params = state.parameters
    if state.processors:
        params = {k: state.processors[k](v) if k in state.processors else v for k, v in params.items()}
    if compiled.positional:
        return state.statement, tuple(params[k] for k in state.positiontup or ())
    return state.statement, params


def _driver_error(conn, exc: Exception, sql: str, params: Any, cursor) -> sa_exc.DBAPIError:
    """The driver's error as SQLAlchemy would raise it; a connection it found broken is not used again."""
    lost = conn.dialect.is_disconnect(exc, conn.connection.dbapi_connection, cursor)
    if lost:
        conn.invalidate()
    error = conn.dialect.loaded_dbapi.Error
    wrapped = sa_exc.DBAPIError.instance(sql, params, exc, error, hide_parameters=True, connection_invalidated=lost)
    return cast(sa_exc.DBAPIError, wrapped)  # `exc` is the driver's: a DBAPIError subclass


def _described(conn, clause, values) -> list[tuple[str, Any]]:
    result = conn.execute(clause, values)
    try:
        return [(d[0], d[1]) for d in result.cursor.description or ()]
    finally:
        result.close()


def _ms(seconds: float) -> int:
    return max(1, round(seconds * 1000))


_PG_END = "ROLLBACK; SELECT pg_advisory_unlock_all()"
# The statements around a call's query in one message, prepared once on each connection: the server
# then neither parses nor plans them again (`_pg_pipelined`).
_PG_AROUND = {
    b"mcpgen_begin": b"BEGIN READ ONLY",
    b"mcpgen_timeout": b"SELECT set_config('statement_timeout', $1, true)",
    b"mcpgen_rollback": b"ROLLBACK",
    b"mcpgen_unlock": b"SELECT pg_advisory_unlock_all()",
}
_PG_AROUND_ITEMS = tuple(_PG_AROUND.items())
_PG_NAMES = itertools.count()  # prepared statements' names (`_pg_prepared`)
# How long after its time limit a call sent in one message may wait for its answer, past the Cutoff's
# own bound (which ends the wait first): only a backstop.
_PG_BACKSTOP = 60.0
# The pool's info of a connection (cleared when the connection goes): the call's opening not sent
# yet, (its time limit in ms, seconds) (`begin`); whether the call's end was sent with its query;
# whether `_PG_AROUND` is prepared; the queries prepared (`_pg_prepared`).
_OPENING, _ENDED, _AROUND, _PREPARED = "mcpgen_opening", "mcpgen_ended", "mcpgen_around", "mcpgen_prepared"
_TX = "mcpgen_transformer"  # the psycopg Transformer kept with the connection (`_pg_pipelined`)
_PG_PENDING: weakref.WeakSet = weakref.WeakSet()  # psycopg connections whose `end` is not answered yet
# libpq's own bounds, unless the URL sets them: connecting, and a peer that stops answering TCP
# (keepalive probes on a silent connection; unacknowledged data on a busy one).
_PG_SOCKET_DEFAULTS = {
    "connect_timeout": 10,
    "keepalives": 1,
    "keepalives_idle": 10,
    "keepalives_interval": 5,
    "keepalives_count": 3,
    "tcp_user_timeout": 30_000,
}


def _pg_checkout(dbapi_connection, record, proxy) -> None:
    """Before each use of a pooled connection: read the answer to the last call's `end` (an
    error there means the session was not reset), then check the server has not closed the
    connection (a restart, pg_terminate_backend): an idle connection has nothing to read.
    Either way the pool drops it and takes another (DisconnectionError)."""
    pgconn = getattr(dbapi_connection, "pgconn", None)
    if pgconn is None:
        fileno = dbapi_connection.fileno()
    else:
        if dbapi_connection in _PG_PENDING:
            _PG_PENDING.discard(dbapi_connection)
            pq = _psycopg()[1]
            try:
                pgconn.consume_input()  # the reply is usually in already: no wait for it then
                results = _pg_results(pgconn, PG_RESET_WAIT)
            except Exception as exc:  # late (TimeoutError), or the connection broke (the driver's error)
                raise sa_exc.DisconnectionError(f"the session's reset was not answered: {exc}") from None
            failed = any(r.status not in (pq.ExecStatus.COMMAND_OK, pq.ExecStatus.TUPLES_OK) for r in results)
            if failed or pgconn.transaction_status != pq.TransactionStatus.IDLE:
                raise sa_exc.DisconnectionError("the session could not be reset")
        fileno = pgconn.socket
    if select.select([fileno], [], [], 0)[0]:
        raise sa_exc.DisconnectionError("the server closed the connection")


def _pg_open(conn, *_) -> None:
    """Send the call's opening that `begin` deferred, if it is not sent yet, and wait for its answer
    (its own `seconds`); also called by SQLAlchemy before any statement it runs. NotOpened if it fails."""
    opening = conn.info.pop(_OPENING, None)
    if opening is not None:
        ms, seconds = opening
        try:
            _pg_exec(conn, f"BEGIN READ ONLY; SET LOCAL statement_timeout = {ms}", seconds)
        except Exception as exc:
            raise NotOpened(exc) from None


def _pg_pipelined(conn, opening: tuple, sql: str, params: tuple) -> tuple[list[str], list[tuple]]:
    """The call in one message with one Sync (libpq's pipeline mode): the opening `begin` deferred
    (`BEGIN READ ONLY`, the time limit by `set_config(..., true)`), the query (`sql` with $1
    placeholders), then `ROLLBACK` and `pg_advisory_unlock_all()`; the columns and rows of the query,
    read with psycopg's own adapters (one Transformer kept with the connection, as a cursor keeps
    one). The four statements around the query are prepared once on each connection (`_PG_AROUND`),
    the query by psycopg's rule (`_pg_prepared`); with psycopg's `prepare_threshold` None, nothing
    is. The answers are read in one pass up to the Sync (`_pg_results`); the call's `Cutoff` ends
    the wait first.

    A failed opening raises NotOpened, a failed query the driver's error; then the transaction is
    still open (a failed statement skips the rest up to the Sync) and `end` resets the session."""
    errors, pq = _psycopg()
    transformer, auto = _psycopg_adapt()
    ms, seconds = opening
    info = conn.info
    raw = conn.connection.dbapi_connection
    pgconn = raw.pgconn
    tx = info.get(_TX)
    if tx is None:
        tx = info[_TX] = transformer.from_context(raw)
    values = tx.dump_sequence(params, [auto] * len(params))
    query = sql.encode(tx.encoding)
    name, prepare, dropped = _pg_prepared(info, query, raw.prepare_threshold, raw.prepared_max)
    named = raw.prepare_threshold is not None  # None: nothing prepared, as psycopg does (a pooler's wish)
    around = _PG_AROUND_ITEMS if named and not info.get(_AROUND) else ()
    opened = len(around) + len(dropped) + 2  # the statements before the query
    send_around = pgconn.send_query_prepared if named else _unnamed(pgconn)
    answers: list = []  # each statement's result, in order
    error = None
    pgconn.enter_pipeline_mode()
    try:
        for key, text in around:
            pgconn.send_prepare(key, text)
        for deallocate in dropped:
            pgconn.send_query_params(deallocate, None)
        send_around(b"mcpgen_begin", None)
        send_around(b"mcpgen_timeout", [ms.encode()])
        if prepare:
            pgconn.send_prepare(name, query, param_types=tx.types)
        if name:
            pgconn.send_query_prepared(name, values, param_formats=tx.formats)
        else:
            pgconn.send_query_params(query, values, param_types=tx.types, param_formats=tx.formats)
        send_around(b"mcpgen_rollback", None)
        send_around(b"mcpgen_unlock", None)
        pgconn.pipeline_sync()
        bound = seconds + _PG_BACKSTOP
        _pg_flush(pgconn, time.monotonic() + bound)
        _pg_results(pgconn, bound, until=pq.ExecStatus.PIPELINE_SYNC, into=answers)
        pgconn.exit_pipeline_mode()
    except (TimeoutError, errors.Error) as exc:  # the connection is lost, or its answers: it is of no more use
        raw.close()
        error = exc if isinstance(exc, errors.Error) else errors.OperationalError(str(exc))
    result = _pg_answered(info, answers, error, opened, len(around), query if prepare else None, tx.encoding)
    tx.set_pgresult(result)
    columns = [result.fname(i).decode(tx.encoding) for i in range(result.nfields)]
    return columns, tx.load_rows(0, result.ntuples, tuple)


def _unnamed(pgconn) -> Callable[[bytes, list | None], None]:
    """`send_query_prepared` for `_PG_AROUND`'s statements where nothing is prepared: each sent unnamed."""
    return lambda key, args: pgconn.send_query_params(_PG_AROUND[key], args)


@functools.cache
def _psycopg_adapt() -> tuple[Any, Any]:
    """psycopg's Transformer class and its automatic dumping format, imported once."""
    from psycopg.adapt import PyFormat, Transformer

    return Transformer, PyFormat.AUTO


def _pg_answered(info: dict, answers: list, error, opened: int, around: int, prepared: bytes | None, encoding: str):
    """The query's result among the `answers` of a call in one message (`_pg_pipelined`, one result
    a statement, up to the Sync), whose first `opened` statements open the transaction (the first
    `around` of them prepare `_PG_AROUND`), then `prepared` is prepared if given; the connection's
    `info` kept up to date. NotOpened when the opening failed or went unanswered, the first error otherwise."""
    errors, pq = _psycopg()
    ok = (pq.ExecStatus.COMMAND_OK, pq.ExecStatus.TUPLES_OK)
    fine = [r.status in ok for r in answers]  # each statement answered, and done
    if around and len(fine) >= around and all(fine[:around]):
        info[_AROUND] = True
    if prepared is not None and not (len(fine) > opened and fine[opened]):
        info[_PREPARED][1].pop(prepared, None)  # not prepared after all
    if not all(fine):  # the server's own error says more than a connection lost after it
        failed = next((r for r in answers if r.status == pq.ExecStatus.FATAL_ERROR), None)
        if failed is not None:
            error = errors.error_from_result(failed, encoding=encoding)
    if error is not None:
        if len(fine) < opened or not all(fine[:opened]):
            raise NotOpened(error)
        raise error
    info[_ENDED] = True
    return answers[opened + (prepared is not None)]


def _pg_prepared(info: dict, query: bytes, threshold: int | None, most: int) -> tuple[bytes, bool, list[bytes]]:
    """(name, whether to prepare it now, DEALLOCATE statements) for `query` on the connection whose
    pool `info` this is, by psycopg's rule: prepared once run `threshold` times (None: never); at
    most `most` queries counted and `most` prepared, the oldest dropped first. No name: run it unnamed."""
    counts, names = info.setdefault(_PREPARED, ({}, {}))
    name = names.get(query)
    if name is not None:
        return name, False, []
    seen = counts.pop(query, 0)
    if threshold is None or seen < threshold:
        counts[query] = seen + 1
        while len(counts) > most:
            del counts[next(iter(counts))]
        return b"", False, []
    names[query] = name = f"mcpgen_{next(_PG_NAMES)}".encode()
    dropped = []
    while len(names) > most:
        dropped.append(b"DEALLOCATE " + names.pop(next(iter(names))))
    return name, True, dropped


@functools.cache
def _pipeline_mode() -> bool:
    """Whether psycopg's libpq has pipeline mode (libpq 14 and later)."""
    import psycopg

    return psycopg.Pipeline.is_supported()


def _pipelines(raw) -> bool:
    """Whether the call's opening can go out with its query (`_pg_pipelined`): psycopg 3 with pipeline mode."""
    return getattr(raw, "pgconn", None) is not None and _pipeline_mode()


def _pg_release(dbapi_connection, record=None) -> None:
    release_duplicate(dbapi_connection)


def _pg_canceller(raw) -> Callable[[], object]:
    """What sends PostgreSQL's cancel request for the statement running on `raw` (psycopg 3)."""
    cancel_safe = getattr(raw, "cancel_safe", None)
    if cancel_safe is not None:
        return lambda: cancel_safe(timeout=5.0)
    return raw.cancel


def _pg_exec(conn, sql: str, seconds: float) -> None:
    """Run `sql` (statements without parameters) in one message, around the driver's statement
    machinery: psycopg would forget its prepared statements on seeing a ROLLBACK go through it.
    The reply is awaited at most `seconds` (TimeoutError), with the GIL free (see the module)."""
    raw = conn.connection.dbapi_connection
    pgconn = getattr(raw, "pgconn", None)
    if pgconn is None:  # psycopg2: no prepared statements of its own to keep; the Cutoff bounds it
        cursor = raw.cursor()
        try:
            cursor.execute(sql)
        finally:
            cursor.close()
        return
    errors, pq = _psycopg()
    _pg_send(pgconn, sql, time.monotonic() + seconds)
    results = _pg_results(pgconn, seconds)
    bad = [r for r in results if r.status not in (pq.ExecStatus.COMMAND_OK, pq.ExecStatus.TUPLES_OK)]
    if bad:
        raise errors.error_from_result(bad[0], encoding="utf-8")
    if pgconn.status != pq.ConnStatus.OK:
        raise OSError("the connection broke")


@functools.cache
def _psycopg() -> tuple[Any, Any]:
    """psycopg's errors and pq modules, imported once (a connection through psycopg has them)."""
    from psycopg import errors, pq

    return errors, pq


def _pg_send(pgconn, sql: str, deadline: float) -> None:
    """Send `sql` in full (psycopg keeps libpq non-blocking), by `deadline` (TimeoutError)."""
    pgconn.send_query(sql.encode())
    _pg_flush(pgconn, deadline)


def _pg_flush(pgconn, deadline: float) -> None:
    """Write what libpq holds for the server, by `deadline` (TimeoutError)."""
    while pgconn.flush():
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not select.select([], [pgconn.socket], [], remaining)[1]:
            raise TimeoutError("the database did not take the statement in time")


def _pg_results(pgconn, seconds: float, until: Any = None, into: list | None = None) -> list:
    """Every result of the statement in flight, read within `seconds` (TimeoutError); with `until`,
    the results of every statement up to the first result of that status (a pipeline's Sync, left
    out), appended to `into`. PQgetResult is called only once a whole result is in (not `is_busy`),
    so it never waits itself."""
    deadline = time.monotonic() + seconds
    results: list = [] if into is None else into
    while True:
        while pgconn.is_busy():
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([pgconn.socket], [], [], remaining)[0]:
                raise TimeoutError(f"the database did not answer within {seconds:g} s")
            pgconn.consume_input()
        result = pgconn.get_result()
        if result is None:
            if until is None:
                return results
        elif result.status == until:
            return results
        else:
            results.append(result)


def _reset_mysql(raw) -> bool:
    """COM_RESET_CONNECTION on a PyMySQL connection (MariaDB 10.2.4+, MySQL 5.7.3+); PyMySQL has
    no public call for it. False when the driver is another one."""
    send, read = getattr(raw, "_execute_command", None), getattr(raw, "_read_ok_packet", None)
    if send is None or read is None:
        return False
    send(_COM_RESET_CONNECTION, b"")
    read()
    return True


def _mysql_limits(conn, timeout: float, rows: int) -> str:
    """Bound the next statement's time and rows and start a read-only transaction. MariaDB takes
    the limits as a `SET STATEMENT ... FOR` prefix (returned); MySQL as session settings."""
    if conn.dialect.is_mariadb:
        prefix = f"{_MARIADB_LIMITS} max_statement_time={_seconds(timeout)}, sql_select_limit={rows} FOR\n"
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
