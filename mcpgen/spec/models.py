"""The spec models: what one YAML file may say, checked by pydantic.

>>> spec = Spec.model_validate({"description": "d", "sql": "SELECT 1 AS x",
...                             "sources": ["https://example.org/"], "content": "{{ row_count }}"})
>>> spec.connection, spec.table, spec.charts
('default', True, [])
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    StrictBool,
    StrictInt,
    Tag,
    WithJsonSchema,
    field_validator,
    model_validator,
)

from .patterns import compile_pattern

NAME_RE = r"^[A-Za-z][A-Za-z0-9_.-]{0,63}$"
PARAM_NAME_RE = r"^[A-Za-z][A-Za-z0-9_]{0,63}$"
TEMPLATE_VARIABLES = ("rows", "columns", "row_count", "truncated", "max_rows")
CURSOR = "cursor"  # the argument a paged tool takes (so no parameter may have its name)
ParamType = Literal["string", "integer", "number", "boolean", "date", "datetime", "array"]
ItemType = Literal["string", "integer", "number", "boolean", "date", "datetime"]
ChartType = Literal["bar", "line", "area", "pie", "doughnut", "scatter", "horizontal_bar", "stacked_bar"]
Number = StrictInt | float


def shape(value: Any) -> str:
    """The tag of a union whose branches differ by YAML shape; it stands in error locations.

    It also chooses the branch when a spec is serialized (`model_dump_json`), where a map is a
    model already and a list may hold models: both keep their YAML shape's tag.

    >>> shape({"type": "bar"}), shape(["a"]), shape("a"), shape(TableSpec(columns=["a"]))
    ('<map>', '<list>', '<scalar>', '<map>')
    """
    if isinstance(value, (dict, BaseModel)):
        return "<map>"
    return "<list>" if isinstance(value, (list, tuple)) else "<scalar>"


def is_union_tag(part: Any) -> bool:
    """Whether a part of a pydantic error location is a union tag (`<map>`, `<url>`), not a key."""
    return isinstance(part, str) and part.startswith("<") and part.endswith(">")


def _by_shape(expected: str) -> Discriminator:
    return Discriminator(shape, custom_error_type="shape", custom_error_message=f"Input should be {expected}")


# A column name or a list of them; a text or a list of texts.
OneOrMoreStrings = Annotated[
    Annotated[str, Tag("<scalar>")] | Annotated[list[str], Tag("<list>")],
    _by_shape("a string or a list of strings"),
]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, defer_build=True)


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


def known_dialect(name: str) -> str:
    """`name` if sqlglot knows the SQL dialect, else ValueError naming some it knows.

    >>> known_dialect("postgres")
    'postgres'
    """
    from sqlglot import Dialect

    try:
        Dialect.get_or_raise(name)
    except ValueError:
        raise ValueError(f"unknown SQL dialect {name!r}; write e.g. duckdb, postgres, mysql, sqlite or spark") from None
    return name


SQLDialect = Annotated[str, AfterValidator(known_dialect)]
"""A sqlglot dialect name: duckdb, postgres, mysql, sqlite, spark, snowflake, bigquery, trino, ..."""

DURATION_RE = r"^\s*\d+(\.\d+)?\s*(ms|s|m|h)?\s*$"
Duration = Annotated[
    float,
    BeforeValidator(parse_duration),
    WithJsonSchema({"anyOf": [{"type": "number", "exclusiveMinimum": 0}, {"type": "string", "pattern": DURATION_RE}]}),
]
"""Seconds, written as a number or as `5s`, `500ms`, `2m`, `1h` (see `parse_duration`)."""


def parse_cache(value: Any) -> float | bool:
    """`cache:` is a time to live (`60s`, `5m`), or false to keep no answers.

    >>> parse_cache("5m"), parse_cache(False)
    (300.0, False)
    """
    if value is False:
        return value
    if value is True:
        raise ValueError("cache takes a duration such as 60s (or false), not true")
    return parse_duration(value)


CacheTTL = Annotated[
    float | bool,
    BeforeValidator(parse_cache),
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "number", "exclusiveMinimum": 0},
                {"type": "string", "pattern": DURATION_RE},
                {"const": False},
            ]
        }
    ),
]
"""How long answers are kept (a Duration), or false for no cache (see `parse_cache`)."""


class Constraints(Strict):
    """Constraints shared by a parameter and by the items of an array parameter."""

    enum: list[Any] | None = Field(default=None, min_length=1, description="The only values allowed.")
    minimum: Number | str | None = Field(
        default=None, description="Smallest value allowed (a number, or an ISO 8601 string for dates)."
    )
    maximum: Number | str | None = Field(
        default=None, description="Largest value allowed (a number, or an ISO 8601 string for dates)."
    )
    min_length: StrictInt | None = Field(default=None, ge=0, description="Shortest string allowed.")
    max_length: StrictInt | None = Field(default=None, ge=0, description="Longest string allowed.")
    pattern: str | None = Field(default=None, description="Regular expression a string must match.")

    @field_validator("pattern")
    @classmethod
    def _pattern_compiles(cls, value):
        if value is not None:
            compile_pattern(value)  # PatternError is a ValueError: pydantic reports it with the line
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
        lo, hi = self.minimum, self.maximum  # both numbers or both ISO strings, as checked above
        if isinstance(lo, str) and isinstance(hi, str):
            inverted = lo > hi
        else:
            inverted = isinstance(lo, int | float) and isinstance(hi, int | float) and lo > hi
        if inverted:
            raise ValueError("minimum is greater than maximum")
        if self.min_length is not None and self.max_length is not None and self.min_length > self.max_length:
            raise ValueError("min_length is greater than max_length")


class Items(Constraints):
    type: ItemType = Field(description="Type of each item: string, integer, number, boolean, date or datetime.")

    @model_validator(mode="after")
    def _fits_type(self):
        self._check_constraints(self.type)
        return self


class Parameter(Constraints):
    type: ParamType = Field(description="string, integer, number, boolean, date, datetime or array.")
    description: str = Field(min_length=1, description="What the model reads about this parameter.")
    default: Any = Field(default=None, description="A default makes the parameter optional.")
    required: StrictBool | None = Field(
        default=None, description="Default: true unless a default is given; false with no default binds NULL."
    )
    items: Items | None = Field(
        default=None, description="For arrays: {type: ...} of the items, with the same constraints as a parameter."
    )
    min_items: StrictInt | None = Field(default=None, ge=0, description="For arrays: fewest items allowed.")
    max_items: StrictInt | None = Field(default=None, ge=1, description="For arrays: most items allowed.")
    examples: list[Any] | None = Field(
        default=None, description="Example values, shown to the model in the input schema."
    )
    from_claim: str | None = Field(
        default=None,
        min_length=1,
        description="Take the value from this claim of the caller's verified token (not an argument).",
    )
    sensitive: StrictBool = Field(default=False, description="Write only a hash of this argument to the audit log.")
    complete: str | None = Field(
        default=None,
        min_length=1,
        description="A read-only query whose first column completes this parameter (completion/complete): "
        ":prefix is the text typed so far, other parameters by name.",
    )

    @model_validator(mode="after")
    def _fits_type(self):
        self._check_constraints(self.type)
        if self.complete is not None and (self.from_claim is not None or self.type == "array"):
            raise ValueError("complete: suggests values a person types, so not for from_claim or array parameters")
        if self.from_claim is not None and ("default" in self.model_fields_set or self.required is not None):
            raise ValueError("a from_claim parameter takes no default and no required: the claim must be there")
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
    columns: list[str] | None = Field(
        default=None, min_length=1, description="The columns to show, in this order; default: every column."
    )
    headers: dict[str, str] = Field(default={}, description="Labels for columns, by column name.")


class AppSettings(Strict):
    """How the MCP App draws a tool's answer (`app:` in a spec or in mcpgen.yaml)."""

    chart_height: StrictInt = Field(default=320, ge=120, le=2000, description="Height of each chart, in pixels.")
    theme: Literal["auto", "light", "dark"] = Field(
        default="auto", description="auto follows the host's theme; light or dark forces one."
    )


