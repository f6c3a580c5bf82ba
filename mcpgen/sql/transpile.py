"""Translating a spec's SQL from the dialect it is written in to the one its connection speaks.

Done once, when the project loads; a call runs the translated text. `:name` placeholders stay
placeholders (bound values, never text) in every dialect.

>>> print(transpile("SELECT make_date(y, 1, 1) AS d FROM t WHERE c IN :codes", "duckdb", "sqlite"))
SELECT
  DATE(PRINTF('%04d-%02d-%02d', y, 1, 1)) AS d
FROM t
WHERE
  c IN :codes
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

import sqlglot
from sqlglot import exp
from sqlglot.errors import ErrorLevel, SqlglotError
from sqlglot.generator import Generator

from ..errors import UnsafeSQL
from ..text import first_line
from . import dialects
from .statements import find_placeholders, unreadable


class Untranslatable(UnsafeSQL):
    """The SQL uses something the connection's dialect cannot express (line and column in the SQL)."""


class NeedsColumnTypes(Untranslatable):
    """MariaDB/MySQL: the SQL's meaning depends on whether a column is a DATE, which the SQL does not say;
    given the database's column types (`transpile(..., columns=...)`) it may translate."""


def _sqlite_parts(fmt: str, names: tuple[str, ...], wrap: str):
    """SQLite builds dates from text: DATE(PRINTF('%04d-%02d-%02d', y, m, d))."""

    def sql(self: Generator, e: exp.Expression) -> str:
        return self.func(wrap, self.func("PRINTF", exp.Literal.string(fmt), *(e.args.get(n) for n in names)))

    return sql


def _mysql_parts(names: tuple[str, ...], fmt: str):
    """MariaDB and MySQL parse them: STR_TO_DATE(CONCAT_WS('-', y, m, d), '%Y-%c-%e')."""

    def sql(self: Generator, e: exp.Expression) -> str:
        date = self.func("CONCAT_WS", exp.Literal.string("-"), *(e.args.get(n) for n in names[:3]))
        if len(names) > 3:
            time = self.func("CONCAT_WS", exp.Literal.string(":"), *(e.args.get(n) for n in names[3:]))
            date = f"CONCAT_WS(' ', {date}, {time})"
        return f"STR_TO_DATE({date}, '{fmt}')"

    return sql


_DATE = ("year", "month", "day")
_TIMESTAMP = (*_DATE, "hour", "min", "sec")


def _postgres_parts(name: str, names: tuple[str, ...]):
    """PostgreSQL's make_date/make_timestamp take INT parts (and DOUBLE seconds), not BIGINT columns."""

    def sql(self: Generator, e: exp.Expression) -> str:
        parts = [exp.cast(e.args[n], "INT" if n != "sec" else "DOUBLE") for n in names]
        return self.func(name, *parts)

    return sql


def _postgres_round(self: Generator, e: exp.Round) -> str:
    """ROUND(x, n) exists for NUMERIC only in PostgreSQL; DuckDB's division and AVG give DOUBLE."""
    if e.args.get("decimals") is None:
        return self.func("ROUND", e.this)
    return self.func("ROUND", exp.cast(e.this, "DECIMAL"), e.args["decimals"])


def _mysql_ordered(self: Generator, e: exp.Ordered) -> str:
    """MariaDB/MySQL spell DuckDB's NULLS LAST with a first key, `CASE WHEN x IS NULL ...`, and sqlglot
    writes a select alias there as its expression, where columns are read. It writes the sort key that
    follows as that expression too, where MariaDB reads a name as a select alias first: `SELECT b AS a,
    a AS b ... ORDER BY a` would sort by the other column. The key stays the alias."""
    out = self.ordered_sql(e)
    resolved = self._resolve_ordered_for_null_ordering_simulation(e)
    if resolved is None:
        return out
    head, found, tail = out.rpartition(f", {self.sql(resolved)}")
    return f"{head}, {self.sql(e, 'this')}{tail}" if found and head.startswith("CASE WHEN") else out


# Spellings sqlglot lacks for a target dialect: expression type -> how to write it there.
FIXES: dict[str, dict[type, Callable[..., str]]] = {
    "postgres": {
        exp.DateFromParts: _postgres_parts("MAKE_DATE", _DATE),
        exp.TimestampFromParts: _postgres_parts("MAKE_TIMESTAMP", _TIMESTAMP),
        exp.Round: _postgres_round,
    },
    "sqlite": {
        exp.DateFromParts: _sqlite_parts("%04d-%02d-%02d", _DATE, "DATE"),
        exp.TimestampFromParts: _sqlite_parts("%04d-%02d-%02d %02d:%02d:%02d", _TIMESTAMP, "DATETIME"),
    },
    "mysql": {
        exp.DateFromParts: _mysql_parts(_DATE, "%Y-%c-%e"),
        exp.TimestampFromParts: _mysql_parts(_TIMESTAMP, "%Y-%c-%e %k:%i:%s"),
        exp.Ordered: _mysql_ordered,
    },
}


