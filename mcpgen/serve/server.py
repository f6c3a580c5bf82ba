"""The MCP server: the SDK's low-level `Server`, answering from a Registry.

The low-level server publishes each tool's inputSchema byte for byte (with
`additionalProperties: false`) and leaves argument checking to us, so unknown or
mistyped arguments are refused rather than dropped or coerced.

    server = ToolServer(registry)
    anyio.run(server.run_stdio)
"""

from __future__ import annotations

import logging
import weakref
from typing import Any

import anyio.to_thread
from mcp.server import Server
from mcp.server._otel import OpenTelemetryMiddleware
from mcp.server.apps import APP_MIME_TYPE, EXTENSION_ID
from mcp.server.lowlevel.server import NotificationOptions
from mcp.server.subscriptions import InMemorySubscriptionBus, PromptsListChanged, ToolsListChanged
from mcp.shared.exceptions import MCPError
from mcp.shared.inbound import X_MCP_HEADER_KEY
from mcp.types import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    CallToolRequestParams,
    CompleteRequestParams,
    CompleteResult,
    Completion,
    GetPromptRequestParams,
    GetPromptResult,
    Icon,
    ListPromptsResult,
    ListResourcesResult,
    ListToolsResult,
    PromptReference,
    ReadResourceRequestParams,
    ReadResourceResult,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from .. import identity, logs
from ..answer import downloads
from ..answer.asking import ANSWERS, prompt_schema, questions_for
from ..answer.plain import sent
from ..answer.tool import Tool, error_result
from ..errors import ArgumentError, MCPGenError
from ..text import clipped, inert
from ..version import __version__
from . import audit, tasks, telemetry
from .asking import Asking, state_boundary
from .listen import BoundedListen
from .registry import Registry, as_sentence
from .stdio import stdio_streams
from .tasks import TasksExtension, TaskStore

logger = logging.getLogger("mcpgen")

# Sync tools run in anyio worker threads. A spec tool first waits for its connection's slot in the
# event loop (mcpgen.engines.slots.Admission), so a thread is taken only by a call that can run now;
# hand-written tools take one directly, hence more than anyio's default 40.
WORKER_THREADS = 100
# resources/read of an unknown URI: -32002 before 2026-07-28, which made it -32602 (Invalid params); both
# carry the URI in error.data.
RESOURCE_NOT_FOUND = -32002
UI_EXTENSION = {"mimeTypes": [APP_MIME_TYPE]}
SUMMARY_TOOLS = 20  # tools named in the generated instructions


