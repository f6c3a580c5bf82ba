"""ORDER BY keys whose NULL placement is spelled out, dropped where the column cannot be NULL.

A spec written in DuckDB orders NULLs last; on a database that orders them otherwise the
translation says so (`population DESC NULLS LAST` on PostgreSQL, a `CASE WHEN a IS NULL THEN 1
ELSE 0 END` key before `a` on MariaDB), and a plain index on the column can no longer give the
order: the database scans and sorts instead. For a column the table declares NOT NULL the
spelling changes nothing, so it goes, and the index serves again. What cannot be proved NOT
NULL keeps its spelling: a key that is not a plain column of a table, a table on the nullable
side of an outer join, a CTE or sub-query, a set operation, ROLLUP/CUBE/GROUPING SETS.

>>> sql = "SELECT name FROM cities WHERE cc = :cc ORDER BY population DESC NULLS LAST LIMIT :n"
>>> null_order_tables(sql, "postgres")
[(None, 'cities')]
>>> print(drop_null_orders(sql, "postgres", lambda schema, table: {"name": True, "population": False}))
SELECT name FROM cities WHERE cc = :cc ORDER BY population DESC LIMIT :n
>>> drop_null_orders(sql, "postgres", lambda schema, table: {"population": True}) is None
True
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.optimizer.normalize_identifiers import normalize_identifiers

from .statements import find_placeholders

# (schema or None, table) -> {column name: whether it may be NULL}, as the database's catalog says
Columns = Callable[[str | None, str], dict[str, bool]]


@dataclass(frozen=True)
class _Key:
    ordered: exp.Ordered  # the ORDER BY item that carries the NULL spelling
    schema: str | None
    table: str
    column: str
    quoted: bool  # the column's name was quoted: its case counts
    emulation: bool  # a CASE WHEN c IS NULL key of its own (dropped), not a NULLS clause (made the default)


def null_order_tables(sql: str, dialect: str | None) -> list[tuple[str | None, str]]:
    """The (schema, table) pairs whose NOT NULL columns could drop a spelled-out NULL order of `sql`
    (empty: nothing in `sql` to drop, so no database needs asking)."""
    found = _keys(sql, dialect)
    if found is None:
        return []
    return sorted({(k.schema, k.table) for k in found[1]}, key=lambda t: (t[0] or "", t[1]))


def drop_null_orders(sql: str, dialect: str | None, columns: Columns) -> str | None:
    """`sql` without the NULL spelling of every ORDER BY key on a NOT NULL column (`columns` gives
    a table's), or None when there is none to drop. The rows and their order are the same."""
    found = _keys(sql, dialect)
    if found is None:
        return None
    tree, keys = found
    changed = False
    known: dict[tuple[str | None, str], dict[str, bool]] = {}
    for key in keys:
        table = known.setdefault((key.schema, key.table), columns(key.schema, key.table))
        if not _not_null(key, table):
            continue
        changed = True
        if key.emulation:
            key.ordered.pop()
        else:
            key.ordered.set("nulls_first", _natural_nulls_first(key.ordered, dialect))
    if not changed:
        return None
    from .transpile import generator  # the writer that keeps `:name` placeholders as written

    out = generator(dialect or "")(dialect=dialect).generate(tree)
    if _bound(out, dialect) != _bound(sql, dialect):  # a value must never turn into text
        return None
    return out


def _not_null(key: _Key, table: dict[str, bool]) -> bool:
    """Whether the catalog declares the key's column NOT NULL (an unquoted name matches in any case,
    and then every column it could be must be NOT NULL)."""
    same = [
        nullable
        for name, nullable in table.items()
        if name == key.column or (not key.quoted and name.casefold() == key.column.casefold())
    ]
    return bool(same) and not any(same)


def _bound(sql: str, dialect: str | None) -> list[tuple[str, bool]]:
    return sorted((p.name, p.after_in) for p in find_placeholders(sql, dialect))


def _keys(sql: str, dialect: str | None) -> tuple[exp.Expression, list[_Key]] | None:
    """The parsed query and its ORDER BY keys with a spelled-out NULL order on a table's column."""
    try:
        tree = sqlglot.parse_one(sql, read=dialect)
    except (SqlglotError, RecursionError):  # nested past the parser's depth (a page's seek past 30-odd keys)
        return None
    if not isinstance(tree, exp.Select) or tree.args.get("with_") or tree.args.get("with") or _grouping_sets(tree):
        return None
    order = tree.args.get("order")
    if order is None:
        return None
    sources = _tables(tree, dialect)
    if sources is None:
        return None
    tables, count = sources
    out = []
    items = order.expressions
    for ordered in items:
        if not isinstance(ordered, exp.Ordered):
            continue
        emulation = _null_key(ordered)
        if emulation is not None:
            column = _column(tree, emulation)
        elif ordered.args.get("nulls_first") != _natural_nulls_first(ordered, dialect):
            column = _column(tree, ordered.this)
        else:
            continue
        if column is None:
            continue
        table = _table_of(column, tables, count)
        if table is not None:
            quoted = bool(column.this.args.get("quoted"))
            out.append(_Key(ordered, table[0], table[1], column.name, quoted, emulation is not None))
    return (tree, out) if out else None


def _natural_nulls_first(ordered: exp.Ordered, dialect: str | None) -> bool:
    """Whether `dialect` puts NULLs first for this key when the query says nothing."""
    ordering = sqlglot.Dialect.get_or_raise(dialect).NULL_ORDERING
    desc = bool(ordered.args.get("desc"))
    if ordering == "nulls_are_last":
        return False
    return desc if ordering == "nulls_are_large" else not desc


def _null_key(ordered: exp.Ordered) -> exp.Expression | None:
    """The column of a `CASE WHEN c IS NULL THEN 1 ELSE 0 END` key (how sqlglot emulates NULLS LAST), else None."""
    case = ordered.this
    if not isinstance(case, exp.Case) or case.this is not None or len(case.args.get("ifs") or []) != 1:
        return None
    when = case.args["ifs"][0]
    test, then, default = when.this, when.args.get("true"), case.args.get("default")
    if not (isinstance(test, exp.Is) and isinstance(test.expression, exp.Null)):
        return None
    if not (isinstance(then, exp.Literal) and isinstance(default, exp.Literal)):
        return None
    if {then.this, default.this} != {"1", "0"}:
        return None
    return test.this


def _grouping_sets(select: exp.Select) -> bool:
    """ROLLUP, CUBE and GROUPING SETS add rows whose grouped columns are NULL."""
    group = select.args.get("group")
    if group is None:
        return False
    if any(group.args.get(k) for k in ("rollup", "cube", "grouping_sets")):
        return True
    return any(isinstance(e, (exp.Rollup, exp.Cube, exp.GroupingSets)) for e in group.expressions)


def _column(select: exp.Select, node: exp.Expression) -> exp.Column | None:
    """The table column an ORDER BY expression is: itself, or the output column its name refers to."""
    if not isinstance(node, exp.Column) or not isinstance(node.this, exp.Identifier):
        return None
    if not node.table:
        aliased = [e for e in select.expressions if isinstance(e, exp.Alias) and e.alias == node.name]
        if aliased:
            inner = aliased[0].this
            return inner if isinstance(inner, exp.Column) and isinstance(inner.this, exp.Identifier) else None
    return node


def _folded(identifier: exp.Expression | None, dialect: str | None) -> str | None:
    """The name as the database stores it: unquoted names folded the dialect's way (lower case on PostgreSQL)."""
    if not isinstance(identifier, exp.Identifier):
        return None
    return normalize_identifiers(identifier.copy(), dialect=dialect).name


def _tables(select: exp.Select, dialect: str | None) -> tuple[dict[str, tuple[str | None, str]], int] | None:
    """Alias (or name) -> (schema, table) of every table the query reads whose rows cannot be
    NULL-extended by an outer join, and how many tables it reads; None when its FROM is anything
    else than tables and joins."""
    from_ = select.args.get("from_") or select.args.get("from")
    if from_ is None or not isinstance(from_.this, exp.Table):
        return None
    sources = [(from_.this, None)]
    for join in select.args.get("joins") or []:
        if not isinstance(join.this, exp.Table):
            return None
        sources.append((join.this, join))
    out: dict[str, tuple[str | None, str]] = {}
    nullable: set[str] = set()
    for i, (table, join) in enumerate(sources):
        if not isinstance(table.this, exp.Identifier) or table.args.get("catalog"):
            return None
        name = table.alias_or_name
        out[name] = (_folded(table.args.get("db"), dialect), _folded(table.this, dialect) or "")
        side = (join.side or "").upper() if join is not None else ""
        if side in ("LEFT", "FULL"):
            nullable.add(name)
        if side in ("RIGHT", "FULL"):
            nullable.update(t.alias_or_name for t, _ in sources[:i])
    for name in nullable:
        out.pop(name, None)
    if len(out) != len(sources) - len(nullable):
        return None  # two sources under one name: let the database decide, not us
    return out, len(sources)


def _table_of(
    column: exp.Column, tables: dict[str, tuple[str | None, str]], count: int
) -> tuple[str | None, str] | None:
    """The (schema, table) of `column`: its qualifier's table, or the only table of the query."""
    if column.table:
        return tables.get(column.table) if not column.args.get("db") else None
    if count != 1:
        return None
    return next(iter(tables.values()), None)
