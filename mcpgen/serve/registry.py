"""The registry: tools by name, and the rule that every tool declares its sources. A hand-written
tool is registered only if it returns `DataToolOutput`; every call is logged, audited and traced.

>>> from mcp_types import CallToolResult, TextContent
>>> from mcpgen import DataToolOutput
>>> reg = Registry()
>>> @reg.tool()
... def hello() -> DataToolOutput:
...     '''Say hello.'''
...     return CallToolResult(content=[TextContent(type="text", text="hi")],
...                           structured_content={"sources": ["https://example.org/"]})
>>> reg.names()
['hello']
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread
from pydantic import ConfigDict, ValidationError, create_model

from .. import logs
from ..answer.asking import ANSWERS, CONFIRM, NOT_CONFIRMED, NeedsInput, confirmation
from ..answer.cache import META_KEY, ResultCache
from ..answer.plain import ToolResult
from ..answer.tool import READ_ONLY, Answer, Tool, check_result, error_result
from ..engines.control import CURRENT, CallControl
from ..engines.protocol import QueryResult
from ..errors import ArgumentError, MCPGenError, QueryError
from ..identity import caller_identity
from ..spec.config import DEFAULT_CACHE_BYTES
from ..spec.models import ScopeRule
from ..text import as_json, clipped
from . import audit, telemetry

if TYPE_CHECKING:
    from mcp_types import ToolAnnotations

logger = logging.getLogger("mcpgen")

# progress(percent, total, message): sends notifications/progress to the caller who asked for them.
Progress = Callable[[float, float | None, str | None], Awaitable[None]]
PROGRESS_EVERY = 0.25  # seconds between two looks at a running query's progress
CANCEL_WAIT = 10.0  # seconds a cancelled call waits for its worker thread to stop the query


class Registry:
    """Tools by name. `tool()` registers a Python function only if it returns `DataToolOutput`."""

    def __init__(self, cache_max_bytes: int = DEFAULT_CACHE_BYTES) -> None:
        self._tools: dict[str, Tool] = {}
        self.active = 0  # calls in flight (reload waits for them before closing engines)
        self.cache = ResultCache(cache_max_bytes)  # a reload builds a new Registry: a new, empty cache
        self.apps: dict[str, Any] = {}  # ui:// uri -> mcpgen.serve.mcp_app.App, served as resources
        self.instructions: str | None = None  # mcpgen.yaml's, else ToolServer says what the tools are
        self.icons: list[dict[str, Any]] = []  # the server's icons (mcpgen.yaml), wire form
        self.prompts: dict[str, Any] = {}  # name -> mcpgen.answer.prompts.Prompt

    def __contains__(self, name: str) -> bool:
        return name in self._tools

    def __iter__(self):
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    def names(self) -> list[str]:
        return list(self._tools)

    def get(self, name: str) -> Tool:
        return self._tools[name]

    def add(self, tool: Tool) -> Tool:
        if tool.name in self._tools:
            first = self._tools[tool.name].source or "another tool"
            raise ValueError(f"tool name '{tool.name}' is already used by {first}")
        self._tools[tool.name] = tool
        return tool

    def take_all(self) -> list[Tool]:
        """Remove and return every tool (used to move tools a specs/*.py file registered)."""
        tools, self._tools = list(self._tools.values()), {}
        return tools

    def tool(
        self,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        annotations: ToolAnnotations | None = None,
        app: bool = True,
        scopes: list[str] | ScopeRule | None = None,
        tags: list[str] | None = None,
        long_running: bool = False,
    ) -> Callable:
        """Decorator: register `fn` if it is annotated `-> DataToolOutput`; otherwise warn and leave it out.

        `app=False`: no MCP App for this tool (see docs/apps.md). `scopes` (a list: all of them),
        `tags` and `long_running` (offered as a task, docs/long-work.md) work as in a spec; inside,
        `mcpgen.identity.current()` is the caller."""

        def decorator(fn: Callable) -> Callable:
            from ..answer.results import DataToolOutput  # the protocol types: a hand-written tool loads them

            returns = inspect.signature(fn, eval_str=True).return_annotation
            if returns != DataToolOutput:
                logger.warning(
                    "%s is not registered: its return annotation must be DataToolOutput, "
                    "so that every result declares its sources",
                    fn.__qualname__,
                )
                return fn
            tool = _function_tool(fn, name, title, description, annotations, app)
            tool.scopes = ScopeRule(all=scopes) if isinstance(scopes, list) else scopes
            tool.tags = frozenset(tags or ())
            tool.long_running = long_running
            self.add(tool)
            return fn

        return decorator

    async def call(self, name: str, arguments: dict[str, Any] | None, progress: Progress | None = None) -> ToolResult:
        """Run a tool. Every failure comes back as an `isError` result with one sentence.

        `progress`: where to report how far the query is, while it runs (when the engine can say).
        Cancelling the calling task stops the query (see mcpgen.engines.control).
        Each call is logged as one line on stderr (see mcpgen.logs)."""
        with logs.call_stats() as stats, telemetry.span(name) as span:
            self.active += 1
            try:
                result, query = await self._call(name, arguments, progress)
            except anyio.get_cancelled_exc_class():
                logs.note_error("Cancelled")
                logs.log_call(name, stats)
                raise
            finally:
                self.active -= 1
            if query is not None:
                stats.rows, stats.truncated, stats.query_seconds = len(query.rows), query.truncated, query.seconds
            if result.is_error:
                logs.note_error("ToolError")
            elif query is None and isinstance(result.structured_content, dict):
                table = result.structured_content.get("table")
                stats.rows = len(table) - 1 if isinstance(table, list) and table else None
            logs.log_call(name, stats)
            if audit.enabled():
                tool = self._tools.get(name)
                audit.record(name, arguments, stats, tool.sensitive if tool else frozenset())
            telemetry.record(span, name, stats)
        return result

    async def _call(
        self, name: str, arguments: dict[str, Any] | None, progress: Progress | None = None
    ) -> tuple[ToolResult, QueryResult | None]:
        tool = self._tools.get(name)
        if tool is None:
            return error_result(f"Unknown tool '{clipped(name)}'."), None
        if tool.cache_ttl is None or tool.cache_key is None:
            return await self._run(tool, name, arguments, progress)
        try:
            key = (name, caller_identity(), tool.cache_key(arguments or {}))
        except ArgumentError as exc:
            return error_result(str(exc)), None
        result, query, hit = await self.cache.get_or_run(
            key, tool.cache_ttl, lambda: self._run(tool, name, arguments, progress)
        )
        logs.note_cache(hit)
        if result.is_error:
            return result, query
        meta = {**(result.meta or {}), META_KEY: "hit" if hit else "miss"}
        return dataclasses.replace(result, meta=meta), query

    async def confirm_rows(self, tool: Tool, arguments: dict[str, Any]) -> ToolResult | None:
        """`confirm: {when_rows_over: N}`, where someone can be asked: None to go ahead (the person said
        yes, or the result would have at most N rows), the refusal when they said no; raises NeedsInput to
        ask. The count runs as the call does (its connection's slot, a worker thread, its timeout); a
        count that fails asks, since it could not show the call is small; bad arguments are left to the
        call, which refuses them in its own sentence."""
        check = tool.confirm_rows
        assert check is not None
        answer = (ANSWERS.get() or {}).get(CONFIRM)
        if answer is not None:  # answered: only a yes runs it (a form without the field is not asked again)
            return None if answer.get(CONFIRM) is True else error_result(NOT_CONFIRMED)
        try:
            if tool.admission is not None:
                async with tool.admission.admitted():
                    over = await _in_thread(lambda args: check.over(args, check.threshold), arguments, None)
            else:
                over = await _in_thread(lambda args: check.over(args, check.threshold), arguments, None)
        except ArgumentError:
            return None
        except MCPGenError as exc:
            logger.info("tool %s: the rows were not counted (%s), so the person is asked", tool.name, exc)
            over = True
        if over:
            raise NeedsInput([confirmation(check.message)])
        return None

    async def _run(
        self, tool: Tool, name: str, arguments: dict[str, Any] | None, progress: Progress | None = None
    ) -> tuple[ToolResult, QueryResult | None]:
        try:
            if tool.confirm_rows is not None and ANSWERS.get() is not None:  # only where someone can be asked
                refused = await self.confirm_rows(tool, arguments or {})
                if refused is not None:
                    return refused, None
            if tool.is_async:
                result = await tool.handler(arguments or {})
            elif tool.admission is not None:  # a slot on its connection first, then a worker thread
                async with tool.admission.admitted():
                    result = await _in_thread(tool.handler, arguments or {}, progress)
            else:
                result = await _in_thread(tool.handler, arguments or {}, progress)
        except ArgumentError as exc:
            return error_result(str(exc)), None
        except NeedsInput as exc:  # a hand-written tool asks: the server asks the person, if anyone can
            if ANSWERS.get() is None:
                return error_result(exc.sentence(name)), None
            raise
        except QueryError as exc:  # its connection is busy: one sentence, as the engine would say it
            return error_result(as_sentence(str(exc))), None
        except Exception as exc:
            logger.exception("tool %s raised", name)
            message = f"Tool '{name}' failed ({type(exc).__name__}); the details are in the server log."
            return error_result(message), None
        if isinstance(result, Answer):
            return check_result(name, result.result, result.built), result.query
        return check_result(name, result), None

    async def download(self, name: str, uri: str) -> Any:
        """resources/read of a download link of tool `name` (mcpgen.answer.downloads): its query again, on
        its connection's slot and in a worker thread. Raises the tool's MCPGenError, a DownloadError for a
        link that may not be read; each read is logged as a call of `name`."""
        tool = self._tools[name]
        read = tool.download
        assert read is not None
        with logs.call_stats() as stats:
            self.active += 1
            try:
                if tool.admission is not None:
                    async with tool.admission.admitted():
                        return await _in_thread(lambda _: read(uri), {}, None)
                return await _in_thread(lambda _: read(uri), {}, None)
            except Exception as exc:
                logs.note_error(type(exc).__name__)
                raise
            finally:
                self.active -= 1
                logs.log_call(name, stats)

    def call_sync(self, name: str, arguments: dict[str, Any] | None = None) -> ToolResult:
        """`call` for code that is not async (the CLI, tests).

        The result leaves the event loop's task through a list, not as the task's own result: on the
        main thread asyncio's runner swaps the SIGINT handler around the run, and Python reads the old
        handler (which names the finished task) through an Enum lookup whose failure message is the
        task's repr, with its result's repr in it: a 1,000-row table costs milliseconds, twice a call."""
        out: list[ToolResult] = []

        async def run() -> None:
            out.append(await self.call(name, arguments))

        anyio.run(run)
        return out[0]


async def _in_thread(handler: Callable[[dict[str, Any]], Any], arguments: dict[str, Any], progress: Progress | None):
    """`handler(arguments)` in a worker thread, under a CallControl of its own: cancelling the calling
    task cancels the engine's query (and waits, bounded, for the thread to stop); with `progress`, the
    query's progress is read every PROGRESS_EVERY seconds and reported whenever it has grown."""
    control = CallControl(watched=progress is not None)
    token = CURRENT.set(control)  # the worker thread runs in a copy of this context

    def work():
        try:
            return handler(arguments)
        finally:
            control.done = True

    try:
        if progress is None:
            return await anyio.to_thread.run_sync(work, abandon_on_cancel=True)
        failed: Exception | None = None
        async with anyio.create_task_group() as tg:
            tg.start_soon(_report_progress, control, progress)
            try:
                result = await anyio.to_thread.run_sync(work, abandon_on_cancel=True)
            except Exception as exc:  # raised as itself, not in a task group's ExceptionGroup
                failed = exc
            tg.cancel_scope.cancel()
        if failed is not None:
            raise failed
        return result
    except anyio.get_cancelled_exc_class():
        with anyio.CancelScope(shield=True), anyio.move_on_after(CANCEL_WAIT):
            await anyio.to_thread.run_sync(control.cancel)  # a database's cancel request is I/O
            while not control.done:
                await anyio.sleep(0.01)
        raise
    finally:
        CURRENT.reset(token)


async def _report_progress(control: CallControl, progress: Progress) -> None:
    last = -1.0
    while True:
        await anyio.sleep(PROGRESS_EVERY)
        done = control.progress()
        if done is not None and done > last:  # progress only ever grows on the wire
            last = done
            try:
                await progress(done, 100.0, f"query {done:.0f}% done")
            except Exception as exc:  # the client went away: the call goes on
                logger.debug("progress not sent: %s", exc)
                return


def _plain_optionals(schema: dict[str, Any]) -> dict[str, Any]:
    """`X | None` parameters published with X's plain type, as spec parameters are: generic clients
    convert form input by `type` and do not walk `anyOf`. An explicit null is still accepted.

    >>> _plain_optionals({"properties": {"q": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None}}})
    {'properties': {'q': {'type': 'string'}}}
    """
    for name, prop in schema.get("properties", {}).items():
        branches = prop.get("anyOf", [])
        kept = [b for b in branches if b != {"type": "null"}]
        if len(branches) == 2 and len(kept) == 1:
            plain = {k: v for k, v in prop.items() if k != "anyOf" and not (k == "default" and v is None)}
            schema["properties"][name] = {**kept[0], **plain}
    return schema


def _function_tool(
    fn: Callable,
    name: str | None,
    title: str | None,
    description: str | None,
    annotations: ToolAnnotations | None,
    app: bool = True,
) -> Tool:
    params = inspect.signature(fn, eval_str=True).parameters
    fields: dict[str, Any] = {
        p.name: (
            p.annotation if p.annotation is not inspect.Parameter.empty else Any,
            ... if p.default is inspect.Parameter.empty else p.default,
        )
        for p in params.values()
    }
    model = create_model(f"{fn.__name__}_arguments", __config__=ConfigDict(extra="forbid", strict=True), **fields)
    schema = _plain_optionals(model.model_json_schema())
    schema.pop("title", None)
    is_async = inspect.iscoroutinefunction(fn)

    def validated(arguments: dict[str, Any]) -> dict[str, Any]:
        try:
            args = model.model_validate_json(json.dumps(arguments))
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(p) for p in err["loc"])
            if err["type"] == "extra_forbidden":
                raise ArgumentError(f"Unknown argument '{where}'.") from None
            if err["type"] == "missing":
                raise ArgumentError(f"Missing required argument '{where}'.") from None
            raise ArgumentError(f"Invalid argument '{where}': {err['msg']}, got {as_json(err['input'])}.") from None
        return {k: getattr(args, k) for k in fields}

    handler: Callable[[dict[str, Any]], Any]
    if is_async:

        async def call_async(arguments):
            return await fn(**validated(arguments))

        handler = call_async
    else:

        def call(arguments):
            return fn(**validated(arguments))

        handler = call

    return Tool(
        name=name or fn.__name__,
        description=description or inspect.getdoc(fn) or fn.__name__,
        input_schema=schema,
        handler=handler,
        title=title,
        annotations=annotations or READ_ONLY,
        source=inspect.getsourcefile(fn),
        is_async=is_async,
        wants_app=app,
    )


default_registry = Registry()
"""The registry that `from mcpgen import registry` gives to hand-written tools."""


def as_sentence(message: str) -> str:
    """`connection 'pg' is busy: ...` as a sentence: a capital first, a full stop last."""
    message = message[:1].upper() + message[1:]
    return message if message.endswith((".", "?", "!")) else message + "."
