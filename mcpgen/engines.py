"""SQL engines: where a compiled query runs. DuckDB is built in; any SQLAlchemy URL is the other kind.

An engine takes the spec's SQL once (`prepare`, which also checks it is one read-only
statement) and then runs it per call with bound values, a row cap and a time limit.

>>> engine = DuckDBEngine("default", ":memory:", [], root=".")
>>> query = engine.prepare("SELECT x FROM range(5) t(x) WHERE x < :n")
>>> engine.run(query, {"n": 3}, max_rows=2, timeout=5).rows
[(0,), (1,)]
"""

from __future__ import annotations

import os
import threading
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from .errors import QueryError, QueryTimeout, UnsafeSQL
from .logs import note_rows
from .sql import check_read_only, find_placeholders, rewrite
from .watchdog import WATCHDOG


@dataclass
class QueryResult:
    columns: list[str]
    rows: list[tuple]
    truncated: bool


@dataclass(frozen=True)
class Prepared:
    """A checked statement in the engine's own form, and the parameter names it binds."""

    sql: Any
    names: frozenset[str]


class Engine:
    """The interface every engine has."""

    name: str
    dialect: str  # a sqlglot dialect name, used to read the SQL

    def prepare(self, sql: str, types: Mapping[str, str] | None = None) -> Prepared:
        """Check `sql` and make it ready to run; `types` are the declared parameter types (`param_types`)."""
        raise NotImplementedError

    def run(self, query: Prepared, params: dict[str, Any], max_rows: int, timeout: float) -> QueryResult:
        raise NotImplementedError

    def close(self) -> None:
        """Release connections; the engine is not used afterwards."""


class FairSlots:
    """A semaphore that serves waiters in arrival order: a released slot goes to the oldest waiter.

    (threading.Semaphore lets the releasing thread take the slot straight back, so under load one
    caller can wait past its timeout while others run again and again.)"""

    def __init__(self, slots: int):
        self._lock = threading.Lock()
        self._free = slots
        self._waiters: deque[threading.Event] = deque()

    def acquire(self, timeout: float) -> bool:
        with self._lock:
            if self._free and not self._waiters:
                self._free -= 1
                return True
            granted = threading.Event()
            self._waiters.append(granted)
        if granted.wait(timeout):
            return True
        with self._lock:
            if granted.is_set():  # handed over just as the wait ran out
                return True
            self._waiters.remove(granted)
            return False

    def release(self) -> None:
        with self._lock:
            if self._waiters:
                self._waiters.popleft().set()
            else:
                self._free += 1


class DuckDBEngine(Engine):
    """An in-process DuckDB, locked to the files under `root` once `init` has run."""

    dialect = "duckdb"

    def __init__(
        self,
        name: str,
        database: str,
        init: list[str],
        root: str | os.PathLike,
        threads: int | None = None,
        max_concurrent: int = 8,
        queue_timeout: float = 10.0,
    ):
        self.name = name
        # At most max_concurrent queries at once; a call past that waits up to queue_timeout, first come first served.
        self._slots = FairSlots(max_concurrent)
        self.max_concurrent, self.queue_timeout = max_concurrent, queue_timeout
        root = Path(root).resolve()
        config: dict[str, Any] = {} if threads is None else {"threads": threads}
        if database == ":memory:":
            self._con = duckdb.connect(":memory:", config=config)
        else:
            path = (root / database).resolve()
            if not path.is_file():
                raise QueryError(f"connection '{name}': the DuckDB file {database} does not exist")
            self._con = duckdb.connect(str(path), read_only=True, config=config)
        for number, statement in enumerate(init, 1):
            try:
                self._con.execute(statement)
            except duckdb.Error as exc:
                raise QueryError(f"connection '{name}': init statement {number} failed: {_first_line(exc)}") from None
        # Lock-down, in this order: what may be read, then no other access, then no changes.
        self._con.execute("SET allowed_directories = $dirs", {"dirs": [str(root) + os.sep]})
        for setting in ("enable_external_access", "autoinstall_known_extensions", "autoload_known_extensions"):
            self._con.execute(f"SET {setting} = false")
        self._con.execute("SET lock_configuration = true")

    def prepare(self, sql: str, types: Mapping[str, str] | None = None) -> Prepared:
        check_read_only(sql, self.dialect)
        text = rewrite(sql, "$", self.dialect)
        try:
            statements = duckdb.extract_statements(text)
        except duckdb.Error as exc:
            raise UnsafeSQL(f"DuckDB cannot parse the SQL: {_first_line(exc)}") from None
        if len(statements) != 1 or statements[0].type != duckdb.StatementType.SELECT:
            raise UnsafeSQL("the SQL must be exactly one read-only query")
        return Prepared(text, frozenset(p.name for p in find_placeholders(sql, self.dialect)))

    def run(self, query: Prepared, params: dict[str, Any], max_rows: int, timeout: float) -> QueryResult:
        if not self._slots.acquire(timeout=self.queue_timeout):
            raise QueryError(
                f"connection '{self.name}' is busy: {self.max_concurrent} queries are already "
                f"running and none finished within {self.queue_timeout:g} s; try again shortly"
            )
        try:
            result = self._run(query, params, max_rows, timeout)
        finally:
            self._slots.release()
        note_rows(len(result.rows), result.truncated)
        return result

    def _run(self, query: Prepared, params: dict[str, Any], max_rows: int, timeout: float) -> QueryResult:
        cursor = self._con.cursor()  # one cursor per call: no state shared between calls
        alarm = WATCHDOG.watch(timeout, cursor.interrupt)
        try:
            cursor.execute(query.sql, {k: params[k] for k in query.names})
            columns = [d[0] for d in cursor.description]
            rows = cursor.fetchmany(max_rows + 1)
        except duckdb.InterruptException:
            raise QueryTimeout(f"the query ran longer than {timeout:g} s and was cancelled") from None
        except duckdb.Error as exc:
            raise QueryError(f"the query failed: {_first_line(exc)}") from None
        finally:
            WATCHDOG.cancel(alarm)
            cursor.close()
        return QueryResult(columns, rows[:max_rows], len(rows) > max_rows)

    def close(self) -> None:
        self._con.close()


def create_engine(name: str, connection, root: str | os.PathLike) -> Engine:
    """The engine for one `connections:` entry of mcpgen.yaml."""
    if hasattr(connection, "url"):
        from .sqlalchemy_engine import SQLAlchemyEngine  # imported only when a project uses one

        return SQLAlchemyEngine(name, connection)
    if hasattr(connection, "spark"):
        from .config import expand_env
        from .engines_spark import SparkEngine  # imported only when a project uses one

        return SparkEngine(
            name,
            expand_env(connection.spark),
            connection.max_concurrent,
            connection.queue_timeout,
            connection.conf,
            connection.database,
        )
    return DuckDBEngine(
        name,
        connection.duckdb,
        connection.init,
        root,
        connection.threads,
        connection.max_concurrent,
        connection.queue_timeout,
    )


def _first_line(exc: Exception) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
