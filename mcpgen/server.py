"""The MCP server: the SDK's low-level `Server`, answering from a Registry.

The low-level server publishes each tool's inputSchema byte for byte (with
`additionalProperties: false`) and leaves argument checking to us, so unknown or
mistyped arguments are refused rather than dropped or coerced.

    server = ToolServer(registry)
    anyio.run(server.run_stdio)
"""
from __future__ import annotations

from mcp.server import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS, CallToolRequestParams, CallToolResult, ListToolsResult

from . import __version__
from .tools import Registry


class ToolServer:
    """Serves whatever `self.registry` holds; swapping it changes the tool set (reload)."""

    def __init__(self, registry: Registry, name: str = "mcpgen", instructions: str | None = None):
        self.registry = registry
        self.server = Server(name, version=__version__, instructions=instructions,
                             on_list_tools=self._list_tools, on_call_tool=self._call_tool)

    async def _list_tools(self, ctx, params) -> ListToolsResult:
        return ListToolsResult(tools=[tool.to_mcp() for tool in self.registry])

    async def _call_tool(self, ctx, params: CallToolRequestParams) -> CallToolResult:
        if params.name not in self.registry:
            raise MCPError(code=INVALID_PARAMS, message=f"Unknown tool: {params.name}")
        return await self.registry.call(params.name, params.arguments)

    async def run_stdio(self) -> None:
        async with stdio_server() as (read, write):
            await self.server.run(read, write, self.server.create_initialization_options())
