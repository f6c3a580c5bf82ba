"""The engine's idle connections, held between calls: cheaper a call than SQLAlchemy's pool.

The pool checks a connection out and in again for every call: its queue, a new proxy and a new
`Connection` a call cost about as much as a short query's own message. `Hold` keeps up to
`pool_size` idle connections checked out of the pool, as open `Connection`s, and hands the last
one given back to the next call. The pool still makes every connection and bounds them all
(pool_size + max_overflow; it is told never to wait), and its `checkout` event still runs each
time a held connection is taken (mcpgen's own look at the socket and at the last call's reset,
and any other listener): one the server closed is dropped for another. A call that finds none
idle and the pool full waits here, at most `timeout`, for one given back.
"""

from __future__ import annotations

import threading
import time

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc


class Hold:
    """Up to `size` idle `Connection`s of `engine`, taken and given back one a call."""

    def __init__(self, engine: sa.Engine, size: int, timeout: float):
        self._engine = engine
        self._size = size
        self._timeout = timeout
        self._idle: list[sa.Connection] = []
        self._returns = 0  # connections given back so far: a waiting call looks for a change
        self._waiting = 0
        self._lock = threading.Lock()
        self._given = threading.Condition(self._lock)  # waited on only when the pool is full

    def take(self) -> sa.Connection:
        """The connection given back last, once the pool's checkout listeners found it usable; else
        one from the pool; else, once the pool is full, the next one given back within `timeout`
        (sa.exc.TimeoutError). The pool's errors are its own."""
        deadline = None
        while True:
            with self._lock:
                conn = self._idle.pop() if self._idle else None
                returns = self._returns
            if conn is not None:
                if _checked_out(conn):
                    return conn
                self._freed()
                continue
            try:
                return self._engine.connect()  # the pool never waits (pool_timeout 0)
            except sa_exc.TimeoutError:
                pass
            except Exception:  # connecting failed: its place in the pool is free for a waiting call to try
                self._freed()
                raise
            deadline = deadline or time.monotonic() + self._timeout
            with self._lock:
                while self._returns == returns:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        raise sa_exc.TimeoutError(f"no connection was given back within {self._timeout:g} s")
                    self._waiting += 1
                    try:
                        self._given.wait(remaining)
                    finally:
                        self._waiting -= 1

    def give(self, conn: sa.Connection) -> None:
        """Keep `conn` for the next call. One that is closed or invalidated goes back to the pool;
        one more than `size` idle, with no call waiting, is closed (the pool makes another when needed)."""
        fairy = None if conn.invalidated or conn.closed else conn.connection
        # not one of a pool disposed of meanwhile (a server restart): the pool of now bounds the rest
        if (
            fairy is not None
            and not getattr(fairy.dbapi_connection, "closed", True)
            and fairy._pool is self._engine.pool
        ):
            if conn.in_transaction():
                conn.rollback()  # SQLAlchemy's own record of one (the driver is in autocommit mode)
            with self._lock:
                if self._waiting or len(self._idle) < self._size:
                    self._idle.append(conn)
                    self._returns += 1
                    if self._waiting:
                        self._given.notify()
                    return
            conn.invalidate()
        conn.close()
        self._freed()

    def _freed(self) -> None:
        """A connection's place in the pool is free again: a waiting call tries the pool."""
        with self._lock:
            self._returns += 1
            if self._waiting:
                self._given.notify()

    def clear(self) -> None:
        """Give every idle connection back to the pool (before it is disposed of)."""
        with self._lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()


def _checked_out(conn: sa.Connection) -> bool:
    """Run the pool's `checkout` listeners on a held connection, as a checkout from the pool would;
    False (and the connection dropped) when one finds it unusable (DisconnectionError)."""
    fairy = conn.connection
    try:
        fairy._pool.dispatch.checkout(fairy.dbapi_connection, fairy._connection_record, fairy)
    except sa_exc.DisconnectionError:
        conn.invalidate()
        conn.close()
        return False
    return True
