"""The stdio transport: the event loop reads and writes the pipes; stray output stays off the wire."""

from __future__ import annotations

import os
import sys
import textwrap

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from mcpgen.serve.stdio import _pollable

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


def test_only_what_the_loop_can_watch_is_read_by_it(tmp_path):
    """Pipes and sockets are read by the event loop; a regular file or the null device (which epoll
    refuses) is read in a worker thread instead."""
    import selectors
    import socket

    path = tmp_path / "f"
    path.write_text("x")
    with open(path) as f, open(os.devnull) as null:
        assert not _pollable(f.fileno(), selectors.EVENT_READ)
        assert not _pollable(null.fileno(), selectors.EVENT_READ)
    read, write = os.pipe()
    a, b = socket.socketpair()
    try:
        assert _pollable(read, selectors.EVENT_READ) and _pollable(write, selectors.EVENT_WRITE)
        assert _pollable(a.fileno(), selectors.EVENT_READ) and _pollable(b.fileno(), selectors.EVENT_WRITE)
    finally:
        os.close(read)
        os.close(write)
        a.close()
        b.close()


@pytest.mark.parametrize("stdin", ["devnull", "empty-file", "closed-pipe"])
def test_serve_ends_with_one_sentence_when_stdin_has_nothing(stdin, tmp_path):
    """`mcpgen serve` with stdin that ends at once (the null device, an empty file, a pipe closed
    before a word) and stdout to a pipe: it stops within seconds, exit 0, and says so in one line."""
    import subprocess

    from mcpgen.cli import STDIN_CLOSED

    empty = tmp_path / "empty"
    empty.write_text("")
    with open(empty) as empty_file:
        source = {"devnull": subprocess.DEVNULL, "empty-file": empty_file, "closed-pipe": subprocess.PIPE}[stdin]
        out, err, returncode, elapsed = _serve(source, stdin == "closed-pipe")
    text = err.decode()
    assert returncode == 0, text
    assert elapsed < 30
    assert "Traceback" not in text and "Error" not in text, text
    assert text.splitlines()[-1] == STDIN_CLOSED and text.count(STDIN_CLOSED) == 1
    assert out == b""


def _serve(source, close_at_once: bool):
    """`mcpgen serve` on the shipped specs with this stdin and stdout to a pipe, until it ends (30 s at most)."""
    import subprocess
    import time

    from shipped import REPO

    start = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "mcpgen.cli", "serve", str(REPO / "specs")],
        stdin=source,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=REPO,
    )
    if close_at_once:
        proc.stdin.close()
        proc.stdin = None
    try:
        out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    return out, err, proc.returncode, time.monotonic() - start


@pytest.mark.parametrize("source", ["event loop", "thread"])
def test_a_line_past_the_limit_or_no_message_is_answered_and_reading_goes_on(source, tmp_path, monkeypatch):
    """Read by the event loop (a pipe) or in a thread (a regular file), the same lines pass and the same
    answers are written."""
    import asyncio
    import json

    from mcpgen.serve import stdio

    class Out:
        def __init__(self):
            self.out = ""

        async def write(self, text: str) -> None:
            self.out += text

        async def flush(self) -> None:
            pass

    first, after = '{"jsonrpc":"2.0","method":"a"}\n', '{"jsonrpc":"2.0","id":2,"method":"b"}\n'
    data = first.encode() + b"x" * 60 + b'\n{"id": 1}\n\n' + after.encode()
    out = Out()
    monkeypatch.setattr(stdio, "MAX_LINE", 48)
    (tmp_path / "lines").write_bytes(data)

    async def main():
        if source == "thread":
            with open(tmp_path / "lines", "rb") as file:
                return [line async for line in stdio._Lines(stdio._Threaded(file).readline, out)]
        reader = asyncio.StreamReader(limit=48)
        reader.feed_data(data)
        reader.feed_eof()
        return [line async for line in stdio._Lines(reader.readline, out)]

    assert asyncio.run(main()) == [first, after]
    answers = [json.loads(line) for line in out.out.splitlines()]
    assert [(a["id"], a["error"]["code"]) for a in answers] == [(None, -32600), (1, -32600)]
    assert answers[0]["error"]["message"] == stdio.TOO_LONG
