"""One number format per table column, chosen once in Python from every number in the column.

A column's decimals are the most any of its numbers needs, at most `MAX_DECIMALS`, so `50` beside
`52.2` reads `50.0` and `52.2`; numbers are grouped by thousands (`709,037`), except whole numbers
under a header that names a year, an id or a code. The formats travel in the result's
`_meta["mcpgen/formats"]` (one entry per header, None where a column holds no number); the MCP App
applies them with the host's `Intl.NumberFormat`, and `mcpgen call` with `format_number`, which
writes what `Intl.NumberFormat("en-US")` writes: the shortest decimal form of the number, rounded
half away from zero. The cells themselves stay the numbers the query computed.

>>> column_formats([["city", "share", "year"], ["Oslo", 50, 2020], ["Lima", 52.25, 2021]])
[None, {'decimals': 2, 'grouping': True}, {'decimals': 0, 'grouping': False}]
>>> format_number(709037, {"decimals": 0, "grouping": True}), format_number(50, {"decimals": 1, "grouping": True})
('709,037', '50.0')
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Sequence
from decimal import ROUND_HALF_UP, Context, Decimal
from itertools import repeat
from typing import Any

__all__ = ["FORMATS_META", "MAX_DECIMALS", "column_formats", "format_number", "formats_of"]

FORMATS_META = "mcpgen/formats"  # result `_meta` key: one {"decimals", "grouping"} or None per column
MAX_DECIMALS = 3
_UNGROUPED = re.compile(r"year|\bid\b|_id$|code", re.IGNORECASE)  # 2024 and 10452, not 2,024 and 10,452
_NUMBERS = {int, float, Decimal}
_FRACTIONAL = {float, Decimal}
_STEPS = [Decimal(1).scaleb(-d) for d in range(MAX_DECIMALS + 1)]


def column_formats(table: list[list[Any]] | None) -> list[dict[str, Any] | None] | None:
    """The format of each column of `table` (header row first); None when no column holds a number."""
    if not table or len(table) < 2:
        return None
    return formats_of(table[0], list(zip(*table[1:])))


def formats_of(header: list[Any], columns: list[Sequence[Any]]) -> list[dict[str, Any] | None] | None:
    """`column_formats` of a table held as its header and the values of each column."""
    formats = [_column_format(values, str(name)) for name, values in zip(header, columns)]
    return formats if any(formats) else None


def _column_format(values: Sequence[Any], header: str) -> dict[str, Any] | None:
    types = set(map(type, values))
    if not types & _NUMBERS:
        return None
    decimals = 0
    if types & _FRACTIONAL:  # integers need no look at each value
        decimals = _most_decimals([v for v in values if type(v) in _FRACTIONAL])
    return {"decimals": decimals, "grouping": decimals > 0 or not _UNGROUPED.search(header)}


def _most_decimals(numbers: list) -> int:
    """The most decimals any of `numbers` needs, at most MAX_DECIMALS. A number has at most d decimals in
    its shortest form exactly when rounding it to d places gives it back, so the usual column is settled
    by one pass of `round` in C; a column with a number that has more looks at each number."""
    for decimals in range(MAX_DECIMALS + 1):
        if all(map(operator.eq, map(round, numbers, repeat(decimals)), numbers)):
            return decimals
    most = 0
    for value in numbers:
        most = max(most, _decimals(value))
        if most == MAX_DECIMALS:
            break
    return most


def _decimals(value: float | Decimal) -> int:
    """The decimals `value` needs when shown with at most MAX_DECIMALS: those of its shortest form,
    rounded there; a number other than zero that would show as 0 needs them all (0.000, not 0)."""
    if isinstance(value, float):
        if not math.isfinite(value) or value.is_integer():
            return 0
        text = repr(value)
        if "e" not in text and len(text) - text.index(".") - 1 <= MAX_DECIMALS:
            return len(text) - text.index(".") - 1  # the usual case: short already, nothing to round
        value = Decimal(text)
    elif not value.is_finite():
        return 0
    rounded = _rounded(value, MAX_DECIMALS)
    if not rounded and value:
        return MAX_DECIMALS
    exponent = rounded.normalize().as_tuple().exponent
    return max(0, -exponent) if isinstance(exponent, int) else 0


def _rounded(value: Decimal, decimals: int) -> Decimal:
    """`value` to `decimals` places, half away from zero (Intl's halfExpand), however many digits it has."""
    digits = max(value.adjusted(), 0) + decimals + 2
    return value.quantize(_STEPS[decimals], rounding=ROUND_HALF_UP, context=Context(prec=digits))


def format_number(value: Any, fmt: dict[str, Any]) -> str:
    """A number as the app shows it in locale en-US under its column's format; "" for None.

    >>> fmt = {"decimals": 2, "grouping": True}
    >>> format_number(-1234.5, fmt), format_number(1.005, fmt), format_number(None, fmt), format_number(math.nan, fmt)
    ('-1,234.50', '1.01', '', 'NaN')
    """
    if value is None:
        return ""
    if isinstance(value, bool) or not isinstance(value, (int, float, Decimal)):
        return str(value)
    exact = Decimal(repr(value)) if isinstance(value, float) else Decimal(value)
    if not exact.is_finite():
        return "NaN" if exact.is_nan() else "∞" if exact > 0 else "-∞"
    decimals = fmt["decimals"]
    return f"{_rounded(exact, decimals):{',' if fmt['grouping'] else ''}.{decimals}f}"
