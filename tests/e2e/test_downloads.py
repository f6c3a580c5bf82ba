"""End to end: download links from the real `mcpgen serve`, over stdio and over HTTP with two callers, read
with the official client; the CSV and Parquet rows equal the query run directly in DuckDB."""

from __future__ import annotations

import base64
import csv
import io
import json
import os
import sys
import textwrap

import anyio
import duckdb
import pyarrow.parquet as pq
import pytest
import servers
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError
from shipped import REPO

from mcpgen.answer.downloads import MIME_TYPES, csv_cell

pytestmark = pytest.mark.slow

INIT = (
    "CREATE TABLE nums AS SELECT range AS n, 'row ' || range AS label, DATE '2020-01-01' + range::INT AS d, "
    "range / 4 AS x FROM range(5000)"
)
SQL = "SELECT n, label, d, x FROM nums WHERE n < :below ORDER BY n"
SPEC = f"""\
description: Numbers below a bound.
parameters:
  below: {{type: integer, description: Upper bound, default: 5000}}
sql: {SQL}
sources: [https://example.org/]
content: "{{{{ row_count }}}} numbers"
max_rows: 5
download: true
"""


@pytest.fixture
def specs(tmp_path):
    (tmp_path / "mcpgen.yaml").write_text(
        "connections:\n  default:\n    duckdb: ':memory:'\n    init: " + json.dumps([INIT]) + "\n"
    )
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "nums.yaml").write_text(textwrap.dedent(SPEC))
    return tmp_path / "specs"


def direct(below: int) -> tuple[list[str], list[tuple]]:
    con = duckdb.connect()
    con.execute(INIT)
    cur = con.execute(SQL.replace(":below", "?"), [below])
    return [d[0] for d in cur.description], cur.fetchall()


async def fetch_both(client, below: int):
    """Call the tool, read both of its links; return the links and the two files' rows."""
    result = await client.call_tool("nums", {"below": below})
    assert not result.is_error, result.content[0].text
    assert len(result.structured_content["table"]) == 6  # the model reads five rows
    links = {c.mime_type: c.uri for c in result.content if c.type == "resource_link"}
    text = (await client.read_resource(links["text/csv"])).contents[0]
    blob = (await client.read_resource(links[MIME_TYPES["parquet"]])).contents[0]
    assert text.mime_type == "text/csv" and blob.mime_type == MIME_TYPES["parquet"]
    table = pq.read_table(io.BytesIO(base64.b64decode(blob.blob)))
    parquet = (table.column_names, [tuple(r.values()) for r in table.to_pylist()])
    return links, list(csv.reader(io.StringIO(text.text))), parquet


def expect(below: int, csv_rows, parquet) -> None:
    columns, rows = direct(below)
    assert len(rows) == below
    assert csv_rows == [columns, *([csv_cell(v) for v in row] for row in rows)]
    assert parquet == (columns, rows)


async def refused(client, uri: str) -> MCPError:
    with pytest.raises(MCPError) as caught:
        await client.read_resource(uri)
    assert caught.value.error.data == {"uri": uri}
    return caught.value


def test_downloads_over_stdio_equal_the_query(specs):
    async def main():
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "mcpgen.cli", "serve", str(specs)], cwd=REPO, env=dict(os.environ)
        )
        async with Client(params) as client:
            links, csv_rows, parquet = await fetch_both(client, 4321)
            expect(4321, csv_rows, parquet)
            listed = [str(r.uri) for r in (await client.list_resources()).resources]
            assert not set(links.values()) & set(listed)
            altered = links["text/csv"].replace("args=", "args=e30")
            error = await refused(client, altered)
            assert error.error.code == -32602 and error.error.message.startswith("This ")

    anyio.run(main)


def test_downloads_over_http_are_bound_to_their_caller(specs):
    port = servers.free_port()
    proc = servers.start(
        [str(specs), "--http", "--port", str(port), "--auth-token-env", "A", "--auth-token-env", "B"],
        env={"A": servers.ALICE, "B": servers.BOB},
    )
    url = f"http://127.0.0.1:{port}/mcp"

    async def main():
        async with servers.client(url, servers.ALICE) as alice:
            links, csv_rows, parquet = await fetch_both(alice, 1234)
            expect(1234, csv_rows, parquet)
        async with servers.client(url, servers.BOB) as bob:
            error = await refused(bob, links["text/csv"])
            assert error.error.code == -32602
            assert "not for this caller and these arguments" in error.error.message
            _, csv_rows, parquet = await fetch_both(bob, 1234)  # his own link for the same arguments
            expect(1234, csv_rows, parquet)

    try:
        servers.wait_healthy(proc, port)
        anyio.run(main)
    finally:
        servers.stop(proc)