@cache
def generator(target: str) -> type[Generator]:
    """The target dialect's generator, with FIXES and placeholders always written `:name`."""
    base = sqlglot.Dialect.get_or_raise(target).generator_class

    class Generator(base):  # type: ignore[valid-type, misc]
        TRANSFORMS: dict[type, Callable[..., str]] = {**base.TRANSFORMS, **FIXES.get(target, {})}

        def placeholder_sql(self, expression: exp.Placeholder) -> str:
            return f":{expression.name}" if expression.name else "?"

    return Generator


def _spells(generator: type[Generator], node: exp.Func) -> bool:
    """Whether `generator` has its own way to write this kind of function."""
    return type(node) in generator.TRANSFORMS or hasattr(generator, f"{node.key}_sql")


def _renamed(source: str, node: exp.Func) -> bool:
    """Whether `source` writes this function under a name other than sqlglot's generic one."""
    return node.sql(source).split("(")[0].upper() != node.sql_name().upper()


def transpile(
    sql: str,
    source: str,
    target: str,
    dates: frozenset[str] = frozenset(),
    columns: dialects.Columns | None = None,
    guessed: list[tuple[int | None, int | None, str]] | None = None,
) -> str:
    """`sql`, written in the `source` dialect, rewritten for `target` (sqlglot dialect names; `dates`: the
    parameters that are dates; `columns`: the database's column types, table -> column -> type).
    Without `columns`, a select alias that may also be a table's column is read as none (the reading
    the engines share); `guessed` gets (line, col, sentence) for each such alias.

    Raises Untranslatable, with the line and column in `sql`, for a function sqlglot does not
    know (it would be sent as written) or one that `source` spells its own way and `target` has no
    spelling for (it would be sent under a name `target` may not have); NeedsColumnTypes for date
    arithmetic on MariaDB/MySQL whose meaning depends on a column's type that neither the SQL nor
    `columns` tells."""
    if source == target:
        return sql
    try:
        tree = sqlglot.parse_one(sql, read=source)
    except SqlglotError as exc:
        raise unreadable(source, exc) from None
    reader, writer = generator(source), generator(target)
    lacking = dialects.lacks(tree, target) if source == "duckdb" else None
    if lacking is not None:
        where, construct = lacking
        raise Untranslatable(f"{construct} cannot be written in {dialects.engine_name(target)}", *_where(sql, where))
    for node in tree.find_all(exp.Func):
        if isinstance(node, exp.Anonymous):
            problem = (
                f"{node.name}() is not a function sqlglot knows in {source}, so it cannot be translated to {target}"
            )
        elif _spells(reader, node) and _renamed(source, node) and not _spells(writer, node):
            problem = f"{node.sql(source).split('(')[0]}() has no translation to {target}"
        else:
            continue
        raise Untranslatable(problem, *_where(sql, node))
    if source == "duckdb":  # after the checks above, which read the functions as written
        tree = _rewrite(tree, sql, target, dates, columns, guessed)
    try:
        out = writer(dialect=target, unsupported_level=ErrorLevel.RAISE, pretty=True).generate(tree)
    except SqlglotError as exc:
        raise Untranslatable(f"the SQL cannot be written in {target}: {first_line(exc)}") from None
    if _bound(out, target) != _bound(sql, source):  # a value must never turn into text
        raise Untranslatable(f"the parameters would not stay bound values in {target}")
    return out


def _rewrite(
    tree: exp.Expr,
    sql: str,
    target: str,
    dates: frozenset[str],
    columns: dialects.Columns | None,
    guessed: list[tuple[int | None, int | None, str]] | None,
) -> exp.Expr:
    """`dialects.rewrite`, its refusals raised with their place in `sql` and its guesses added to `guessed`."""
    unsure: list[dialects.InputColumnsUnknown] | None = [] if columns is None else None
    try:
        tree = dialects.rewrite(tree, target, dates, columns, unsure)
    except dialects.ColumnTypeUnknown as unknown:
        raise NeedsColumnTypes(_untold(unknown, target), *_start(sql, unknown.node)) from None
    except dialects.InputColumnsUnknown as unknown:  # the catalogue read lacks a table the query reads
        raise NeedsColumnTypes(
            f"`{unknown}` in {unknown.place} is a result column's alias, and DuckDB reads it as a table's column "
            f"of that name where there is one, {dialects.engine_name(target)} not: the database's catalogue does "
            "not list the table it reads from (rename the alias, or name the column with its table)",
            *_start(sql, unknown.column),
        ) from None
    except dialects.PositionUnknown as position:
        why = (
            "validate --live and serve read it from the database's catalogue; or order by the column's name"
            if columns is None
            else "and none can be told for that place (a USING or NATURAL join, an unnamed column, a table the "
            "catalogue does not list): order by the column's name"
        )
        raise (NeedsColumnTypes if columns is None else Untranslatable)(
            f"`ORDER BY {position}` beside SELECT * or on a UNION cannot be written for MariaDB/MySQL without the "
            f"column's name, which puts NULLs last as DuckDB does: {why}",
            *_start(sql, position.key),
        ) from None
    except dialects.ShadowingAlias as shadow:
        engine = dialects.engine_name(target)
        raise Untranslatable(
            f"`{shadow}` in {shadow.place} names both a result column's alias and a table's column, which "
            f"{engine} cannot be told to read as DuckDB does (the column); rename the alias",
            *_start(sql, shadow.column),
        ) from None
    except dialects.AliasInSubquery as inside:
        if inside.unowned is None:
            why = "which DuckDB refuses there (write its expression out)"
        else:
            why = (
                f"which {dialects.engine_name(target)} does not read there as DuckDB does, and the column "
                f"{inside.unowned} of its expression cannot be named with its table there (name it with its table, "
                "or give the subquery's table another alias)"
            )
        raise Untranslatable(
            f"`{inside}` in {inside.place} names a result column's alias, {why}", *_start(sql, inside.column)
        ) from None
    except dialects.MisplacedAlias as misplaced:
        instead = " (filter on it in HAVING or QUALIFY)" if misplaced.place == "WHERE" else ""
        raise Untranslatable(
            f"`{misplaced}` in {misplaced.place} names a result column that is {misplaced.what}, "
            f"which DuckDB refuses there too{instead}",
            *_start(sql, misplaced.column),
        ) from None
    if guessed is not None:
        guessed += [(*_start(sql, u.column), _unsure(u, target)) for u in unsure or ()]
    return tree


