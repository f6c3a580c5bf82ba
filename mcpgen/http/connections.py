"""Keeping `serve --http` answering when clients are slow, many, or hostile.

uvicorn closes idle keep-alive connections, but a connection that sends half a header (or
half a body) and waits stays open for good, and each one holds a file descriptor: a thousand
of them used to take the server down, with asyncio logging "Too many open files" hundreds of
thousands of times. So:

- every request must arrive whole in time: its headers within `header_timeout` seconds of
  the connection opening (or of its first byte, on a kept-alive connection), its body within
  `body_timeout` seconds of the headers; otherwise the connection is closed;
- past `max_connections` open connections, a new one closes the oldest connection whose
  request is still arriving or that is kept alive with nothing in flight (so half-sent requests
  and idle connections cannot lock clients out), or, when every connection is busy with a whole
  request, gets a short 503 and is closed at once;
- one caller (its bearer token, else its address) may have at most half of `max_connections`
  requests in flight (`PerCaller`); past that its next request is a 503 with one sentence, so one
  caller cannot take every connection, whatever it holds them with;
- a response the client does not read holds the connection only `body_timeout` seconds once the
  server's send buffer is full: then the connection is aborted (a slow reader);
  `max_connections` stays below the process's file limit (raised to its hard limit) by
  enough for two rounds of accepting (BACKLOG each), so accepting never runs out of descriptors;
- the same warning from uvicorn or asyncio is logged at most once per `LOG_EVERY` seconds,
  then with the count of lines held back.

`GET` (and `HEAD`) on the MCP path answer 405: responses are plain JSON, there is no event
stream to open. A POSTed `subscriptions/listen` is one, bounded in `mcpgen.serve.listen`.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import resource
import socket
import struct
import time
from dataclasses import dataclass
from operator import itemgetter

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

logger = logging.getLogger("mcpgen.http")

LOG_EVERY = 10.0  # seconds between two log lines with the same message
FD_RESERVE = 128  # descriptors kept for database connections, spec files and logs
BACKLOG = 256  # the listen queue, and how many connections asyncio accepts in one go
MAX_HEAD = 16 * 1024  # a request line and headers, as h11 allowed (its default)
_TOO_LARGE = b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
_BUSY = b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 0\r\nconnection: close\r\nretry-after: 1\r\n\r\n"


@dataclass(frozen=True)
class ConnectionLimits:
    header_timeout: float = 10.0
    body_timeout: float = 30.0
    max_connections: int = 1000
    listen_timeout: float = 300.0  # seconds a subscriptions/listen stream stays open

    @property
    def per_caller(self) -> int:
        """Requests one caller may have in flight: half the connections, so another caller always fits."""
        return max(1, self.max_connections // 2)


def usable_connections(wanted: int) -> int:
    """`wanted`, or fewer if the file limit (raised to its hard limit first) is too small for it.

    >>> 0 < usable_connections(100) <= 100
    True
    """
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or hard > soft:
        target = 65536 if hard == resource.RLIM_INFINITY else hard
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError):
            pass
    room = max(soft - FD_RESERVE - 2 * BACKLOG, 16)  # surplus connections hold a descriptor until closed
    if wanted > room:
        logger.warning("the file limit (%d) allows %d connections, not %d", soft, room, wanted)
    return min(wanted, room)


def protocol_class(limits: ConnectionLimits) -> type[HttpToolsProtocol]:
    """uvicorn's httptools protocol with `limits` applied; pass it as `uvicorn.Config(http=...)`."""
    return type("LimitedHttpToolsProtocol", (_LimitedProtocol,), {"limits": limits, "arriving": {}})


_HEAD, _BODY = "head", "body"  # what of a request the connection is reading
_KEPT_ALIVE = object()  # a connection between requests, with nothing in flight


