"""What `mcpgen draft` learns from the data: where the rows come from, and each column's kind,
distinct values, bounds and NULLs, read by running a few queries on the real connection.

A column's kind comes from the values of the first 1,000 rows (Python types, which every engine
gives, SQLite included, whose results carry no declared types; ISO text that is all dates is a
date); its counts and bounds from one aggregate over every row.

>>> from mcpgen.engines.factory import create_engine
>>> from mcpgen.spec.config import DuckDBConnection
>>> engine = create_engine("default", DuckDBConnection(), root=".")
>>> rows = "(VALUES ('a', 1, DATE '2020-01-02'), ('b', 2, DATE '2020-03-04'), ('a', 3, NULL)) AS t(k, n, d)"
>>> [(c.name, c.kind, c.distinct, c.low, c.high, c.nulls) for c in profile(engine, rows, "duckdb").columns]
[('k', 'string', 2, 'a', 'b', 0), ('n', 'integer', 3, 1, 3, 0), ('d', 'date', 2, '2020-01-02', '2020-03-04', 1)]
>>> engine.close()
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from sqlglot import exp

from ..answer.results import to_cell
from ..engines.protocol import Engine
from ..sql.transpile import transpile

SAMPLE_ROWS = 1000
ENUM_MAX = 12  # a text column with at most this many distinct values becomes an enum parameter
TIMEOUT = 60.0  # seconds for each query of the profile
_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


class DraftError(Exception):
    """The draft cannot be made (no such table, a file that cannot be read, ...): one sentence."""


@dataclass
class Column:
    name: str
    kind: str  # integer, number, string, date, datetime, boolean, or other (not filtered on)
    distinct: int = 0
    nulls: int = 0
    low: Any = None  # the smallest and largest values, as JSON cells
    high: Any = None
    values: list[Any] = field(default_factory=list)  # every value of an enum column, in order
    longest: int = 0  # the longest text of a string column (in the sample)


@dataclass
class Profile:
    rows: int
    columns: list[Column]


def ident(name: str, dialect: str) -> str:
    """A column or table name as the dialect reads it: bare when it can be, else quoted."""
    bare = exp.to_identifier(name).sql(dialect=dialect)
    if re.fullmatch(r"[a-z_][a-z0-9_]*", name) and bare == name and not _reserved(name, dialect):
        return name
    return exp.to_identifier(name, quoted=True).sql(dialect=dialect)


def _reserved(name: str, dialect: str) -> bool:
    import sqlglot

    try:
        column = sqlglot.parse_one(f"SELECT {name} FROM t", read=dialect).expressions[0]
    except Exception:  # any parse failure: quote it
        return True
    return not (isinstance(column, exp.Column) and column.name == name)


def run(
    engine: Engine,
    sql: str,
    dialect: str,
    params: dict[str, Any] | None = None,
    types: dict[str, str] | None = None,
):
    """Run SQL written in `dialect` on `engine` (translated to its own) with `params` of the declared
    `types`, at most SAMPLE_ROWS rows; a failure is a DraftError."""
    target = engine.dialect
    try:
        text = transpile(sql, dialect, target) if target and target != dialect else sql
        return engine.run(engine.prepare(text, types), params or {}, max_rows=SAMPLE_ROWS, timeout=TIMEOUT)
    except Exception as exc:  # the engine's errors are one clear sentence, passwords redacted
        raise DraftError(str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__) from None


def profile(engine: Engine, relation: str, dialect: str) -> Profile:
    """The columns of `relation` (a FROM item in `dialect`) with their kinds, counts and bounds."""
    sample = run(engine, f"SELECT * FROM {relation}", dialect)
    if not sample.rows:
        raise DraftError("it has no rows, and a draft takes its parameters' bounds from the data")
    columns = [Column(name, _kind([row[i] for row in sample.rows])) for i, name in enumerate(sample.columns)]
    for i, column in enumerate(columns):
        if column.kind == "string":
            column.longest = max((len(row[i]) for row in sample.rows if isinstance(row[i], str)), default=0)
    parts = ["COUNT(*) AS n"]
    for i, column in enumerate(columns):
        name = ident(column.name, dialect)
        parts += [f"COUNT({name}) AS c{i}", f"COUNT(DISTINCT {name}) AS d{i}"]
        if column.kind in ("integer", "number", "date", "datetime", "string"):
            parts += [f"MIN({name}) AS lo{i}", f"MAX({name}) AS hi{i}"]
    stats = run(engine, f"SELECT {', '.join(parts)} FROM {relation}", dialect)
    found = dict(zip(stats.columns, stats.rows[0]))
    total = int(found["n"])
    for i, column in enumerate(columns):
        column.nulls = total - int(found[f"c{i}"])
        column.distinct = int(found[f"d{i}"])
        column.low, column.high = to_cell(found.get(f"lo{i}")), to_cell(found.get(f"hi{i}"))
        if column.kind == "string" and 2 <= column.distinct <= ENUM_MAX:
            name = ident(column.name, dialect)
            values = run(
                engine, f"SELECT DISTINCT {name} FROM {relation} WHERE {name} IS NOT NULL ORDER BY {name}", dialect
            )
            column.values = [to_cell(row[0]) for row in values.rows]
    return Profile(total, columns)


def _kind(values: list[Any]) -> str:
    """The parameter type a column's values take: the one kind every non-NULL value has."""
    kinds = {_kind_of(v) for v in values if v is not None}
    if kinds == {"integer", "number"}:
        return "number"
    if kinds == {"date", "string"}:  # text of which only some is ISO dates
        return "string"
    return kinds.pop() if len(kinds) == 1 else "other"


# bool before int, datetime before date: the narrower type first
_KINDS: tuple[tuple[Any, str], ...] = ((bool, "boolean"), (int, "integer"), ((float, Decimal), "number"))
_KINDS += ((dt.datetime, "datetime"), (dt.date, "date"), (str, "string"))


def _kind_of(value: Any) -> str:
    kind = next((k for t, k in _KINDS if isinstance(value, t)), "other")
    return "date" if kind == "string" and _ISO_DATE.fullmatch(value) else kind
