"""Paged SQL: the load-time checks of a paged spec (`page_size:`), and the SQL of its pages.

A paged spec's query must order its rows and may not limit them itself; the tokens outside
every parenthesis are the outermost query's. Its pages order by that ORDER BY and then by every
result column, a total order, so each row has one place (`plan_pages`).

>>> limits_rows("SELECT a FROM t ORDER BY a LIMIT 5", "duckdb"), orders_rows("SELECT a FROM t", "duckdb")
(True, False)
>>> plan = plan_pages("SELECT city, temp FROM w ORDER BY temp DESC", "duckdb", [("city", "VARCHAR"), ("temp", "INTEGER")])
>>> plan.order
'mcpgen_page."temp" DESC, mcpgen_page."city" COLLATE "binary"'
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.tokens import TokenType

from ..errors import MCPGenError
from ..spec.models import Parameter
from .statements import tokenize

LIMIT, OFFSET = "mcpgen_page_limit", "mcpgen_page_offset"  # bound by the paged query


def limits_rows(sql: str, dialect: str | None) -> bool:
    """Whether the outermost query has its own LIMIT, OFFSET or FETCH (a paged query may not).

    >>> limits_rows("SELECT a FROM t ORDER BY a LIMIT 5", "duckdb")
    True
    >>> limits_rows("SELECT a FROM (SELECT a FROM t LIMIT 5) s", "duckdb")
    False
    """
    words = {TokenType.LIMIT, TokenType.OFFSET, TokenType.FETCH}
    return any(t.token_type in words for t in _outer_tokens(sql, dialect))


def orders_rows(sql: str, dialect: str | None) -> bool:
    """Whether the outermost query ends in ORDER BY (pages are stable only then).

    >>> orders_rows("SELECT a FROM t ORDER BY a", "duckdb")
    True
    >>> orders_rows("SELECT a FROM (SELECT a FROM t ORDER BY a)", "duckdb")
    False
    """
    return any(t.token_type == TokenType.ORDER_BY for t in _outer_tokens(sql, dialect))


def row_bound(sql: str, dialect: str | None, parameters: dict[str, Parameter], max_rows: int) -> int:
    """The most rows the query can return: `max_rows`, or less when its outermost LIMIT is a
    number or a parameter with a maximum.

    >>> from mcpgen.spec.models import Parameter
    >>> n = Parameter(type="integer", description="n", maximum=50)
    >>> row_bound("SELECT a FROM t ORDER BY a LIMIT :n", "duckdb", {"n": n}, 1000)
    50
    """
    tokens = _outer_tokens(sql, dialect)
    for i, token in enumerate(tokens[:-1]):
        if token.token_type != TokenType.LIMIT:
            continue
        after = tokens[i + 1]
        if after.token_type == TokenType.NUMBER and after.text.isdigit():
            return min(max_rows, int(after.text))
        if after.token_type == TokenType.COLON and i + 2 < len(tokens):
            param = parameters.get(tokens[i + 2].text)
            if param is not None and isinstance(param.maximum, int):
                return min(max_rows, param.maximum)
    return max_rows


def _outer_tokens(sql: str, dialect: str | None) -> list:
    """The tokens of `sql` outside every parenthesis (sub-queries, CTE bodies, window clauses)."""
    try:
        tokens = tokenize(sql, dialect)  # cached: the read-only check has just tokenized the same SQL
    except SqlglotError:
        return []
    depth, out = 0, []
    for token in tokens:
        if token.token_type == TokenType.L_PAREN:
            depth += 1
        elif token.token_type == TokenType.R_PAREN:
            depth -= 1
        elif depth == 0:
            out.append(token)
    return out


# -- pages that hold each row once ---------------------------------------------------------------
#
# A page is the query inside `SELECT mcpgen_page.* FROM (<query without its ORDER BY>) AS mcpgen_page`,
# ordered by the query's own ORDER BY keys and then by every result column (the tie-breaker: rows
# equal on every column are the same row to the reader), so the order is total. The first page is
# `LIMIT n`. A later page seeks past the previous page's last row: `WHERE <keys after those values>`
# (keyset paging: page-sized work for an engine that can read the order from an index, a top-n
# instead of a sort of everything before the page for one that cannot), where every key's value
# can be carried in a cursor and bound back exactly; else `LIMIT n OFFSET m`.

PAGE, KEY, AFTER = "mcpgen_page", "mcpgen_page_key_", "mcpgen_page_after_"
# Result types a cursor carries and binds back exactly (a sqlglot-free reading of the engines' names).
_KINDS = (
    ("integer", r"(big|small|tiny|medium|u?)?int(eger)?\d*( unsigned)?|long(long)?|short|tiny|int24|year"),
    ("wide", r"u?hugeint|ubigint"),  # DuckDB's integers past a signed 64-bit one
    ("real", r"real|float4?"),  # a 4-byte float, as PostgreSQL's, MariaDB's and DuckDB's names go
    ("number", r"double( precision)?|float\d*"),
    ("string", r"(var)?char(acter)?( varying)?(\(\d+\))?|text|string|var_string|name"),
    ("decimal", r"(decimal|numeric|newdecimal)(\(\d+(, ?\d+)?\))?"),
    ("date", r"date"),
    (
        "datetime",
        r"(timestamp|datetime)(\(\d\))?( with(out)? time zone)?|timestamp_(s|ms)|timestamptz|timestamp_ltz|timestamp_ntz",
    ),
    ("boolean", r"bool(ean)?"),
)
# Keys bound as their text and read back by a cast (to the type named, "{}" for the key's own): where the value a
# driver reads is not the one stored as a float (an exact number, PostgreSQL's 4-byte float, read as the shortest
# decimal that names it), or where a parameter cannot hold it (an integer past 64 bits, which DuckDB sums of
# BIGINT are).
_AS_TEXT = {"postgres": {"decimal": "NUMERIC", "real": "REAL"}, "duckdb": {"wide": "{}"}}
# Where the rest of these come exactly, bound as they are (elsewhere a driver reads them with less than their
# value, as MariaDB's 4-byte float in six digits, and pages use OFFSET).
_EXACT_ON = {"decimal": {"duckdb"}, "real": {"duckdb", "spark"}, "wide": set()}  # wide: only as text, above
# Types without an order of their own: their text orders them.
_UNORDERED = {"postgres": re.compile(r"json|xml|point|line|lseg|box|path|polygon|circle|(.*\[\])")}
# Text a collation may find equal though its bytes differ ('a' and 'A' case-insensitively, 'a' and 'a ' where
# trailing spaces pad): tied by its bytes too, so that rows equal on every key are identical. A collation's key
# has the column's own value (not selected again); MariaDB's bytes are another value, selected alongside.
_BYTES = {
    "mysql": (re.compile(r"(var_)?string|varchar|char|(tiny_|medium_|long_)?blob|text"), "CAST({} AS BINARY)"),
    "postgres": (re.compile(r"text|character( varying)?(\(\d+\))?|(var|bp)?char(\(\d+\))?|name"), '{} COLLATE "C"'),
    "duckdb": (re.compile(r"varchar"), '{} COLLATE "binary"'),
}


class PagingError(MCPGenError):
    """A paged query whose order cannot be made total (one sentence, naming the reason)."""


@dataclass(frozen=True)
class _Written:
    """One key of the query's own ORDER BY, as written."""

    text: str  # the expression
    tokens: tuple  # its tokens
    modifiers: str  # ASC/DESC and NULLS FIRST/LAST as written ('' for none)
    desc: bool
    nulls_first: bool | None  # where NULLs go (None: the dialect is unknown)


