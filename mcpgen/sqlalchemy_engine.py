"""Any database SQLAlchemy reaches: PostgreSQL, MariaDB/MySQL, SQLite, and warehouses through their dialects.

Per backend, each call:

* PostgreSQL: on a session made read-only at connect (`default_transaction_read_only`),
  with the session `statement_timeout`, one statement `SELECT * FROM (<sql>) LIMIT max_rows + 1`.
* MariaDB/MySQL: `START TRANSACTION READ ONLY` on a read-only session, the query under
  `max_statement_time` (MySQL: `max_execution_time`) and `sql_select_limit`, unbuffered cursor.
* SQLite: a `mode=ro` file with `query_only`, no ATTACH, a progress handler as the timer.
* Other dialects: a streaming cursor; read-only and time limits are the role's business.

Every call ends with a rollback and reads at most `max_rows + 1` rows. Nothing a person
reads (errors, logs) ever carries a password: see `redact`.

>>> redact("connection to postgresql+psycopg://reader:s3cret@db:5432/x failed", ["s3cret"])
'connection to postgresql+psycopg://reader:***@db:5432/x failed'

SQLAlchemy is imported only here, and this module only when a project has a `url:` connection.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import re
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any
from urllib.parse import quote, unquote

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import make_url
from sqlalchemy.pool import StaticPool
from sqlglot.errors import SqlglotError
from sqlglot.tokens import TokenType

from .config import URLConnection, expand_env
from .engines import Engine, Prepared, QueryResult
from .errors import QueryError, QueryTimeout, UnsafeSQL
from .params import param_types
from .rls import claim_settings, with_claim_settings
from .sql import DIALECTS, _tokens, check_read_only, find_placeholders

__all__ = ["SQLAlchemyEngine", "param_types", "redact"]

# scheme://user:password@host -> scheme://user:***@host ; also libpq/ODBC "password=..." pairs.
_URL_USERINFO = re.compile(r"(?P<head>\b[A-Za-z][A-Za-z0-9+.\-]*://[^\s:/@'\"]*):(?P<pw>[^\s@'\"]*)@")
_KV_PASSWORD = re.compile(r"(?i)\b(?P<key>password|passwd|pwd)\s*=\s*(?P<pw>'[^']*'|\"[^\"]*\"|[^\s;&,]+)")
# SQLAlchemy's text() takes every `:word` not preceded by ':', a word character or a backslash.
_IN_BEFORE = re.compile(r"(?i)(?:(?P<not>\bNOT)\s+)?\bIN\s*\Z")
_SA_BIND = re.compile(r"(?<![:\w\\]):(\w+)(?!:)", re.UNICODE)
_DRIVER_HINTS = {
    "psycopg": 'pip install "mcpgen[postgres]"',
    "psycopg2": 'pip install psycopg2-binary, or use postgresql+psycopg:// with pip install "mcpgen[postgres]"',
    "pymysql": 'pip install "mcpgen[mysql]"',
    "MySQLdb": 'pip install mysqlclient, or use mysql+pymysql:// with pip install "mcpgen[mysql]"',
}
# A URL without a driver gets the one the extras install (SQLAlchemy's own default is psycopg2/mysqlclient).
_DEFAULT_DRIVERS = {
    "postgresql": "postgresql+psycopg",
    "postgres": "postgresql+psycopg",
    "mysql": "mysql+pymysql",
    "mariadb": "mariadb+pymysql",
}
_PG_TIMEOUT_STATE = "57014"  # query_canceled: statement_timeout
_MYSQL_TIMEOUT_CODES = {1969, 3024}  # MariaDB max_statement_time, MySQL max_execution_time
_ITEM_TYPES = ("string", "integer", "number", "boolean", "date", "datetime")


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """`text` with passwords removed: those inside URLs, `password=` pairs, and every given secret."""
    text = _URL_USERINFO.sub(lambda m: f"{m['head']}:***@", str(text))
    text = _KV_PASSWORD.sub(lambda m: f"{m['key']}=***", text)
    for secret in sorted({s for s in secrets if s and len(s) >= 3}, key=len, reverse=True):
        for form in {secret, quote(secret, safe=""), quote(secret), unquote(secret)}:
            if form:
                text = text.replace(form, "***")
    return text


@dataclass(frozen=True)
class _Statement:
    text: str  # the SQL for text(): non-parameter colons escaped, trailing semicolon dropped
    lists: frozenset[str]  # names written `IN :name`: expanding bind parameters
    types: tuple[tuple[str, str], ...]  # declared types, when the caller gave them
    source: str = ""  # the SQL before escaping, and its placeholders: to rewrite an untyped empty list
    placeholders: tuple = ()


class SQLAlchemyEngine(Engine):
    """One pooled SQLAlchemy engine for one `url:` connection of mcpgen.yaml."""

    def __init__(self, name: str, connection: URLConnection):
        self.name = name
        try:
            raw_url = expand_env(connection.url)
            password = expand_env(connection.password) if connection.password is not None else None
        except ValueError as exc:  # names the variable, never a value
            raise QueryError(f"connection '{name}': {exc}") from None
        self._secrets = [s for s in (password,) if s]
        try:
            url = make_url(raw_url)
        except Exception:
            raise QueryError(
                f"connection '{name}': the url is not a valid SQLAlchemy URL (dialect+driver://user@host:port/database)"
            ) from None
        if url.password:
            self._secrets.append(str(url.password))
        if password is not None:
            url = url.set(password=password)
        if url.drivername in _DEFAULT_DRIVERS:
            url = url.set(drivername=_DEFAULT_DRIVERS[url.drivername])
        self._secrets.append(raw_url)
        self.backend = url.get_backend_name()
        self.dialect = DIALECTS.get(self.backend)  # None: sqlglot's generic SQL
        self.pool_timeout = float(connection.pool_timeout)
        self.pool_capacity = connection.pool_size + connection.max_overflow
        connect_args = dict(connection.connect_args)
        kwargs: dict[str, Any] = dict(
            pool_pre_ping=True,
            pool_size=connection.pool_size,
            max_overflow=connection.max_overflow,
            pool_timeout=self.pool_timeout,
            hide_parameters=True,
        )
        if self.backend == "postgresql":
            # Every statement is its own transaction, read-only by the session default set on connect.
            kwargs["isolation_level"] = "AUTOCOMMIT"
            if url.get_driver_name() in ("psycopg", "psycopg2") and "connect_timeout" not in url.query:
                connect_args.setdefault("connect_timeout", 10)
        elif self.backend in ("mysql", "mariadb"):
            connect_args.setdefault("connect_timeout", 10)
        elif self.backend == "sqlite":
            url = _sqlite_read_only(url)
            connect_args.setdefault("check_same_thread", False)
            if url.database in (None, "", ":memory:"):
                kwargs["poolclass"] = StaticPool  # one in-memory database, shared
                for key in ("pool_size", "max_overflow", "pool_timeout"):
                    kwargs.pop(key)
        if connect_args:
            kwargs["connect_args"] = connect_args
        try:
            self._engine = sa.create_engine(url, **kwargs)
        except ModuleNotFoundError as exc:
            hint = _DRIVER_HINTS.get((exc.name or "").split(".")[0])
            hint = f": {hint}" if hint else ""
            raise QueryError(f"connection '{name}' needs the Python package {exc.name}{hint}") from None
        except sa_exc.NoSuchModuleError:
            raise QueryError(
                f"connection '{name}': no SQLAlchemy dialect for {url.drivername} is installed; "
                "pip install the package that provides it (see docs/databases.md)"
            ) from None
        except Exception as exc:
            raise QueryError(f"connection '{name}': {self._redact(_first_line(exc))}") from None
        if self.backend == "sqlite":
            event.listen(self._engine, "connect", _sqlite_query_only)
        elif self.backend == "postgresql":
            event.listen(self._engine, "connect", _pg_read_only)
        elif self.backend in ("mysql", "mariadb"):
            event.listen(self._engine, "connect", _mysql_read_only)
        self._clauses: dict[tuple, Any] = {}
        self._lock = threading.Lock()
        self.claim_settings = dict(connection.claim_settings)
        if self.claim_settings and self.backend != "postgresql":
            raise QueryError(f"connection '{name}': claim_settings needs PostgreSQL (row-level security)")

    # -- preparing ---------------------------------------------------------------------------

    def prepare(self, sql: str, types: Mapping[str, str] | None = None) -> Prepared:
        """Check `sql` is one read-only statement and keep it in `text()` form.

        `types` (optional) gives declared parameter types ("integer", "date", "string[]", ...;
        see `param_types`): with them a NULL or an empty list binds with the right SQL type."""
        check_read_only(sql, self.dialect)
        placeholders = find_placeholders(sql, self.dialect)
        names = frozenset(p.name for p in placeholders)
        lists = frozenset(p.name for p in placeholders if p.after_in)
        for p in placeholders:
            if p.name in lists and not p.after_in:
                raise UnsafeSQL(
                    f"parameter {p.name} is used both as a list (IN :{p.name}) and as a single "
                    f"value (line {p.line}, column {p.col})",
                    p.line,
                    p.col,
                )
        declared = tuple(sorted((k, v) for k, v in (types or {}).items() if k in names))
        for name, type_ in declared:
            if type_.removesuffix("[]") not in _ITEM_TYPES:
                raise QueryError(f"parameter {name} has an unknown type {type_!r}")
        source = _strip_semicolon(sql, self.dialect)
        return Prepared(_Statement(_sa_text(source, placeholders), lists, declared, source, placeholders), names)

    # -- running -----------------------------------------------------------------------------

    def run(self, query: Prepared, params: dict[str, Any], max_rows: int, timeout: float) -> QueryResult:
        statement: _Statement = query.sql
        values = {name: params.get(name) for name in query.names}
        for name in statement.lists:
            if values[name] is None:
                values[name] = []  # a NULL list matches nothing, as on DuckDB
        settings = claim_settings(self.claim_settings) if self.claim_settings else []  # before any connection
        conn = self._connect()
        deadline = time.monotonic() + timeout
        try:
            with conn:
                if settings:
                    self._pg_timeout(conn, timeout)  # a session setting: before the transaction that rolls back
                    return with_claim_settings(
                        conn, settings, lambda: self._run(conn, statement, values, max_rows, timeout)
                    )
                return self._run(conn, statement, values, max_rows, timeout)
        except sa_exc.DBAPIError as exc:
            raise self._error(exc, timeout, deadline) from None
        except sa_exc.SQLAlchemyError as exc:
            raise QueryError(f"the query failed: {self._redact(_first_line(exc))}") from None

    def _run(self, conn, statement: _Statement, values: dict, max_rows: int, timeout: float) -> QueryResult:
        fetch = max_rows + 1
        backend = self.backend
        if backend == "postgresql":
            # The session is read-only from connect (default_transaction_read_only), and the
            # statement runs as its own transaction; the server stops after max_rows + 1 rows.
            self._pg_timeout(conn, timeout)
            result = conn.execute(
                self._clause(statement, values, "SELECT * FROM (\n", f"\n) AS mcpgen_q LIMIT {fetch}"), values
            )
            columns, rows = list(result.keys()), [tuple(r) for r in result.fetchall()]
        elif backend in ("mysql", "mariadb"):
            prefix = _mysql_limits(conn, timeout, fetch)
            columns, rows = self._stream(conn, self._clause(statement, values, prefix), values, fetch)
        elif backend == "sqlite":
            raw = conn.connection.dbapi_connection
            deadline = time.monotonic() + timeout
            raw.set_progress_handler(lambda: time.monotonic() > deadline, 1000)
            try:
                columns, rows = self._stream(
                    conn, self._clause(statement, _sqlite_values(values), ""), _sqlite_values(values), fetch
                )
            finally:
                raw.set_progress_handler(None, 0)
        else:
            # Other dialects (warehouses): no portable read-only or time-limit statement; the
            # database role is the boundary (see docs/databases.md).
            columns, rows = self._stream(conn, self._clause(statement, values, ""), values, fetch)
        conn.rollback()
        return QueryResult(columns, rows[:max_rows], len(rows) > max_rows)

    @staticmethod
    def _pg_timeout(conn, timeout: float) -> None:
        """Set the session's statement_timeout, only when it differs from the last call's."""
        info = conn.connection.info
        ms = _ms(timeout)
        if info.get("mcpgen_statement_timeout") != ms:
            info.pop("mcpgen_statement_timeout", None)
            conn.exec_driver_sql(f"SET statement_timeout = {ms}")
            info["mcpgen_statement_timeout"] = ms

    def _stream(self, conn, clause, values, fetch) -> tuple[list[str], list[tuple]]:
        result = conn.execution_options(stream_results=True, max_row_buffer=fetch).execute(clause, values)
        try:
            return list(result.keys()), [tuple(r) for r in result.fetchmany(fetch)]
        finally:
            result.close()

    # -- describing --------------------------------------------------------------------------

    def describe(self, query: Prepared, timeout: float = 10.0) -> list[tuple[str, str]]:
        """Column names and type names of the result, without running the query's work:
        every parameter is NULL (lists empty) and no row is fetched (LIMIT 0)."""
        statement: _Statement = query.sql
        values = {name: ([] if name in statement.lists else None) for name in query.names}
        conn = self._connect()
        deadline = time.monotonic() + timeout
        try:
            with conn:
                if self.backend == "postgresql":
                    self._pg_timeout(conn, timeout)
                    described = self._describe(conn, statement, values, "SELECT * FROM (\n", "\n) AS q LIMIT 0")
                    oids = sorted({t for _, t in described if isinstance(t, int)})
                    names = (
                        dict(
                            conn.execute(
                                sa.text(
                                    "SELECT oid::int, format_type(oid, NULL) FROM pg_type WHERE oid IN :oids"
                                ).bindparams(sa.bindparam("oids", expanding=True, type_=sa.Integer)),
                                {"oids": oids},
                            ).all()
                        )
                        if oids
                        else {}
                    )
                    out = [(c, names.get(t, str(t))) for c, t in described]
                elif self.backend in ("mysql", "mariadb"):
                    prefix = _mysql_limits(conn, timeout, 0)
                    out = [(c, _mysql_type(t)) for c, t in self._describe(conn, statement, values, prefix, "")]
                else:
                    if self.backend == "sqlite":
                        values = _sqlite_values(values)
                    out = [
                        (c, "unknown" if t is None else str(t))
                        for c, t in self._describe(conn, statement, values, "SELECT * FROM (\n", "\n) AS q LIMIT 0")
                    ]
                conn.rollback()
                return out
        except sa_exc.DBAPIError as exc:
            raise self._error(exc, timeout, deadline) from None
        except sa_exc.SQLAlchemyError as exc:
            raise QueryError(f"the query failed: {self._redact(_first_line(exc))}") from None

    def _describe(self, conn, statement, values, prefix, suffix):
        result = conn.execute(self._clause(statement, values, prefix, suffix), values)
        try:
            return [(d[0], d[1]) for d in result.cursor.description or ()]
        finally:
            result.close()

    # -- shared parts ------------------------------------------------------------------------

    def _connect(self):
        try:
            return self._engine.connect()
        except sa_exc.TimeoutError:
            raise QueryError(
                f"connection '{self.name}' is busy: all {self.pool_capacity} connections were in "
                f"use for {self.pool_timeout:g} s; try again shortly"
            ) from None
        except sa_exc.DBAPIError as exc:
            raise QueryError(f"connection '{self.name}' is unavailable: {self._reason(exc)}") from None
        except sa_exc.SQLAlchemyError as exc:
            raise QueryError(f"connection '{self.name}' is unavailable: {self._redact(_first_line(exc))}") from None

    def _clause(self, statement: _Statement, values: dict, prefix: str, suffix: str = ""):
        """The text() clause for these values' types, built once per type signature."""
        declared = dict(statement.types)
        signature = tuple(
            sorted((name, _type_key(name, value, declared, name in statement.lists)) for name, value in values.items())
        )
        if self.backend == "sqlite":  # dates are ISO text there (see _sqlite_values)
            signature = tuple((n, "string" if t in ("date", "datetime", "datetimetz") else t) for n, t in signature)
        key = (statement, signature, prefix, suffix)
        clause = self._clauses.get(key)
        if clause is None:
            text = statement.text
            if self.backend == "postgresql":
                # An empty list of unknown item type: PostgreSQL cannot type SQLAlchemy's empty set
                # for every column, but `= ANY('{}')` takes the column's type. Declared types avoid this.
                empty = {n for n, t in signature if t == "null" and n in statement.lists and not values[n]}
                if empty:
                    text = _sa_text(statement.source, statement.placeholders, empty)
                    signature = tuple((n, t) for n, t in signature if n not in empty or f":{n}" in text)
            binds = [_bindparam(name, type_key, name in statement.lists) for name, type_key in signature]
            clause = sa.text(prefix + text + suffix).bindparams(*binds)
            with self._lock:
                if len(self._clauses) > 4096:
                    self._clauses.clear()
                self._clauses[key] = clause
        return clause

    def _error(self, exc: sa_exc.DBAPIError, timeout: float, deadline: float) -> QueryError:
        orig = exc.orig
        if (
            self.backend == "postgresql"
            and getattr(orig, "sqlstate", None) == _PG_TIMEOUT_STATE
            and "timeout" in str(orig)
        ):
            return QueryTimeout(f"the query ran longer than {timeout:g} s and was cancelled")
        if self.backend in ("mysql", "mariadb") and _mysql_code(orig) in _MYSQL_TIMEOUT_CODES:
            return QueryTimeout(f"the query ran longer than {timeout:g} s and was cancelled")
        if self.backend == "sqlite" and "interrupted" in str(orig) and time.monotonic() >= deadline:
            return QueryTimeout(f"the query ran longer than {timeout:g} s and was cancelled")
        if exc.connection_invalidated:
            return QueryError(f"connection '{self.name}' is unavailable: {self._reason(exc)}")
        return QueryError(f"the query failed: {self._redact(_db_message(orig))}")

    def _reason(self, exc: sa_exc.DBAPIError) -> str:
        """A short reason a connection failed, without host credentials or password."""
        message = _db_message(exc.orig)
        match = re.search(r"connection to server .*? failed: (.*)", message)
        if match:
            message = match[1]
        return self._redact(message.strip().rstrip(".")) or "the database did not answer"

    def _redact(self, text: str) -> str:
        return redact(text, self._secrets)

    def close(self) -> None:
        self._engine.dispose()

    def __repr__(self) -> str:
        return f"SQLAlchemyEngine({self.name!r}, backend={self.backend!r})"


