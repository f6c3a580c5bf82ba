"""The spec models: what one YAML file may say, checked by pydantic.

>>> spec = Spec.model_validate({"description": "d", "sql": "SELECT 1 AS x",
...                             "sources": ["https://example.org/"], "content": "{{ row_count }}"})
>>> spec.connection, spec.table, spec.charts
('default', True, [])
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, field_validator, model_validator

NAME_RE = r"^[A-Za-z][A-Za-z0-9_.-]{0,63}$"
PARAM_NAME_RE = r"^[A-Za-z][A-Za-z0-9_]{0,63}$"
TEMPLATE_VARIABLES = ("rows", "columns", "row_count", "truncated", "max_rows")
ParamType = Literal["string", "integer", "number", "boolean", "date", "datetime", "array"]
ItemType = Literal["string", "integer", "number", "boolean", "date", "datetime"]
ChartType = Literal["bar", "line", "area", "pie", "doughnut", "scatter", "horizontal_bar", "stacked_bar"]
Number = StrictInt | float


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


def parse_duration(value: Any) -> float:
    """Seconds from `5s`, `500ms`, `2m`, `1h` or a plain number of seconds.

    >>> parse_duration("500ms"), parse_duration("2m"), parse_duration(3)
    (0.5, 120.0, 3.0)
    """
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = float(value)
    else:
        match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*", str(value))
        if not match:
            raise ValueError(f"{value!r} is not a duration; write e.g. 5s, 500ms or 2m")
        seconds = float(match[1]) * {"ms": 0.001, "s": 1, "m": 60, "h": 3600}[match[2] or "s"]
    if seconds <= 0:
        raise ValueError("a duration must be greater than zero")
    return seconds


def parse_cache(value: Any) -> float | bool | None:
    """`cache:` is a time to live (`60s`, `5m`), or false to keep no answers; None: the default.

    >>> parse_cache("5m"), parse_cache(False), parse_cache(None)
    (300.0, False, None)
    """
    if value is None or value is False:
        return value
    if value is True:
        raise ValueError("cache takes a duration such as 60s (or false), not true")
    return parse_duration(value)


class Constraints(Strict):
    """Constraints shared by a parameter and by the items of an array parameter."""

    enum: list[Any] | None = Field(None, min_length=1)
    minimum: Number | str | None = None
    maximum: Number | str | None = None
    min_length: StrictInt | None = Field(None, ge=0)
    max_length: StrictInt | None = Field(None, ge=0)
    pattern: str | None = None

    @field_validator("pattern")
    @classmethod
    def _pattern_compiles(cls, value):
        if value is not None:
            try:
                re.compile(value)
            except re.error as exc:
                raise ValueError(f"pattern is not a valid regular expression: {exc}") from None
        return value

    def _check_constraints(self, type_: str) -> None:
        numeric = type_ in ("integer", "number", "date", "datetime")
        if (self.minimum is not None or self.maximum is not None) and not numeric:
            raise ValueError(f"minimum/maximum apply to integer, number, date and datetime, not {type_}")
        if (self.min_length is not None or self.max_length is not None or self.pattern) and type_ != "string":
            raise ValueError(f"min_length, max_length and pattern apply to strings, not {type_}")
        for bound in ("minimum", "maximum"):
            value = getattr(self, bound)
            if value is None:
                continue
            if type_ in ("integer", "number") and isinstance(value, str):
                raise ValueError(f"{bound} of a {type_} must be a number")
            if type_ in ("date", "datetime") and not isinstance(value, str):
                raise ValueError(f"{bound} of a {type_} must be an ISO 8601 string")
        if self.minimum is not None and self.maximum is not None and self.minimum > self.maximum:
            raise ValueError("minimum is greater than maximum")
        if self.min_length is not None and self.max_length is not None and self.min_length > self.max_length:
            raise ValueError("min_length is greater than max_length")


class Items(Constraints):
    type: ItemType

    @model_validator(mode="after")
    def _fits_type(self):
        self._check_constraints(self.type)
        return self


class Parameter(Constraints):
    type: ParamType
    description: str = Field(min_length=1)
    default: Any = None
    required: StrictBool | None = None
    items: Items | None = None
    min_items: StrictInt | None = Field(None, ge=0)
    max_items: StrictInt | None = Field(None, ge=1)
    examples: list[Any] | None = None

    @model_validator(mode="after")
    def _fits_type(self):
        self._check_constraints(self.type)
        if self.type == "array" and self.items is None:
            raise ValueError("an array parameter needs items: {type: ...}")
        if self.type != "array" and (self.items or self.min_items is not None or self.max_items is not None):
            raise ValueError(f"items, min_items and max_items apply to arrays, not {self.type}")
        if self.required and "default" in self.model_fields_set:
            raise ValueError("a parameter with a default cannot be required: true")
        return self

    @property
    def is_required(self) -> bool:
        return self.required if self.required is not None else "default" not in self.model_fields_set


class TableSpec(Strict):
    columns: list[str] | None = Field(None, min_length=1)
    headers: dict[str, str] = {}


class Chart(Strict):
    type: ChartType
    x: str | None = None
    y: str | list[str] | None = None
    series: str | None = None
    title: str | None = None
    options: dict[str, Any] = {}

    @model_validator(mode="after")
    def _makes_sense(self):
        if self.x is None or self.y is None:
            raise ValueError(f"a {self.type} chart needs x (labels) and y (values)")
        if isinstance(self.y, list) and not self.y:
            raise ValueError("y must name at least one column")
        if self.series and isinstance(self.y, list) and len(self.y) > 1:
            raise ValueError("series takes a single y column")
        if self.type in ("pie", "doughnut") and (self.series or (isinstance(self.y, list) and len(self.y) > 1)):
            raise ValueError(f"a {self.type} chart shows one y column and no series")
        return self

    @property
    def y_columns(self) -> list[str]:
        return [self.y] if isinstance(self.y, str) else list(self.y or [])

    @property
    def columns(self) -> list[str]:
        return [c for c in [self.x, *self.y_columns, self.series] if c]


class Expect(Strict):
    row_count: StrictInt | None = Field(None, ge=0)
    min_rows: StrictInt | None = Field(None, ge=0)
    rows: list[dict[str, Any]] | None = None
    first_row: dict[str, Any] | None = None
    content_contains: list[str] | None = None
    error_contains: str | list[str] | None = None


class SpecTest(Strict):
    name: str | None = None
    args: dict[str, Any] = {}
    expect: Expect


class Annotations(Strict):
    readOnlyHint: StrictBool = True
    idempotentHint: StrictBool = True
    openWorldHint: StrictBool = False
    destructiveHint: StrictBool | None = None


class Spec(Strict):
    name: str | None = Field(None, pattern=NAME_RE)
    title: str | None = None
    description: str = Field(min_length=1)
    connection: str = "default"
    parameters: dict[str, Parameter] = {}
    sql: str | None = None
    sql_file: str | None = None
    sources: list[str] = Field(min_length=1)
    content: str
    empty: str | None = None
    force: str | None = None
    table: StrictBool | TableSpec = True
    chart: Chart | list[Chart] | None = None
    max_rows: StrictInt | None = Field(None, ge=1)
    timeout: float | str | None = None
    cache: float | str | StrictBool | None = None
    page_size: StrictInt | None = Field(None, ge=1)
    max_bytes: StrictInt | None = Field(None, ge=1000)
    tests: list[SpecTest] = []
    annotations: Annotations = Annotations()

    @field_validator("parameters")
    @classmethod
    def _parameter_names(cls, value):
        for name in value:
            if not isinstance(name, str) or not re.match(PARAM_NAME_RE, name):
                raise ValueError(f"parameter name {name!r} must be a letter followed by letters, digits or _")
            if name in TEMPLATE_VARIABLES:
                raise ValueError(f"parameter name {name!r} is reserved for templates ({', '.join(TEMPLATE_VARIABLES)})")
        return value

    @field_validator("timeout", mode="before")
    @classmethod
    def _duration(cls, value):
        return None if value is None else parse_duration(value)

    @field_validator("cache", mode="before")
    @classmethod
    def _cache(cls, value):
        return parse_cache(value)

    @model_validator(mode="after")
    def _one_sql(self):
        if (self.sql is None) == (self.sql_file is None):
            raise ValueError("give exactly one of sql and sql_file")
        return self

    @property
    def charts(self) -> list[Chart]:
        if self.chart is None:
            return []
        return self.chart if isinstance(self.chart, list) else [self.chart]
