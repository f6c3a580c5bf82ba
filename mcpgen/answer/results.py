"""The result shape: the strict `structuredContent` model, JSON cells and the table.

>>> to_cell(2**60), to_cell(float("nan")), to_cell(Decimal("1.50"))
('1152921504606846976', None, 1.5)
"""

from __future__ import annotations

import base64
import copy
import datetime as dt
import functools
import json
import math
import operator
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictFloat, StrictInt, StrictStr, WithJsonSchema

from ..spec.models import TableSpec

MAX_SAFE_INT = 2**53
TRUNCATED_META = "mcpgen/truncated"  # result `_meta` key when rows were cut at max_rows: {"max_rows": n}
# One type list rather than anyOf of five schemas: clients check every cell against it, and a
# list is about twice as fast to check as five alternatives.
Cell = Annotated[
    StrictStr | StrictInt | StrictFloat | StrictBool | None,
    WithJsonSchema({"type": ["string", "number", "boolean", "null"]}),
]
SourceURL = Annotated[StrictStr, Field(pattern=r"^https?://[^\s/?#]+[^\s]*$")]


class DataToolPayload(BaseModel):
    """What the gateway renders: sources always, table, charts and force text when given."""

    model_config = ConfigDict(strict=True, extra="forbid", allow_inf_nan=False)
    sources: list[SourceURL] = Field(min_length=1, description="Links to the original data.")
    # Optional fields are left out when absent, never null: no anyOf for clients to walk.
    # None is only ever the default (a given None fails validation), so the types stay non-optional.
    table: list[list[Cell]] = Field(None, description="Rows of JSON scalars; the first row is the header.")  # type: ignore[arg-type]
    charts: list[dict[str, Any]] = Field(None, description="Chart.js 4 configurations.")  # type: ignore[arg-type]
    force: StrictStr = Field(None, description="Text shown to the user exactly as-is.")  # type: ignore[assignment]


if TYPE_CHECKING:
    from mcp_types import CallToolResult

    DataToolOutput = Annotated[CallToolResult, DataToolPayload]


def __getattr__(name: str) -> Any:
    """`DataToolOutput`, the return annotation of a hand-written tool: the protocol types load with it."""
    if name == "DataToolOutput":
        from mcp_types import CallToolResult

        return Annotated[CallToolResult, DataToolPayload]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@functools.cache
def output_schema() -> dict[str, Any]:
    """The payload's JSON Schema without pydantic's `"default": null` on fields typed array or
    string (a null default contradicts the type, and strict validators refuse the schema). Made
    when first asked for: `mcpgen call` lists no tool, and does without."""
    schema = DataToolPayload.model_json_schema()
    for prop in schema["properties"].values():
        if "default" in prop and prop["default"] is None:
            del prop["default"]
    return schema


def _published(schema: dict[str, Any]) -> dict[str, Any]:
    """The outputSchema clients get: the same shape, with table cells described rather than
    re-checked. Every cell is a `Cell` before the server answers (a table mcpgen builds by
    construction, a hand-written tool's by `check_result`); a client checking each cell again
    costs more than the query at 1,000 rows.

    >>> _published(output_schema())["properties"]["table"]["items"]
    {'type': 'array'}
    """
    out = copy.deepcopy(schema)
    table = out["properties"]["table"]
    table["items"] = {"type": "array"}
    table["description"] += " Cells are strings, numbers, booleans or null."
    for prop in out["properties"].values():  # pydantic's titles repeat the names: bytes in every tools/list
        prop.pop("title", None)
    return out


@functools.cache
def published_schema() -> dict[str, Any]:
    """The one outputSchema every tool of mcpgen publishes (`_published`), made when first asked for."""
    return _published(output_schema())


def to_cell(value: Any) -> Any:
    """One database value as a JSON scalar, without losing precision."""
    return _converter(type(value))(value)


def _integer(value: int) -> int | str:
    return value if -MAX_SAFE_INT <= value <= MAX_SAFE_INT else str(value)


