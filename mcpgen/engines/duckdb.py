"""DuckDB, in process: the default engine, locked to the project's visible files (`file_reach`) before `init` runs.

>>> engine = DuckDBEngine("default", ":memory:", [], root=".")
>>> query = engine.prepare("SELECT x FROM range(5) t(x) WHERE x < :n")
>>> engine.run(query, {"n": 3}, max_rows=2, timeout=5).rows
[(0,), (1,)]
>>> engine.describe(query, timeout=5)
[('x', 'BIGINT')]
"""

from __future__ import annotations

import functools
import itertools
import os
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from ..checks import Catalogue, catalogue_of, function_problems, init_problem
from ..errors import QueryCancelled, QueryError, QueryTimeout, SettingError, UnsafeSQL
from ..text import first_line, line_col
from . import snapshots
from .control import attached, watched
from .deadlines import DEADLINES
from .file_reach import FileReachError, Readable, readable_set
from .protocol import Prepared, QueryResult
from .slots import Admission, FairSlots

# How each declared parameter type is written in DuckDB. A placeholder is cast to it, so a NULL binds
# with its type (`:since + INTERVAL 3 MONTH` with a NULL date) and a number sent as 3 or as 3.0 binds
# the same way. A datetime is cast only to describe the query: a call binds a zoned value as
# TIMESTAMP WITH TIME ZONE and a naive one as TIMESTAMP, and casting one to the other would shift it.
_TYPES = {
    "string": "VARCHAR",
    "integer": "BIGINT",
    "number": "DOUBLE",
    "boolean": "BOOLEAN",
    "date": "DATE",
    "datetime": "TIMESTAMP",
}
_RUN_UNCAST = frozenset({"datetime"})


@dataclass(frozen=True)
class _Typed(Prepared):
    """A DuckDB statement, with the text `describe` binds: every placeholder cast to its declared type."""

    described: str = ""
    # Per piece of `described`: its offset there, its offset in the spec's SQL, whether it is copied text.
    anchors: tuple[tuple[int, int, bool], ...] = ()
    source: str = ""
    uncast: frozenset[str] = frozenset()  # bound as the value's own type, but as declared when NULL


def bind_text(
    sql: str, types: Mapping[str, str], dialect: str | None = "duckdb", skip: frozenset[str] = frozenset()
) -> tuple[str, tuple[tuple[int, int, bool], ...]]:
    """`sql` with `:name` written `$name` (a list after IN as a subquery over it), cast to the declared
    type (`types`, from `param_types`) but for the type names in `skip`; and where each piece of the
    result comes from in `sql`, so DuckDB's error positions point into the spec.

    >>> bind_text("SELECT :d + INTERVAL 1 DAY WHERE x IN :ids", {"d": "date", "ids": "integer[]"})[0]
    'SELECT CAST($d AS DATE) + INTERVAL 1 DAY WHERE x IN (SELECT unnest(CAST($ids AS BIGINT[])))'
    """
    from ..sql.statements import find_placeholders  # here: a kept statement (`load.checked`) loads no sqlglot

    out: list[str] = []
    anchors: list[tuple[int, int, bool]] = []
    size, last = 0, 0
    for p in find_placeholders(sql, dialect):
        written = _bound(p.name, types.get(p.name), skip, p.after_in)
        for piece, origin, copied in ((sql[last : p.start], last, True), (written, p.start, False)):
            anchors.append((size, origin, copied))
            out.append(piece)
            size += len(piece)
        last = p.end
    anchors.append((size, last, True))
    out.append(sql[last:])
    return "".join(out), tuple(anchors)


def _bound(name: str, declared: str | None, skip: frozenset[str], after_in: bool) -> str:
    item = (declared or "").removesuffix("[]")
    kind = _TYPES.get(item) if item not in skip else None
    value = f"${name}" if kind is None else f"CAST(${name} AS {kind}{'[]' if declared != item else ''})"
    return f"(SELECT unnest({value}))" if after_in else value


