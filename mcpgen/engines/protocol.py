"""What every engine is: the `Engine` protocol, a prepared statement, a query's result.

An engine takes the spec's SQL once (`prepare`, which also checks it is one read-only
statement), then runs it per call with bound values, a row cap and a time limit, and can
say what columns it returns without running it (`describe`, for `mcpgen validate --live`).
`factory.create_engine` makes one for a connection of mcpgen.yaml.

>>> QueryResult(columns=["x"], rows=[(1,)], truncated=False).rows
[(1,)]
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from .slots import Admission


@dataclass
class QueryResult:
    """The rows of one call, and what the call log reports about it."""

    columns: list[str]
    rows: list[tuple]
    truncated: bool  # the query matched more than max_rows rows
    seconds: float = 0.0  # time spent in the engine, waiting for a free connection included


@dataclass(frozen=True)
class Prepared:
    """A checked statement in the engine's own form, and the parameter names it binds."""

    sql: Any
    names: frozenset[str]


class Engine(Protocol):
    """The interface every engine implements."""

    name: str
    dialect: str | None  # a sqlglot dialect name, used to read the SQL (None: generic SQL)
    admission: Admission  # where the server waits for a slot on this connection before taking a thread

    def prepare(self, sql: str, types: Mapping[str, str] | None = None) -> Prepared:
        """Check `sql` and make it ready to run; `types` are the declared parameter types (`param_types`)."""
        ...

    def run(self, query: Prepared, params: dict[str, Any], max_rows: int, timeout: float) -> QueryResult:
        """Run `query` with `params`; at most `max_rows` rows, cancelled after `timeout` seconds."""
        ...

    def describe(
        self, query: Prepared, timeout: float, known: Mapping[str, Any] | None = None
    ) -> list[tuple[str, str]]:
        """(column name, type name) of the result, without doing the query's work: every
        parameter NULL but those in `known` (an enum parameter's first value, where NULL cannot stand)."""
        ...

    def close(self) -> None:
        """Release connections; the engine is not used afterwards."""
        ...
