"""Apache Spark over Spark Connect: a spec's query runs as a Spark SQL job on a cluster.

A connection names the Spark Connect endpoint (`spark: sc://host:15002`). The SQL, translated
to Spark SQL when the project loads, is sent with `spark.sql(text, args=...)`: values are bound
as named parameters by Spark itself, never spliced. Each call carries a tag of its own, so the
time limit cancels exactly its job (`interruptTag`). The client is `pyspark[connect]`
(`pip install "mcpgen[spark]"`), imported only when a project has a Spark connection.

Read-only: the statement must pass `check_read_only` (Spark dialect), and it is only ever sent
inside `SELECT * FROM (...)`, which Spark's own parser accepts around a query and nothing else.
"""

from __future__ import annotations

import contextvars
import datetime as dt
import importlib.util
import itertools
import logging
import os
import threading
import time
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import QueryCancelled, QueryError, QueryTimeout, SettingError
from ..sql.statements import check_read_only, find_placeholders
from ..text import first_line
from .control import CURRENT, attached
from .deadlines import DEADLINES
from .protocol import Prepared, QueryResult
from .slots import Admission, FairSlots

DIALECT = "spark"
RETRIES = 2  # per RPC when the server cannot be reached; a call to a stopped cluster fails within ~1 s
DOWN_FOR = 2.0  # after the cluster was unreachable, calls fail at once for this many seconds
_ids = itertools.count()
# Declared parameter types -> Spark SQL types.
SPARK_TYPES = {
    "string": "STRING",
    "integer": "BIGINT",
    "number": "DOUBLE",
    "boolean": "BOOLEAN",
    "date": "DATE",
    "datetime": "TIMESTAMP_NTZ",
}


# A value that stands in for each type when `describe` binds parameters (Spark then analyzes the
# query and runs nothing); an integer 0 also makes a `LIMIT :n` a LIMIT 0.
SAMPLES = {
    "string": "",
    "integer": 0,
    "number": 0.0,
    "boolean": False,
    "date": dt.date(2000, 1, 1),
    "datetime": dt.datetime(2000, 1, 1),
}


@dataclass(frozen=True)
class _Statement:
    """The query cut at its placeholders, to bind a NULL or an empty list with its type."""

    parts: tuple[str, ...]  # text, name, text, name, ..., text
    types: Mapping[str, str]  # parameter name -> declared type (`date[]` for arrays)

    def text(self, values: Mapping[str, Any]) -> str:
        """The statement, with `CAST(:name AS type)` where a value is NULL or an empty list
        (Spark gives an untyped NULL the type VOID, which LIMIT, CASE WHEN and explode() refuse)."""
        out = list(self.parts)
        for i in range(1, len(out), 2):
            name = out[i]
            empty = values.get(name) is None or values.get(name) == []
            out[i] = f"CAST(:{name} AS {_spark_type(self.types[name])})" if empty and name in self.types else f":{name}"
        return "".join(out)


class SparkUnavailable(QueryError):
    """The Spark Connect server cannot be reached."""


def prepare_statement(sql: str, types: Mapping[str, str] | None = None) -> Prepared:
    """The checked statement as Spark runs it: the query inside `SELECT * FROM (...)`, so nothing
    but a query can reach Spark's parser, and `IN :list` as one bound array.

    >>> statement = prepare_statement("SELECT n FROM t WHERE k IN :ks", {"ks": "string[]"}).sql
    >>> statement.text({"ks": ["a"]})
    'SELECT * FROM (\\nSELECT n FROM t WHERE k IN (SELECT explode(:ks))\\n) AS mcpgen_q'
    >>> statement.text({"ks": []})
    'SELECT * FROM (\\nSELECT n FROM t WHERE k IN (SELECT explode(CAST(:ks AS ARRAY<STRING>)))\\n) AS mcpgen_q'
    """
    check_read_only(sql, DIALECT)
    sql = sql.strip().rstrip(";")
    parts, last = ["SELECT * FROM (\n"], 0
    placeholders = find_placeholders(sql, DIALECT)
    for p in placeholders:
        # IN :codes -> IN (SELECT explode(:codes)): the list binds as one array value.
        parts[-1] += sql[last : p.start] + ("(SELECT explode(" if p.after_in else "")
        parts += [p.name, "))" if p.after_in else ""]
        last = p.end
    parts[-1] += sql[last:] + "\n) AS mcpgen_q"
    declared = {n: t for n, t in (types or {}).items() if t.rstrip("[]") in SPARK_TYPES}
    return Prepared(_Statement(tuple(parts), declared), frozenset(p.name for p in placeholders))