class DuckDBEngine:
    """An in-process DuckDB, locked to the files under `root` once `init` has run."""

    dialect: str | None = "duckdb"

    def __init__(
        self,
        name: str,
        database: str,
        init: list[str],
        root: str | os.PathLike,
        threads: int | str | None = None,
        max_concurrent: int = 8,
        queue_timeout: float = 10.0,
        state: str | None = None,
        copy: bool = False,
    ):
        """`state`: of the project's data (`load.checked.data_state`); with it, an in-memory database is
        opened from the snapshot `init` left in this state (`snapshots`), built when there is none; with
        `copy`, the snapshot is copied into memory rather than read as a file (a server: a query on the
        read-only file takes about twice as long)."""
        self.name = name
        self._catalogue: Catalogue | None = None
        self.snapshot: Path | None = None  # the DuckDB file of `snapshots` this connection reads, if any
        # At most max_concurrent queries at once; a call past that waits, first come first served, until none finished for queue_timeout.
        self._slots = FairSlots(max_concurrent)
        self.admission = Admission(name, max_concurrent, queue_timeout)  # the server waits here, threadless
        self.max_concurrent, self.queue_timeout = max_concurrent, queue_timeout
        root = self._root = Path(root).resolve()
        try:
            reach = readable_set(root)
        except FileReachError as exc:  # a root too broad, or a folder link
            raise FileReachError(f"connection '{name}': {exc}") from None
        # `auto` and None: DuckDB's default, every core (see mcpgen.spec.config.DuckDBConnection.threads).
        config: dict[str, Any] = {} if threads in (None, "auto") else {"threads": threads}
        # Spilled data goes to a private folder of ours, not to .tmp in the project or a shared /tmp.
        self._temp = tempfile.mkdtemp(prefix="mcpgen-duckdb-")
        config["temp_directory"] = self._temp
        where = snapshots.folder(root, state, init) if state is not None and init and database == ":memory:" else None
        if where is not None:
            fill = functools.partial(_fill, name=name, reach=reach, init=init, root=root)
            self.snapshot = snapshots.kept(where) or snapshots.keep(where, fill, config)
        opened = None
        if self.snapshot is not None and copy:
            opened = snapshots.copied(self.snapshot, config, functools.partial(_limit, reach=reach))
        elif self.snapshot is not None:
            opened = snapshots.opened(self.snapshot, config)
        limited = opened is not None and copy  # a copy is limited before it is made
        if opened is not None:  # init ran when it was built: its tables, views and macros are there
            self._con, init = opened, []
        elif database == ":memory:":
            self.snapshot = None
            self._con = duckdb.connect(":memory:", config=config)
        else:
            path = (root / database).resolve()
            if not path.is_file():
                shutil.rmtree(self._temp, ignore_errors=True)
                raise SettingError(f"connection '{name}': the DuckDB file {database} does not exist", ("duckdb",))
            try:
                self._con = duckdb.connect(str(path), read_only=True, config=config)
            except duckdb.Error as exc:  # not a DuckDB file, or one another process holds for writing
                shutil.rmtree(self._temp, ignore_errors=True)
                message = f"connection '{name}': the DuckDB file {database} cannot be opened: {_message(exc)}"
                raise SettingError(message, ("duckdb",)) from None
        try:
            self._lock_down(name, None if limited else reach, init, root)
        except BaseException:
            self.close()
            raise

    def _lock_down(self, name: str, reach: Readable | None, init: list[str], root: Path) -> None:
        """What may be read, then no other access (`reach` None: set already); `init` runs inside those
        limits; then no changes."""
        if reach is not None:
            _limit(self._con, reach)
        _run_init(self._con, name, init, root)
        # Calls run on cursors made here, before the lock: a cursor's progress settings are its own, and
        # only an unlocked one can turn them on (query_progress() then says how far a query is). Tracking
        # progress costs every query, so a call whose progress nobody reads runs on a cursor without it.
        self._cursors = [self._con.cursor() for _ in range(self.max_concurrent)]
        self._watched = [self._progress_cursor() for _ in range(self.max_concurrent)]
        self._con.execute("SET lock_configuration = true")

    def _progress_cursor(self) -> duckdb.DuckDBPyConnection:
        cursor = self._con.cursor()
        for setting in ("enable_progress_bar = true", "enable_progress_bar_print = false", "progress_bar_time = 0"):
            cursor.execute(f"SET {setting}")
        return cursor

    def _functions(self) -> Catalogue:
        """The connection's function catalogue, read at the first query that calls a function (under
        _PREPARING): after init, so its macros are the project's own."""
        if self._catalogue is None:
            self._catalogue = catalogue_of(self._con)
        return self._catalogue

    def prepare(self, sql: str, types: Mapping[str, str] | None = None) -> Prepared:
        """Check `sql` and write its placeholders for DuckDB, each cast to its declared type in `types`."""
        from ..sql.statements import check_read_only  # here: a kept statement (`load.checked`) loads no sqlglot

        check_read_only(sql, self.dialect)
        with _PREPARING:
            return self._prepare(sql, types)

    def _prepare(self, sql: str, types: Mapping[str, str] | None) -> Prepared:
        from ..sql.statements import find_placeholders

        for line, col, reason in function_problems(sql, self._functions):
            raise UnsafeSQL(f"the SQL {reason} (line {line}, column {col})", line, col)
        names = frozenset(p.name for p in find_placeholders(sql, self.dialect))
        if not types or not names & types.keys():
            text, anchors = bind_text(sql, {}, self.dialect)
            _check_one_select(text, anchors, sql)
            return Prepared(text, names)
        described, anchors = bind_text(sql, types, self.dialect)
        _check_one_select(described, anchors, sql)
        run, _ = bind_text(sql, types, self.dialect, skip=_RUN_UNCAST)
        uncast = frozenset(n for n in names if types.get(n, "").removesuffix("[]") in _RUN_UNCAST)
        return _Typed(run, names, described, anchors, sql, uncast)

    def run(self, query: Prepared, params: dict[str, Any], max_rows: int, timeout: float) -> QueryResult:
        started = time.perf_counter()
        with self._slots.held(self.name, self.queue_timeout):
            result = self._run(query, params, max_rows, timeout)
        result.seconds = time.perf_counter() - started
        return result

    def _run(self, query: Prepared, params: dict[str, Any], max_rows: int, timeout: float) -> QueryResult:
        # A cursor of the pool, one per slot: the SQL is one read-only query and settings are locked,
        # so nothing a call does stays on the cursor for the next one.
        pool = self._watched if watched() else self._cursors
        cursor = pool.pop()
        running = _Running(cursor)
        alarm = DEADLINES.watch(timeout, running.interrupt)
        try:
            with attached(running.interrupt, cursor.query_progress if pool is self._watched else None) as control:
                try:
                    values = {k: params[k] for k in query.names}
                    cursor.execute(_text_for(query, values), values)
                    columns = [d[0] for d in cursor.description]
                    rows = cursor.fetchmany(max_rows + 1)
                except duckdb.InterruptException:
                    if control is not None and control.cancelled:
                        raise QueryCancelled("the call was cancelled and its query stopped") from None
                    raise QueryTimeout(f"the query ran longer than {timeout:g} s and was cancelled") from None
                except duckdb.Error as exc:
                    raise QueryError(f"the query failed: {first_line(exc)}") from None
        finally:
            DEADLINES.cancel(alarm)
            running.end()
            pool.append(cursor)
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
        text = query.described if isinstance(query, _Typed) else query.sql
        try:
            try:
                relation = cursor.sql(text, params=nulls)
                return [(str(name), str(kind)) for name, kind in zip(relation.columns, relation.types)]
            except duckdb.InterruptException:
                raise
            except duckdb.Error:
                rows = cursor.execute("DESCRIBE " + text, nulls).fetchall()
                return [(str(r[0]), str(r[1])) for r in rows]
        except duckdb.InterruptException:
            raise QueryError(f"describing the query took longer than {timeout:g} s") from None
        except duckdb.Error as exc:
            failed = _where_files_are(_message(exc), self._root)
            error = QueryError(f"the query does not run on connection '{self.name}': {failed}")
            position = _position(str(exc), len("DESCRIBE "), text)
            if isinstance(query, _Typed):
                position = _in_source(query.anchors, query.source, text, position)
            error.position = position
            raise error from None
        finally:
            DEADLINES.cancel(alarm)
            cursor.close()

    def close(self) -> None:
        self._con.close()
        shutil.rmtree(self._temp, ignore_errors=True)


