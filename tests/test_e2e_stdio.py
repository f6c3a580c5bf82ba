"""End to end: the real `mcpgen serve specs/` over stdio, driven by the official MCP client.

Every shipped tool is called and its table compared with the same SQL run directly in DuckDB.
"""

import datetime as dt
import re
import shutil
from pathlib import Path

import anyio
import duckdb
import pytest
import yaml
from mcp import Client, StdioServerParameters

from mcpgen.results import to_cell

REPO = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.slow


def shipped_specs():
    out = {}
    for path in sorted((REPO / "specs").glob("*.yaml")):
        spec = yaml.safe_load(path.read_text())
        out[spec.get("name", path.stem)] = spec
    return out


def good_args(spec):
    for case in spec.get("tests", []):
        if "error_contains" not in case.get("expect", {}):
            return case.get("args", {})
    return {}


def direct_table(spec, args):
    """The spec's SQL run straight on DuckDB with the project's init statements: no mcpgen code."""
    config = yaml.safe_load((REPO / "mcpgen.yaml").read_text())
    con = duckdb.connect()
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(REPO)
        for statement in config["connections"]["default"]["init"]:
            con.execute(statement)
    values = {}
    for name, p in (spec.get("parameters") or {}).items():
        value = args.get(name, p.get("default"))
        if value is not None and p["type"] == "date":
            value = dt.date.fromisoformat(value)
        if value is not None and p["type"] == "datetime":
            value = dt.datetime.fromisoformat(value)
        values[name] = value
    sql = re.sub(r"\bIN\s+:([A-Za-z_]\w*)", r"IN (SELECT unnest($\1))", spec["sql"])
    sql = re.sub(r"(?<![:\w]):([A-Za-z_]\w*)", r"$\1", sql)
    used = set(re.findall(r"\$([A-Za-z_]\w*)", sql))
    cur = con.execute(sql, {k: v for k, v in values.items() if k in used})
    columns = [d[0] for d in cur.description]
    rows = cur.fetchmany(spec.get("max_rows", 1000))
    table = spec.get("table", True)
    if table is False:
        return None
    chosen = table["columns"] if isinstance(table, dict) and table.get("columns") else columns
    headers = table.get("headers", {}) if isinstance(table, dict) else {}
    return [[headers.get(c, c) for c in chosen]] + [[to_cell(r[columns.index(c)]) for c in chosen] for r in rows]


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


def test_bad_arguments_are_errors_naming_the_parameter_and_the_server_keeps_serving():
    async def check(client):
        cases = [
            ({"top_n": 5000}, "top_n", "maximum"),
            ({"top_n": "ten"}, "top_n", "integer"),
            ({"top_n": 3, "limit": 3}, "limit", "Unknown argument"),
            ({"country": "'; DROP TABLE cities; --"}, "country", "pattern"),
        ]
        for args, name, words in cases:
            result = await client.call_tool("top_cities", args)
            assert result.is_error
            text = result.content[0].text
            assert name in text and words in text and "Traceback" not in text
            assert text.count(".") >= 1 and "\n" not in text
        missing = await client.call_tool("country_profile", {})
        assert missing.is_error and "Missing required argument 'country'" in missing.content[0].text
        enum = await client.call_tool("busiest_routes", {"origin": "XXX"})
        assert enum.is_error and "origin" in enum.content[0].text and "not one of" in enum.content[0].text
        good = await client.call_tool("top_cities", {"top_n": 2})
        assert not good.is_error and len(good.structured_content["table"]) == 3

    anyio.run(_session, check)