@dataclass(frozen=True)
class Key:
    """One key of a page's order: `sql` in the outer query, where its value sits in a result row."""

    sql: str
    modifiers: str
    desc: bool
    nulls_first: bool | None
    index: int
    label: str = ""  # as the spec writes it


@dataclass
class PagePlan:
    """The SQL of a paged spec's pages. `width` result columns are the answer's; those after it are
    keys mcpgen selects to seek from. `keyset` is False (with `reason`) where pages use OFFSET."""

    width: int
    keys: tuple[Key, ...]
    ties: tuple[str, ...]  # the result columns added to the query's own order
    core: str  # the wrapped query, unordered and unlimited: what describing it returns
    order: str
    keyset: bool = True
    reason: str = ""
    kinds: tuple[str, ...] = ()  # each key's parameter type, for binding it back
    values: tuple[str, ...] = ()  # each key's value in the seek: its parameter, or a cast of it
    required: frozenset[int] = frozenset()  # the keys (positions) that are never NULL
    outer_joins: bool = False  # the query may make a column NULL that its table declares NOT NULL
    inside: bool = False  # a key of a result column's alias is computed inside the query, where a column of
    # the query's tables by that name comes first: the engine refusing it means there is none (`plan_pages`)

    def first(self) -> str:
        return f"{self.core}\nORDER BY {self.order}\nLIMIT :{LIMIT}"

    def offset(self) -> str:
        return f"{self.core}\nORDER BY {self.order}\nLIMIT :{LIMIT} OFFSET :{OFFSET}"

    def after(self, nulls: tuple[bool, ...], copies: bool = False) -> str:
        """A later page: the rows strictly after the last one's key (`nulls`: which of its values are
        NULL). With `copies`, the page ended among rows equal on every key (identical rows): first the
        ones equal to that key after the OFFSET of them already given, then the rows after it, so a
        changed or deleted row at the cursor never makes the page skip another one."""
        where = _seek(self.keys, nulls, self.values, self.required)
        after = f"{self.core}\nWHERE {where}\nORDER BY {self.order}\nLIMIT :{LIMIT}"
        if not copies:
            return after
        equal = " AND ".join(
            f"{k.sql} IS NULL" if null else f"{k.sql} = {v}" for k, null, v in zip(self.keys, nulls, self.values)
        )
        at = f"{self.core}\nWHERE {equal}\nLIMIT :{LIMIT} OFFSET :{OFFSET}"
        both = f"SELECT * FROM (\n{at}\n) AS {PAGE}_at\nUNION ALL\nSELECT * FROM (\n{after}\n) AS {PAGE}_after"
        return f"SELECT {PAGE}.* FROM (\n{both}\n) AS {PAGE}\nORDER BY {self.order}\nLIMIT :{LIMIT}"

    def choose(self, types: list[str], dialect: str | None, not_null: frozenset[int] = frozenset()) -> None:
        """Keyset pages when every key's type (`types`: the described core's) round-trips in a cursor
        and binds back exactly on this engine; else OFFSET pages, and `reason` says why. `not_null`:
        the core's columns (positions) its tables declare NOT NULL, trusted unless an outer join, a
        set operation or grouping sets could make them NULL."""
        if not self.outer_joins:
            self.required = frozenset(i for i, k in enumerate(self.keys) if k.index in not_null)
        kinds, values = [], []
        for i, key in enumerate(self.keys):
            type_ = types[key.index] if key.index < len(types) else "unknown"
            kind = _kind(type_)
            value = f":{AFTER}{i}"
            cast = _AS_TEXT.get(dialect or "", {}).get(kind or "")
            if cast:
                kind, value = "string", f"CAST({value} AS {cast.format(type_.upper())})"
            elif kind in _EXACT_ON and dialect not in _EXACT_ON[kind]:
                kind = None
            if kind is None or key.nulls_first is None:
                self.keyset = False
                what = f"its sort key {key.label} is {type_}" if kind is None else "the SQL dialect is unknown"
                self.reason = f"pages use OFFSET (each page reads the rows before it again): {what}"
                return
            kinds.append("number" if kind == "real" else kind)
            values.append(value)
        self.kinds, self.values = tuple(kinds), tuple(values)


