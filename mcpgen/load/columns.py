"""Describing a spec's query on its engine (nothing runs), and checking every column the spec names:
charts, `table:`, and templates (`r.city`, `rows[0]['city']`, `sum(attribute="city")`). `validate`
runs it for every spec; `serve` for DuckDB connections before it starts.

>>> duplicate_columns(["city", "population", "city"])
'the query returns column city more than once; give each column its own name with AS'
>>> duplicate_columns(["city", "population"]) is None
True
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from ..checks import row_references
from ..errors import MCPGenError, Problem, SpecError
from ..spec.config import DuckDBConnection
from ..spec.params import param_types
from ..spec.yamlload import Located, load_yaml
from ..text import column_of, did_you_mean, first_line

if TYPE_CHECKING:
    from ..engines.protocol import Engine, Prepared
    from ..spec.models import Spec
    from ..sql.pages import PagePlan
    from ..sql.places import Near
    from .specs import LoadedSpec

LIVE_TIMEOUT = 10.0  # seconds per connection and per query description


def duplicate_columns(columns: list[str]) -> str | None:
    """The sentence for a result that names a column twice (rows become dicts by name, so one would be
    lost), else None. `validate` reports it at the query; a call refuses to answer with it."""
    twice = sorted({c for c in columns if columns.count(c) > 1})
    if not twice:
        return None
    return f"the query returns column {', '.join(twice)} more than once; give each column its own name with AS"


def checked_by_default(connection: Any) -> bool:
    """Whether `validate` (without --live) and `serve` describe a connection's queries: DuckDB runs in
    process on local files, so describing costs milliseconds and reaches nothing."""
    return isinstance(connection, DuckDBConnection)


def describe(
    engine: Engine, loaded: LoadedSpec, timeout: float = LIVE_TIMEOUT, prepared: Prepared | None = None
) -> list[tuple[str, str]]:
    """Result columns and types of a spec's query, without doing the query's work (`Engine.describe`)."""
    if prepared is None:  # UnsafeSQL if not one read-only query
        prepared = engine.prepare(loaded.sql, param_types(loaded.spec.parameters))
    # A string parameter with an enum (a file the query reads, say) is described with its first value, not NULL,
    # and an integer with a default with it (`LIMIT :top_n`: MariaDB and MySQL refuse LIMIT NULL).
    known = {
        n: p.enum[0]
        for n, p in loaded.spec.parameters.items()
        if p.type == "string" and p.enum and p.enum[0] is not None
    }
    known |= {
        n: p.default
        for n, p in loaded.spec.parameters.items()
        if p.type == "integer" and isinstance(p.default, int) and not isinstance(p.default, bool)
    }
    return engine.describe(prepared, timeout=timeout, known=known)


def check_spec_live(
    loaded: LoadedSpec, engine: Any, timeout: float = LIVE_TIMEOUT, prepared: Prepared | None = None
) -> list[Problem]:
    """Describe one spec's query on its engine and check every column the spec names."""
    path, data = str(loaded.path), loaded.data
    sql_key = "sql" if loaded.spec.sql is not None else "sql_file"
    try:
        columns_described = describe(engine, loaded, timeout, prepared)
        columns = [name for name, _ in columns_described]
    except MCPGenError as exc:
        position = None if loaded.translated else getattr(exc, "position", None)
        position = position or near_position(loaded, getattr(exc, "near", None))
        if position:
            return [loaded.sql_problem(first_line(exc), position)]
        return [Problem(path, *_value_where(data, sql_key), first_line(exc))]
    except Exception as exc:
        return [Problem(path, *_value_where(data, sql_key), f"describing the query failed: {first_line(exc)}")]
    twice = duplicate_columns(columns)
    out = [Problem(path, *_value_where(data, sql_key), twice)] if twice else []
    if loaded.spec.page_size and not twice:
        out += _page_problems(loaded, engine, timeout, columns_described)
    missing = _Missing(path, columns)
    _chart_columns(loaded.spec, data, missing)
    _table_columns(loaded.spec, data, missing)
    _template_columns(loaded, missing)
    return out + missing.problems


def near_position(loaded: LoadedSpec, near: Near | None) -> tuple[int, int] | None:
    """Where in the spec's SQL as written the database's error points (`near`), if that is plain; a line of
    the statement sent is one of the spec's unless the SQL was translated."""
    if near is None:
        return None
    from ..sql.places import find_near  # only for a live check's error: a kept project's start loads no SQL module

    spec = loaded.spec
    written = spec.sql if spec.sql is not None else (loaded.path.parent / str(spec.sql_file)).read_text("utf-8")
    return find_near(written, near._replace(line=None) if loaded.translated else near)


def query_place(loaded: LoadedSpec, near: Near | None, shown: str) -> str | None:
    """`file:line:col` where a database's error at call time points in the spec's SQL, if plain: in the spec
    file (named `shown`), read again (its positions are let go once compiled) and still holding the SQL
    that ran, or in its `sql_file` beside it."""
    try:
        position = near_position(loaded, near)
        if position is None:
            return None
        spec = loaded.spec
        if spec.sql is None:
            return f"{PurePosixPath(shown).parent / str(spec.sql_file)}:{position[0]}:{position[1]}"
        data = load_yaml(loaded.path.read_text("utf-8"), str(loaded.path))
    except (OSError, UnicodeError, SpecError):  # moved or edited since: no place rather than a wrong one
        return None
    if not isinstance(data, Located) or data.get("sql") != spec.sql:
        return None
    line, col = data.at("sql", *position)
    return f"{shown}:{line}:{col}"


