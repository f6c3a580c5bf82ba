"""`subscriptions/listen` (2026-07-28) with bounds: a listen request's response is an event stream
that stays open, so over HTTP each caller may hold only `per_caller` of them, all callers together
`total`, and each stream ends gracefully after `lifetime` seconds (its final result frame: the
client listens again if it still wants to). Over stdio the one client owns the process: no bounds.

mcpgen's only event is tools/list_changed, after `serve --reload` swaps the tools.

>>> listen = BoundedListen(InMemorySubscriptionBus())
>>> listen.per_caller is None  # unbounded until `serve --http` bounds it
True
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import anyio
from mcp.server.subscriptions import SUBSCRIPTION_ID_META_KEY, InMemorySubscriptionBus, ListenHandler
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_REQUEST, SubscriptionsListenResult

from ..identity import caller_identity

LISTEN_PER_CALLER = 2  # a client needs one; two let it open the next before the last has ended
DEFAULT_LIFETIME = 300.0  # seconds; `serve --listen-timeout`


class BoundedListen:
    """The SDK's ListenHandler, with a cap per caller and overall, and a lifetime per stream (HTTP only)."""

    def __init__(self, bus: InMemorySubscriptionBus) -> None:
        self._handler = ListenHandler(bus)
        self.per_caller: int | None = None
        self.total: int | None = None
        self.lifetime: float | None = None
        self._open: Counter[str] = Counter()

    def bound(self, per_caller: int, total: int, lifetime: float) -> None:
        """Apply the bounds (`serve --http`)."""
        self.per_caller, self.total, self.lifetime = per_caller, max(1, total), lifetime

    def close(self) -> None:
        self._handler.close()

    async def __call__(self, ctx: Any, params: Any) -> SubscriptionsListenResult:
        request = getattr(ctx, "request", None)
        if request is None or self.per_caller is None:  # stdio: the one client
            return await self._handler(ctx, params)
        who = caller_identity() or f"address {getattr(request.client, 'host', '')}"
        if self._open[who] >= self.per_caller:
            raise MCPError(
                INVALID_REQUEST,
                f"This caller already holds {self._open[who]} subscriptions/listen streams, the most one caller "
                "may hold open; end one before listening again.",
            )
        if self.total is not None and sum(self._open.values()) >= self.total:
            raise MCPError(
                INVALID_REQUEST,
                f"The server holds {self.total} subscriptions/listen streams, the most it keeps open; "
                "listen again later.",
            )
        self._open[who] += 1
        try:
            with anyio.move_on_after(self.lifetime or float("inf")):
                return await self._handler(ctx, params)
            # open for `lifetime` seconds: ended as the protocol ends a stream on purpose, with its result
            return SubscriptionsListenResult(_meta={SUBSCRIPTION_ID_META_KEY: ctx.request_id})
        finally:
            self._open[who] -= 1
            if not self._open[who]:
                del self._open[who]