class ToolServer:
    """Serves whatever `self.registry` holds; swapping it changes the tool set (reload)."""

    def __init__(
        self,
        registry: Registry,
        name: str = "mcpgen",
        instructions: str | None = None,
        tags: frozenset[str] | None = None,
    ):
        self.tags = tags  # serve only tools with one of these tags (None: all)
        self._instructions = instructions  # given here, it wins over mcpgen.yaml's and the summary
        # tools/list_changed: 2026-07-28 clients get it on a subscriptions/listen stream (the bus);
        # handshake-era sessions get a plain notification (the sessions seen so far).
        self.bus = InMemorySubscriptionBus()
        self.listen = BoundedListen(self.bus)  # `serve --http` bounds it per caller (mcpgen.serve.listen)
        self._sessions: weakref.WeakSet = weakref.WeakSet()
        self._listing: tuple[Registry | None, ListToolsResult | None] = (None, None)
        self._headers: tuple[Registry | None, set[str]] = (None, set())  # the tools whose schema declares a header
        # get_tool_input_schema: without it the SDK runs the whole tools/list handler for every
        # 2026-07-28 tools/call over HTTP, just to check Mcp-Param-* headers.
        self.server = Server(
            name,
            version=__version__,
            instructions=instructions,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,  # type: ignore[arg-type]  # a dict: the SDK sends any, checked as a result
            on_subscriptions_listen=self.listen,
            get_tool_input_schema=self._input_schema,
            on_list_prompts=self._list_prompts,
            on_get_prompt=self._get_prompt,
            on_completion=self._complete,
            on_list_resources=self._list_resources,
            on_read_resource=self._read_resource,
        )
        self.registry = registry  # sets the instructions and icons too
        # MCP Apps: tools carry _meta.ui.resourceUri; hosts without the extension ignore it. server/discover
        # declares it from here; the handshake-era initialize result, whose schema has no `extensions`, would
        # lose it, so DeclareExtensions puts it back (hosts look for it there too).
        self.server.extensions[EXTENSION_ID] = UI_EXTENSION
        # The tasks extension: long-running tools answer its clients with a task (mcpgen.serve.tasks).
        self.tasks = TaskStore()
        TasksExtension(self.tasks).install(self.server)
        self.server.middleware.append(DeclareExtensions(self.server.extensions))
        self.server.middleware.append(name_invalid_params)
        self.server.middleware.append(state_boundary(name))  # requestState: sealed going out, checked coming in
        if not telemetry.traced():  # the SDK's span per message would be a no-op that costs a few % of a call
            self.server.middleware = [m for m in self.server.middleware if not isinstance(m, OpenTelemetryMiddleware)]

    @property
    def registry(self) -> Registry:
        return self._registry

    @registry.setter
    def registry(self, registry: Registry) -> None:
        """Serve `registry` (a reload swaps it): its tools, and the instructions and icons that go with them."""
        self._registry = registry
        self.server.instructions = self._instructions or instructions_for(registry, self.tags)
        self.server.icons = [Icon.model_validate(icon) for icon in registry.icons] or None
        self.server.__dict__.pop("_server_info_stamp_source", None)  # the SDK's copy of serverInfo, icons included

    def initialization_options(self):
        return self.server.create_initialization_options(NotificationOptions(tools_changed=True, prompts_changed=True))

    async def _list_tools(self, ctx, params) -> ListToolsResult:
        self._remember(ctx)
        registry, listing = self._listing
        if registry is not self.registry or listing is None:  # built once per tool set
            registry = self.registry
            listing = ListToolsResult(tools=[tool.to_mcp() for tool in registry if self._served(tool)])
            self._listing = (registry, listing)
        if not any(tool.scopes for tool in registry):
            return listing
        caller = identity.current()
        allowed = {tool.name for tool in registry if caller.may_use(tool.scopes)}
        return ListToolsResult(tools=[t for t in listing.tools if t.name in allowed])

    def served_count(self) -> int:
        """How many tools this server offers (all, or those with a served tag)."""
        return sum(1 for tool in self.registry if self._served(tool))

    def _served(self, tool: Tool) -> bool:
        return self.tags is None or not self.tags.isdisjoint(tool.tags)

    def _visible(self, registry: Registry, name: str) -> bool:
        """Whether this caller may see the tool: served here and allowed by its scopes."""
        if name not in registry:
            return False
        tool = registry.get(name)
        return self._served(tool) and (tool.scopes is None or identity.current().may_use(tool.scopes))

    async def _list_resources(self, ctx, params) -> ListResourcesResult:
        registry = self.registry
        apps = [app for app in registry.apps.values() if self._app_visible(registry, app)]
        return ListResourcesResult(resources=[app.resource() for app in apps])

    def _prompt_visible(self, registry: Registry, prompt) -> bool:
        """A prompt is shown to a caller who may see every tool it leads to."""
        return all(self._visible(registry, name) for name in prompt.tools)

    async def _list_prompts(self, ctx, params) -> ListPromptsResult:
        self._remember(ctx)
        registry = self.registry
        return ListPromptsResult(
            prompts=[p.to_mcp() for p in registry.prompts.values() if self._prompt_visible(registry, p)]
        )

    async def _get_prompt(self, ctx, params: GetPromptRequestParams) -> GetPromptResult:
        registry = self.registry
        prompt = registry.prompts.get(params.name)
        if prompt is None or not self._prompt_visible(registry, prompt):  # a hidden prompt is an unknown one
            known = ", ".join(n for n, p in registry.prompts.items() if self._prompt_visible(registry, p)) or "none"
            raise MCPError(
                code=INVALID_PARAMS, message=inert(f"Unknown prompt: {clipped(params.name)} (prompts: {known}).")
            )
        asking = Asking.of(ctx, params)
        if asking is None:
            return _prompt_message(prompt, params.arguments)
        given, schema = params.arguments or {}, prompt_schema(prompt.to_mcp())
        filled: dict[str, Any] = {}

        def questions(answers):
            nonlocal filled
            filled, pending = questions_for(schema, prompt.name, given, answers)
            return pending

        async def get():
            return _prompt_message(prompt, filled)

        outcome = await asking.run(questions, get)
        if isinstance(outcome, str):
            raise MCPError(code=INVALID_PARAMS, message=outcome)
        return outcome  # type: ignore[return-value]

    async def _complete(self, ctx, params: CompleteRequestParams) -> CompleteResult:
        """completion/complete for a prompt's argument; resource templates: none are offered, so no values."""
        registry = self.registry
        ref = params.ref
        if not isinstance(ref, PromptReference):
            return CompleteResult(completion=Completion(values=[]))
        prompt = registry.prompts.get(ref.name)
        if prompt is None or not self._prompt_visible(registry, prompt):
            raise MCPError(code=INVALID_PARAMS, message=inert(f"Unknown prompt: {clipped(ref.name)}."))
        context = dict(params.context.arguments or {}) if params.context is not None else {}
        argument = params.argument
        try:
            values, more = await anyio.to_thread.run_sync(
                prompt.complete, argument.name, argument.value, context, registry.get
            )
        except ArgumentError as exc:
            if str(exc).startswith("no completions:"):
                logger.warning("completion of %s.%s: %s", ref.name, argument.name, exc)
                return CompleteResult(completion=Completion(values=[]))
            raise MCPError(code=INVALID_PARAMS, message=str(exc)) from None
        return CompleteResult(completion=Completion(values=values[:100], total=len(values), has_more=more))

    def _app_visible(self, registry: Registry, app) -> bool:
        """An app is shown to a caller who may see one of its tools (a tool's own app is named after it)."""
        return any(self._visible(registry, name) for name in app.tools)

    async def _read_resource(self, ctx, params: ReadResourceRequestParams) -> ReadResourceResult:
        registry = self.registry
        if downloads.is_download(params.uri):
            return await self._read_download(registry, params.uri)
        app = registry.apps.get(str(params.uri))
        if app is None or not self._app_visible(registry, app):
            code = INVALID_PARAMS if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS else RESOURCE_NOT_FOUND
            message = inert(
                f"Unknown resource: {clipped(str(params.uri), 200)}"
            )  # the data keeps the URI as the caller sent it
            raise MCPError(code=code, message=message, data={"uri": str(params.uri)})
        contents = await anyio.to_thread.run_sync(app.contents)  # built on the first read: file I/O
        return ReadResourceResult(contents=[contents])

    async def _read_download(self, registry: Registry, uri: str) -> ReadResourceResult:
        """A download link (mcpgen.answer.downloads): the whole result again, for this caller. A link that
        may not be read is -32602 with one sentence and error.data.uri; a hidden tool's is not ours."""
        try:
            name = downloads.parse(uri).tool
            if not self._visible(registry, name) or registry.get(name).download is None:
                raise downloads.DownloadError(downloads.NOT_OURS)
            contents = await registry.download(name, uri)
        except ArgumentError as exc:  # the link, or the file's size: the caller's to change
            raise MCPError(code=INVALID_PARAMS, message=inert(str(exc)), data={"uri": uri}) from None
        except MCPGenError as exc:  # the query failed (its timeout, a busy connection): as a tool call says it
            raise MCPError(code=INTERNAL_ERROR, message=inert(as_sentence(str(exc))), data={"uri": uri}) from None
        return ReadResourceResult(contents=[contents])

    def _input_schema(self, name: str):
        """What the SDK checks a 2026-07-28 call's Mcp-Param-* headers against: the tool's inputSchema when it
        declares a header (`x-mcp-header`), else None, as for a hidden tool: a schema that declares none can
        refuse no header, and walking it (twice, every call) cost about 1% of a call over HTTP."""
        registry = self.registry
        if not self._visible(registry, name):
            return None
        headed, declares = self._headers
        if headed is not registry:  # found once per tool set
            declares = {tool.name for tool in registry if _mentions(tool.input_schema, X_MCP_HEADER_KEY)}
            self._headers = (registry, declares)
        return registry.get(name).input_schema if name in declares else None

    async def _call_tool(self, ctx, params: CallToolRequestParams) -> dict[str, Any]:
        self._remember(ctx)
        registry = self.registry  # one registry per call, even if a reload swaps it meanwhile
        if not self._visible(registry, params.name):  # a hidden tool is answered like an unknown one
            if audit.enabled():  # a refused attempt is recorded too, every argument hashed
                arguments = params.arguments or {}
                audit.record(params.name, arguments, logs.CallStats(error="UnknownTool"), frozenset(arguments))
            raise MCPError(code=INVALID_PARAMS, message=inert(f"Unknown tool: {clipped(params.name)}"))
        asking = Asking.of(ctx, params)
        if asking is None:  # a client that cannot be asked: the call runs (or is refused) as it always did
            return await self._run_call(ctx, params, registry, params.arguments)
        tool, given = registry.get(params.name), params.arguments or {}
        filled: dict[str, Any] = {}

        def questions(answers):
            nonlocal filled
            filled, pending = questions_for(tool.input_schema, tool.name, given, answers, tool.confirm)
            return pending

        outcome = await asking.run(questions, lambda: self._run_call(ctx, params, registry, filled))
        return sent(error_result(outcome)) if isinstance(outcome, str) else outcome  # type: ignore[return-value]

    async def _run_call(self, ctx, params: CallToolRequestParams, registry: Registry, arguments) -> dict[str, Any]:
        """The call's result as a dict (answer.plain.sent): the SDK validates a result for the client's protocol
        version whatever it is given, so building the protocol's CallToolResult first validated it twice."""
        tool = registry.get(params.name)
        if tool.long_running and tasks.declared(ctx, params):
            if tool.confirm_rows is not None and ANSWERS.get() is not None:  # asked before the task, never in it
                refused = await registry.confirm_rows(tool, arguments or {})
                if refused is not None:
                    return sent(refused)
            created = self.tasks.start(params.name, lambda progress: registry.call(params.name, arguments, progress))
            if created is not None:
                return created  # a CreateTaskResult, as a dict too
        progress = ctx.session.report_progress if _wants_progress(ctx, params) else None
        return sent(await registry.call(params.name, arguments, progress))

    def _remember(self, ctx) -> None:
        # ctx.session lives for one request; its connection lives as long as the client (stdio).
        # The SDK exposes no public accessor for it. Stateless HTTP connections have no channel.
        connection = getattr(getattr(ctx, "session", None), "_connection", None)
        if connection is not None and getattr(connection, "has_standalone_channel", False):
            try:
                self._sessions.add(connection)
            except TypeError:  # not weak-referenceable: no handshake-era notification for it
                pass

    async def tools_changed(self) -> None:
        """Tell connected clients that tools/list (and prompts/list, which reloads with it) has changed."""
        for event in (ToolsListChanged(), PromptsListChanged()):  # 2026-07-28 clients: subscriptions/listen
            await self.bus.publish(event)
        for connection in list(self._sessions):  # handshake-era clients: a plain notification
            try:
                await connection.send_tool_list_changed()
                await connection.send_prompt_list_changed()
            except Exception as exc:  # a closed connection: nothing to tell
                logger.debug("list_changed not sent to a connection: %s", exc)

    @staticmethod
    def raise_thread_limit() -> None:
        limiter = anyio.to_thread.current_default_thread_limiter()
        limiter.total_tokens = max(limiter.total_tokens, WORKER_THREADS)

    async def run_stdio(self, reloader=None) -> None:
        self.raise_thread_limit()
        async with stdio_streams() as (read, write), anyio.create_task_group() as tg:
            if reloader is not None:
                tg.start_soon(reloader.run)
            try:
                await self.server.run(read, write, self.initialization_options())
            finally:
                self.listen.close()
                tg.cancel_scope.cancel()


