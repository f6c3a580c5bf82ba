"""One pooled SQLAlchemy engine for a `url:` connection: PostgreSQL, MariaDB/MySQL, SQLite, and warehouses.

What differs between databases (read-only setup, time and row limits, describing, timeouts)
is the business of one `Backend` per database, chosen once when the engine is built (see
`backends`). Every call runs in a read-only transaction of its own, which ends with a rollback
and a reset of the session, and reads at most `max_rows + 1` rows. Nothing a
person reads (errors, logs) ever carries a password: see `redact`.

>>> from mcpgen.redaction import redact
>>> redact("connection to postgresql+psycopg://reader:s3cret@db:5432/x failed", ["s3cret"])
'connection to postgresql+psycopg://reader:***@db:5432/x failed'
"""

from __future__ import annotations

import functools
import logging
import os
import re
import threading
import time
from collections.abc import Mapping
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import make_url

from ...errors import QueryCancelled, QueryError, QueryTimeout, SettingError, UnsafeSQL
from ...redaction import redact
from ...spec.config import URLConnection, expand_env, secret_options
from ...sql.nulls import drop_null_orders, null_order_tables
from ...sql.statements import DIALECTS, check_read_only, find_placeholders
from ...text import first_line
from ..control import CURRENT, cut_short
from ..deadlines import Cutoff
from ..protocol import Prepared, QueryResult
from ..slots import Admission
from . import privileges
from .backends import NotOpened, backend_for
from .hold import Hold
from .options import check_options
from .rls import claim_settings, with_claim_settings
from .statements import (
    OMITTED,
    Statement,
    bindparam,
    catalog_columns,
    omitted_tests,
    sa_text,
    strip_semicolon,
    type_key,
)

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
_log = logging.getLogger("mcpgen")
_ITEM_TYPES = ("string", "integer", "number", "boolean", "date", "datetime")
# After a call's time limit, how long the database has to say so itself (statement_timeout) before
# the call stops waiting for it (`Cutoff`).
ANSWER_GRACE = 5.0
# After a cancel, how long the database has to answer the call's cancel request (or its opening) before
# the call stops waiting for it (`Cutoff.shorten`).
CANCEL_GRACE = 1.0


