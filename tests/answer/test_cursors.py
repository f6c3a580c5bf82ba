"""Signed cursors: they continue only the answer they came from, until they expire."""

import base64
import datetime as dt
import math
import re
import time
from decimal import Decimal

import pytest

from mcpgen.answer.cursors import CURSOR, CursorError, Cursors, Position, SealError, binding


@pytest.fixture
def cursors():
    return Cursors(b"k" * 32, ttl=60, project="v1")


def test_a_cursor_gives_back_its_offset(cursors):
    bound = binding("(('n', 3),)", "alice", "spec-v1")
    token = cursors.issue("top_cities", bound, Position(500))
    assert cursors.read(token, "top_cities", bound) == Position(500)
    body, mac, kid = token.split(".")  # opaque: offset and expiry, the MAC, the key's fingerprint; URL-safe base64
    assert re.fullmatch(r"[A-Za-z0-9_-]+", body) and re.fullmatch(r"[A-Za-z0-9_-]{22}", mac)
    assert re.fullmatch(r"[A-Za-z0-9_-]{8}", kid)


def test_a_token_is_the_same_from_every_version_and_every_call():
    """Replicas that share cursors.secret_env read each other's cursors and links, whatever mcpgen each
    runs: a token is HMAC-SHA256 over the project, tool, binding and body (its first 16 bytes), and the key's
    fingerprint, and one Cursors signs each token as a fresh one would."""
    cursors = Cursors(b"k" * 32, ttl=60, project="p")
    for _ in range(2):
        assert (
            cursors.seal("cities", "b" * 64, "500.1765000000") == "NTAwLjE3NjUwMDAwMDA.2fbn275zUG50URVmw1cs3Q.FQqqvnaS"
        )
        assert cursors.stamp("cities", "b" * 64, 1765000000) == "1765000000.o89SKOp_hCjkScCA-7nQ-w.FQqqvnaS"
    other = Cursors(b"k" * 32, project="p")  # another replica with the same key
    assert other.unseal(cursors.seal("t", "b", "1.2"), "t", "b") == "1.2"
    assert other.unstamp(cursors.stamp("t", "b", 1765000000), "t", "b") == 1765000000


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
    token = cursors.issue("top_cities", bound, Position(10))
    with pytest.raises(CursorError, match="does not continue this tool's answer to these arguments"):
        cursors.read(token, change.get("tool", "top_cities"), change.get("binding", bound))


def test_another_key_or_project_refuses_it(cursors):
    token = cursors.issue("t", "b", Position(1))
    for other in (Cursors(b"x" * 32, ttl=60, project="v1"), Cursors(b"k" * 32, ttl=60, project="v2")):
        with pytest.raises(CursorError, match="does not continue"):
            other.read(token, "t", "b")


@pytest.mark.parametrize(
    "token", ["", "abc", "a.b.c", "!!!.???", "MTA.AAAA", "MTAuMQ.AAAA.\u00e9t\u00e9", "MTAuMQ.AAAA.\x00"]
)
def test_garbage_is_not_a_cursor(cursors, token):
    with pytest.raises(CursorError) as err:
        cursors.read(token, "t", "b")
    assert str(err.value).startswith(f"Invalid argument '{CURSOR}': it ")


def test_a_cursor_and_a_link_token_never_pass_for_each_other(cursors):
    """Both are signed with one key for one tool and binding: what each signs is told apart, so a link's
    token is no cursor and a cursor's body (the expiry alone, say) is no link."""
    stamped = cursors.stamp("t", "b", 1765000000)
    expires, mac, kid = stamped.split(".")
    as_cursor = base64.urlsafe_b64encode(f"0.{expires}".encode()).decode().rstrip("=") + f".{mac}.{kid}"
    for token in (stamped, as_cursor):
        with pytest.raises(CursorError, match="does not continue|not a cursor"):
            cursors.read(token, "t", "b")
    sealed = cursors.seal("t", "b", "1765000000")  # a body a link would hold, sealed as a cursor is
    _, mac, kid = sealed.split(".")
    for token in (sealed, f"1765000000.{mac}.{kid}"):
        with pytest.raises(SealError):
            cursors.unstamp(token, "t", "b")


def test_an_expired_cursor_says_so(monkeypatch):
    cursors = Cursors(b"k" * 32, ttl=1)
    token = cursors.issue("t", "b", Position(5))
    later = time.time() + 5
    monkeypatch.setattr(time, "time", lambda: later)
    with pytest.raises(CursorError, match="the cursor has expired; call again without cursor for the first page"):
        cursors.read(token, "t", "b")


UTC = dt.UTC
KEYS = [
    (1, "Tokyo", None, True),
    (2.5, -0.0, float("inf"), float("-inf")),
    (Decimal("12.3400"), dt.date(2013, 1, 1), dt.datetime(2013, 1, 1, 5, 17, 0, 123456)),
    (dt.datetime(2013, 1, 1, 5, 17, tzinfo=UTC), dt.time(23, 59, 59), b"\x00\xff", "\u00e9\u6771\U0001f600 . x"),
    (2**63 - 1, -(2**63), "", "a.b.c"),
]


@pytest.mark.parametrize("key", KEYS)
def test_a_keyset_cursor_gives_back_the_sort_key_exactly(cursors, key):
    token = cursors.issue("t", "b", Position(1000, key, 3))
    back = cursors.read(token, "t", "b")
    assert back == Position(1000, key, 3)
    assert [type(v) for v in back.key] == [type(v) for v in key]  # a Decimal stays a Decimal, a date a date
    assert math.copysign(1, -0.0) == math.copysign(1, back.key[1]) if key == KEYS[1] else True


@pytest.mark.parametrize("key", [None, ("a.b", 1.5)])
def test_a_cursor_names_its_read_ahead_beside_its_key(cursors, key):
    position = Position(1000, key, 0 if key is None else 2, "Xy-_z09")
    assert cursors.read(cursors.issue("t", "b", position), "t", "b") == position


def test_nan_survives_and_the_key_is_signed(cursors):
    back = cursors.read(cursors.issue("t", "b", Position(1, (float("nan"),), 1)), "t", "b")
    assert back.key is not None and math.isnan(back.key[0])
    token = cursors.issue("t", "b", Position(1000, ("Tokyo",), 1))
    body, mac, kid = token.split(".")
    text = base64.urlsafe_b64decode(body + "==").decode().replace("Tokyo", "Osaka")
    forged = base64.urlsafe_b64encode(text.encode()).decode().rstrip("=") + "." + mac + "." + kid
    with pytest.raises(CursorError, match="does not continue"):
        cursors.read(forged, "t", "b")


def test_a_value_a_cursor_cannot_carry_is_a_type_error(cursors):
    with pytest.raises(TypeError, match="a list cannot be carried"):
        cursors.issue("t", "b", Position(1, ([1, 2],), 1))


def test_the_refusal_says_why_a_cursor_does_not_continue(cursors):
    """Same key, other answer: the arguments, caller or spec. Another key: which key signs here."""
    token = cursors.issue("t", "b", Position(10))
    with pytest.raises(CursorError, match=r"\(it came from other arguments, another caller, or a spec"):
        cursors.read(token, "t", "other")
    process = Cursors(ttl=60)  # no secret_env: this process's own key
    with pytest.raises(CursorError, match=r"signed by another mcpgen process: without cursors.secret_env"):
        process.read(token, "t", "b")
    with pytest.raises(CursorError, match=r"signed with another key than this server's"):
        cursors.read(process.issue("t", "b", Position(10)), "t", "b")
