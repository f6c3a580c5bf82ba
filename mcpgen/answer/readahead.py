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
>>> batch = held.keep("bound", Batch(1000, ["x"], [(i,) for i in range(2000)], more=True))
>>> rows, more = held.get(batch.name, "bound", 2000).page(2000, 1000)
>>> rows[0], len(rows), more
((1000,), 1000, True)
>>> held.get(batch.name, "other caller", 2000) is None
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

READ_AHEAD_BYTES = 64 * 1024 * 1024  # every held batch of the process together
READ_AHEAD_AGE = 60.0  # seconds a batch is held after it was read
BATCH_SHARE = 4  # one batch takes at most this fraction of the budget
SAMPLE = 64  # rows measured to estimate a batch's bytes


@dataclass
class Batch:
    """Rows of a paged query from row `start` on (`more`: the query has rows after them)."""

    start: int
    columns: list[str]
    rows: list[tuple]
    more: bool
    name: str = ""
    bound: str = ""
    seconds: float = 0.0  # the read's, in the engine
    size: int = 0
    read_at: float = field(default_factory=time.monotonic)

    def holds(self, offset: int, page_size: int) -> bool:
        """Whether the page at `offset` lies in this batch, with what follows it known."""
        end = self.start + len(self.rows)
        return self.start <= offset < end and (offset + page_size <= end or not self.more)

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
        self._used = 0

    def keep(self, bound: str, batch: Batch) -> Batch:
        """Hold `batch` for callers with this binding, if it fits in its share: then it gets its name."""
        batch.size = rows_size(batch.rows)
        if batch.size > self.budget // BATCH_SHARE:
            return batch
        batch.name, batch.bound = secrets.token_urlsafe(12), bound
        with self._lock:
            now = time.monotonic()
            for old in [n for n, b in self._held.items() if now - b.read_at > self.age]:
                self._drop_one(old)
            while self._used + batch.size > self.budget:
                self._drop_one(next(iter(self._held)))
            self._held[batch.name] = batch
            self._used += batch.size
        return batch

    def get(self, name: str, bound: str, offset: int) -> Batch | None:
        """The batch `name`, if held for this binding, young enough, and holding the page at `offset`."""
        with self._lock:
            batch = self._held.get(name)
            if batch is None or batch.bound != bound:
                return None
            if time.monotonic() - batch.read_at > self.age:
                self._drop_one(name)
                return None
            self._held.move_to_end(name)
        return batch

    @property
    def used(self) -> int:
        return self._used

    def _drop_one(self, name: str) -> None:
        self._used -= self._held.pop(name).size


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
