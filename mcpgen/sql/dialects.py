"""What sqlglot does not translate from DuckDB SQL, kept in one place: rewrites of the parsed query for a
target dialect (applied before sqlglot writes it), and the constructs a target cannot express at all,
refused with where they are. `transpile` runs both, once, when the project loads.

Each rewrite keeps the result DuckDB gives:

- SQLite: `d + INTERVAL n unit` is `DATE(d, PRINTF('%+d unit', n))` (DATETIME for hours, minutes,
  seconds; `validate` warns that month arithmetic past day 28 differs); `EXTRACT(YEAR FROM d)` is `CAST(STRFTIME('%Y', d) AS INTEGER)`; a parenthesized member of
  UNION / EXCEPT / INTERSECT loses its parentheses (SQLite reads none there).
- MariaDB/MySQL and SQLite: a derived table's column list, `(SELECT a, b ...) AS t (x, y)`, becomes
  aliases inside it (`SELECT a AS x, b AS y ...`).
- MariaDB/MySQL and Spark: `/` and AVG are computed in DOUBLE, as DuckDB's are (MariaDB's DECIMAL result
  keeps only 4 more digits, Spark's 6); `GROUP BY ROLLUP (a)` is `GROUP BY a WITH ROLLUP`, ordered from an outer query; a
  subquery in FROM gets a name (PostgreSQL too).
- PostgreSQL and Spark: a select alias used inside an ORDER BY expression is written out.
- Every target: the outermost query's unnamed columns are named as DuckDB names them (`sum(x)`,
  `count_star()`; `validate` warns, since the name is a near guess).
- PostgreSQL and Spark: `INTERVAL (expr) DAY` is `(expr) * INTERVAL '1 DAY'`, so a bound value stays bound.
- Every target: `ORDER BY 1` names what it orders by (the column's alias, else the expression), so
  DuckDB's NULLS LAST can be spelled where the target needs it spelled out.

>>> from mcpgen.sql.transpile import transpile
>>> print(transpile("SELECT d - INTERVAL (:n) DAY AS e FROM t", "duckdb", "sqlite"))
SELECT
  DATE(d, PRINTF('%+d day', -:n)) AS e
FROM t
"""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

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


def rewrite(tree: exp.Expr, target: str) -> exp.Expr:
    """`tree` (parsed as DuckDB SQL) rewritten where sqlglot's `target` generator would not keep its meaning."""
    for step in (_name_unnamed_columns, *_STEPS.get(target, ()), _named_order):
        tree = step(tree)
    return tree


# -- every target ---------------------------------------------------------------------------------


def _named_order(tree: exp.Expr) -> exp.Expr:
    """`ORDER BY 2` -> `ORDER BY <the second select item's alias, else the item>`."""
    for select in tree.find_all(exp.Select):
        order = select.args.get("order")
        if order is None or any(isinstance(e, exp.Star) for e in select.expressions):
            continue
        for ordered in order.expressions:
            key = ordered.this
            if isinstance(key, exp.Literal) and key.is_int and 1 <= int(key.this) <= len(select.expressions):
                item = select.expressions[int(key.this) - 1]
                named = isinstance(item, exp.Alias)
                ordered.set("this", exp.column(item.alias, quoted=False) if named else item.copy())
    return tree


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
        if isinstance(node, exp.Sub) and isinstance(amount, exp.Literal):
            amount = exp.Literal.number(-int(amount.this))
        elif isinstance(node, exp.Sub):
            simple = isinstance(amount, (exp.Placeholder, exp.Column))
            amount = exp.Neg(this=amount if simple else exp.Paren(this=amount))
        modifier = exp.Anonymous(this="PRINTF", expressions=[exp.Literal.string(f"%+d {word}"), amount])
        function = "DATETIME" if unit in _TIME_UNITS else "DATE"
        return exp.Anonymous(this=function, expressions=[_sqlite_date_value(node.this), modifier])

    return tree.transform(change)


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


def _aliases_in_order_expressions(tree: exp.Expr) -> exp.Expr:
    """`SELECT a + b AS s ... ORDER BY CASE WHEN s = 0 THEN ...`: DuckDB reads `s` inside an ORDER BY
    expression as the select item; PostgreSQL and Spark only a bare `ORDER BY s`. The item is written out."""
    for select in tree.find_all(exp.Select):
        order = select.args.get("order")
        if order is None:
            continue
        named = {
            e.alias.lower(): e.this
            for e in select.expressions
            if isinstance(e, exp.Alias) and not (isinstance(e.this, exp.Column) and e.this.name == e.alias)
        }
        for ordered in order.expressions:
            if isinstance(ordered.this, exp.Column):
                continue
            for column in list(ordered.this.find_all(exp.Column)):
                if not column.table and column.name.lower() in named:
                    column.replace(exp.Paren(this=named[column.name.lower()].copy()))
    return tree


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
    "sqlite": (_sqlite_date_arithmetic, _sqlite_extract, _bare_set_members, _column_list_as_aliases),
    "mysql": (_column_list_as_aliases, _mysql_rollup, _derived_table_aliases, _double_division),
    "postgres": (_interval_of_expression, _derived_table_aliases, _aliases_in_order_expressions),
    "spark": (_interval_of_expression, _aliases_in_order_expressions, _double_division),
}
