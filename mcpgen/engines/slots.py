"""Fair slots: at most N queries at once on one connection, waiters served in arrival order.

DuckDB and Spark engines hold one for the block of each query (SQLAlchemy's pool does the same job).

>>> slots = FairSlots(1)
>>> with slots.held("default", timeout=1):
...     slots.acquire(timeout=0.01)
False
"""

from __future__ import annotations

import contextlib
import threading
from collections import deque
from collections.abc import Iterator

from ..errors import QueryError


class FairSlots:
    """A semaphore that serves waiters in arrival order: a released slot goes to the oldest waiter.

    (threading.Semaphore lets the releasing thread take the slot straight back, so under load one
    caller can wait past its timeout while others run again and again.)"""

    def __init__(self, slots: int):
        self.slots = slots
        self._lock = threading.Lock()
        self._free = slots
        self._waiters: deque[threading.Event] = deque()

    def acquire(self, timeout: float) -> bool:
        with self._lock:
            if self._free and not self._waiters:
                self._free -= 1
                return True
            granted = threading.Event()
            self._waiters.append(granted)
        if granted.wait(timeout):
            return True
        with self._lock:
            if granted.is_set():  # handed over just as the wait ran out
                return True
            self._waiters.remove(granted)
            return False

    def release(self) -> None:
        with self._lock:
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
