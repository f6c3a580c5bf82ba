"""What sqlglot does not translate from DuckDB SQL, kept in one place: rewrites of the parsed query for a
target dialect (applied before sqlglot writes it), and the constructs a target cannot express at all,
refused with where they are. `transpile` runs both, once, when the project loads.

Each rewrite keeps the result DuckDB gives:

- SQLite: `d + INTERVAL n unit` is `DATE(d, (n) || ' unit')` (DATETIME for hours, minutes,
  seconds; `validate` warns that month arithmetic past day 28 differs); `EXTRACT(YEAR FROM d)` is `CAST(STRFTIME('%Y', d) AS INTEGER)`; a parenthesized member of
  UNION / EXCEPT / INTERSECT loses its parentheses (SQLite reads none there).
- MariaDB/MySQL and SQLite: a derived table's column list, `(SELECT a, b ...) AS t (x, y)`, becomes
  aliases inside it (`SELECT a AS x, b AS y ...`).
- MariaDB/MySQL and Spark: `/` and AVG are computed in DOUBLE, as DuckDB's are (MariaDB's DECIMAL result
  keeps only 4 more digits, Spark's 6); `GROUP BY ROLLUP (a)` is `GROUP BY a WITH ROLLUP`, ordered from an outer query; a
  subquery in FROM gets a name (PostgreSQL too).
- A select alias where the target reads none is written out as its expression, unless a table's column
  has its name (DuckDB reads the column there): inside an ORDER BY expression (PostgreSQL, Spark), in
  WHERE (not SQLite), in a window (not MariaDB/MySQL), in a later select item and in a subquery of
  WHERE, the select list or ORDER BY (every target; its columns named with their table there); an
  aggregate's or window function's alias in WHERE or in an aggregate is refused, as DuckDB refuses it
  (a name the SQL shows is a column, such as one the alias's own item reads, is one). PostgreSQL, SQLite
  and Spark: one in HAVING, unless a grouped column has its name; MariaDB/MySQL: a table's column that a
  select alias shadows in GROUP BY or a window is named with its table; Spark: one it shadows inside an
  ORDER BY expression (Spark reads the alias there). These need the tables' columns
  (the catalogue; without it, no table's column is taken to have the alias's name), and a QUALIFY on
  such a name is refused where sqlglot rewrites QUALIFY. An alias in JOIN ... ON, or in a subquery in
  FROM, JOIN or GROUP BY, is refused where it names no column (DuckDB reads none there); a refusal that
  waits for the catalogue is a warning without it.
- Every target: QUALIFY's query keeps its ORDER BY and LIMIT on a query around sqlglot's rewrite.
- Every target: the outermost query's unnamed columns are named as DuckDB names them (`sum(x)`,
  `count_star()`; `validate` warns, since the name is a near guess).
- PostgreSQL and Spark: `INTERVAL (expr) DAY` is `(expr) * INTERVAL '1 DAY'`, so a bound value stays bound.
- Every target: `ORDER BY 1` names what it orders by (the column's alias, else the expression), so
  DuckDB's NULLS LAST can be spelled where the target needs it spelled out; beside `*` and on a UNION
  only on MariaDB/MySQL (the column `*` gives, from the catalogue; the UNION's column by its name).

>>> from mcpgen.sql.transpile import transpile
>>> print(transpile("SELECT d - INTERVAL (:n) DAY AS e FROM t", "duckdb", "sqlite"))
SELECT
  DATE(d, (
    -(
      :n
    )
  ) || ' day') AS e
FROM t
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import NamedTuple

from sqlglot import exp
from sqlglot.errors import SqlglotError

# DuckDB's EXTRACT parts that SQLite's STRFTIME gives as the same integers.
_STRFTIME = {"YEAR": "%Y", "MONTH": "%m", "DAY": "%d", "HOUR": "%H", "MINUTE": "%M", "DOY": "%j", "DOW": "%w"}
_DATE_UNITS = {"DAY": "day", "WEEK": None, "MONTH": "month", "YEAR": "year"}
_TIME_UNITS = {"HOUR": "hour", "MINUTE": "minute", "SECOND": "second"}

# What a target cannot express, by expression type: the name the refusal gives it.
_SQLITE_LACKS: dict[type, str] = {
    exp.Rollup: "GROUP BY ROLLUP",
    exp.Cube: "GROUP BY CUBE",
    exp.GroupingSets: "GROUPING SETS",
    exp.Grouping: "GROUPING()",
    exp.Stddev: "STDDEV()",
    exp.StddevSamp: "STDDEV_SAMP()",
    exp.StddevPop: "STDDEV_POP()",
    exp.Variance: "VARIANCE()",
    exp.VariancePop: "VAR_POP()",
    exp.Any: "ANY (a subquery)",
    exp.All: "ALL (a subquery)",
}
_MYSQL_LACKS: dict[type, str] = {
    exp.Cube: "GROUP BY CUBE",
    exp.GroupingSets: "GROUPING SETS",
    exp.Grouping: "GROUPING()",
}


def lacks(tree: exp.Expr, target: str) -> tuple[exp.Expr, str] | None:
    """The first construct in `tree` that `target` cannot express, with its name, else None."""
    table = {"sqlite": _SQLITE_LACKS, "mysql": _MYSQL_LACKS}.get(target, {})
    for node in tree.walk():
        name = table.get(type(node))
        if name:
            return node, name
        if target == "mysql" and isinstance(node, exp.Join) and node.side.upper() == "FULL":
            return node, "FULL OUTER JOIN"
        if target == "mysql" and isinstance(node, exp.Select) and _rollup_ordered_by_other(node):
            return node, "GROUP BY ROLLUP with an ORDER BY on what the query does not return"
        if target in _NO_QUALIFY and isinstance(node, exp.Qualify) and isinstance(node.parent, exp.Select):
            select = node.parent
            if _result_names(select) is None:  # sqlglot's rewrite would return its `_w`, or a column twice
                return node, "QUALIFY beside SELECT * (list the columns)"
            unnamed = select is not tree and not all(isinstance(e, (exp.Alias, exp.Column)) for e in select.expressions)
            if _hides_sort_keys(select) and (select.args.get("distinct") or unnamed):
                return (
                    node,
                    "QUALIFY with ORDER BY on what the query does not return, beside DISTINCT or an unnamed column",
                )
        if target == "sqlite" and isinstance(node, exp.Extract) and _part(node) not in _STRFTIME:
            return node, f"EXTRACT({_part(node)} FROM ...)"
        if target == "sqlite" and isinstance(node, exp.Interval) and _unit(node) not in {**_DATE_UNITS, **_TIME_UNITS}:
            return node, f"INTERVAL ... {_unit(node)}"
    return None


def caveats(tree: exp.Expr, target: str) -> list[tuple[exp.Expr, str]]:
    """What in `tree` gives a different answer on `target` than on DuckDB, though it translates: each
    node with the sentence `validate` warns with."""
    out = []
    outer = tree if isinstance(tree, exp.Select) else None
    for i, item in enumerate(outer.expressions if outer is not None else [], 1):
        if not isinstance(item, (exp.Alias, exp.Column, exp.Star)):
            out.append(
                (
                    item,
                    f"result column {i} has no name: mcpgen calls it {duckdb_name(item)!r} on "
                    f"{engine_name(target)}, which may not be DuckDB's header for it; name it with AS",
                )
            )
    if target == "postgres":
        for rounded in tree.find_all(exp.Round):
            if rounded.args.get("decimals") is not None:
                out.append(
                    (
                        rounded,
                        "PostgreSQL rounds ROUND(x, n) of a DOUBLE as the decimal it prints, so an exact half "
                        "(24.95) rounds up where DuckDB, rounding the binary value 24.9499..., rounds down",
                    )
                )
    if target == "mysql":
        compared = next((c for c in tree.find_all(*_COMPARISONS) if _text_compared(c)), None)
        if compared is not None:
            out.append(
                (
                    compared,
                    "MariaDB and MySQL compare text without regard to case or accents under their default "
                    "collations ('abc' = 'ABC'); DuckDB compares it exactly",
                )
            )
    if target == "sqlite":
        for node in tree.find_all(exp.Interval):
            if _unit(node) in ("MONTH", "YEAR"):
                out.append(
                    (
                        node,
                        "SQLite adds months past the end of a shorter month (January 31 + 1 month is March 2; "
                        "DuckDB: February 29)",
                    )
                )
    return out


_COMPARISONS = (exp.EQ, exp.NEQ, exp.In, exp.Like, exp.GT, exp.GTE, exp.LT, exp.LTE)


def _text_compared(node: exp.Expr) -> bool:
    """Whether a comparison has a string literal or a string-typed cast on a side."""
    sides = [node.this, *(node.expressions if isinstance(node, exp.In) else [node.args.get("expression")])]
    return any(isinstance(s, exp.Literal) and s.is_string for s in sides if s is not None)


def engine_name(dialect: str) -> str:
    """How a sentence names the database of a sqlglot dialect."""
    return {"sqlite": "SQLite", "mysql": "MariaDB/MySQL", "postgres": "PostgreSQL", "spark": "Spark SQL"}.get(
        dialect, dialect
    )


def _rollup_ordered_by_other(select: exp.Select) -> bool:
    group, order = select.args.get("group"), select.args.get("order")
    if group is None or order is None or not any(isinstance(e, exp.Rollup) for e in group.expressions):
        return False
    outputs = {e.alias_or_name.lower() for e in select.expressions}
    return not all(isinstance(o.this, exp.Column) and o.this.name.lower() in outputs for o in order.expressions)


# table (or schema.table) -> column -> its type, as DuckDB names it; MariaDB/MySQL's in the table's order
# (`ORDER BY n` beside `*` is named from them there)
Columns = Mapping[str, Mapping[str, str]]


class ColumnTypeUnknown(Exception):
    """MariaDB/MySQL: `node` adds days if a column in it is a DATE, and the SQL does not say whether it is
    (`known`: whether the database's catalogue was asked)."""

    def __init__(self, node: exp.Expr, column: exp.Expr, known: bool):
        super().__init__(node.sql("duckdb"))
        self.node, self.column, self.known = node, column, known


def rewrite(
    tree: exp.Expr,
    target: str,
    dates: frozenset[str] = frozenset(),
    columns: Columns | None = None,
    guessed: list[InputColumnsUnknown] | None = None,
) -> exp.Expr:
    """`tree` (parsed as DuckDB SQL) rewritten where sqlglot's `target` generator would not keep its meaning
    (`dates`: the names of the parameters that are dates; `columns`: the types of the database's columns,
    from its catalogue, which MariaDB/MySQL's date arithmetic needs). Raises ColumnTypeUnknown for
    arithmetic on MariaDB/MySQL that adds days only if a column whose type is not known is a date.
    A select alias that may also be a table's column (InputColumnsUnknown) is raised, or, given
    `guessed`, read as no table's column and added there."""
    tree = _name_unnamed_columns(tree)  # as DuckDB names them: before anything is rewritten
    if target in _NO_QUALIFY:
        tree = _qualify_ordered_outside(tree)
    for naming in _NAMING_STEPS.get(target, ()):  # a select alias written out is typed as its expression
        tree = naming(tree, _Known(columns, guessed))
    if target in ("sqlite", "mysql"):  # the rewrite that needs DuckDB's types
        _annotate(tree, columns if target == "mysql" else None)
        tree = _date_arithmetic(tree, target, dates, columns is not None)
        for node in tree.walk():
            node.meta.pop(_TYPE, None)
    for step in _STEPS.get(target, ()):
        tree = step(tree)
    return _named_order(tree, target, columns)


def _annotate(tree: exp.Expr, columns: Columns | None = None) -> None:
    """Each node's type in DuckDB, as far as the SQL says (UNKNOWN for a column) or, with `columns`, as the
    tables' columns say (each column found in the table it comes from: joins, aliases, subqueries and
    CTEs), in `meta`: the generator must not see the types themselves."""
    from sqlglot.optimizer.annotate_types import annotate_types

    if columns is None:
        for node, typed in zip(tree.walk(), annotate_types(tree.copy(), dialect="duckdb").walk()):
            node.meta[_TYPE] = typed.type
        return
    from sqlglot.optimizer.qualify import qualify
    from sqlglot.schema import MappingSchema

    copy = tree.copy()
    original = {id(twin): node for node, twin in zip(tree.walk(), copy.walk())}
    schema = MappingSchema({t: dict(c) for t, c in columns.items() if "." not in t}, dialect="duckdb")
    try:  # which table each column comes from; a node qualify replaces keeps no type (refused, not guessed)
        qualify(copy, schema=schema, dialect="duckdb", validate_qualify_columns=False, quote_identifiers=False)
    except SqlglotError:
        pass
    for twin in annotate_types(copy, schema=schema, dialect="duckdb").walk():
        if id(twin) in original:
            original[id(twin)].meta[_TYPE] = twin.type


# -- date arithmetic (SQLite, MariaDB/MySQL) -----------------------------------------------------------
# DuckDB adds days to a date: `d + 5`, `5 + d` and `d - 5` are dates, `d1 - d2` is a number of days.
# SQLite adds 5 to the number the date's text starts with (2005), MariaDB to YYYYMMDD (20000135).

_DATE, _MAYBE, _OTHER = "date", "maybe", "other"
_KEEPS_TYPE = (exp.Max, exp.Min, exp.AnyValue, exp.First, exp.Last)  # a date in, a date out
_TYPE = "mcpgen_type"  # node.meta: the type DuckDB gives the node, as far as the SQL alone says


def _kind(node: exp.Expr, dates: frozenset[str]) -> str:
    """Whether `node` is a date in DuckDB (a DATE literal, cast or function, a `date` parameter), may be
    one (a column, or MAX/MIN of one: only the table knows), or is anything else."""
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.Placeholder):
        return _DATE if node.name in dates else _OTHER
    if isinstance(node, exp.Sub) and _kind(node.this, dates) == _kind(node.expression, dates) == _DATE:
        return _OTHER  # a number of days (sqlglot would call it a date)
    kind = node.meta.get(_TYPE)
    if kind is not None and kind.is_type(exp.DataType.Type.DATE, exp.DataType.Type.DATE32):
        return _DATE
    unknown = kind is None or kind.is_type(exp.DataType.Type.UNKNOWN)
    if unknown and isinstance(node, _KEEPS_TYPE):
        return _kind(node.this, dates)
    return _MAYBE if unknown and isinstance(node, exp.Column) else _OTHER


