"""The result shape: the strict `structuredContent` model, JSON cells and the table.

>>> to_cell(2**60), to_cell(float("nan")), to_cell(Decimal("1.50"))
('1152921504606846976', None, 1.5)
"""

from __future__ import annotations

import base64
import copy
import datetime as dt
import json
import math
import uuid
from collections.abc import Sequence
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


def _output_schema() -> dict[str, Any]:
    """The payload's JSON Schema without pydantic's `"default": null` on fields typed array or
    string (a null default contradicts the type, and strict validators refuse the schema)."""
    schema = DataToolPayload.model_json_schema()
    for prop in schema["properties"].values():
        if "default" in prop and prop["default"] is None:
            del prop["default"]
    return schema


OUTPUT_SCHEMA = _output_schema()


def _published(schema: dict[str, Any]) -> dict[str, Any]:
    """The outputSchema clients get: the same shape, with table cells described rather than
    re-checked. The server holds every cell to `Cell` before it answers; a client checking each
    cell again costs more than the query at 1,000 rows.

    >>> _published(OUTPUT_SCHEMA)["properties"]["table"]["items"]
    {'type': 'array'}
    """
    out = copy.deepcopy(schema)
    table = out["properties"]["table"]
    table["items"] = {"type": "array"}
    table["description"] += " Cells are strings, numbers, booleans or null."
    for prop in out["properties"].values():  # pydantic's titles repeat the names: bytes in every tools/list
        prop.pop("title", None)
    return out


PUBLISHED_SCHEMA = _published(OUTPUT_SCHEMA)


def to_cell(value: Any) -> Any:
    """One database value as a JSON scalar, without losing precision."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return value if -MAX_SAFE_INT <= value <= MAX_SAFE_INT else str(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Decimal):
        if not value.is_finite():
            return None
        if value == value.to_integral_value():
            return to_cell(int(value))  # SUM and COUNT come back as whole Decimals on some databases
        as_float = float(value)
        return as_float if Decimal(repr(as_float)) == value else str(value)
    if isinstance(value, (dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return str(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, (list, tuple, dict)):
        return json.dumps(_jsonable(value), ensure_ascii=False)
    return str(value)


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return to_cell(value)


def build_table(columns: list[str], rows: list[tuple], spec: bool | TableSpec) -> list[list[Any]] | None:
    """The header row, then one row of cells per result row; None when the spec says `table: false`.

    >>> build_table(["n", "x"], [(1, 0.5), (2**60, float("nan"))], True)
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
    if not rows:
        return [header]
    by_column = list(zip(*rows))
    cells = [to_cells(by_column[i]) for i in picks]
    return [header, *map(list, zip(*cells))]


def json_size_bound(table: list[list[Any]] | None) -> int:
    """At least the bytes of `json.dumps(table, ensure_ascii=False)` in UTF-8, found without encoding: a
    character of a string takes at most six (a control character's escape `\\u0001`; four for the widest
    in UTF-8), plus quotes, any other cell at most 26.

    >>> table = [["city", "n"], ["Oslo", 709037], ['say "hi"', None], ["\\x01\\U0001F600", 1.5]]
    >>> json_size_bound(table) >= len(json.dumps(table, ensure_ascii=False).encode())
    True
    """
    if not table:
        return 4
    total = 2 + len(table) * 3  # brackets, row brackets and commas
    for column in zip(*table):
        strings = [v for v in column if type(v) is str]
        total += 6 * sum(map(len, strings)) + 4 * len(strings) + 26 * (len(column) - len(strings))
    return total


_AS_IS = {str, bool, type(None)}


def to_cells(values: tuple) -> tuple | list:
    """One column of values as JSON cells: `to_cell` of each, decided once for the column when
    its types allow (a column of text, or of safe integers, or of finite floats, is already JSON)."""
    types = set(map(type, values))
    if types <= _AS_IS:
        return values
    if types <= {int, float, type(None)}:
        present = [v for v in values if v is not None] if type(None) in types else values
        finite = float not in types or all(map(math.isfinite, present))
        if finite and (int not in types or (min(present) >= -MAX_SAFE_INT and max(present) <= MAX_SAFE_INT)):
            return values
    return list(map(to_cell, values))
