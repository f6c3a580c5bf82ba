"""Logs on stderr: the per-call line (text or JSON) and secrets redacted from every other line."""

import json
import logging
import sys
import threading
import time

import pytest

from mcpgen import logs
from mcpgen.limits import MAX_LOG_LINE


@pytest.fixture
def call_lines():
    """The call records the writer hands to the `mcpgen.calls` logger, with its level restored after."""
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record):
            records.append(record)

    handler, level = Keep(), logs.CALLS.level
    logs.CALLS.addHandler(handler)
    logs.CALLS.setLevel(logging.INFO)
    yield records
    logs.CALLS.removeHandler(handler)
    logs.CALLS.setLevel(level)


def test_the_first_error_of_a_call_is_the_one_noted():
    with logs.call_stats() as stats:
        logs.note_error("ArgumentError")
        logs.note_error("ToolError")
        logs.note_cache(True)
    assert (stats.error, stats.cache) == ("ArgumentError", "hit")
    logs.note_error("Outside")  # no call in progress: nothing to note, nothing raised


def test_a_call_line_in_text_and_json(call_lines):
    with logs.call_stats() as stats:
        stats.rows, stats.truncated, stats.query_seconds = 3, False, 0.0021
        logs.note_cache(False)
    logs.log_call("top_cities", stats)
    logs.flush_calls()
    (record,) = call_lines
    text = record.getMessage()
    assert text.startswith("call tool=top_cities ms=") and text.endswith(" rows=3 truncated=false error=- cache=miss")
    line = json.loads(logs.JSONFormatter().format(record))
    assert {k: line[k] for k in ("level", "logger", "event", "tool", "query_ms", "rows", "truncated", "cache")} == {
        "level": "info",
        "logger": "mcpgen.calls",
        "event": "call",
        "tool": "top_cities",
        "query_ms": 2.1,
        "rows": 3,
        "truncated": False,
        "cache": "miss",
    }


def test_no_call_line_until_setup_switches_them_on(call_lines):
    logs.CALLS.setLevel(logging.WARNING)
    with logs.call_stats() as stats:
        pass
    logs.log_call("quiet", stats)
    logs.flush_calls()
    assert call_lines == []


def test_other_lines_are_redacted():
    record = logging.LogRecord("mcpgen", logging.ERROR, __file__, 1, "cannot reach %s", ("mysql://u:pw@db/x",), None)
    assert logs.RedactingFilter().filter(record)
    assert record.getMessage() == "cannot reach mysql://u:***@db/x"


def test_setup_writes_one_redacting_handler_and_refuses_an_unknown_format():
    root = logging.getLogger()
    saved, level = list(root.handlers), root.level
    try:
        with pytest.raises(ValueError, match="log format must be text or json, not 'xml'"):
            logs.setup("xml")
        logs.setup("json", verbose=True, calls=False)
        (handler,) = root.handlers
        assert isinstance(handler.formatter, logs.JSONFormatter)
        assert any(isinstance(f, logs.RedactingFilter) for f in handler.filters)
        assert root.level == logging.DEBUG and logs.CALLS.level == logging.WARNING
    finally:
        for h in list(root.handlers):
            root.removeHandler(h)
        for h in saved:
            root.addHandler(h)
        root.setLevel(level)
        logs.CALLS.setLevel(logging.WARNING)


def test_the_writer_sleeps_while_idle_and_writes_a_batch_without_being_flushed(call_lines, monkeypatch):
    """The writer thread writes queued lines by itself within about WRITE_EVERY, and between batches
    it waits on the event (no timed wake-ups on an idle server); one event per batch, not per call."""

    def one(tool):
        with logs.call_stats() as stats:
            pass
        logs.log_call(tool, stats)

    one("first")
    deadline = time.monotonic() + 10
    while len(call_lines) < 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert [r.args[0] for r in call_lines] == ["first"]
    time.sleep(logs.WRITE_EVERY * 3)
    assert not logs._pending.is_set()  # idle: nothing to wake the writer for
    writer = logs._writer[0]
    assert writer.is_alive()
    frame = sys._current_frames()[writer.ident]
    assert frame.f_code.co_name == "wait", frame.f_code.co_name  # in Event.wait, not a timed sleep
    sets = []
    real_set = logs._pending.set
    monkeypatch.setattr(logs._pending, "set", lambda: (sets.append(1), real_set()))
    for i in range(50):
        one(f"batch{i}")
    deadline = time.monotonic() + 10
    while len(call_lines) < 51 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(call_lines) == 51 and len(sets) <= 3


