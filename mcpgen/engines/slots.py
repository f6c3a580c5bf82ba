"""Fair slots: at most N queries at once on one connection, waiters served in arrival order.

DuckDB and Spark engines hold one for the block of each query (SQLAlchemy's pool does the same job).
Every engine also has an `Admission`: the server waits there, in the event loop, before a call
takes a worker thread, so calls queued for one busy connection hold no thread that a call to
another connection needs, and at most `queue_bound(slots)` calls wait (the rest are told at once
that the connection is busy).

>>> slots = FairSlots(1)
>>> with slots.held("default", timeout=1):
...     slots.acquire(timeout=0.01)
False
"""

from __future__ import annotations

import contextlib
import threading
from collections import deque
from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING

from ..errors import QueryError

if TYPE_CHECKING:
    import asyncio


class FairSlots:
    """A semaphore that serves waiters in arrival order: a released slot goes to the oldest waiter.
    A waiter gives up once no slot was released for `timeout` seconds: behind a queue that moves it
    waits on (the queue is bounded by the Admission in front).

    (threading.Semaphore lets the releasing thread take the slot straight back, so under load one
    caller can wait past its timeout while others run again and again.)"""

    def __init__(self, slots: int):
        self.slots = slots
        self._lock = threading.Lock()
        self._free = slots
        self._waiters: deque[threading.Event] = deque()
        self._released = 0  # slots released so far: whether the queue moved during a wait

    def acquire(self, timeout: float) -> bool:
        with self._lock:
            if self._free and not self._waiters:
                self._free -= 1
                return True
            granted = threading.Event()
            self._waiters.append(granted)
            seen = self._released
        while not granted.wait(timeout):
            with self._lock:
                if granted.is_set():  # handed over just as the wait ran out
                    return True
                if self._released == seen:  # no query finished within `timeout`
                    self._waiters.remove(granted)
                    return False
                seen = self._released
        return True

    def release(self) -> None:
        with self._lock:
            self._released += 1
            if self._waiters:
                self._waiters.popleft().set()
            else:
                self._free += 1

    @contextlib.contextmanager
    def held(self, connection: str, timeout: float) -> Iterator[None]:
        """Hold a slot for the block; waiting past `timeout` is a QueryError saying `connection` is busy."""
        if not self.acquire(timeout):
            raise QueryError(
                f"connection '{connection}' is busy: {self.slots} queries are already "
                f"running and none finished within {timeout:g} s; try again shortly"
            )
        try:
            yield
        finally:
            self.release()


THREADS_PER_SLOT = 2  # calls of one connection in worker threads at once, per query it runs at once
QUEUE_PER_SLOT = 16  # calls that may wait for one connection, per query it runs at once...
QUEUE_MIN = 64  # ...and at least this many


def queue_bound(slots: int) -> int:
    """How many calls may wait for a connection that runs `slots` queries at once.

    >>> queue_bound(1), queue_bound(8)
    (64, 128)
    """
    return max(QUEUE_MIN, QUEUE_PER_SLOT * slots)


class Admission:
    """At most `threads` calls at once on one connection (default twice its `slots`: a call holds
    its thread while its answer is built too, after the query), waited for in the event loop, in
    arrival order, each until no call on the connection ended for `timeout` seconds; past `queue`
    waiting calls, a new one is refused at once. Inside, the engine's own slots (or pool) still bound the queries themselves.

    Safe across event loops in several threads (`Registry.call_sync`): a slot is handed to a waiter
    in its own loop."""

    def __init__(
        self, connection: str, slots: int, timeout: float, queue: int | None = None, threads: int | None = None
    ):
        self.connection, self.slots, self.timeout = connection, slots, timeout
        self.queue = queue_bound(slots) if queue is None else queue
        self.threads = THREADS_PER_SLOT * slots if threads is None else threads
        self._lock = threading.Lock()
        self._free = self.threads
        self._waiters: deque[asyncio.Future] = deque()
        self._ended = 0  # calls that left so far: whether the queue moved during a wait

    @property
    def waiting(self) -> int:
        return len(self._waiters)

    @contextlib.asynccontextmanager
    async def admitted(self) -> AsyncIterator[None]:
        """Hold a slot for the block; a QueryError saying the connection is busy if none comes."""
        await self._acquire()
        try:
            yield
        finally:
            self._release()

    async def _acquire(self) -> None:
        import asyncio  # here: `validate` loads the engines and never waits for a slot

        with self._lock:
            if self._free and not self._waiters:
                self._free -= 1
                return
            if len(self._waiters) >= self.queue:
                raise QueryError(
                    f"connection '{self.connection}' is busy: {self.slots} queries are running and "
                    f"{len(self._waiters)} more are waiting, the most it queues; try again shortly"
                )
            granted = asyncio.get_running_loop().create_future()
            self._waiters.append(granted)
            seen = self._ended
        try:
            await self._wait(granted, seen)
        except BaseException as exc:
            with self._lock:
                handed = granted.done() and not granted.cancelled()
                if not handed:  # a hand-over still on its way finds it cancelled and passes the slot on
                    granted.cancel()
                    with contextlib.suppress(ValueError):
                        self._waiters.remove(granted)
            if handed:  # the slot came just as the wait ended: pass it on
                self._release()
            if isinstance(exc, TimeoutError):
                raise QueryError(
                    f"connection '{self.connection}' is busy: {self.slots} queries are already "
                    f"running and none finished within {self.timeout:g} s; try again shortly"
                ) from None
            raise

    async def _wait(self, granted: asyncio.Future, seen: int) -> None:
        """Until `granted` is handed a slot; TimeoutError once no call ended for `timeout` seconds."""
        import asyncio

        while not granted.done():
            await asyncio.wait({granted}, timeout=self.timeout)
            with self._lock:
                if granted.done():
                    return
                if self._ended == seen:
                    raise TimeoutError
                seen = self._ended

    def _release(self) -> None:
        import asyncio

        with self._lock:
            self._ended += 1
            while self._waiters:
                waiter = self._waiters.popleft()
                if waiter.done():  # gave up already
                    continue
                loop = waiter.get_loop()
                try:
                    here = asyncio.get_running_loop() is loop
                except RuntimeError:
                    here = False
                if here:
                    waiter.set_result(None)
                else:
                    loop.call_soon_threadsafe(self._hand_over, waiter)
                return
            self._free += 1

    def _hand_over(self, waiter: asyncio.Future) -> None:
        """In the waiter's own loop: give it the slot, or pass the slot on if it has given up."""
        if waiter.done():
            self._release()
        else:
            waiter.set_result(None)
