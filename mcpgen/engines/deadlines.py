"""Deadlines: one background thread that calls a callback when its time is up (query cancellation).

Cheaper per call than a `threading.Timer`, which starts a thread each time.

>>> import threading
>>> fired = threading.Event()
>>> entry = DEADLINES.watch(0.01, fired.set)
>>> fired.wait(1)
True
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections.abc import Callable


class Deadlines:
    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._heap: list[list] = []
        self._counter = itertools.count()
        self._thread: threading.Thread | None = None

    def watch(self, seconds: float, callback: Callable[[], None]) -> list:
        """Call `callback` in `seconds` unless `cancel(entry)` comes first."""
        entry = [time.monotonic() + seconds, next(self._counter), callback]
        with self._cond:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="mcpgen-deadlines", daemon=True)
                self._thread.start()
            heapq.heappush(self._heap, entry)
            if self._heap[0] is entry:
                self._cond.notify()
        return entry

    @staticmethod
    def cancel(entry: list) -> None:
        entry[2] = None

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._heap:
                    self._cond.wait()
                deadline, _, callback = self._heap[0]
                if callback is None:  # cancelled: drop it now rather than wake up for it later
                    heapq.heappop(self._heap)
                    continue
                if deadline > time.monotonic():
                    self._cond.wait(deadline - time.monotonic())
                    continue
                heapq.heappop(self._heap)
            if callback is not None:
                try:
                    callback()
                except Exception:  # a cursor already closed: nothing to cancel
                    pass


DEADLINES = Deadlines()