def plan_pages(sql: str, dialect: str | None, columns: list[tuple[str, str]], inside: bool = True) -> PagePlan:
    """The pages of `sql` (in `dialect`), whose result `columns` are (name, type) as described.
    PagingError when its order cannot be made total.

    An ORDER BY expression (`a + 0`) naming a result column that aliases something else (`b AS a`) means
    the column of the query's tables by that name, where there is one, on every engine: it is computed
    inside the query, `inside`; without, from the result column (for a name that is only an alias, which
    the select list of PostgreSQL and MariaDB cannot name)."""
    body, written, insert_at, distinct = _split_order(sql, dialect)
    plan = _Keys(dialect, [name for name, _ in columns])
    expressions = any(len(w.tokens) > 1 for w in written)  # only they may name an alias (one parse of the query)
    aliases = _aliases(body, dialect) if expressions and inside and insert_at is not None and not distinct else set()
    for w in written:
        plan.add_written(w, insert_at is not None, distinct, aliases)
    for i, (name, type_) in enumerate(columns):
        plan.add_tie(i, name, type_)
    inner = body
    if plan.hidden:
        assert insert_at is not None
        # on lines of their own: the select list may end in a -- comment
        selected = "".join(f"\n  , {text} AS {KEY}{i}" for i, text in enumerate(plan.hidden))
        inner = f"{body[:insert_at].rstrip(' ')}{selected}\n{body[insert_at:]}"
    start = len(plan.names) + len(plan.hidden)  # the outer keys' columns come after the hidden ones
    keys = tuple(
        k if k.index >= 0 else Key(k.sql, k.modifiers, k.desc, k.nulls_first, start - k.index - 1, k.label)
        for k in plan.keys
    )
    extra = "".join(f", {text} AS {KEY}{len(plan.hidden) + i}" for i, text in enumerate(plan.outer))
    core = f"SELECT {PAGE}.*{extra} FROM (\n{inner}\n) AS {PAGE}"
    order = ", ".join(k.sql + (f" {k.modifiers}" if k.modifiers else "") for k in keys)
    words = {t.text.upper() for t in tokenize(sql, dialect)}
    outer_joins = bool(words & {"LEFT", "RIGHT", "FULL", "OUTER", "ROLLUP", "CUBE", "GROUPING", "UNION"})
    outer_joins |= bool(words & {"EXCEPT", "INTERSECT", "NATURAL"})
    return PagePlan(len(plan.names), keys, tuple(plan.ties), core, order, outer_joins=outer_joins, inside=plan.inside)