# true, false, or the app's settings.
AppChoice = Annotated[
    Annotated[StrictBool, Tag("<scalar>")] | Annotated[AppSettings, Tag("<map>")],
    _by_shape("true, false or a mapping of app settings"),
]


DownloadFormat = Literal["csv", "parquet"]


class DownloadSettings(Strict):
    """The whole result of a call offered as files (`download:` in a spec, or `defaults.download` in mcpgen.yaml):
    each answer links to them (resource_link), and resources/read of a link runs the query again."""

    formats: list[DownloadFormat] = Field(
        default=["csv", "parquet"], min_length=1, description="The files offered: csv (text/csv), parquet, or both."
    )
    ttl: Duration = Field(default=3600.0, description="How long a link stays valid, e.g. 1h.")
    max_rows: StrictInt = Field(
        default=100_000, ge=1, description="A download of more rows than this is refused (narrow the arguments)."
    )
    max_bytes: StrictInt = Field(
        default=20_000_000, ge=1000, description="A download whose file would pass this many bytes is refused."
    )

    @field_validator("formats")
    @classmethod
    def _each_once(cls, value):
        if len(set(value)) < len(value):
            raise ValueError("name each format once")
        return value

    def under(self, base: DownloadSettings) -> DownloadSettings:
        """These settings, with those not written here taken from `base` (the project's)."""
        return base.model_copy(update={name: getattr(self, name) for name in self.model_fields_set})


