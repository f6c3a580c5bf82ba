"""Serving a project over MCP: compiled tools in a registry, answered by the SDK's low-level server.

- `registry`: tools by name, `@registry.tool()` for hand-written tools, every call logged
- `server`: `ToolServer`, the SDK's low-level `Server` answering from a registry
- `listen`: `subscriptions/listen` event streams, capped per caller and in time over HTTP
- `stdio`: the stdio transport without thread hops
- `project`: `open_project`, a loaded project with its engines and compiled tools
- `reload`: `serve --reload`, and the project swap that `preview` shares
- `mcp_app`: the MCP App (`ui://` resource) that draws tables and charts in the host
- `audit`: the audit log, one JSON line per call
- `telemetry`: optional OpenTelemetry traces and metrics
"""