class _Keys:
    """The keys of a page's order as they are found: the query's own, then the tie-breakers."""

    def __init__(self, dialect: str | None, names: list[str]):
        self.dialect, self.names = dialect, names
        self.keys: list[Key] = []
        self.hidden: list[str] = []  # expressions of the query's own level, selected as KEY columns
        self.outer: list[str] = []  # expressions of result columns, computed by the page
        self.direct: set[int] = set()  # result columns that are keys as they are
        self.ties: list[str] = []
        self.inside = False  # a key naming an alias is computed inside the query

    def column(self, i: int) -> str:
        return f"{PAGE}.{_quote(self.names[i], self.dialect)}"

    def add_outer(self, sql: str, modifiers: str, desc: bool, nulls_first: bool | None, label: str) -> None:
        self.keys.append(Key(sql, modifiers, desc, nulls_first, -1 - len(self.outer), label))
        self.outer.append(sql)

    def add_written(self, w: _Written, selectable: bool, distinct: bool, aliases: set[str]) -> None:
        """One key as written: a result column, an expression of result columns (computed inside the query
        when it names an alias, in `aliases`), or an expression of the query's own level, selected."""
        targets = _result_columns(w, self.names)
        if targets is not None:
            for i in targets:
                self.keys.append(Key(self.column(i), w.modifiers, w.desc, w.nulls_first, i, self.names[i]))
                self.direct.add(i)
        elif (named := _outer_expression(w, self.names, self.dialect)) and not named & aliases:
            self.add_outer(_requalify(w, self.names, self.dialect), w.modifiers, w.desc, w.nulls_first, w.text)
        elif not selectable:
            raise PagingError(f"ORDER BY {w.text} of a UNION, INTERSECT or EXCEPT must name one of its result columns")
        elif distinct:
            raise PagingError(f"ORDER BY {w.text} of a SELECT DISTINCT must be one of its result columns")
        else:
            index = len(self.names) + len(self.hidden)
            self.keys.append(Key(f"{PAGE}.{KEY}{len(self.hidden)}", w.modifiers, w.desc, w.nulls_first, index, w.text))
            self.hidden.append(w.text)
            self.inside |= bool(named)

    def add_tie(self, i: int, name: str, type_: str) -> None:
        """A result column as the last keys: rows equal on all of them are the same row to the reader."""
        column, kind, nulls = self.column(i), type_.lower(), _nulls_first(False, self.dialect)
        if self.dialect in _UNORDERED and _UNORDERED[self.dialect].fullmatch(kind):
            self.add_outer(f"CAST({column} AS TEXT)", "", False, nulls, name)  # no order of its own
        elif self.dialect in _BYTES and _BYTES[self.dialect][0].fullmatch(kind):
            text = _BYTES[self.dialect][1].format(column)
            if self.dialect == "mysql":
                self.add_outer(text, "", False, nulls, name)
            else:
                self.keys.append(Key(text, "", False, nulls, i, name))
        elif i not in self.direct:
            self.keys.append(Key(column, "", False, nulls, i, name))
        else:
            return
        self.ties.append(name)