class SQLAlchemyEngine:
    """One pooled SQLAlchemy engine for one `url:` connection of mcpgen.yaml."""

    def __init__(self, name: str, connection: URLConnection):
        self.name = name
        try:
            raw_url = expand_env(connection.url)
            password = expand_env(connection.password) if connection.password is not None else None
        except ValueError as exc:  # names the variable, never a value
            raise QueryError(f"connection '{name}': {exc}") from None
        self._secrets = [s for s in (password,) if s]
        self._secrets += secret_options(connection.connect_args)
        try:
            url = make_url(raw_url)
        except Exception:
            raise SettingError(
                f"connection '{name}': the url is not a valid SQLAlchemy URL (dialect+driver://user@host:port/database)",
                ("url",),
            ) from None
        if url.password:
            self._secrets.append(str(url.password))
        if password is not None:
            url = url.set(password=password)
        if url.drivername in _DEFAULT_DRIVERS:
            url = url.set(drivername=_DEFAULT_DRIVERS[url.drivername])
        self._secrets.append(raw_url)
        self.backend = backend_for(url.get_backend_name())
        self.dialect = DIALECTS.get(self.backend.name)  # None: sqlglot's generic SQL
        self.pool_timeout = float(connection.pool_timeout)
        self.pool_capacity = connection.pool_size + connection.max_overflow
        # the server waits here for one of the pool's connections, in the event loop, not in a thread
        self.admission = Admission(name, self.pool_capacity, self.pool_timeout)
        connect_args = dict(connection.connect_args)
        options: dict[str, Any] = dict(
            pool_pre_ping=True,
            pool_size=connection.pool_size,
            max_overflow=connection.max_overflow,
            pool_timeout=self.pool_timeout,
            hide_parameters=True,
        )
        self._engine = self._create(url, options, connect_args)
        self._hold = Hold(self._engine, connection.pool_size, self.pool_timeout) if self.backend.HOLDS else None
        self._settings = ("connect_args",) if connection.connect_args else ("url",)
        event.listen(self._engine, "do_connect", _connect_cut_short)
        event.listen(self._engine, "connect", self.backend.on_connect)
        self.backend.listen(self._engine)
        self._clauses: dict[tuple, Any] = {}
        self._indexed: dict[Statement, Statement] = {}  # a statement -> the one to run (see `_runnable`)
        self._lock = threading.Lock()
        self.claim_settings = dict(connection.claim_settings)
        self.privileged_role = connection.privileged_role or _privileged_role_default()
        self._powers = privileges.POWERS.get(self.backend.name)
        self._role_refusal: str | None = None  # set when the role was found to do more than read
        self._role_known = self._powers is None  # other backends: nothing to ask
        if self.claim_settings and self.backend.name != "postgresql":
            raise QueryError(f"connection '{name}': claim_settings needs PostgreSQL (row-level security)")

    def _create(self, url, options: dict[str, Any], connect_args: dict[str, Any]) -> sa.Engine:
        """SQLAlchemy's engine for `url` (nothing connects yet); what its driver cannot take is one sentence."""
        try:
            url = self.backend.configure(url, options, connect_args)
        except SettingError as exc:  # options the driver cannot take, said before any connection
            raise SettingError(f"connection '{self.name}': {exc}", exc.setting) from None
        if connect_args:
            options["connect_args"] = connect_args
        try:
            engine = sa.create_engine(url, **options)
        except ModuleNotFoundError as exc:
            hint = _DRIVER_HINTS.get((exc.name or "").split(".")[0])
            hint = f": {hint}" if hint else ""
            message = f"connection '{self.name}' needs the Python package {exc.name}{hint}"
            raise SettingError(message, ("url",)) from None
        except sa_exc.NoSuchModuleError:
            raise SettingError(
                f"connection '{self.name}': no SQLAlchemy dialect for {url.drivername} is installed; "
                "pip install the package that provides it (see docs/databases.md)",
                ("url",),
            ) from None
        except (TypeError, ValueError) as exc:  # the dialect read a value of the URL's query
            raise SettingError(
                f"connection '{self.name}': url: a query parameter's value is not one the driver takes: "
                f"{self._redact(first_line(exc))}",
                ("url",),
            ) from None
        except Exception as exc:
            raise QueryError(f"connection '{self.name}': {self._redact(first_line(exc))}") from None
        try:
            check_options(engine.dialect, url, connect_args)
        except SettingError as exc:
            raise SettingError(f"connection '{self.name}': {self._redact(str(exc))}", exc.setting) from None
        return engine

    # -- preparing ---------------------------------------------------------------------------

    def prepare(self, sql: str, types: Mapping[str, str] | None = None) -> Prepared:
        """Check `sql` is one read-only statement and keep it in `text()` form.

        `types` (optional) gives declared parameter types ("integer", "date", "string[]", ...;
        see `param_types`): with them a NULL or an empty list binds with the right SQL type."""
        check_read_only(sql, self.dialect)
        sql, wrong = omitted_tests(sql, find_placeholders(sql, self.dialect))
        for p in wrong:
            raise UnsafeSQL(
                f"parameter {p.name} is used both as a list (IN :{p.name}) and as a single value "
                f"(line {p.line}, column {p.col}); for all values when it is left out, write "
                f"(:{p.name} IS NULL OR column IN :{p.name})",
                p.line,
                p.col,
            )
        placeholders = find_placeholders(sql, self.dialect)
        names = frozenset(p.name for p in placeholders)
        lists = frozenset(p.name for p in placeholders if p.after_in)
        flags = {n: "integer" for n in names if n.startswith(OMITTED) and n.removeprefix(OMITTED) in lists}
        declared = tuple(sorted((k, v) for k, v in {**(types or {}), **flags}.items() if k in names))
        for name, type_ in declared:
            if type_.removesuffix("[]") not in _ITEM_TYPES:
                raise QueryError(f"parameter {name} has an unknown type {type_!r}")
        source = strip_semicolon(sql, self.dialect)
        return Prepared(Statement(sa_text(source, placeholders), lists, declared, source, placeholders), names)

    # -- running -----------------------------------------------------------------------------

    def run(self, query: Prepared, params: dict[str, Any], max_rows: int, timeout: float) -> QueryResult:
        started = time.perf_counter()
        statement = self._runnable(query.sql, timeout)
        values = {name: params.get(name) for name in query.names}
        for name in query.names:
            if name.startswith(OMITTED):  # `:xs IS NULL` of a list: whether xs was left out (see omitted_tests)
                values[name] = None if params.get(name.removeprefix(OMITTED)) is None else 1
        for name in statement.lists:
            if values[name] is None:
                values[name] = []  # a NULL list matches nothing, as on DuckDB
        fetch = max_rows + 1
        settings = claim_settings(self.claim_settings) if self.claim_settings else []  # before any connection
        deadline = time.monotonic() + timeout
        clause = functools.partial(self._clause, statement)
        try:
            columns, rows = self._in_transaction(
                lambda conn: with_claim_settings(
                    conn, settings, lambda: self.backend.fetch(conn, clause, values, fetch, timeout)
                ),
                timeout,
            )
        except sa_exc.DBAPIError as exc:
            raise self._error(exc, timeout, deadline) from None
        except sa_exc.SQLAlchemyError as exc:
            raise QueryError(f"the query failed: {self._redact(first_line(exc))}") from None
        return QueryResult(columns, rows[:max_rows], len(rows) > max_rows, time.perf_counter() - started)

    def _runnable(self, statement: Statement, timeout: float) -> Statement:
        """The statement a call runs: on its first call, the ORDER BY keys on columns the catalog
        declares NOT NULL lose their NULLS FIRST/LAST spelling (see `mcpgen.sql.nulls`), so an
        index on the column can give the order; the rows and their order are the same."""
        runnable = self._indexed.get(statement)
        if runnable is not None:
            return runnable
        runnable = statement
        tables = null_order_tables(statement.source, self.dialect)
        if tables:
            try:
                columns = self._in_transaction(lambda conn: catalog_columns(conn, tables), timeout)
            except (sa_exc.OperationalError, sa_exc.InterfaceError, sa_exc.TimeoutError, QueryError):
                return statement  # the database is not answering: the call says so; ask again next time
            except Exception:  # the catalog cannot be read (rights, an unusual dialect): keep the spelling
                columns = {}
            sql = drop_null_orders(
                statement.source, self.dialect, lambda schema, table: columns.get((schema, table), {})
            )
            if sql is not None:
                runnable = self.prepare(sql, dict(statement.types)).sql
        with self._lock:
            self._indexed[statement] = runnable
        return runnable

    # -- describing --------------------------------------------------------------------------

    def describe(
        self, query: Prepared, timeout: float = 10.0, known: Mapping[str, Any] | None = None
    ) -> list[tuple[str, str]]:
        """Column names and type names of the result, without running the query's work:
        every parameter is NULL (lists empty) and no row is fetched (LIMIT 0)."""
        statement: Statement = query.sql
        values: dict[str, Any] = {name: ([] if name in statement.lists else None) for name in query.names}
        values.update({k: v for k, v in (known or {}).items() if k in values})
        deadline = time.monotonic() + timeout
        clause = functools.partial(self._clause, statement)
        try:
            return self._in_transaction(lambda conn: self.backend.describe(conn, clause, values, timeout), timeout)
        except sa_exc.DBAPIError as exc:
            raise self._error(exc, timeout, deadline) from None
        except sa_exc.SQLAlchemyError as exc:
            raise QueryError(f"the query failed: {self._redact(first_line(exc))}") from None

    def not_null(self, query: Prepared, timeout: float = 10.0) -> frozenset[str]:
        """The result columns that are a table's column declared NOT NULL, as the database reports
        the origin of each (PostgreSQL; none elsewhere). Nothing runs: every parameter NULL, LIMIT 0."""
        statement: Statement = query.sql
        values: dict[str, Any] = {name: ([] if name in statement.lists else None) for name in query.names}
        deadline = time.monotonic() + timeout
        clause = functools.partial(self._clause, statement)
        try:
            return self._in_transaction(lambda conn: self.backend.not_null(conn, clause, values), timeout)
        except sa_exc.DBAPIError as exc:
            raise self._error(exc, timeout, deadline) from None
        except sa_exc.SQLAlchemyError as exc:
            raise QueryError(f"the query failed: {self._redact(first_line(exc))}") from None

    def column_types(self, timeout: float = 10.0) -> dict[str, dict[str, str]]:
        """Table -> column -> type (as DuckDB names it) of the connection's database, read from its
        catalogue once (the translation reads which names are columns, and MariaDB/MySQL's DATEs)."""
        if self._columns is None:
            deadline = time.monotonic() + timeout
            try:
                self._columns = self._in_transaction(self.backend.columns, timeout)
            except sa_exc.DBAPIError as exc:
                raise self._error(exc, timeout, deadline) from None
            except sa_exc.SQLAlchemyError as exc:
                raise QueryError(f"the catalogue could not be read: {self._redact(first_line(exc))}") from None
        return self._columns

    _columns: dict[str, dict[str, str]] | None = None

    # -- the role ----------------------------------------------------------------------------

    def check_role(self, timeout: float = 10.0) -> tuple[str, str] | None:
        """("error" or "warning", one sentence) when the role may do more than read, else None.
        Raises QueryError when the database cannot be reached (calls check again on connecting)."""
        try:
            self.describe(self.prepare("SELECT 1 AS ok"), timeout)  # the check runs when a transaction opens
        except QueryError:
            if not self._role_refusal:
                raise
        if self._role_refusal:
            return "error", self._role_refusal
        return ("warning", self._role_warning) if self._role_warning else None

    _role_warning: str | None = None

    def _check_role_on(self, conn) -> None:
        """Ask once what the role may do; past that a refused role refuses every call."""
        if self._role_known:
            if self._role_refusal:
                raise QueryError(self._role_refusal)
            return
        try:
            name, powers = self._powers(conn)  # type: ignore[misc]
        except sa_exc.DBAPIError as exc:
            if _cancelled():
                raise QueryCancelled("the call was cancelled before its query started") from None
            raise QueryError(
                f"connection '{self.name}': could not ask the database what its role may do: {self._reason(exc)}"
            ) from None
        self._role_known = True
        if not powers:
            return
        listed = ", ".join(powers[:4]) + (f" and {len(powers) - 4} more" if len(powers) > 4 else "")
        if self.privileged_role == "warn":
            self._role_warning = (
                f"connection '{self.name}': the database role {name} {listed}; mcpgen serves it anyway "
                "because privileged_role is warn: connect as a role that may only read (docs/security.md)"
            )
            _log.warning("%s", self._role_warning)
            return
        self._role_refusal = (
            f"connection '{self.name}': the database role {name} {listed}; connect as a role that may only "
            "read (docs/security.md, 'Functions the lists do not name'), or set privileged_role: warn on the connection"
        )
        raise QueryError(self._role_refusal)

    # -- shared parts ------------------------------------------------------------------------

    def _in_transaction(self, work, timeout: float):
        """`work(conn)` inside the call's own transaction (`Backend.begin`), always ended by
        `Backend.end`, with every wait for the database bounded: `timeout` plus `ANSWER_GRACE`
        after the call got its connection, its socket is shut down (`Cutoff`) and the call fails
        saying so; once the call is cancelled, `CANCEL_GRACE` from then (`cut_short`). (Waiting for the pool
        is bounded by pool_timeout, connecting by connect_timeout or the cancel, `_connect_cut_short`.)"""
        with Cutoff(timeout + ANSWER_GRACE) as cutoff, cut_short(functools.partial(cutoff.shorten, CANCEL_GRACE)):
            try:
                return self._attempts(work, timeout, cutoff)
            except QueryCancelled:
                raise
            except Exception:
                if not cutoff.fired:
                    raise
        if _cancelled():  # the caller gave up first: however the wait ended, a cancel reads as one
            raise QueryCancelled("the call was cancelled and its query stopped")
        raise QueryError(
            f"connection '{self.name}' did not answer within {cutoff.seconds:g} s; "
            "the call was abandoned and its connection closed"
        )

    def _attempts(self, work, timeout: float, cutoff: Cutoff):
        """A pooled connection found dead when the transaction opens is replaced once, and the
        pool with it (nothing has run on it yet)."""
        for attempt in (1, 2):
            conn = self._connect()
            try:
                if _cancelled():  # while it connected: nothing is sent, the connection goes back as it came
                    raise QueryCancelled("the call was cancelled before its query started")
                raw = conn.connection.dbapi_connection
                cutoff.attach(self.backend.socket_of(raw))
                try:
                    try:
                        self.backend.begin(conn, timeout)  # may be sent with the first statement of `work`
                        if not self._role_known or self._role_refusal:
                            self._check_role_on(conn)
                        return work(conn)
                    finally:
                        self._end(conn)
                        cutoff.disarm()  # before the connection goes back to the pool
                except NotOpened as exc:
                    conn.invalidate()
                    if _cancelled():  # the opening failed, or its wait ended, because the call was cancelled
                        raise QueryCancelled("the call was cancelled before its query started") from None
                    if attempt == 1 and getattr(raw, "closed", False) and not cutoff.fired:
                        if self._hold is not None:
                            self._hold.clear()
                        self._engine.dispose(close=False)  # its other idle connections died with it
                        continue
                    raise QueryError(
                        f"connection '{self.name}' could not start a read-only transaction: "
                        f"{self._redact(first_line(exc))}"
                    ) from None
            finally:
                if self._hold is not None:
                    self._hold.give(conn)
                else:
                    conn.close()
        raise AssertionError("unreachable")

    def _end(self, conn) -> None:
        """End the call's transaction; a connection that cannot be reset is not used again."""
        if conn.invalidated:
            return  # the call's connection is gone already (and SQLAlchemy would get another)
        try:
            self.backend.end(conn)
        except Exception:
            conn.invalidate()

    def _connect(self):
        try:
            return self._connected()
        except QueryError:
            if _cancelled():  # the wait for a connection failed, or ended, once the call was cancelled
                raise QueryCancelled("the call was cancelled before its query started") from None
            raise

    def _connected(self):
        try:
            return self._hold.take() if self._hold is not None else self._engine.connect()
        except sa_exc.TimeoutError:
            raise QueryError(
                f"connection '{self.name}' is busy: all {self.pool_capacity} connections were in "
                f"use for {self.pool_timeout:g} s; try again shortly"
            ) from None
        except sa_exc.DBAPIError as exc:
            raise QueryError(f"connection '{self.name}' is unavailable: {self._reason(exc)}") from None
        except sa_exc.SQLAlchemyError as exc:
            raise QueryError(f"connection '{self.name}' is unavailable: {self._redact(first_line(exc))}") from None
        except (TypeError, ValueError, LookupError, AttributeError, OSError) as exc:  # the driver's, on its options
            raise SettingError(
                f"connection '{self.name}': its driver could not take the options of the url and connect_args: "
                f"{self._redact(first_line(exc))}",
                self._settings,
            ) from None

    def _clause(self, statement: Statement, values: dict, prefix: str, suffix: str = ""):
        """The text() clause for these values' types, built once per type signature."""
        declared = dict(statement.types)
        bind_type = self.backend.bind_type
        signature = tuple(
            sorted(
                (name, bind_type(type_key(name, value, declared, name in statement.lists)))
                for name, value in values.items()
            )
        )
        key = (statement, signature, prefix, suffix)
        clause = self._clauses.get(key)
        if clause is None:
            text, signature = self.backend.text(statement, signature, values)
            binds = [bindparam(name, type_, name in statement.lists) for name, type_ in signature]
            clause = sa.text(prefix + text + suffix).bindparams(*binds)
            with self._lock:
                if len(self._clauses) > 4096:
                    self._clauses.clear()
                self._clauses[key] = clause
        return clause

    def _error(self, exc: sa_exc.DBAPIError, timeout: float, deadline: float) -> QueryError:
        if _cancelled():
            return QueryCancelled("the call was cancelled and its query stopped")
        if exc.orig is not None and self.backend.is_timeout(exc.orig, deadline):
            return QueryTimeout(f"the query ran longer than {timeout:g} s and was cancelled")
        if exc.connection_invalidated:
            return QueryError(f"connection '{self.name}' is unavailable: {self._reason(exc)}")
        error = QueryError(f"the query failed: {self._redact(_db_message(exc.orig))}")
        if exc.orig is not None and exc.statement:
            error.near = self.backend.near(exc.orig, exc.statement)
        return error

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
        if self._hold is not None:
            self._hold.clear()
        self._engine.dispose()

    def __repr__(self) -> str:
        return f"SQLAlchemyEngine({self.name!r}, backend={self.backend.name!r})"