def _date_arithmetic(tree: exp.Expr, target: str, dates: frozenset[str], known: bool = False) -> exp.Expr:
    """`d + n`, `n + d`, `d - n` and `d1 - d2` on dates, as DuckDB computes them: on MariaDB/MySQL where
    the SQL or the catalogue (`known`: the columns were annotated from it) says it is a date (DATE_ADD,
    DATEDIFF), refused where neither does; on SQLite also where only the table knows (a column), by the
    value's type there (dates are ISO text in SQLite, numbers are not)."""

    def change(node: exp.Expr) -> exp.Expr:
        if not isinstance(node, (exp.Add, exp.Sub)) or any(
            isinstance(side, exp.Interval) for side in (node.this, node.expression)
        ):
            return node
        out = _date_sum(node, _kind(node.this, dates), _kind(node.expression, dates), target)
        if out is _UNTOLD:
            column = next(s for s in (node.this, node.expression) if _kind(s, dates) == _MAYBE)
            raise ColumnTypeUnknown(node, next(column.find_all(exp.Column)), known)
        return out

    return tree.transform(change)


_UNTOLD = exp.Null()  # _date_sum's answer for a sum MariaDB cannot be told the meaning of


def _date_sum(node: exp.Add | exp.Sub, left: str, right: str, target: str) -> exp.Expr:
    """One `+` or `-`, with a date (or, on SQLite, a column that may hold one) on a side, as DuckDB means it."""
    a, b = node.this, node.expression
    add = isinstance(node, exp.Add)
    if add and left == _OTHER:  # `5 + d` is `d + 5`
        a, b, left, right = b, a, right, left
    sqlite = target == "sqlite"
    if left == _OTHER or (add and left == right == _DATE):
        return node  # numbers, or what DuckDB refuses (`n - d`, `d + d`)
    if not sqlite and _DATE not in (left, right):
        return _UNTOLD  # a column whose type MariaDB's arithmetic needs, and the SQL does not say
    if left == _DATE and (right == _OTHER or add):
        return _plus_days(a, b, not add, target)
    if not add and right == _DATE:  # a column less a date is a date less a date
        return _days_between(a, b, target)
    if not sqlite:
        return _UNTOLD  # a date less a column: a number of days or a date, by the column's type
    # SQLite, a column on a side: the value's type there decides (TYPEOF 'text' is a date)
    cases: list[tuple[exp.Expr, exp.Expr]] = []
    if not add and right == _MAYBE:
        both = _is_text(b) if left == _DATE else exp.and_(_is_text(a), _is_text(b))
        cases.append((both, _days_between(a, b, target)))
    if left == _MAYBE:
        cases.append((_is_text(a), _plus_days(a, b, not add, target)))
    if add and right == _MAYBE:
        cases.append((_is_text(b), _plus_days(b, a, False, target)))
    default = _plus_days(a, b, True, target) if left == _DATE else node.copy()
    return exp.Case(ifs=[exp.If(this=c, true=v) for c, v in cases], default=default)


