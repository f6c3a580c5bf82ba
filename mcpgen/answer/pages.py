"""One page of a paged spec (`page_size:`): planned on its engine at the first call (`load.columns.page_plan`),
then the first page, a keyset page from the cursor's sort key, or an OFFSET page, and where the next one starts;
later pages read several at once and hold them (`answer.readahead`).

Whole paged tools are tested in tests/answer/test_paging.py.
"""

from __future__ import annotations

import math
import threading
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..engines.protocol import QueryResult
from ..load.columns import page_plan
from ..sql.pages import AFTER, LIMIT, OFFSET, PagePlan
from .cursors import Position
from .readahead import BATCH_SHARE, READ_AHEAD, Batch, rows_size

if TYPE_CHECKING:
    from ..engines.protocol import Engine, Prepared
    from ..load.specs import LoadedSpec


class Pager:
    """The pages of one spec on its engine; safe to call from many threads."""

    def __init__(self, loaded: LoadedSpec, engine: Engine, types: dict[str, str], page_size: int):
        self._loaded, self._engine, self._types, self.page_size = loaded, engine, types, page_size
        self._lock = threading.Lock()
        self._plan: PagePlan | None = None
        self._prepared: dict[Any, Prepared] = {}
        self._read_ahead = READ_AHEAD  # the process's, shared by every paged tool
        self._row_bytes, self._row_seconds = 0, 0.0  # per row, as the last read measured them

    def plan(self, timeout: float) -> PagePlan:
        """The page SQL, made once: it needs the result's columns, so the engine describes the query."""
        with self._lock:
            if self._plan is None:
                self._plan = page_plan(self._engine, self._loaded, timeout)
            return self._plan

    def _statement(self, which: Any, plan: PagePlan) -> Prepared:
        with self._lock:  # prepared once per shape, however many first calls arrive together
            prepared = self._prepared.get(which)
            if prepared is None:
                types = {**self._types, LIMIT: "integer", OFFSET: "integer"}
                if which == "first":
                    sql = plan.first()
                elif which == "offset":
                    sql = plan.offset()
                else:
                    nulls, copies = which
                    sql = plan.after(nulls, copies)
                    types.update({f"{AFTER}{i}": kind for i, kind in enumerate(plan.kinds) if not nulls[i]})
                prepared = self._prepared[which] = self._engine.prepare(sql, types)
        return prepared

    def page(
        self, values: dict[str, Any], at: Position, timeout: float, bound: str = ""
    ) -> tuple[QueryResult, Position | None]:
        """The page that starts at `at`, and where the next one starts (None: this is the last).
        `bound`: what the caller's cursors are bound to (`cursors.binding`), which a read-ahead is held for."""
        plan = self.plan(timeout)
        bound = f"{self._loaded.name}\x1f{bound}"  # a twin spec under another name holds its own
        batch = self._read_ahead.find(bound, at, self.page_size)
        if batch is None:  # a cursor whose batch is gone reads its page alone: it may be an old one, called again
            batch = self._read(plan, values, at, 1 if at.batch else self._ahead(at, timeout), timeout)
            if len(batch.rows) > self.page_size:  # more than this page: held for the next ones
                batch = self._read_ahead.keep(bound, batch)
            seconds = batch.seconds
        else:
            seconds = 0.0
        rows, more = batch.page(at.offset, self.page_size)
        result = QueryResult(batch.columns, rows, more, seconds)
        after = None
        if more:
            after = Position(at.offset + len(rows))
            if plan.keyset:
                after = _next_key(plan, rows, batch.following(at.offset, self.page_size), at, after.offset)
            if batch.name and batch.holds(after.offset, self.page_size):
                after = replace(after, batch=batch.name)
        if len(result.columns) > plan.width:
            result.columns = result.columns[: plan.width]
            result.rows = [row[: plan.width] for row in rows]
        return result, after

    def _ahead(self, at: Position, timeout: float) -> int:
        """How many pages to read from `at`: as many as were read before it, within a share of the
        read-ahead's bytes and a quarter of the timeout (as the last read measured them per row)."""
        pages = at.offset // self.page_size if self._row_seconds else 1  # nothing measured yet: one page
        if pages > 1:
            pages = min(pages, self._read_ahead.budget // BATCH_SHARE // (self._row_bytes * self.page_size + 1))
            pages = min(pages, int(timeout / 4 / (self._row_seconds * self.page_size + 1e-9)))
        return max(1, pages)

    def _read(self, plan: PagePlan, values: dict[str, Any], at: Position, pages: int, timeout: float) -> Batch:
        """`pages` pages from `at` in one query, and the row after them (whether the last page ends among copies)."""
        count = pages * self.page_size
        params: dict[str, Any] = {**values, LIMIT: count + 1}
        keyed = plan.keyset and at.key is not None and len(at.key) == len(plan.keys)
        if keyed:
            assert at.key is not None
            query = self._statement((tuple(v is None for v in at.key), at.skip > 0), plan)
            text = {i for i, v in enumerate(plan.values) if v.startswith("CAST(")}  # bound as text, cast back
            params.update({f"{AFTER}{i}": str(v) if i in text else v for i, v in enumerate(at.key) if v is not None})
            params[OFFSET] = at.skip
        elif at.offset:
            query = self._statement("offset", plan)
            params[OFFSET] = at.offset
        else:
            query = self._statement("first", plan)
        result = self._engine.run(query, params, count + 1, timeout)
        rows, following = result.rows[:count], result.rows[count:]
        batch = Batch(replace(at, batch=""), result.columns, rows, bool(following), seconds=result.seconds)
        batch.next = following[0] if following else None
        if rows:  # what the next read is sized by: a read too big to hold makes the next one smaller
            batch.size = rows_size(rows)
            self._row_seconds, self._row_bytes = result.seconds / len(rows), batch.size // len(rows)
        return batch


def _next_key(plan: PagePlan, rows: list[tuple], following: tuple | None, at: Position, offset: int) -> Position:
    """The last row's sort key and, when the row after it is equal on every key (an identical row), how
    many rows so far end with that key (0: the next page is the rows strictly after it)."""
    key = tuple(rows[-1][k.index] for k in plan.keys)
    if following is None or not _same(tuple(following[k.index] for k in plan.keys), key):
        return Position(offset, key)
    run = 0
    for row in reversed(rows):
        if not _same(tuple(row[k.index] for k in plan.keys), key):
            break
        run += 1
    if run == len(rows) and at.key is not None and _same(at.key, key):
        run += at.skip
    return Position(offset, key, run)


def _same(a: tuple, b: tuple) -> bool:
    """Equal as the database sees it: NaN equals NaN there."""
    return len(a) == len(b) and all(
        x == y or (isinstance(x, float) and isinstance(y, float) and math.isnan(x) and math.isnan(y))
        for x, y in zip(a, b)
    )
