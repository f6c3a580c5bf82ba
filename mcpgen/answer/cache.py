"""The result cache: answers kept for a while, keyed by tool, caller and validated arguments.

A spec opts in with `cache: 60s` (or mcpgen.yaml's `defaults: {cache: 60s}`). Identical
calls in flight run the query once (single flight); entries expire after their time to
live (dropped when they expire, looked up or not) and the least recently used go first
once the byte budget is spent; the budget counts each entry's key as well as its answer, plus
ENTRY_OVERHEAD bytes for the bookkeeping. Failed calls are never kept. A reload builds a new Registry, and with it an empty cache.

>>> import anyio
>>> from mcpgen.answer.plain import TextContent, ToolResult
>>> cache, runs = ResultCache(max_bytes=10_000), []
>>> async def run():
...     runs.append(1)
...     return ToolResult([TextContent("hi")]), None
>>> async def twice():
...     first = await cache.get_or_run(("t", None, "n=3"), 60, run)
...     second = await cache.get_or_run(("t", None, "n=3"), 60, run)
...     return first[2], second[2], len(runs)
>>> anyio.run(twice)
(False, True, 1)
"""

from __future__ import annotations

import heapq
import threading
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass
from typing import Any

import anyio

from ..spec.config import DEFAULT_CACHE_BYTES
from .plain import ToolResult, json_size

META_KEY = "mcpgen/cache"  # in a result's _meta: "hit" or "miss"
ENTRY_OVERHEAD = 512  # bytes an entry costs besides its key and answer text (objects, dict slots, heap)


@dataclass
class _Entry:
    result: ToolResult
    size: int
    expires: float


class _Flight:
    """One call in flight; others with the same key wait for its result."""

    def __init__(self) -> None:
        self.done = anyio.Event()
        self.result: ToolResult | None = None


class ResultCache:
    """Results by key, with a time to live each, least recently used dropped past `max_bytes`."""

    def __init__(self, max_bytes: int = DEFAULT_CACHE_BYTES):
        self.max_bytes = max_bytes
        self.bytes = 0
        self._entries: OrderedDict[Hashable, _Entry] = OrderedDict()
        self._expiries: list[tuple[float, int, Hashable]] = []  # (expires, n, key): a heap, oldest first
        self._pushed = 0
        self._flights: dict[Hashable, _Flight] = {}
        self._lock = threading.Lock()  # `Registry.call_sync` may run event loops in several threads

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: Hashable) -> ToolResult | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            if entry.expires <= time.monotonic():
                self._drop(key)
                return None
            self._entries.move_to_end(key)
            return entry.result

    def put(self, key: Hashable, result: ToolResult, ttl: float) -> None:
        """Keep a successful result; an error, or one bigger than the whole budget, is not kept."""
        if result.is_error:
            return
        size = json_size(result) + key_size(key) + ENTRY_OVERHEAD
        if size > self.max_bytes:
            return
        now = time.monotonic()
        with self._lock:
            self._purge(now)
            if key in self._entries:
                self._drop(key)
            expires = now + ttl
            self._entries[key] = _Entry(result, size, expires)
            self._pushed += 1
            heapq.heappush(self._expiries, (expires, self._pushed, key))
            self.bytes += size
            while self.bytes > self.max_bytes:
                self._drop(next(iter(self._entries)))

    def _purge(self, now: float) -> None:
        """Drop every entry whose time is up (the heap may name entries already gone or replaced)."""
        heap = self._expiries
        while heap and heap[0][0] <= now:
            expires, _, key = heapq.heappop(heap)
            entry = self._entries.get(key)
            if entry is not None and entry.expires == expires:
                self._drop(key)
        if len(heap) > 2 * len(self._entries) + 64:  # entries dropped early (LRU): rebuild from what is kept
            self._expiries = [item for item in heap if item[2] in self._entries]
            heapq.heapify(self._expiries)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._expiries.clear()
            self.bytes = 0

    def _drop(self, key: Hashable) -> None:
        self.bytes -= self._entries.pop(key).size

    async def get_or_run(
        self, key: Hashable, ttl: float, run: Callable[[], Awaitable[tuple[ToolResult, Any]]]
    ) -> tuple[ToolResult, Any, bool]:
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


def key_size(key: Hashable) -> int:
    """The bytes a key holds, as text: a key of the cache is a tuple of strings (and None).

    >>> key_size(("top_cities", None, "n=3"))
    13
    """
    if isinstance(key, tuple):
        return sum(key_size(part) for part in key)
    if key is None:
        return 0
    return len(key.encode("utf-8", "surrogatepass")) if isinstance(key, str) else len(repr(key))