def _is_text(node: exp.Expr) -> exp.Expr:
    return exp.EQ(this=exp.Anonymous(this="TYPEOF", expressions=[node.copy()]), expression=exp.Literal.string("text"))


def _plus_days(date: exp.Expr, days: exp.Expr, negative: bool, target: str) -> exp.Expr:
    if target == "mysql":
        kind = exp.DateSub if negative else exp.DateAdd
        return kind(this=date.copy(), expression=days.copy(), unit=exp.Var(this="DAY"))
    amount = exp.Neg(this=exp.Paren(this=days.copy())) if negative else days.copy()
    return exp.Anonymous(this="DATE", expressions=[_sqlite_date_value(date.copy()), _sqlite_modifier(amount, "day")])


def _days_between(a: exp.Expr, b: exp.Expr, target: str) -> exp.Expr:
    if target == "mysql":
        return exp.DateDiff(this=a.copy(), expression=b.copy())
    day = [exp.Anonymous(this="JULIANDAY", expressions=[_sqlite_date_value(x.copy())]) for x in (a, b)]
    return exp.cast(exp.Paren(this=exp.Sub(this=day[0], expression=day[1])), "INTEGER")


# -- every target ---------------------------------------------------------------------------------


def _named_order(tree: exp.Expr, target: str, columns: Columns | None) -> exp.Expr:
    """`ORDER BY 2` -> `ORDER BY <the second select item's alias, else the item>`. Beside `*` (or `t.*`)
    and on a set operation the position stays, but on MariaDB/MySQL, which cannot spell DuckDB's NULL order
    beside a position: there it names the column `*` gives there (`t.b`), from the tables' columns, or the
    set operation's column (PositionUnknown where it cannot be named and NULLs would come first)."""
    for query in list(tree.find_all(exp.Select, exp.SetOperation)):
        order = query.args.get("order")
        if order is None:
            continue
        positional = _starred(query) or isinstance(query, exp.SetOperation)
        names = _positions(query, columns, tree) if target == "mysql" or not positional else None
        for ordered in order.expressions:
            key = ordered.this
            if not (isinstance(key, exp.Literal) and key.is_int):
                continue
            if names is not None and 1 <= int(key.this) <= len(names):
                ordered.set("this", names[int(key.this) - 1].copy())
            elif (
                target == "mysql"
                and positional
                and bool(ordered.args.get("nulls_first")) == bool(ordered.args.get("desc"))
            ):
                raise PositionUnknown(key)  # MariaDB puts NULLs first ascending, last descending
    return tree


class PositionUnknown(Exception):
    """MariaDB/MySQL: `ORDER BY n` (`key`) beside `*`, or on a set operation, whose column cannot be named
    (the tables' columns are not known, or the column has no name); its NULL order cannot be spelled."""

    def __init__(self, key: exp.Expr):
        super().__init__(key.sql("duckdb"))
        self.key = key


def _starred(query: exp.Expr) -> bool:
    """Whether a query (the first of a set operation's) returns `*` or `t.*`."""
    while isinstance(query, exp.SetOperation):
        query = query.this
    return isinstance(query, exp.Select) and any(e.is_star for e in query.selects)


def _positions(query: exp.Expr, columns: Columns | None, tree: exp.Expr) -> list[exp.Expr] | None:
    """What `ORDER BY n` orders `query` by, for each n: a select item's alias, else the item; a column `*`
    gives, named with its table; a set operation's result column by its name. None where one cannot be
    told (a table's columns not known, a USING or NATURAL join beside `*`, a set operation's unnamed column)."""
    union = isinstance(query, exp.SetOperation)
    while isinstance(query, exp.SetOperation):
        query = query.this
    if not isinstance(query, exp.Select):
        return None
    out: list[exp.Expr] = []
    for item in query.expressions:
        if item.is_star:
            if any(j.args.get("using") or j.args.get("kind") == "NATURAL" for j in query.args.get("joins") or []):
                return None
            owner = item.table if isinstance(item, exp.Column) else ""
            sources = [s.this for s in _sources(query) if not owner or s.this.alias_or_name == owner]
            for source in sources:
                names = _source_columns(source, columns, tree)
                if names is None or not source.alias_or_name:
                    return None
                table = None if union else source.alias_or_name
                out += [exp.column(n, table=table, quoted=True) for n in names]
        elif isinstance(item, (exp.Alias, exp.Column)):
            out.append(
                exp.column(item.alias_or_name, quoted=_quoted(item))
                if union or isinstance(item, exp.Alias)
                else item.copy()
            )
        elif union:
            return None
        else:
            out.append(item.copy())
    return out


