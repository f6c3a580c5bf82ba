"""The stdio transport: mcpgen reads every line, and the event loop does it without a worker thread where it can.

The SDK's `stdio_server()` reads and writes through `anyio.wrap_file`: every line read, every
write and every flush is a hop to a worker thread and back (three or more per call), and a line it
cannot read is dropped without an answer. Here every line is read by `_Lines`, which answers those
(`frames.refusal`); a pipe, socket or terminal is read and written by the event loop itself, and
only what it cannot watch (a regular file or the null device, which epoll refuses; anything on
Windows) goes through a worker thread. Like the SDK, while serving, fd 0 reads the null device and
fd 1 goes to stderr, so stray `print()`s in Python tools never reach the wire; both are restored on
exit.

    async with stdio_streams() as (read, write):
        await server.run(read, write, options)
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import selectors
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import BinaryIO

import anyio.to_thread
from mcp.os.win32.utilities import rebind_std_handle_to_fd
from mcp.server.stdio import stdio_server

from .frames import error_answer, refusal

MAX_LINE = 64 * 1024 * 1024  # bytes in one JSON-RPC message from the client
TOO_LONG = f"Invalid Request: the message is longer than {MAX_LINE // 1024 // 1024} MiB"


class _Lines:
    """`async for line in ...` over `readline` (bytes; ValueError for a line past MAX_LINE), decoded as
    the SDK decodes (UTF-8, replace). A line the SDK cannot read is answered on `out` here
    (`frames.refusal`) and not passed on: the SDK would drop it."""

    def __init__(self, readline: Callable[[], Awaitable[bytes]], out: _Out | _Threaded):
        self._readline = readline
        self._out = out

    def __aiter__(self) -> _Lines:
        return self

    async def __anext__(self) -> str:
        while True:
            try:
                raw = await self._readline()
            except ValueError:  # a line past the limit, dropped
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
            await self._out.write(json.dumps(answer) + "\n")
            await self._out.flush()


class _Out:
    """`await write(text)` / `await flush()` over a StreamWriter."""

    def __init__(self, writer: asyncio.StreamWriter):
        self._writer = writer

    async def write(self, text: str) -> None:
        self._writer.write(text.encode("utf-8"))

    async def flush(self) -> None:
        await self._writer.drain()


class _Threaded:
    """`readline()`, `write(text)` and `flush()` over a file the event loop cannot watch, each in a worker
    thread (a buffered file: a write is whole however threads interleave)."""

    def __init__(self, file: BinaryIO):
        self._file = file

    async def readline(self) -> bytes:
        return await anyio.to_thread.run_sync(_read_line, self._file)

    async def write(self, text: str) -> None:
        await anyio.to_thread.run_sync(self._file.write, text.encode("utf-8"))

    async def flush(self) -> None:
        await anyio.to_thread.run_sync(self._file.flush)


def _read_line(file: BinaryIO) -> bytes:
    """The next line of `file`; ValueError, once the rest is skipped, for a line past MAX_LINE."""
    line = file.readline(MAX_LINE + 1)
    if len(line) <= MAX_LINE or line.endswith(b"\n"):
        return line
    while (rest := file.readline(MAX_LINE)) and not rest.endswith(b"\n"):
        pass
    raise ValueError("line too long")


@contextlib.asynccontextmanager
async def stdio_streams() -> AsyncIterator[tuple]:
    """The (read, write) streams of an MCP session over this process's stdin and stdout."""
    loop = asyncio.get_running_loop()
    watched_in = sys.platform != "win32" and _pollable(0, selectors.EVENT_READ)
    watched_out = sys.platform != "win32" and _pollable(1, selectors.EVENT_WRITE)
    wire_in, wire_out = os.dup(0), os.dup(1)
    saved_in, saved_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    sys.stdout.flush()
    _divert(null, 0)  # handlers read EOF ...
    _divert(2, 1)  # ... and their stray output goes to stderr, not the wire
    os.close(null)
    transports: list[asyncio.BaseTransport] = []
    files: list[BinaryIO] = []
    try:
        if watched_in:
            reader = asyncio.StreamReader(limit=MAX_LINE, loop=loop)
            read_transport, _ = await loop.connect_read_pipe(
                lambda: asyncio.StreamReaderProtocol(reader, loop=loop), os.fdopen(wire_in, "rb", 0)
            )
            transports.append(read_transport)
            readline = reader.readline
        else:
            files.append(os.fdopen(wire_in, "rb"))
            readline = _Threaded(files[-1]).readline
        out: _Out | _Threaded
        if watched_out:
            write_transport, protocol = await loop.connect_write_pipe(
                asyncio.streams.FlowControlMixin, os.fdopen(wire_out, "wb", 0)
            )
            transports.append(write_transport)
            out = _Out(asyncio.StreamWriter(write_transport, protocol, None, loop))
        else:
            files.append(os.fdopen(wire_out, "wb"))
            out = _Threaded(files[-1])
        async with stdio_server(stdin=_Lines(readline, out), stdout=out) as streams:  # type: ignore[arg-type]
            yield streams
    finally:
        for transport in transports:
            transport.close()
        for file in files:
            with contextlib.suppress(OSError):
                file.close()
        _divert(saved_in, 0)
        _divert(saved_out, 1)
        os.close(saved_in)
        os.close(saved_out)


def _divert(source: int, fd: int) -> None:
    """Point standard descriptor `fd` at `source` (on Windows, its standard handle too)."""
    os.dup2(source, fd)
    rebind_std_handle_to_fd(fd)


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