def _fill(con: duckdb.DuckDBPyConnection, name: str, reach: Readable, init: list[str], root: Path) -> bool:
    """A snapshot being built (`snapshots.keep`): what may be read, then no other access; then `init`,
    inside those limits (QueryError if it fails). Whether the file holds all that `init` left: not
    when it changed a setting, set a variable, attached a database or made a temporary object."""
    _limit(con, reach)
    before = con.execute(_HELD).fetchone()
    _run_init(con, name, init, root)
    return con.execute(_HELD).fetchone() == before and con.execute(_TEMPORARY).fetchone() == (0,)


def _limit(con: duckdb.DuckDBPyConnection, reach: Readable) -> None:
    """What `con` may read (`file_reach`), then no other access."""
    con.execute("SET allowed_directories = $dirs", {"dirs": reach.directories})
    con.execute("SET allowed_paths = $paths", {"paths": reach.paths})
    for setting in ("enable_external_access", "autoinstall_known_extensions", "autoload_known_extensions"):
        con.execute(f"SET {setting} = false")


# What a connection holds outside its database file: settings, variables and databases (secrets need an
# extension, which init may not load)...
_HELD = """
SELECT (SELECT list((name, value) ORDER BY name) FROM duckdb_settings()),
    (SELECT list(name ORDER BY name) FROM duckdb_variables()),
    (SELECT list(database_name ORDER BY database_name) FROM duckdb_databases())
"""
# ...and temporary objects, of which a new connection has none (read once, after init: listing the functions
# is most of the check's cost).
_TEMPORARY = """
SELECT (SELECT count(*) FROM duckdb_tables() WHERE temporary)
    + (SELECT count(*) FROM duckdb_views() WHERE temporary AND NOT internal)
    + (SELECT count(*) FROM duckdb_sequences() WHERE temporary)
    + (SELECT count(*) FROM duckdb_functions() WHERE database_name = 'temp' AND NOT internal)
    + (SELECT count(*) FROM duckdb_types() WHERE database_name = 'temp' AND NOT internal)
"""