def _page_problems(loaded: LoadedSpec, engine: Any, timeout: float, columns: list[tuple[str, str]]) -> list[Problem]:
    """A paged spec's order made total on its engine: an error where it cannot be, a warning where
    its pages use OFFSET."""
    where = _value_where(loaded.data, "sql" if loaded.spec.sql is not None else "sql_file")
    try:
        plan = page_plan(engine, loaded, timeout, columns)
    except MCPGenError as exc:
        return [Problem(str(loaded.path), *where, f"page_size: the pages cannot hold each row once: {first_line(exc)}")]
    if plan.keyset:
        return []
    return [Problem(str(loaded.path), *where, f"page_size: {plan.reason}", "warning")]


class _Missing:
    """The problems for columns a spec names and the query does not return."""

    def __init__(self, path: str, columns: list[str]):
        self.path, self.columns, self.known = path, columns, set(columns)
        self.problems: list[Problem] = []

    def check(self, column: str, where: tuple[int | None, int | None], what: str, of: str = "") -> None:
        """`what` starts the sentence ("chart.x names", "table.headers labels"); `of` follows the column."""
        if column not in self.known:
            have = f"(the query returns {', '.join(self.columns)})"
            message = f"{what} column '{column}'{of}, which the query does not return {have}"
            self.problems.append(Problem(self.path, *where, message + did_you_mean(column, self.columns)))


def _chart_columns(spec: Spec, data: Located, missing: _Missing) -> None:
    chart_data = data.get("chart")
    for i, chart in enumerate(spec.charts):
        node = chart_data[i] if isinstance(chart_data, list) else chart_data
        where = "chart" if not isinstance(chart_data, list) else f"chart[{i}]"
        for key in ("x", "y", "series"):
            value = getattr(chart, key)
            names = value if isinstance(value, list) else [value] if value else []
            for j, column in enumerate(names):
                at = _item_where(node, key, j if isinstance(value, list) else None)
                missing.check(column, at, f"{where}.{key} names")


def _table_columns(spec: Spec, data: Located, missing: _Missing) -> None:
    if isinstance(spec.table, bool):
        return
    node = data.get("table")
    for j, column in enumerate(spec.table.columns or []):
        missing.check(column, _item_where(node, "columns", j), "table.columns names")
    headers = node.get("headers") if isinstance(node, dict) else None
    for column in spec.table.headers:
        at = headers.where(column) if headers is not None and hasattr(headers, "where") else (None, None)
        missing.check(column, at, "table.headers labels")


def _template_columns(loaded: LoadedSpec, missing: _Missing) -> None:
    for key, template in loaded.templates.items():
        if "sources[" in key:  # source URLs see the parameters only
            continue
        reported = set()
        for line, column in row_references(template.ast):
            if (line, column) not in reported:
                reported.add((line, column))
                at = loaded.data.at(key, line, column_of(template.source, line, column))
                missing.check(column, at, f"{key}: the template reads", " of a row")


def _value_where(data: Any, key: str) -> tuple[int | None, int | None]:
    return data.where(("value", key)) if hasattr(data, "where") and key in data else (None, None)


def _item_where(node: Any, key: str, index: int | None) -> tuple[int | None, int | None]:
    if not hasattr(node, "where"):
        return None, None
    value = node.get(key)
    if index is not None and hasattr(value, "lines") and index < len(value.lines):
        return value.lines[index]
    return node.where(("value", key)) if key in node else node.where()


def page_plan(
    engine: Engine, loaded: LoadedSpec, timeout: float = LIVE_TIMEOUT, columns: list[tuple[str, str]] | None = None
) -> PagePlan:
    """The pages of a paged spec on its engine (`sql.pages.plan_pages`): the query's columns make its
    order total, and the types of its keys choose keyset or OFFSET pages. PagingError, or the engine's
    QueryError, when its pages cannot be made exact."""
    from ..sql.pages import plan_pages  # here: the SQL reading only paged specs need

    if columns is None:
        columns = describe(engine, loaded, timeout)
    plan = plan_pages(loaded.sql, loaded.dialect, columns)
    try:
        core = engine.prepare(plan.core, param_types(loaded.spec.parameters))
        described = describe(engine, loaded, timeout, core)
    except MCPGenError:
        if not plan.inside:
            raise
        # A key naming an alias, computed inside the query, where no column of its tables has that name:
        # the alias it means is computed from the result.
        plan = plan_pages(loaded.sql, loaded.dialect, columns, inside=False)
        core = engine.prepare(plan.core, param_types(loaded.spec.parameters))
        described = describe(engine, loaded, timeout, core)
    not_null: frozenset[int] = frozenset()
    if hasattr(engine, "not_null") and not plan.outer_joins:  # engines that know it from the tables
        names = engine.not_null(core, timeout)
        not_null = frozenset(i for i, (name, _) in enumerate(described) if name in names)
    plan.choose([kind for _, kind in described], loaded.dialect, not_null)
    return plan
