"""Compiling a checked spec into a Tool: validate arguments, run the query, render the answer.

Whole specs compiled and called are in tests/test_compile.py.
"""

from __future__ import annotations

from typing import Any

from mcp.types import CallToolResult, TextContent, ToolAnnotations

from .charts import build_chart
from .engines import Engine, QueryResult
from .errors import MCPGenError
from .loading import LoadedSpec
from .params import Arguments, param_types
from .render import Template
from .results import TRUNCATED_META, build_table
from .spec import EmptyAnswer
from .tools import Answer, Tool, error_result

DEFAULT_EMPTY = Template("No rows matched.")


class SpecTool:
    """What one spec does when called. `__call__(arguments)` returns an Answer: the CallToolResult
    and the engine's QueryResult (rows, truncation, query time for the call log)."""

    def __init__(self, loaded: LoadedSpec, engine: Engine, max_rows: int, timeout: float):
        spec = loaded.spec
        self.name = loaded.name
        self.spec = spec
        self.engine = engine
        self.arguments = Arguments(spec.parameters)
        self.query = engine.prepare(loaded.sql, param_types(spec.parameters))
        self.max_rows = spec.max_rows or max_rows
        self.timeout = spec.timeout or timeout
        self.content = loaded.templates["content"]
        self.empty = loaded.templates.get("empty", DEFAULT_EMPTY)
        self.force = loaded.templates.get("force")
        self.sources = [loaded.templates[f"sources[{i}]"] for i in range(len(spec.sources))]
        # An empty answer cites what `empty` names, else the sources that are no template: a page
        # made from the arguments (a country code the query did not find) may not exist.
        chosen = spec.empty.sources if isinstance(spec.empty, EmptyAnswer) else None
        if chosen:
            self.empty_sources = [loaded.templates[f"empty.sources[{i}]"] for i in range(len(chosen))]
        else:
            self.empty_sources = [t for t in self.sources if t.constant is not None] or self.sources

    def __call__(self, arguments: dict[str, Any]) -> Answer:
        result = None
        try:
            values = self.arguments.validate(arguments)
            result = self.engine.run(self.query, values, self.max_rows, self.timeout)
            return Answer(self.answer(values, result), result)
        except MCPGenError as exc:
            return Answer(error_result(_sentence(str(exc))), result)

    def answer(self, values: dict[str, Any], result: QueryResult) -> CallToolResult:
        """Build prose and structured content from one query result."""
        columns = result.columns
        if len(set(columns)) != len(columns):
            twice = sorted({c for c in columns if columns.count(c) > 1})
            raise MCPGenError(
                f"the query returns column {', '.join(twice)} more than once; give each column its own name with AS"
            )
        missing = [c for chart in self.spec.charts for c in chart.columns if c not in columns]
        if not isinstance(self.spec.table, bool) and self.spec.table.columns:
            missing += [c for c in self.spec.table.columns if c not in columns]
        if missing:
            raise MCPGenError(
                f"the query result has no column {', '.join(sorted(set(missing)))} (it has {', '.join(columns)})"
            )
        rows = [dict(zip(columns, row)) for row in result.rows]
        context = {
            **values,
            "rows": rows,
            "columns": columns,
            "row_count": len(rows),
            "truncated": result.truncated,
            "max_rows": self.max_rows,
        }
        prose = (self.content if rows else self.empty).render(context)
        if result.truncated:
            prose += f"\n\n(Only the first {self.max_rows:,} rows are shown; the query matched more.)"
        payload: dict[str, Any] = {
            "sources": [t.render(values) for t in (self.sources if rows else self.empty_sources)]
        }
        if rows:  # no rows: no header-only table and no empty chart, the prose says so
            table = build_table(columns, result.rows, self.spec.table)
            if table is not None:
                payload["table"] = table
            if self.spec.charts:
                headers = {} if isinstance(self.spec.table, bool) else self.spec.table.headers
                payload["charts"] = [build_chart(c, columns, result.rows, headers) for c in self.spec.charts]
        if self.force is not None:
            payload["force"] = self.force.render(context)
        answer = CallToolResult(content=[TextContent(type="text", text=prose)], structured_content=payload)
        if result.truncated:  # for the app's note; hosts keep _meta away from the model
            answer.meta = {TRUNCATED_META: {"max_rows": self.max_rows}}
        return answer


def _sentence(message: str) -> str:
    message = message[0].upper() + message[1:] if message else "The tool failed"
    return message if message.endswith((".", "?", "!")) else message + "."


def compile_spec(loaded: LoadedSpec, engine: Engine, max_rows: int, timeout: float) -> Tool:
    """A registered-ready Tool for one spec on its engine."""
    spec = loaded.spec
    run = SpecTool(loaded, engine, max_rows, timeout)
    a = spec.annotations
    annotations = ToolAnnotations(
        title=spec.title,
        read_only_hint=a.readOnlyHint,
        idempotent_hint=a.idempotentHint,
        open_world_hint=a.openWorldHint,
        destructive_hint=a.destructiveHint,
    )
    return Tool(
        name=loaded.name,
        description=spec.description.strip(),
        input_schema=run.arguments.schema,
        handler=run,
        title=spec.title,
        annotations=annotations,
        source=str(loaded.path),
        scopes=spec.scope_rule,
        tags=frozenset(spec.tags),
        sensitive=frozenset(name for name, p in spec.parameters.items() if p.sensitive),
    )
