"""DuckDB, in process: the default engine, locked to the project's visible files (`file_reach`) before `init` runs.

>>> engine = DuckDBEngine("default", ":memory:", [], root=".")
>>> query = engine.prepare("SELECT x FROM range(5) t(x) WHERE x < :n")
>>> engine.run(query, {"n": 3}, max_rows=2, timeout=5).rows
[(0,), (1,)]
>>> engine.describe(query, timeout=5)
[('x', 'BIGINT')]
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import duckdb

from ..checks import init_problem
from ..errors import QueryError, QueryTimeout, UnsafeSQL
from ..sql.statements import check_read_only, find_placeholders, rewrite
from ..text import first_line
from .deadlines import DEADLINES
from .file_reach import FileReachError, Readable, readable_set
from .protocol import Prepared, QueryResult
from .slots import FairSlots


class DuckDBEngine:
    """An in-process DuckDB, locked to the files under `root` once `init` has run."""

    dialect: str | None = "duckdb"

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
        try:
            reach = readable_set(root)
        except FileReachError as exc:  # a root too broad, or a folder link
            raise FileReachError(f"connection '{name}': {exc}") from None
        config: dict[str, Any] = {} if threads is None else {"threads": threads}
        # Spilled data goes to a private folder of ours, not to .tmp in the project or a shared /tmp.
        self._temp = tempfile.mkdtemp(prefix="mcpgen-duckdb-")
        config["temp_directory"] = self._temp
        if database == ":memory:":
            self._con = duckdb.connect(":memory:", config=config)
        else:
            path = (root / database).resolve()
            if not path.is_file():
                shutil.rmtree(self._temp, ignore_errors=True)
                raise QueryError(f"connection '{name}': the DuckDB file {database} does not exist")
            self._con = duckdb.connect(str(path), read_only=True, config=config)
        try:
            self._lock_down(name, reach, init)
        except BaseException:
            self.close()
            raise

    def _lock_down(self, name: str, reach: Readable, init: list[str]) -> None:
        """What may be read, then no other access; `init` runs inside those limits; then no changes."""
        self._con.execute("SET allowed_directories = $dirs", {"dirs": reach.directories})
        self._con.execute("SET allowed_paths = $paths", {"paths": reach.paths})
        for setting in ("enable_external_access", "autoinstall_known_extensions", "autoload_known_extensions"):
            self._con.execute(f"SET {setting} = false")
        for number, statement in enumerate(init, 1):
            problem = init_problem(statement)
            if problem:
                raise QueryError(f"connection '{name}': init statement {number} {problem}")
            try:
                self._con.execute(statement)
            except duckdb.Error as exc:
                raise QueryError(f"connection '{name}': init statement {number} failed: {first_line(exc)}") from None
        self._con.execute("SET lock_configuration = true")

    def prepare(self, sql: str, types: Mapping[str, str] | None = None) -> Prepared:
        check_read_only(sql, self.dialect)
        text = rewrite(sql, "$", self.dialect)
        try:
            statements = duckdb.extract_statements(text)
        except duckdb.Error as exc:
            raise UnsafeSQL(f"DuckDB cannot parse the SQL: {first_line(exc)}") from None
        if len(statements) != 1 or statements[0].type != duckdb.StatementType.SELECT:
            raise UnsafeSQL("the SQL must be exactly one read-only query")
        return Prepared(text, frozenset(p.name for p in find_placeholders(sql, self.dialect)))

    def run(self, query: Prepared, params: dict[str, Any], max_rows: int, timeout: float) -> QueryResult:
        started = time.perf_counter()
        with self._slots.held(self.name, self.queue_timeout):
            result = self._run(query, params, max_rows, timeout)
        result.seconds = time.perf_counter() - started
        return result

    def _run(self, query: Prepared, params: dict[str, Any], max_rows: int, timeout: float) -> QueryResult:
        cursor = self._con.cursor()  # one cursor per call: no state shared between calls
        alarm = DEADLINES.watch(timeout, cursor.interrupt)
        try:
            cursor.execute(query.sql, {k: params[k] for k in query.names})
            columns = [d[0] for d in cursor.description]
            rows = cursor.fetchmany(max_rows + 1)
        except duckdb.InterruptException:
            raise QueryTimeout(f"the query ran longer than {timeout:g} s and was cancelled") from None
        except duckdb.Error as exc:
            raise QueryError(f"the query failed: {first_line(exc)}") from None
        finally:
            DEADLINES.cancel(alarm)
            cursor.close()
        return QueryResult(columns, rows[:max_rows], len(rows) > max_rows)

    def describe(
        self, query: Prepared, timeout: float = 10.0, known: Mapping[str, Any] | None = None
    ) -> list[tuple[str, str]]:
        """The columns of the query as a relation with every parameter NULL: DuckDB binds it and
        reads no rows (a relation runs only when fetched; twice as fast as `DESCRIBE <query>`).

        A failure is a QueryError whose `position` is the (line, col) DuckDB points at in the SQL:
        only `DESCRIBE` says where, so it runs again that way."""
        cursor = self._con.cursor()
        alarm = DEADLINES.watch(timeout, cursor.interrupt)
        nulls = {n: (known or {}).get(n) for n in query.names}
        try:
            try:
                relation = cursor.sql(query.sql, params=nulls)
                return [(str(name), str(kind)) for name, kind in zip(relation.columns, relation.types)]
            except duckdb.InterruptException:
                raise
            except duckdb.Error:
                rows = cursor.execute("DESCRIBE " + query.sql, nulls).fetchall()
                return [(str(r[0]), str(r[1])) for r in rows]
        except duckdb.InterruptException:
            raise QueryError(f"describing the query took longer than {timeout:g} s") from None
        except duckdb.Error as exc:
            error = QueryError(f"the query does not run on connection '{self.name}': {_message(exc)}")
            error.position = _position(str(exc), len("DESCRIBE "))
            raise error from None
        finally:
            DEADLINES.cancel(alarm)
            cursor.close()

    def close(self) -> None:
        self._con.close()
        shutil.rmtree(self._temp, ignore_errors=True)


def _message(exc: BaseException) -> str:
    """The first line of a DuckDB error, with its "Did you mean" / "Candidate bindings" hint."""
    lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
    hint = next((line for line in lines[1:] if line.startswith(("Did you mean", "Candidate bindings"))), None)
    return lines[0] + (f" ({hint})" if hint else "") if lines else type(exc).__name__


def _position(text: str, prefix: int) -> tuple[int, int] | None:
    """(line, col) in the spec's SQL from DuckDB's "LINE n: ..." and caret lines."""
    match = re.search(r"^LINE (\d+): (.*)\n( *)\^", text, re.MULTILINE)
    if not match:
        return None
    line = int(match[1])
    col = len(match[3]) - len(f"LINE {match[1]}: ") + 1 - (prefix if line == 1 else 0)
    return line, max(col, 1)
