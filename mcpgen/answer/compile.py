"""Compiling a checked spec into a Tool: validate arguments, run the query, render the answer.

Whole specs compiled and called are in tests/answer/test_compile.py.
"""

from __future__ import annotations

import functools
import hashlib
import json
import threading
from dataclasses import dataclass
from typing import Any

from .. import logs
from ..engines.protocol import Engine, Prepared, QueryResult
from ..errors import ArgumentError, MCPGenError, QueryError, RenderError
from ..identity import caller_identity
from ..load.columns import duplicate_columns, query_place
from ..load.specs import LoadedSpec
from ..spec.config import Defaults
from ..spec.models import CURSOR, EmptyAnswer, download_settings
from ..spec.params import Arguments, param_types
from ..templates.render import Template, cut_text
from ..text import utf8_size
from .charts import build_chart
from .completions import QueryCompleter
from .cursors import NEXT_CURSOR_META, Cursors, Position, binding
from .downloads import DownloadError, Downloads, Link, parse
from .numbers import FORMATS_META, formats_of
from .plain import ResourceLink, TextContent, ToolResult
from .results import TRUNCATED_META, build_table, json_size_bound
from .tool import Answer, RowsCheck, Tool, error_result

DEFAULT_EMPTY = Template("No rows matched.")
NOTE_ROOM = 400  # bytes kept free for the sentence that says the table was cut, and the answer's envelope
CURSOR_SCHEMA = {
    "type": ["string", "null"],
    "description": "Leave out for the first page; for the next, the cursor the previous page gave.",
}