def instructions_for(registry: Registry, tags: frozenset[str] | None = None) -> str:
    """The server's instructions: mcpgen.yaml's, else a summary of what the tools are, naming those every
    caller may see (served, no scopes).

    >>> instructions_for(Registry())[:41]
    'Each tool answers from a query over this '
    """
    if registry.instructions:
        return registry.instructions
    tools = [t for t in registry if (tags is None or not tags.isdisjoint(t.tags)) and t.scopes is None]
    named = ", ".join(f"{t.name} ({t.title})" if t.title else t.name for t in tools[:SUMMARY_TOOLS])
    more = f" and {len(tools) - SUMMARY_TOOLS} more" if len(tools) > SUMMARY_TOOLS else ""
    listing = f" Tools: {named}{more}." if tools else ""
    return (
        "Each tool answers from a query over this project's data, in prose with the figures, a table and the "
        f"sources they come from (structuredContent.sources): cite those sources.{listing}"
    )


class DeclareExtensions:
    """Server middleware: the handshake-era `initialize` result declares the extensions that `server/discover`
    declares (the SDK drops `capabilities.extensions` there, as the 2025-11-25 schema has no such field)."""

    def __init__(self, extensions: dict[str, dict]):
        self.extensions = extensions

    async def __call__(self, ctx, call_next):
        result = await call_next(ctx)
        if ctx.method == "initialize" and isinstance(result, dict) and isinstance(result.get("capabilities"), dict):
            declared = result["capabilities"].get("extensions") or {}
            result["capabilities"]["extensions"] = {**self.extensions, **declared}
        return result