def _run_init(con: duckdb.DuckDBPyConnection, name: str, init: list[str], root: Path) -> None:
    """`init`, one statement at a time (QueryError if one is refused or fails)."""
    for number, statement in enumerate(init, 1):
        problem = init_problem(statement)
        if problem:
            raise QueryError(f"connection '{name}': init statement {number} {problem}")
        try:
            con.execute(statement)
        except duckdb.Error as exc:
            failed = _where_files_are(first_line(exc), root)
            raise QueryError(f"connection '{name}': init statement {number} failed: {failed}") from None


def _text_for(query: Prepared, values: dict[str, Any]) -> str:
    """The text a call runs: a NULL datetime binds as the declared TIMESTAMP (a value, as its own type)."""
    if isinstance(query, _Typed) and any(values[n] is None for n in query.uncast):
        return query.described
    return query.sql


# A connection of DuckDB's (the engine's own, for its catalogue; the module's, for extract_statements) serves one
# thread at a time and refuses another rather than wait: a tool's query may be prepared at its first call, from
# many worker threads at once.
_PREPARING = threading.Lock()


def _check_one_select(text: str, anchors: tuple[tuple[int, int, bool], ...], source: str) -> None:
    """`text` (`bind_text` of `source`) is one SELECT DuckDB can parse: else UnsafeSQL at the spot in `source`."""
    try:
        statements = duckdb.extract_statements(text)
    except duckdb.Error as exc:
        position = _in_source(anchors, source, text, _position(str(exc), 0, text))
        raise UnsafeSQL(f"DuckDB cannot parse the SQL: {first_line(exc)}", *position or (None, None)) from None
    if len(statements) != 1 or statements[0].type != duckdb.StatementType.SELECT:
        raise UnsafeSQL("the SQL must be exactly one read-only query")


