"""Logging on stderr: one structured line per tool call, and secrets redacted everywhere.

    logs.setup("json")                 # or "text"; only ever writes to stderr
    with logs.call_stats() as stats:   # Registry.call does this around every call
        ...                            # it copies rows and truncation from the QueryResult;
    logs.log_call("top_cities", stats) # error_result() notes the error; a writer thread writes the line

A text line reads `mcpgen: call tool=top_cities ms=3.1 rows=3 truncated=false error=- cache=-`;
a JSON line `{"ts": ..., "level": "info", "event": "call", "tool": "top_cities",
"duration_ms": 3.1, "query_ms": 2.2, "rows": 3, "truncated": false, "error": null, "cache": null}`
(`query_ms`: the time in the engine, for query tools; `cache`: "hit" or "miss" for a tool
whose spec sets `cache:`). Lines are queued and written by a thread, off the request path, stderr
getting each batch in one write (`flush_calls()` waits for them).

No line is longer than MAX_LOG_LINE bytes (`json_line`, `CappedFormatter`): a huge argument, tool name
or message is cut, keeping its start and its end.

Per-call lines are off until `setup()` switches them on, so library users and
`mcpgen call` are not flooded. stdout is never touched: under stdio it carries the protocol.
"""

from __future__ import annotations

import atexit
import collections
import contextvars
import json
import logging
import sys
import threading
import time
from dataclasses import dataclass, field

from .limits import MAX_LOG_LINE
from .redaction import redact
from .text import cut_bytes, utf8_size

CALLS = logging.getLogger("mcpgen.calls")
CALLS.setLevel(logging.WARNING)  # switched on by setup()
# A call that failed on its spec's fault (a template's), with the place to fix: on and off with the call lines.
FAULTS = logging.getLogger("mcpgen.calls.faults")


@dataclass
class CallStats:
    """What one call did: Registry.call fills it from the engine's QueryResult; error_result notes the error."""

    started: float = field(default_factory=time.perf_counter)
    rows: int | None = None
    truncated: bool | None = None
    query_seconds: float | None = None  # time spent in the engine
    error: str | None = None  # exception class name, for failed calls
    cache: str | None = None  # "hit" or "miss" for tools with a result cache


_current: contextvars.ContextVar[CallStats | None] = contextvars.ContextVar("mcpgen_call_stats", default=None)


class call_stats:
    """Collect stats for one call. Worker threads see the same object (anyio copies the context). (A class
    rather than a generator: it runs around every call, and a generator's context manager costs several
    times as much.)"""

    __slots__ = ("_stats", "_token")

    def __enter__(self) -> CallStats:
        stats = self._stats = CallStats()
        self._token = _current.set(stats)
        return stats

    def __exit__(self, *exc_info: object) -> None:
        _current.reset(self._token)


def note_error(error_class: str) -> None:
    stats = _current.get()
    if stats is not None and stats.error is None:
        stats.error = error_class


def note_cache(hit: bool) -> None:
    stats = _current.get()
    if stats is not None:
        stats.cache = "hit" if hit else "miss"


def log_call(tool: str, stats: CallStats) -> None:
    """Queue the call's line; a writer thread formats and writes queued lines at most every 50 ms,
    off the request path (no wake-up per call: appending to a deque costs the call nothing
    measurable, and only the first line of a batch wakes the writer, which sleeps while idle)."""
    if not CALLS.isEnabledFor(logging.INFO):
        return
    ms = round((time.perf_counter() - stats.started) * 1000, 1)
    query_ms = None if stats.query_seconds is None else round(stats.query_seconds * 1000, 1)
    _lines.append((time.time(), tool, ms, query_ms, stats.rows, stats.truncated, stats.error, stats.cache))
    if not _pending.is_set():  # the first line since the writer's last pass wakes it
        _pending.set()
    if not _writer:
        with _drain_lock:
            if not _writer:
                _writer.append(threading.Thread(target=_write_calls, name="mcpgen-call-log", daemon=True))
                _writer[0].start()
                atexit.register(flush_calls)


def flush_calls() -> None:
    """Write every queued call line now (at exit, and in tests): a stream gets them in one write."""
    with _drain_lock:
        records = [_record(_lines.popleft()) for _ in range(len(_lines))]
        if records and not CALLS.disabled:
            _emit([r for r in records if CALLS.filter(r)])


WRITE_EVERY = 0.05  # seconds the writer gathers lines after the first of a batch
_lines: collections.deque = collections.deque()
_pending = threading.Event()  # set by the first line queued since the writer's last pass
_writer: list[threading.Thread] = []
_drain_lock = threading.Lock()


def _write_calls() -> None:
    """Sleep until a line is queued (no wake-ups on an idle server, none per call on a busy one),
    gather for WRITE_EVERY, then write what is queued."""
    while True:
        _pending.wait()
        time.sleep(WRITE_EVERY)
        _pending.clear()  # before draining: a line queued from here on wakes the next pass
        flush_calls()