# true (the project's settings, else the defaults), false, or settings of its own.
DownloadChoice = Annotated[
    Annotated[StrictBool, Tag("<scalar>")] | Annotated[DownloadSettings, Tag("<map>")],
    _by_shape("true, false or a mapping with formats, ttl, max_rows and max_bytes"),
]


def download_settings(spec: DownloadChoice | None, project: DownloadChoice | None) -> DownloadSettings | None:
    """What a tool offers for download: its spec's `download:`, else mcpgen.yaml's; None when off.

    >>> download_settings(None, None) is None, download_settings(False, True)
    (True, None)
    >>> download_settings(DownloadSettings(formats=["csv"]), DownloadSettings(ttl=60)).model_dump()
    {'formats': ['csv'], 'ttl': 60.0, 'max_rows': 100000, 'max_bytes': 20000000}
    """
    base = (
        project if isinstance(project, DownloadSettings) else DownloadSettings.model_construct()
    )  # no validator built
    chosen = project if spec is None else spec
    if not chosen:
        return None
    return chosen.under(base) if isinstance(chosen, DownloadSettings) else base


class Chart(Strict):
    type: ChartType = Field(description="bar, line, area, pie, doughnut, scatter, horizontal_bar or stacked_bar.")
    x: str | None = Field(default=None, description="Column whose values label the x axis (or the slices).")
    y: OneOrMoreStrings | None = Field(
        default=None, description="Column, or list of columns (one dataset each), of the values."
    )
    series: str | None = Field(default=None, description="Column whose distinct values become datasets (long data).")
    title: str | None = Field(default=None, description="Title shown above the chart.")
    label: str | dict[str, str] | None = Field(
        default=None, description="Dataset label, or labels by y column; default: the table header, else the column."
    )
    x_title: str | None = Field(default=None, description="Title of the axis of the x column (the labels).")
    y_title: str | None = Field(default=None, description="Title of the axis of the y values.")
    options: dict[str, Any] = Field(default={}, description="Passed through into the Chart.js options.")

    @model_validator(mode="after")
    def _makes_sense(self):
        if self.x is None or self.y is None:
            raise ValueError(f"a {self.type} chart needs x (labels) and y (values)")
        if self.type in ("pie", "doughnut") and (self.x_title or self.y_title):
            raise ValueError(f"a {self.type} chart has no axes, so x_title and y_title do not apply")
        if isinstance(self.y, list) and not self.y:
            raise ValueError("y must name at least one column")
        if self.series and isinstance(self.y, list) and len(self.y) > 1:
            raise ValueError("series takes a single y column")
        if self.type in ("pie", "doughnut") and (self.series or (isinstance(self.y, list) and len(self.y) > 1)):
            raise ValueError(f"a {self.type} chart shows one y column and no series")
        if isinstance(self.label, str) and len(self.y_columns) > 1:
            raise ValueError("with several y columns, label maps each column to its label: {column: label}")
        if isinstance(self.label, dict) and (unknown := sorted(set(self.label) - set(self.y_columns))):
            raise ValueError(f"label names {', '.join(unknown)}, which is not a y column")
        if self.label is not None and self.series:
            raise ValueError("a chart with series takes its dataset labels from the series values, not label")
        return self

    def dataset_label(self, column: str, headers: dict[str, str]) -> str:
        """The legend text of the dataset for y `column`: `label:`, else the table header, else the name."""
        if isinstance(self.label, str):
            return self.label
        if isinstance(self.label, dict) and column in self.label:
            return self.label[column]
        return headers.get(column, column)

    @property
    def y_columns(self) -> list[str]:
        return [self.y] if isinstance(self.y, str) else list(self.y or [])

    @property
    def columns(self) -> list[str]:
        return [c for c in [self.x, *self.y_columns, self.series] if c]