async def name_invalid_params(ctx, call_next):
    """Server middleware: request params of the wrong shape (a prompt argument that is a number, a task id
    that is not text) are refused naming the first bad field, where the SDK says only "Invalid request
    parameters"; pydantic's own words stay off the wire."""
    try:
        return await call_next(ctx)
    except ValidationError as exc:
        if not exc.title.endswith(("Request", "Params")):  # not the request itself: the SDK's answer, as before
            raise
        loc = [str(p) for p in exc.errors()[0]["loc"] if not str(p)[:1].isupper()]  # no union member's class name
        where = clipped(".".join(loc[1 if loc[:1] == ["params"] else 0 :]) or "params")
        wrong = _WRONG.get(exc.errors()[0]["type"], "has the wrong type or shape")
        raise MCPError(code=INVALID_PARAMS, message=inert(f"Invalid {ctx.method} params: '{where}' {wrong}.")) from None


_WRONG = {  # what the first error says, by pydantic's type of it; any other: the generic
    "missing": "is missing",
    "string_type": "must be a string",
    "dict_type": "must be an object",
    "literal_error": "is not one of the values it may take",
}


def _wants_progress(ctx, params: CallToolRequestParams) -> bool:
    """Whether the caller asked for progress: a progressToken in `_meta`, or (the SDK's in-process
    client) a progress callback on the request's channel. The SDK has no public accessor for it."""
    meta = params.meta or {}
    if "progressToken" in meta or "progress_token" in meta:
        return True
    channel = getattr(ctx.session, "_request_outbound", None)
    channel = getattr(channel, "_inner", channel)  # a 2026-07-28 stream wraps the channel
    return getattr(channel, "_progress_token", None) is not None or getattr(channel, "_on_progress", None) is not None


