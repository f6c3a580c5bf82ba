"""Read-ahead for paged answers: a walk's later pages read in one query, and held for a short while.

Walking every page of a big result one query per page makes the engine redo the query's work per
page (DuckDB has no index to read an order from: each page is a pass over the table). So the
Pager (`answer.pages`) reads more than one page once a caller has read a few: as many pages as it
has read so far, doubling the batch each time, within a time and a byte budget. The pages after
the first come from the held batch; the cursor names it, and still carries the sort key, so a page
whose batch is gone (evicted, expired, another process) is read from the key as before.

What a caller sees: a page held here shows its rows as they were when the batch was read, at most
READ_AHEAD_AGE seconds earlier, in the same read as the pages around it; the next read continues
after the last row given, as keyset pages do. Each batch is bound to the caller's cursor binding
(tool, arguments, caller, spec) besides its random name; all batches together stay within
READ_AHEAD_BYTES (their rows' Python objects, estimated from a random sample of rows), the least
recently used evicted first.

>>> held = ReadAhead(budget=10**6, age=60)
>>> batch = held.keep("bound", Batch(Position(1000), ["x"], [(i,) for i in range(2000)], more=True))
>>> rows, more = held.find("bound", Position(2000, batch=batch.name), 1000).page(2000, 1000)
>>> rows[0], len(rows), more
((1000,), 1000, True)
>>> held.find("other caller", Position(2000, batch=batch.name), 1000) is None
True
"""

from __future__ import annotations

import random
import secrets
import sys
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field

from .cursors import Position

READ_AHEAD_BYTES = 64 * 1024 * 1024  # every held batch of the process together
READ_AHEAD_AGE = 60.0  # seconds a batch is held after it was read
BATCH_SHARE = 4  # one batch takes at most this fraction of the budget
SAMPLE = 64  # rows measured to estimate a batch's bytes


@dataclass
class Batch:
    """Rows of a paged query read from position `at` on (`more`: the query has rows after them)."""

    at: Position
    columns: list[str]
    rows: list[tuple]
    more: bool
    name: str = ""
    bound: str = ""
    seconds: float = 0.0  # the read's, in the engine
    size: int = 0  # its rows' bytes, estimated (`rows_size`)
    next: tuple | None = None  # the row after its rows, as that read saw it
    read_at: float = field(default_factory=time.monotonic)

    @property
    def start(self) -> int:
        return self.at.offset

    def holds(self, offset: int, page_size: int) -> bool:
        """Whether the page at `offset` lies in this batch, with what follows it known."""
        end = self.start + len(self.rows)
        return self.start <= offset < end and (offset + page_size <= end or not self.more)

    def following(self, offset: int, page_size: int) -> tuple | None:
        """The row after the page at `offset` (None: none, or not read)."""
        i = offset - self.start + page_size
        return self.rows[i] if i < len(self.rows) else self.next

    def page(self, offset: int, page_size: int) -> tuple[list[tuple], bool]:
        """The page's rows, and whether more follow them."""
        i = offset - self.start
        return self.rows[i : i + page_size], i + page_size < len(self.rows) or self.more


class ReadAhead:
    """The held batches of a process, within a byte budget; safe to use from many threads."""

    def __init__(self, budget: int = READ_AHEAD_BYTES, age: float = READ_AHEAD_AGE):
        self.budget, self.age = budget, age
        self._lock = threading.Lock()
        self._held: OrderedDict[str, Batch] = OrderedDict()
        self._starts: dict[tuple[str, Position], str] = {}  # (binding, position read from): its batch
        self._used = 0

    def keep(self, bound: str, batch: Batch) -> Batch:
        """Hold `batch` for callers with this binding, if it fits in its share: then it gets its name."""
        batch.size = batch.size or rows_size(batch.rows)
        if batch.size > self.budget // BATCH_SHARE:
            return batch
        batch.name, batch.bound = secrets.token_urlsafe(12), bound
        with self._lock:
            self._expire()
            while self._used + batch.size > self.budget:
                self._drop_one(next(iter(self._held)))
            self._held[batch.name] = batch
            self._starts[bound, batch.at] = batch.name
            self._used += batch.size
        return batch

    def find(self, bound: str, at: Position, page_size: int) -> Batch | None:
        """The batch that holds the page at `at` for this binding, young enough: the one its cursor
        names, or one read from that very position (the same cursor followed again)."""
        with self._lock:
            self._expire()
            name = at.batch or self._starts.get((bound, at), "")
            batch = self._held.get(name)
            if batch is None or batch.bound != bound or not batch.holds(at.offset, page_size):
                return None
            self._held.move_to_end(name)
        return batch

    @property
    def used(self) -> int:
        return self._used

    def _expire(self) -> None:
        now = time.monotonic()
        for name in [n for n, b in self._held.items() if now - b.read_at > self.age]:
            self._drop_one(name)

    def _drop_one(self, name: str) -> None:
        batch = self._held.pop(name)
        if self._starts.get((batch.bound, batch.at)) == name:
            del self._starts[batch.bound, batch.at]
        self._used -= batch.size


READ_AHEAD = ReadAhead()  # the process's: every paged tool shares its budget


def rows_size(rows: list[tuple]) -> int:
    """About the bytes `rows` take as Python objects: the list, and rows drawn at random measured whole
    (measuring every value would cost a good part of what reading them did)."""
    if not rows:
        return sys.getsizeof(rows)
    sample = random.sample(rows, min(len(rows), SAMPLE))
    return sys.getsizeof(rows) + len(rows) * sum(map(_deep_size, sample)) // len(sample)


def _deep_size(value: object) -> int:
    size = sys.getsizeof(value)
    if isinstance(value, (tuple, list, set, frozenset)):
        size += sum(map(_deep_size, value))
    elif isinstance(value, dict):
        size += sum(_deep_size(k) + _deep_size(v) for k, v in value.items())
    return size