HUGE = {
    "long": "x" * 1_000_000,
    "wide unicode": "\N{GRINNING FACE}" * 300_000,
    "control characters": "\x01" * 200_000,  # six bytes each once escaped as JSON
    "a lone surrogate": "\ud800" * 100_000,
}


@pytest.mark.parametrize("value", HUGE.values(), ids=HUGE.keys())
def test_no_log_line_is_longer_than_its_cap(call_lines, value):
    """A call line for a tool name a client made up, a warning quoting an argument and a traceback holding
    one, in both formats, are each at most MAX_LOG_LINE bytes as written, keep their start and end, and
    a JSON line stays JSON."""
    with logs.call_stats() as stats:
        pass
    logs.log_call(value, stats)
    logs.flush_calls()
    warning = logging.LogRecord("mcpgen", logging.WARNING, __file__, 1, "completion of %s: end", (value,), None)
    try:
        raise ValueError(value)
    except ValueError:
        failed = logging.LogRecord("mcpgen", logging.ERROR, __file__, 1, "tool %s raised", ("t",), sys.exc_info())
    for record in (call_lines[0], warning, failed):
        assert logs.RedactingFilter().filter(record)
        for formatter in (logs.JSONFormatter(), logs.CappedFormatter("mcpgen: %(message)s")):
            line = formatter.format(record).encode("utf-8", "backslashreplace")
            assert len(line) <= MAX_LOG_LINE, (type(formatter).__name__, len(line))
            assert b"bytes, cut" in line
        line = json.loads(logs.JSONFormatter().format(record))
        assert line["level"] in ("info", "warning", "error")
    text = logs.CappedFormatter("mcpgen: %(message)s").format(failed)
    assert text.startswith("mcpgen: tool t raised\nTraceback")
    assert text.endswith(value[-10:].encode("utf-8", "backslashreplace").decode())


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_queued_call_lines_reach_stderr_in_one_write_in_order_and_whole(fmt, monkeypatch, call_lines):
    """stderr's handler gets the writer's batch in one write and one flush (not one system call per call),
    each line as the formatter makes it; a handler of another kind still gets each record."""
    writes: list[str] = []

    class Counted:
        def write(self, text):
            writes.append(text)

        def flush(self):
            writes.append("<flush>")

    stream = logging.StreamHandler(Counted())
    stream.addFilter(logs.RedactingFilter())
    stream.setFormatter(logs.JSONFormatter() if fmt == "json" else logs.CappedFormatter("mcpgen: %(message)s"))
    monkeypatch.setattr(logging.getLogger(), "handlers", [stream])
    # The writer thread stays out of it: no wake-up (the event reads as set already), none started, and a
    # pass begun by an earlier test's line is over.
    ready = threading.Event()
    ready.set()
    monkeypatch.setattr(logs, "_pending", ready)
    monkeypatch.setattr(logs, "_writer", logs._writer or [None])
    time.sleep(3 * logs.WRITE_EVERY)
    for n in range(3):
        with logs.call_stats() as stats:
            stats.rows = n
        logs.log_call(f"tool_{n}", stats)
    logs.flush_calls()
    assert len(call_lines) == 3  # the test's own handler, one record at a time
    assert len(writes) == 2 and writes[1] == "<flush>", writes
    lines = writes[0].splitlines()
    assert len(lines) == 3 and writes[0].endswith("\n")
    if fmt == "json":
        assert [(json.loads(line)["tool"], json.loads(line)["rows"]) for line in lines] == [
            (f"tool_{n}", n) for n in range(3)
        ]
    else:
        assert [line.split()[2] for line in lines] == ["tool=tool_0", "tool=tool_1", "tool=tool_2"]
        assert all(line.startswith("mcpgen: call tool=") and f"rows={n} " in line for n, line in enumerate(lines))