def _seek(keys: tuple[Key, ...], nulls: tuple[bool, ...], values: tuple[str, ...], required: frozenset[int]) -> str:
    """The rows strictly after the cursor's key values, in the keys' order, NULLs where each key puts them.

    Keys in `required` (positions) hold no NULL: no IS NULL for them, and their leading run that goes
    one way is one row comparison `(a, b) >= (:a, :b)` (`>` when it is every key), which an index on
    those columns serves, the other keys deciding only among the rows equal on it (a filter, not an OR
    an index would split)."""
    run = 0
    while run < len(keys) and run in required and keys[run].desc == keys[0].desc and not nulls[run]:
        run += 1
    rest = _chain(keys[run:], nulls[run:], values[run:], frozenset(i - run for i in required if i >= run))
    if not run:
        return rest or "1 = 0"
    if run == 1:
        left, right = keys[0].sql, values[0]
    else:
        left, right = f"({', '.join(k.sql for k in keys[:run])})", f"({', '.join(values[:run])})"
    op = "<" if keys[0].desc else ">"
    if rest is None:
        return f"{left} {op} {right}"
    return f"{left} {op}= {right} AND ({left} <> {right} OR ({rest}))"


def _chain(keys: tuple[Key, ...], nulls: tuple[bool, ...], values: tuple[str, ...], required: frozenset[int]):
    """The seek as nested ORs, from the last key out; None for no row."""
    clause: str | None = None
    for i in range(len(keys) - 1, -1, -1):
        key, null, value = keys[i], nulls[i], values[i]
        if null:
            equal = f"{key.sql} IS NULL"
            after = f"{key.sql} IS NOT NULL" if key.nulls_first else None
        else:
            equal = f"{key.sql} = {value}"
            after = f"{key.sql} {'<' if key.desc else '>'} {value}"
            if not key.nulls_first and i not in required:
                after = f"({after} OR {key.sql} IS NULL)"
        clause = _or(after, None if clause is None else f"{equal} AND ({clause})")
    return clause


def _or(a: str | None, b: str | None) -> str | None:
    if a is None or b is None:
        return a or b
    return f"{a} OR ({b})"


def _kind(type_: str) -> str | None:
    name = type_.strip().lower()
    return next((kind for kind, pattern in _KINDS if re.fullmatch(pattern, name)), None)


def _nulls_first(desc: bool, dialect: str | None) -> bool | None:
    """Where the dialect puts NULLs when the ORDER BY does not say."""
    if dialect is None:
        return None
    ordering = sqlglot.Dialect.get_or_raise(dialect).NULL_ORDERING
    if ordering == "nulls_are_last":
        return False
    return desc if ordering == "nulls_are_large" else not desc


def _quote(name: str, dialect: str | None) -> str:
    return exp.to_identifier(name, quoted=True).sql(dialect=dialect)


def _split_order(sql: str, dialect: str | None) -> tuple[str, list[_Written], int | None, bool]:
    """The query before its outermost ORDER BY (all of it for SELECT DISTINCT ON, whose rows that ORDER BY
    chooses), that ORDER BY's keys, where the outermost select list ends (None: a set operation), and
    whether it is SELECT DISTINCT."""
    try:
        tokens = tokenize(sql, dialect)
    except SqlglotError:
        raise PagingError("the SQL cannot be read") from None
    depth, levels = 0, []
    for token in tokens:
        if token.token_type == TokenType.R_PAREN:
            depth -= 1
        levels.append(depth)
        if token.token_type == TokenType.L_PAREN:
            depth += 1
    top = [i for i, token in enumerate(tokens) if levels[i] == 0]
    orders = [i for i in top if tokens[i].token_type == TokenType.ORDER_BY]
    if not orders:
        raise PagingError("the query has no ORDER BY")
    at = orders[-1]
    end = next((i for i in top if i > at and tokens[i].token_type == TokenType.SEMICOLON), len(tokens))
    groups: list[list] = [[]]
    for i in range(at + 1, end):
        if levels[i] == 0 and tokens[i].token_type == TokenType.COMMA:
            groups.append([])
        else:
            groups[-1].append(tokens[i])
    written = [_written(sql, group, dialect) for group in groups if group]
    before = [i for i in top if i < at]
    sets = {TokenType.UNION, TokenType.INTERSECT, TokenType.EXCEPT}
    insert_at: int | None = None
    distinct = False
    body = sql[: tokens[at].start].rstrip()
    if not any(tokens[i].token_type in sets for i in before):
        selects = [i for i in before if tokens[i].token_type == TokenType.SELECT]
        if selects:
            s = selects[-1]
            distinct = s + 1 < len(tokens) and tokens[s + 1].token_type == TokenType.DISTINCT
            if distinct and s + 2 < len(tokens) and tokens[s + 2].token_type == TokenType.ON:
                body = sql[: tokens[end - 1].end + 1]  # DISTINCT ON keeps the first row its ORDER BY puts first
            stops = {TokenType.FROM, TokenType.WHERE, TokenType.GROUP_BY, TokenType.HAVING, TokenType.WINDOW}
            stops.add(TokenType.QUALIFY)
            stop = next((i for i in before if i > s and tokens[i].token_type in stops), None)
            insert_at = tokens[stop].start if stop is not None else tokens[at].start
    return body, written, insert_at, distinct


