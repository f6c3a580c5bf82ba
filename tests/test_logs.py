"""Logs on stderr: the per-call line (text or JSON) and secrets redacted from every other line."""

import json
import logging

import pytest

from mcpgen import logs


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