OneOrMoreCharts = Annotated[
    Annotated[Chart, Tag("<map>")] | Annotated[list[Chart], Tag("<list>")],
    _by_shape("a chart (a mapping with type, x and y) or a list of charts"),
]
TableChoice = Annotated[
    Annotated[StrictBool, Tag("<scalar>")] | Annotated[TableSpec, Tag("<map>")],
    _by_shape("true, false or a mapping with columns and headers"),
]


class EmptyAnswer(Strict):
    """What a tool answers when its query finds no rows, with the sources that answer cites."""

    content: str = Field(description="Template of the prose when the query returns no rows.")
    sources: list[str] | None = Field(
        default=None,
        min_length=1,
        description="Sources an empty answer cites, e.g. the dataset's page; default: the spec's sources "
        "that are not templates (a page made from the arguments may not exist).",
    )


EmptyChoice = Annotated[
    Annotated[str, Tag("<scalar>")] | Annotated[EmptyAnswer, Tag("<map>")],
    _by_shape("a template, or a mapping with content and sources"),
]


class Expect(Strict):
    row_count: StrictInt | None = Field(default=None, ge=0, description="Exactly this many rows.")
    min_rows: StrictInt | None = Field(default=None, ge=0, description="At least this many rows.")
    rows: list[dict[str, Any]] | None = Field(default=None, description="The exact rows, in order.")
    first_row: dict[str, Any] | None = Field(default=None, description="Columns and values the first row must have.")
    content_contains: list[str] | None = Field(default=None, description="Strings the prose must contain.")
    error_contains: OneOrMoreStrings | None = Field(
        default=None, description="The call must fail with a message containing this (or each of these)."
    )


class SpecTest(Strict):
    name: str | None = Field(default=None, description="A name shown by `mcpgen test` and selectable with -k.")
    args: dict[str, Any] = Field(default={}, description="The tool's arguments.")
    expect: Expect = Field(description="What the answer must be.")


class ScopeRule(Strict):
    """Which OAuth scopes a caller needs to see and call a tool: all of `all`, and one of `any`."""

    all: list[str] = Field(default=[], description="Scopes the caller must all have.")
    any: list[str] = Field(default=[], description="Scopes of which the caller needs at least one.")

    def allows(self, granted: set[str] | frozenset[str]) -> bool:
        """
        >>> ScopeRule(any=["a", "b"]).allows({"b"}), ScopeRule(all=["a", "b"]).allows({"b"})
        (True, False)
        """
        return all(s in granted for s in self.all) and (not self.any or any(s in granted for s in self.any))


# A plain list (all of them) or {any: [...], all: [...]}.
Scopes = Annotated[
    Annotated[list[str], Tag("<list>")] | Annotated[ScopeRule, Tag("<map>")],
    _by_shape("a list of scopes or {any: [...], all: [...]}"),
]


ICON_TYPES = {
    ".png": "image/png",
    ".svg": "image/svg+xml",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".webp": "image/webp",
}