# -- helpers --------------------------------------------------------------------------------


def _privileged_role_default() -> str:
    """MCPGEN_PRIVILEGED_ROLE (refuse or warn) for connections that do not say; refuse otherwise."""
    value = os.environ.get("MCPGEN_PRIVILEGED_ROLE", "refuse").strip().lower()
    return "warn" if value == "warn" else "refuse"


def _db_message(orig) -> str:
    """The first line of the database's own message (pymysql puts it in args[1])."""
    args: tuple[Any, ...] = getattr(orig, "args", ())
    if len(args) >= 2 and isinstance(args[0], int) and isinstance(args[1], str):
        text = args[1]
    else:
        text = str(orig)
    return first_line(text) or type(orig).__name__


def _connect_cut_short(dialect, record, cargs, cparams):
    """SQLAlchemy's `do_connect` for a call a cancel may stop (one the server runs): the driver connects
    in a thread of its own, and a cancel ends the call's wait at once (QueryCancelled; the pool counts
    the connection as never made). A connection that comes after all is closed, not pooled. The wait is
    the driver's connect timeout's, as without a cancel. Other calls connect as SQLAlchemy does (None)."""
    if CURRENT.get() is None:
        return None
    lock, done = threading.Lock(), threading.Event()
    outcome: list = []  # (connection, None) or (None, error); `False` once the call stopped waiting

    def connect() -> None:
        result: tuple[Any, Exception | None]
        try:
            result = (dialect.connect(*cargs, **cparams), None)
        except Exception as exc:
            result = (None, exc)
        with lock:
            if outcome:  # abandoned
                if result[0] is not None:
                    result[0].close()
                return
            outcome.append(result)
        done.set()

    threading.Thread(target=connect, name="mcpgen-connect", daemon=True).start()
    with cut_short(done.set):
        done.wait()
    with lock:
        if not outcome:
            outcome.append(False)
            raise QueryCancelled("the call was cancelled before its query started")
    connection, error = outcome[0]
    if error is not None:
        raise error
    return connection


def _cancelled() -> bool:
    """Whether the running call was cancelled (a client's notifications/cancelled, `mcpgen.engines.control`)."""
    control = CURRENT.get()
    return control is not None and control.cancelled