class SparkEngine:
    """One Spark Connect session shared by all calls (its gRPC channel is thread-safe).

    Statements are made by `prepare_statement`, which needs no session."""

    dialect: str | None = DIALECT

    def __init__(
        self,
        name: str,
        remote: str,
        max_concurrent: int = 4,
        queue_timeout: float = 10.0,
        conf: Mapping[str, str] | None = None,
        database: str | None = None,
    ):
        if importlib.util.find_spec("pyspark") is None:
            raise QueryError(f"connection '{name}' needs the Spark Connect client: pip install \"mcpgen[spark]\"")
        _quiet_pyspark()
        from pyspark.sql.connect.client import DefaultChannelBuilder

        try:
            DefaultChannelBuilder(remote)  # reads the URL; connects nowhere
        except Exception:  # its message shows the URL, which may hold a token
            raise SettingError(
                f"connection '{name}': spark: the Spark Connect URL is not valid (sc://host:port, options after /;)",
                ("spark",),
            ) from None
        self.name, self.remote, self.database = name, remote, database
        self.max_concurrent, self.queue_timeout = max_concurrent, queue_timeout
        self._slots = FairSlots(max_concurrent)
        self.admission = Admission(name, max_concurrent, queue_timeout)  # the server waits here, threadless
        self._conf = {"spark.sql.timestampType": "TIMESTAMP_NTZ", **(conf or {})}
        self._lock = threading.Lock()
        self._session: Any = None
        self._down_since: float | None = None
        self._down_reason = ""

    # -- the session ---------------------------------------------------------------------------

    def _spark(self) -> Any:
        """The session, opened on first use and again after the cluster was unreachable."""
        with self._lock:
            if self._down_since is not None and time.monotonic() - self._down_since < DOWN_FOR:
                raise SparkUnavailable(f"connection '{self.name}' is unavailable: {self._down_reason}")
            if self._session is None:
                try:
                    self._session = _open_session(self.remote, self._conf, self.database)
                except SettingError as exc:
                    raise SettingError(f"connection '{self.name}': {exc}", exc.setting) from None
            return self._session

    def _open(self) -> Any:
        try:
            return self._spark()
        except QueryError:
            raise
        except Exception as exc:  # pyspark's own errors: the server did not answer the session's first RPCs
            raise self._lost(_message(exc)) from None

    def _lost(self, reason: str) -> SparkUnavailable:
        with self._lock:
            self._down_since, self._down_reason = time.monotonic(), reason
            session, self._session = self._session, None
        if session is not None:
            try:
                session.client.close()
            except Exception:
                pass
        return SparkUnavailable(f"connection '{self.name}' is unavailable: {reason}")

    def _bounded(self, work: Callable[[Any], Any], timeout: float) -> Any:
        """`work(session)` in a thread of its own, given up on after `timeout` seconds: opening the
        session and the catalogue's calls are not jobs that a tag could cancel."""
        box: dict[str, Any] = {}
        done = threading.Event()

        def run() -> None:
            try:
                box["value"] = work(self._open())
            except Exception as exc:  # handed to the caller
                box["error"] = exc
            finally:
                done.set()

        threading.Thread(target=run, daemon=True, name=f"mcpgen-spark-{self.name}").start()
        if not done.wait(timeout):
            raise SparkUnavailable(f"connection '{self.name}' did not answer within {timeout:g} s")
        if "error" in box:
            error = box["error"]
            if isinstance(error, QueryError):
                raise error
            raise QueryError(f"connection '{self.name}': Spark's catalogue could not be read: {_message(error)}")
        return box.get("value")

    def check_role(self, timeout: float = 10.0) -> None:
        """Spark Connect has no database role to ask about (see docs/databases.md); the session is opened, so
        that a setting Spark refuses (`conf`, `database`) is said at start (SettingError). Raises QueryError
        when the cluster does not answer (the first call opens it again)."""
        self._bounded(lambda spark: None, timeout)

    def column_types(self, timeout: float = 10.0) -> dict[str, dict[str, str]]:
        """Table -> column -> type (as DuckDB names them) of every database's tables and views and of the
        session's temporary views, read from Spark's catalogue once (the translation reads which names are
        columns): keyed `database.table`, and `table` for the one an unqualified name finds (a temporary
        view, else the current database's table)."""
        if self._columns is None:
            self._columns = self._bounded(_catalogue, timeout)
        return self._columns

    _columns: dict[str, dict[str, str]] | None = None

    # -- the Engine interface ------------------------------------------------------------------

    def prepare(self, sql: str, types: Mapping[str, str] | None = None) -> Prepared:
        return prepare_statement(sql, types)

    def run(self, query: Prepared, params: dict[str, Any], max_rows: int, timeout: float) -> QueryResult:
        started = time.perf_counter()
        with self._slots.held(self.name, self.queue_timeout):
            table = self._execute(query, params, timeout, lambda df: df.limit(max_rows + 1))
        columns = list(table.column_names)
        rows = list(zip(*(column.to_pylist() for column in table.columns))) if columns else []
        return QueryResult(columns, rows[:max_rows], len(rows) > max_rows, time.perf_counter() - started)

    def describe(
        self, query: Prepared, timeout: float, known: Mapping[str, Any] | None = None
    ) -> list[tuple[str, str]]:
        """Column names and Spark types; Spark analyzes the query and runs no job."""
        types = query.sql.types
        samples = {n: _sample(types[n]) if n in types else None for n in query.names}
        samples.update({k: v for k, v in (known or {}).items() if k in samples})
        schema = self._execute(query, samples, timeout, None)
        return [(f.name, f.dataType.simpleString()) for f in schema.fields]

    def close(self) -> None:
        with self._lock:
            session, self._session = self._session, None
        if session is not None:
            try:
                session.stop()
            except Exception:  # already gone with the cluster
                pass

    # -- one call ------------------------------------------------------------------------------

    def _execute(self, query: Prepared, params: dict[str, Any], timeout: float, shape) -> Any:
        """The Arrow table of the query (`shape` limits it), or its schema when `shape` is None."""
        spark = self._open()
        from pyspark.errors import PySparkException

        tag = f"mcpgen-{os.getpid()}-{next(_ids)}"
        fired = threading.Event()

        def cancel() -> None:
            fired.set()
            spark.interruptTag(tag)

        args = {k: params[k] for k in query.names}
        spark.addTag(tag)
        alarm = DEADLINES.watch(timeout, cancel)
        try:
            done: list[float | None] = [None]  # the share of its stages' tasks done, from _stage_progress
            token = _PROGRESS.set(done)
            try:
                with attached(lambda: spark.interruptTag(tag), lambda: done[0]):  # cancel: exactly its job
                    df = spark.sql(query.sql.text(args), args=args)
                    return df.schema if shape is None else shape(df).toArrow()
            finally:
                _PROGRESS.reset(token)
        except PySparkException as exc:
            control = CURRENT.get()
            if control is not None and control.cancelled:
                raise QueryCancelled("the call was cancelled and its Spark job stopped") from None
            if fired.is_set():
                raise QueryTimeout(f"the query ran longer than {timeout:g} s and was cancelled") from None
            if _unreachable(exc):
                raise self._lost(_message(exc)) from None
            raise QueryError(f"the query failed: {_message(exc)}") from None
        finally:
            DEADLINES.cancel(alarm)
            spark.removeTag(tag)


