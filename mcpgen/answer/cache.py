"""The result cache: answers kept for a while, keyed by tool, caller and validated arguments.

A spec opts in with `cache: 60s` (or mcpgen.yaml's `defaults: {cache: 60s}`). Identical
calls in flight run the query once (single flight); entries expire after their time to
live and the least recently used go first once the byte budget is spent. Failed calls
are never kept. A reload builds a new Registry, and with it an empty cache.

>>> import anyio
>>> from mcp_types import CallToolResult, TextContent
>>> cache, runs = ResultCache(max_bytes=10_000), []
>>> async def run():
...     runs.append(1)
...     return CallToolResult(content=[TextContent(type="text", text="hi")]), None
>>> async def twice():
...     first = await cache.get_or_run(("t", None, "n=3"), 60, run)
...     second = await cache.get_or_run(("t", None, "n=3"), 60, run)
...     return first[2], second[2], len(runs)
>>> anyio.run(twice)
(False, True, 1)
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass
from typing import Any

import anyio
from mcp_types import CallToolResult

from ..spec.config import DEFAULT_CACHE_BYTES

META_KEY = "mcpgen/cache"  # in a result's _meta: "hit" or "miss"


@dataclass
class _Entry:
    result: CallToolResult
    size: int
    expires: float


class _Flight:
    """One call in flight; others with the same key wait for its result."""

    def __init__(self) -> None:
        self.done = anyio.Event()
        self.result: CallToolResult | None = None


class ResultCache:
    """Results by key, with a time to live each, least recently used dropped past `max_bytes`."""

    def __init__(self, max_bytes: int = DEFAULT_CACHE_BYTES):
        self.max_bytes = max_bytes
        self.bytes = 0
        self._entries: OrderedDict[Hashable, _Entry] = OrderedDict()
        self._flights: dict[Hashable, _Flight] = {}
        self._lock = threading.Lock()  # `Registry.call_sync` may run event loops in several threads

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: Hashable) -> CallToolResult | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            if entry.expires <= time.monotonic():
                self._drop(key)
                return None
            self._entries.move_to_end(key)
            return entry.result

    def put(self, key: Hashable, result: CallToolResult, ttl: float) -> None:
        """Keep a successful result; an error, or one bigger than the whole budget, is not kept."""
        if result.is_error:
            return
        size = len(result.model_dump_json(by_alias=True, exclude_none=True))
        if size > self.max_bytes:
            return
        with self._lock:
            if key in self._entries:
                self._drop(key)
            self._entries[key] = _Entry(result, size, time.monotonic() + ttl)
            self.bytes += size
            while self.bytes > self.max_bytes:
                self._drop(next(iter(self._entries)))

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.bytes = 0

    def _drop(self, key: Hashable) -> None:
        self.bytes -= self._entries.pop(key).size

    async def get_or_run(
        self, key: Hashable, ttl: float, run: Callable[[], Awaitable[tuple[CallToolResult, Any]]]
    ) -> tuple[CallToolResult, Any, bool]:
        """`(result, detail, hit)`: the cached result (detail None, hit True), or what `run()` returned
        (a result and its detail, e.g. the query's stats). Callers with the same key while `run()` is
        in flight share its result (errors included; only successes are kept), without its detail."""
        while True:
            cached = self.get(key)
            if cached is not None:
                return cached, None, True
            flight = self._flights.get(key)
            if flight is None:
                break
            await flight.done.wait()
            if flight.result is not None:
                return flight.result, None, False
            # the call in flight was cancelled: try again, perhaps as the one who runs it
        flight = self._flights[key] = _Flight()
        try:
            result, detail = await run()
            flight.result = result
            self.put(key, result, ttl)
            return result, detail, False
        finally:
            del self._flights[key]
            flight.done.set()