def _float(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _decimal(value: Decimal) -> int | float | str | None:
    if not value.is_finite():
        return None
    if value == value.to_integral_value():
        return _integer(int(value))  # SUM and COUNT come back as whole Decimals on some databases
    as_float = float(value)
    return as_float if Decimal(repr(as_float)) == value else str(value)


def _itself(value: Any) -> Any:
    return value


def _base64(value: bytes | bytearray | memoryview) -> str:
    return base64.b64encode(bytes(value)).decode("ascii")


def _json_text(value: list | tuple | dict) -> str:
    return json.dumps(_jsonable(value), ensure_ascii=False)


_ISO = operator.methodcaller("isoformat")  # the value's own method: a subclass's isoformat is its own
_RULES: dict[type, Callable[[Any], Any]] = {
    type(None): _itself,
    bool: _itself,
    str: _itself,
    int: _integer,
    float: _float,
    Decimal: _decimal,
    dt.datetime: _ISO,
    dt.date: _ISO,
    dt.time: _ISO,
    dt.timedelta: str,
    bytes: _base64,
    bytearray: _base64,
    memoryview: _base64,
    uuid.UUID: str,
    list: _json_text,
    tuple: _json_text,
    dict: _json_text,
}


def _converter(kind: type) -> Callable[[Any], Any]:
    """How values of `kind` become cells: its rule, else that of the nearest of its classes that has one
    (a subclass of str is text, of int a number), else `str`."""
    return _RULES.get(kind) or next((_RULES[k] for k in kind.__mro__ if k in _RULES), str)


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return to_cell(value)


@dataclass
class Table:
    """A result as a table: the header, and the cells of each column (`to_cells`), which sizing and
    number formats read as they are, without turning the rows around again."""

    header: list[str]
    columns: list[Sequence[Any]]  # one per header, each as long as the result

    def rows(self, count: int | None = None) -> list[list[Any]]:
        """The table as an answer carries it: the header row, then the first `count` rows (all by default)."""
        columns = self.columns if count is None else [column[:count] for column in self.columns]
        return [self.header, *map(list, zip(*columns))]


def build_table(columns: list[str], rows: list[tuple], spec: bool | TableSpec) -> Table | None:
    """The table of a result, its cells made by `to_cells`; None when the spec says `table: false`.

    >>> build_table(["n", "x"], [(1, 0.5), (2**60, float("nan"))], True).rows()
    [['n', 'x'], [1, 0.5], ['1152921504606846976', None]]
    """
    if spec is False:
        return None
    picks: Sequence[int]
    if spec is True:
        header, picks = list(columns), range(len(columns))
    else:
        chosen = spec.columns or columns
        picks = [columns.index(c) for c in chosen]
        header = [spec.headers.get(c, c) for c in chosen]
    by_column = list(zip(*rows)) if rows else [()] * len(columns)
    return Table(header, [to_cells(by_column[i]) for i in picks])


def json_size_bound(table: Table | None) -> int:
    """At least the bytes of `json.dumps(table.rows(), ensure_ascii=False)` in UTF-8, found without
    encoding: a character of a string takes at most six (a control character's escape `\\u0001`; four for
    the widest in UTF-8), plus quotes, any other cell at most 26.

    >>> table = Table(["city", "n"], [("Oslo", 'say "hi"', "\\x01\\U0001F600"), (709037, None, 1.5)])
    >>> json_size_bound(table) >= len(json.dumps(table.rows(), ensure_ascii=False).encode())
    True
    """
    if table is None:
        return 4
    count = len(table.columns[0]) if table.columns else 0
    return 2 + (count + 1) * 3 + _json_bound(table.header) + sum(map(_json_bound, table.columns))


def _json_bound(cells: Sequence[Any]) -> int:
    """The bound of `json_size_bound` for these cells, without a look at each cell of a column that holds no text."""
    types = set(map(type, cells))
    if not any(issubclass(kind, str) for kind in types):
        return 26 * len(cells)
    strings = cells if types == {str} else [v for v in cells if isinstance(v, str)]
    return 6 * sum(map(len, strings)) + 4 * len(strings) + 26 * (len(cells) - len(strings))


_AS_IS = {str, bool, type(None)}


def to_cells(values: tuple) -> tuple | list:
    """One column of values as JSON cells: `to_cell` of each, decided once for the column when
    its types allow (a column of text, or of safe integers, or of finite floats, is already JSON;
    a column of one other type, NULLs aside, is converted by that type's rule)."""
    types = set(map(type, values))
    if types <= _AS_IS:
        return values
    if types <= {int, float, type(None)}:
        present = [v for v in values if v is not None] if type(None) in types else values
        finite = float not in types or all(map(math.isfinite, present))
        if finite and (int not in types or (min(present) >= -MAX_SAFE_INT and max(present) <= MAX_SAFE_INT)):
            return values
    kinds = types - {type(None)}
    if len(kinds) == 1:
        convert = _converter(kinds.pop())
        return (
            [None if v is None else convert(v) for v in values] if type(None) in types else list(map(convert, values))
        )
    return list(map(to_cell, values))