# Spark Connect calls a session's progress handlers in the thread that runs the query, so the
# handler finds the running call's slot through the context.
_PROGRESS: contextvars.ContextVar[list[float | None] | None] = contextvars.ContextVar("mcpgen_spark", default=None)


def _stage_progress(stages, inflight_tasks: int, operation_id: str | None, done: bool) -> None:
    """Percent of the tasks of the job's stages so far that are done (later stages may lower it)."""
    slot = _PROGRESS.get()
    if slot is None or not stages:
        return
    total = sum(stage.num_tasks for stage in stages)
    if total:
        slot[0] = 100.0 * sum(stage.num_completed_tasks for stage in stages) / total


def _spark_type(declared: str) -> str:
    """`date[]` -> `ARRAY<DATE>`."""
    if declared.endswith("[]"):
        return f"ARRAY<{SPARK_TYPES[declared[:-2]]}>"
    return SPARK_TYPES[declared]


def _sample(declared: str) -> Any:
    return [SAMPLES[declared[:-2]]] if declared.endswith("[]") else SAMPLES[declared]


def _quiet_pyspark() -> None:
    """pyspark warns on stderr about pandas versions (mcpgen does not use pandas) and about each
    exhausted retry (mcpgen reports the unreachable cluster itself, in one sentence)."""
    warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas", category=FutureWarning)
    warnings.filterwarnings("ignore", message=r"\[RETRIES_EXCEEDED\]", category=UserWarning)