class Icon(Strict):
    """An icon hosts show beside a tool or the server (the MCP `Icon`)."""

    src: str = Field(
        min_length=1,
        description="An https:// URL, a data:image/... URI, or an image file (.png, .svg, .jpg, .webp) relative to "
        "this file, sent inline as a data: URI.",
    )
    mime_type: str | None = Field(
        default=None, pattern=r"^image/[A-Za-z0-9.+-]+$", description="e.g. image/png; default: from the file name."
    )
    sizes: list[Annotated[str, Field(pattern=r"^(\d+x\d+|any)$")]] = Field(
        default=[], description='The sizes it is drawn for, e.g. ["48x48"], or ["any"] for a scalable one.'
    )
    theme: Literal["light", "dark"] | None = Field(default=None, description="The background it is made for.")

    @field_validator("sizes", mode="before")
    @classmethod
    def _sizes(cls, value: Any) -> Any:
        for size in value if isinstance(value, list) else []:
            if isinstance(size, str) and not re.fullmatch(r"\d+x\d+|any", size):
                raise ValueError(f"icon size {size!r} must be WIDTHxHEIGHT in pixels, e.g. 48x48, or any")
        return value

    @field_validator("src")
    @classmethod
    def _src(cls, value: str) -> str:
        scheme = re.match(r"^([A-Za-z][A-Za-z0-9+.-]*):", value)
        if scheme is None:
            if value.startswith("/") or PurePosixPath(value).suffix.lower() not in ICON_TYPES:
                raise ValueError(f"icon file {value!r} must be a relative path to a {', '.join(ICON_TYPES)} file")
        elif scheme[1].lower() == "data":
            if not re.match(r"^data:image/[A-Za-z0-9.+-]+(;[^,]*)?,", value):
                raise ValueError("an icon data: URI must hold an image (data:image/png;base64,...)")
        elif scheme[1].lower() != "https":
            raise ValueError(f"icon src {value[:60]!r} must be an https:// URL, a data: URI or a relative file")
        return value


class Annotations(Strict):
    readOnlyHint: StrictBool = Field(default=True, description="MCP annotation: the tool changes nothing.")
    idempotentHint: StrictBool = Field(
        default=True, description="MCP annotation: calling twice has the same effect as once."
    )
    openWorldHint: StrictBool = Field(default=False, description="MCP annotation: the tool reaches outside entities.")
    destructiveHint: StrictBool | None = Field(default=None, description="MCP annotation: the tool may destroy data.")


class Confirm(Strict):
    message: str = Field(
        min_length=1, max_length=500, description="The question put to the person before the query runs."
    )
    when_rows_over: StrictInt | None = Field(
        default=None,
        ge=0,
        le=1_000_000_000,
        description="Ask only when the query's result would have more rows than this (counted first, up to "
        "this many plus one, on the tool's connection and under its timeout); default: ask every call.",
    )