# -- helpers --------------------------------------------------------------------------------


def _ms(seconds: float) -> int:
    return max(1, round(seconds * 1000))


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


def _strip_semicolon(sql: str, dialect: str | None) -> str:
    """The SQL without a trailing `;` (and what follows it), so it can be wrapped."""
    try:
        tokens = _tokens(sql, dialect)
    except SqlglotError:
        return sql.rstrip().rstrip(";")
    if tokens and tokens[-1].token_type == TokenType.SEMICOLON:
        return sql[: tokens[-1].start].rstrip()
    return sql.rstrip()


def _sa_text(sql: str, placeholders, empty_lists: frozenset[str] | set[str] = frozenset()) -> str:
    """The SQL as text() must see it: every colon text() would take for a parameter but which
    is not one (`':x'` in a string, `-- :y` in a comment) escaped, so it reaches the database as
    written; and a space around a real placeholder text() would miss (`:d::date`, `IN:ids`).

    `[NOT] IN :name` for a name in `empty_lists` becomes `= ANY('{}')` (`<> ALL('{}')`): PostgreSQL
    SQL for an empty set that takes the type of the value it is compared with."""
    replaced: list[tuple[int, int, str]] = []
    for p in placeholders:
        if p.name in empty_lists:
            match = _IN_BEFORE.search(sql, 0, p.start)
            if match:
                replaced.append((match.start(), p.end, " <> ALL('{}')" if match["not"] else " = ANY('{}')"))
    if replaced:
        placeholders = [p for p in placeholders if not any(a <= p.start < b for a, b, _ in replaced)]
        out, last = [], 0
        for a, b, text in sorted(replaced):
            out += [_sa_text(sql[last:a], [_shift(p, -last) for p in placeholders if last <= p.start < a]), text]
            last = b
        out.append(_sa_text(sql[last:], [_shift(p, -last) for p in placeholders if p.start >= last]))
        return "".join(out)
    starts = {p.start for p in placeholders}
    inserts: list[tuple[int, str]] = []
    for match in _SA_BIND.finditer(sql):
        if match.start() not in starts:
            inserts.append((match.start(), "\\"))
    for p in placeholders:
        if p.start > 0 and (sql[p.start - 1].isalnum() or sql[p.start - 1] in "_\\:"):
            inserts.append((p.start, " "))
        if sql[p.end : p.end + 1] == ":":
            inserts.append((p.end, " "))
    out, last = [], 0
    for at, text in sorted(inserts):
        out.append(sql[last:at])
        out.append(text)
        last = at
    out.append(sql[last:])
    return "".join(out)