# -- SQLite ------------------------------------------------------------------------------------------


def _part(node: exp.Extract) -> str:
    return node.this.name.upper()


def _unit(node: exp.Interval) -> str:
    unit = node.args.get("unit")
    return (unit.name if unit is not None else "").upper().removesuffix("S")


def _interval_amount(node: exp.Interval) -> exp.Expr:
    amount = node.this
    if isinstance(amount, exp.Literal) and amount.is_string:
        return exp.Literal.number(amount.this)
    return amount.this if isinstance(amount, exp.Paren) else amount


def _sqlite_date_arithmetic(tree: exp.Expr) -> exp.Expr:
    """`d + INTERVAL n unit` and `d - INTERVAL n unit` as SQLite's date functions with a modifier."""

    def change(node: exp.Expr) -> exp.Expr:
        if not isinstance(node, (exp.Add, exp.Sub)) or not isinstance(node.expression, exp.Interval):
            return node
        interval = node.expression
        unit = _unit(interval)
        word = _DATE_UNITS.get(unit) or _TIME_UNITS.get(unit)
        amount = _interval_amount(interval)
        if unit == "WEEK":
            word, amount = "day", exp.Mul(this=exp.Paren(this=amount), expression=exp.Literal.number(7))
        if word is None:
            return node  # refused by `lacks`
        if isinstance(node, exp.Sub):
            amount = exp.Neg(this=exp.Paren(this=amount))
        function = "DATETIME" if unit in _TIME_UNITS else "DATE"
        return exp.Anonymous(this=function, expressions=[_sqlite_date_value(node.this), _sqlite_modifier(amount, word)])

    return tree.transform(change)


def _sqlite_modifier(amount: exp.Expr, word: str) -> exp.Expr:
    """SQLite's modifier for `amount` days (months, ...): `'+5 day'`, else `(n) || ' day'`, which is NULL
    when `n` is, as DuckDB's sum is (a modifier made with PRINTF would read NULL as 0)."""
    literal = amount.this if isinstance(amount, exp.Neg) and isinstance(amount.this, exp.Paren) else amount
    literal = literal.this if isinstance(literal, exp.Paren) else literal
    if isinstance(literal, exp.Literal) and not literal.is_string and literal.is_int:
        n = -int(literal.this) if isinstance(amount, exp.Neg) else int(literal.this)
        return exp.Literal.string(f"{n:+d} {word}")
    return exp.DPipe(this=exp.Paren(this=amount), expression=exp.Literal.string(f" {word}"))


def _sqlite_date_value(node: exp.Expr) -> exp.Expr:
    """The date a modifier applies to: a DuckDB `DATE '...'` or `CAST(x AS DATE)` is the value itself."""
    if isinstance(node, exp.Cast) and node.to.is_type("date"):
        return node.this
    return node


def _sqlite_extract(tree: exp.Expr) -> exp.Expr:
    def change(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Extract) and _part(node) in _STRFTIME:
            text = exp.Anonymous(
                this="STRFTIME", expressions=[exp.Literal.string(_STRFTIME[_part(node)]), node.expression]
            )
            return exp.cast(text, "INTEGER")
        return node

    return tree.transform(change)


def _bare_set_members(tree: exp.Expr) -> exp.Expr:
    """`(SELECT ...) EXCEPT (SELECT ...)` -> `SELECT ... EXCEPT SELECT ...` where a member has no ORDER/LIMIT."""
    for union in tree.find_all(exp.SetOperation):
        for key in ("this", "expression"):
            member = union.args.get(key)
            if isinstance(member, exp.Subquery) and not member.alias and isinstance(member.this, exp.Select):
                inner = member.this
                if not any(inner.args.get(k) for k in ("order", "limit", "offset")):
                    union.set(key, inner)
    return tree


# -- derived tables' column lists (MariaDB/MySQL, SQLite) ---------------------------------------------


def _column_list_as_aliases(tree: exp.Expr) -> exp.Expr:
    """`(SELECT a, b ...) AS t (x, y)` -> `(SELECT a AS x, b AS y ...) AS t`."""
    for subquery in list(tree.find_all(exp.Subquery)):
        alias = subquery.args.get("alias")
        columns = alias.args.get("columns") if alias is not None else None
        inner = subquery.this
        if alias is None or not columns or not isinstance(inner, exp.Select) or len(inner.expressions) != len(columns):
            continue
        if any(isinstance(e, exp.Star) for e in inner.expressions):
            continue
        inner.set("expressions", [exp.alias_(e.unalias(), c.name) for e, c in zip(inner.expressions, columns)])
        alias.set("columns", None)
    return tree


# -- PostgreSQL ------------------------------------------------------------------------------------


def _interval_of_expression(tree: exp.Expr) -> exp.Expr:
    """`INTERVAL (expr) DAY` -> `(expr) * INTERVAL '1 DAY'`: PostgreSQL's and Spark's INTERVAL take a
    literal only (PostgreSQL's translation would drop the placeholder, Spark's is a syntax error)."""

    def change(node: exp.Expr) -> exp.Expr:
        if not isinstance(node, exp.Interval) or isinstance(node.this, exp.Literal) or node.args.get("unit") is None:
            return node
        one = exp.Interval(this=exp.Literal.string("1"), unit=node.args["unit"].copy())
        return exp.Paren(this=exp.Mul(this=exp.Paren(this=_interval_amount(node)), expression=one))

    return tree.transform(change)


def _double_division(tree: exp.Expr) -> exp.Expr:
    """DuckDB's `/` and AVG give DOUBLE; MariaDB's give DECIMAL cut to `div_precision_increment` (4)
    more digits (AVG of 0.0500813... is 0.050081), Spark's a DECIMAL of scale 6 at most. Both are
    computed in DOUBLE there too."""

    def change(node: exp.Expr) -> exp.Expr:
        if (isinstance(node, exp.Div) and not _is_double(node.this)) or (
            isinstance(node, exp.Avg) and not _is_double(node.this)
        ):
            node.set("this", exp.cast(node.this, "DOUBLE"))
        return node

    return tree.transform(change)


def _is_double(node: exp.Expr) -> bool:
    return isinstance(node, exp.Cast) and node.to.is_type("double")


def _mysql_rollup(tree: exp.Expr) -> exp.Expr:
    """`GROUP BY ROLLUP (a, b)` -> `GROUP BY a, b WITH ROLLUP`, MariaDB's and MySQL's spelling. MariaDB
    refuses ORDER BY beside it, so the rolled-up query is ordered from outside (`SELECT * FROM (...)`)."""
    for group in list(tree.find_all(exp.Group)):
        items = group.expressions
        if len(items) == 1 and isinstance(items[0], exp.Rollup) and not group.args.get("rollup"):
            group.set("expressions", [e.copy() for e in items[0].expressions])
            group.set("rollup", [exp.Rollup()])
            select = group.parent
            if isinstance(select, exp.Select) and select.args.get("order") is not None:
                tree = _order_from_outside(tree, select)
    return tree


