"""The filters mcpgen adds to Jinja2's, listed once: the sandboxed environment and the plain-Python
renderer (`fast`) both take `FILTERS`.

>>> FILTERS["thousands"](1234567), FILTERS["percent"](0.1234), FILTERS["join_names"](["a", "b", "c"])
('1,234,567', '12.3%', 'a, b and c')
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from decimal import Decimal
from typing import Any


def thousands(value: Any, sep: str = ",") -> str:
    """1234567 -> '1,234,567'; 1234.5 -> '1,234.5'."""
    if value is None:
        return ""
    if isinstance(value, (int, Decimal)) and (not isinstance(value, Decimal) or value == value.to_integral()):
        return f"{int(value):,}".replace(",", sep)
    if isinstance(value, (float, Decimal)):
        text = f"{value:,.2f}".rstrip("0").rstrip(".")
        return text.replace(",", sep)
    return str(value)


def round_(value: Any, ndigits: int = 0) -> Any:
    if value is None:
        return None
    result = round(float(value), ndigits)
    return int(result) if ndigits <= 0 else result


def percent(value: Any, ndigits: int = 1) -> str:
    """0.1234 -> '12.3%'."""
    if value is None:
        return ""
    return f"{float(value) * 100:.{ndigits}f}%"


def date(value: Any, fmt: str = "%Y-%m-%d") -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        value = dt.datetime.fromisoformat(value)
    return value.strftime(fmt)


def join_names(values: Any, sep: str = ", ", last: str = " and ") -> str:
    """['a', 'b', 'c'] -> 'a, b and c'."""
    items = [str(v) for v in values]
    return items[0] if len(items) == 1 else sep.join(items[:-1]) + last + items[-1] if items else ""


FILTERS: dict[str, Callable[..., Any]] = {
    "thousands": thousands,
    "round": round_,
    "percent": percent,
    "date": date,
    "join_names": join_names,
}