def _mentions(value: Any, key: str) -> bool:
    """Whether `key` is a key of any object inside the JSON value `value`.

    >>> _mentions({"properties": {"r": {"type": "string", "x-mcp-header": "Region"}}}, "x-mcp-header")
    True
    """
    if isinstance(value, dict):
        return key in value or any(_mentions(v, key) for v in value.values())
    return isinstance(value, list) and any(_mentions(v, key) for v in value)


def _prompt_message(prompt, arguments) -> GetPromptResult:
    try:
        return prompt.get(arguments)
    except ArgumentError as exc:
        raise MCPError(code=INVALID_PARAMS, message=str(exc)) from None


class ToolsetError(MCPGenError):
    """`serve --toolset` names a toolset that mcpgen.yaml does not define."""


def served_tags(toolsets: dict[str, list[str]], tags: str | None, toolset: str | None) -> frozenset[str] | None:
    """The tags `--tags A,B` and `--toolset NAME` select (a tool with one of them is served); None serves
    every tool.

    >>> sorted(served_tags({"ops": ["health"]}, "sales, ,finance", "ops"))
    ['finance', 'health', 'sales']
    >>> served_tags({}, None, None) is None
    True
    """
    chosen = [t.strip() for t in (tags or "").split(",") if t.strip()]
    if toolset is not None:
        if toolset not in toolsets:
            known = ", ".join(toolsets) or "none are defined"
            raise ToolsetError(f"no toolset named '{toolset}' in mcpgen.yaml ({known})")
        return frozenset(toolsets[toolset]) | frozenset(chosen)
    return frozenset(chosen) if tags else None