def _order_from_outside(tree: exp.Expr, select: exp.Select) -> exp.Expr:
    order, limit = select.args["order"], select.args.get("limit")
    outputs = {e.alias_or_name.lower() for e in select.expressions}
    keys = [o.this for o in order.expressions]
    if not all(isinstance(k, exp.Column) and k.name.lower() in outputs for k in keys):
        return tree  # refused by `lacks` (ROLLUP with an ORDER BY on what the query does not return)
    select.set("order", None)
    select.set("limit", None)
    for o in order.expressions:
        o.set("this", exp.column(o.this.name))
    outer = exp.select("*").from_(
        exp.Subquery(this=select.copy(), alias=exp.TableAlias(this=exp.to_identifier("mcpgen_r")))
    )
    outer.set("order", order)
    if limit is not None:
        outer.set("limit", limit)
    if select is tree:
        return outer
    select.replace(outer)
    return tree


_NO_QUALIFY = ("postgres", "mysql", "sqlite", "spark")  # sqlglot writes QUALIFY as a filter on a subquery


def _qualify_ordered_outside(tree: exp.Expr) -> exp.Expr:
    """sqlglot writes `... QUALIFY f ORDER BY k LIMIT n` as `SELECT ... FROM (... ORDER BY k LIMIT n) WHERE
    f`: the limit cuts before the filter and the order is lost. ORDER BY, LIMIT and OFFSET move to a query
    around it; a sort key that is not a result column is carried out as a hidden one (`mcpgen_k1`)."""
    for select in list(tree.find_all(exp.Select)):
        moved = {k: select.args.get(k) for k in ("order", "limit", "offset")}
        if select.args.get("qualify") is None or not any(moved.values()):
            continue
        items, names = list(select.expressions), _result_names(select)
        hidden: list[exp.Expr] = []
        for ordered in moved["order"].expressions if moved["order"] else []:
            key = ordered.this
            if isinstance(key, exp.Literal) and key.is_int and 1 <= int(key.this) <= len(items):
                key = items[int(key.this) - 1]
                if isinstance(key, (exp.Alias, exp.Column)):
                    ordered.set("this", exp.column(key.alias_or_name, quoted=_quoted(key)))
                continue
            if not _hidden_key(key, names):
                continue
            name = f"mcpgen_k{len(hidden) + 1}"
            hidden.append(exp.alias_(key.copy(), name))
            ordered.set("this", exp.column(name))
        for k in moved:
            select.set(k, None)
        outer = exp.select(*(exp.column(e.alias_or_name, quoted=_quoted(e)) for e in items) if hidden else "*")
        if hidden:
            select.set("expressions", [*items, *hidden])
        outer = outer.from_(exp.Subquery(this=select.copy(), alias=exp.TableAlias(this=exp.to_identifier("mcpgen_q"))))
        for k, value in moved.items():
            outer.set(k, value)
        if select is tree:
            tree = outer
        else:
            select.replace(outer)
    return tree


def _hides_sort_keys(select: exp.Select) -> bool:
    """Whether `_qualify_ordered_outside` carries a sort key of `select` out as a hidden column."""
    order = select.args.get("order")
    if select.args.get("qualify") is None or order is None:
        return False
    return any(_hidden_key(o.this, _result_names(select)) for o in order.expressions)


def _result_names(select: exp.Select) -> set[str] | None:
    """The names of `select`'s result columns, lower case (None when it returns `*`)."""
    if any(isinstance(e, exp.Star) or (isinstance(e, exp.Column) and e.is_star) for e in select.expressions):
        return None
    return {e.alias_or_name.lower() for e in select.expressions if isinstance(e, (exp.Alias, exp.Column))}


def _hidden_key(key: exp.Expr, names: set[str] | None) -> bool:
    """Whether a sort key is neither a position (`ORDER BY 1`) nor a result column's name (`names`; None:
    the query returns `*`, so any table's column)."""
    if isinstance(key, exp.Literal) and key.is_int:
        return False
    return not (isinstance(key, exp.Column) and not key.table and (names is None or key.name.lower() in names))


def _quoted(item: exp.Expr) -> bool:
    """Whether a select item's name is written quoted (its alias, else its column)."""
    name = item.args.get("alias") if isinstance(item, exp.Alias) else item.this
    return isinstance(name, exp.Identifier) and bool(name.quoted)


def _derived_table_aliases(tree: exp.Expr) -> exp.Expr:
    """A subquery in FROM or JOIN gets a name where it has none: PostgreSQL (before 16), MariaDB and
    MySQL require one."""
    n = 0
    for subquery in list(tree.find_all(exp.Subquery)):
        if subquery.alias or not isinstance(subquery.parent, (exp.From, exp.Join)):
            continue
        n += 1
        subquery.set("alias", exp.TableAlias(this=exp.to_identifier(f"mcpgen_t{n}")))
    return tree


def _aliases_in_order_expressions(tree: exp.Expr, columns: _Known, qualified: bool = False) -> exp.Expr:
    """`SELECT a + b AS s ... ORDER BY CASE WHEN s = 0 THEN ...`: DuckDB reads `s` inside an ORDER BY
    expression as the select item when no table column has that name, and as the column where one has;
    PostgreSQL reads only a bare `ORDER BY s` as the item, Spark reads the item there too even where a
    column has its name. The item is written out, unless `s` is also a column, which is then named with its
    table where the target reads the item (`qualified`: Spark)."""
    for select in tree.find_all(exp.Select):
        order = select.args.get("order")
        if order is None:
            continue
        named = _renamed_items(select.expressions)
        for ordered in order.expressions:
            if isinstance(ordered.this, exp.Column):
                continue
            for column in list(ordered.this.find_all(exp.Column)):
                if column.table or column.name.lower() not in named or column.find_ancestor(exp.Select) is not select:
                    continue  # a subquery's: `_aliases_in_subqueries`
                if not _is_input_column(select, column, columns, tree):
                    column.replace(exp.Paren(this=named[column.name.lower()].copy()))
                elif qualified:
                    column.set("table", exp.to_identifier(_owner(select, column, columns, tree)))
    return tree


def _aliases_in_having(tree: exp.Expr) -> exp.Expr:
    """`SELECT c, sum(b) AS a ... GROUP BY c HAVING a > 25`: DuckDB reads `a` in HAVING (outside an
    aggregate) as the select item unless a grouped column has that name; PostgreSQL and SQLite read the
    table's column (PostgreSQL refuses an ungrouped one, SQLite takes any row's). The item is written out."""
    for select in tree.find_all(exp.Select):
        having = select.args.get("having")
        if having is None:
            continue
        named = _renamed_items(select.expressions)
        group = select.args.get("group")
        grouped = {c.name.lower() for c in group.expressions if isinstance(c, exp.Column)} if group else set()
        for column in list(having.find_all(exp.Column)):
            name = column.name.lower()
            if column.table or name not in named or name in grouped or column.find_ancestor(exp.AggFunc):
                continue
            if column.find_ancestor(exp.Select) is select:
                column.replace(exp.Paren(this=named[name].copy()))
    return tree


def _renamed_items(items: list[exp.Expr]) -> dict[str, exp.Expr]:
    """The select items named by an alias other than their own column's name: alias -> expression."""
    return {
        e.alias.lower(): e.this
        for e in items
        if isinstance(e, exp.Alias) and not (isinstance(e.this, exp.Column) and e.this.name == e.alias)
    }


