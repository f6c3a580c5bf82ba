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

import anyio.to_thread
from mcp.server import Server
from mcp.server.apps import APP_MIME_TYPE, EXTENSION_ID
from mcp.server.lowlevel.server import NotificationOptions
from mcp.server.stdio import stdio_server
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged
from mcp.shared.exceptions import MCPError
from mcp.types import (
    INVALID_PARAMS,
    CallToolRequestParams,
    CallToolResult,
    ListResourcesResult,
    ListToolsResult,
    ReadResourceRequestParams,
    ReadResourceResult,
)

from . import __version__
from .tools import Registry

logger = logging.getLogger("mcpgen")

# Sync tools run in anyio worker threads. A call waiting for a busy connection holds a thread for up
# to its queue_timeout, so allow more than anyio's default 40: waiters on one connection must not
# starve calls to another. (Waiting in the event loop on an anyio.CapacityLimiter instead was
# measured and was not faster: bench/bench_slots.py, docs/benchmarks.md.)
WORKER_THREADS = 100
RESOURCE_NOT_FOUND = -32002  # the MCP specification's error code for resources/read of an unknown URI


class ToolServer:
    """Serves whatever `self.registry` holds; swapping it changes the tool set (reload)."""

    def __init__(self, registry: Registry, name: str = "mcpgen", instructions: str | None = None):
        self.registry = registry
        # tools/list_changed: 2026-07-28 clients get it on a subscriptions/listen stream (the bus);
        # handshake-era sessions get a plain notification (the sessions seen so far).
        self.bus = InMemorySubscriptionBus()
        self.listen = ListenHandler(self.bus)
        self._sessions: weakref.WeakSet = weakref.WeakSet()
        self._listing: tuple[Registry | None, ListToolsResult | None] = (None, None)
        # get_tool_input_schema: without it the SDK runs the whole tools/list handler for every
        # 2026-07-28 tools/call over HTTP, just to check Mcp-Param-* headers.
        self.server = Server(
            name,
            version=__version__,
            instructions=instructions,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            on_subscriptions_listen=self.listen,
            get_tool_input_schema=self._input_schema,
            on_list_resources=self._list_resources,
            on_read_resource=self._read_resource,
        )
        # MCP Apps: tools carry _meta.ui.resourceUri; hosts without the extension ignore it.
        self.server.extensions[EXTENSION_ID] = {"mimeTypes": [APP_MIME_TYPE]}

    def initialization_options(self):
        return self.server.create_initialization_options(NotificationOptions(tools_changed=True))

    async def _list_tools(self, ctx, params) -> ListToolsResult:
        self._remember(ctx)
        registry, listing = self._listing
        if registry is not self.registry or listing is None:  # built once per tool set
            registry = self.registry
            listing = ListToolsResult(tools=[tool.to_mcp() for tool in registry])
            self._listing = (registry, listing)
        return listing

    async def _list_resources(self, ctx, params) -> ListResourcesResult:
        return ListResourcesResult(resources=[app.resource() for app in self.registry.apps.values()])

    async def _read_resource(self, ctx, params: ReadResourceRequestParams) -> ReadResourceResult:
        app = self.registry.apps.get(str(params.uri))
        if app is None:
            raise MCPError(code=RESOURCE_NOT_FOUND, message=f"Unknown resource: {params.uri}")
        contents = await anyio.to_thread.run_sync(app.contents)  # built on the first read: file I/O
        return ReadResourceResult(contents=[contents])

    def _input_schema(self, name: str):
        registry = self.registry
        return registry.get(name).input_schema if name in registry else None

    async def _call_tool(self, ctx, params: CallToolRequestParams) -> CallToolResult:
        self._remember(ctx)
        registry = self.registry  # one registry per call, even if a reload swaps it meanwhile
        if params.name not in registry:
            raise MCPError(code=INVALID_PARAMS, message=f"Unknown tool: {params.name}")
        return await registry.call(params.name, params.arguments)

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
        """Tell connected clients that tools/list has changed."""
        await self.bus.publish(ToolsListChanged())  # 2026-07-28 clients: their subscriptions/listen streams
        for connection in list(self._sessions):  # handshake-era clients: a plain notification
            try:
                await connection.send_tool_list_changed()
            except Exception as exc:  # a closed connection: nothing to tell
                logger.debug("tools/list_changed not sent to a connection: %s", exc)

    @staticmethod
    def raise_thread_limit() -> None:
        limiter = anyio.to_thread.current_default_thread_limiter()
        limiter.total_tokens = max(limiter.total_tokens, WORKER_THREADS)

    async def run_stdio(self, reloader=None) -> None:
        self.raise_thread_limit()
        async with stdio_server() as (read, write), anyio.create_task_group() as tg:
            if reloader is not None:
                tg.start_soon(reloader.run)
            try:
                await self.server.run(read, write, self.initialization_options())
            finally:
                self.listen.close()
                tg.cancel_scope.cancel()