class _LimitedProtocol(HttpToolsProtocol):
    """What llhttp leaves to its caller, h11 did itself: a head (request line and headers) of at most
    MAX_HEAD bytes (431 past it), and exactly one Host header on an HTTP/1.1 request (400)."""

    limits: ConnectionLimits
    # Connections whose request is still arriving, oldest first: at the limit, the oldest of
    # them makes room for a new one, so a flood of half-sent requests cannot lock clients out.
    arriving: dict[_LimitedProtocol, None]

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._deadline: asyncio.TimerHandle | None = None
        self._reading: object = None  # the state the deadline was set for
        self._stalled: asyncio.TimerHandle | None = None  # the client stopped reading our response
        self._phase = _HEAD
        self._head_bytes = 0
        if len(self.connections) > self.limits.max_connections:
            oldest = next(iter(self.arriving), None)
            if oldest is None:  # every connection is busy with a whole request: this one waits its turn
                logger.warning("connection refused: %d connections are busy", self.limits.max_connections)
                transport.write(_BUSY)
                transport.close()
                return
            logger.warning(
                "at %d connections: closing the oldest still sending its request", self.limits.max_connections
            )
            oldest._too_slow()
        self._watch(arrived=False)

    def data_received(self, data: bytes) -> None:
        # A head is parsed in slices of what is left of MAX_HEAD, so llhttp never holds more of it. A
        # pipelined head read together with the end of the request before it counts from the next read.
        while self._phase is _HEAD and data and not self.transport.is_closing():
            room = MAX_HEAD - self._head_bytes
            if room <= 0:
                logger.warning("request refused: its headers are over %d bytes", MAX_HEAD)
                self.transport.write(_TOO_LARGE)
                self.transport.close()
                return self._stop()
            piece, data = data[:room], data[room:]
            self._head_bytes += len(piece)
            super().data_received(piece)
        if data and not self.transport.is_closing():
            super().data_received(data)
        self._watch(arrived=True)

    def on_headers_complete(self) -> None:
        self._phase, self._head_bytes = _BODY, 0
        hosts = list(map(itemgetter(0), self.headers)).count(b"host")  # in C: a loop here cost ~1% of a call
        if hosts > 1 or (hosts == 0 and self.parser.get_http_version() == "1.1"):
            raise ValueError("a request needs exactly one Host header")  # uvicorn answers 400 and closes
        before = self.cycle
        super().on_headers_complete()
        if self.cycle is not before:
            self.cycle.transport = OneWrite(self.transport, self.cycle)

    def on_message_complete(self) -> None:
        self._phase = _HEAD  # what follows is the next request
        super().on_message_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop()
        if self._stalled is not None:
            self._stalled.cancel()
        super().connection_lost(exc)

    def pause_writing(self) -> None:
        """The send buffer is full: the client has `body_timeout` seconds to read some of it."""
        super().pause_writing()
        if self._stalled is None:
            self._stalled = self.loop.call_later(self.limits.body_timeout, self._not_reading)

    def resume_writing(self) -> None:
        super().resume_writing()
        if self._stalled is not None:
            self._stalled.cancel()
            self._stalled = None

    def _not_reading(self) -> None:
        self._stalled = None
        logger.warning("closing a connection whose client stopped reading its response")
        sock = self.transport.get_extra_info("socket")
        if sock is not None:  # a reset: the kernel drops what is queued instead of keeping it for the client
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.transport.abort()  # close() would wait for the buffer the client does not read

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._watch(arrived=False)

    def _state(self, arrived: bool) -> object:
        """_HEAD or _BODY while a request is arriving, _KEPT_ALIVE between requests, else None."""
        if self._phase is _BODY:
            return _BODY
        if self.cycle is None:
            return _HEAD  # a new connection: its first request is due
        if not self.cycle.response_complete:
            return None  # between a request and its response: nothing to read
        return _HEAD if arrived else _KEPT_ALIVE  # uvicorn's keep-alive timeout closes it; at the limit it may go first

    def _watch(self, arrived: bool) -> None:
        """Keep one deadline running while a request is being read: headers, then body."""
        if self.transport.is_closing():
            return self._stop()
        state = self._state(arrived)
        if state is self._reading:
            return
        self._stop()
        if state in (_HEAD, _BODY):
            seconds = self.limits.header_timeout if state is _HEAD else self.limits.body_timeout
            self._deadline = self.loop.call_later(seconds, self._too_slow)
        if state in (_HEAD, _BODY, _KEPT_ALIVE):
            self._reading = state
            self.arriving[self] = None

    def _stop(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
        self._deadline, self._reading = None, None
        self.arriving.pop(self, None)

    def _too_slow(self) -> None:
        kept_alive = self._reading is _KEPT_ALIVE
        self._stop()
        if not self.transport.is_closing():
            if not kept_alive and (self.cycle is None or self.cycle.response_complete):
                self.transport.write(b"HTTP/1.1 408 Request Timeout\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
            self.transport.close()


class OneWrite(asyncio.Transport):
    """What a response is written through: a head with a Content-Length waits for the first write of
    its body and leaves with it, so an answer in one ASGI body message is one write (one TCP segment)
    rather than two. A chunked response (an event stream) sends its head at once."""

    def __init__(self, transport: asyncio.Transport, cycle) -> None:
        super().__init__()
        self._transport = transport
        self._cycle = cycle
        self._head: bytes | None = None
        self._held = True  # until the head has gone
        self._then = cycle.on_response
        cycle.on_response = self._complete

    def write(self, data) -> None:
        if self._held and self._cycle.response_started:
            if self._head is None and self._cycle.chunked_encoding is False:
                self._head = bytes(data)  # the head: the body's first write takes it along
                return
            self._held = False
            if self._head is not None:
                data, self._head = self._head + data, None
        self._transport.write(data)

    def flush(self) -> None:
        """Send a held head (a response with no body write: HEAD, or an empty body)."""
        if self._head is not None:
            self._transport.write(self._head)
        self._head, self._held = None, False

    def _complete(self) -> None:
        self.flush()
        self._then()

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def is_closing(self) -> bool:
        return self._transport.is_closing()

    def get_extra_info(self, name, default=None):
        return self._transport.get_extra_info(name, default)


class RateLimitedLog(logging.Filter):
    """Lets the same message through once per `every` seconds, then says how many were held back.

    >>> f = RateLimitedLog(every=60)
    >>> r = lambda: logging.LogRecord("asyncio", logging.ERROR, "", 0, "socket.accept() out of system resource", (), None)
    >>> [f.filter(r()) for _ in range(3)]
    [True, False, False]
    """

    def __init__(self, every: float = LOG_EVERY):
        super().__init__()
        self.every = every
        self._seen: dict[str, tuple[float, int]] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        key = f"{record.name}:{str(record.msg).partition(chr(10))[0]}"  # asyncio adds a line per socket
        now = time.monotonic()
        last, held = self._seen.get(key, (-self.every, 0))
        if now - last < self.every:
            self._seen[key] = (last, held + 1)
            return False
        self._seen[key] = (now, 0)
        if held:
            record.msg = f"{record.msg} ({held} more like this in the last {self.every:g} s)"
        return True


def quiet_floods(every: float = LOG_EVERY) -> None:
    """Rate-limit the loggers a flood of bad connections writes to: asyncio's, uvicorn's, ours."""
    for name in ("asyncio", "uvicorn.error", "mcpgen.http"):
        log = logging.getLogger(name)
        if not any(isinstance(f, RateLimitedLog) for f in log.filters):
            log.addFilter(RateLimitedLog(every))


class PerCaller:
    """ASGI middleware: at most `limit` requests in flight per caller, the rest a 503 with one sentence.

    The caller is the bearer token (hashed; an invalid one is refused by the next layer at once),
    else the client's address: with no tokens, callers on one address count as one."""

    def __init__(self, app, limit: int):
        self.app = app
        self.limit = limit
        self.in_flight: dict[str, int] = {}

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        who = caller_of(scope)
        held = self.in_flight.get(who, 0)
        if held >= self.limit:
            logger.warning("request refused: one caller already has %d requests in flight", held)
            text = (
                f"This caller already has {held} requests in flight, the most one caller may have on this "
                "server; retry when one has finished."
            )
            body = json.dumps({"error": text}).encode()
            headers = [
                (b"content-type", b"application/json"),
                (b"content-length", b"%d" % len(body)),
                (b"retry-after", b"1"),
                (b"connection", b"close"),  # and no pipelined request after it is read
            ]
            await send({"type": "http.response.start", "status": 503, "headers": headers})
            await send({"type": "http.response.body", "body": body})
            return
        self.in_flight[who] = held + 1
        try:
            await self.app(scope, receive, send)
        finally:
            left = self.in_flight[who] - 1
            if left:
                self.in_flight[who] = left
            else:
                del self.in_flight[who]


def caller_of(scope) -> str:
    """Who sent a request, for counting: its bearer token's digest, else its address.

    >>> caller_of({"headers": [(b"authorization", b"Bearer abc")], "client": ("10.0.0.1", 5)})[:6]
    'token '
    >>> caller_of({"headers": [], "client": ("10.0.0.1", 5)})
    'address 10.0.0.1'
    >>> two = [(b"authorization", b"Bearer a"), (b"host", b"x"), (b"authorization", b"Bearer b")]
    >>> caller_of({"headers": two}) == caller_of({"headers": two[:1]})  # the first, which the auth layer checks
    True
    """
    token = dict(reversed(scope.get("headers", ()))).get(b"authorization")  # the first one, as the auth layer reads
    if token is not None:
        return "token " + hashlib.sha256(token).hexdigest()[:16]
    client = scope.get("client") or ("",)
    return f"address {client[0]}"


class NoEventStream:
    """ASGI middleware: `GET path` (the SSE stream of streamable HTTP) is 405, as JSON responses need none."""

    def __init__(self, app, path: str):
        self.app = app
        self.path = path

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http" and scope["method"] in ("GET", "HEAD") and scope["path"].rstrip("/") == self.path:
            body = b'{"error": "this server answers POST with JSON; it opens no event stream"}'
            headers = [
                (b"allow", b"POST"),
                (b"content-type", b"application/json"),
                (b"content-length", b"%d" % len(body)),
            ]
            await send({"type": "http.response.start", "status": 405, "headers": headers})
            await send({"type": "http.response.body", "body": body})
            return
        await self.app(scope, receive, send)