def _aliases_written_out(places: frozenset[str]) -> Callable[[exp.Expr, _Known], exp.Expr]:
    """`SELECT price * qty AS total ... WHERE total > 10`: DuckDB reads a select alias in WHERE, in a
    window's PARTITION BY / ORDER BY and in a later select item when no table's column has its name. The
    item is written out in `places` ("where", "window", "select"), where the target does not read it
    (PostgreSQL reads none there). An aggregate's alias in WHERE or in an aggregate, and a subquery's in the
    select list, a window or an ORDER BY expression, which DuckDB refuses too, are refused on every target
    where the tables' columns show it is no column of theirs."""

    def step(tree: exp.Expr, known: _Known) -> exp.Expr:
        for select in list(tree.find_all(exp.Select)):
            items = select.expressions
            for i, item in enumerate(items):  # in order: an item is written out with those before it
                columns = [c for c in item.find_all(exp.Column) if not _in_window_spec(c)]
                _write_out(select, columns, _renamed_items(items[:i]), "select" in places, known, tree)
            named = _renamed_items(items)
            where = select.args.get("where")
            _write_out(select, list(where.find_all(exp.Column)) if where else [], named, "where" in places, known, tree)
            spec = [c for c in select.find_all(exp.Column) if _in_window_spec(c)]
            _write_out(select, spec, named, "window" in places, known, tree)
            order = select.args.get("order")
            keys = [o.this for o in order.expressions if not isinstance(o.this, exp.Column)] if order else []
            _write_out(select, [c for k in keys for c in k.find_all(exp.Column)], named, False, known, tree)
        return tree

    return step


def _write_out(
    select: exp.Select, columns: list[exp.Column], named: dict[str, exp.Expr], change: bool, known: _Known, tree
) -> None:
    """Each of `select`'s own `columns` that names an item of `named` and no table's column: replaced by the
    item (`change`). Where DuckDB refuses the item there (`_refused_there`), the name can only be a table's
    column: refused when the tables' columns say it is not one."""
    for column in columns:
        item = named.get(column.name.lower())
        if item is None or column.table or column.find_ancestor(exp.Select) is not select:
            continue
        refused = _refused_there(column, item)
        if refused:
            found = _input_columns(select, known.columns, tree)
            if found is not None and column.name.lower() not in found:
                raise MisplacedAlias(column, _place(column), refused)
            if found is None and not _names_itself(select, column.name.lower()):
                _refused_unless_column(known, column, _place(column), refused)
        elif change and not _is_input_column(select, column, known, tree):
            column.replace(exp.Paren(this=item.copy()))


_AGGREGATE, _SUBQUERY = "an aggregate or window function", "a subquery"  # what DuckDB refuses an alias of


def _refused_there(column: exp.Column, item: exp.Expr) -> str | None:
    """What DuckDB refuses `item` as where `column` names it (None: nothing): an aggregate or window function
    in WHERE, or inside an aggregate (outside a window's), a window function inside a window function; a
    subquery anywhere but WHERE ("Alias referenced in a SELECT clause - but the expression has a subquery")."""
    aggregate, window = _has(item, exp.AggFunc), _has(item, exp.Window)
    if isinstance(column.find_ancestor(exp.Where, exp.Select), exp.Where):
        return _AGGREGATE if aggregate or window else None
    in_aggregate = column.find_ancestor(exp.AggFunc) is not None
    if in_aggregate and aggregate and not isinstance(column.find_ancestor(exp.Window, exp.Select), exp.Window):
        return _AGGREGATE
    if window and (in_aggregate or column.find_ancestor(exp.Window) is not None):
        return _AGGREGATE
    return _SUBQUERY if item.find(exp.Query) is not None else None


def _has(item: exp.Expr, kind: type[exp.Expr]) -> bool:
    """Whether `item` holds a `kind` of its own, not one of a subquery in it (`(SELECT max(v) FROM u) + a`
    is no aggregate)."""
    for node in item.find_all(kind):
        around: exp.Expr | None = node
        while around is not None and around is not item and not isinstance(around, exp.Query):
            around = around.parent
        if around is item:
            return True
    return False


class AliasAt(Exception):
    """A select alias named by `column` at `place` (a clause, as a sentence names it) that the target cannot
    be given as DuckDB reads it; the message is the name as written."""

    def __init__(self, column: exp.Expr, place: str):
        super().__init__(column.sql("duckdb"))
        self.column, self.place = column, place


class InputColumnsUnknown(AliasAt):
    """`column` is a select alias and may also be a column of the query's tables, whose columns neither
    the SQL nor the database's catalogue (not asked) tells; the engines read it differently."""


class RefusedUnlessColumn(InputColumnsUnknown):
    """`column` names a select alias (of `what`: an aggregate or window function, a subquery; None: any)
    where DuckDB refuses it, unless a table has a column of its name, which is not known."""

    def __init__(self, column: exp.Expr, place: str, what: str | None = None):
        super().__init__(column, place)
        self.what = what


def _refused_unless_column(known: _Known, column: exp.Column, place: str, what: str | None = None) -> None:
    """Without the catalogue (`known.guessed`), a refusal that waits for it is added there: a warning now,
    checked again with the tables' columns."""
    if known.guessed is not None:
        known.guessed.append(RefusedUnlessColumn(column, place, what))


class _Known(NamedTuple):
    """The database's columns (None: not read) and where to add the aliases read as no table's column
    because they are not known (None: raise InputColumnsUnknown)."""

    columns: Columns | None
    guessed: list[InputColumnsUnknown] | None


def _is_input_column(select: exp.Select, column: exp.Column, known: _Known, tree: exp.Expr) -> bool:
    """Whether the tables `select` reads from have a column of `column`'s name: the select item of that
    name reads one (`upper(name) AS name`), or the tables' columns say so (when that cannot be told:
    InputColumnsUnknown, raised or added to `known.guessed`, and False)."""
    name = column.name.lower()
    if _names_itself(select, name):
        return True
    found = _input_columns(select, known.columns, tree)
    if found is None:
        if known.guessed is None:
            raise InputColumnsUnknown(column, _place(column))
        known.guessed.append(InputColumnsUnknown(column, _place(column)))
        return False
    return name in found


def _names_itself(select: exp.Select, name: str) -> bool:
    """Whether `select`'s item named `name` reads a column of that name (`upper(name) AS name`)."""
    item = _renamed_items(select.expressions).get(name)
    return item is not None and any(
        c.name.lower() == name and c.find_ancestor(exp.Select) is select for c in item.find_all(exp.Column)
    )


def _place(node: exp.Expr) -> str:
    """The clause `node` is in, as the refusal names it."""
    if _in_window_spec(node):
        return "a window's ORDER BY or PARTITION BY"
    around: exp.Expr | None = node
    while around is not None:
        for kind, name in _PLACES:
            if isinstance(around, kind):
                return name
        around = around.parent
    return "the query"


_PLACES = (
    (exp.Qualify, "QUALIFY"),
    (exp.Group, "GROUP BY"),
    (exp.Order, "ORDER BY"),
    (exp.Where, "WHERE"),
    (exp.Having, "HAVING"),
    (exp.Select, "the select list"),
)


def _in_window_spec(node: exp.Expr) -> bool:
    """Whether `node` is in a window's PARTITION BY or ORDER BY (not in the function it applies to)."""
    child, around = node, node.parent
    while around is not None and not isinstance(around, exp.Select):
        if isinstance(around, exp.Window) and child is not around.this:
            return True
        child, around = around, around.parent
    return False


def _sources(select: exp.Select) -> list[exp.Expr]:
    """`select`'s FROM and its JOINs."""
    return [s for s in (select.args.get("from_"), *(select.args.get("joins") or [])) if s is not None]


