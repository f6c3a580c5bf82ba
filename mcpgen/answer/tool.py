"""A tool as the server holds it (`Tool`), a query tool's answer (`Answer`), and the results every
call ends in: a clear `isError` sentence, or a result held to the output schema.

>>> check_result("t", error_result("Nothing matched.")).content[0].text
'Nothing matched.'
>>> check_result("t", "text").content[0].text
"Tool 't' returned str, not a CallToolResult."
"""

from __future__ import annotations

import dataclasses
import json
import logging
import sys
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from .. import logs
from ..engines.protocol import QueryResult
from ..engines.slots import Admission
from ..spec.models import ScopeRule
from ..text import inert
from .numbers import FORMATS_META, column_formats
from .plain import TextContent, ToolResult, from_mcp
from .results import DataToolPayload, published_schema

if TYPE_CHECKING:
    from mcp_types import Tool as MCPTool

logger = logging.getLogger("mcpgen")

# Tool annotations in their wire form: the protocol's ToolAnnotations is made from them in `Tool.to_mcp`.
READ_ONLY = {"readOnlyHint": True, "idempotentHint": True, "openWorldHint": False}


def error_result(message: str) -> ToolResult:
    """An `isError` result carrying one sentence for the model, made inert (`mcpgen.text.inert`): the
    sentence may quote a row value or an argument, and the user may see it rendered as markdown.

    Called inside an `except` block, it notes the exception's class for the call log."""
    handled = sys.exc_info()[1]
    logs.note_error(type(handled).__name__ if handled is not None else "ToolError")
    return ToolResult([TextContent(inert(message))], is_error=True)


@dataclass
class Answer:
    """A query tool's result, with the query result behind it: the call log reads rows,
    truncation and query time from `query` (None when no query ran)."""

    result: ToolResult
    query: QueryResult | None = None
    built: bool = False  # its table was made from query rows by `results.build_table`: JSON cells by construction


@dataclass(frozen=True)
class RowsCheck:
    """`confirm: {message, when_rows_over}`: ask `message` only when `over(arguments, threshold)` says the
    call's result would have more than `threshold` rows (mcpgen.answer.compile.SpecTool.rows_over)."""

    message: str
    threshold: int
    over: Callable[[dict[str, Any], int], bool]


@dataclass
class Tool:
    """One registered tool. `handler(arguments)` returns a CallToolResult (a hand-written tool's), a
    ToolResult or an Answer (a query tool's); it may be async."""

    name: str
    description: str
    input_schema: dict[str, Any]
    handler: Callable[[dict[str, Any]], Any]
    title: str | None = None
    annotations: Any = None  # the protocol's ToolAnnotations, or their wire form (a dict, as READ_ONLY)
    source: str | None = None  # the file that defined it
    is_async: bool = field(default=False)
    cache_ttl: float | None = None  # seconds an answer is kept (spec tools with `cache:`)
    cache_key: Callable[[dict[str, Any]], Hashable] | None = None  # validated arguments; raises ArgumentError
    scopes: ScopeRule | None = None  # who may see and call it (see mcpgen.identity)
    tags: frozenset[str] = frozenset()  # for `serve --tags` / toolsets
    sensitive: frozenset[str] = frozenset()  # arguments the audit log records only as hashes
    wants_app: bool = True  # False: no MCP App (`@registry.tool(app=False)`; specs say `app: false`)
    app: str | None = None  # the ui:// resource of its MCP App (mcpgen.serve.mcp_app), if it has one
    admission: Admission | None = None  # its connection's: waited for before the call takes a worker thread
    icons: list[dict[str, Any]] | None = None  # MCP icons in wire form (mcpgen.load.icons)
    parameters: dict[str, Any] = field(default_factory=dict)  # name -> spec Parameter (completions read them)
    completers: dict[str, Any] = field(default_factory=dict)  # name -> completions.QueryCompleter (`complete:`)
    long_running: bool = False  # offered as a task to clients of the tasks extension (mcpgen.serve.tasks)
    confirm: str | None = None  # the question a client that can ask puts to the person before every call
    confirm_rows: RowsCheck | None = None  # or before a call whose result would have more rows than its threshold
    download: Callable[[str], Any] | None = None  # resources/read of a download link (mcpgen.answer.downloads)

    def to_mcp(self) -> MCPTool:
        from mcp_types import Icon, ToolExecution
        from mcp_types import Tool as MCPTool

        tool = MCPTool(
            name=self.name,
            title=self.title,
            description=self.description,
            input_schema=self.input_schema,
            output_schema=published_schema(),
            annotations=self.annotations,
            _meta={"ui": {"resourceUri": self.app}} if self.app else None,
            icons=[Icon.model_validate(icon) for icon in self.icons] if self.icons else None,
            execution=ToolExecution(task_support="optional") if self.long_running else None,
        )
        # Validating copies every dict: the listing shares this tool's input schema and the one published
        # output schema instead of holding a copy of each per tool (nothing changes either once built).
        tool.input_schema, tool.output_schema = self.input_schema, published_schema()
        return tool


def check_result(name: str, result: Any, built: bool = False) -> ToolResult:
    """Hold a result to the output schema; a broken one becomes a clear `isError`. A table's number
    formats (mcpgen.answer.numbers) join its `_meta`, unless the tool gave its own.

    `built`: the table is mcpgen's own (`Answer.built`), its cells JSON scalars by construction: of the
    table only the header row is checked, so a page of rows costs no look at each cell."""
    result = from_mcp(result) or result
    if not isinstance(result, ToolResult):
        return error_result(f"Tool '{name}' returned {type(result).__name__}, not a CallToolResult.")
    if result.is_error:
        return result
    content = result.structured_content
    table = content.get("table") if isinstance(content, dict) else None
    try:
        if built and isinstance(content, dict) and isinstance(table, list):
            content = {**content, "table": table[:1]}
        payload = DataToolPayload.model_validate(content)  # refuses NaN and infinities
        if payload.charts:  # free-form Chart.js configs: only JSON itself can check them
            json.dumps(payload.charts, allow_nan=False)
    except (ValidationError, ValueError, TypeError) as exc:
        detail = _first_error(exc)
        logger.error("tool %s broke the output schema: %s", name, detail)
        return error_result(f"Tool '{name}' returned a result that breaks its output schema ({detail}).")
    if table and FORMATS_META not in (result.meta or {}):
        formats = column_formats(table)  # how people read the numbers; the cells stay as they are
        if formats:
            result = dataclasses.replace(result, meta={**(result.meta or {}), FORMATS_META: formats})
    return result


def _first_error(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "structuredContent"
        return f"{where}: {err['msg']}"
    return str(exc)