# What every call line's record shares, made once: LogRecord() reads the file's name, the thread and the
# process each time, about a third of what a line cost. `created` is when the call ended, not when written.
_CALL_RECORD = vars(
    logging.LogRecord(
        CALLS.name, logging.INFO, __file__, 0, "call tool=%s ms=%s rows=%s truncated=%s error=%s cache=%s", (), None
    )
)


def _emit(records: list[logging.LogRecord]) -> None:
    """What `CALLS.handle` does for each record, but a plain stream handler (stderr's) writes and flushes the
    batch once; any other handler (a file's, a test's) takes the records one at a time."""
    logger: logging.Logger | None = CALLS
    while logger is not None:
        for handler in logger.handlers:
            kept = [r for r in records if r.levelno >= handler.level]
            if type(handler) is not logging.StreamHandler:
                for record in kept:
                    handler.handle(record)
                continue
            try:
                text = "".join(handler.format(r) + handler.terminator for r in kept if handler.filter(r))
                handler.acquire()
                try:
                    handler.stream.write(text)
                    handler.flush()
                finally:
                    handler.release()
            except Exception:  # a log line must never stop the writer
                pass
        logger = logger.parent if logger.propagate else None


def _record(item: tuple) -> logging.LogRecord:
    """The call line's record, without LogRecord()'s per-record look-ups."""
    created, tool, ms, query_ms, rows, truncated, error, cache = item
    fields = {
        "event": "call",
        "tool": tool,
        "duration_ms": ms,
        "query_ms": query_ms,
        "rows": rows,
        "truncated": truncated,
        "error": error,
        "cache": cache,
    }
    args = (
        tool,
        ms,
        "-" if rows is None else rows,
        "-" if truncated is None else str(truncated).lower(),
        error or "-",
        cache or "-",
    )
    record = logging.LogRecord.__new__(logging.LogRecord)
    record.__dict__.update(_CALL_RECORD, args=args, fields=fields, created=created, msecs=(created % 1) * 1000)
    record.relativeCreated = _CALL_RECORD["relativeCreated"] + (created - _CALL_RECORD["created"]) * 1000
    return record


class RedactingFilter(logging.Filter):
    """Redact secrets from the final message (arguments included) and any traceback text."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name == CALLS.name:  # call lines hold a tool name, numbers and a class name: no secrets
            return True
        try:
            message = record.getMessage()
        except Exception:  # a bad format string: keep the raw text
            message = str(record.msg)
        record.msg, record.args = redact(message), ()
        if record.exc_info and record.exc_info[1] is not None:
            record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
            record.exc_info = None
        return True


class JSONFormatter(logging.Formatter):
    """One JSON object per line: ts, level, logger, then the call's fields or `message`."""

    def format(self, record: logging.LogRecord) -> str:
        out = {"ts": round(record.created, 3), "level": record.levelname.lower(), "logger": record.name}
        fields = getattr(record, "fields", None)
        if fields:
            out.update(fields)
        else:
            out["message"] = record.getMessage()
        if record.exc_text:
            out["exception"] = record.exc_text
        return json_line(out)


class CappedFormatter(logging.Formatter):
    """The text format, each line cut to MAX_LOG_LINE bytes."""

    def format(self, record: logging.LogRecord) -> str:
        return cut_bytes(super().format(record), MAX_LOG_LINE)


def json_line(fields: dict) -> str:
    """`fields` as one JSON line of at most MAX_LOG_LINE bytes: the longest value is cut by as much as the
    line is over (a value that is not text is written as text first), then the next longest if need be."""
    fields = dict(fields)
    line = _dumps(fields)
    for _ in range(2 * len(fields)):  # a text is cut once; any other value turns into text first
        over = utf8_size(line) - MAX_LOG_LINE
        if over <= 0:
            break
        texts = {
            k: v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, default=str) for k, v in fields.items()
        }
        longest = max(texts, key=lambda k: utf8_size(texts[k]))
        text = texts[longest]
        # Cutting n bytes of a text takes at least n bytes off its JSON (escapes only add).
        fields[longest] = cut_bytes(text, utf8_size(text) - over) if isinstance(fields[longest], str) else text
        line = _dumps(fields)
    return line


def _dumps(fields: dict) -> str:
    """JSON text that any UTF-8 sink can write: a lone surrogate (JSON may carry one) stays escaped."""
    return json.dumps(fields, ensure_ascii=False, default=str).encode("utf-8", "backslashreplace").decode()


def setup(fmt: str = "text", verbose: bool = False, calls: bool = True) -> None:
    """Log to stderr in `fmt` ("text" or "json") with secrets redacted; `calls`: one line per tool call."""
    if fmt not in ("text", "json"):
        raise ValueError(f"log format must be text or json, not {fmt!r}")
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(RedactingFilter())
    handler.setFormatter(JSONFormatter() if fmt == "json" else CappedFormatter("mcpgen: %(message)s"))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(logging.DEBUG if verbose else logging.INFO)
    CALLS.setLevel(logging.INFO if calls else logging.WARNING)
    for noisy in ("mcp", "httpx", "httpx2", "httpcore", "uvicorn.access", "uvicorn.error", "watchfiles"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
