"""Deadlines: one background thread that calls a callback when its time is up (query cancellation),
and `Cutoff`, the last bound on a wait for a database's reply: the call's socket is shut down.

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
import os
import socket
import threading
import time
import weakref
from collections.abc import Callable


class Deadlines:
    def __init__(self) -> None:
        self._lock = threading.Lock()  # taken directly where no wait is needed: cheaper than the Condition's own
        self._cond = threading.Condition(self._lock)
        self._heap: list[list] = []
        self._counter = itertools.count()
        self._thread: threading.Thread | None = None

    def watch(self, seconds: float, callback: Callable[[], None]) -> list:
        """Call `callback` in `seconds` unless `cancel(entry)` comes first."""
        entry = [time.monotonic() + seconds, next(self._counter), callback]
        with self._lock:
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


class Cutoff:
    """Shut a call's database socket down if the call still waits `seconds` after it got its connection.

    The database's own time limit (statement_timeout, max_statement_time) answers first; this is for
    a reply that never comes (a peer gone silent, a network that drops packets): the driver's wait
    then ends with an error instead of lasting forever. The socket is duplicated when attached (or
    once per connection, `kept_duplicate`), so a closed connection's reused file number is never
    touched; `disarm` (before the connection goes back to its pool) makes sure a late deadline cannot
    reach the next call's socket.

    >>> a, b = socket.socketpair()
    >>> with Cutoff(0.05) as cutoff:
    ...     cutoff.attach(a.fileno())
    ...     a.recv(1), cutoff.fired
    (b'', True)
    >>> a.close(); b.close()
    """

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.fired = False
        self._lock = threading.Lock()
        self._socket: socket.socket | None = None
        self._owned = False  # whether `_socket` is this Cutoff's to close
        self._entry: list | None = None
        self._early: list | None = None  # `shorten`'s

    def attach(self, target: int | socket.socket | None) -> None:
        """Watch this socket from now on; the first one starts the clock. `target` is a file number
        the driver owns (duplicated here, and closed again by `disarm`), or a duplicate kept by its
        owner for as long as the connection lives (see `kept_duplicate`), which `disarm` leaves open."""
        if self._entry is None:
            self._entry = DEADLINES.watch(self.seconds, self._fire)
        if isinstance(target, socket.socket):
            duplicate, owned = target, False
        elif target is None or target < 0:
            return
        else:
            duplicate, owned = socket.socket(fileno=os.dup(target)), True
        with self._lock:
            previous, previous_owned = self._socket, self._owned
            self._socket, self._owned = duplicate, owned
            if self.fired:
                _shut(duplicate)
        if previous is not None and previous_owned:
            previous.close()

    def shorten(self, seconds: float) -> None:
        """Shut the socket `seconds` from now, if the call still waits then (and one attached later at
        once): a cancelled call's database has that long to answer the cancel."""
        early = DEADLINES.watch(seconds, self._fire)
        with self._lock:
            previous, self._early = self._early, early
        if previous is not None:
            DEADLINES.cancel(previous)

    def disarm(self) -> None:
        for entry in (self._entry, self._early):
            if entry is not None:
                DEADLINES.cancel(entry)
        if self._socket is None:  # nothing attached, or disarmed already (only `attach` sets it)
            return
        with self._lock:
            duplicate, owned, self._socket = self._socket, self._owned, None
        if duplicate is not None and owned:
            duplicate.close()

    def _fire(self) -> None:
        with self._lock:
            self.fired = True
            if self._socket is not None:
                _shut(self._socket)

    def __enter__(self) -> Cutoff:
        return self

    def __exit__(self, *exc_info) -> None:
        self.disarm()


def _shut(duplicate: socket.socket) -> None:
    try:
        duplicate.shutdown(socket.SHUT_RDWR)
    except OSError:  # already closed by the peer
        pass


_KEPT: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # a connection -> its socket's duplicate


def kept_duplicate(owner: object, fileno: int) -> socket.socket:
    """A duplicate of the socket `fileno` of the connection `owner`, made on its first call and kept
    for the next ones (a duplicate a call costs a system call or two), for `Cutoff.attach`. It is
    closed by `release_duplicate` when the connection is closed, or when `owner` is collected."""
    duplicate = _KEPT.get(owner)
    if duplicate is None:
        duplicate = _KEPT[owner] = socket.socket(fileno=os.dup(fileno))
        weakref.finalize(owner, duplicate.close)
    return duplicate


def release_duplicate(owner: object) -> None:
    """Close the duplicate kept for `owner`, if any (its connection is being closed)."""
    duplicate = _KEPT.pop(owner, None)
    if duplicate is not None:
        duplicate.close()
