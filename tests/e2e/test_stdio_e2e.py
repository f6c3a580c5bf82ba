"""End to end: the real `mcpgen serve specs/` over stdio, driven by the official MCP client.

Every shipped tool is called and its table compared with the same SQL run directly in DuckDB.
The protocol itself (errors, listing, reload) is tested in process in tests/serve/test_server.py.
"""

import shutil
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters
from shipped import direct_table, good_args, shipped_specs

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


async def _session(check):
    params = StdioServerParameters(command=shutil.which("mcpgen"), args=["serve", str(REPO / "specs")])
    async with Client(params) as client:
        await check(client)


def test_every_shipped_tool_answers_what_duckdb_answers():
    specs = shipped_specs()

    async def check(client):
        listed = {t.name: t for t in (await client.list_tools()).tools}
        assert set(specs) <= set(listed)
        assert "airline_lookup" in listed  # the Python tool in specs/python_tools.py
        assert "miles_to_km" not in listed  # not annotated -> DataToolOutput: never registered
        for name, spec in specs.items():
            tool = listed[name]
            assert tool.input_schema["additionalProperties"] is False
            assert tool.output_schema["required"] == ["sources"]
            args = good_args(spec)
            result = await client.call_tool(name, args)
            assert not result.is_error, (name, result.content)
            data = result.structured_content
            assert data["sources"] and all(s.startswith("https://") for s in data["sources"])
            assert result.content[0].text.strip()
            assert data.get("table") == direct_table(spec, args), name
            assert len(data.get("charts", [])) == len(
                spec["chart"] if isinstance(spec.get("chart"), list) else [spec["chart"]] if spec.get("chart") else []
            )

    anyio.run(_session, check)
