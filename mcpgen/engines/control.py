"""A running call's controls: while an engine runs a query in a worker thread, the serving side can
cancel it (a client's `notifications/cancelled`, a task's `tasks/cancel`) and read how far it is.

The server sets `CURRENT` to a fresh `CallControl` before it hands a call to a worker thread (anyio
copies the context into the thread); the engine `attach`es what cancels its query and what reports
its progress for as long as the query runs. A call nobody controls (the CLI, `mcpgen test`) has no
`CallControl`, and `attached` does nothing.

>>> control = CallControl(watched=True)
>>> token = CURRENT.set(control)
>>> with attached(lambda: print("interrupted"), lambda: 42.0):
...     control.progress()
...     control.cancel()
42.0
interrupted
>>> control.cancelled, control.progress()
(True, None)
>>> CURRENT.reset(token)
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextvars import ContextVar

from ..errors import QueryCancelled

CURRENT: ContextVar[CallControl | None] = ContextVar("mcpgen_call_control", default=None)


class CallControl:
    """Cancel a call's query from another thread, and read its progress (0 to 100) while it runs.
    `watched`: someone reads that progress (an engine may track it only then: DuckDB's costs every query)."""

    def __init__(self, watched: bool = False) -> None:
        self.watched = watched
        self._lock = threading.Lock()
        self._cancel: Callable[[], object] | None = None
        self._progress: Callable[[], float | None] | None = None
        self._cutters: list[Callable[[], object]] = []  # see `cut_short`
        self.cancelled = False
        self.done = False  # set by the server when the worker thread has returned

    def attach(self, cancel: Callable[[], object], progress: Callable[[], float | None] | None = None) -> None:
        """What stops the query now running, and what says how far it is (None: the engine cannot say)."""
        with self._lock:
            if self.cancelled:
                raise QueryCancelled("the call was cancelled before its query started")
            self._cancel, self._progress = cancel, progress

    def detach(self) -> None:
        with self._lock:
            self._cancel = self._progress = None

    def cancel(self) -> None:
        """Stop the query (if one runs) and every later one of this call."""
        with self._lock:
            self.cancelled = True
            for cut in self._cutters:  # first: the query's canceller may itself wait on a silent database
                cut()
            cancel = self._cancel
            if cancel is not None:  # under the lock: a query that has just finished is not cancelled
                try:
                    cancel()
                except Exception:  # the query ended meanwhile: nothing to stop
                    pass

    def progress(self) -> float | None:
        """Percent done of the running query, or None when there is no query or the engine cannot say."""
        with self._lock:
            progress = self._progress
            if progress is None:
                return None
            try:
                value = progress()
            except Exception:
                return None
        return float(value) if value is not None and 0 <= value <= 100 else None


def watched() -> bool:
    """Whether the running call's progress is read (by a caller who asked for it, or a task's status)."""
    control = CURRENT.get()
    return control is not None and control.watched


class attached:
    """For an engine: `cancel` and `progress` stand for this call's query while the block runs.
    Raises QueryCancelled if the call was cancelled before the query started. (A class rather than
    a generator: it runs around every query.)"""

    __slots__ = ("_cancel", "_control", "_progress")

    def __init__(self, cancel: Callable[[], object], progress: Callable[[], float | None] | None = None) -> None:
        self._cancel, self._progress = cancel, progress

    def __enter__(self) -> CallControl | None:
        control = self._control = CURRENT.get()
        if control is not None:
            control.attach(self._cancel, self._progress)
        return control

    def __exit__(self, *exc_info: object) -> None:
        if self._control is not None:
            self._control.detach()


class cut_short:
    """For an engine: while the block runs, a cancel of this call also calls `cut`, which ends the call's
    waits for the database (connecting, opening its transaction, the answer to a cancel request) a short,
    bounded time later, however far the call has got. `cut` runs at once if the call is cancelled already."""

    __slots__ = ("_control", "_cut")

    def __init__(self, cut: Callable[[], object]) -> None:
        self._cut = cut

    def __enter__(self) -> None:
        control = self._control = CURRENT.get()
        if control is not None:
            with control._lock:
                control._cutters.append(self._cut)
                if control.cancelled:
                    self._cut()

    def __exit__(self, *exc_info: object) -> None:
        if self._control is not None:
            with self._control._lock:
                self._control._cutters.remove(self._cut)
