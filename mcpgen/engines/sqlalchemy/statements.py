"""The SQL as SQLAlchemy's `text()` takes it: escaped colons, `IN :name` lists, typed bind parameters.

>>> from mcpgen.sql.statements import find_placeholders
>>> sql = "SELECT ':x' AS s, n FROM t WHERE n = :n -- :y"
>>> sa_text(sql, find_placeholders(sql, None))
"SELECT '\\\\:x' AS s, n FROM t WHERE n = :n -- \\\\:y"
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import sqlalchemy as sa
from sqlglot.errors import SqlglotError
from sqlglot.tokens import TokenType

from ...sql.statements import is_null_test, tokenize

# SQLAlchemy's text() takes every `:word` not preceded by ':', a word character or a backslash.
_IN_BEFORE = re.compile(r"(?i)(?:(?P<not>\bNOT)\s+)?\bIN\s*\Z")
_SA_BIND = re.compile(r"(?<![:\w\\]):(\w+)(?!:)", re.UNICODE)


@dataclass(frozen=True)
class Statement:
    """A checked statement ready for text(); built once per spec by `SQLAlchemyEngine.prepare`."""

    text: str  # the SQL for text(): non-parameter colons escaped, trailing semicolon dropped
    lists: frozenset[str]  # names written `IN :name`: expanding bind parameters
    types: tuple[tuple[str, str], ...]  # declared types, when the caller gave them
    source: str = ""  # the SQL before escaping, and its placeholders: to rewrite an untyped empty list
    placeholders: tuple = ()

    def __hash__(self) -> int:
        """Hashed once: a call looks its statement up in the engine's caches, and the placeholders
        are a tuple of dataclasses whose hash Python would otherwise compute again each time."""
        try:
            return self.__dict__["_hash"]
        except KeyError:
            value = hash((self.text, self.lists, self.types, self.source, self.placeholders))
            self.__dict__["_hash"] = value
            return value

    def __getstate__(self) -> dict:
        """Pickled without its hash: strings hash differently in the next process."""
        return {k: v for k, v in self.__dict__.items() if k != "_hash"}


def catalog_columns(conn, tables) -> dict[tuple[str | None, str], dict[str, bool]]:
    """{(schema, table): {column: whether it may be NULL}} from the database's catalog, for base
    tables only (a view's columns count as nullable: nothing is known of them); {} for a table not found."""
    inspector = sa.inspect(conn)
    out: dict[tuple[str | None, str], dict[str, bool]] = {}
    views: dict[str | None, set[str]] = {}
    for schema, table in tables:
        if schema not in views:
            views[schema] = set(inspector.get_view_names(schema=schema))
        if table in views[schema]:
            out[(schema, table)] = {}
            continue
        try:
            columns = inspector.get_columns(table, schema=schema)
        except sa.exc.NoSuchTableError:
            columns = []
        out[(schema, table)] = {c["name"]: bool(c.get("nullable", True)) for c in columns}
    return out


OMITTED = "mcpgen_omitted_"  # + a list parameter's name: NULL when the list was left out, else 1


def omitted_tests(sql: str, placeholders) -> tuple[str, list]:
    """The portable spelling of "all values when omitted": `(:xs IS NULL OR x IN :xs)`. SQLAlchemy
    binds `IN :xs` as a list, which cannot also be a single value, so each `:xs IS [NOT] NULL` of a
    list parameter becomes a test of its own flag (`:mcpgen_omitted_xs`: NULL when xs was left out).
    Returns the SQL and the single-value uses of list parameters that are no such test (errors).

    >>> from mcpgen.sql.statements import find_placeholders
    >>> sql = "SELECT 1 WHERE (:xs IS NULL OR x IN :xs) AND :xs = 1"
    >>> text, wrong = omitted_tests(sql, find_placeholders(sql, None))
    >>> text, [(p.name, p.col) for p in wrong]
    ('SELECT 1 WHERE (:mcpgen_omitted_xs IS NULL OR x IN :xs) AND :xs = 1', [('xs', 46)])
    """
    lists = {p.name for p in placeholders if p.after_in}
    out, last, wrong = [], 0, []
    for p in placeholders:
        if p.name not in lists or p.after_in:
            continue
        if not is_null_test(sql, p):
            wrong.append(p)
            continue
        out.append(sql[last : p.start] + f":{OMITTED}{p.name}")
        last = p.end
    return "".join(out) + sql[last:], wrong


def strip_semicolon(sql: str, dialect: str | None) -> str:
    """The SQL without a trailing `;` (and what follows it), so it can be wrapped."""
    try:
        tokens = tokenize(sql, dialect)
    except SqlglotError:
        return sql.rstrip().rstrip(";")
    if tokens and tokens[-1].token_type == TokenType.SEMICOLON:
        return sql[: tokens[-1].start].rstrip()
    return sql.rstrip()


def sa_text(sql: str, placeholders, empty_lists: frozenset[str] | set[str] = frozenset()) -> str:
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
            out += [sa_text(sql[last:a], [_shift(p, -last) for p in placeholders if last <= p.start < a]), text]
            last = b
        out.append(sa_text(sql[last:], [_shift(p, -last) for p in placeholders if p.start >= last]))
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


def type_key(name: str, value: Any, declared: dict[str, str], is_list: bool) -> str:
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


_SA_TYPES: dict[str, Callable[[], Any]] = {
    "string": sa.String,
    "integer": sa.BigInteger,
    "number": sa.Float,
    "boolean": _Boolean,
    "date": sa.Date,
    "datetime": sa.DateTime,
    "datetimetz": lambda: sa.DateTime(timezone=True),
}


def bindparam(name: str, type_key: str, is_list: bool):
    if type_key == "null":
        if is_list:
            return sa.bindparam(name, expanding=True)
        # An untyped NULL (`:x IS NULL`) is written inline: PostgreSQL cannot type a bare $1.
        return sa.bindparam(name, literal_execute=True)
    return sa.bindparam(name, type_=_SA_TYPES[type_key](), expanding=is_list)


def empty_lists_as_arrays(statement: Statement, names: set[str]) -> str:
    """The statement's SQL with `[NOT] IN :name` for these names written as PostgreSQL empty arrays."""
    return sa_text(statement.source, statement.placeholders, names)
