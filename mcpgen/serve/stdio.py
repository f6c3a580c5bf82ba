"""The stdio transport without a worker thread per line.

The SDK's `stdio_server()` reads and writes through `anyio.wrap_file`: every line read, every
write and every flush is a hop to a worker thread and back (three or more per call). Here the
event loop reads and writes the pipes itself. Like the SDK, while serving, fd 0 reads the
null device and fd 1 goes to stderr, so stray `print()`s in Python tools never reach the
wire; both are restored on exit.

    async with stdio_streams() as (read, write):
        await server.run(read, write, options)

Where the loop cannot watch the descriptors (stdin a regular file or the null device, which
epoll refuses; Windows), it falls back to the SDK's transport, which reads them in a thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import selectors
import sys
from collections.abc import AsyncIterator

from mcp.server.stdio import stdio_server

from .frames import error_answer, refusal

MAX_LINE = 64 * 1024 * 1024  # bytes in one JSON-RPC message from the client
TOO_LONG = f"Invalid Request: the message is longer than {MAX_LINE // 1024 // 1024} MiB"


class _Lines:
    """`async for line in ...` over a StreamReader, decoded as the SDK decodes (UTF-8, replace). A line
    the SDK cannot read is answered here (`frames.refusal`) and not passed on: the SDK would drop it."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        self._reader = reader
        self._writer = writer

    def __aiter__(self) -> _Lines:
        return self

    async def __anext__(self) -> str:
        while True:
            try:
                raw = await self._reader.readline()
            except ValueError:  # a line past the reader's limit, dropped
                answer: dict | None = error_answer(-32600, TOO_LONG)
            else:
                if not raw:
                    raise StopAsyncIteration
                line = raw.decode("utf-8", errors="replace")
                if not line.strip():
                    continue
                answer = refusal(line)
                if answer is None:
                    return line
            self._writer.write(json.dumps(answer).encode() + b"\n")
            await self._writer.drain()


class _Out:
    """`await write(text)` / `await flush()` over a StreamWriter."""

    def __init__(self, writer: asyncio.StreamWriter):
        self._writer = writer

    async def write(self, text: str) -> None:
        self._writer.write(text.encode("utf-8"))

    async def flush(self) -> None:
        await self._writer.drain()


@contextlib.asynccontextmanager
async def stdio_streams() -> AsyncIterator[tuple]:
    """The (read, write) streams of an MCP session over this process's stdin and stdout."""
    if sys.platform == "win32" or not (_pollable(0, selectors.EVENT_READ) and _pollable(1, selectors.EVENT_WRITE)):
        async with stdio_server() as streams:
            yield streams
        return
    loop = asyncio.get_running_loop()
    wire_in, wire_out = os.dup(0), os.dup(1)
    saved_in, saved_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    sys.stdout.flush()
    os.dup2(null, 0)  # handlers read EOF ...
    os.dup2(2, 1)  # ... and their stray output goes to stderr, not the wire
    os.close(null)
    transports: list[asyncio.BaseTransport] = []
    try:
        reader = asyncio.StreamReader(limit=MAX_LINE, loop=loop)
        read_transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader, loop=loop), os.fdopen(wire_in, "rb", 0)
        )
        transports.append(read_transport)
        write_transport, protocol = await loop.connect_write_pipe(
            asyncio.streams.FlowControlMixin, os.fdopen(wire_out, "wb", 0)
        )
        transports.append(write_transport)
        writer = asyncio.StreamWriter(write_transport, protocol, None, loop)
        async with stdio_server(stdin=_Lines(reader, writer), stdout=_Out(writer)) as streams:  # type: ignore[arg-type]
            yield streams
    finally:
        for transport in transports:
            transport.close()
        os.dup2(saved_in, 0)
        os.dup2(saved_out, 1)
        os.close(saved_in)
        os.close(saved_out)


def _pollable(fd: int, events: int) -> bool:
    """Whether the event loop can watch `fd`: a pipe, a socket or a terminal, not a regular file
    or the null device (epoll refuses those, and the loop would wait on them for ever).

    >>> import tempfile
    >>> with open(os.devnull) as null, tempfile.TemporaryFile() as file:
    ...     _pollable(null.fileno(), selectors.EVENT_READ), _pollable(file.fileno(), selectors.EVENT_READ)
    (False, False)
    """
    selector = selectors.DefaultSelector()
    try:
        selector.register(fd, events)
        return True
    except (OSError, ValueError):
        return False
    finally:
        selector.close()
