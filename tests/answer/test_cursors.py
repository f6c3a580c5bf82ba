"""Signed cursors: they continue only the answer they came from, until they expire."""

import re
import time

import pytest

from mcpgen.answer.cursors import CURSOR, CursorError, Cursors, binding


@pytest.fixture
def cursors():
    return Cursors(b"k" * 32, ttl=60, project="v1")


def test_a_cursor_gives_back_its_offset(cursors):
    bound = binding("(('n', 3),)", "alice", "spec-v1")
    token = cursors.issue("top_cities", bound, 500)
    assert cursors.read(token, "top_cities", bound) == 500
    body, mac = token.split(".")  # opaque: offset and expiry, then the MAC, each URL-safe base64
    assert re.fullmatch(r"[A-Za-z0-9_-]+", body) and re.fullmatch(r"[A-Za-z0-9_-]{22}", mac)


@pytest.mark.parametrize(
    "change",
    [
        {"tool": "other_tool"},
        {"binding": binding("(('n', 4),)", "alice", "spec-v1")},  # other arguments
        {"binding": binding("(('n', 3),)", "bob", "spec-v1")},  # another caller
        {"binding": binding("(('n', 3),)", "alice", "spec-v2")},  # the spec changed
    ],
)
def test_a_cursor_continues_only_its_own_answer(cursors, change):
    bound = binding("(('n', 3),)", "alice", "spec-v1")
    token = cursors.issue("top_cities", bound, 10)
    with pytest.raises(CursorError, match="does not continue this tool's answer to these arguments"):
        cursors.read(token, change.get("tool", "top_cities"), change.get("binding", bound))


def test_another_key_or_project_refuses_it(cursors):
    token = cursors.issue("t", "b", 1)
    for other in (Cursors(b"x" * 32, ttl=60, project="v1"), Cursors(b"k" * 32, ttl=60, project="v2")):
        with pytest.raises(CursorError, match="does not continue"):
            other.read(token, "t", "b")


@pytest.mark.parametrize("token", ["", "abc", "a.b.c", "!!!.???", "MTA.AAAA"])
def test_garbage_is_not_a_cursor(cursors, token):
    with pytest.raises(CursorError) as err:
        cursors.read(token, "t", "b")
    assert str(err.value).startswith(f"Invalid argument '{CURSOR}': it ")


def test_an_expired_cursor_says_so(monkeypatch):
    cursors = Cursors(b"k" * 32, ttl=1)
    token = cursors.issue("t", "b", 5)
    later = time.time() + 5
    monkeypatch.setattr(time, "time", lambda: later)
    with pytest.raises(CursorError, match="the cursor has expired; call again without cursor for the first page"):
        cursors.read(token, "t", "b")
