"""What a call answers: a spec compiled into a tool, and the result it builds.

- `tool`: `Tool` and `Answer`, and the results every call ends in (`error_result`, `check_result`)
- `compile`: a loaded spec compiled into a tool: arguments checked, the query run, the answer built
- `plain`: mcpgen's own result (`ToolResult`), made into the protocol's result (or its JSON) where it leaves mcpgen
- `results`: the result's shape (`DataToolOutput`, the published output schema), table cells
- `charts`: Chart.js configs from the rows
- `numbers`: one number format per table column (`_meta["mcpgen/formats"]`), for the app and `mcpgen call`
- `cache`: the result cache (`cache: 60s`)
- `cursors`: the signed cursors that continue a paged answer
- `pages`: one page of a paged spec; `readahead`: a walk's later pages read several at once and held
"""