def _untold(unknown: dialects.ColumnTypeUnknown, target: str) -> str:
    """The sentence for date arithmetic whose meaning on `target` depends on a column's type."""
    column, engine = unknown.column.sql("duckdb"), dialects.engine_name(target)
    if unknown.known:
        why = f"the database's catalogue (information_schema.columns) has no type for {column} ("
    else:
        why = f"the SQL does not say whether {column} is a DATE (validate --live and serve read its type from the database; or "
    return (
        f"`{unknown}` cannot be translated for {engine}: on a DATE, DuckDB counts days where {engine} counts on "
        f"the number YYYYMMDD, and {why}write CAST({column} AS DATE) where it is one, a CAST to its number type "
        "where it is not)"
    )


def _unsure(unknown: dialects.InputColumnsUnknown, target: str) -> str:
    """The warning for a select alias translated as no table's column, though one may have its name."""
    name, engine = unknown, dialects.engine_name(target)
    if isinstance(unknown, dialects.RefusedUnlessColumn):
        what = f"a result column that is {unknown.what}" if unknown.what else "a result column's alias"
        return (
            f"`{name}` in {unknown.place} names {what}, which DuckDB refuses there unless a table has a column "
            "of that name (it then reads the column); validate --live and serve check it against the tables"
        )
    return (
        f"`{name}` in {unknown.place} is translated for {engine} as a result column's alias, which is right "
        "unless a table has a column of that name (DuckDB then reads the column); validate --live and serve "
        "check it against the tables"
    )


def caveats(sql: str, source: str, target: str) -> list[tuple[int | None, int | None, str]]:
    """(line, col, sentence) for each construct of `sql` that translates to `target` but may not give
    DuckDB's answer there (`dialects.caveats`); `validate` warns with them."""
    if source != "duckdb" or target == source:
        return []
    try:
        tree = sqlglot.parse_one(sql, read=source)
    except SqlglotError:
        return []
    return [(*_where(sql, node), message) for node, message in dialects.caveats(tree, target)]


def _bound(sql: str, dialect: str) -> set[tuple[str, bool]]:
    """Each parameter and how it is written. A set: a named value may be bound twice (MySQL's NULL
    ordering repeats an ORDER BY expression), but none may disappear or change its form."""
    return {(p.name, p.after_in) for p in find_placeholders(sql, dialect)}


def _start(sql: str, node: exp.Expr) -> tuple[int | None, int | None]:
    """Line and column where the text of `node` starts (its first token that has them)."""
    found = [_where(sql, n) for n in node.walk() if n.meta.get("line") is not None]
    return min(found, key=lambda at: (at[0] or 0, at[1] or 0)) if found else _where(sql, node)


def _where(sql: str, node: exp.Expr) -> tuple[int | None, int | None]:
    """Line and column of a node in `sql` (sqlglot keeps them on a function's name token; for other
    nodes, on the first token under them that has them)."""
    meta: dict = {}
    around: exp.Expr | None = node
    while around is not None and meta.get("line") is None:  # the node, under it, else around it
        meta = next((n.meta for n in around.walk() if n.meta and n.meta.get("line") is not None), {})
        around = around.parent
    line, col = meta.get("line"), meta.get("col")
    if line is None or col is None:
        return None, None
    text = sql.splitlines()[line - 1] if line <= len(sql.splitlines()) else ""
    start = col  # col is where the name ends: walk back to where it starts
    while start > 1 and (text[start - 2].isalnum() or text[start - 2] == "_"):
        start -= 1
    return line, start