def _input_columns(select: exp.Select, columns: Columns | None, tree: exp.Expr) -> set[str] | None:
    """The names of the columns `select`'s FROM and JOINs give, lower case: from the database's catalogue
    (`columns`) for a table, from the query for a CTE or subquery; None where that cannot be told."""
    found: set[str] = set()
    for source in _sources(select):
        names = _source_columns(source.this, columns, tree)
        if names is None:
            return None
        found |= {n.lower() for n in names}
    return found


def _source_columns(relation: exp.Expr, columns: Columns | None, tree: exp.Expr) -> list[str] | None:
    """The columns a FROM or JOIN source gives, in order: from the database's catalogue (`columns`) for a
    table, from the query for a CTE or subquery; None where that cannot be told."""
    alias = relation.args.get("alias")
    if alias is not None and alias.args.get("columns"):  # `... AS s (x, y)` names them
        return [c.name for c in alias.args["columns"]]
    ctes = {c.alias.lower(): c.this for c in tree.find_all(exp.CTE)}
    if isinstance(relation, exp.Table) and not relation.db and relation.name.lower() in ctes:
        relation = ctes[relation.name.lower()]
    if isinstance(relation, exp.Table):
        table = f"{relation.db}.{relation.name}".lower() if relation.db else relation.name.lower()
        catalogue = {t.lower(): c for t, c in (columns or {}).items()}
        return list(catalogue[table]) if table in catalogue else None
    inner = relation.this if isinstance(relation, exp.Subquery) else relation
    if not isinstance(inner, exp.Query) or any(e.is_star for e in inner.selects):
        return None
    return list(inner.named_selects)


def _refuse_qualify_on_shadowing_alias(tree: exp.Expr, columns: _Known) -> exp.Expr:
    """sqlglot writes QUALIFY, which PostgreSQL, MariaDB/MySQL, SQLite and Spark lack, as a filter on a subquery
    and writes each select alias in it out as its expression; DuckDB reads a name that is also a table's
    column as the column. No rewrite keeps that reading: such a QUALIFY is refused."""
    for qualify in tree.find_all(exp.Qualify):
        select = qualify.parent
        if not isinstance(select, exp.Select):
            continue
        named = _renamed_items(select.expressions)
        for column in qualify.find_all(exp.Column):
            if not column.table and column.name.lower() in named and _is_input_column(select, column, columns, tree):
                raise ShadowingAlias(column, "QUALIFY")
    return tree


class ShadowingAlias(AliasAt):
    """`column` is both a select alias and a table's column at `place`, and the target has no spelling
    that reads it as DuckDB does."""


class MisplacedAlias(AliasAt):
    """`column`, at `place`, names the alias of `what` (an aggregate or window function, a subquery), which
    DuckDB refuses there."""

    def __init__(self, column: exp.Expr, place: str, what: str = _AGGREGATE):
        super().__init__(column, place)
        self.what = what


def _mysql_shadowed_columns(tree: exp.Expr, columns: _Known) -> exp.Expr:
    """DuckDB reads a name in GROUP BY or in a window's ORDER BY / PARTITION BY as the table's column
    where there is one, MariaDB/MySQL as the select alias of that name: the column is written with its
    table's name there (`GROUP BY t.a`), which both read as the column."""
    for select in list(tree.find_all(exp.Select)):
        named = _renamed_items(select.expressions)
        if not named:
            continue
        places = [select.args.get("group"), *(w for e in select.expressions for w in e.find_all(exp.Window))]
        for place in places:
            if place is None:
                continue
            for column in list(place.find_all(exp.Column)):
                if column.table or column.name.lower() not in named:
                    continue
                if _is_input_column(select, column, columns, tree):
                    column.set("table", exp.to_identifier(_owner(select, column, columns, tree)))
    return tree


def _owner(select: exp.Select, column: exp.Column, columns: _Known, tree: exp.Expr) -> str:
    """The name (or alias) of the one FROM/JOIN source that gives `column` (the only one there is)."""
    sources = _sources(select)
    if len(sources) == 1 and sources[0].this.alias_or_name:
        return sources[0].this.alias_or_name
    owners = []
    for source in sources:
        probe = exp.Select(expressions=[exp.Star()]).from_(source.this.copy())
        if column.name.lower() in (_input_columns(probe, columns.columns, tree) or set()):
            owners.append(source.this.alias_or_name)
    if len(owners) != 1:
        raise ShadowingAlias(column, _place(column))
    return owners[0]


# The clauses of a query a subquery may be in, as a sentence names them; DuckDB reads the query's select
# aliases in a subquery in the first three (in the select list, those of the items before it).
_SUBQUERY_PLACES = {"where": "WHERE", "expressions": "the select list", "order": "ORDER BY", "having": "HAVING"}
# Where DuckDB reads none of them, even in a subquery ("Referenced column not found in FROM clause"); SQLite
# reads them in JOIN ... ON and in a subquery of GROUP BY, so each is refused where it names no column.
_UNREAD_PLACES = {"from_": "FROM", "joins": "JOIN", "group": "GROUP BY"}


def _aliases_in_subqueries(tree: exp.Expr, known: _Known) -> exp.Expr:
    """`SELECT a * 2 AS d FROM t WHERE EXISTS (SELECT 1 FROM u WHERE u.v = d)`: DuckDB reads a name in a
    subquery that is a column of none of the tables in between as a select alias of the query around it,
    in its WHERE, select list (an earlier item's) and ORDER BY. PostgreSQL and Spark read none there,
    MariaDB/MySQL none in WHERE nor an aggregate's, SQLite none in the select list; on every target the
    item is written out, its columns named with their table (the subquery's tables may have columns of
    those names). An alias DuckDB refuses there (in HAVING, an aggregate's in WHERE, a window
    function's) is refused where the tables' columns show it is no column."""
    for select in list(tree.find_all(exp.Select)):
        items = select.expressions
        for column in list(select.find_all(exp.Column)):
            if column.table or column.find_ancestor(exp.Select) is select:
                continue
            top = _clause(column, select)
            place = _SUBQUERY_PLACES.get(top.arg_key or "")
            if place is None:
                continue
            before = items[: items.index(top)] if top.arg_key == "expressions" else items
            item = _renamed_items(before).get(column.name.lower())
            if item is None:
                continue
            at = f"a subquery in {place}"
            reading = _alias_reading(column, select, known, tree, place != "HAVING")
            window, aggregate = _has(item, exp.Window), _has(item, exp.AggFunc)
            if place == "HAVING" or window or (aggregate and place == "WHERE"):
                what = _AGGREGATE if place != "HAVING" else None
                if reading:
                    raise (MisplacedAlias if what else AliasInSubquery)(column, at)
                if reading is None:
                    _refused_unless_column(known, column, at, what)
                continue
            if reading is None:
                if known.guessed is None:
                    raise InputColumnsUnknown(column, at)
                known.guessed.append(InputColumnsUnknown(column, at))
            if reading is not False:
                column.replace(exp.Paren(this=_with_tables(item, select, column, known, tree, at)))
    return tree