class SpecTool:
    """What one spec does when called. `__call__(arguments)` returns an Answer: the ToolResult
    and the engine's QueryResult (rows, truncation, query time for the call log)."""

    def __init__(
        self,
        loaded: LoadedSpec,
        engine: Engine,
        defaults: Defaults,
        cursors: Cursors | None = None,
        query: Prepared | None = None,
    ):
        spec = loaded.spec
        self.name = loaded.name
        self.spec = spec
        self._loaded = loaded  # to say where in it a database's error points
        self.engine = engine
        self.arguments = Arguments(spec.parameters)
        types = param_types(spec.parameters)
        self._sql, self._types = loaded.sql, types
        # the statement kept when this spec's query was prepared and described (`load.checked`), else prepared here
        self.query = query or engine.prepare(loaded.sql, types)
        self._preparing = threading.Lock()
        self._count_sql = loaded.count_sql  # confirm.when_rows_over: prepared when first counted
        self._count: Prepared | None = None
        self.max_rows = spec.max_rows or defaults.max_rows
        self.timeout = spec.timeout or defaults.timeout
        self.max_bytes = spec.max_bytes or defaults.max_bytes
        cache = defaults.cache if spec.cache is None else spec.cache
        self.cache_ttl: float | None = float(cache) if cache else None  # seconds; None: no cache
        self.content = loaded.templates["content"]
        self.empty = loaded.templates.get("empty", DEFAULT_EMPTY)
        self.force = loaded.templates.get("force")
        self.sources = [loaded.templates[f"sources[{i}]"] for i in range(len(spec.sources))]
        self.input_schema: dict[str, Any] = self.arguments.schema
        self.page_size = spec.page_size
        self.cursors = cursors or Cursors()
        settings = download_settings(spec.download, defaults.download)
        self.downloads = Downloads(self.name, settings, self.cursors) if settings else None
        if self.downloads is not None and self.cache_ttl is not None:  # a kept answer never outlives its links
            self.cache_ttl = min(self.cache_ttl, self.downloads.settings.ttl)
        if self.page_size:
            from .pages import Pager  # here: the SQL reading only paged specs need

            self.pager = Pager(loaded, engine, types, self.page_size)  # planned at the first call
            self.input_schema = {
                **self.input_schema,
                "properties": {**self.input_schema["properties"], CURSOR: CURSOR_SCHEMA},
            }
            if self.cache_ttl is not None:  # a kept page never outlives the cursor it carries
                self.cache_ttl = min(self.cache_ttl, self.cursors.ttl)
        # An empty answer cites what `empty` names, else the sources that are no template: a page
        # made from the arguments (a country code the query did not find) may not exist.
        chosen = spec.empty.sources if isinstance(spec.empty, EmptyAnswer) else None
        if chosen:
            self.empty_sources = [loaded.templates[f"empty.sources[{i}]"] for i in range(len(chosen))]
        else:
            self.empty_sources = [t for t in self.sources if t.constant is not None] or self.sources

    @functools.cached_property
    def version(self) -> str:
        """What cursors and download links are bound to besides the caller and the arguments: this spec
        (made at the first call that needs it: a server of many specs starts without)."""
        return hashlib.sha256((self._sql + self.spec.model_dump_json()).encode()).hexdigest()

    @functools.cached_property
    def uses_rows(self) -> bool:
        """Row dicts cost as much as the table: they are built only for templates that read `rows`."""
        return any("rows" in t.names() for t in (self.content, self.empty, self.force) if t is not None)

    def __call__(self, arguments: dict[str, Any]) -> Answer:
        result = None
        try:
            arguments, cursor = self._split(arguments)
            values = self.arguments.validate(arguments)
            if not self.page_size and self.downloads is None:
                result = self.engine.run(self.query, values, self.max_rows, self.timeout)
                return Answer(self.answer(values, result), result, built=True)
            bound = binding(repr(values), caller_identity(), self.version)
            links = self.downloads.links(arguments, bound) if self.downloads is not None else []
            if not self.page_size:
                result = self.engine.run(self.query, values, self.max_rows, self.timeout)
                return Answer(self.answer(values, result, links=links), result, built=True)
            at = self.cursors.read(cursor, self.name, bound) if cursor else Position(0)
            result, following = self.pager.page(values, at, self.timeout, bound)
            after = self.cursors.issue(self.name, bound, following) if following else None
            return Answer(self.answer(values, result, Page(at.offset, after), links), result, built=True)
        except RenderError as exc:  # the spec's fault: its place in the spec first, and in the server's log
            logs.FAULTS.info("tool %s: %s", self.name, exc)
            return Answer(error_result(_sentence(str(exc), capital=exc.place is None)), result)
        except QueryError as exc:  # where the database points in the spec's SQL, when it says and it is plain
            place = (
                query_place(self._loaded, exc.near, self.content.origin[0])
                if exc.near and self.content.origin
                else None
            )
            if place is None:
                return Answer(error_result(_sentence(str(exc))), result)
            logs.FAULTS.info("tool %s: %s: %s", self.name, place, exc)
            return Answer(error_result(_sentence(f"{place}: {exc}", capital=False)), result)
        except MCPGenError as exc:
            return Answer(error_result(_sentence(str(exc))), result)

    def download(self, uri: str) -> Any:
        """resources/read of one of this tool's download links: the query again for this caller, with the
        download's caps; DownloadError in one sentence if the link may not be read or the file is too big."""
        assert self.downloads is not None
        link: Link = parse(uri)
        try:
            values = self.arguments.validate(link.arguments)
        except ArgumentError:  # arguments the link was never made for (altered), or a claim this caller lacks
            values = link.arguments
        self.downloads.check(link, binding(repr(values), caller_identity(), self.version))
        result = self.engine.run(self.query, values, self.downloads.settings.max_rows, self.timeout)
        if result.truncated:
            raise self.downloads.too_many_rows()
        twice = duplicate_columns(result.columns)
        if twice:
            raise DownloadError(twice)
        return self.downloads.contents(link, uri, result.columns, result.rows)

    def _split(self, arguments: Any) -> tuple[Any, str | None]:
        """The arguments without `cursor`, and the cursor (paged tools only)."""
        if not self.page_size or not isinstance(arguments, dict) or CURSOR not in arguments:
            return arguments, None
        arguments = dict(arguments)
        cursor = arguments.pop(CURSOR)
        if cursor is not None and not isinstance(cursor, str):
            raise ArgumentError(f"Invalid argument '{CURSOR}': expected a string, the cursor a previous page gave.")
        return arguments, cursor or None

    def rows_over(self, arguments: dict[str, Any], threshold: int) -> bool:
        """Whether the call's result would have more than `threshold` rows (`confirm.when_rows_over`):
        the query counted, at most threshold + 1 rows, with the call's arguments, under its timeout.
        Raises ArgumentError for bad arguments and QueryError when the count fails, as the call would."""
        from ..sql.counts import LIMIT as COUNT_LIMIT  # only for the specs that say so: serve's imports stay few

        arguments, _ = self._split(arguments)
        values = self.arguments.validate(arguments)
        if self._count is None:
            assert self._count_sql is not None
            with self._preparing:  # prepared once, however many first counts arrive together
                if self._count is None:
                    self._count = self.engine.prepare(self._count_sql, {**self._types, COUNT_LIMIT: "integer"})
        result = self.engine.run(self._count, {**values, COUNT_LIMIT: threshold + 1}, 1, self.timeout)
        return bool(result.rows) and int(result.rows[0][0]) > threshold

    def cache_key(self, arguments: dict[str, Any]) -> str:
        """The validated arguments as text: equal values, equal keys (`{}` and the defaults agree).

        A cursor is checked here, before the cache is asked: an expired or foreign cursor is refused
        even when its page is kept, and the key holds the position it continues from."""
        arguments, cursor = self._split(arguments)
        values = self.arguments.validate(arguments)
        at = None
        if cursor:
            at = self.cursors.read(cursor, self.name, binding(repr(values), caller_identity(), self.version))
        return repr((tuple(values.items()), at))

    def answer(
        self,
        values: dict[str, Any],
        result: QueryResult,
        page: Page | None = None,
        links: list[ResourceLink] | None = None,
    ) -> ToolResult:
        """Build prose and structured content from one query result (one page of it for paged tools); with
        rows, the answer carries `links` (the downloads of the whole result) after the prose."""
        columns = result.columns
        twice = duplicate_columns(columns)
        if twice:
            raise MCPGenError(twice)
        missing = [c for chart in self.spec.charts for c in chart.columns if c not in columns]
        if not isinstance(self.spec.table, bool) and self.spec.table.columns:
            missing += [c for c in self.spec.table.columns if c not in columns]
        if missing:
            raise MCPGenError(
                f"the query result has no column {', '.join(sorted(set(missing)))} (it has {', '.join(columns)})"
            )
        rows = result.rows
        context = {
            **values,
            "rows": [dict(zip(columns, row)) for row in rows] if self.uses_rows else (),
            "columns": columns,
            "row_count": len(rows),
            "truncated": result.truncated,
            "max_rows": self.max_rows,
        }
        prose = (self.content if rows else self.empty).render(context, cut=True)
        payload: dict[str, Any] = {
            "sources": [t.render(values) for t in (self.sources if rows else self.empty_sources)]
        }
        force = self.force.render(context) if self.force is not None else ""
        if force.strip():  # a force that renders to nothing (`{% if truncated %}...`) is no force
            payload["force"] = within(force, self.max_bytes // 2)[0]
        if page is not None:
            note = _page_note(page, len(rows))
        else:
            note = (
                f"\n\n(Only the first {self.max_rows:,} rows are shown; the query matched more.)"
                if result.truncated
                else ""
            )
        # The prose, with its note and the cursor the page carries twice (in the note and in _meta), fits
        # in what the sources and force leave; the table and charts get the rest.
        cursor = json_bytes(page.next) if page is not None and page.next is not None else 0
        links = links if rows and links else []
        if links:  # they take room in the answer too
            cursor += Downloads.size(links)
        cited = json_bytes(payload)  # the sources, and force
        noted = json_bytes(note) - 2 if note else 0  # its characters inside the prose's quotes
        prose, size = within(prose, self.max_bytes - NOTE_ROOM - cited - noted - 2 - cursor)
        kept, formats = self._fit(size + noted + cited + cursor, payload, columns, rows)
        if kept < len(rows):
            prose += (
                f"\n\n(The table holds the first {kept:,} of {len(rows):,} rows: all of them would pass the "
                f"answer's limit of {self.max_bytes:,} bytes.)"
            )
        prose += note
        meta: dict[str, Any] = {}
        if page is not None:
            if page.next is not None:
                meta[NEXT_CURSOR_META] = page.next
        elif result.truncated:  # for the app's note; hosts keep _meta away from the model
            meta[TRUNCATED_META] = {"max_rows": self.max_rows}
        if formats:
            meta[FORMATS_META] = formats
        return ToolResult([TextContent(prose), *links], payload, meta=meta or None)

    def _head(self, columns: list[str], rows: list[tuple], headers: dict, table: list | None, kept: int):
        """The table and charts of the first `kept` rows."""
        head = table[: kept + 1] if table is not None else None
        return head, [build_chart(chart, columns, rows[:kept], headers) for chart in self.spec.charts]

    def _fit(
        self, fixed: int, payload: dict[str, Any], columns: list[str], rows: list[tuple]
    ) -> tuple[int, list[Any] | None]:
        """Add the table and charts to `payload`, keeping as many rows as fit in `max_bytes` beside the `fixed`
        bytes the rest of the answer takes; return that many, and the number formats of the table kept."""
        if not rows:
            return 0, None
        made = build_table(columns, rows, self.spec.table)
        table = made.rows() if made is not None else None
        headers = {} if isinstance(self.spec.table, bool) else self.spec.table.headers
        charts = [build_chart(chart, columns, rows, headers) for chart in self.spec.charts]
        size = fixed + json_size_bound(made) + (json_bytes(charts) if charts else 0)
        if size > self.max_bytes:  # the bound is loose: measure exactly before cutting anything
            size = fixed + json_bytes([table, charts])
        kept = len(rows)
        if size > self.max_bytes:  # the rare path: the longest head of rows that fits
            used = fixed + NOTE_ROOM + (json_bytes(table[0]) if table else 0)
            copies = (table is not None) + len(charts)  # each row appears in the table and in every chart
            kept = 0
            for row in table[1:] if table is not None else rows:
                used += (json_bytes(row) + 1) * copies
                if used > self.max_bytes:
                    break
                kept += 1
            table, charts = self._head(columns, rows, headers, table, kept)
            # The estimate is linear in rows; a chart with `series` pivots to labels x series, and JSON
            # escapes may grow the text: measure the real bytes, and keep fewer rows until they fit.
            while kept and fixed + NOTE_ROOM + json_bytes([table, charts]) > self.max_bytes:
                kept = kept * 3 // 4
                table, charts = self._head(columns, rows, headers, table, kept)
        if table is not None:
            payload["table"] = table
        if charts:
            payload["charts"] = charts
        if made is None or not kept:
            return kept, None
        return kept, formats_of(made.header, made.columns if kept == len(rows) else [c[:kept] for c in made.columns])


@dataclass(frozen=True)
class Page:
    """Where a page starts, and the cursor of the next one (None on the last page)."""

    offset: int
    next: str | None


def json_bytes(value: Any) -> int:
    """The bytes `value` takes as JSON text in UTF-8, as an answer carries it."""
    return utf8_size(_JSON.encode(value))


# What json.dumps(value, ensure_ascii=False, default=str) uses, built once rather than at every call
_JSON = json.JSONEncoder(ensure_ascii=False, default=str)


def within(text: str, limit: int) -> tuple[str, int]:
    """`text`, cut where a reader would cut it (`cut_text`) if it takes more than `limit` bytes as JSON, and
    the bytes it takes as JSON. JSON escapes each character alone, so the text's size with another after
    it is the sum of the two less the quotes.

    >>> within("caf\u00e9", 100), within("a" * 400, 200)[1] <= 200
    (('café', 7), True)
    """
    size = json_bytes(text)
    if size <= limit:
        return text, size
    room = max(0, limit - 100)  # for the sentence that says so
    low, high = 0, len(text)  # the most characters whose JSON fits in `room`
    while low < high:
        middle = (low + high + 1) // 2
        low, high = (middle, high) if json_bytes(text[:middle]) <= room else (low, middle - 1)
    text = cut_text(text, low, f"this answer's {limit:,} bytes")
    return text, json_bytes(text)


def _page_note(page: Page, count: int) -> str:
    if page.next is None:
        return f"\n\n(Rows {page.offset + 1:,} to {page.offset + count:,}: the last page.)" if page.offset else ""
    return (
        f"\n\n(Rows {page.offset + 1:,} to {page.offset + count:,}; more remain. For the next page, call again "
        f'with the same arguments and cursor="{page.next}".)'
    )


def _sentence(message: str, capital: bool = True) -> str:
    """`message` as a sentence: a capital first (unless told not to: a file's name starts it), a stop last."""
    if capital:
        message = message[0].upper() + message[1:] if message else "The tool failed"
    return message if message.endswith((".", "?", "!")) else message + "."


def compile_spec(
    loaded: LoadedSpec,
    engine: Engine,
    defaults: Defaults,
    cursors: Cursors | None = None,
    query: Prepared | None = None,
) -> Tool:
    """A registered-ready Tool for one spec on its engine; `defaults` are mcpgen.yaml's, `query` the statement
    kept for its SQL (`load.checked`; None: prepared here)."""
    spec = loaded.spec
    run = SpecTool(loaded, engine, defaults, cursors, query)
    confirm_rows = None
    if spec.confirm is not None and spec.confirm.when_rows_over is not None and loaded.count_sql is not None:
        confirm_rows = RowsCheck(spec.confirm.message, spec.confirm.when_rows_over, run.rows_over)
    a = spec.annotations
    annotations = {  # the protocol's ToolAnnotations, in their wire form
        "title": spec.title,
        "readOnlyHint": a.readOnlyHint,
        "idempotentHint": a.idempotentHint,
        "openWorldHint": a.openWorldHint,
        "destructiveHint": a.destructiveHint,
    }
    return Tool(
        name=loaded.name,
        description=spec.description.strip(),
        input_schema=run.input_schema,
        handler=run,
        title=spec.title,
        annotations=annotations,
        source=str(loaded.path),
        cache_ttl=run.cache_ttl,
        cache_key=run.cache_key,
        scopes=spec.scope_rule,
        tags=frozenset(spec.tags),
        sensitive=frozenset(name for name, p in spec.parameters.items() if p.sensitive),
        parameters=dict(spec.parameters),
        completers={
            name: QueryCompleter(engine, sql, spec.parameters, run.timeout, run.max_rows)
            for name, sql in loaded.completions.items()
        },
        admission=getattr(engine, "admission", None),
        long_running=spec.long_running,
        confirm=spec.confirm.message if spec.confirm and spec.confirm.when_rows_over is None else None,
        confirm_rows=confirm_rows,
        download=run.download if run.downloads is not None else None,
    )