def _in_source(
    anchors: tuple[tuple[int, int, bool], ...], source: str, text: str, position: tuple[int, int] | None
) -> tuple[int, int] | None:
    """A (line, col) in `text`, written from `source` by `bind_text` with these `anchors`, as a (line, col)
    in `source`: inside copied text, the same character; inside a written placeholder, its colon."""
    if position is None:
        return None
    line, col = position
    starts = [0, *(i + 1 for i, c in enumerate(text) if c == "\n")]
    if line > len(starts):
        return None
    offset = starts[line - 1] + col - 1
    out, origin, copied = max((a for a in anchors if a[0] <= offset), default=(0, 0, True))
    return line_col(source, origin + (offset - out if copied else 0))


class _Running:
    """One call's hold on a pooled cursor: an interrupt that comes after the call gave the cursor back
    (a deadline firing as the query ends) does nothing, since the next call may be using it."""

    __slots__ = ("_cursor", "_lock")

    def __init__(self, cursor: duckdb.DuckDBPyConnection):
        self._cursor: duckdb.DuckDBPyConnection | None = cursor
        self._lock = threading.Lock()

    def interrupt(self) -> None:
        with self._lock:
            if self._cursor is not None:
                self._cursor.interrupt()

    def end(self) -> None:
        with self._lock:
            self._cursor = None


def _message(exc: BaseException) -> str:
    """The first line of a DuckDB error, with its "Did you mean" / "Candidate bindings" hint."""
    lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
    hint = next((line for line in lines[1:] if line.startswith(("Did you mean", "Candidate bindings"))), None)
    return lines[0] + (f" ({hint})" if hint else "") if lines else type(exc).__name__


# A relative path naming no file: DuckDB's words for it, without file access limits and with them.
_NO_FILE = re.compile(r'(?:No files found that match the pattern|Cannot access file) "([^"*?\[]+)"')
_LOOKED_AT = 2000  # folders walked for a file of the missing one's name


def _where_files_are(message: str, root: Path) -> str:
    """DuckDB's message for a relative path that names no file, with where such paths start and the project
    file of that name, if any (found among the first folders: `_LOOKED_AT`). Only for the one who runs
    mcpgen (validate, init at start): a caller's error never names a folder of the machine."""
    match = _NO_FILE.search(message)
    if match is None or Path(match[1]).is_absolute() or (root / match[1]).exists():
        return message
    wanted = Path(match[1]).name
    for folder, subfolders, files in itertools.islice(os.walk(root), _LOOKED_AT):
        subfolders[:] = [d for d in subfolders if not d.startswith(".")]
        if wanted in files:
            meant = (Path(folder) / wanted).relative_to(root).as_posix()
            return f"{message} (no such file: paths start at the project folder {root}; did you mean '{meant}'?)"
    return f"{message} (no such file: paths start at the project folder {root})"


def _position(text: str, prefix: int, sql: str = "") -> tuple[int, int] | None:
    """(line, col) in the SQL from DuckDB's "LINE n: ..." and caret lines. A long line is shown as a
    window of it between "..." marks: the window is found in `sql`'s line (`prefix` characters that
    were put before `sql` on its first line are taken off)."""
    match = re.search(r"^LINE (\d+): (.*)\n( *)\^", text, re.MULTILINE)
    if not match:
        return None
    line = int(match[1])
    col = len(match[3]) - len(f"LINE {match[1]}: ") + 1 - (prefix if line == 1 else 0)
    shown, lines = match[2], sql.split("\n")
    if shown.startswith("...") and line <= len(lines):
        window = shown[3:].removesuffix("...")
        whole = (" " * prefix if line == 1 else "") + lines[line - 1]
        start = whole.find(window)
        if start >= 0:
            col += start - 3
    return line, max(col, 1)