class Spec(Strict):
    name: str | None = Field(default=None, pattern=NAME_RE, description="Tool name; default: the file's stem.")
    title: str | None = Field(default=None, description="Human title of the tool (MCP tool title).")
    description: str = Field(min_length=1, description="What the model reads to choose the tool.")
    connection: str = Field(default="default", description="A connection name from mcpgen.yaml; default: default.")
    dialect: SQLDialect | None = Field(
        default=None,
        description="The SQL dialect the query is written in; default: the project's (mcpgen.yaml), else duckdb. "
        "mcpgen translates it once at load when the connection speaks another.",
    )
    parameters: dict[str, Parameter] = Field(
        default={}, description="The tool's parameters, in order; they become its JSON Schema inputSchema."
    )
    sql: str | None = Field(
        default=None, description="Exactly one read-only query; :name binds parameter name as a value."
    )
    sql_file: str | None = Field(
        default=None, description="A file holding the query, relative to this YAML file (instead of sql)."
    )
    sources: list[str] = Field(
        min_length=1, description="URLs of the original data (Jinja2 may fill in parameters; values are URL-encoded)."
    )
    content: str = Field(
        description="Jinja2 template of the prose for the model: parameters, rows, columns, row_count, truncated, "
        "max_rows; filters thousands, round, percent, date, join_names."
    )
    empty: EmptyChoice | None = Field(
        default=None,
        description="Template used instead of content when the query returns no rows, or {content, sources} "
        "to also choose the sources that answer cites.",
    )
    force: str | None = Field(
        default=None, description="Template whose text is shown to the user verbatim (structuredContent.force)."
    )
    table: TableChoice = Field(
        default=True,
        description="true: every column; false: no table; or {columns, headers} to choose, order and label columns.",
    )
    chart: OneOrMoreCharts | None = Field(
        default=None, description="One chart or a list; each becomes a Chart.js 4 config."
    )
    max_rows: StrictInt | None = Field(
        default=None, ge=1, description="Cap on rows returned; default from mcpgen.yaml, else 1000."
    )
    timeout: Duration | None = Field(
        default=None, description="Query time limit, e.g. 5s or 500ms; default from mcpgen.yaml, else 30s."
    )
    cache: CacheTTL | None = Field(
        default=None,
        description="Keep answers this long, e.g. 60s (default from mcpgen.yaml, else off); false: no cache.",
    )
    page_size: StrictInt | None = Field(
        default=None,
        ge=1,
        description="Answer in pages of this many rows, in the query's ORDER BY; the tool takes an optional cursor.",
    )
    long_running: StrictBool = Field(
        default=False,
        description="Offer the tasks extension for this tool: a client that declares it gets a task at once, "
        "polls it and reads the result later (docs/long-work.md).",
    )
    confirm: Confirm | None = Field(
        default=None,
        description="Ask the person to confirm each call (or, with when_rows_over, each call whose result would "
        "exceed that many rows) before its query runs, where the client can ask (elicitation); other clients are "
        "answered as always (docs/asking.md).",
    )
    download: DownloadChoice | None = Field(
        default=None,
        description="Offer the whole result for these arguments as CSV and Parquet files linked from each answer: "
        "true, false or {formats, ttl, max_rows, max_bytes}; default from mcpgen.yaml, else off (docs/downloads.md).",
    )
    max_bytes: StrictInt | None = Field(
        default=None,
        ge=1000,
        description="Cap on the whole answer in bytes of UTF-8 JSON (default from mcpgen.yaml, else 1,000,000).",
    )
    tests: list[SpecTest] = Field(
        default=[], description="Examples that `mcpgen test` runs against the real connection."
    )
    annotations: Annotations = Field(
        default=Annotations.model_construct(),  # not Annotations(): that builds its validator at import
        description="MCP tool annotations.",
    )
    scopes: Scopes | None = Field(
        default=None,
        description="OAuth scopes a caller needs to see and call the tool: a list (all of them) or {any, all}.",
    )
    tags: list[str] = Field(default=[], description="Tags for `serve --tags` and mcpgen.yaml's toolsets.")
    app: AppChoice = Field(
        default=True,
        description="The MCP App: true (default), false, or {chart_height, theme}; default from mcpgen.yaml.",
    )
    icons: list[Icon] | None = Field(
        default=None, description="Icons hosts show beside the tool; default: mcpgen.yaml's icons."
    )

    @field_validator("parameters")
    @classmethod
    def _parameter_names(cls, value):
        for name in value:
            if not isinstance(name, str) or not re.match(PARAM_NAME_RE, name):
                raise ValueError(f"parameter name {name!r} must be a letter followed by letters, digits or _")
            if name in TEMPLATE_VARIABLES:
                raise ValueError(f"parameter name {name!r} is reserved for templates ({', '.join(TEMPLATE_VARIABLES)})")
        return value

    @model_validator(mode="after")
    def _one_sql(self):
        if (self.sql is None) == (self.sql_file is None):
            raise ValueError("give exactly one of sql and sql_file")
        return self

    @property
    def scope_rule(self) -> ScopeRule | None:
        return ScopeRule(all=self.scopes) if isinstance(self.scopes, list) else self.scopes

    @property
    def charts(self) -> list[Chart]:
        if self.chart is None:
            return []
        return self.chart if isinstance(self.chart, list) else [self.chart]