def _refuse_unread_aliases(tree: exp.Expr, known: _Known) -> exp.Expr:
    """`SELECT a * 2 AS d FROM t JOIN u ON u.v = d`: DuckDB reads no select alias in JOIN ... ON, nor in a
    subquery in FROM, JOIN or GROUP BY ("Referenced column not found in FROM clause"); SQLite reads one in
    the first and the last. Refused where no table in scope has a column of its name (the column otherwise,
    as on every engine)."""
    for select in list(tree.find_all(exp.Select)):
        named = _renamed_items(select.expressions)
        for column in list(select.find_all(exp.Column)):
            own = column.find_ancestor(exp.Select) is select
            if column.table or column.name.lower() not in named:
                continue
            if own and not isinstance(column.find_ancestor(exp.Join, exp.Select), exp.Join):
                continue  # GROUP BY's own names are read as aliases
            place = _UNREAD_PLACES.get(_clause(column, select).arg_key or "")
            if place is None:
                continue
            at, reading = (
                f"{place} ... ON" if own else f"a subquery in {place}",
                _alias_reading(column, select, known, tree),
            )
            if reading:
                raise AliasInSubquery(column, at)
            if reading is None:
                _refused_unless_column(known, column, at)
    return tree


def _clause(node: exp.Expr, select: exp.Select) -> exp.Expr:
    """The child of `select` that holds `node` (its arg_key names the clause)."""
    while node.parent is not None and node.parent is not select:
        node = node.parent
    return node


def _alias_reading(
    column: exp.Column, select: exp.Select, known: _Known, tree: exp.Expr, outer: bool = True
) -> bool | None:
    """Whether DuckDB reads `column`, in a subquery of `select`, as `select`'s alias of its name: False where
    a query in between has a column or an alias of that name, or (`outer`) `select`'s tables have the
    column; None where the tables' columns cannot be told."""
    name, unknown = column.name.lower(), False
    around = column.find_ancestor(exp.Select)
    while around is not None:
        if around is not select and name in _renamed_items(around.expressions):
            return False
        if around is select and not outer:
            break
        found = _input_columns(around, known.columns, tree)
        if (found is not None and name in found) or (around is select and _names_itself(select, name)):
            return False
        unknown = unknown or found is None
        around = around.parent.find_ancestor(exp.Select) if around is not select and around.parent else None
    return None if unknown else True


def _with_tables(
    item: exp.Expr, select: exp.Select, column: exp.Column, known: _Known, tree: exp.Expr, at: str
) -> exp.Expr:
    """A copy of `item` whose columns (those of `select`'s tables) are named with their table, for a
    subquery of `select` where `column` is; refused where a table cannot be told, or where a query in
    between names one of its own tables the same."""
    copy = item.copy()
    inner: set[str] = set()
    around = column.find_ancestor(exp.Select)
    while around is not None and around is not select:
        inner |= {s.this.alias_or_name.lower() for s in _sources(around)}
        around = around.parent.find_ancestor(exp.Select) if around.parent else None
    for own in list(copy.find_all(exp.Column)):
        if own.find_ancestor(exp.Select) is not None:
            continue  # a column of a subquery in the item
        table = own.table or _owner_of(select, own, known, tree)
        if not table or table.lower() in inner:
            raise AliasInSubquery(column, at, own.sql("duckdb"))
        own.set("table", exp.to_identifier(table))
    return copy


def _owner_of(select: exp.Select, column: exp.Column, known: _Known, tree: exp.Expr) -> str | None:
    """The name of the one table of `select` that has `column` (None where that cannot be told)."""
    sources = _sources(select)
    if len(sources) == 1:
        return sources[0].this.alias_or_name or None
    owners = []
    for source in sources:
        found = _input_columns(exp.Select(expressions=[exp.Star()]).from_(source.this.copy()), known.columns, tree)
        if found is None:
            return None
        if column.name.lower() in found:
            owners.append(source.this.alias_or_name)
    return owners[0] if len(owners) == 1 else None


class AliasInSubquery(AliasAt):
    """`column`, at `place` (a subquery in a clause, or JOIN ... ON), names a select alias of the query around
    it that the target cannot be given as DuckDB reads it: where DuckDB refuses it (a subquery in HAVING,
    FROM, JOIN or GROUP BY; JOIN ... ON), or whose expression's column `unowned` cannot be named with its
    table there."""

    def __init__(self, column: exp.Expr, place: str, unowned: str | None = None):
        super().__init__(column, place)
        self.unowned = unowned


def duckdb_name(item: exp.Expr) -> str:
    """The header DuckDB gives an unnamed result column, as near as its parser's printing goes:
    `sum(x)`, `count_star()`, `substr(s, 1, 20)`."""

    copy = item.copy()
    for node in reversed(list(copy.find_all(exp.Count, exp.Binary))):
        new: exp.Expr | None = None
        if isinstance(node, exp.Count) and isinstance(node.this, exp.Star):
            new = exp.Anonymous(this="count_star", expressions=[])
        elif isinstance(node, exp.Binary) and not isinstance(node.parent, exp.Paren):
            new = exp.Paren(this=node.copy())
        if new is not None and node is copy:
            copy = new
        elif new is not None:
            node.replace(new)
    text = copy.sql("duckdb", normalize_functions="lower")
    return text.replace("substring(", "substr(")


def _name_unnamed_columns(tree: exp.Expr) -> exp.Expr:
    """The outermost query's unnamed columns get DuckDB's names for them (each engine names them its own
    way: PostgreSQL calls every SUM `sum`, so two of them are one name twice)."""
    if not isinstance(tree, exp.Select):
        return tree
    taken = {e.alias_or_name.lower() for e in tree.expressions if isinstance(e, (exp.Alias, exp.Column))}
    items = []
    for item in tree.expressions:
        if not isinstance(item, (exp.Alias, exp.Column, exp.Star)):
            name = duckdb_name(item)
            if name.lower() not in taken:
                taken.add(name.lower())
                item = exp.alias_(item, exp.to_identifier(name, quoted=True))
        items.append(item)
    tree.set("expressions", items)
    return tree


_STEPS: dict[str, tuple[Callable[[exp.Expr], exp.Expr], ...]] = {
    "sqlite": (
        _sqlite_date_arithmetic,
        _sqlite_extract,
        _bare_set_members,
        _column_list_as_aliases,
        _aliases_in_having,
    ),
    "mysql": (_column_list_as_aliases, _mysql_rollup, _derived_table_aliases, _double_division),
    "postgres": (_interval_of_expression, _derived_table_aliases, _aliases_in_having),
    "spark": (_interval_of_expression, _double_division, _aliases_in_having),
}

# The steps that need to know the tables' columns (the database's catalogue, when it was read).
_NAMING_STEPS: dict[str, tuple[Callable[[exp.Expr, _Known], exp.Expr], ...]] = {
    "sqlite": (
        _refuse_qualify_on_shadowing_alias,
        _aliases_written_out(frozenset({"window", "select"})),
        _aliases_in_subqueries,
        _refuse_unread_aliases,
    ),
    "mysql": (
        _refuse_qualify_on_shadowing_alias,
        _aliases_written_out(frozenset({"where", "select"})),
        _aliases_in_subqueries,
        _refuse_unread_aliases,
        _mysql_shadowed_columns,
    ),
    "postgres": (
        _refuse_qualify_on_shadowing_alias,
        _aliases_written_out(frozenset({"where", "window", "select"})),
        _aliases_in_subqueries,
        _refuse_unread_aliases,
        _aliases_in_order_expressions,
    ),
    "spark": (
        _refuse_qualify_on_shadowing_alias,
        _aliases_written_out(frozenset({"where", "window", "select"})),
        _aliases_in_subqueries,
        _refuse_unread_aliases,
        functools.partial(_aliases_in_order_expressions, qualified=True),
    ),
}