def _written(sql: str, group: list, dialect: str | None) -> _Written:
    words = [t.text.upper() for t in group]
    cut = len(group)
    if len(group) >= 2 and words[-2] == "NULLS" and words[-1] in ("FIRST", "LAST"):
        cut -= 2
    if cut > 1 and words[cut - 1] in ("ASC", "DESC"):
        cut -= 1
    if cut == 0:
        raise PagingError("an ORDER BY key is empty")
    desc = "DESC" in words[cut:]
    nulls_first: bool | None = _nulls_first(desc, dialect)
    if "FIRST" in words[cut:] or "LAST" in words[cut:]:
        nulls_first = "FIRST" in words[cut:]
    text = sql[group[0].start : group[cut - 1].end + 1]
    modifiers = sql[group[cut].start : group[-1].end + 1] if cut < len(group) else ""
    return _Written(text, tuple(group[:cut]), modifiers, desc, nulls_first)


def _result_columns(w: _Written, names: list[str]) -> list[int] | None:
    """The result columns a key names as they are (an ordinal, a result column's name, DuckDB's ALL)."""
    if len(w.tokens) != 1:
        return None
    token = w.tokens[0]
    if token.token_type == TokenType.ALL:
        return list(range(len(names)))
    if token.token_type == TokenType.NUMBER and token.text.isdigit() and 1 <= int(token.text) <= len(names):
        return [int(token.text) - 1]
    if token.token_type == TokenType.IDENTIFIER:
        return [names.index(token.text)] if token.text in names else None
    if token.token_type == TokenType.VAR or token.text.isidentifier():
        folded = [i for i, name in enumerate(names) if name.lower() == token.text.lower()]
        return folded[:1] or None
    return None


def _outer_expression(w: _Written, names: list[str], dialect: str | None) -> set[str]:
    """The result columns (lower case) a key names when it is an expression of result columns only (no
    aggregate, window or sub-query): then the page may compute it from them (a result column's name is
    only in scope there). Empty when it is not."""
    try:
        tree = sqlglot.parse_one(w.text, read=dialect)
    except SqlglotError:
        return set()
    if tree.find(exp.AggFunc, exp.Window, exp.Subquery, exp.Select, exp.Placeholder) is not None:
        return set()
    columns = list(tree.find_all(exp.Column))
    lowered = {name.lower() for name in names}
    if columns and all(not c.table and c.name.lower() in lowered for c in columns):
        return {c.name.lower() for c in columns}
    return set()


def _aliases(body: str, dialect: str | None) -> set[str]:
    """The result columns (lower case) of the outermost select list that are not a column of the same name
    (`b AS a`, `count(*) AS n`): an ORDER BY expression naming one may mean a column of the tables."""
    try:
        tree = sqlglot.parse_one(body, read=dialect)
    except SqlglotError:
        return set()
    if not isinstance(tree, exp.Select):
        return set()
    out = set()
    for item in tree.expressions:
        value = item.this if isinstance(item, exp.Alias) else item
        if not (isinstance(value, exp.Column) and value.name.lower() == item.alias_or_name.lower()):
            out.add(item.alias_or_name.lower())
    return out


def _requalify(w: _Written, names: list[str], dialect: str | None) -> str:
    """A key of result columns, written against the page's columns."""
    tree = sqlglot.parse_one(w.text, read=dialect)
    by_lower = {name.lower(): name for name in names}
    for column in tree.find_all(exp.Column):
        name = by_lower[column.name.lower()] if not column.this.quoted else column.name
        column.replace(exp.column(exp.to_identifier(name, quoted=True), table=PAGE))
    return tree.sql(dialect=dialect)