def _shift(p, by: int):
    return dataclasses.replace(p, start=p.start + by, end=p.end + by)


def _type_key(name: str, value: Any, declared: dict[str, str], is_list: bool) -> str:
    """The SQL type a value binds as: the declared one, else one read off the value."""
    if name in declared:
        type_ = declared[name].removesuffix("[]")
        if value is None and type_ == "number" and not is_list:
            return "null"  # no SQL type renders a cast for floats on psycopg: write NULL inline
        if type_ == "datetime" and _value_type(value[0] if is_list and value else value) == "datetimetz":
            return "datetimetz"
        return type_
    if is_list:
        first = next((v for v in (value or ()) if v is not None), None)
        return _value_type(first) if first is not None else "null"
    return _value_type(value)


def _value_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, (float, Decimal)):
        return "number"
    if isinstance(value, dt.datetime):
        return "datetime" if value.tzinfo is None else "datetimetz"
    if isinstance(value, dt.date):
        return "date"
    return "string"


class _Boolean(sa.Boolean):
    """A boolean that PostgreSQL receives as `$1::BOOLEAN`, so a NULL is still typed."""

    render_bind_cast = True


_SA_TYPES = {
    "string": sa.String,
    "integer": sa.BigInteger,
    "number": sa.Float,
    "boolean": _Boolean,
    "date": sa.Date,
    "datetime": sa.DateTime,
    "datetimetz": lambda: sa.DateTime(timezone=True),
}


