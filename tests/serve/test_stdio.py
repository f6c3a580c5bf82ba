"""The stdio transport: the event loop reads and writes the pipes; stray output stays off the wire."""

from __future__ import annotations

import os
import sys
import textwrap

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from mcpgen.serve.stdio import _is_pipe

pytestmark = pytest.mark.slow

PRINTING_TOOL = '''
import os
import sys

from mcp.types import CallToolResult, TextContent

from mcpgen import DataToolOutput, registry


@registry.tool()
def noisy(n: int = 1) -> DataToolOutput:
    """Prints to stdout, writes to fd 1 and reads stdin before answering."""
    print("stray print from a tool")
    sys.stdout.flush()
    os.write(1, b"stray bytes on fd 1\\n")
    stdin = os.read(0, 10)  # the wire is not readable from here: EOF
    return CallToolResult(
        content=[TextContent(type="text", text=f"n={n} stdin={stdin!r}")],
        structured_content={"sources": ["https://example.org/"], "table": [["n"], [n]]},
    )
'''


def test_stray_output_of_a_tool_does_not_reach_the_wire(tmp_path):
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "noisy.py").write_text(textwrap.dedent(PRINTING_TOOL))
    (specs / "big.yaml").write_text(
        textwrap.dedent("""\
        description: A long answer, to cross the pipe's buffer in pieces.
        sql: SELECT range AS n, repeat('x', 200) AS pad FROM range(5000)
        sources: [https://example.org/]
        content: "{{ row_count }} rows"
        max_rows: 5000
        max_bytes: 10000000
        """)
    )
    errlog = tmp_path / "stderr.log"

    async def main():
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "mcpgen.cli", "serve", str(specs)], env=dict(os.environ)
        )
        with open(errlog, "w") as err:
            async with stdio_client(params, errlog=err) as (read, write), ClientSession(read, write) as client:
                await client.initialize()
                answers = [await client.call_tool("noisy", {"n": i}) for i in range(3)]
                big = await client.call_tool("big", {})
        return answers, big

    answers, big = anyio.run(main)
    assert [a.content[0].text for a in answers] == ["n=0 stdin=b''", "n=1 stdin=b''", "n=2 stdin=b''"]
    assert len(big.structured_content["table"]) == 5001
    log = errlog.read_text()
    assert "stray print from a tool" in log and "stray bytes on fd 1" in log


def test_a_regular_file_is_not_a_pipe(tmp_path):
    path = tmp_path / "f"
    path.write_text("x")
    with open(path) as f:
        assert not _is_pipe(f.fileno())
    read, write = os.pipe()
    try:
        assert _is_pipe(read) and _is_pipe(write)
    finally:
        os.close(read)
        os.close(write)


def test_a_line_past_the_limit_is_dropped_and_reading_goes_on():
    import asyncio

    from mcpgen.serve import stdio

    async def main():
        reader = asyncio.StreamReader(limit=16)
        reader.feed_data(b'{"short": 1}\n' + b"x" * 40 + b'\n{"after": 2}\n')
        reader.feed_eof()
        return [line async for line in stdio._Lines(reader)]

    lines = asyncio.run(main())
    assert lines[0] == '{"short": 1}\n' and lines[-1] == '{"after": 2}\n' and "" in lines
