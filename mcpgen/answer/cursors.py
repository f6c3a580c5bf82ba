"""The signed cursors that continue a paged answer (`page_size:` in a spec; the paged SQL is in `sql.pages`).

A paged tool takes an optional `cursor` argument. Each page is the query's next rows in its
order made total (`sql.pages`); when more remain, the answer carries a cursor for the next
page. A cursor is opaque to the caller: where the page starts (the count of rows before it and,
for keyset pages, the last row's sort key and how many rows at its end share that key) and an
expiry time, signed (HMAC-SHA256) together with the tool, the arguments, the caller and the
spec's version, so it only continues the answer it came from, and no one can make one up.

>>> cursors = Cursors(b"k" * 32, ttl=60)
>>> token = cursors.issue("t", "args-digest", Position(500, ("Tokyo", 3), 1))
>>> cursors.read(token, "t", "args-digest")
Position(offset=500, key=('Tokyo', 3), skip=1)
>>> cursors.read(token, "t", "other-args")
Traceback (most recent call last):
...
mcpgen.answer.cursors.CursorError: Invalid argument 'cursor': it does not continue this tool's answer to these arguments; call again without cursor for the first page.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import hashlib
import hmac
import json
import math
import secrets
import time
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from ..errors import ArgumentError
from ..spec.models import CURSOR

NEXT_CURSOR_META = "mcpgen/next_cursor"  # in a page's _meta when more rows remain
DEFAULT_TTL = 3600.0
PROCESS_KEY = secrets.token_bytes(32)  # when mcpgen.yaml names no key: cursors live as long as the process


class CursorError(ArgumentError):
    """A cursor that is forged, altered, expired or from another answer."""


@dataclass(frozen=True)
class Position:
    """Where a page starts: `offset` rows come before it; for keyset pages, `key` is the sort key of
    the last of them and `skip` how many rows at their end have that key (None: pages use OFFSET)."""

    offset: int
    key: tuple | None = None
    skip: int = 0


class Cursors:
    """Issues and checks cursors with one key (shared by every replica that should accept them)."""

    def __init__(self, key: bytes = PROCESS_KEY, ttl: float = DEFAULT_TTL, project: str = ""):
        self._key = key
        self.ttl = ttl
        self.project = project  # the project's version (its settings): a changed project refuses older cursors

    def _mac(self, tool: str, binding: str, body: str) -> bytes:
        message = "\x1f".join((self.project, tool, binding, body)).encode()
        return hmac.new(self._key, message, hashlib.sha256).digest()[:16]

    def issue(self, tool: str, binding: str, position: Position) -> str:
        body = f"{position.offset}.{math.ceil(time.time() + self.ttl)}"  # rounded up: valid for at least `ttl`
        if position.key is not None:
            body += f".{position.skip}." + json.dumps([_encode(v) for v in position.key], separators=(",", ":"))
        mac = self._mac(tool, binding, body)
        return _b64(body.encode()) + "." + _b64(mac)

    def read(self, token: str, tool: str, binding: str) -> Position:
        """Where a cursor continues from; CursorError in one sentence if it may not be used."""
        try:
            body_part, mac_part = token.split(".")
            body = base64.urlsafe_b64decode(body_part + "==").decode("utf-8")
            mac = base64.urlsafe_b64decode(mac_part + "==")
            fields = body.split(".", 3)
            if len(fields) not in (2, 4):
                raise ValueError(body)
            offset, expires = int(fields[0]), int(fields[1])
        except (ValueError, UnicodeDecodeError, binascii.Error):
            raise CursorError(
                f"Invalid argument '{CURSOR}': it is not a cursor this server gave; "
                f"call again without {CURSOR} for the first page."
            ) from None
        if not hmac.compare_digest(mac, self._mac(tool, binding, body)) or offset < 0:
            raise CursorError(
                f"Invalid argument '{CURSOR}': it does not continue this tool's answer to these arguments; "
                f"call again without {CURSOR} for the first page."
            )
        if expires < time.time():
            raise CursorError(
                f"Invalid argument '{CURSOR}': the cursor has expired; call again without {CURSOR} for the first page."
            )
        if len(fields) == 2:
            return Position(offset)
        return Position(offset, tuple(_decode(v) for v in json.loads(fields[3])), int(fields[2]))


def binding(values_key: str, identity: str | None, version: str) -> str:
    """What a cursor is bound to besides its tool: the arguments, the caller and the spec's version."""
    return hashlib.sha256("\x1f".join((values_key, identity or "", version)).encode()).hexdigest()


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


# Key values as JSON: numbers, strings, booleans and null as they are; the rest tagged.
_TAGS: dict[str, Any] = {
    "f": float,
    "n": Decimal,
    "d": dt.date.fromisoformat,
    "t": dt.datetime.fromisoformat,
    "h": dt.time.fromisoformat,
    "x": lambda s: base64.urlsafe_b64decode(s + "=="),
}


def _encode(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {"f": repr(value)}
    if isinstance(value, Decimal):
        return {"n": str(value)}
    if isinstance(value, dt.datetime):
        return {"t": value.isoformat()}
    if isinstance(value, dt.date):
        return {"d": value.isoformat()}
    if isinstance(value, dt.time):
        return {"h": value.isoformat()}
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {"x": _b64(bytes(value))}
    raise TypeError(f"a {type(value).__name__} cannot be carried in a cursor")


def _decode(value: Any) -> Any:
    if isinstance(value, dict):
        ((tag, text),) = value.items()
        return _TAGS[tag](text)
    return value