def _bindparam(name: str, type_key: str, is_list: bool):
    if type_key == "null":
        if is_list:
            return sa.bindparam(name, expanding=True)
        # An untyped NULL (`:x IS NULL`) is written inline: PostgreSQL cannot type a bare $1.
        return sa.bindparam(name, literal_execute=True)
    return sa.bindparam(name, type_=_SA_TYPES[type_key](), expanding=is_list)


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


def _sqlite_query_only(dbapi_connection, _record):
    """query_only on top of mode=ro, and no ATTACH at all: an ATTACH creates its file even then."""
    import sqlite3

    dbapi_connection.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA query_only = ON")
    cursor.close()


def _pg_read_only(dbapi_connection, _record):
    """Make every transaction of this session read-only, before anything else runs on it."""
    _session_statement(dbapi_connection, "SET SESSION default_transaction_read_only = on")


def _mysql_read_only(dbapi_connection, _record):
    _session_statement(dbapi_connection, "SET SESSION TRANSACTION READ ONLY")


def _session_statement(dbapi_connection, sql: str) -> None:
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute(sql)
    finally:
        cursor.close()
    dbapi_connection.commit()  # leave no transaction open (a no-op in autocommit mode)


def _mysql_code(orig) -> int | None:
    args = getattr(orig, "args", ())
    return args[0] if args and isinstance(args[0], int) else None


def _db_message(orig) -> str:
    """The first line of the database's own message (pymysql puts it in args[1])."""
    args = getattr(orig, "args", ())
    if len(args) >= 2 and isinstance(args[0], int) and isinstance(args[1], str):
        text = args[1]
    else:
        text = str(orig)
    return _first_line_text(text) or type(orig).__name__


def _first_line_text(text: str) -> str:
    text = text.strip()
    return text.splitlines()[0].strip() if text else ""


def _first_line(exc: Exception) -> str:
    return _first_line_text(str(exc)) or type(exc).__name__


def _mysql_type(code) -> str:
    try:
        from pymysql.constants import FIELD_TYPE
    except ImportError:
        return str(code)
    names = {v: k for k, v in vars(FIELD_TYPE).items() if k.isupper() and isinstance(v, int)}
    return names.get(code, str(code)).lower()
