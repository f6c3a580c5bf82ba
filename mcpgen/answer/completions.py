"""Completions (`completion/complete`): the values a person may mean for an argument, from what they
have typed so far. Out of the box from the argument's own rules (enum values, true/false, dates within
its bounds); from a spec parameter's `complete:` query otherwise, run on the tool's connection as the
tool runs (read-only, its timeout, at most 100 rows, the caller's identity), cached per caller.

>>> from mcpgen.spec.models import Parameter
>>> builtin(Parameter(type="string", description="d", enum=["Asia", "Africa", "Europe"]), "A")
['Asia', 'Africa']
>>> builtin(Parameter(type="date", description="d", minimum="2000-01-01", maximum="2009-12-31"), "2005-0")
['2005-01-01']
"""

from __future__ import annotations

import datetime as dt
import re
import time
from collections import OrderedDict
from collections.abc import Hashable
from typing import Any

from ..engines.protocol import Engine, Prepared
from ..errors import ArgumentError, MCPGenError
from ..identity import caller_identity
from ..spec.models import Parameter
from ..spec.params import Arguments

MAX_VALUES = 100  # what completion/complete may return at once
CACHE_SECONDS = 60.0
CACHE_ENTRIES = 1000
_PARTIAL_DATE = re.compile(r"^(\d{4})(?:-(\d{1,2})?)?(?:-(\d{1,2})?)?$")


def builtin(parameter: Parameter, prefix: str) -> list[str]:
    """Values from the parameter's own rules that start with `prefix` (enum, boolean, date)."""
    if parameter.enum:
        candidates = [str(v) for v in parameter.enum]
    elif parameter.type == "boolean":
        candidates = ["true", "false"]
    elif parameter.type in ("date", "datetime"):
        candidates = _dates(parameter, prefix)
    else:
        return []
    folded = prefix.casefold()
    return [c for c in candidates if c.casefold().startswith(folded)][:MAX_VALUES]


def _dates(parameter: Parameter, prefix: str) -> list[str]:
    """The first day that `prefix` (2005, 2005-, 2005-0, 2005-03) can still become, then the bounds and
    the default; each inside the parameter's bounds."""
    low, high = _bound(parameter.minimum), _bound(parameter.maximum)
    out: list[str] = []
    match = _PARTIAL_DATE.match(prefix.strip())
    if match:  # the earliest date the typed text can still become: 2005-1 -> 2005-10-01, 2005-07-2 -> 2005-07-20
        try:
            out.append(dt.date(int(match[1]), _earliest(match[2]), _earliest(match[3])).isoformat())
        except ValueError:
            pass
    out += [str(v) for v in (parameter.minimum, parameter.maximum, parameter.default) if v is not None]
    kept = []
    for value in dict.fromkeys(out):
        when = _bound(value)
        if when is not None and (low is None or when >= low) and (high is None or when <= high):
            kept.append(value if parameter.type == "date" else f"{value}T00:00:00Z" if len(value) == 10 else value)
    return kept


def _earliest(part: str | None) -> int:
    """The smallest month or day a typed part can become: nothing or 0 -> 1, 1 -> 10, 07 -> 7."""
    if not part or part == "0":
        return 1
    return int(part) * 10 if len(part) == 1 else int(part)


def _bound(value: Any) -> dt.date | None:
    try:
        return dt.date.fromisoformat(str(value)[:10]) if value is not None else None
    except ValueError:
        return None


class QueryCompleter:
    """A parameter's `complete:` query on its tool's engine, with a small per-caller cache."""

    def __init__(self, engine: Engine, sql: str, parameters: dict[str, Parameter], timeout: float, max_rows: int):
        self.engine = engine
        self.query: Prepared = engine.prepare(sql, {"prefix": "string", **{n: p.type for n, p in parameters.items()}})
        self.parameters = parameters
        self.timeout = timeout
        self.max_rows = min(MAX_VALUES, max_rows)
        self._cache: OrderedDict[Hashable, tuple[float, list[str], bool]] = OrderedDict()

    def __call__(self, prefix: str, context: dict[str, str]) -> tuple[list[str], bool]:
        """(values, whether there are more) for `prefix` and the other arguments already given."""
        values = self._bind(prefix, context)
        key = (prefix, tuple(sorted((k, repr(v)) for k, v in values.items())), caller_identity())
        hit = self._cache.get(key)
        now = time.monotonic()
        if hit is not None and now - hit[0] < CACHE_SECONDS:
            self._cache.move_to_end(key)
            return hit[1], hit[2]
        try:
            result = self.engine.run(self.query, values, self.max_rows, self.timeout)
        except MCPGenError as exc:  # a timeout, a database error: no suggestions, one line in the log
            raise ArgumentError(f"no completions: {exc}") from None
        found = [str(row[0]) for row in result.rows if row and row[0] is not None]
        answer = (list(dict.fromkeys(found)), result.truncated)
        self._cache[key] = (now, *answer)
        while len(self._cache) > CACHE_ENTRIES:
            self._cache.popitem(last=False)
        return answer

    def _bind(self, prefix: str, context: dict[str, str]) -> dict[str, Any]:
        """:prefix, each other argument given that passes its own check (else NULL), claims from the caller."""
        values: dict[str, Any] = {name: None for name in self.query.names}
        for name, parameter in self.parameters.items():
            if parameter.from_claim is not None:
                values.update(Arguments({name: parameter}).validate({}))  # the caller's claim, as the tool binds it
            elif name in context and name in values:
                try:
                    values.update(Arguments({name: parameter}).validate({name: read_text(parameter, context[name])}))
                except ArgumentError:
                    pass  # a half-typed other argument filters nothing
        values["prefix"] = prefix
        return {k: v for k, v in values.items() if k in self.query.names}


_INTEGER = re.compile(r"^\s*[+-]?\d{1,30}\s*$")


def read_text(parameter: Parameter, value: Any) -> Any:
    """An argument sent as text, as the parameter's type when it reads as one (else as sent, for the
    parameter's check to refuse with its sentence)."""
    if not isinstance(value, str):
        return value
    if parameter.type == "integer" and _INTEGER.match(value):
        return int(value)
    if parameter.type == "number":
        try:
            number = float(value)
        except ValueError:
            return value
        return int(number) if number.is_integer() and re.fullmatch(r"\s*[+-]?\d+\s*", value) else number
    if parameter.type == "boolean" and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    return value