def _open_session(remote: str, conf: Mapping[str, str], database: str | None) -> Any:
    """A session with `conf` set and `database` current; SettingError naming the one Spark refuses."""
    _quiet_pyspark()
    from pyspark.errors import PySparkException
    from pyspark.logger import PySparkLogger
    from pyspark.sql.connect.client.retries import DefaultPolicy
    from pyspark.sql.connect.session import SparkSession

    for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger"):
        # pyspark logs every failed query with its plan on stderr; mcpgen reports it in one line instead.
        PySparkLogger.getLogger(name).setLevel(logging.CRITICAL + 1)
    session = SparkSession.builder.remote(remote).create()
    # The default policy retries an unreachable server for about 10 minutes; a tool call should not.
    session.client.set_retry_policies([DefaultPolicy(max_retries=RETRIES, initial_backoff=100, max_backoff=500)])
    setting: tuple[str, ...] = ()
    try:
        for key, value in conf.items():
            setting = ("conf", key)
            session.conf.set(key, value)
        if database:
            setting = ("database",)
            session.catalog.setCurrentDatabase(database)
    except PySparkException as exc:
        if _unreachable(exc):
            raise
        session.client.close()
        said = _message(exc)
        if setting[0] == "conf" and conf[setting[1]]:
            said = said.replace(conf[setting[1]], "...")  # a conf value may be a secret
        raise SettingError(f"{': '.join(setting)}: Spark refuses it: {said}", setting) from None
    session.registerProgressHandler(_stage_progress)  # type: ignore[arg-type]  # any callable; it is only called
    return session


# Spark's column types as DuckDB names them (others: VARCHAR), as the other engines' catalogues give them.
_DUCKDB_TYPES = {
    "date": "DATE",
    **dict.fromkeys(("timestamp", "timestamp_ntz"), "TIMESTAMP"),
    **dict.fromkeys(("tinyint", "smallint", "int", "bigint"), "BIGINT"),
    **dict.fromkeys(("float", "double"), "DOUBLE"),
    "decimal": "DECIMAL",
}


def _catalogue(spark: Any) -> dict[str, dict[str, str]]:
    """`SparkEngine.column_types` read through the session `spark`."""
    tables: dict[str, dict[str, str]] = {}
    views: set[str] = set()  # the session's temporary views, listed with every database
    current = spark.catalog.currentDatabase().lower()
    for database in spark.catalog.listDatabases():
        for table in spark.catalog.listTables(database.name):
            temporary = table.isTemporary and not table.namespace  # the session's own, not global_temp's
            if temporary and table.name.lower() in views:
                continue
            parts = (table.name,) if temporary else (database.name, table.name)
            listed = spark.catalog.listColumns(".".join(f"`{p.replace('`', '``')}`" for p in parts))
            columns = {c.name.lower(): _DUCKDB_TYPES.get(c.dataType.split("(")[0].lower(), "VARCHAR") for c in listed}
            if temporary:  # an unqualified name finds it first
                views.add(table.name.lower())
                tables[table.name.lower()] = columns
                continue
            tables[f"{database.name}.{table.name}".lower()] = columns
            if database.name.lower() == current and table.name.lower() not in views:
                tables[table.name.lower()] = columns
    return tables


def _unreachable(exc: Exception) -> bool:
    text = str(exc)
    return any(s in text for s in ("UNAVAILABLE", "Connection refused", "failed to connect", "SESSION_NOT_FOUND"))


def _message(exc: Exception) -> str:
    """Spark's message without the JVM stack trace, the plan or the server's address."""
    text = str(exc)
    if text.startswith("<_MultiThreadedRendezvous") or "StatusCode.UNAVAILABLE" in text:
        return "the Spark Connect server does not answer (is the cluster running?)"
    return first_line(exc)[:300]
